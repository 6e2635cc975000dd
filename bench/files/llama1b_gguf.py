#!/usr/bin/env python3
"""A random-weight F16 GGUF with the shape of Llama-3.2-1B-Instruct, for the speed races in
docs/PERFORMANCE.md (bench/files/llama1b-files.sh quantizes it to Q4_K_M and Q8_0 with
llama.cpp's own llama-quantize).

Every tensor llama.cpp's converter writes for that model, with the same names, shapes and
metadata: 16 layers, hidden 2048, 32 query and 8 key/value heads of 64, FFN 8192, RoPE θ 500,000
with Llama 3.1's per-frequency factors in rope_freqs.weight, tied embeddings, a byte-level BPE
vocabulary of 128,256 tokens whose last 256 are control tokens (<|begin_of_text|> is 128000,
<|eot_id|> 128009). The weights are Gaussian, scaled by 1/sqrt(fan-in), which is all a speed
race needs: a matrix costs the same to read and multiply whatever its values. The vocabulary is
synthetic (the 256 byte symbols, every pair of them, then byte triples, each with its merge), so
the files tokenize text without the real model's files, which are not redistributable here.

Deterministic for one numpy and gguf version. Written with llama.cpp's `gguf` package (the
project's .venv has it); shares no code with Arbor (the byte alphabet and RoPE factors are
tests/model/random_gguf.py's).

Usage: llama1b_gguf.py OUT.gguf
"""
import math
import os
import sys

import numpy as np

# The byte-level alphabet and Llama 3.1's RoPE factors, as the random GGUF files of the oracle
# tests write them.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests",
                                "model"))
from random_gguf import byte_symbols, llama3_rope_factors  # noqa: E402

LAYERS, HIDDEN, HEADS, KV_HEADS, HEAD_DIM, FFN = 16, 2048, 32, 8, 64, 8192
VOCAB, CONTROL_TOKENS, CONTEXT, THETA = 128256, 256, 131072, 500000.0
# Llama 3.2's rope_scaling block in config.json.
SCALING = {"factor": 32.0, "low": 1.0, "high": 4.0, "original_context": 8192}
NAMED_CONTROL = {0: "<|begin_of_text|>", 1: "<|end_of_text|>", 6: "<|start_header_id|>",
                 7: "<|end_header_id|>", 9: "<|eot_id|>"}
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
    "'<|end_header_id|>\\n\\n' + message['content'] + '<|eot_id|>' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% endif %}")


def vocabulary():
    """tokens, merges and token types: bytes, pairs of bytes, triples, then control tokens."""
    import gguf
    symbols = byte_symbols()
    tokens = list(symbols)
    merges = []
    for a in symbols:
        for b in symbols:
            tokens.append(a + b)
            merges.append(a + " " + b)
    pairs = iter(tokens[256:])
    while len(tokens) < VOCAB - CONTROL_TOKENS:
        pair = next(pairs)
        for c in symbols:
            if len(tokens) == VOCAB - CONTROL_TOKENS:
                break
            tokens.append(pair + c)
            merges.append(pair + " " + c)
    for i in range(CONTROL_TOKENS):
        tokens.append(NAMED_CONTROL.get(i, "<|reserved_special_token_%d|>" % i))
    types = ([gguf.TokenType.NORMAL] * (VOCAB - CONTROL_TOKENS)
             + [gguf.TokenType.CONTROL] * CONTROL_TOKENS)
    return tokens, merges, types


def write(path):
    import gguf
    rng = np.random.default_rng(1)
    tokens, merges, types = vocabulary()
    w = gguf.GGUFWriter(path, "llama")
    w.add_name("random-llama-3.2-1b-shape")
    w.add_block_count(LAYERS)
    w.add_context_length(CONTEXT)
    w.add_embedding_length(HIDDEN)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV_HEADS)
    w.add_rope_freq_base(THETA)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(VOCAB)
    w.add_rope_dimension_count(HEAD_DIM)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("llama-bpe")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(VOCAB - CONTROL_TOKENS)
    w.add_eos_token_id(VOCAB - CONTROL_TOKENS + 9)
    w.add_add_bos_token(True)
    w.add_chat_template(CHAT_TEMPLATE)

    def matrix(name, rows, cols):
        values = rng.standard_normal((rows, cols), dtype=np.float32) / math.sqrt(cols)
        w.add_tensor(name, values.astype(np.float16))

    def norm(name):
        w.add_tensor(name, (1.0 + 0.1 * rng.standard_normal(HIDDEN, dtype=np.float32)))

    matrix("token_embd.weight", VOCAB, HIDDEN)
    norm("output_norm.weight")
    w.add_tensor("rope_freqs.weight", llama3_rope_factors(THETA, SCALING, HEAD_DIM))
    for layer in range(LAYERS):
        p = "blk.%d." % layer
        norm(p + "attn_norm.weight")
        norm(p + "ffn_norm.weight")
        matrix(p + "attn_q.weight", HEADS * HEAD_DIM, HIDDEN)
        matrix(p + "attn_k.weight", KV_HEADS * HEAD_DIM, HIDDEN)
        matrix(p + "attn_v.weight", KV_HEADS * HEAD_DIM, HIDDEN)
        matrix(p + "attn_output.weight", HIDDEN, HEADS * HEAD_DIM)
        matrix(p + "ffn_gate.weight", FFN, HIDDEN)
        matrix(p + "ffn_up.weight", FFN, HIDDEN)
        matrix(p + "ffn_down.weight", HIDDEN, FFN)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main():
    if len(sys.argv) != 2:
        print("usage: llama1b_gguf.py OUT.gguf", file=sys.stderr)
        return 2
    write(sys.argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
