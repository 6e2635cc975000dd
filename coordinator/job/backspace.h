// BACKSPACE's re-draw (docs/ARCHITECTURE.md §4.2): the removed position is drawn again from the
// distribution stored with the removed token's step, with the HEHV parameters of the step that
// asked for the backspace and the removed token banned, so the re-draw always differs.
#ifndef ARBOR_COORDINATOR_JOB_BACKSPACE_H_
#define ARBOR_COORDINATOR_JOB_BACKSPACE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "arbor/v1/worker.pb.h"
#include "coordinator/tree/search_tree.h"
#include "entropix/rng.h"
#include "entropix/sampler.h"

namespace arbor::coordinator {

// `stored`: top-K of the removed token's step; `hehv_step`: the structural BACKSPACE step;
// `key`: (seed, removed position, branch id); the draw index is kBackspaceRedrawDraw.
// FailedPrecondition when nothing but the banned token is left to draw.
absl::StatusOr<entropix::SampledToken> RedrawBackspaced(absl::Span<const TokenAlternative> stored,
                                                        int32_t removed_token,
                                                        const arbor::v1::StepResult& hehv_step,
                                                        entropix::RngKey key);

}  // namespace arbor::coordinator

#endif  // ARBOR_COORDINATOR_JOB_BACKSPACE_H_
