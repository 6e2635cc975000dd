#include "coordinator/job/backspace.h"

#include "absl/status/status.h"
#include "coordinator/job/stored_distribution.h"

namespace arbor::coordinator {

absl::StatusOr<entropix::SampledToken> RedrawBackspaced(absl::Span<const TokenAlternative> stored,
                                                        int32_t removed_token,
                                                        const arbor::v1::StepResult& hehv_step,
                                                        entropix::RngKey key) {
  const StoredDistribution distribution(stored);
  if (distribution.empty()) {
    return absl::FailedPreconditionError("backspaced token has no stored distribution");
  }
  const int32_t banned[] = {removed_token};
  return entropix::Sample(distribution.candidates(), SamplingOf(hehv_step),
                          key.WithDraw(kBackspaceRedrawDraw), banned);
}

}  // namespace arbor::coordinator
