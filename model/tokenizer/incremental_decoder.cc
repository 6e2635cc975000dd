#include "model/tokenizer/incremental_decoder.h"

#include "model/tokenizer/utf8.h"

namespace arbor::model {

std::string IncrementalDecoder::Push(int id) {
  if (skip_special_ && tokenizer_.IsSpecial(id)) return "";
  absl::string_view bytes = tokenizer_.TokenBytes(id);
  if (at_start_ && !bytes.empty()) {
    at_start_ = false;
    if (tokenizer_.strips_leading_space() && bytes[0] == ' ') bytes.remove_prefix(1);
  }
  pending_.append(bytes.data(), bytes.size());
  return TakeComplete();
}

std::string IncrementalDecoder::TakeComplete() {
  std::string out;
  absl::string_view rest = pending_;
  while (!rest.empty()) {
    const Utf8Prefix prefix = ReadUtf8Prefix(rest);
    if (prefix.kind == Utf8Prefix::Kind::kIncomplete) break;  // Wait for more bytes.
    if (prefix.kind == Utf8Prefix::Kind::kComplete) {
      out.append(rest.data(), prefix.length);
    } else {
      out.append("\xEF\xBF\xBD");
    }
    rest.remove_prefix(prefix.length);
  }
  pending_.erase(0, pending_.size() - rest.size());
  return out;
}

std::string IncrementalDecoder::Flush() {
  std::string out = ToValidUtf8(pending_);
  pending_.clear();
  return out;
}

void IncrementalDecoder::Reset() {
  pending_.clear();
  at_start_ = true;
}

}  // namespace arbor::model
