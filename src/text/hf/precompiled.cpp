// The "Precompiled" normalizer: SentencePiece's precompiled_charsmap, as the
// spm_precompiled crate reads it for `tokenizers`. The blob is a little-endian
// u32 trie size in bytes, a Darts-clone double array of that many bytes, then
// the replacement strings, each ending with '\0'. `tokenizers` walks the text by
// grapheme cluster: a cluster shorter than 6 bytes whose shortest prefix is in
// the trie is replaced whole by that entry's string; otherwise each character
// is looked up alone.
#include <unicode/brkiter.h>
#include <unicode/unistr.h>

#include <cstring>
#include <memory>

#include "text/hf/pipeline.hpp"
#include "text/hf/unicode.hpp"
#include "vkformer/error.hpp"

namespace vkf::text::hf {
namespace {

/// Standard base64 (padding optional); nullopt when `s` is not base64.
std::optional<std::string> base64_decode(const std::string& s) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < s.size() && s[i] != '='; ++i) {
    const int v = value(s[i]);
    if (v < 0) return std::nullopt;
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += char((acc >> bits) & 0xFF);
    }
  }
  for (; i < s.size(); ++i)
    if (s[i] != '=') return std::nullopt;
  return out;
}

class Precompiled final : public Normalizer {
 public:
  explicit Precompiled(const JsonNode& j) {
    const JsonNode map = j.at("precompiled_charsmap");
    const auto blob = base64_decode(map.as_string());
    if (!blob) map.fail("is not base64");
    if (blob->size() < 4) map.fail("is too short for a charsmap (" + std::to_string(blob->size()) + " bytes)");
    uint32_t trie_bytes;
    std::memcpy(&trie_bytes, blob->data(), 4);  // little-endian hosts only, as Vulkan targets are
    if (trie_bytes / 4 * 4 + 4 > blob->size())
      map.fail("says its trie has " + std::to_string(trie_bytes) + " bytes, but the charsmap holds " +
               std::to_string(blob->size() - 4));
    units_.resize(trie_bytes / 4);
    std::memcpy(units_.data(), blob->data() + 4, units_.size() * 4);
    normalized_ = blob->substr(4 + units_.size() * 4);
    if (!valid_utf8(normalized_)) map.fail("has replacement strings that are not valid UTF-8");
    if (units_.empty()) map.fail("has an empty trie");
  }

  void normalize(std::string& s) const override {
    if (s.empty()) return;
    icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
    UErrorCode status = U_ZERO_ERROR;
    std::unique_ptr<icu::BreakIterator> it(icu::BreakIterator::createCharacterInstance(icu::Locale::getRoot(), status));
    if (U_FAILURE(status)) throw Error(std::string("ICU: no grapheme break iterator: ") + u_errorName(status));
    it->setText(u);
    std::string out;
    out.reserve(s.size());
    std::string cluster;
    for (int32_t b = it->first(), e = it->next(); e != icu::BreakIterator::DONE; b = e, e = it->next()) {
      cluster.clear();
      u.tempSubStringBetween(b, e).toUTF8String(cluster);
      if (cluster.size() < 6) {
        if (const auto norm = transform(cluster)) {
          out += *norm;
          continue;
        }
      }
      for (size_t k = 0; k < cluster.size();) {
        const size_t n = utf8_length(uint8_t(cluster[k]));
        const std::string_view ch(cluster.data() + k, n);
        const auto norm = transform(ch);
        out += norm ? *norm : ch;
        k += n;
      }
    }
    s = std::move(out);
  }

 private:
  // Darts-clone units: label in bits 0-7 (bit 31 marks a leaf), has_leaf bit 8, offset above.
  static bool has_leaf(uint32_t u) { return (u >> 8) & 1; }
  static uint32_t value(uint32_t u) { return u & ((1u << 31) - 1); }
  static uint32_t label(uint32_t u) { return u & ((1u << 31) | 0xFF); }
  static uint32_t offset(uint32_t u) { return (u >> 10) << ((u & (1u << 9)) >> 6); }

  /// The replacement of the shortest prefix of `key` that the trie holds.
  std::optional<std::string_view> transform(std::string_view key) const {
    size_t pos = offset(units_[0]);
    for (char ch : key) {
      const uint8_t c = uint8_t(ch);
      if (c == 0) break;
      pos ^= c;
      if (pos >= units_.size()) return std::nullopt;
      const uint32_t unit = units_[pos];
      if (label(unit) != c) return std::nullopt;
      pos ^= offset(unit);
      if (has_leaf(unit)) {
        if (pos >= units_.size()) return std::nullopt;
        const size_t at = value(units_[pos]);
        if (at > normalized_.size()) return std::nullopt;
        if (at < normalized_.size() && (uint8_t(normalized_[at]) & 0xC0) == 0x80)
          throw Error("precompiled_charsmap: a replacement starts inside a character (byte " + std::to_string(at) +
                      ")");
        const size_t end = normalized_.find('\0', at);
        return std::string_view(normalized_).substr(at, (end == std::string::npos ? normalized_.size() : end) - at);
      }
    }
    return std::nullopt;
  }

  std::vector<uint32_t> units_;
  std::string normalized_;
};

}  // namespace

std::unique_ptr<Normalizer> make_precompiled(const JsonNode& j) { return std::make_unique<Precompiled>(j); }

}  // namespace vkf::text::hf
