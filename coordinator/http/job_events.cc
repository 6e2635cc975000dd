#include "coordinator/http/job_events.h"

#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "coordinator/http/completion_handler.h"
#include "google/protobuf/util/json_util.h"
#include "rpc/grpc_status.h"

namespace arbor::coordinator::http {
namespace {

// One open Watch call and where its events stand.
struct EventWatch {
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReader<arbor::v1::GenerateEvent>> reader;
  int64_t next_id = 1;             // The id of the next event read.
  arbor::v1::GenerateEvent first;  // Read before answering, so errors stay plain HTTP.
};

std::string EventFrame(const arbor::v1::GenerateEvent& event, int64_t id) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  std::string json;
  if (!google::protobuf::util::MessageToJsonString(event, &json, options).ok()) json = "{}";
  return absl::StrCat("id: ", id, "\ndata: ", json, "\n\n");
}

// Writes the first event and every later one; false when the client has gone.
bool Stream(EventWatch& watch, httplib::DataSink& sink) {
  arbor::v1::GenerateEvent event = std::move(watch.first);
  do {
    const std::string frame = EventFrame(event, watch.next_id++);
    if (!sink.write(frame.data(), frame.size())) {
      watch.context.TryCancel();
      watch.reader->Finish();
      return false;
    }
  } while (watch.reader->Read(&event));
  watch.reader->Finish();  // A stream cut short shows as the finished event's absence.
  return true;
}

}  // namespace

void AnswerJobEvents(arbor::v1::Generation::Stub* stub, const std::string& authorization,
                     const std::string& job_id, const httplib::Request& request,
                     httplib::Response& response) {
  auto watch = std::make_shared<EventWatch>();
  int64_t seen = 0;
  if (request.has_header("Last-Event-ID") &&
      (!absl::SimpleAtoi(request.get_header_value("Last-Event-ID"), &seen) || seen < 0)) {
    return SetError(
        absl::InvalidArgumentError("Last-Event-ID: must be the id of an event received, >= 0"),
        response);
  }
  watch->next_id = seen + 1;
  if (!authorization.empty()) watch->context.AddMetadata("authorization", authorization);
  watch->context.AddMetadata("last-event-id", absl::StrCat(seen));
  arbor::v1::JobRef ref;
  ref.set_job_id(job_id);
  watch->reader = stub->Watch(&watch->context, ref);
  if (!watch->reader->Read(&watch->first)) {
    const grpc::Status status = watch->reader->Finish();
    if (!status.ok()) return SetError(rpc::FromGrpcStatus(status), response);
    response.set_content("", "text/event-stream");  // The client has every event.
    return;
  }
  SetEventStream(response, [watch](httplib::DataSink& sink) { return Stream(*watch, sink); });
}

}  // namespace arbor::coordinator::http
