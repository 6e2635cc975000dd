// GET /v1/jobs/{id}/events: a job's events as server-sent events, each with its `id:` (its
// number in the job, from 1) and its GenerateEvent in proto3 JSON, until the `finished` one. A
// client that reconnects sends `Last-Event-ID` and gets only the events after it, so each event
// reaches it once, also across a coordinator restart with a job store (the resumed job's events
// come again from the first and the ones the client has are left out). Over the coordinator's
// own Generation.Watch.
#ifndef ARBOR_COORDINATOR_HTTP_JOB_EVENTS_H_
#define ARBOR_COORDINATOR_HTTP_JOB_EVENTS_H_

#include <string>

#include "arbor/v1/generation.grpc.pb.h"
#include "httplib.h"

namespace arbor::coordinator::http {

// Answers `request` for job `job_id` through `stub`, which must outlive the response; calls
// with `authorization` (empty: none). Errors before the first event are plain HTTP errors.
void AnswerJobEvents(arbor::v1::Generation::Stub* stub, const std::string& authorization,
                     const std::string& job_id, const httplib::Request& request,
                     httplib::Response& response);

}  // namespace arbor::coordinator::http

#endif  // ARBOR_COORDINATOR_HTTP_JOB_EVENTS_H_
