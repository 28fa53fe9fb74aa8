// Header and config values quoted in error messages: one line, short, and
// never a deep recursion. nlohmann's dump() recurses once per nesting level, so
// a safetensors header of 90,000 '[' overflowed the stack while the message
// about it was being built.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace vkf {

/// `v` as JSON text, at most `max_chars`; a container holding containers is
/// described ("an array of 3 elements") instead of printed.
inline std::string brief_json(const nlohmann::json& v, size_t max_chars = 80) {
  if (v.is_structured())
    for (const auto& x : v)
      if (x.is_structured())
        return std::string(v.is_array() ? "an array of " : "an object of ") + std::to_string(v.size()) +
               (v.is_array() ? " elements" : " members");
  std::string s = v.dump(-1, ' ', /*ensure_ascii=*/true);  // control characters escaped: one line
  if (s.size() > max_chars) s = s.substr(0, max_chars - 3) + "...";
  return s;
}

/// A name or string from the file, for use between quotes in a message:
/// unchanged when short and printable ASCII, else escaped and shortened.
inline std::string printable(const std::string& s, size_t max_chars = 120) {
  bool plain = s.size() <= max_chars;
  for (char c : s) plain = plain && c >= 0x20 && c < 0x7f;
  if (plain) return s;
  const std::string q = brief_json(nlohmann::json(s), max_chars + 2);
  return q.substr(1, q.back() == '"' ? q.size() - 2 : q.size() - 1);
}

/// A JSON parse error as one short line: nlohmann's "[json.exception...] " tag
/// dropped and its "last read: '...'" excerpt, which holds every byte of the
/// token being read (8 characters per control byte), cut to its last 40.
inline std::string json_error_text(const nlohmann::json::exception& e) {
  std::string msg = e.what();
  const auto tag = msg.find("] ");
  if (tag != std::string::npos) msg = msg.substr(tag + 2);
  const std::string key = "last read: '";
  const auto start = msg.find(key);
  if (start != std::string::npos) {
    const size_t from = start + key.size();
    const auto end = msg.find("'; ", from);
    const size_t len = (end == std::string::npos ? msg.size() : end) - from;
    if (len > 40) msg = msg.substr(0, from) + "..." + msg.substr(from + len - 40);
  }
  return msg.size() > 300 ? msg.substr(0, 297) + "..." : msg;
}

}  // namespace vkf
