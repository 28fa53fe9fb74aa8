// Text from files (tensor names, JSON fields, texts) reaches stderr inside
// messages; control characters in it could move the cursor, rewrite earlier
// lines or forge log lines. The library escapes what it quotes; this is the
// CLI's last line of defence for every message it prints.
#pragma once

#include <cstdio>
#include <string>

namespace vkf::tools {

/// `s` with control characters (below 0x20, and 0x7f) shown as \xNN, and cut
/// to `max_bytes` with "..." (a message is one line of readable length).
inline std::string printable(const std::string& s, size_t max_bytes = 4096) {
  std::string out;
  for (size_t i = 0; i < s.size() && out.size() < max_bytes; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out += char(c);
    }
  }
  if (out.size() >= max_bytes) out += "...";
  return out;
}

}  // namespace vkf::tools
