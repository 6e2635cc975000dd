"""Reference encodings from Hugging Face `tokenizers` for the C++ tokenizer tests.

Usage: hf_tokenizer_reference.py MODE REQUEST_JSON RESPONSE_JSON

The request names the files and strings to use; the response holds ids and decoded text:
  train_llama3  train a byte-level BPE with Llama 3's pre-tokenizer on request["corpus_path"],
                save it to request["pair_path"] (["a", "b"] merges) and request["string_path"]
                ("a b" merges), then encode request["strings"].
  train_llama2  same with a Llama 2 style pipeline (Prepend/Replace normalizer, byte_fallback,
                Replace/ByteFallback/Fuse/Strip decoder), saved to request["path"].
  encode        load request["path"] and encode request["strings"] and request["conversations"].
Every encode reports ids with special tokens parsed ("ids") and as plain text ("ids_plain"),
and the decoding of "ids" ("decoded").
"""
import json
import sys

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def encode_all(tokenizer, request):
    response = {"ids": [], "ids_plain": [], "decoded": []}
    for text in request.get("strings", []):
        tokenizer.encode_special_tokens = False
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        tokenizer.encode_special_tokens = True
        plain = tokenizer.encode(text, add_special_tokens=False).ids
        response["ids"].append(ids)
        response["ids_plain"].append(plain)
        response["decoded"].append(tokenizer.decode(ids, skip_special_tokens=False))
    tokenizer.encode_special_tokens = False
    # Chat templates rendered by hand from the published Jinja templates, then encoded whole.
    response["llama3_chat"] = []
    response["chatml_chat"] = []
    for conversation in request.get("conversations", []):
        llama3 = "<|begin_of_text|>"
        chatml = ""
        for message in conversation:
            llama3 += ("<|start_header_id|>" + message["role"] + "<|end_header_id|>\n\n" +
                       message["content"].strip() + "<|eot_id|>")
            chatml += "<|im_start|>" + message["role"] + "\n" + message["content"] + "<|im_end|>\n"
        llama3 += "<|start_header_id|>assistant<|end_header_id|>\n\n"
        chatml += "<|im_start|>assistant\n"
        response["llama3_chat"].append(tokenizer.encode(llama3, add_special_tokens=False).ids)
        response["chatml_chat"].append(tokenizer.encode(chatml, add_special_tokens=False).ids)
    return response


def train_llama3(request):
    tokenizer = Tokenizer(models.BPE(ignore_merges=True))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=request["vocab_size"],
                                  special_tokens=request["special_tokens"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tokenizer.train([request["corpus_path"]], trainer)
    tokenizer.save(request["pair_path"])
    # Whole-word tokens that the merges cannot build, as in Llama 3's vocabulary (converted from
    # tiktoken): only ignore_merges makes them come out whole.
    with open(request["pair_path"], encoding="utf-8") as f:
        data = json.load(f)
    for word in request.get("extra_vocab", []):
        data["model"]["vocab"][word] = len(data["model"]["vocab"])
    with open(request["pair_path"], "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    tokenizer = Tokenizer.from_file(request["pair_path"])
    tokenizer.add_tokens(request.get("added_tokens", []))
    tokenizer.save(request["pair_path"])
    with open(request["pair_path"], encoding="utf-8") as f:
        data = json.load(f)
    data["model"]["merges"] = [" ".join(pair) if isinstance(pair, list) else pair
                               for pair in data["model"]["merges"]]
    with open(request["string_path"], "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    return encode_all(Tokenizer.from_file(request["string_path"]), request)


def train_llama2(request):
    tokenizer = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>", fuse_unk=True))
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")])
    tokenizer.decoder = decoders.Sequence([
        decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
        decoders.Strip(content=" ", left=1, right=0)])
    byte_tokens = ["<0x%02X>" % b for b in range(256)]
    trainer = trainers.BpeTrainer(vocab_size=request["vocab_size"],
                                  special_tokens=["<unk>", "<s>", "</s>"] + byte_tokens,
                                  show_progress=False)
    tokenizer.train([request["corpus_path"]], trainer)
    tokenizer.save(request["path"])
    # Like Llama 2, only <unk>, <s> and </s> are added tokens; the byte tokens are plain vocab.
    with open(request["path"], encoding="utf-8") as f:
        data = json.load(f)
    data["added_tokens"] = [t for t in data["added_tokens"] if not t["content"].startswith("<0x")]
    with open(request["path"], "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False)
    return encode_all(Tokenizer.from_file(request["path"]), request)


def main():
    mode, request_path, response_path = sys.argv[1:4]
    with open(request_path, encoding="utf-8") as f:
        request = json.load(f)
    if mode == "train_llama3":
        response = train_llama3(request)
    elif mode == "train_llama2":
        response = train_llama2(request)
    elif mode == "encode":
        response = encode_all(Tokenizer.from_file(request["path"]), request)
    else:
        raise SystemExit("unknown mode " + mode)
    with open(response_path, "w", encoding="utf-8") as f:
        json.dump(response, f)


if __name__ == "__main__":
    main()
