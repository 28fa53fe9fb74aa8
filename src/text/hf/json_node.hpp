// A JSON value of tokenizer.json together with its path ("model.vocab", "normalizer.
// normalizers[2]"), so that every error names the file and the field in one line.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace vkf::text::hf {

/// Nested components (Sequence in Sequence) deeper than this are refused.
constexpr int kMaxDepth = 16;

class JsonNode {
 public:
  JsonNode(const nlohmann::json& j, std::string file, std::string path)
      : j_(&j), file_(std::move(file)), path_(std::move(path)) {}

  const nlohmann::json& json() const { return *j_; }
  const std::string& file() const { return file_; }
  const std::string& path() const { return path_; }

  /// Throws vkf::Error "FILE: PATH <what>".
  [[noreturn]] void fail(const std::string& what) const;
  /// Throws "FILE: PATH must be <expected>, got <brief value>".
  [[noreturn]] void expected(const std::string& what) const;

  /// True when member `key` exists and is not null.
  bool has(const char* key) const;
  /// Member `key` (must exist; may be null).
  JsonNode at(const char* key) const;
  /// Element `i` of an array.
  JsonNode at(size_t i) const;
  /// Elements of an array (expected() otherwise).
  std::vector<JsonNode> elements() const;

  /// This value as a string, bool, integer in [lo, hi], number.
  std::string as_string() const;
  bool as_bool() const;
  int64_t as_int(int64_t lo, int64_t hi) const;
  double as_number() const;

  /// Member `key` as a string; missing or null gives `def`, or an error when `def` is empty.
  std::string str(const char* key) const;
  std::optional<std::string> opt_str(const char* key) const;
  bool boolean(const char* key, bool def) const;
  std::optional<bool> opt_bool(const char* key) const;
  int64_t integer(const char* key, int64_t lo, int64_t hi, int64_t def) const;
  /// Member "type" as a string (required), for the factories.
  std::string type() const;
  /// Fails with "PATH.type "T" is not supported (LIST)".
  [[noreturn]] void unsupported_type(const std::string& known) const;

 private:
  const nlohmann::json* j_;
  std::string file_, path_;
};

}  // namespace vkf::text::hf
