#!/usr/bin/env python3
"""Independent float64 NumPy forward of a llama-architecture GGUF file.

The reference Arbor's GGUF loader is compared against. It shares no code with Arbor: it reads
the metadata and tensors with llama.cpp's own Python package `gguf` (gguf.GGUFReader), turns
every tensor into floats with gguf.quants.dequantize, and implements the Llama forward from the
published definition (RMSNorm, RoPE, grouped-query causal attention, SwiGLU MLP, tied or
separate output head) in NumPy float64. Needs only gguf and numpy; not torch, not llama.cpp.

Conventions, as llama.cpp itself runs a "llama" GGUF:
  * Tensors are used AS STORED. llama.cpp's converter permutes the rows of attn_q and attn_k of
    every head so that the two halves of a RoPE pair sit next to each other, and llama.cpp's
    "normal" RoPE mode for this architecture rotates adjacent dims: (2i, 2i+1) rotate together
    by the angle pos * theta^(-2i/d). This script applies exactly that interleaved RoPE to the
    stored rows and never un-permutes; Arbor un-permutes at load and uses Hugging Face's
    rotate-half RoPE, so agreement between the two checks the un-permute.
  * gguf-py reports a tensor's shape as ggml's ne (ne[0] is the row length, the fastest
    dimension); matrices are used here as NumPy [ne[1], ne[0]] = [out_features, in_features],
    i.e. y = x @ W.T as in a Hugging Face checkpoint.
  * Head: output.weight when present, else token_embd.weight (tied embeddings).
  * RoPE scaling: {arch}.rope.scaling.factor (or the older {arch}.rope.scale_linear) divides
    the positions (linear); rope_freqs.weight, when present (how the converter stores llama3
    scaling), divides each pair's frequency by its factor, as llama.cpp does. Any other
    scaling type (yarn, longrope, ...) is refused, as are partial rotary dims and MoE blocks.

Command line: one JSON request on stdin, one JSON answer on stdout.
  request:  {"gguf": "PATH", "sequences": [[token ids...] or {"tokens": [...], "layers": N}, ...],
             "logits": "all" | "last",
             "layers": N (optional: run only the first N blocks, then the final norm and head;
                          a sequence's own "layers" overrides it),
             "top_k": K (optional)}
  answer:   {"results": [{"logits": [[vocab floats] per position] (or one row when "last"),
                          "attention_scores": [[scores over keys 0..n-1] per query head],
                          "entropy_bits": float, "varentropy_bits2": float,
                          "top_k": [[id, logit], ...]  (only when "top_k" was asked)}, ...]}
  attention_scores are the last block run's scaled scores s = q.k / sqrt(head_dim) of the last
  query position, before the softmax; entropy and varentropy (docs/ARCHITECTURE.md §4.1) are of the last
  position's next-token distribution; top_k lists the last position's K largest logits, largest
  first (ties by lower id). All math in float64; floats are written at full precision.
Import it to call load_model() and forward() directly. Dequantized weights are cached on the
model, so every sequence of one request reuses them.
"""
import json
import math
import sys

import numpy as np
from gguf import GGMLQuantizationType, GGUFReader, GGUFValueType
from gguf.quants import dequantize


def _field_value(field):
    """A metadata field's value as plain Python (scalar, str, or list)."""
    if hasattr(field, "contents"):
        return field.contents()
    # Older gguf-py without ReaderField.contents().
    def one(idx, vtype):
        part = field.parts[idx]
        if vtype == GGUFValueType.STRING:
            return bytes(part).decode("utf-8")
        return part.tolist()[0]
    if field.types[0] == GGUFValueType.ARRAY:
        return [one(i, field.types[-1]) for i in field.data]
    return one(field.data[0], field.types[0])


