#!/usr/bin/env python3
"""llama.cpp reference data for the random-weight GGUF files of random_gguf.py.

For each file (qwen2 with F32, Q8_0, mixed and K-quant matrices, llama with rope_freqs, llama with
a SentencePiece vocabulary, qwen3 with F32 and Q8_0 matrices): its sha256, llama.cpp's
token ids for a few texts (the pre-tokenizer decides them: see random_gguf.py's merges), the
last position's logits after fixed token-id prompts, and greedy continuations with the top two
logits of every step. Everything goes to tests/model/data/random_llama_cpp.json, which
tests/worker/backend/random_gguf_llama_cpp_test.cc reads; this script shares no code with Arbor.

llama.cpp runs with an F32 KV cache (its default F16 cache would round every key and value), no
flash attention, one thread; logits are read back with llama_get_logits_ith after each decode.

Usage:
  llama_cpp_random_golden.py --gguf-dir DIR [--out FILE]   DIR holds random_gguf.py's files
  llama_cpp_random_golden.py --gguf-dir DIR --check FILE   recompute and compare (exit 1 on a
                                                           difference)
Exit 77 (skip) when llama_cpp cannot be imported. scripts/llama-cpp-reference.sh --random
generates the files, builds the virtualenv this needs, and runs it.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from llama_cpp_golden import (LLAMA_CPP_COMMITS, SKIP, add_mode_arguments,  # noqa: E402
                              finish, llama_cpp_importable, quiet_logs, sha256)

TEXTS = ["123 12345 4512", "Hello, hello world and 12 the", "it's the world,her 1212",
         "  the\n\nand  123\n", "<|im_start|>user\nHi<|im_end|>", "naïve café 🙂 Ölçü",
         " leading and trailing  "]
# Token-id prompts of several lengths (ids below the byte symbols' 256, so any vocabulary has
# them), spelled out so the file needs no random generator to be read.
PROMPTS = [[72],
           [72, 101, 108, 108, 111, 44],
           [(7 * i + 3) % 256 for i in range(31)],
           [(13 * i + 5) % 256 for i in range(120)]]
GREEDY_PROMPTS = [PROMPTS[1], PROMPTS[3]]
GREEDY_TOKENS = 24
N_CTX = 512
N_THREADS = 1
GGML_TYPE_F32 = 0


def logits_after(llama_cpp, llm, ids):
    import numpy as np
    llm.reset()
    llm.eval(ids)
    row = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(row, shape=(llm.n_vocab(),)).astype(np.float32, copy=True)


def greedy(llama_cpp, llm, prompt):
    import numpy as np
    generated, top2 = [], []
    logits = logits_after(llama_cpp, llm, prompt)
    for _ in range(GREEDY_TOKENS):
        best = int(np.argmax(logits))  # first maximum: ties go to the lowest id
        masked = logits.copy()
        masked[best] = -np.inf
        second = int(np.argmax(masked))
        top2.append([[best, float(logits[best])], [second, float(logits[second])]])
        generated.append(best)
        llm.eval([best])
        row = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
        logits = np.ctypeslib.as_array(row, shape=(llm.n_vocab(),)).astype(np.float32, copy=True)
    return {"prompt_ids": prompt, "generated_ids": generated, "top2": top2}


def compute(gguf_dir):
    import llama_cpp
    from llama_cpp import Llama

    quiet_logs(llama_cpp)
    version = getattr(llama_cpp, "__version__", "unknown")
    data = {
        "what": "llama.cpp reference for random_gguf.py's files: token ids, last-position "
                "logits and greedy continuations; written by "
                "tests/model/llama_cpp_random_golden.py",
        "llama_cpp_python_version": version,
        "llama_cpp_commit": LLAMA_CPP_COMMITS.get(version, "unknown"),
        "settings": {"n_ctx": N_CTX, "n_threads": N_THREADS, "kv_cache": "f32",
                     "flash_attn": False, "tokenize": "add_bos=False, special=False",
                     "greedy_tokens": GREEDY_TOKENS},
        "models": [],
    }
    # Imported here, after llama_cpp_importable: random_gguf needs numpy, which a virtualenv
    # holding only llama.cpp's tools lacks (the test then skips instead of failing).
    from random_gguf import MODELS  # pylint: disable=import-outside-toplevel
    for model in MODELS:
        path = os.path.join(gguf_dir, model["file"])
        llm = Llama(model_path=path, n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=N_CTX,
                    n_threads=N_THREADS, n_threads_batch=N_THREADS, seed=0, logits_all=False,
                    flash_attn=False, type_k=GGML_TYPE_F32, type_v=GGML_TYPE_F32, verbose=False)
        entry = {"file": model["file"], "sha256": sha256(path), "arch": model["arch"],
                 "weights": model["type"], "n_vocab": llm.n_vocab()}
        entry["tokenize"] = [{"text": t, "ids": llm.tokenize(t.encode("utf-8"), add_bos=False,
                                                             special=False)} for t in TEXTS]
        entry["logits"] = [{"prompt_ids": p,
                            "last_logits": [float(x) for x in logits_after(llama_cpp, llm, p)]}
                           for p in PROMPTS]
        entry["greedy"] = [greedy(llama_cpp, llm, p) for p in GREEDY_PROMPTS]
        data["models"].append(entry)
        del llm
    # The kernels llama.cpp chose (check() compares only runs of the same features).
    data["system_info"] = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
    return data


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gguf-dir", required=True, help="where random_gguf.py wrote its files")
    add_mode_arguments(parser)
    args = parser.parse_args()
    if not llama_cpp_importable():
        return SKIP
    return finish(compute(args.gguf_dir), args, "llama_cpp_random_golden")


if __name__ == "__main__":
    sys.exit(main())
