// config.json: every key is required except tgt_vocab_size for models without
// a decoder, so a typo or an exporter bug is an error naming the key, not a
// silent default. Unknown keys are ignored (exporters add their own).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/config.hpp"
#include "model/json_text.hpp"
#include "vkformer/model.hpp"

namespace vkf {
namespace {

using json = nlohmann::json;

class ConfigReader {
 public:
  ConfigReader(const std::string& path, const json& j) : path_(path), j_(j) {}

  [[noreturn]] void fail(const std::string& what) const { throw Error(path_ + ": " + what); }

  const json& need(const char* key) const {
    auto it = j_.find(key);
    if (it == j_.end()) fail(std::string("missing key \"") + key + "\"");
    return *it;
  }
  [[noreturn]] void wrong(const char* key, const char* expected, const json& got) const {
    fail(std::string("\"") + key + "\" must be " + expected + ", got " + brief_json(got));
  }

  /// An integer in [min, 2^32).
  uint32_t uint(const char* key, uint32_t min) const {
    const json& v = need(key);
    const char* expected = min > 0 ? "a positive integer" : "a non-negative integer";
    if (!v.is_number_integer()) wrong(key, expected, v);
    if (v.is_number_unsigned()) {
      uint64_t x = v.get<uint64_t>();
      if (x < min || x > std::numeric_limits<uint32_t>::max()) wrong(key, expected, v);
      return uint32_t(x);
    }
    int64_t x = v.get<int64_t>();
    if (x < int64_t(min) || x > int64_t(std::numeric_limits<uint32_t>::max())) wrong(key, expected, v);
    return uint32_t(x);
  }
  int32_t int32(const char* key) const {
    const json& v = need(key);
    if (!v.is_number_integer()) wrong(key, "an integer", v);
    if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(std::numeric_limits<int32_t>::max())
                               : (v.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
                                  v.get<int64_t>() > std::numeric_limits<int32_t>::max()))
      wrong(key, "a 32-bit integer", v);
    return v.get<int32_t>();
  }
  bool boolean(const char* key) const {
    const json& v = need(key);
    if (!v.is_boolean()) wrong(key, "true or false", v);
    return v.get<bool>();
  }
  std::string string(const char* key) const {
    const json& v = need(key);
    if (!v.is_string()) wrong(key, "a string", v);
    return v.get<std::string>();
  }
  double positive_number(const char* key) const {
    const json& v = need(key);
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      wrong(key, "a positive number", v);
    return v.get<double>();
  }
  bool has(const char* key) const { return j_.contains(key); }

 private:
  const std::string& path_;
  const json& j_;
};

Activation parse_activation(const ConfigReader& r) {
  const std::string s = r.string("activation");
  if (s == "relu") return Activation::ReLU;
  if (s == "gelu") return Activation::GeluErf;
  if (s == "gelu_tanh") return Activation::GeluTanh;
  if (s == "silu") return Activation::SiLU;
  r.fail("unknown \"activation\" \"" + printable(s) + "\" (relu, gelu, gelu_tanh, silu)");
}

PositionalEncoding parse_positional(const ConfigReader& r) {
  const std::string s = r.string("positional_encoding");
  if (s == "sinusoidal") return PositionalEncoding::Sinusoidal;
  if (s == "learned") return PositionalEncoding::Learned;
  if (s == "none") return PositionalEncoding::None;
  r.fail("unknown \"positional_encoding\" \"" + printable(s) + "\" (sinusoidal, learned, none)");
}

// The use_lite family: one pre-LN encoder stack whose first layer may widen
// embed_dim -> d_model, then pooling and a tanh dense layer.
ModelConfig parse_use_lite(const ConfigReader& r) {
  ModelConfig c;
  c.model_type = "use_lite";
  c.src_vocab_size = r.uint("vocab_size", 1);
  c.embed_dim = r.uint("embed_dim", 1);
  c.d_model = r.uint("d_model", 1);
  c.n_heads = r.uint("n_heads", 1);
  c.d_ff = r.uint("d_ff", 1);
  c.encoder_layers = r.uint("layers", 1);
  c.activation = parse_activation(r);
  c.layer_norm_eps = float(r.positive_number("layer_norm_eps"));
  c.max_positions = r.uint("max_positions", 1);
  c.embedding_scale = float(r.positive_number("embedding_scale"));
  c.l2_eps = float(r.positive_number("l2_eps"));
  c.norm_first = true;
  c.positional_encoding = PositionalEncoding::None;  // its own timing signal (timing.inv_timescales)
  c.pad_id = c.bos_id = c.eos_id = 0;                 // unused: padding is by length
  if (c.embed_dim % 2 != 0)
    r.fail("\"embed_dim\" " + std::to_string(c.embed_dim) + " must be even (sines | cosines)");
  for (auto [key, width] : {std::pair{"embed_dim", c.embed_dim}, std::pair{"d_model", c.d_model}}) {
    if (width % c.n_heads != 0)
      r.fail("\"" + std::string(key) + "\" " + std::to_string(width) + " is not divisible by \"n_heads\" " +
             std::to_string(c.n_heads));
    if (width / c.n_heads > 256)
      r.fail("head dimension " + std::string(key) + "/n_heads = " + std::to_string(width / c.n_heads) +
             " exceeds 256, the limit of the flash-attention kernel");
  }
  return c;
}

}  // namespace

