// The text and JSON log line formats: exact JSON for given fields, escaping of control
// characters, quotes and invalid UTF-8, the key=value text form, process fields, and fields
// attached through WithFields reaching only their own line.
#include "base/log_format.h"

#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/time/time.h"
#include "base/log_fields.h"
#include "nlohmann/json.hpp"

namespace arbor::base {
namespace {

// 2025-01-02T03:04:05.123456Z.
spdlog::log_clock::time_point FixedTime() {
  const absl::Time t =
      absl::FromCivil(absl::CivilSecond(2025, 1, 2, 3, 4, 5), absl::UTCTimeZone()) +
      absl::Microseconds(123456);
  return absl::ToChronoTime(t);
}

std::string Format(LogFormat format, spdlog::level::level_enum level, std::string_view payload,
                   const LogFields& fields = {}) {
  ScopedLogFields scope(fields);
  const spdlog::details::log_msg msg(FixedTime(), spdlog::source_loc{}, "coordinator", level,
                                     spdlog::string_view_t(payload.data(), payload.size()));
  spdlog::memory_buf_t out;
  MakeLogFormatter(format)->format(msg, out);
  return std::string(out.data(), out.size());
}

class LogFormatTest : public ::testing::Test {
 protected:
  void TearDown() override { SetProcessLogFields({}); }
};

TEST_F(LogFormatTest, JsonLineIsOneObjectWithTheLineMembersThenTheFields) {
  EXPECT_EQ(
      Format(LogFormat::kJson, spdlog::level::info, "job finished",
             {{"job_id", "j1-0a1b2c3d"}, {"event", "finished"}, {"generated_tokens", 12}}),
      R"({"ts":"2025-01-02T03:04:05.123456Z","level":"info","process":"coordinator",)"
      R"("msg":"job finished","job_id":"j1-0a1b2c3d","event":"finished","generated_tokens":12})"
      "\n");
  EXPECT_EQ(Format(LogFormat::kJson, spdlog::level::warn, "no fields"),
            R"({"ts":"2025-01-02T03:04:05.123456Z","level":"warning","process":"coordinator",)"
            R"("msg":"no fields"})"
            "\n");
}

TEST_F(LogFormatTest, JsonEscapesQuotesControlCharactersAndInvalidUtf8) {
  const std::string line =
      Format(LogFormat::kJson, spdlog::level::err, "say \"hi\" \\ \n\t\x01 caf\xc3\xa9 \xff!",
             {{"error", "bad\xc3"}, {"quote\"key", "\x1f"}});
  EXPECT_EQ(line, R"({"ts":"2025-01-02T03:04:05.123456Z","level":"error","process":"coordinator",)"
                  R"("msg":"say \"hi\" \\ \n\t\u0001 café )"
                  "\xef\xbf\xbd"
                  R"(!","error":"bad)"
                  "\xef\xbf\xbd"
                  R"(","quote\"key":"\u001f"})"
                  "\n");
  // A strict parser reads it back (it rejects invalid UTF-8 and raw control characters).
  const nlohmann::json parsed = nlohmann::json::parse(line);
  EXPECT_EQ(parsed["msg"], "say \"hi\" \\ \n\t\x01 caf\xc3\xa9 \xef\xbf\xbd!");
}

TEST_F(LogFormatTest, TextAppendsFieldsAsKeyValueQuotingWhatIsNotOneWord) {
  const std::string line = Format(LogFormat::kText, spdlog::level::info, "job failed",
                                  {{"job_id", "j1-0a"},
                                   {"n", -3},
                                   {"error", "UNAVAILABLE: worker w1 died"},
                                   {"empty", ""},
                                   {"eq", "a=b"},
                                   {"utf8", "caf\xc3\xa9\n"}});
  EXPECT_EQ(line.substr(0, 2), "I ");
  const std::string tail =
      R"(coordinator] job failed job_id=j1-0a n=-3 error="UNAVAILABLE: worker w1 died" empty="")"
      R"( eq="a=b" utf8="café\n")"
      "\n";
  EXPECT_TRUE(absl::EndsWith(line, tail)) << line;
  // Without fields the text line is what it always was: nothing after the message.
  const std::string plain = Format(LogFormat::kText, spdlog::level::info, "serving");
  EXPECT_TRUE(absl::EndsWith(plain, ".123 coordinator] serving\n")) << plain;
}

