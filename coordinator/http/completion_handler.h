// Answers one OpenAI completion or chat-completion request: runs its choices as jobs and writes
// the response, whole or as server-sent events.
//
// Streaming starts only once every choice has its first event, so a request the coordinator
// refuses (a bad field, overload) still gets a plain HTTP error with the right status rather
// than a 200 stream carrying an error. Once streaming, a failed choice sends OpenAI's error
// event and ends the stream; a client that goes away, streaming or waiting for a whole answer,
// cancels every job of the request.
#ifndef ARBOR_COORDINATOR_HTTP_COMPLETION_HANDLER_H_
#define ARBOR_COORDINATOR_HTTP_COMPLETION_HANDLER_H_

#include <functional>
#include <string>

#include "arbor/v1/generation.grpc.pb.h"
#include "coordinator/http/openai_request.h"
#include "httplib.h"

namespace arbor::coordinator::http {

// `response` is an error object with its status, a JSON body, or a chunked SSE provider.
// `authorization` (the request's header, checked by CheckAuthorizationHeader) goes with the
// gRPC calls, which decide who may run jobs. `http_request` is the request being answered: a
// blocking one whose client leaves cancels its jobs (client_connection.h).
void AnswerCompletion(arbor::v1::Generation::StubInterface* stub, OpenAiRequest request,
                      const std::string& model_id, const std::string& authorization,
                      const httplib::Request& http_request, httplib::Response& response);

// Writes OpenAI's error object for `status` with the matching HTTP status (429 adds Retry-After).
void SetError(const absl::Status& status, httplib::Response& response);

// Answers with server-sent events that `write` puts into the sink until it returns (false: the
// client has gone), with the headers that keep proxies from buffering them.
void SetEventStream(httplib::Response& response, std::function<bool(httplib::DataSink&)> write);

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_COMPLETION_HANDLER_H_
