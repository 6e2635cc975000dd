// The per-step uncertainty the policy decides on: logit and attention metrics together, field for
// field the message arbor.v1.Metrics (policy/policy_convert.h maps between them).
#ifndef ARBOR_ENTROPIX_METRICS_H_
#define ARBOR_ENTROPIX_METRICS_H_

#include "entropix/attention_metrics.h"
#include "entropix/logit_metrics.h"

namespace arbor::entropix {

struct Metrics {
  float entropy = 0.0f;               // H, bits.
  float varentropy = 0.0f;            // V, bits².
  float attn_entropy = 0.0f;          // bits.
  float attn_varentropy = 0.0f;       // bits².
  float attn_head_varentropy = 0.0f;  // bits².
  float agreement = 0.0f;             // [0, 2].
  float interaction_strength = 0.0f;  // Mean |s|.
  float logsumexp = 0.0f;             // nats.
};

inline Metrics CombineMetrics(const LogitMetrics& logits, const AttentionMetrics& attention) {
  Metrics m;
  m.entropy = logits.entropy;
  m.varentropy = logits.varentropy;
  m.logsumexp = logits.logsumexp;
  m.attn_entropy = attention.attn_entropy;
  m.attn_varentropy = attention.attn_varentropy;
  m.attn_head_varentropy = attention.attn_head_varentropy;
  m.agreement = attention.agreement;
  m.interaction_strength = attention.interaction_strength;
  return m;
}

}  // namespace arbor::entropix

#endif  // ARBOR_ENTROPIX_METRICS_H_
