#include "rpc/unparsable_requests.h"

#include <google/protobuf/stubs/logging.h>

#include <mutex>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace arbor::rpc {
namespace gx = grpc::experimental;
namespace {

// The string field protobuf last refused on this thread, as it logs it
// ("String field 'arbor.v1.GenerateRequest.text' contains invalid UTF-8 data when parsing").
thread_local std::string last_invalid_utf8_field;

google::protobuf::LogHandler* previous_handler = nullptr;

void RememberInvalidUtf8(google::protobuf::LogLevel level, const char* filename, int line,
                         const std::string& message) {
  constexpr absl::string_view kPrefix = "String field '";
  if (absl::StartsWith(message, kPrefix) &&
      message.find("invalid UTF-8 data when parsing") != std::string::npos) {
    const size_t end = message.find('\'', kPrefix.size());
    if (end != std::string::npos) {
      last_invalid_utf8_field = message.substr(kPrefix.size(), end - kPrefix.size());
    }
  }
  if (previous_handler != nullptr) previous_handler(level, filename, line, message);
}

class Rewriter final : public gx::Interceptor {
 public:
  explicit Rewriter(std::string method) : method_(std::move(method)) {}

  void Intercept(gx::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(gx::InterceptionHookPoints::POST_RECV_MESSAGE) &&
        methods->GetRecvMessage() == nullptr) {
      // Parsing ran on this thread just before this hook.
      failed_ = true;
      field_ = std::move(last_invalid_utf8_field);
      last_invalid_utf8_field.clear();
    }
    if (failed_ &&
        methods->QueryInterceptionHookPoint(gx::InterceptionHookPoints::PRE_SEND_STATUS) &&
        !methods->GetSendStatus().ok()) {
      methods->ModifySendStatus(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          field_.empty()
              ? absl::StrCat("request: not a valid request message for ", method_)
              : absl::StrCat(field_, ": is not valid UTF-8 (every string field must be)")));
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
  bool failed_ = false;
  std::string field_;
};

}  // namespace

UnparsableRequests::UnparsableRequests() {
  static std::once_flag installed;
  std::call_once(installed,
                 [] { previous_handler = google::protobuf::SetLogHandler(&RememberInvalidUtf8); });
}

gx::Interceptor* UnparsableRequests::CreateServerInterceptor(gx::ServerRpcInfo* info) {
  return new Rewriter(info->method() == nullptr ? "" : info->method());
}

}  // namespace arbor::rpc
