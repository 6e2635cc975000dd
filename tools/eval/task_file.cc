#include "tools/eval/task_file.h"

#include <cmath>
#include <cstdlib>
#include <fstream>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/status_macros.h"
#include "nlohmann/json.hpp"

namespace arbor::tools::eval {
namespace {

using nlohmann::json;

// GSM8K lines end their worked answer with "#### N".
constexpr char kGsm8kMarker[] = "####";

// A number as people write it: optional sign, digits with optional thousands commas, optional
// decimals.
constexpr char kNumberPattern[] = R"(-?\d[\d,]*(\.\d+)?)";
// The first non-empty line, trimmed: matches once, at the start of the output.
constexpr char kFirstLinePattern[] = R"(\A\s*([^\n]*\S))";

const AnswerPattern& NumberPattern() {
  static const auto* pattern =
      new std::shared_ptr<const AnswerPattern>(*AnswerPattern::Compile(kNumberPattern));
  return **pattern;
}

absl::Status Bad(const std::string& where, const std::string& field, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": ", field, ": ", why));
}

absl::StatusOr<std::string> StringField(const json& line, const char* field,
                                        const std::string& where, bool required) {
  if (!line.contains(field)) {
    if (required) return Bad(where, field, "missing");
    return std::string();
  }
  if (!line[field].is_string()) return Bad(where, field, "must be a string");
  return line[field].get<std::string>();
}

absl::StatusOr<MatchKind> ParseMatch(const std::string& name, const std::string& where) {
  if (name.empty() || name == "exact") return MatchKind::kExact;
  if (name == "number") return MatchKind::kNumber;
  if (name == "icase") return MatchKind::kIcase;
  return Bad(where, "match", absl::StrCat("'", name, "' is not number, exact or icase"));
}

absl::Status ParseMessages(const json& messages, const std::string& where, Task& task) {
  if (!messages.is_array() || messages.empty()) {
    return Bad(where, "messages", "must be a non-empty array");
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string at = absl::StrCat("messages[", i, "]");
    const json& m = messages[i];
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string() || !m.contains("content") ||
        !m["content"].is_string()) {
      return Bad(where, at, "must be {\"role\": string, \"content\": string}");
    }
    task.messages.push_back({m["role"].get<std::string>(), m["content"].get<std::string>()});
  }
  return absl::OkStatus();
}

absl::Status ParseChoices(const json& choices, const std::string& where, Task& task) {
  if (!choices.is_array() || choices.size() < 2) {
    return Bad(where, "choices", "must be an array of at least 2 strings");
  }
  for (const json& choice : choices) {
    if (!choice.is_string() || choice.get<std::string>().empty()) {
      return Bad(where, "choices", "every choice must be a non-empty string");
    }
    task.choices.push_back(choice.get<std::string>());
  }
  if (std::count(task.choices.begin(), task.choices.end(), task.answer) != 1) {
    return Bad(where, "answer", "must be exactly one of the choices");
  }
  return absl::OkStatus();
}

// A GSM8K line: the question as a chat prompt, the number after "####" as the answer.
absl::StatusOr<Task> FromGsm8k(const json& line, const std::string& where) {
  Task task;
  ASSIGN_OR_RETURN(std::string question, StringField(line, "question", where, true));
  ASSIGN_OR_RETURN(std::string solution, StringField(line, "answer", where, true));
  const size_t marker = solution.rfind(kGsm8kMarker);
  task.answer = std::string(absl::StripAsciiWhitespace(solution.substr(marker + 4)));
  if (task.answer.empty()) return Bad(where, "answer", "nothing after ####");
  task.id = line.contains("id") && line["id"].is_string() ? line["id"].get<std::string>() : "";
  task.family = "gsm8k";
  task.match = MatchKind::kNumber;
  task.messages.push_back({"user", absl::StrCat(question, "\nGive the final answer as a number.")});
  return task;
}

}  // namespace

