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

/// A name or string from a file (tensor name, JSON key or value, token), for
/// use between quotes in a message: a hostile file must not be able to write
/// to the terminal or forge log lines through it. Control characters (C0, DEL,
/// C1), quotes, backslashes, invalid UTF-8 and the bidirectional overrides are
/// escaped (\n, \x1b, \", \u202e); other UTF-8 is kept. A long result keeps
/// its start and says how long the original was: "abc... (100000 bytes)".
inline std::string printable(const std::string& s, size_t max_chars = 120) {
  std::string out;
  auto hex = [&](const char* prefix, uint32_t v, int digits) {
    static const char* kDigits = "0123456789abcdef";
    out += prefix;
    for (int d = digits - 1; d >= 0; --d) out += kDigits[(v >> (4 * d)) & 15];
  };
  size_t i = 0;
  while (i < s.size() && out.size() < max_chars) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == '\n') out += "\\n", ++i;
    else if (c == '\r') out += "\\r", ++i;
    else if (c == '\t') out += "\\t", ++i;
    else if (c == '"' || c == '\\') out += '\\', out += char(c), ++i;
    else if (c < 0x20 || c == 0x7f) hex("\\x", c, 2), ++i;
    else if (c < 0x80) out += char(c), ++i;
    else {
      // A well-formed UTF-8 sequence (no overlongs, surrogates or values past U+10FFFF).
      const size_t len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
      uint32_t cp = len == 4 ? c & 7u : len == 3 ? c & 15u : c & 31u;
      bool ok = len != 0 && i + len <= s.size();
      for (size_t k = 1; ok && k < len; ++k) {
        const unsigned char d = static_cast<unsigned char>(s[i + k]);
        ok = (d & 0xC0) == 0x80;
        cp = (cp << 6) | (d & 0x3Fu);
      }
      ok = ok && !(len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp < 0xE000))) &&
           !(len == 4 && (cp < 0x10000 || cp > 0x10FFFF));
      if (!ok) {
        hex("\\x", c, 2), ++i;
      } else if (cp < 0xA0 || (cp >= 0x202A && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069) ||
                 cp == 0x2028 || cp == 0x2029) {
        hex("\\u", cp, 4), i += len;  // C1 controls (0x9b is a CSI), bidi overrides, line separators
      } else {
        out.append(s, i, len), i += len;
      }
    }
  }
  if (i < s.size()) out += "... (" + std::to_string(s.size()) + " bytes)";
  return out;
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
