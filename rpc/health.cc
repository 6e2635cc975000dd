#include "rpc/health.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "rpc/grpc_status.h"
#include "rpc/security.h"

namespace arbor::rpc {

absl::StatusOr<bool> CheckServing(const std::string& address, absl::Duration timeout) {
  auto channel = ProcessSecurity().Dial(address);
  auto stub = grpc::health::v1::Health::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + absl::ToChronoNanoseconds(timeout));
  grpc::health::v1::HealthCheckRequest request;
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) return FromGrpcStatus(status);
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

absl::Status WaitForServing(const std::string& address, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status last = absl::UnavailableError("not checked yet");
  while (absl::Now() < deadline) {
    absl::StatusOr<bool> serving = CheckServing(address, absl::Milliseconds(500));
    if (serving.ok() && *serving) return absl::OkStatus();
    last = serving.ok() ? absl::UnavailableError("NOT_SERVING") : serving.status();
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(absl::StrCat(address, " did not report SERVING within ",
                                                  absl::FormatDuration(timeout),
                                                  " (last answer: ", last.ToString(), ")"));
}

}  // namespace arbor::rpc
