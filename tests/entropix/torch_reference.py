"""Independent PyTorch reference for the entropix metrics (docs/ARCHITECTURE.md §4.1).

Reads the JSON the C++ test writes: {"logit_rows": [[...]], "attention": [{"heads", "keys",
"scores" (row-major [heads][keys]), "reference_len"}]}. Prints one JSON object with, per logit row,
entropy / varentropy (bits), logsumexp and the top-8 log-probs, and per attention case both the
EXACT and the REFERENCE (zero-padded buffer, as the canonical entropix sampler) metrics. All
float64, written from the definitions rather than from the C++ formulas.
"""
import json
import math
import sys

import torch

LN2 = math.log(2.0)


def logit_metrics(row):
    x = torch.tensor(row, dtype=torch.float64)
    lp = torch.log_softmax(x, dim=-1)
    p = lp.exp()
    plp = torch.where(p > 0, p * lp, torch.zeros_like(p))
    entropy = -plp.sum() / LN2
    dev = torch.where(p > 0, p * (lp / LN2 + entropy) ** 2, torch.zeros_like(p))
    top = torch.topk(lp, k=min(8, x.numel()))
    return {
        "entropy": entropy.item(),
        "varentropy": dev.sum().item(),
        "logsumexp": torch.logsumexp(x, dim=-1).item(),
        "top_logprobs": top.values.tolist(),
    }


def attention_metrics(scores):
    a = torch.softmax(scores, dim=-1)
    ent = -(a * torch.log2(a)).sum(dim=-1)
    head_vent = (a * (torch.log2(a) + ent[:, None]) ** 2).sum(dim=-1)
    return {
        "attn_entropy": ent.mean().item(),
        "attn_varentropy": ent.var(unbiased=False).item(),
        "attn_head_varentropy": head_vent.mean().item(),
        "agreement": (a - a.mean(dim=0, keepdim=True)).abs().mean().item(),
        "interaction_strength": scores.abs().mean().item(),
    }


def main():
    with open(sys.argv[1]) as f:
        data = json.load(f)
    out = {"logit_rows": [logit_metrics(r) for r in data["logit_rows"]], "attention": []}
    for case in data["attention"]:
        s = torch.tensor(case["scores"], dtype=torch.float64).reshape(case["heads"], case["keys"])
        slots = max(case["reference_len"], case["keys"])
        padded = torch.cat([s, torch.zeros(case["heads"], slots - case["keys"], dtype=s.dtype)], 1)
        out["attention"].append({"exact": attention_metrics(s),
                                 "reference": attention_metrics(padded)})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
