#!/usr/bin/env python3
"""llama.cpp reference data for the SmolLM2-135M-Instruct Q4_1 GGUF (through llama-cpp-python).

llama.cpp is the independent ground truth for Arbor's GGUF path: its tokenizer (ids for every
line of tokenizer_corpus.txt, for multi-line chunks of it and for the whole file, with and
without special-token parsing, and whether detokenizing gives the text back) and its quantized
forward (greedy continuations of fixed chat and raw prompts, with the top two logits of every
step so that a near tie explains a divergence). Everything goes to one JSON file,
tests/model/data/smollm2_llama_cpp.json, that the C++ tests read; this script shares no code
with Arbor.

Greedy decoding reads the logits back after every llama_decode and takes the argmax itself
(ties to the lowest id), so no sampler, penalty or temperature of llama.cpp is involved.

Usage:
  llama_cpp_golden.py --gguf PATH [--out FILE]    write the reference data (default: stdout)
  llama_cpp_golden.py --gguf PATH --check FILE    recompute and compare with FILE: exit 0 when
                                                  everything matches, 1 with a summary of the
                                                  differences otherwise
Exit 77 (skip) when llama_cpp cannot be imported or the GGUF is missing.
scripts/llama-cpp-reference.sh builds the virtualenv this needs and runs it.
"""
import argparse
import ctypes
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "data", "tokenizer_corpus.txt")
SKIP = 77

# llama.cpp vendored by each llama-cpp-python release, as recorded in its CHANGELOG.md
# ("update llama.cpp to ggml-org/llama.cpp@0c1e57098") and in the sdist's git metadata
# (.git/modules/vendor/llama.cpp/HEAD). The sdist vendors a shallow clone, so llama.cpp's own
# build number (git rev-list --count, the "bNNNN" release tag) cannot be recovered from it.
LLAMA_CPP_COMMITS = {
    "0.3.36": "0c1e57098bba43ac29e6e3b677cdceebdd22334f",
}

# SmolLM2-Instruct's chat template (tokenizer.chat_template in the GGUF), rendered by hand.
DEFAULT_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"
CHAT_PROMPTS = [
    ("hello", [("user", "Hello")]),
    ("capital", [("user", "What is the capital of France?")]),
    ("sky_system", [("system", "You are a concise assistant. Answer in one sentence."),
                    ("user", "Why is the sky blue?")]),
    ("haiku", [("user", "Write a haiku about autumn leaves.")]),
    ("multi_turn", [("user", "My name is Ada."),
                    ("assistant", "Nice to meet you, Ada! How can I help you today?"),
                    ("user", "What is my name?")]),
    ("python", [("user", "Write a Python function that returns the square of a number.")]),
]
RAW_PROMPTS = [
    ("raw_story", "Once upon a time, in a small village by the sea,"),
    ("raw_list", "The three primary colors are"),
]
GREEDY_TOKENS = 48
NEAR_TIE = 0.1
N_CTX = 2048
# One thread: the results are the same as with 2 (checked), and a loaded machine does not
# stall ggml's spinning thread barrier.
N_THREADS = 1
LOGIT_TOLERANCE = 1e-3  # --check: logits may differ in the last bits across CPU kernels


def render_chat(messages):
    text = ""
    if messages[0][0] != "system":
        text += "<|im_start|>system\n" + DEFAULT_SYSTEM + "<|im_end|>\n"
    for role, content in messages:
        text += "<|im_start|>" + role + "\n" + content + "<|im_end|>\n"
    return text + "<|im_start|>assistant\n"


def split_lines(text):
    """Lines split at "\\n" only, each keeping its terminator ("\\r\\n" stays whole)."""
    lines = text.split("\n")
    out = [line + "\n" for line in lines[:-1]]
    if lines[-1]:
        out.append(lines[-1])
    return out


def split_chunks(text):
    """Multi-line paragraphs: runs of lines between blank lines, with their newlines."""
    chunks, current = [], []
    for line in split_lines(text):
        if line == "\n":
            if len(current) > 1:
                chunks.append("".join(current))
            current = []
        else:
            current.append(line)
    if len(current) > 1:
        chunks.append("".join(current))
    return chunks


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def detokenize(llama_cpp, vocab, ids, unparse_special):
    """llama.cpp's own llama_detokenize (no BOS/EOS removal), grown until it fits."""
    arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
    size = 64 + 16 * len(ids)
    while True:
        buf = ctypes.create_string_buffer(size)
        n = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, size, False, unparse_special)
        if n >= 0:
            return buf.raw[:n]
        size = -n + 1


def tokenize_cases(llama_cpp, llm, corpus_text):
    cases = [("line", i + 1, t) for i, t in enumerate(split_lines(corpus_text))]
    cases += [("chunk", None, t) for t in split_chunks(corpus_text)]
    cases.append(("file", None, corpus_text))
    vocab = llm._model.vocab
    out = []
    for kind, line_no, text in cases:
        raw = text.encode("utf-8")
        plain = llm.tokenize(raw, add_bos=False, special=False)
        special = llm.tokenize(raw, add_bos=False, special=True)
        decoded = detokenize(llama_cpp, vocab, plain, False)
        decoded_special = detokenize(llama_cpp, vocab, special, True)
        case = {"kind": kind}
        if line_no is not None:
            case["line"] = line_no
        case.update({
            "text": text,
            "ids_plain": plain,
            "ids_special": special,
            "decoded": decoded.decode("utf-8", errors="replace"),
            "roundtrip": decoded == raw,
            "roundtrip_special": decoded_special == raw,
        })
        out.append(case)
    return out


