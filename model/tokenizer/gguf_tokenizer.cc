#include "model/tokenizer/gguf_tokenizer.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "model/tokenizer/sentencepiece_gguf.h"
#include "nlohmann/json.hpp"

namespace arbor::model {
namespace {

using nlohmann::json;

// GPT-2's word pattern as llama.cpp writes it (HF's ByteLevel regex without its final `\s+`,
// which only matters for text the other branches leave over: both keep it as a piece).
constexpr char kGpt2Pattern[] =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
constexpr char kLlama3Pattern[] =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
// Qwen2's: Llama 3's with every digit apart.
constexpr char kQwen2Pattern[] =
    R"((?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// GGUF token types (llama.cpp's llama_token_type).
constexpr int64_t kUnknown = 2;
constexpr int64_t kControl = 3;
constexpr int64_t kUserDefined = 4;

json Split(const std::string& pattern) {
  return {{"type", "Split"},
          {"pattern", {{"Regex", pattern}}},
          {"behavior", "Isolated"},
          {"invert", false}};
}

// llama.cpp cuts text with each regex of its list in turn, keeping matches and gaps alike:
// a Sequence of isolating Splits, then the byte-level alphabet.
absl::StatusOr<json> PreTokenizerFor(const std::string& pre, const std::string& file) {
  std::vector<std::string> patterns;
  if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3") {
    patterns = {kLlama3Pattern};
  } else if (pre == "qwen2") {
    patterns = {kQwen2Pattern};
  } else if (pre == "smollm" || pre == "starcoder" || pre == "refact" || pre == "command-r" ||
             pre == "codeshell" || pre == "exaone" || pre == "minerva-7b") {
    patterns = {R"(\p{N})", kGpt2Pattern};
  } else if (pre == "gpt-2" || pre == "gpt2" || pre == "mpt" || pre == "olmo" || pre == "jais") {
    patterns = {kGpt2Pattern};
  } else if (pre == "default") {
    patterns = {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2Pattern, R"(\p{N}+)", "[0-9][0-9][0-9]"};
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(file, ": GGUF tokenizer.ggml.pre = '", pre,
                     "' is a pre-tokenizer Arbor does not know (it knows default, gpt2, llama-bpe, "
                     "qwen2, smollm and their aliases); load the model's Hugging Face directory "
                     "with its tokenizer.json instead"));
  }
  json stages = json::array();
  for (const std::string& pattern : patterns) stages.push_back(Split(pattern));
  stages.push_back({{"type", "ByteLevel"},
                    {"add_prefix_space", false},
                    {"trim_offsets", false},
                    {"use_regex", false}});
  return json{{"type", "Sequence"}, {"pretokenizers", std::move(stages)}};
}

