// The flags every server binary is served by (--listen, --port_file, --drain_seconds): defined
// once here so that the coordinator and the worker accept them alike, with one help text.
#ifndef ARBOR_RPC_SERVE_FLAGS_H_
#define ARBOR_RPC_SERVE_FLAGS_H_

#include "absl/strings/string_view.h"
#include "rpc/serve.h"

namespace arbor::rpc {

// The address, port file and drain grace of the parsed flags; an empty --listen gives
// `default_listen`, the binary's own well-known address. Credentials and callbacks stay the
// caller's.
ServeOptions ServeOptionsFromFlags(absl::string_view default_listen);

}  // namespace arbor::rpc

#endif  // ARBOR_RPC_SERVE_FLAGS_H_
