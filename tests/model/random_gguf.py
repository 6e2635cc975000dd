#!/usr/bin/env python3
"""Small random-weight GGUF files, written with llama.cpp's own `gguf` package, for the oracle
tests against llama.cpp (tests/model/llama_cpp_random_golden.py writes llama.cpp's answers on
them to tests/model/data/random_llama_cpp.json; tests/worker/backend/random_gguf_llama_cpp_test.cc
loads the same files into Arbor and compares).

Deterministic: the same script, numpy and gguf versions give the same bytes (the golden file
records each file's sha256, and the C++ test refuses to compare against another file). Shares
no code with Arbor.

The files (MODELS below):
  qwen2-f32.gguf      qwen2: q/k/v biases, rope θ 1e6, tied embeddings; every matrix F32
  qwen2-q8_0.gguf     the same shape, other weights, separate output.weight; matrices Q8_0
  qwen2-mixed.gguf    the same again; the matrices cycle through Q4_0, Q4_1, Q5_0, Q5_1, F16
                      and BF16 (the types of llama.cpp's Q4_K_M fallbacks and of F16/BF16 files)
  llama-rope-freqs-f32.gguf
                      llama: q/k rows as llama.cpp's converter stores them (interleaved RoPE),
                      Llama 3.1-style scaling carried by rope_freqs.weight; F32
  llama-spm-f32.gguf  llama with a SentencePiece vocabulary, as Llama 2, Mistral and TinyLlama
                      GGUFs carry one; F32, tied
  qwen2-kquants.gguf  qwen2, 256 wide (K-quant rows are 256-weight super-blocks); the matrices
                      cycle through Q4_K, Q5_K and Q6_K (a Q4_K_M file's types), as random
                      blocks: gguf-py cannot quantize to them, but any block with finite scales is
                      a valid weight row, read the same way by llama.cpp and Arbor
  qwen3-f32.gguf      qwen3: no biases, per-head q/k RMSNorm weights (blk.N.attn_{q,k}_norm) with
                      a wide spread, heads of 24 (key_length) beside hidden 64 / 4 heads, rope
                      θ 1e6, tied embeddings; F32
  qwen3-q8_0.gguf     qwen3 with heads of 32, separate output.weight; matrices Q8_0
The others carry a byte-level BPE tokenizer (tokenizer.ggml.model gpt2): the 256 byte symbols, a
few merges chosen so that the pre-tokenizer decides the result (digits, punctuation before
letters, spaces before digits), and ChatML's three control tokens. The SentencePiece one
(tokenizer.ggml.model llama): <unk>, <s>, </s>, the 256 <0xXX> byte tokens, single characters
and longer pieces with distinct scores; characters it lacks are spelled in bytes.

Usage: random_gguf.py OUT_DIR   (prints "SHA256 PATH" for each file written, one a line)
"""
import hashlib
import math
import os
import sys

import numpy as np

# The shape of every file; a model may set its own "hidden", "head_dim" and "ffn".
LAYERS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN, CONTEXT = 2, 64, 4, 2, 16, 128, 512

# Merges in GPT-2's byte-level alphabet (Ġ is a space, Ċ a newline). "1 2" joins digits, which
# only a pre-tokenizer that keeps digit runs allows (llama-bpe: up to three, qwen2: none); "Ġ1 2"
# needs the space and digits in one piece (GPT-2); ", h" needs punctuation before letters in
# one piece (llama-bpe and qwen2).
MERGES = ["1 2", "12 3", "4 5", "Ġ t", "h e", "Ġt he", "i n", "Ġ a", "n d", "Ġa nd", ", h",
          ",h e", "' s", "o r", "Ġ w", "Ġw or", "l d", "Ġwor ld", "Ċ Ċ", "Ġ Ġ", "e r", "Ġ 1",
          "Ġ1 2", "H e", "He l", "Hel l", "Hell o"]
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
# The matrix types of a "mixed" file, one after another.
MIXED_TYPES = ["Q4_0", "Q4_1", "Q5_0", "Q5_1", "F16", "BF16"]

