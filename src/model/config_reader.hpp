// Reading config.json's keys: every family reads its own through this, so a
// missing or mistyped key reads the same whatever the model_type.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "vkformer/model.hpp"

namespace vkf {

/// One config.json object; every read names the file and the key when it fails.
class ConfigReader {
 public:
  ConfigReader(const std::string& path, const nlohmann::json& j) : path_(path), j_(j) {}

  /// @throws vkf::Error "<path>: <what>".
  [[noreturn]] void fail(const std::string& what) const;
  /// The key's value. @throws vkf::Error when it is missing.
  const nlohmann::json& need(const char* key) const;
  bool has(const char* key) const { return j_.contains(key); }
  /// Present and not null (HF writes null for "not set").
  bool set(const char* key) const { return has(key) && !j_.at(key).is_null(); }
  /// The config file's path.
  const std::string& path() const { return path_; }

  /// An integer in [min, 2^32).
  uint32_t uint(const char* key, uint32_t min) const;
  int32_t int32(const char* key) const;
  /// A token id or a non-empty list of them (HF's "eos_token_id": 2 or [2, 3]),
  /// each in [0, vocab).
  std::vector<int32_t> ids(const char* key, uint32_t vocab) const;
  bool boolean(const char* key) const;
  std::string string(const char* key) const;
  /// The same, or `def` when the key is absent or null (Hugging Face's configs leave
  /// out keys equal to their class's defaults).
  uint32_t uint_or(const char* key, uint32_t def, uint32_t min) const { return set(key) ? uint(key, min) : def; }
  int32_t int32_or(const char* key, int32_t def) const { return set(key) ? int32(key) : def; }
  bool boolean_or(const char* key, bool def) const { return set(key) ? boolean(key) : def; }
  /// A number > 0 that stays finite and > 0 in fp32 (1e-60 would round to 0, 1e39 to inf).
  float positive_float(const char* key) const;
  /// "activation": relu, gelu, gelu_tanh or silu.
  Activation activation() const;
  /// A Hugging Face activation name (ACT2FN's keys vkformer has: gelu, gelu_python,
  /// gelu_new, gelu_pytorch_tanh, gelu_fast, relu, silu, swish); `fallback` when
  /// the key is absent or null (the config class's default).
  Activation hf_activation(const char* key, const char* fallback) const;
  /// "positional_encoding": sinusoidal, learned, none or sinusoidal_halves.
  PositionalEncoding positional_encoding() const;
  /// Attention heads of width `width` (the value of `key`) split in n_heads:
  /// it must divide, and a head may be 256 wide at most (the flash-attention kernel's limit).
  void check_heads(const char* key, uint32_t width, uint32_t n_heads) const;

 private:
  [[noreturn]] void wrong(const char* key, const char* expected, const nlohmann::json& got) const;

  const std::string& path_;
  const nlohmann::json& j_;
};

}  // namespace vkf
