// One decoder layer of every architecture Arbor serves, written once for both backends: the
// order of its steps, the architecture flags (model/architecture.h) that change a step, and the
// TensorTap names (backend.h) under which each step's output is shown. The CPU and CUDA backends
// execute this recipe over their own operations, so an architecture that differs in a step
// changes it here for both, and the taps the backend tests compare cannot drift apart.
//
// `Ops` is a backend's layer over one step's rows:
//   absl::Status AttentionNorm(int layer);  // h = RMSNorm(x), x += delta first past layer 0
//   absl::Status ProjectQkv(int layer, bool bias);  // q, k, v = h·Wᵀ (+ their biases)
//   absl::Status RotateQk(int layer, bool head_norm);  // per-head q/k RMSNorm first, then RoPE
//   absl::Status Attend(int layer);  // k, v appended to the paged cache, then attention
//   absl::Status ProjectOut(int layer);  // delta = attn·Woᵀ
//   absl::Status MlpNorm(int layer);  // x += delta; h = RMSNorm(x)
//   absl::Status ProjectGateUp(int layer);  // gate, up = h·Wᵀ
//   absl::Status Swiglu();  // act = silu(gate)·up
//   absl::Status ProjectDown(int layer);  // delta = act·Wdownᵀ
//   bool tapped() const;  // whether a TensorTap watches this step
//   absl::Status Emit(std::string_view name, LayerTensor tensor);  // to the tap (only if tapped)
// A backend may fold a step's work into a neighbour (a norm into the next projection) where no
// tap is set: each step's result must be what the recipe says once the next one has read it.
#ifndef ARBOR_WORKER_BACKEND_LAYER_RECIPE_H_
#define ARBOR_WORKER_BACKEND_LAYER_RECIPE_H_

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "model/architecture.h"
#include "model/config.h"

namespace arbor::worker {

// The per-row tensors of a layer that the recipe shows to a tap.
enum class LayerTensor {
  kNormed,      // h: the last RMSNorm's output.
  kQ,           // Queries after RoPE.
  kK,           // Keys after RoPE.
  kV,           // Values.
  kAttention,   // Attention output, heads side by side.
  kDelta,       // A sublayer's output before it joins the residual stream.
  kResidual,    // x: the residual stream.
  kActivation,  // The MLP's SwiGLU output.
};

template <typename Ops>
absl::Status RunLayer(const model::ModelConfig& c, int layer, Ops& ops) {
  // Names are built only for a tap: untapped steps (every served one) pay nothing for them.
  auto emit = [&](absl::string_view step, LayerTensor tensor) {
    return ops.tapped() ? ops.Emit(absl::StrCat("layer", layer, ".", step), tensor)
                        : absl::OkStatus();
  };
  RETURN_IF_ERROR(ops.AttentionNorm(layer));
  RETURN_IF_ERROR(emit("attn_norm", LayerTensor::kNormed));
  RETURN_IF_ERROR(ops.ProjectQkv(layer, c.qkv_bias()));
  RETURN_IF_ERROR(ops.RotateQk(layer, model::Describe(c.architecture).qk_norm));
  RETURN_IF_ERROR(emit("q", LayerTensor::kQ));
  RETURN_IF_ERROR(emit("k", LayerTensor::kK));
  RETURN_IF_ERROR(emit("v", LayerTensor::kV));
  RETURN_IF_ERROR(ops.Attend(layer));
  RETURN_IF_ERROR(emit("attn", LayerTensor::kAttention));
  RETURN_IF_ERROR(ops.ProjectOut(layer));
  RETURN_IF_ERROR(emit("attn_out", LayerTensor::kDelta));
  RETURN_IF_ERROR(ops.MlpNorm(layer));
  RETURN_IF_ERROR(emit("attn_residual", LayerTensor::kResidual));
  RETURN_IF_ERROR(emit("mlp_norm", LayerTensor::kNormed));
  RETURN_IF_ERROR(ops.ProjectGateUp(layer));
  RETURN_IF_ERROR(ops.Swiglu());
  RETURN_IF_ERROR(emit("mlp_act", LayerTensor::kActivation));
  RETURN_IF_ERROR(ops.ProjectDown(layer));
  return emit("mlp_out", LayerTensor::kDelta);
}

}  // namespace arbor::worker

#endif  // ARBOR_WORKER_BACKEND_LAYER_RECIPE_H_
