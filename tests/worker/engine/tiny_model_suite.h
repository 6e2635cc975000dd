// A gtest suite whose tests share one checkpoint of make-model's tiny preset (model seed kSeed),
// written before the suite's first test and removed after its last (engine_harness.h's
// TempModel).
#ifndef ARBOR_TESTS_WORKER_ENGINE_TINY_MODEL_SUITE_H_
#define ARBOR_TESTS_WORKER_ENGINE_TINY_MODEL_SUITE_H_

#include <cstdint>
#include <memory>

#include "gtest/gtest.h"
#include "tests/worker/engine/engine_harness.h"

namespace arbor::worker::testing {

template <uint64_t kSeed>
class TinyModelSuite : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<std::unique_ptr<TempModel>> model = TempModel::Make("tiny", kSeed);
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = model->release();
  }
  static void TearDownTestSuite() {
    delete model_;
    model_ = nullptr;
  }

  static inline TempModel* model_ = nullptr;
};

}  // namespace arbor::worker::testing

#endif  // ARBOR_TESTS_WORKER_ENGINE_TINY_MODEL_SUITE_H_