TEST_F(LogFormatTest, ProcessFieldsGoOnJsonLinesAndALineFieldReplacesOne) {
  SetProcessLogFields({{"worker", "w1"}, {"zone", "a"}});
  EXPECT_EQ(Format(LogFormat::kJson, spdlog::level::info, "m", {{"event", "x"}}),
            R"({"ts":"2025-01-02T03:04:05.123456Z","level":"info","process":"coordinator",)"
            R"("msg":"m","worker":"w1","zone":"a","event":"x"})"
            "\n");
  EXPECT_EQ(Format(LogFormat::kJson, spdlog::level::info, "m", {{"worker", "w2"}}),
            R"({"ts":"2025-01-02T03:04:05.123456Z","level":"info","process":"coordinator",)"
            R"("msg":"m","zone":"a","worker":"w2"})"
            "\n");
  const std::string text = Format(LogFormat::kText, spdlog::level::info, "m");
  EXPECT_EQ(text.find("w1"), std::string::npos) << text;
}

TEST_F(LogFormatTest, ScopedFieldsNestAndEnd) {
  const LogFields outer = {{"a", "1"}};
  const LogFields inner = {{"b", "2"}};
  {
    ScopedLogFields o(outer);
    {
      ScopedLogFields i(inner);
      ASSERT_EQ(CurrentLogFields().size(), 1u);
      EXPECT_EQ(CurrentLogFields()[0].key, "b");
    }
    ASSERT_EQ(CurrentLogFields().size(), 1u);
    EXPECT_EQ(CurrentLogFields()[0].key, "a");
  }
  EXPECT_TRUE(CurrentLogFields().empty());
}

// Through a real logger: WithFields' fields reach their own line only, at its level.
TEST_F(LogFormatTest, WithFieldsLogsThroughTheDefaultLogger) {
  std::ostringstream out;
  auto logger = std::make_shared<spdlog::logger>(
      "worker", std::make_shared<spdlog::sinks::ostream_sink_mt>(out));
  logger->set_formatter(MakeLogFormatter(LogFormat::kJson));
  logger->set_level(spdlog::level::info);
  const std::shared_ptr<spdlog::logger> previous = spdlog::default_logger();
  spdlog::set_default_logger(logger);
  WithFields({{"job_id", "j7"}, {"event", "started"}}).Info("job {} of {}", 1, 2);
  WithFields({{"job_id", "j8"}}).Log(spdlog::level::debug, "below the level");
  spdlog::info("plain");
  WithFields({{"worker", "w1"}}).Warn("{}", std::string("odd \xfe"));
  spdlog::set_default_logger(previous);

  std::istringstream lines(out.str());
  std::vector<nlohmann::json> parsed;
  for (std::string line; std::getline(lines, line);) parsed.push_back(nlohmann::json::parse(line));
  ASSERT_EQ(parsed.size(), 3u) << out.str();
  EXPECT_EQ(parsed[0]["msg"], "job 1 of 2");
  EXPECT_EQ(parsed[0]["job_id"], "j7");
  EXPECT_EQ(parsed[0]["event"], "started");
  EXPECT_EQ(parsed[0]["process"], "worker");
  EXPECT_EQ(parsed[1]["msg"], "plain");
  EXPECT_FALSE(parsed[1].contains("job_id")) << parsed[1];
  EXPECT_EQ(parsed[2]["level"], "warning");
  EXPECT_EQ(parsed[2]["worker"], "w1");
  EXPECT_EQ(parsed[2]["msg"], "odd \xef\xbf\xbd");
}

TEST(ParseLogFormat, NamesTheFlagOnAnUnknownFormat) {
  EXPECT_EQ(*ParseLogFormat("text"), LogFormat::kText);
  EXPECT_EQ(*ParseLogFormat("json"), LogFormat::kJson);
  const absl::StatusOr<LogFormat> bad = ParseLogFormat("xml");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("--log_format"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace arbor::base
