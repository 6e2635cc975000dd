// The calls to the holder of read_relay.h.
#include "coordinator/service/read_relay.h"

#include <utility>

#include "rpc/security.h"

namespace arbor::coordinator {
namespace {

// One relayed read: the holder's call, which ends by answering the server call.
struct RelayedRead {
  std::unique_ptr<arbor::v1::Generation::Stub> stub;
  std::unique_ptr<grpc::ClientContext> context;
  grpc::ServerUnaryReactor* reactor = nullptr;
  Settle settle;
};

}  // namespace

std::unique_ptr<arbor::v1::Generation::Stub> PeerStub(const PeerDial& dial,
                                                      const std::string& address) {
  return arbor::v1::Generation::NewStub(dial ? dial(address)
                                             : rpc::ProcessSecurity().Dial(address));
}

void MarkRelayed(grpc::ClientContext& context, const std::string& authorization) {
  context.AddMetadata(kRelayedKey, "1");
  if (!authorization.empty()) context.AddMetadata("authorization", authorization);
}

grpc::ServerUnaryReactor* RelayRead(grpc::CallbackServerContext* context, const PeerDial& dial,
                                    const std::string& address, const UnaryCall& call,
                                    Settle settle) {
  auto* read = new RelayedRead;
  read->settle = std::move(settle);
  read->stub = PeerStub(dial, address);
  read->context = grpc::ClientContext::FromCallbackServerContext(*context);
  const auto& metadata = context->client_metadata();
  const auto authorization = metadata.find("authorization");
  MarkRelayed(*read->context,
              authorization == metadata.end()
                  ? std::string()
                  : std::string(authorization->second.data(), authorization->second.size()));
  // The answer may come before `call` returns, and `read` goes with it.
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  read->reactor = reactor;
  call(*read->stub->async(), read->context.get(), [read](grpc::Status status) {
    read->reactor->Finish(read->settle ? read->settle(status) : status);
    delete read;
  });
  return reactor;
}

}  // namespace arbor::coordinator