def check_chat_template(llm):
    """Renders CHAT_PROMPTS with the GGUF's own jinja template; True when it matches ours."""
    template = llm.metadata.get("tokenizer.chat_template")
    if not template:
        return None
    import jinja2
    env = jinja2.Environment(loader=jinja2.BaseLoader())
    tmpl = env.from_string(template)
    for _, messages in CHAT_PROMPTS:
        msgs = [{"role": r, "content": c} for r, c in messages]
        if tmpl.render(messages=msgs, add_generation_prompt=True) != render_chat(messages):
            return False
    return True


def greedy(llama_cpp, llm, prompt_ids):
    import numpy as np
    vocab_n = llm.n_vocab()
    vocab = llm._model.vocab
    ctx = llm._ctx.ctx
    llm.reset()
    llm.eval(prompt_ids)
    generated, top2, stop = [], [], "length"
    for _ in range(GREEDY_TOKENS):
        logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, -1), shape=(vocab_n,))
        logits = logits.astype(np.float32, copy=True)
        best = int(np.argmax(logits))  # first maximum: ties go to the lowest id
        masked = logits.copy()
        masked[best] = -np.inf
        second = int(np.argmax(masked))
        top2.append([[best, float(logits[best])], [second, float(logits[second])]])
        generated.append(best)
        if best == 2 or llama_cpp.llama_vocab_is_eog(vocab, best):
            stop = "eos"
            break
        llm.eval([best])
    text = detokenize(llama_cpp, vocab, generated, False).decode("utf-8", errors="replace")
    near = [i for i, ((_, a), (_, b)) in enumerate(top2) if a - b < NEAR_TIE]
    return {"generated_ids": generated, "stop": stop, "text": text, "top2": top2,
            "near_ties": near}


_log_state = {"last": 0}


def quiet_logs(llama_cpp):
    """Passes only llama.cpp's errors to stderr. (llama-cpp-python's own callback maps ggml's
    log levels from an older enum and lets warnings through as errors.)"""
    @llama_cpp.llama_log_callback
    def callback(level, text, user_data):
        if level == 5:  # GGML_LOG_LEVEL_CONT: same level as the line it continues
            level = _log_state["last"]
        _log_state["last"] = level
        if level >= 4:  # GGML_LOG_LEVEL_ERROR
            sys.stderr.write(text.decode("utf-8", errors="replace"))
    _log_state["callback"] = callback  # keep the ctypes callback alive
    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))


def compute(gguf):
    import llama_cpp
    from llama_cpp import Llama

    quiet_logs(llama_cpp)

    with open(CORPUS, "rb") as f:
        corpus_text = f.read().decode("utf-8")
    version = getattr(llama_cpp, "__version__", "unknown")
    data = {
        "what": "llama.cpp reference for SmolLM2-135M-Instruct Q4_1: tokenizer ids and greedy "
                "continuations; written by tests/model/llama_cpp_golden.py",
        "llama_cpp_python_version": version,
        "llama_cpp_commit": LLAMA_CPP_COMMITS.get(version, "unknown"),
        "llama_cpp_commit_source": "llama-cpp-python CHANGELOG.md and the sdist's "
                                   ".git/modules/vendor/llama.cpp/HEAD; no build number "
                                   "(shallow vendored clone)",
        "gguf": os.path.basename(gguf),
        "gguf_sha256": sha256(gguf),
        "corpus": "tests/model/data/tokenizer_corpus.txt",
        "corpus_sha256": sha256(CORPUS),
    }

    tok = Llama(model_path=gguf, vocab_only=True, verbose=False)
    data["tokenize"] = tokenize_cases(llama_cpp, tok, corpus_text)
    del tok

    llm = Llama(model_path=gguf, n_ctx=N_CTX, n_batch=512, n_ubatch=512, n_threads=N_THREADS,
                n_threads_batch=N_THREADS, seed=0, logits_all=False, flash_attn=False,
                verbose=False)
    data["greedy_settings"] = {
        "n_ctx": N_CTX, "n_batch": 512, "n_ubatch": 512, "n_threads": N_THREADS,
        "flash_attn": False, "kv_cache": "f16", "max_new_tokens": GREEDY_TOKENS,
        "selection": "argmax of llama_get_logits_ith(ctx, -1) after each llama_decode; "
                     "ties to the lowest id; stops after an end-of-generation token (id 2 "
                     "<|im_end|>, or any llama_vocab_is_eog id), which is included",
        "tokenize": "prompt_text tokenized with add_bos=False, special=True",
        "near_tie": NEAR_TIE,
    }
    data["chat_template_matches_gguf"] = check_chat_template(llm)
    prompts = [(name, "chat", render_chat(msgs), msgs) for name, msgs in CHAT_PROMPTS]
    prompts += [(name, "raw", text, None) for name, text in RAW_PROMPTS]
    data["greedy"] = []
    for name, kind, text, msgs in prompts:
        ids = llm.tokenize(text.encode("utf-8"), add_bos=False, special=True)
        case = {"name": name, "kind": kind}
        if msgs is not None:
            case["messages"] = [{"role": r, "content": c} for r, c in msgs]
        case.update({"prompt_text": text, "prompt_ids": ids})
        case.update(greedy(llama_cpp, llm, ids))
        data["greedy"].append(case)
    data["system_info"] = llama_cpp.llama_print_system_info().decode("utf-8", "replace").strip()
    return data