class Model:
    def __init__(self, path, layers=None):
        self.path = path
        self.reader = GGUFReader(path)
        self.meta = {name: field for name, field in self.reader.fields.items()}
        self.tensors = {t.name: t for t in self.reader.tensors}
        self.arch = self.get("general.architecture")
        if self.arch != "llama":
            raise ValueError(f"unsupported architecture {self.arch!r} (only 'llama')")
        a = self.arch
        self.hidden = int(self.get(f"{a}.embedding_length"))
        self.n_layers = int(self.get(f"{a}.block_count"))
        self.heads = int(self.get(f"{a}.attention.head_count"))
        self.kv_heads = int(self.get(f"{a}.attention.head_count_kv", self.heads))
        self.head_dim = int(self.get(f"{a}.attention.key_length", self.hidden // self.heads))
        if int(self.get(f"{a}.attention.value_length", self.head_dim)) != self.head_dim:
            raise ValueError("key_length != value_length is not supported")
        if self.heads % self.kv_heads:
            raise ValueError(f"head_count {self.heads} not a multiple of head_count_kv {self.kv_heads}")
        if int(self.get(f"{a}.expert_count", 0)):
            raise ValueError("mixture-of-experts llama GGUFs are not supported")
        self.eps = float(self.get(f"{a}.attention.layer_norm_rms_epsilon", 1e-5))
        self.theta = float(self.get(f"{a}.rope.freq_base", 10000.0))
        n_rot = int(self.get(f"{a}.rope.dimension_count", self.head_dim))
        if n_rot != self.head_dim:
            raise ValueError(f"partial rotary (rope.dimension_count {n_rot} != head dim "
                             f"{self.head_dim}) is not supported")
        kind = self.get(f"{a}.rope.scaling.type", None)
        factor = float(self.get(f"{a}.rope.scaling.factor", 0.0) or 0.0)
        if factor == 0.0:
            factor = float(self.get(f"{a}.rope.scale_linear", 0.0) or 0.0)
        if kind not in (None, "none", "linear"):
            raise ValueError(f"RoPE scaling type {kind!r} is not supported (only linear, or "
                             f"llama3 through rope_freqs.weight)")
        if kind == "none" and factor not in (0.0, 1.0):
            raise ValueError(f"rope.scaling.type 'none' with factor {factor} is ambiguous")
        self.rope_linear = factor or 1.0
        self.layers = self.n_layers if layers is None else int(layers)
        if not 0 <= self.layers <= self.n_layers:
            raise ValueError(f"layers {self.layers} outside 0..{self.n_layers}")
        self._cache = {}
        self.embed = self.weight("token_embd.weight")
        self.vocab = self.embed.shape[0]
        self.head = self.weight("output.weight") if "output.weight" in self.tensors else self.embed
        self.inv_freq = self._inv_freq()

    def get(self, key, default=KeyError):
        if key not in self.meta:
            if default is KeyError:
                raise KeyError(f"GGUF metadata key {key!r} missing")
            return default
        return _field_value(self.meta[key])

    def has(self, name):
        return name in self.tensors

    def weight(self, name):
        """Dequantized float64 tensor, NumPy shape = reversed ne (so [out, in] for matrices)."""
        w = self._cache.get(name)
        if w is None:
            t = self.tensors[name]
            ne = [int(x) for x in t.shape]
            if t.tensor_type == GGMLQuantizationType.F64:  # gguf-py's dequantize refuses F64
                w = np.array(t.data, dtype=np.float64)
            else:
                w = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float64)
            w = w.reshape(tuple(reversed(ne)))
            self._cache[name] = w
        return w

    def _inv_freq(self):
        d = self.head_dim
        inv = self.theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
        inv = inv / self.rope_linear
        if self.has("rope_freqs.weight"):
            factors = self.weight("rope_freqs.weight").reshape(-1)
            if factors.shape[0] != d // 2:
                raise ValueError(f"rope_freqs.weight has {factors.shape[0]} entries, want {d // 2}")
            inv = inv / factors
        return inv

    def rms_norm(self, x, weight):
        return x / np.sqrt((x * x).mean(-1, keepdims=True) + self.eps) * weight

    def rope(self, x, positions):
        # x: [heads, n, d], interleaved layout (llama.cpp "normal" mode): pairs (2i, 2i+1).
        angles = positions[:, None].astype(np.float64) * self.inv_freq[None, :]  # [n, d/2]
        cos, sin = np.cos(angles), np.sin(angles)
        x0, x1 = x[..., 0::2], x[..., 1::2]
        out = np.empty_like(x)
        out[..., 0::2] = x0 * cos - x1 * sin
        out[..., 1::2] = x0 * sin + x1 * cos
        return out

    def linear(self, x, prefix):
        y = x @ self.weight(prefix + ".weight").T
        if self.has(prefix + ".bias"):
            y = y + self.weight(prefix + ".bias")
        return y

    def forward(self, tokens, last_only=False, layers=None):
        """Returns (logits [n, vocab] (or [1, vocab] with last_only), last block's scaled scores
        [heads, n] of the last query), running `layers` blocks (default: the model's)."""
        run = self.layers if layers is None else int(layers)
        if not 0 <= run <= self.n_layers:
            raise ValueError(f"layers {run} outside 0..{self.n_layers}")
        tokens = [int(t) for t in tokens]
        n = len(tokens)
        if n == 0:
            raise ValueError("empty sequence")
        if min(tokens) < 0 or max(tokens) >= self.vocab:
            raise ValueError(f"token id outside 0..{self.vocab - 1}")
        x = self.embed[np.asarray(tokens)]
        positions = np.arange(n)
        mask = np.triu(np.full((n, n), -np.inf), 1)
        group = self.heads // self.kv_heads
        hd = self.head_dim
        scores_last = None
        for layer in range(run):
            p = f"blk.{layer}."
            h = self.rms_norm(x, self.weight(p + "attn_norm.weight"))
            q = self.linear(h, p + "attn_q").reshape(n, self.heads, hd).transpose(1, 0, 2)
            k = self.linear(h, p + "attn_k").reshape(n, self.kv_heads, hd).transpose(1, 0, 2)
            v = self.linear(h, p + "attn_v").reshape(n, self.kv_heads, hd).transpose(1, 0, 2)
            q = self.rope(q, positions)
            k = np.repeat(self.rope(k, positions), group, axis=0)  # query head j uses kv j // group
            v = np.repeat(v, group, axis=0)
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(hd)  # [heads, n, n]
            if layer == run - 1:
                scores_last = scores[:, -1, :].copy()
            s = scores + mask
            s = np.exp(s - s.max(-1, keepdims=True))
            attn = (s / s.sum(-1, keepdims=True)) @ v  # [heads, n, d]
            attn = attn.transpose(1, 0, 2).reshape(n, self.heads * hd)
            x = x + self.linear(attn, p + "attn_output")
            h = self.rms_norm(x, self.weight(p + "ffn_norm.weight"))
            gate = self.linear(h, p + "ffn_gate")
            up = self.linear(h, p + "ffn_up")
            x = x + (gate / (1.0 + np.exp(-gate)) * up) @ self.weight(p + "ffn_down.weight").T
        if last_only:
            x = x[-1:]
        x = self.rms_norm(x, self.weight("output_norm.weight"))
        if scores_last is None:
            scores_last = np.zeros((self.heads, 0))
        return x @ self.head.T, scores_last


def load_model(path, layers=None):
    return Model(path, layers)


def forward(model, ids, last_only=False):
    """(logits [n, vocab], last block's scaled scores [heads, n] of the last query), float64.
    With last_only the head runs on the last position alone and logits is [1, vocab]."""
    return model.forward(ids, last_only)


def entropy_varentropy(logits):
    """Entropy (bits) and varentropy (bits^2) of softmax(logits), docs/ARCHITECTURE.md §4.1."""
    z = np.asarray(logits, dtype=np.float64)
    z = z - z.max()
    lp = (z - np.log(np.exp(z).sum())) / math.log(2)
    p = np.exp2(lp)
    h = float(-(p * lp).sum())
    v = float((p * (lp + h) ** 2).sum())
    return h, v


def top_k(logits, k):
    order = np.argsort(-logits, kind="stable")[:k]
    return [[int(i), float(logits[i])] for i in order]


def main():
    request = json.load(sys.stdin)
    model = load_model(request["gguf"], request.get("layers"))
    results = []
    for entry in request["sequences"]:
        tokens, layers = (entry["tokens"], entry.get("layers")) if isinstance(entry, dict) \
            else (entry, None)
        every = request.get("logits", "all") == "all"
        logits, scores = model.forward(tokens, last_only=not every, layers=layers)
        h, v = entropy_varentropy(logits[-1])
        rows = logits if every else logits[-1:]
        result = {"logits": rows.tolist(), "attention_scores": scores.tolist(),
                  "entropy_bits": h, "varentropy_bits2": v}
        if request.get("top_k") is not None:
            result["top_k"] = top_k(logits[-1], int(request["top_k"]))
        results.append(result)
    sys.stdout.write(json.dumps({"results": results}))  # one-shot C encoder: json.dump streams slowly


if __name__ == "__main__":
    main()
