#include "model/config_reader.hpp"

#include <cmath>
#include <limits>

#include "model/json_text.hpp"

namespace vkf {

using json = nlohmann::json;

void ConfigReader::fail(const std::string& what) const { throw Error(path_ + ": " + what); }

const json& ConfigReader::need(const char* key) const {
  auto it = j_.find(key);
  if (it == j_.end()) fail(std::string("missing key \"") + key + "\"");
  return *it;
}

void ConfigReader::wrong(const char* key, const char* expected, const json& got) const {
  fail(std::string("\"") + key + "\" must be " + expected + ", got " + brief_json(got));
}

uint32_t ConfigReader::uint(const char* key, uint32_t min) const {
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

int32_t ConfigReader::int32(const char* key) const {
  const json& v = need(key);
  if (!v.is_number_integer()) wrong(key, "an integer", v);
  if (v.is_number_unsigned() ? v.get<uint64_t>() > uint64_t(std::numeric_limits<int32_t>::max())
                             : (v.get<int64_t>() < std::numeric_limits<int32_t>::min() ||
                                v.get<int64_t>() > std::numeric_limits<int32_t>::max()))
    wrong(key, "a 32-bit integer", v);
  return v.get<int32_t>();
}

std::vector<int32_t> ConfigReader::ids(const char* key, uint32_t vocab) const {
  const json& v = need(key);
  const std::string expected = "a token id in [0, " + std::to_string(vocab) + ") or a non-empty list of them";
  auto id = [&](const json& x) {
    if (!x.is_number_integer() || (!x.is_number_unsigned() && x.get<int64_t>() < 0) ||
        x.get<uint64_t>() >= vocab)
      wrong(key, expected.c_str(), v);
    return x.get<int32_t>();
  };
  if (!v.is_array()) return {id(v)};
  if (v.empty()) wrong(key, expected.c_str(), v);
  std::vector<int32_t> out;
  for (const json& x : v) out.push_back(id(x));
  return out;
}

bool ConfigReader::boolean(const char* key) const {
  const json& v = need(key);
  if (!v.is_boolean()) wrong(key, "true or false", v);
  return v.get<bool>();
}

std::string ConfigReader::string(const char* key) const {
  const json& v = need(key);
  if (!v.is_string()) wrong(key, "a string", v);
  return v.get<std::string>();
}

float ConfigReader::positive_float(const char* key) const {
  const json& v = need(key);
  if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
    wrong(key, "a positive number", v);
  // The kernels compute in fp32: 1e-57 would become 0 there, 1e300 infinity.
  const float x = float(v.get<double>());
  if (!(x > 0) || !std::isfinite(x))
    fail("\"" + std::string(key) + "\" " + brief_json(v) +
         " is outside the fp32 range (about 1.4e-45 to 3.4e38) the kernels compute in");
  return x;
}

Activation ConfigReader::activation() const {
  const std::string s = string("activation");
  if (s == "relu") return Activation::ReLU;
  if (s == "gelu") return Activation::GeluErf;
  if (s == "gelu_tanh") return Activation::GeluTanh;
  if (s == "silu") return Activation::SiLU;
  fail("unknown \"activation\" \"" + printable(s) + "\" (relu, gelu, gelu_tanh, silu)");
}

Activation ConfigReader::hf_activation(const char* key, const char* fallback) const {
  const std::string s = set(key) ? string(key) : fallback;
  if (s == "gelu" || s == "gelu_python") return Activation::GeluErf;
  if (s == "gelu_new" || s == "gelu_pytorch_tanh" || s == "gelu_fast") return Activation::GeluTanh;
  if (s == "relu") return Activation::ReLU;
  if (s == "silu" || s == "swish") return Activation::SiLU;
  fail("\"" + std::string(key) + "\" \"" + printable(s) +
       "\" is not supported (gelu, gelu_new, gelu_pytorch_tanh, gelu_fast, relu, silu)");
}

PositionalEncoding ConfigReader::positional_encoding() const {
  const std::string s = string("positional_encoding");
  if (s == "sinusoidal") return PositionalEncoding::Sinusoidal;
  if (s == "learned") return PositionalEncoding::Learned;
  if (s == "none") return PositionalEncoding::None;
  if (s == "sinusoidal_halves") return PositionalEncoding::SinusoidalHalves;
  fail("unknown \"positional_encoding\" \"" + printable(s) + "\" (sinusoidal, learned, none, sinusoidal_halves)");
}

void ConfigReader::check_heads(const char* key, uint32_t width, uint32_t n_heads) const {
  if (width % n_heads != 0)
    fail("\"" + std::string(key) + "\" " + std::to_string(width) + " is not divisible by \"n_heads\" " +
         std::to_string(n_heads));
  if (width / n_heads > 256)
    fail("head dimension " + std::string(key) + "/n_heads = " + std::to_string(width / n_heads) +
         " exceeds 256, the limit of the flash-attention kernel");
}

}  // namespace vkf
