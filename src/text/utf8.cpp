#include "text/utf8.hpp"

#include <cstdio>

#include "vkformer/error.hpp"

namespace vkf::text {

std::vector<uint32_t> decode_utf8(std::string_view s, const std::string& what) {
  std::vector<uint32_t> out;
  out.reserve(s.size());
  auto fail = [&](size_t at, const char* why) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", unsigned(uint8_t(s[at])));
    throw Error((what.empty() ? "" : what + ": ") + "invalid UTF-8 at byte offset " + std::to_string(at) + " (byte " + byte + ": " +
                why + ")");
  };
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t b = uint8_t(s[i]);
    if (b < 0x80) {
      out.push_back(b);
      ++i;
      continue;
    }
    uint32_t n, cp, min;
    if (b >= 0xC2 && b <= 0xDF) n = 1, cp = b & 0x1F, min = 0x80;
    else if (b >= 0xE0 && b <= 0xEF) n = 2, cp = b & 0x0F, min = 0x800;
    else if (b >= 0xF0 && b <= 0xF4) n = 3, cp = b & 0x07, min = 0x10000;
    else if (b >= 0x80 && b <= 0xBF) fail(i, "continuation byte without a lead byte");
    else fail(i, "not a UTF-8 lead byte");
    for (uint32_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) fail(i, "sequence cut short by the end of the text");
      const uint8_t c = uint8_t(s[i + k]);
      if ((c & 0xC0) != 0x80) fail(i, "sequence cut short by a byte that is not a continuation byte");
      cp = (cp << 6) | (c & 0x3F);
    }
    if (cp < min) fail(i, "overlong encoding");
    if (cp >= 0xD800 && cp <= 0xDFFF) fail(i, "UTF-16 surrogate");
    if (cp > 0x10FFFF) fail(i, "beyond U+10FFFF");
    out.push_back(cp);
    i += n + 1;
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += char(cp);
  } else if (cp < 0x800) {
    out += char(0xC0 | (cp >> 6));
    out += char(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += char(0xE0 | (cp >> 12));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  } else {
    out += char(0xF0 | (cp >> 18));
    out += char(0x80 | ((cp >> 12) & 0x3F));
    out += char(0x80 | ((cp >> 6) & 0x3F));
    out += char(0x80 | (cp & 0x3F));
  }
}

}  // namespace vkf::text