# Written one case to a line so that a diff of the file reads well.
def dump(data):
    parts = []
    for key, value in data.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            rows = ",\n".join("  " + json.dumps(v, ensure_ascii=False) for v in value)
            parts.append(" %s: [\n%s\n ]" % (json.dumps(key), rows))
        else:
            parts.append(" %s: %s" % (json.dumps(key), json.dumps(value, ensure_ascii=False)))
    return "{\n" + ",\n".join(parts) + "\n}\n"


# Not compared by --check: they describe the machine, not llama.cpp's answers.
UNCHECKED = {"system_info"}


def compare(want, got, path="", diffs=None):
    if diffs is None:
        diffs = []
    if path.lstrip("/") in UNCHECKED:
        return diffs
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if key not in got:
                diffs.append("%s/%s: missing from the recomputed data" % (path, key))
            elif key not in want:
                diffs.append("%s/%s: not in the committed file" % (path, key))
            else:
                compare(want[key], got[key], "%s/%s" % (path, key), diffs)
    elif isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            diffs.append("%s: length %d in the file, %d now; file %s, now %s"
                         % (path, len(want), len(got), short(want), short(got)))
        else:
            for i, (w, g) in enumerate(zip(want, got)):
                compare(w, g, "%s[%d]" % (path, i), diffs)
    elif isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        if abs(want - got) > LOGIT_TOLERANCE:
            diffs.append("%s: %r in the file, %r now" % (path, want, got))
    elif want != got or type(want) is not type(got):
        diffs.append("%s: %s in the file, %s now" % (path, short(want), short(got)))
    return diffs


def check(data, path, label):
    """Compares freshly computed `data` with the committed file at `path`: 0 when they agree, 1
    (with the differences on stderr) when not, SKIP when llama.cpp here was built with other CPU
    features than the file's."""
    with open(path, encoding="utf-8") as f:
        want = json.load(f)
    got = json.loads(dump(data))  # the same float and string round trip as the file
    if want.get("system_info") != got.get("system_info"):
        # llama.cpp picks its kernels by CPU feature (AVX2, AVX-512, AMX, repacking), and their
        # activation rounding moves quantized logits by tenths: only the same build reproduces
        # the file.
        print("SKIP: the committed data came from a llama.cpp built with other CPU features "
              "(%s; here %s); regenerate it with --out to compare on this machine"
              % (want.get("system_info"), got.get("system_info")), file=sys.stderr)
        return SKIP
    diffs = compare(want, got)
    if not diffs:
        return 0
    print("%s: %d difference(s) from %s:" % (label, len(diffs), path), file=sys.stderr)
    for line in diffs[:40]:
        print("  " + line, file=sys.stderr)
    if len(diffs) > 40:
        print("  ... and %d more" % (len(diffs) - 40), file=sys.stderr)
    return 1


def add_mode_arguments(parser):
    """--out FILE or --check FILE, as both golden scripts take them."""
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--out", help="write the reference JSON here (default: stdout)")
    mode.add_argument("--check", metavar="FILE", help="compare with this reference JSON")


def llama_cpp_importable():
    """True when llama_cpp and numpy import; else says why the script skips."""
    try:
        import llama_cpp  # noqa: F401
        import numpy  # noqa: F401
    except ImportError as e:
        print("SKIP: cannot import llama_cpp/numpy (%s); run scripts/llama-cpp-reference.sh"
              % e, file=sys.stderr)
        return False
    return True


def finish(data, args, label):
    """--check: compare `data` with the file (check()); else write it to --out or stdout."""
    if args.check:
        return check(data, args.check, label)
    text = dump(data)
    if args.out:
        tmp = args.out + ".tmp"
        with open(tmp, "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
        os.replace(tmp, args.out)
    else:
        sys.stdout.write(text)
    return 0


def short(value, limit=160):
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gguf", required=True, help="SmolLM2-135M-Instruct.Q4_1.gguf")
    add_mode_arguments(parser)
    args = parser.parse_args()

    if not os.path.isfile(args.gguf):
        print("SKIP: no GGUF at %s" % args.gguf, file=sys.stderr)
        return SKIP
    if not llama_cpp_importable():
        return SKIP
    return finish(compute(args.gguf), args, "llama_cpp_golden")


if __name__ == "__main__":
    sys.exit(main())
