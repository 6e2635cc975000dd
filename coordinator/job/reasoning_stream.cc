// ReasoningStream: traces decoded as they grow, sent in fork order.
#include "coordinator/job/reasoning_stream.h"

#include <utility>

namespace arbor::coordinator {

ReasoningStream::ReasoningStream(bool enabled, StreamedText::Decode decode,
                                 std::function<bool(int32_t)> is_stop, Emit emit)
    : enabled_(enabled),
      decode_(std::move(decode)),
      is_stop_(std::move(is_stop)),
      emit_(std::move(emit)) {}

void ReasoningStream::Open(uint64_t sequence, std::optional<uint64_t> parent, int32_t position,
                           int32_t token, bool ended) {
  if (!enabled_ || by_sequence_.contains(sequence)) return;
  Trace trace;
  if (parent) {
    if (auto it = by_sequence_.find(*parent); it != by_sequence_.end()) {
      trace.parent = static_cast<int32_t>(it->second);
    }
  }
  trace.next_position = position;
  trace.text = std::make_unique<StreamedText>(decode_, std::vector<std::string>{});
  by_sequence_[sequence] = traces_.size();
  traces_.push_back(std::move(trace));
  Extend(sequence, position, token);
  if (ended) End(sequence);
}

void ReasoningStream::Extend(uint64_t sequence, int32_t position, int32_t token) {
  auto it = by_sequence_.find(sequence);
  if (it == by_sequence_.end()) return;
  Trace& trace = traces_[it->second];
  if (trace.ended || position < trace.next_position) return;
  trace.next_position = position + 1;
  if (is_stop_(token)) return;
  trace.kept += trace.text->Push(token, /*last=*/false).text;
  Show();
}

void ReasoningStream::End(uint64_t sequence) {
  auto it = by_sequence_.find(sequence);
  if (it == by_sequence_.end()) return;
  Trace& trace = traces_[it->second];
  if (trace.ended) return;
  trace.ended = true;
  trace.kept += trace.text->Finish().text;
  Show();
}

void ReasoningStream::EndAll() {
  for (Trace& trace : traces_) {
    if (trace.ended) continue;
    trace.ended = true;
    trace.kept += trace.text->Finish().text;
  }
  Show();
}

void ReasoningStream::Show() {
  while (stage_ < traces_.size()) {
    Trace& trace = traces_[stage_];
    if (!trace.kept.empty()) {
      arbor::v1::ReasoningEvent event;
      event.set_trace(static_cast<int32_t>(stage_));
      event.set_parent_trace(trace.parent);
      event.set_text(std::move(trace.kept));
      trace.kept.clear();
      emit_(std::move(event));
    }
    if (!trace.ended) return;
    trace.text.reset();  // Its text was all sent.
    ++stage_;
  }
}

}  // namespace arbor::coordinator
