// Calls one coordinator makes to another on the same job store, for a job the other holds: the
// channel to the holder at the address it recorded with its lease (--advertise), the metadata
// that marks a relayed call, and the relay of a unary read (GetJob, GetTree) whose answer only
// the holder has while the job runs. A relayed call carries kRelayedKey and is never relayed on,
// so that coordinators whose views of the store differ for a moment cannot pass one call
// around in a loop; the holder authenticates the caller again from the authorization passed on.
#ifndef ARBOR_COORDINATOR_SERVICE_READ_RELAY_H_
#define ARBOR_COORDINATOR_SERVICE_READ_RELAY_H_

#include <functional>
#include <memory>
#include <string>

#include "arbor/v1/generation.grpc.pb.h"
#include "grpcpp/support/server_callback.h"

namespace arbor::coordinator {

// The metadata key that marks a call one coordinator relays from another.
inline constexpr char kRelayedKey[] = "arbor-relayed";

// A channel to another coordinator's address; empty: the process's (rpc/security.h).
using PeerDial = std::function<std::shared_ptr<grpc::ChannelInterface>(const std::string&)>;

// A stub for the coordinator at `address`.
std::unique_ptr<arbor::v1::Generation::Stub> PeerStub(const PeerDial& dial,
                                                      const std::string& address);

// Marks `context` as relayed and passes the caller's `authorization` (empty for none) on.
void MarkRelayed(grpc::ClientContext& context, const std::string& authorization);

// Starts `call` (one unary method of the stub, answering into the server call's response) at
// the holder at `address` and, once it ends, answers the server call `context` with what
// `settle` makes of its status (it may answer otherwise, e.g. from the store when the holder is
// gone); without `settle`, with that status. The client call inherits the server call's
// deadline and cancellation.
using UnaryCall = std::function<void(arbor::v1::Generation::StubInterface::async_interface&,
                                     grpc::ClientContext*, std::function<void(grpc::Status)>)>;
using Settle = std::function<grpc::Status(const grpc::Status&)>;
grpc::ServerUnaryReactor* RelayRead(grpc::CallbackServerContext* context, const PeerDial& dial,
                                    const std::string& address, const UnaryCall& call,
                                    Settle settle = nullptr);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_SERVICE_READ_RELAY_H_
