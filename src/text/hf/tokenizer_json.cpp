// HF's tokenizer.json (tokenizer/serialization.rs) and tokenizer_config.json.
#include <fstream>
#include <iterator>

#include "io/read_file.hpp"
#include "model/json_parse.hpp"
#include "model/json_text.hpp"
#include "text/hf/hf_tokenizer.hpp"
#include "text/hf/unicode.hpp"
#include "vkformer/error.hpp"

namespace vkf::text::hf {

bool is_hf_tokenizer_json(const nlohmann::json& j) {
  return j.is_object() && ((j.contains("model") && j["model"].is_object()) || j.contains("version"));
}

Parts parse_tokenizer_json(const nlohmann::json& json, const std::string& file) {
  const JsonNode j(json, file, "");
  if (j.has("version") && j.at("version").as_string() != "1.0")
    j.at("version").fail("\"" + printable(j.str("version"), 20) + "\" is not supported (\"1.0\")");
  Parts p;
  p.model = make_model(j.at("model"));
  if (j.has("normalizer")) p.normalizer = make_normalizer(j.at("normalizer"));
  if (j.has("pre_tokenizer")) p.pre_tokenizer = make_pre_tokenizer(j.at("pre_tokenizer"));
  if (j.has("post_processor")) p.post_processor = make_post_processor(j.at("post_processor"));
  if (j.has("decoder")) p.decoder = make_decoder(j.at("decoder"));
  if (j.has("added_tokens")) {
    for (const JsonNode& t : j.at("added_tokens").elements()) {
      AddedToken a;
      a.content = t.str("content");
      if (!valid_utf8(a.content)) t.at("content").fail("is not valid UTF-8");
      a.special = t.boolean("special", false);
      a.single_word = t.boolean("single_word", false);
      a.lstrip = t.boolean("lstrip", false);
      a.rstrip = t.boolean("rstrip", false);
      a.normalized = t.boolean("normalized", !a.special);
      p.added_tokens.push_back(std::move(a));
    }
  }
  return p;
}

void apply_tokenizer_config(Parts& p, const nlohmann::json& config, const std::string& file) {
  if (config.is_null()) return;
  const JsonNode c(config, file, "");
  if (!config.is_object()) c.expected("a JSON object");
  if (c.has("model_max_length")) {
    const JsonNode m = c.at("model_max_length");
    if (!m.json().is_number() || m.json().get<double>() < 0) m.expected("a number");
    const double v = m.json().get<double>();
    p.model_max_length = v > 0 && v < 2147483648.0 ? uint32_t(v) : 0;  // 1e30 means "none"
  }
  for (const char* role :
       {"cls_token", "sep_token", "pad_token", "mask_token", "unk_token", "bos_token", "eos_token"}) {
    if (!c.has(role)) continue;
    const JsonNode v = c.at(role);
    if (v.json().is_string()) p.special_tokens[role] = v.as_string();
    else if (v.json().is_object()) p.special_tokens[role] = v.str("content");
    else v.expected("a string or {\"content\": ...}");
  }
}

namespace {

/// DIR/NAME parsed, or null when there is no such file.
nlohmann::json read_json(const std::string& path) {
  const auto text = io::read_file_if_present(path, "the tokenizer config");
  if (!text) return nullptr;
  return parse_json(path, *text);
}

}  // namespace

nlohmann::json parse_json(const std::string& file, std::string_view text) {
  try {
    return parse_json_bounded(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(file + ": not valid JSON: " + json_error_text(e));
  }
}

std::unique_ptr<Tokenizer> load_hf_tokenizer_json(const std::string& file, std::string_view text) {
  const nlohmann::json j = parse_json(file, text);
  if (!j.is_object()) throw Error(file + ": must be a JSON object, got " + std::string(j.type_name()));
  return make_tokenizer(parse_tokenizer_json(j, file));
}

std::unique_ptr<Tokenizer> load_hf_dir(const std::string& dir, const nlohmann::json* j) {
  const std::string config_file = dir + "/tokenizer_config.json";
  nlohmann::json config = read_json(config_file);
  // special_tokens_map.json fills in roles tokenizer_config.json does not name.
  const nlohmann::json map = read_json(dir + "/special_tokens_map.json");
  if (config.is_null() && map.is_object()) config = nlohmann::json::object();
  Parts p = j ? parse_tokenizer_json(*j, dir + "/tokenizer.json") : build_from_vocab_files(dir, config);
  if (!map.is_null()) apply_tokenizer_config(p, map, dir + "/special_tokens_map.json");  // not an object: an error
  apply_tokenizer_config(p, config, config_file);
  return make_tokenizer(std::move(p));
}

}  // namespace vkf::text::hf
