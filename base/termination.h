// Graceful shutdown on SIGTERM/SIGINT for the server binaries.
//
// BlockTerminationSignals() must run in main() before any thread starts, so every thread
// inherits the blocked mask and the signal is only ever consumed by WaitForTerminationSignal().
#ifndef ARBOR_BASE_TERMINATION_H_
#define ARBOR_BASE_TERMINATION_H_

namespace arbor::base {

void BlockTerminationSignals();
// Blocks until SIGTERM or SIGINT arrives; returns the signal number.
int WaitForTerminationSignal();

}  // namespace arbor::base

#endif  // ARBOR_BASE_TERMINATION_H_