const std::vector<std::string>& known_model_types() {
  static const std::vector<std::string> kTypes = {"transformer", "use_lite"};
  return kTypes;
}

ModelConfig load_config(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(path + ": is a directory, expected the model config");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open the model config (missing or unreadable)");
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error(path + ": cannot read the model config");
  return parse_config(path, text.str());
}

ModelConfig parse_config(const std::string& path, const std::string& text) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
    throw Error(path + ": not valid JSON: " + json_error_text(e));
  }
  if (!j.is_object()) throw Error(path + ": must hold a JSON object, got " + std::string(j.type_name()));

  ConfigReader r(path, j);
  ModelConfig c;
  c.model_type = r.string("model_type");
  const auto& known = known_model_types();
  if (std::find(known.begin(), known.end(), c.model_type) == known.end()) {
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "\"" : ", \"") + k + "\"";
    r.fail("unknown \"model_type\" \"" + printable(c.model_type) + "\" (known: " + list + ")");
  }
  if (c.model_type == "use_lite") return parse_use_lite(r);
  c.d_model = r.uint("d_model", 1);
  c.n_heads = r.uint("n_heads", 1);
  c.d_ff = r.uint("d_ff", 1);
  c.encoder_layers = r.uint("encoder_layers", 1);
  c.decoder_layers = r.uint("decoder_layers", 0);
  c.activation = parse_activation(r);
  c.norm_first = r.boolean("norm_first");
  c.layer_norm_eps = float(r.positive_number("layer_norm_eps"));
  // The kernels use it in fp32: 1e-57 would become 0, 1e300 infinity.
  if (!(c.layer_norm_eps > 0) || !std::isfinite(c.layer_norm_eps))
    r.fail("\"layer_norm_eps\" " + brief_json(r.need("layer_norm_eps")) +
           " is outside the fp32 range (about 1.4e-45 to 3.4e38) the kernels compute in");
  c.src_vocab_size = r.uint("src_vocab_size", 1);
  if (c.decoder_layers > 0 || r.has("tgt_vocab_size"))
    c.tgt_vocab_size = r.uint("tgt_vocab_size", c.decoder_layers > 0 ? 1 : 0);
  c.max_positions = r.uint("max_positions", 1);
  c.positional_encoding = parse_positional(r);
  c.scale_embeddings = r.boolean("scale_embeddings");
  c.causal = r.boolean("causal");
  c.pad_id = r.int32("pad_id");
  c.bos_id = r.int32("bos_id");
  c.eos_id = r.int32("eos_id");

  if (c.d_model % c.n_heads != 0)
    r.fail("\"d_model\" " + std::to_string(c.d_model) + " is not divisible by \"n_heads\" " +
           std::to_string(c.n_heads));
  if (c.d_model / c.n_heads > 256)
    r.fail("head dimension d_model/n_heads = " + std::to_string(c.d_model / c.n_heads) +
           " exceeds 256, the limit of the flash-attention kernel");
  if (c.causal && c.decoder_layers > 0)
    r.fail("\"causal\": true with \"decoder_layers\" " + std::to_string(c.decoder_layers) +
           " is unsupported (causal means a decoder-only model: an encoder stack with decoder_layers 0)");

  // pad masks both sides' inputs; bos starts and eos ends what the model
  // generates, which is the target side of an encoder–decoder.
  auto in_vocab = [&](const char* key, int32_t id, uint32_t vocab, const char* which) {
    if (id < 0 || uint32_t(id) >= vocab)
      r.fail("\"" + std::string(key) + "\" " + std::to_string(id) + " is outside the " + which +
             " vocabulary [0, " + std::to_string(vocab) + ")");
  };
  in_vocab("pad_id", c.pad_id, c.src_vocab_size, "source");
  if (c.encoder_decoder()) {
    in_vocab("pad_id", c.pad_id, c.tgt_vocab_size, "target");
    in_vocab("bos_id", c.bos_id, c.tgt_vocab_size, "target");
    in_vocab("eos_id", c.eos_id, c.tgt_vocab_size, "target");
  } else {
    in_vocab("bos_id", c.bos_id, c.src_vocab_size, "source");
    in_vocab("eos_id", c.eos_id, c.src_vocab_size, "source");
  }
  return c;
}

}  // namespace vkf
