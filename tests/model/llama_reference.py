#!/usr/bin/env python3
"""Independent float64 PyTorch forward of a Hugging Face Llama, Qwen2 or Qwen3 checkpoint.

The reference the C++ backends are compared against. It shares no code with Arbor: it reads
config.json with `json` and the weights with the `safetensors` package, and implements the
Llama forward from the published definition (RMSNorm, RoPE with linear or llama3 scaling in
Hugging Face's rotate-half layout, grouped-query causal attention, SwiGLU MLP, tied or separate
lm_head), plus Qwen2's q/k/v projection biases and Qwen3's per-head q/k RMSNorm (before RoPE)
wherever the checkpoint holds their weights. Needs torch (1.13 is enough) and safetensors; not
transformers.

Command line: one JSON request on stdin, one JSON answer on stdout.
  request:  {"model_dir": "DIR", "sequences": [[token ids...], ...], "logits": "all" | "last"}
  answer:   {"results": [{"logits": [[vocab floats] per position] (or one row when "last"),
                          "attention_scores": [[scores over keys 0..n-1] per query head],
                          "entropy_bits": float, "varentropy_bits2": float}, ...]}
  attention_scores are the last layer's scaled scores s = q.k / sqrt(head_dim) of the last
  query position, before the softmax; entropy and varentropy (docs/ARCHITECTURE.md §4.1) are of the last
  position's next-token distribution. All math in float64.
Import it to call load_model() and forward() directly (quadrant_coverage.py does).
"""
import json
import math
import os
import sys

import torch
from safetensors.torch import load_file


class Model:
    def __init__(self, model_dir):
        with open(os.path.join(model_dir, "config.json")) as f:
            cfg = json.load(f)
        self.hidden = cfg["hidden_size"]
        self.layers = cfg["num_hidden_layers"]
        self.heads = cfg["num_attention_heads"]
        self.kv_heads = cfg.get("num_key_value_heads") or self.heads
        self.head_dim = cfg.get("head_dim") or self.hidden // self.heads
        self.eps = cfg.get("rms_norm_eps", 1e-6)
        self.theta = cfg.get("rope_theta", 10000.0)
        self.scaling = cfg.get("rope_scaling")
        self.tied = cfg.get("tie_word_embeddings", False)
        weights = {}
        index = os.path.join(model_dir, "model.safetensors.index.json")
        if os.path.exists(index):
            with open(index) as f:
                files = sorted(set(json.load(f)["weight_map"].values()))
        else:
            files = ["model.safetensors"]
        for name in files:
            for key, value in load_file(os.path.join(model_dir, name)).items():
                weights[key] = value.to(torch.float64)
        self.w = weights
        self.lm_head = weights["model.embed_tokens.weight"] if self.tied else weights["lm_head.weight"]

    def inv_freq(self):
        d = self.head_dim
        inv = 1.0 / (self.theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
        s = self.scaling
        kind = (s or {}).get("rope_type", (s or {}).get("type", "default"))
        if kind == "linear":
            inv = inv / s["factor"]
        elif kind == "llama3":
            factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
            old = s["original_max_position_embeddings"]
            low_wavelen, high_wavelen = old / low, old / high
            out = []
            for f in inv.tolist():
                wavelen = 2 * math.pi / f
                if wavelen < high_wavelen:
                    out.append(f)
                elif wavelen > low_wavelen:
                    out.append(f / factor)
                else:
                    smooth = (old / wavelen - low) / (high - low)
                    out.append((1 - smooth) * f / factor + smooth * f)
            inv = torch.tensor(out, dtype=torch.float64)
        return inv

    def rms_norm(self, x, weight):
        return x / torch.sqrt((x * x).mean(-1, keepdim=True) + self.eps) * weight

    def rope(self, x, positions):
        # x: [heads, n, d]; rotate-half layout: pairs (i, i + d/2).
        angles = positions[:, None].to(torch.float64) * self.inv_freq()[None, :]
        cos = torch.cat([angles.cos(), angles.cos()], -1)
        sin = torch.cat([angles.sin(), angles.sin()], -1)
        half = self.head_dim // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * cos + rotated * sin

    def linear(self, x, name):
        """x @ W.T, plus the bias when the checkpoint has one (Qwen2's q/k/v projections)."""
        out = x @ self.w[name + ".weight"].T
        bias = self.w.get(name + ".bias")
        return out if bias is None else out + bias

    def forward(self, tokens):
        """Returns (logits [n, vocab], last layer's scaled scores [heads, n] of the last query)."""
        n = len(tokens)
        x = self.w["model.embed_tokens.weight"][torch.tensor(tokens, dtype=torch.long)]
        positions = torch.arange(n)
        mask = torch.full((n, n), float("-inf"), dtype=torch.float64).triu(1)
        group = self.heads // self.kv_heads
        scores_last = None
        for layer in range(self.layers):
            p = f"model.layers.{layer}."
            h = self.rms_norm(x, self.w[p + "input_layernorm.weight"])
            q = self.linear(h, p + "self_attn.q_proj").view(n, self.heads, self.head_dim)
            k = self.linear(h, p + "self_attn.k_proj").view(n, self.kv_heads, self.head_dim)
            v = self.linear(h, p + "self_attn.v_proj").view(n, self.kv_heads, self.head_dim)
            if p + "self_attn.q_norm.weight" in self.w:
                # Qwen3: each head's q and k normalised over head_dim with their own weights.
                q = self.rms_norm(q, self.w[p + "self_attn.q_norm.weight"])
                k = self.rms_norm(k, self.w[p + "self_attn.k_norm.weight"])
            q = self.rope(q.transpose(0, 1), positions)
            k = self.rope(k.transpose(0, 1), positions).repeat_interleave(group, 0)
            v = v.transpose(0, 1).repeat_interleave(group, 0)
            scores = q @ k.transpose(1, 2) / math.sqrt(self.head_dim)
            if layer == self.layers - 1:
                scores_last = scores[:, -1, :].clone()
            attn = torch.softmax(scores + mask, -1) @ v  # [heads, n, d]
            attn = attn.transpose(0, 1).reshape(n, self.heads * self.head_dim)
            x = x + attn @ self.w[p + "self_attn.o_proj.weight"].T
            h = self.rms_norm(x, self.w[p + "post_attention_layernorm.weight"])
            gate = h @ self.w[p + "mlp.gate_proj.weight"].T
            up = h @ self.w[p + "mlp.up_proj.weight"].T
            x = x + (torch.nn.functional.silu(gate) * up) @ self.w[p + "mlp.down_proj.weight"].T
        x = self.rms_norm(x, self.w["model.norm.weight"])
        return x @ self.lm_head.T, scores_last


def load_model(model_dir):
    return Model(model_dir)


def entropy_varentropy(logits):
    """Entropy (bits) and varentropy (bits^2) of softmax(logits), docs/ARCHITECTURE.md §4.1."""
    lp = torch.log_softmax(logits.to(torch.float64), -1) / math.log(2)
    p = lp.exp2()
    h = -(p * lp).sum().item()
    v = (p * (lp + h) ** 2).sum().item()
    return h, v


def main():
    request = json.load(sys.stdin)
    model = load_model(request["model_dir"])
    results = []
    for tokens in request["sequences"]:
        logits, scores = model.forward(tokens)
        h, v = entropy_varentropy(logits[-1])
        rows = logits if request.get("logits", "all") == "all" else logits[-1:]
        results.append({"logits": rows.tolist(), "attention_scores": scores.tolist(),
                        "entropy_bits": h, "varentropy_bits2": v})
    json.dump({"results": results}, sys.stdout)


if __name__ == "__main__":
    main()