absl::StatusOr<json> TokenizerJson(const GgufFile& file) {
  ASSIGN_OR_RETURN(const std::string model, file.GetString("tokenizer.ggml.model"));
  if (model != "gpt2" && model != "llama") {
    return absl::InvalidArgumentError(absl::StrCat(
        file.path(), ": GGUF tokenizer.ggml.model = '", model,
        "' is not supported (Arbor reads byte-level BPE, 'gpt2', and SentencePiece, 'llama', from "
        "GGUF); load the model's Hugging Face directory with its tokenizer.json instead"));
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> tokens, file.GetStrings("tokenizer.ggml.tokens"));
  std::vector<int64_t> types(tokens.size(), 1);
  if (file.Find("tokenizer.ggml.token_type") != nullptr) {
    ASSIGN_OR_RETURN(types, file.GetInts("tokenizer.ggml.token_type"));
    if (types.size() != tokens.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat(file.path(), ": GGUF tokenizer.ggml.token_type has ", types.size(),
                       " entries for ", tokens.size(), " tokens"));
    }
  }
  json root;
  if (model == "llama") {
    ASSIGN_OR_RETURN(root, SentencePieceTokenizerJson(file, tokens, types));
  } else {
    ASSIGN_OR_RETURN(const std::vector<std::string> merges,
                     file.GetStrings("tokenizer.ggml.merges"));
    const std::string pre = file.GetString("tokenizer.ggml.pre").value_or("default");
    ASSIGN_OR_RETURN(root["pre_tokenizer"], PreTokenizerFor(pre, file.path()));
    json vocab = json::object();
    for (size_t id = 0; id < tokens.size(); ++id) {
      // A repeated string keeps its first id; the later ones stay decodable as added tokens.
      if (!vocab.contains(tokens[id])) vocab[tokens[id]] = id;
    }
    root["model"] = {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", merges}};
    root["decoder"] = {{"type", "ByteLevel"}};
  }
  json added = json::array();
  for (size_t id = 0; id < tokens.size(); ++id) {
    // SentencePiece's <unk> is typed unknown, and is as special as <s> and </s>.
    const bool special = types[id] == kControl || types[id] == kUnknown;
    if (special || types[id] == kUserDefined) {
      added.push_back({{"id", id}, {"content", tokens[id]}, {"special", special}});
    }
  }
  root["added_tokens"] = std::move(added);
  const absl::StatusOr<int64_t> bos = file.GetInt("tokenizer.ggml.bos_token_id");
  if (file.GetBool("tokenizer.ggml.add_bos_token").value_or(false) && bos.ok() && *bos >= 0 &&
      *bos < static_cast<int64_t>(tokens.size())) {
    root["post_processor"] = {
        {"type", "TemplateProcessing"},
        {"single", json::array({{{"SpecialToken", {{"id", tokens[*bos]}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})}};
  }
  return root;
}

bool IsDirectory(const std::string& path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

absl::StatusOr<ChatTemplate> ChatTemplateFromDirectory(const std::string& dir) {
  const std::string path = dir + "/tokenizer_config.json";
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, " is missing"));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<ChatTemplate> chat_template = DetectChatTemplate(text.str());
  if (!chat_template.ok()) {
    return absl::Status(chat_template.status().code(),
                        absl::StrCat(path, ": ", chat_template.status().message()));
  }
  return chat_template;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromGguf(const GgufFile& file) {
  ASSIGN_OR_RETURN(const json root, TokenizerJson(file));
  absl::StatusOr<std::unique_ptr<Tokenizer>> tokenizer = Tokenizer::FromJson(root.dump());
  if (!tokenizer.ok()) {
    return absl::Status(
        tokenizer.status().code(),
        absl::StrCat(file.path(), ": GGUF tokenizer: ", tokenizer.status().message()));
  }
  return tokenizer;
}

absl::StatusOr<ChatTemplate> ChatTemplateFromGguf(const GgufFile& file) {
  ASSIGN_OR_RETURN(const std::string text, file.GetString("tokenizer.chat_template"));
  absl::StatusOr<ChatTemplate> chat_template = DetectChatTemplateText(text);
  if (!chat_template.ok()) {
    return absl::Status(chat_template.status().code(),
                        absl::StrCat(file.path(), ": GGUF tokenizer.chat_template: ",
                                     chat_template.status().message()));
  }
  return chat_template;
}

absl::StatusOr<ModelTokenizer> LoadModelTokenizer(const std::string& path,
                                                  absl::string_view chat_template_name) {
  ModelTokenizer loaded;
  if (IsDirectory(path)) {
    ASSIGN_OR_RETURN(loaded.tokenizer, Tokenizer::FromFile(path + "/tokenizer.json"));
    loaded.chat_template = ChatTemplateFromDirectory(path);
  } else {
    ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, GgufFile::Open(path));
    ASSIGN_OR_RETURN(loaded.tokenizer, TokenizerFromGguf(*file));
    loaded.chat_template = ChatTemplateFromGguf(*file);
  }
  if (!chat_template_name.empty()) {
    ASSIGN_OR_RETURN(const ChatFormat format, ParseChatTemplateName(chat_template_name));
    loaded.chat_template =
        ChatTemplate(format, loaded.chat_template.ok() ? loaded.chat_template->default_system : "");
  }
  return loaded;
}

}  // namespace arbor::model
