#include "coordinator/store/job_encoding.h"

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace arbor::coordinator {

std::string EncodeEvents(const std::vector<arbor::v1::GenerateEvent>& events) {
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    for (const arbor::v1::GenerateEvent& event : events) {
      coded.WriteVarint64(event.ByteSizeLong());
      event.SerializeWithCachedSizes(&coded);
    }
  }  // The coded stream flushes into `out` as it goes away.
  return out;
}

absl::StatusOr<std::vector<arbor::v1::GenerateEvent>> DecodeEvents(const std::string& bytes,
                                                                   const std::string& job_id) {
  std::vector<arbor::v1::GenerateEvent> events;
  google::protobuf::io::CodedInputStream coded(reinterpret_cast<const uint8_t*>(bytes.data()),
                                               static_cast<int>(bytes.size()));
  std::string one;
  while (!coded.ExpectAtEnd()) {
    uint64_t size = 0;
    arbor::v1::GenerateEvent event;
    if (!coded.ReadVarint64(&size) || size > bytes.size() ||
        !coded.ReadString(&one, static_cast<int>(size)) || !event.ParseFromString(one)) {
      return absl::DataLossError(absl::StrCat("job store: job ", job_id, ": event ", events.size(),
                                              " of its stored events is damaged"));
    }
    events.push_back(std::move(event));
  }
  return events;
}

absl::Status DecodeColumn(const std::string& bytes, const std::string& job_id,
                          const std::string& column, google::protobuf::MessageLite& message) {
  if (message.ParseFromString(bytes)) return absl::OkStatus();
  return absl::DataLossError(
      absl::StrCat("job store: job ", job_id, ": its stored ", column, " is damaged"));
}

}  // namespace arbor::coordinator
