// The Tokenizer of a Hugging Face tokenizer directory (docs/tokenizer.md): the
// pipeline of `tokenizers` 0.19 from tokenizer.json, or built from vocab.txt
// (BERT WordPiece) or vocab.json + merges.txt (GPT-2 / RoBERTa byte-level BPE)
// as transformers' fast conversion builds it. Internal: reached through
// vkf::Tokenizer::load.
#pragma once

#include <nlohmann/json.hpp>

#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "text/hf/added_tokens.hpp"
#include "text/hf/pipeline.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::text::hf {

/// The stages of one tokenizer, and what tokenizer_config.json adds.
struct Parts {
  std::unique_ptr<Normalizer> normalizer;
  std::unique_ptr<PreTokenizer> pre_tokenizer;
  std::unique_ptr<Model> model;
  std::unique_ptr<PostProcessor> post_processor;
  std::unique_ptr<Decoder> decoder;
  std::vector<AddedToken> added_tokens;
  uint32_t model_max_length = 0;
  std::map<std::string, std::string> special_tokens;  ///< role ("cls_token") -> token
};

/// The stages of HF tokenizer.json `j` (already parsed; `file` names it in errors).
Parts parse_tokenizer_json(const nlohmann::json& j, const std::string& file);
/// The stages transformers would build for DIR/vocab.txt or DIR/vocab.json +
/// DIR/merges.txt; `config` is tokenizer_config.json (or an empty object).
Parts build_from_vocab_files(const std::string& dir, const nlohmann::json& config);
/// tokenizer_config.json's model_max_length and special tokens, into `parts`.
void apply_tokenizer_config(Parts& parts, const nlohmann::json& config, const std::string& file);

/// The tokenizer made of `parts`.
std::unique_ptr<Tokenizer> make_tokenizer(Parts parts);

/// True when the tokenizer.json object `j` is in HF's format (a "model" object or a "version").
bool is_hf_tokenizer_json(const nlohmann::json& j);

/// `text` parsed as JSON; "FILE: not valid JSON: ..." otherwise.
nlohmann::json parse_json(const std::string& file, std::string_view text);

/// The tokenizer of tokenizer.json text `text` in HF's format, on its own (no
/// tokenizer_config.json); `file` names it in errors. For the fuzzer and tests.
std::unique_ptr<Tokenizer> load_hf_tokenizer_json(const std::string& file, std::string_view text);

/// Loads a directory without the project's own tokenizer.json: DIR/tokenizer.json in
/// HF's format (`j`, or null when there is none), else vocab.txt or vocab.json + merges.txt.
std::unique_ptr<Tokenizer> load_hf_dir(const std::string& dir, const nlohmann::json* j);

}  // namespace vkf::text::hf
