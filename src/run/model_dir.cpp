// ModelDir: a model directory read and checked on the host, in the order
// ModelDir::open documents; and config.json's special ids against the tokenizer.
#include "vkformer/model_dir.hpp"

#include <filesystem>
#include <optional>

#include "model/family.hpp"
#include "model/gguf_model.hpp"
#include "model/json_text.hpp"
#include "model/tensor_files.hpp"

namespace vkf {

bool ModelDir::has_tokenizer(const std::string& dir) {
  if (is_gguf_file(dir)) return GgufFile(dir).has("tokenizer.ggml.tokens");
  std::error_code ec;
  for (const char* f : {"tokenizer.json", "vocab.txt", "vocab.json", "source.spm", "tokenizer_config.json"})
    if (std::filesystem::exists(std::filesystem::path(dir) / f, ec)) return true;
  return false;
}

ModelDir ModelDir::open(const std::string& dir, TokenizerUse tokenizer) {
  ModelDir d;
  d.path_ = dir;
  const bool gguf = is_gguf_file(dir);  // one file: metadata for config and tokenizer, no generation_config.json
  if (gguf) {
    d.config_ = gguf_model_config(GgufFile(dir));
  } else {
    weights_path(dir);  // not a directory, or pickles instead of safetensors: said first, whatever the config
    d.config_ = load_config((std::filesystem::path(dir) / "config.json").string());  // as Model::load names it
  }
  if (tokenizer == TokenizerUse::Required || (tokenizer == TokenizerUse::IfPresent && has_tokenizer(dir)))
    d.tokenizer_ = Tokenizer::load(dir);
  if (d.supports(Task::Generate) && !gguf) d.generation_ = read_generation_config(dir);
  if (d.tokenizer_) check_special_ids(d.config_, *d.tokenizer_, dir);
  return d;
}

bool ModelDir::supports(Task task) const { return family_of(config_).supports(task); }

std::string ModelDir::refusal(Task task) const { return family_of(config_).refusal(task); }

std::shared_ptr<Model> ModelDir::load(Context& ctx, Precision precision) const {
  return Model::load(ctx, path_, precision);
}

void check_special_ids(const ModelConfig& cfg, const Tokenizer& tok, const std::string& dir) {
  // The Hugging Face families' ids legitimately differ from the tokenizer's roles (model.hpp).
  if (cfg.model_type != "transformer") return;
  auto id_of = [&](const char* role) -> std::optional<int32_t> {
    const std::optional<std::string> token = tok.special_token(role);
    return token ? tok.token_to_id(*token) : std::nullopt;
  };
  auto refuse = [&](const char* key, int32_t id, const char* role, int32_t want, const char* why) {
    throw Error(dir + "/config.json: \"" + key + "\" " + std::to_string(id) + " is not the id of the tokenizer's " +
                role + " \"" + printable(*tok.special_token(role), 40) + "\" (" + std::to_string(want) +
                "): " + why);
  };
  const auto bos = id_of("bos_token"), eos = id_of("eos_token"), pad = id_of("pad_token");
  if (bos && *bos != cfg.bos_id)
    refuse("bos_id", cfg.bos_id, "bos_token", *bos, "decoding would start from another token");
  if (eos && *eos != cfg.eos_id)
    refuse("eos_id", cfg.eos_id, "eos_token", *eos, "generation would not stop where texts end");
  // Padding is masked by id: a pad_id that text can produce masks real tokens. The
  // tokenizer's BOS and EOS never come from text, so a pad_id equal to them is harmless.
  if (pad && *pad != cfg.pad_id && cfg.pad_id != bos.value_or(-1) && cfg.pad_id != eos.value_or(-1))
    refuse("pad_id", cfg.pad_id, "pad_token", *pad, "tokens of the text with that id would be masked as padding");
}

}  // namespace vkf
