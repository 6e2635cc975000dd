// How a job's messages become the store's byte columns and back: the request, the final Job,
// the tree (each one serialized message) and the events (each length-prefixed, in order). A
// column that does not parse is DATA_LOSS naming the job and the column, so a damaged row is
// reported, never taken for an empty one.
#ifndef ARBOR_COORDINATOR_STORE_JOB_ENCODING_H_
#define ARBOR_COORDINATOR_STORE_JOB_ENCODING_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "arbor/v1/generation.pb.h"
#include "google/protobuf/message_lite.h"

namespace arbor::coordinator {

std::string EncodeEvents(const std::vector<arbor::v1::GenerateEvent>& events);
absl::StatusOr<std::vector<arbor::v1::GenerateEvent>> DecodeEvents(const std::string& bytes,
                                                                   const std::string& job_id);

// Parses `bytes` into `message`; DATA_LOSS naming `job_id` and `column` when they do not parse.
absl::Status DecodeColumn(const std::string& bytes, const std::string& job_id,
                          const std::string& column, google::protobuf::MessageLite& message);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_STORE_JOB_ENCODING_H_
