// generation_config.json (Hugging Face's GenerationConfig as save_pretrained writes
// it) as GenerateOptions defaults.
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "io/read_file.hpp"
#include "model/json_parse.hpp"
#include "model/json_text.hpp"
#include "vkformer/session.hpp"

namespace vkf {
namespace {

using json = nlohmann::json;

/// One key of the file: read when present and not null, else `out` is left as it is.
class Reader {
 public:
  Reader(std::string path, const json& j) : path_(std::move(path)), j_(j) {}

  const json* get(const char* key) const {
    auto it = j_.find(key);
    return it == j_.end() || it->is_null() ? nullptr : &*it;
  }
  Error bad(const char* key, const char* expected) const {
    return Error(path_ + ": \"" + key + "\" must be " + expected + ", got " + brief_json(*get(key)));
  }
  void boolean(const char* key, bool& out) const {
    if (const json* v = get(key)) {
      if (!v->is_boolean()) throw bad(key, "true or false");
      out = v->get<bool>();
    }
  }
  void number(const char* key, double& out) const {
    if (const json* v = get(key)) {
      if (!v->is_number()) throw bad(key, "a number");
      out = v->get<double>();
    }
  }
  /// An integer in [lo, hi].
  template <class T>
  void integer(const char* key, T& out, int64_t lo, int64_t hi) const {
    if (const json* v = get(key)) {
      if (!v->is_number_integer() || v->get<int64_t>() < lo || v->get<int64_t>() > hi)
        throw bad(key, ("an integer from " + std::to_string(lo) + " to " + std::to_string(hi)).c_str());
      out = T(v->get<int64_t>());
    }
  }
  /// A list of token-id lists (bad_words_ids).
  void id_lists(const char* key, std::vector<Ids>& out) const {
    const json* v = get(key);
    if (!v) return;
    if (!v->is_array()) throw bad(key, "a list of lists of token ids");
    out.clear();
    for (const json& seq : *v) {
      if (!seq.is_array() || seq.empty()) throw bad(key, "a list of non-empty lists of token ids");
      Ids ids;
      for (const json& x : seq) {
        if (!x.is_number_integer() || x.get<int64_t>() < 0 || x.get<int64_t>() > INT32_MAX)
          throw bad(key, "a list of lists of token ids");
        ids.push_back(x.get<int32_t>());
      }
      out.push_back(std::move(ids));
    }
  }
  /// true, false or "never".
  void early_stopping(const char* key, EarlyStopping& out) const {
    const json* v = get(key);
    if (!v) return;
    if (v->is_boolean())
      out = v->get<bool>() ? EarlyStopping::Enough : EarlyStopping::Heuristic;
    else if (v->is_string() && v->get<std::string>() == "never")
      out = EarlyStopping::Never;
    else
      throw bad(key, "true, false or \"never\"");
  }
  /// One token id (-1 when unset stays as it is).
  void id(const char* key, int32_t& out) const {
    std::vector<int32_t> v;
    ids(key, v);
    if (v.size() > 1) throw bad(key, "one token id");
    if (!v.empty()) out = v[0];
  }
  /// A token id, or a list of them.
  void ids(const char* key, std::vector<int32_t>& out) const {
    const json* v = get(key);
    if (!v) return;
    auto id = [](const json& x) { return x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() <= INT32_MAX; };
    if (id(*v)) {
      out = {v->get<int32_t>()};
      return;
    }
    if (!v->is_array()) throw bad(key, "a token id or a list of token ids");
    out.clear();
    for (const json& x : *v) {
      if (!id(x)) throw bad(key, "a token id or a list of token ids");
      out.push_back(x.get<int32_t>());
    }
  }

 private:
  std::string path_;
  const json& j_;
};

json read_json_object(const std::string& path) {
  const std::string text = io::read_file(path, "the generation config");
  json j;
  try {
    j = parse_json_bounded(text);
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON: " + json_error_text(e));
  }
  if (!j.is_object()) throw Error(path + ": must be a JSON object");
  return j;
}

}  // namespace

GenerateOptions read_generation_config(const std::string& dir, GenerateOptions o) {
  std::string path = (std::filesystem::path(dir) / "generation_config.json").string();
  std::error_code ec;
  json j;
  if (std::filesystem::exists(path, ec)) {
    j = read_json_object(path);
  } else {
    // HF builds the generation config from the model config's attributes when the
    // file is missing (older directories); only a config.json transformers wrote.
    path = (std::filesystem::path(dir) / "config.json").string();
    if (!std::filesystem::exists(path, ec)) return o;
    j = read_json_object(path);
    if (!j.contains("transformers_version")) return o;
  }
  const Reader r(path, j);
  o.early_stopping = EarlyStopping::Heuristic;  // GenerationConfig's default
  r.early_stopping("early_stopping", o.early_stopping);
  r.id("decoder_start_token_id", o.decoder_start_token_id);
  r.id("forced_bos_token_id", o.forced_bos_token_id);
  r.ids("forced_eos_token_id", o.forced_eos_token_ids);
  r.id_lists("bad_words_ids", o.bad_words_ids);
  r.integer("min_length", o.min_length, 0, INT32_MAX);
  r.boolean("do_sample", o.do_sample);
  r.number("temperature", o.temperature);
  r.integer("top_k", o.top_k, 0, INT32_MAX);
  r.number("top_p", o.top_p);
  r.number("min_p", o.min_p);
  r.number("repetition_penalty", o.repetition_penalty);
  r.integer("no_repeat_ngram_size", o.no_repeat_ngram_size, 0, INT32_MAX);
  r.integer("max_new_tokens", o.max_new_tokens, 0, INT32_MAX);
  r.integer("num_beams", o.beam, 1, 1024);
  r.number("length_penalty", o.length_penalty);
  r.ids("eos_token_id", o.eos_token_ids);
  r.id("bos_token_id", o.bos_token_id);
  try {
    validate(o);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  return o;
}

}  // namespace vkf
