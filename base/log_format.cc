#include "base/log_format.h"

#include <spdlog/pattern_formatter.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/log_fields.h"
#include "nlohmann/json.hpp"

namespace arbor::base {
namespace {

// The text layout, as before fields existed: level letter (coloured on a terminal), local
// time, process name, message; `%*` appends the fields.
constexpr char kTextPattern[] = "%^%L%$ %H:%M:%S.%e %n] %v%*";

void Append(std::string_view s, spdlog::memory_buf_t& dest) {
  dest.append(s.data(), s.data() + s.size());
}

// `s` as a JSON string literal: quotes, backslashes and control characters escaped, invalid
// UTF-8 replaced by U+FFFD, valid UTF-8 kept as is.
void AppendJsonString(std::string_view s, spdlog::memory_buf_t& dest) {
  Append(nlohmann::json(std::string(s))
             .dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace),
         dest);
}

// Whether a text value can go unquoted: one printable ASCII word that reads back unambiguously.
bool IsBareWord(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s) {
    if (c <= ' ' || c > '~' || c == '"' || c == '=' || c == '\\') return false;
  }
  return true;
}

// A field's value: a number bare; a string as a JSON string literal, or bare when `bare_words`
// and it is one.
void AppendValue(const LogField& field, bool bare_words, spdlog::memory_buf_t& dest) {
  if (field.number || (bare_words && IsBareWord(field.value))) {
    Append(field.value, dest);
  } else {
    AppendJsonString(field.value, dest);
  }
}

class TextFieldsFlag : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg&, const std::tm&,
              spdlog::memory_buf_t& dest) override {
    for (const LogField& field : CurrentLogFields()) {
      Append(" ", dest);
      Append(field.key, dest);
      Append("=", dest);
      AppendValue(field, /*bare_words=*/true, dest);
    }
  }
  std::unique_ptr<custom_flag_formatter> clone() const override {
    return std::make_unique<TextFieldsFlag>();
  }
};

class JsonFormatter : public spdlog::formatter {
 public:
  void format(const spdlog::details::log_msg& msg, spdlog::memory_buf_t& dest) override {
    Append(R"({"ts":")", dest);
    Append(
        absl::FormatTime("%Y-%m-%dT%H:%M:%E6SZ", absl::FromChrono(msg.time), absl::UTCTimeZone()),
        dest);
    Append(R"(","level":)", dest);
    const spdlog::string_view_t level = spdlog::level::to_string_view(msg.level);
    AppendJsonString({level.data(), level.size()}, dest);
    Append(R"(,"process":)", dest);
    AppendJsonString({msg.logger_name.data(), msg.logger_name.size()}, dest);
    Append(R"(,"msg":)", dest);
    AppendJsonString({msg.payload.data(), msg.payload.size()}, dest);
    const absl::Span<const LogField> line = CurrentLogFields();
    for (const LogField& field : *ProcessLogFields()) {
      const bool replaced = std::any_of(line.begin(), line.end(),
                                        [&](const LogField& f) { return f.key == field.key; });
      if (!replaced) AppendField(field, dest);
    }
    for (const LogField& field : line) AppendField(field, dest);
    Append("}\n", dest);
  }
  std::unique_ptr<spdlog::formatter> clone() const override {
    return std::make_unique<JsonFormatter>();
  }

 private:
  static void AppendField(const LogField& field, spdlog::memory_buf_t& dest) {
    Append(",", dest);
    AppendJsonString(field.key, dest);
    Append(":", dest);
    AppendValue(field, /*bare_words=*/false, dest);
  }
};

}  // namespace

absl::StatusOr<LogFormat> ParseLogFormat(absl::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return absl::InvalidArgumentError(
      absl::StrCat("--log_format: '", name, "' is not one of text, json"));
}

std::unique_ptr<spdlog::formatter> MakeLogFormatter(LogFormat format) {
  if (format == LogFormat::kJson) return std::make_unique<JsonFormatter>();
  auto text = std::make_unique<spdlog::pattern_formatter>();
  text->add_flag<TextFieldsFlag>('*').set_pattern(kTextPattern);
  return text;
}

}  // namespace arbor::base
