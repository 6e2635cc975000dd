#include "coordinator/http/tool_calls.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "grammar/exact_json.h"
#include "grammar/json_matcher.h"

namespace arbor::coordinator::http {
namespace {

constexpr absl::string_view kOpener = "<tool_call>";
constexpr absl::string_view kCloser = "</tool_call>";
// Llama 3.1's marker before a call it means to run in its environment.
constexpr absl::string_view kPythonTag = "<|python_tag|>";
// Nesting a call object may have (the arguments' own, and the object around them).
constexpr int kMaxCallDepth = static_cast<int>(grammar::kMaxNesting) + 1;

bool IsChatML(const ToolRequest& tools) {
  return tools.format == model::ToolFormat::kChatMLToolCall;
}

// The length of the longest end of `text` that is a proper start of `marker`.
size_t PartialMarker(absl::string_view text, absl::string_view marker) {
  for (size_t n = std::min(text.size(), marker.size() - 1); n > 0; --n) {
    if (absl::StartsWith(marker, text.substr(text.size() - n))) return n;
  }
  return 0;
}

}  // namespace

ToolCallReader::ToolCallReader(const ToolRequest* tools, std::string id_prefix)
    : tools_(tools), id_prefix_(std::move(id_prefix)) {
  // A forced call's opener was in the prompt: the answer starts inside it.
  in_call_ = tools_->forced() && IsChatML(*tools_);
  opener_in_prompt_ = in_call_;
  holding_whole_ = tools_->forced() && !IsChatML(*tools_);
  decided_ = holding_whole_;
}

ToolCallReader::Output ToolCallReader::Push(absl::string_view text) {
  Output out;
  absl::StrAppend(&buffer_, text);
  if (IsChatML(*tools_)) {
    PushChatML(out);
  } else {
    PushLlama(out);
  }
  return out;
}

void ToolCallReader::PushChatML(Output& out) {
  while (true) {
    if (in_call_) {
      const size_t end = absl::string_view(buffer_).find(kCloser);
      if (end == absl::string_view::npos) return;
      const std::string block = buffer_.substr(0, end);
      buffer_.erase(0, end + kCloser.size());
      TakeBlock(block, /*closed=*/true, out);
      continue;
    }
    const size_t start = absl::string_view(buffer_).find(kOpener);
    if (start != absl::string_view::npos) {
      Content(absl::string_view(buffer_).substr(0, start), out);
      buffer_.erase(0, start + kOpener.size());
      in_call_ = true;
      continue;
    }
    const size_t decided = buffer_.size() - PartialMarker(buffer_, kOpener);
    Content(absl::string_view(buffer_).substr(0, decided), out);
    buffer_.erase(0, decided);
    return;
  }
}

void ToolCallReader::TakeBlock(const std::string& block, bool closed, Output& out) {
  std::optional<ReturnedToolCall> call = Parse(block);
  if (call) {
    pending_space_.clear();  // Whitespace before a call is markup's, not content.
    out.calls.push_back(*std::move(call));
  } else {
    Content(absl::StrCat(opener_in_prompt_ ? "" : kOpener, block, closed ? kCloser : ""), out);
  }
  in_call_ = false;
  opener_in_prompt_ = false;
}

void ToolCallReader::PushLlama(Output& out) {
  if (!decided_) {
    const absl::string_view start = absl::StripLeadingAsciiWhitespace(buffer_);
    if (start.empty() ||
        (absl::StartsWith(kPythonTag, start) && start.size() < kPythonTag.size())) {
      return;  // Not yet known.
    }
    holding_whole_ = start[0] == '{' || absl::StartsWith(start, kPythonTag);
    decided_ = true;
  }
  if (holding_whole_) return;
  Content(buffer_, out);
  buffer_.clear();
}

ToolCallReader::Output ToolCallReader::Finish() {
  Output out;
  if (in_call_) {
    TakeBlock(buffer_, /*closed=*/false, out);
  } else if (holding_whole_) {
    std::optional<ReturnedToolCall> call = Parse(buffer_);
    if (call) {
      out.calls.push_back(*std::move(call));
    } else {
      Content(buffer_, out);
    }
  } else {
    Content(buffer_, out);
  }
  buffer_.clear();
  pending_space_.clear();  // Trailing whitespace of the answer is dropped.
  return out;
}

std::optional<ReturnedToolCall> ToolCallReader::Parse(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (!IsChatML(*tools_) && absl::ConsumePrefix(&text, kPythonTag)) {
    text = absl::StripAsciiWhitespace(text);
  }
  absl::StatusOr<Fields::json> call = grammar::ParseExactJson(text, kMaxCallDepth);
  if (!call.ok() || !call->is_object()) return std::nullopt;
  const auto name = call->find("name");
  const auto arguments = call->find(tools_->arguments_key());
  if (name == call->end() || !name->is_string() || arguments == call->end() ||
      !arguments->is_object()) {
    return std::nullopt;
  }
  const auto function =
      std::find_if(tools_->functions.begin(), tools_->functions.end(),
                   [&](const ToolFunction& f) { return f.name == name->get<std::string>(); });
  if (function == tools_->functions.end()) return std::nullopt;
  std::string compact = grammar::DumpExactJson(*arguments);
  grammar::JsonMatcher matcher(function->grammar.get());
  if (!matcher.FeedAll(compact) || !matcher.AcceptsEnd()) return std::nullopt;
  const int index = next_index_++;
  return ReturnedToolCall{index, absl::StrCat("call_", id_prefix_, "_", index), function->name,
                          std::move(compact)};
}

void ToolCallReader::Content(absl::string_view text, Output& out) {
  const size_t last = text.find_last_not_of(" \t\r\n");
  if (last == absl::string_view::npos) {
    absl::StrAppend(&pending_space_, text);
    return;
  }
  absl::StrAppend(&out.content, pending_space_, text.substr(0, last + 1));
  pending_space_ = std::string(text.substr(last + 1));
}

}  // namespace arbor::coordinator::http