absl::StatusOr<Task> ParseTask(const std::string& text, const std::string& where) {
  json line = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (line.is_discarded() || !line.is_object()) return Bad(where, "line", "not a JSON object");
  if (line.contains("question") && line.contains("answer") && line["answer"].is_string() &&
      absl::StrContains(line["answer"].get<std::string>(), kGsm8kMarker)) {
    return FromGsm8k(line, where);
  }
  Task task;
  ASSIGN_OR_RETURN(task.id, StringField(line, "id", where, true));
  if (task.id.empty()) return Bad(where, "id", "empty");
  ASSIGN_OR_RETURN(task.answer, StringField(line, "answer", where, true));
  ASSIGN_OR_RETURN(std::string family, StringField(line, "family", where, false));
  if (!family.empty()) task.family = family;
  if (line.contains("level")) {
    if (!line["level"].is_number_integer()) return Bad(where, "level", "must be an integer");
    task.level = line["level"].get<int>();
  }
  if (line.contains("prompt") == line.contains("messages")) {
    return Bad(where, "prompt", "give exactly one of prompt and messages");
  }
  if (line.contains("prompt")) {
    ASSIGN_OR_RETURN(task.text, StringField(line, "prompt", where, true));
    if (task.text.empty()) return Bad(where, "prompt", "empty");
  } else {
    RETURN_IF_ERROR(ParseMessages(line["messages"], where, task));
  }
  ASSIGN_OR_RETURN(std::string match, StringField(line, "match", where, false));
  ASSIGN_OR_RETURN(task.match, ParseMatch(match, where));
  ASSIGN_OR_RETURN(std::string extract, StringField(line, "extract", where, false));
  if (!extract.empty()) {
    absl::StatusOr<std::shared_ptr<const AnswerPattern>> pattern = AnswerPattern::Compile(extract);
    if (!pattern.ok()) return Bad(where, "extract", std::string(pattern.status().message()));
    task.extract = *std::move(pattern);
    task.extract_source = extract;
  }
  if (line.contains("choices")) RETURN_IF_ERROR(ParseChoices(line["choices"], where, task));
  if (line.contains("max_tokens")) {
    if (!line["max_tokens"].is_number_integer() || line["max_tokens"].get<int>() < 1) {
      return Bad(where, "max_tokens", "must be a positive integer");
    }
    task.max_tokens = line["max_tokens"].get<int>();
  }
  return task;
}

absl::StatusOr<std::vector<Task>> ReadTasks(const std::vector<std::string>& paths) {
  std::vector<Task> tasks;
  absl::flat_hash_set<std::string> ids;
  for (const std::string& path : paths) {
    std::ifstream in(path);
    if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open the task file"));
    std::string text;
    for (int number = 1; std::getline(in, text); ++number) {
      if (absl::StripAsciiWhitespace(text).empty()) continue;
      const std::string where = absl::StrCat(path, ":", number);
      ASSIGN_OR_RETURN(Task task, ParseTask(text, where));
      if (task.id.empty()) task.id = absl::StrCat(path, ":", number);  // GSM8K has no ids.
      if (!ids.insert(task.id).second) {
        return Bad(where, "id", absl::StrCat("'", task.id, "' appears twice"));
      }
      tasks.push_back(std::move(task));
    }
  }
  return tasks;
}

std::string AnswerPatternSource(const Task& task) {
  if (task.extract != nullptr) return task.extract_source;
  return task.match == MatchKind::kNumber ? kNumberPattern : kFirstLinePattern;
}

std::string ExtractAnswer(const Task& task, const std::string& output) {
  const AnswerPattern* pattern = task.extract.get();
  if (pattern == nullptr && task.match == MatchKind::kNumber) pattern = &NumberPattern();
  if (pattern == nullptr) {  // The first non-empty line.
    for (absl::string_view line : absl::StrSplit(output, '\n')) {
      line = absl::StripAsciiWhitespace(line);
      if (!line.empty()) return std::string(line);
    }
    return "";
  }
  return std::string(absl::StripAsciiWhitespace(pattern->LastMatch(output).value_or("")));
}

bool AnswerMatches(const Task& task, const std::string& extracted) {
  const std::string got(absl::StripAsciiWhitespace(extracted));
  const std::string want(absl::StripAsciiWhitespace(task.answer));
  switch (task.match) {
    case MatchKind::kExact:
      return got == want;
    case MatchKind::kIcase:
      return absl::EqualsIgnoreCase(got, want);
    case MatchKind::kNumber: {
      const std::string a = absl::StrReplaceAll(got, {{",", ""}});
      const std::string b = absl::StrReplaceAll(want, {{",", ""}});
      char* end_a = nullptr;
      char* end_b = nullptr;
      const double x = std::strtod(a.c_str(), &end_a);
      const double y = std::strtod(b.c_str(), &end_b);
      if (a.empty() || b.empty() || *end_a != '\0' || *end_b != '\0') return false;
      return std::abs(x - y) <= 1e-9 * std::max(1.0, std::abs(y));
    }
  }
  return false;
}

}  // namespace arbor::tools::eval