MODELS = [
    {"file": "qwen2-f32.gguf", "arch": "qwen2", "seed": 11, "type": "F32", "tied": True,
     "theta": 1e6, "pre": "qwen2"},
    {"file": "qwen2-q8_0.gguf", "arch": "qwen2", "seed": 12, "type": "Q8_0", "tied": False,
     "theta": 1e6, "pre": "qwen2"},
    {"file": "qwen2-mixed.gguf", "arch": "qwen2", "seed": 14, "type": "mixed", "tied": False,
     "theta": 1e6, "pre": "qwen2"},
    {"file": "llama-rope-freqs-f32.gguf", "arch": "llama", "seed": 13, "type": "F32",
     "tied": False, "theta": 5e5, "pre": "llama-bpe",
     "llama3_scaling": {"factor": 8.0, "low": 1.0, "high": 4.0, "original_context": 32}},
    {"file": "llama-spm-f32.gguf", "arch": "llama", "seed": 15, "type": "F32", "tied": True,
     "theta": 1e4, "pre": None},
    {"file": "qwen2-kquants.gguf", "arch": "qwen2", "seed": 16, "type": "kquants", "tied": False,
     "theta": 1e6, "pre": "qwen2", "hidden": 256, "head_dim": 64, "ffn": 512},
    {"file": "qwen3-f32.gguf", "arch": "qwen3", "seed": 17, "type": "F32", "tied": True,
     "theta": 1e6, "pre": "qwen2", "head_dim": 24},
    {"file": "qwen3-q8_0.gguf", "arch": "qwen3", "seed": 18, "type": "Q8_0", "tied": False,
     "theta": 1e6, "pre": "qwen2", "head_dim": 32},
]
# The matrix types of a "kquants" file, one after another.
KQUANT_TYPES = ["Q4_K", "Q5_K", "Q6_K"]

# The SentencePiece vocabulary's pieces after its single characters, best (highest score) first.
SPM_PIECES = ["▁t", "he", "▁the", "in", "▁a", "nd", "▁and", "or", "ld", "▁w", "▁wor", "▁world",
              "er", "▁h", "▁he", "ll", "llo", "▁hello", "12", "123", "He", "Hel", "Hell", "Hello",
              "▁1", "▁12", "▁▁", "'s", "it", "▁it"]
SPM_CHARS = "▁abcdefghijklmnopqrstuvwxyzH0123456789,.'!"


