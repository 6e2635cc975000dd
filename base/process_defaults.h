// Process-wide settings every Arbor program applies first thing in main().
#ifndef ARBOR_BASE_PROCESS_DEFAULTS_H_
#define ARBOR_BASE_PROCESS_DEFAULTS_H_

namespace arbor::base {

// In release builds (NDEBUG), turns off abseil's mutex deadlock detection. Distribution builds
// of abseil (Debian's among them) leave it on, and then every absl::Mutex acquisition — gRPC's
// own locks included, since gRPC's mutexes are absl::Mutex — updates a global lock-order graph:
// ~115 ns more per nested lock pair, on every RPC and every engine step. Debug builds keep it,
// where it finds lock-order inversions in tests.
void ApplyProcessDefaults();

}  // namespace arbor::base

#endif  // ARBOR_BASE_PROCESS_DEFAULTS_H_
