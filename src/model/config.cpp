// config.json: every key is required except tgt_vocab_size for models without
// a decoder, so a typo or an exporter bug is an error naming the key, not a
// silent default. Unknown keys are ignored (exporters add their own).
// "model_type" picks the family (src/families), which reads the rest.
#include <filesystem>
#include <optional>
#include <tuple>
#include <fstream>
#include <sstream>

#include "model/family.hpp"
#include "io/read_file.hpp"
#include "model/config.hpp"
#include "model/config_reader.hpp"
#include "model/json_text.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf {

const std::vector<std::string>& known_model_types() {
  static const std::vector<std::string> kTypes = [] {
    std::vector<std::string> v;
    for (const Family* f : families()) {
      v.push_back(f->name());
      for (const std::string& a : f->aliases()) v.push_back(a);
    }
    return v;
  }();
  return kTypes;
}

ModelConfig load_config(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(path + ": is a directory, expected the model config");
  return parse_config(path, io::read_file(path, "the model config"));
}

void check_special_ids(const ModelConfig& cfg, const Tokenizer& tok, const std::string& dir) {
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

ModelConfig parse_config(const std::string& path, const std::string& text) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
    throw Error(path + ": not valid JSON: " + json_error_text(e));
  }
  if (!j.is_object()) throw Error(path + ": must hold a JSON object, got " + std::string(j.type_name()));

  ConfigReader r(path, j);
  ModelConfig c;
  c.model_type = r.string("model_type");
  const Family* family = find_family(c.model_type);
  if (!family) r.fail(unknown_model_type(c.model_type));
  family->read_config(r, c);
  return c;
}

}  // namespace vkf
