// A coordinator over two static workers, started as processes on loopback for the end-to-end
// tests (coordinator_e2e_test.cc): its logs and port files in a directory of its own.
#ifndef ARBOR_TESTS_INTEGRATION_E2E_CLUSTER_H_
#define ARBOR_TESTS_INTEGRATION_E2E_CLUSTER_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "arbor/v1/generation.grpc.pb.h"
#include "base/subprocess.h"

namespace arbor {

struct E2eCluster {
  // Starts two arbor-workers on `model_dir` and an arbor-coordinator over them, files in `dir`;
  // returns once a job can be routed and the readiness probe's KV is released (null on failure,
  // reported to gtest).
  static std::unique_ptr<E2eCluster> Start(const std::string& model_dir, const std::string& dir);
  // SIGKILLs what still runs; removes `dir` unless a test has failed.
  ~E2eCluster();

  // Waits for the readiness probe's job to finish and its KV to be released, so every test
  // starts from idle workers.
  bool AfterProbe(const v1::JobRef& ref);
  // Polls both workers until their referenced KV blocks sum to `expected` (the coordinator
  // releases sequences asynchronously after a job ends) or 2 s pass; returns the last sum.
  int64_t WaitForUsedBlocks(int64_t expected) const;
  int64_t UsedBlocks(int worker) const;

  std::string dir;
  std::vector<base::Subprocess> workers;
  std::vector<std::string> worker_addresses;
  std::optional<base::Subprocess> coordinator;
  std::string address;
  std::unique_ptr<v1::Generation::Stub> stub;
};

}  // namespace arbor

#endif  // ARBOR_TESTS_INTEGRATION_E2E_CLUSTER_H_