def byte_symbols():
    """GPT-2's byte → printable character map, in byte order."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
                 + list(range(ord("®"), ord("ÿ") + 1)))
    extra = 0
    out = []
    for b in range(256):
        if b in printable:
            out.append(chr(b))
        else:
            out.append(chr(256 + extra))
            extra += 1
    return out


def vocabulary():
    """tokens, scores (none), types of the byte-level BPE vocabulary."""
    import gguf
    tokens = byte_symbols()
    for merge in MERGES:
        left, right = merge.split(" ")
        assert left in tokens and right in tokens, merge
        tokens.append(left + right)
    types = [gguf.TokenType.NORMAL] * len(tokens) + [gguf.TokenType.CONTROL] * len(SPECIALS)
    return tokens + SPECIALS, None, types


def spm_vocabulary():
    """tokens, scores, types of the SentencePiece vocabulary, in Llama 2's layout."""
    import gguf
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)]
    types = ([gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
             + [gguf.TokenType.BYTE] * 256)
    scores = [0.0] * len(tokens)
    for i, piece in enumerate(SPM_PIECES + list(SPM_CHARS)):
        tokens.append(piece)
        types.append(gguf.TokenType.NORMAL)
        scores.append(-float(i))
    return tokens, scores, types


def random_kquant_rows(rng, rows, cols, kind, std):
    """`rows` rows of random `kind` super-blocks whose weights have about `std` spread, as bytes.

    Every field but the f16 scales is random bytes; the scales are set so that the weights are
    near zero-mean (Q4_K, Q5_K: dmin against the mean of scale x quant) with the asked spread."""
    import gguf
    qtype = getattr(gguf.GGMLQuantizationType, kind)
    block_bytes = gguf.GGML_QUANT_SIZES[qtype][1]
    blocks = rows * cols // 256
    raw = rng.integers(0, 256, size=(blocks, block_bytes), dtype=np.uint8)
    d = rng.uniform(0.75, 1.25, size=blocks)
    # Mean quant level times mean 6-bit scale over the mean 6-bit min: dmin for zero mean.
    dmin_ratio = {"Q4_K": 7.5, "Q5_K": 15.5, "Q6_K": None}[kind]

    def set_scales(factor):
        if kind == "Q6_K":  # d is the last field.
            raw[:, -2:] = (d * factor).astype(np.float16).view(np.uint8).reshape(blocks, 2)
        else:  # d, then dmin, first.
            raw[:, 0:2] = (d * factor).astype(np.float16).view(np.uint8).reshape(blocks, 2)
            raw[:, 2:4] = ((d * factor * dmin_ratio).astype(np.float16).view(np.uint8)
                           .reshape(blocks, 2))

    set_scales(1.0)
    spread = gguf.quants.dequantize(raw.reshape(rows, -1), qtype).std()
    set_scales(std / spread)
    return raw.reshape(rows, -1), qtype


def llama3_rope_factors(theta, scaling, head_dim):
    """rope_freqs.weight as llama.cpp's converter writes Llama 3.1's scaling: per frequency, the
    base frequency divided by the scaled one."""
    factors = []
    low_wavelen = scaling["original_context"] / scaling["low"]
    high_wavelen = scaling["original_context"] / scaling["high"]
    for i in range(0, head_dim, 2):
        freq = 1.0 / theta ** (i / head_dim)
        wavelen = 2 * math.pi / freq
        if wavelen < high_wavelen:
            factors.append(1.0)
        elif wavelen > low_wavelen:
            factors.append(scaling["factor"])
        else:
            smooth = ((scaling["original_context"] / wavelen - scaling["low"])
                      / (scaling["high"] - scaling["low"]))
            factors.append(1.0 / ((1 - smooth) / scaling["factor"] + smooth))
    return np.array(factors, dtype=np.float32)


def write(model, out_dir):
    # Imported here: the golden script reads MODELS from a virtualenv without gguf.
    import gguf
    rng = np.random.default_rng(model["seed"])
    spm = model["pre"] is None
    tokens, scores, types = spm_vocabulary() if spm else vocabulary()
    vocab = len(tokens)
    arch = model["arch"]
    hidden = model.get("hidden", HIDDEN)
    head_dim = model.get("head_dim", HEAD_DIM)
    ffn = model.get("ffn", FFN)
    path = os.path.join(out_dir, model["file"])
    w = gguf.GGUFWriter(path, arch)
    w.add_name("random-" + model["file"].removesuffix(".gguf"))
    w.add_block_count(LAYERS)
    w.add_context_length(CONTEXT)
    w.add_embedding_length(hidden)
    w.add_feed_forward_length(ffn)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(model["theta"])
    w.add_layer_norm_rms_eps(1e-6)
    w.add_vocab_size(vocab)
    w.add_rope_dimension_count(head_dim)
    if head_dim * HEADS != hidden:
        # The head size where it is not hidden / heads, as llama.cpp's converter writes Qwen3's.
        w.add_key_length(head_dim)
        w.add_value_length(head_dim)
    w.add_token_list(tokens)
    w.add_token_types(types)
    if spm:
        w.add_tokenizer_model("llama")
        w.add_token_scores(scores)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        w.add_unk_token_id(0)
        w.add_add_space_prefix(True)
    else:
        w.add_tokenizer_model("gpt2")
        w.add_tokenizer_pre(model["pre"])
        w.add_token_merges(MERGES)
        w.add_bos_token_id(tokens.index("<|endoftext|>"))
        w.add_eos_token_id(tokens.index("<|im_end|>"))
    w.add_add_bos_token(False)
    w.add_chat_template(
        "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
        "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}"
        "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

    matrices = []

    def matrix(name, rows, cols, scale):
        values = (rng.standard_normal((rows, cols)) * scale).astype(np.float32)
        kind = model["type"]
        if kind == "mixed":
            kind = MIXED_TYPES[len(matrices) % len(MIXED_TYPES)]
        elif kind == "kquants":
            kind = KQUANT_TYPES[len(matrices) % len(KQUANT_TYPES)]
        matrices.append(name)
        if kind in KQUANT_TYPES:
            blocks, qtype = random_kquant_rows(rng, rows, cols, kind, float(values.std()))
            w.add_tensor(name, blocks, raw_dtype=qtype)
            return
        if kind == "F32":
            w.add_tensor(name, values)
            return
        qtype = getattr(gguf.GGMLQuantizationType, kind)
        q = gguf.quants.quantize(values, qtype)
        # F16 comes back as float16 values, which the writer types itself; the rest as bytes.
        w.add_tensor(name, q, raw_dtype=None if kind == "F16" else qtype)

    def vector(name, size, mean, scale):
        w.add_tensor(name, (mean + rng.standard_normal(size) * scale).astype(np.float32))

    q_dim, kv_dim = HEADS * head_dim, KV_HEADS * head_dim
    matrix("token_embd.weight", vocab, hidden, 1.0)
    vector("output_norm.weight", hidden, 1.0, 0.1)
    if not model["tied"]:
        matrix("output.weight", vocab, hidden, 1.0 / math.sqrt(hidden))
    if "llama3_scaling" in model:
        w.add_tensor("rope_freqs.weight", llama3_rope_factors(model["theta"],
                                                              model["llama3_scaling"], head_dim))
    for layer in range(LAYERS):
        p = "blk.%d." % layer
        vector(p + "attn_norm.weight", hidden, 1.0, 0.1)
        vector(p + "ffn_norm.weight", hidden, 1.0, 0.1)
        # Larger q/k scales give peaked attention, which exercises the softmax.
        matrix(p + "attn_q.weight", q_dim, hidden, 2.0 / math.sqrt(hidden))
        matrix(p + "attn_k.weight", kv_dim, hidden, 2.0 / math.sqrt(hidden))
        matrix(p + "attn_v.weight", kv_dim, hidden, 1.0 / math.sqrt(hidden))
        if arch == "qwen2":
            vector(p + "attn_q.bias", q_dim, 0.0, 1.0)
            vector(p + "attn_k.bias", kv_dim, 0.0, 2.0)
            vector(p + "attn_v.bias", kv_dim, 0.0, 1.0)
        if arch == "qwen3":
            # Per-head norm weights spread wide, so that a forward without them is far off.
            vector(p + "attn_q_norm.weight", head_dim, 1.0, 0.5)
            vector(p + "attn_k_norm.weight", head_dim, 1.0, 0.5)
        matrix(p + "attn_output.weight", hidden, q_dim, 1.0 / math.sqrt(q_dim))
        matrix(p + "ffn_gate.weight", ffn, hidden, 1.0 / math.sqrt(hidden))
        matrix(p + "ffn_up.weight", ffn, hidden, 1.0 / math.sqrt(hidden))
        matrix(p + "ffn_down.weight", hidden, ffn, 1.0 / math.sqrt(ffn))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def main():
    if len(sys.argv) != 2:
        print("usage: random_gguf.py OUT_DIR", file=sys.stderr)
        return 2
    os.makedirs(sys.argv[1], exist_ok=True)
    for model in MODELS:
        path = write(model, sys.argv[1])
        with open(path, "rb") as f:
            print(hashlib.sha256(f.read()).hexdigest(), path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
