#include "policy/policy_presets.h"

namespace arbor::rpc {

v1::PolicyConfig GreedyPolicy() {
  v1::PolicyConfig p;
  p.set_mode(v1::POLICY_MODE_CANONICAL);
  p.mutable_thresholds()->set_lelv_entropy(64);
  p.mutable_thresholds()->set_lelv_varentropy(4096);
  return p;
}

v1::PolicyConfig PlainSamplingPolicy() {
  v1::PolicyConfig p;
  p.set_mode(v1::POLICY_MODE_CANONICAL);
  v1::Thresholds* t = p.mutable_thresholds();
  t->set_lelv_entropy(0);
  t->set_helv_entropy(64);
  t->set_lehv_varentropy(4096);
  t->set_hehv_varentropy(4096);
  v1::Coefficients* c = p.mutable_coefficients();
  for (auto set :
       {&v1::Coefficients::set_ada_temp_logits, &v1::Coefficients::set_ada_temp_attn,
        &v1::Coefficients::set_ada_temp_agree, &v1::Coefficients::set_ada_top_p_attn_vent,
        &v1::Coefficients::set_ada_top_k_is, &v1::Coefficients::set_ada_top_k_agree,
        &v1::Coefficients::set_ada_min_p_logits}) {
    (c->*set)(0.0f);
  }
  p.mutable_adaptive()->set_n_samples(1);
  v1::SamplingParams* s = p.mutable_sampling();
  s->set_temperature(0.7f);
  s->set_top_p(1.0f);
  s->set_top_k(100);
  s->set_min_p(0.05f);
  return p;
}

}  // namespace arbor::rpc
