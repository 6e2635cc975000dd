#!/usr/bin/env python3
"""Per-step entropix metrics (docs/ARCHITECTURE.md §4.1) from the independent float64 Llama forward.

The reference the worker engine's reported steps are compared against: it runs
tests/model/llama_reference.py's forward on each context and reduces the last position's logits
and the last layer's scaled attention scores of the last query exactly as the design defines
them, all in float64, sharing no code with Arbor.

Command line: one JSON request on stdin, one JSON answer on stdout.
  request: {"model_dir": "DIR", "contexts": [[token ids...], ...], "reference_len": L}
  answer:  {"results": [{"entropy": bits, "varentropy": bits^2, "logprobs": [vocab floats],
                         "exact": {...}, "reference": {...}}, ...]}
  where exact/reference hold attn_entropy, attn_varentropy, attn_head_varentropy, agreement and
  interaction_strength over the n visible keys (EXACT) or over a zero-padded buffer of
  max(L, n) slots whose empty slots score 0 (REFERENCE, the canonical entropix sampler).
"""
import json
import math
import os
import sys

import torch

sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "model"))
from llama_reference import entropy_varentropy, load_model  # noqa: E402


def attention_metrics(scores, slots):
    """scores: [heads, n] float64; the buffer has `slots` >= n entries, the rest scoring 0."""
    heads, n = scores.shape
    padded = torch.zeros((heads, slots), dtype=torch.float64)
    padded[:, :n] = scores
    log_a = torch.log_softmax(padded, -1) / math.log(2)  # log2 A
    a = log_a.exp2()
    per_head = -(a * log_a).sum(-1)  # E_h
    head_varentropy = (a * (log_a + per_head[:, None]) ** 2).sum(-1)
    mean_a = a.mean(0, keepdim=True)
    return {
        "attn_entropy": per_head.mean().item(),
        "attn_varentropy": per_head.var(unbiased=False).item(),
        "attn_head_varentropy": head_varentropy.mean().item(),
        "agreement": (a - mean_a).abs().mean().item(),
        "interaction_strength": padded.abs().mean().item(),
    }


def main():
    request = json.load(sys.stdin)
    model = load_model(request["model_dir"])
    results = []
    for tokens in request["contexts"]:
        logits, scores = model.forward(tokens)
        last = logits[-1]
        h, v = entropy_varentropy(last)
        n = scores.shape[1]
        results.append({
            "entropy": h,
            "varentropy": v,
            "logprobs": torch.log_softmax(last, -1).tolist(),
            "exact": attention_metrics(scores, n),
            "reference": attention_metrics(scores, max(request["reference_len"], n)),
        })
    json.dump({"results": results}, sys.stdout)


if __name__ == "__main__":
    main()
