// Character classes and Unicode transforms as HF `tokenizers` 0.19.1 applies them.
// The classes come from tables probed from the library (unicode_tables.cpp, made by
// tools/hf/gen_unicode_tables.py); normalization and case mapping from ICU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace vkf::text::hf {

/// An inclusive range of code points.
struct Range {
  uint32_t lo, hi;
};

namespace tables {
extern const Range kCleanTextRemoved[], kNonspacingMark[], kCombiningMark[], kPunctuation[], kNumeric[],
    kWhitespace[];
extern const size_t kCleanTextRemovedSize, kNonspacingMarkSize, kCombiningMarkSize, kPunctuationSize,
    kNumericSize, kWhitespaceSize;
}  // namespace tables

/// Rust's char::is_whitespace (White_Space).
bool is_whitespace(char32_t c);
/// What BertNormalizer's clean_text removes (NUL, U+FFFD, control and format characters).
bool is_clean_text_removed(char32_t c);
/// Rust's is_mark_nonspacing of the `unicode_categories` crate (BertNormalizer strip_accents).
bool is_nonspacing_mark(char32_t c);
/// unicode-normalization's is_combining_mark (the StripAccents normalizer).
bool is_combining_mark(char32_t c);
/// ASCII punctuation or a Unicode punctuation category (BertPreTokenizer, Punctuation).
bool is_punctuation(char32_t c);
/// Rust's char::is_numeric (Digits).
bool is_numeric(char32_t c);
/// Rust regex's \w: alphabetic, marks, decimal digits, connector punctuation, joiners.
bool is_word_char(char32_t c);

/// Unicode normalization forms.
enum class NormalForm { NFC, NFD, NFKC, NFKD };
/// `s` in form `f`, as `tokenizers` computes it: ICU, except that characters newer than
/// the Unicode version of its tables (12.0) are left as they are and split the text.
std::u32string to_normal_form(const std::u32string& s, NormalForm f);
/// The most non-starters (canonical combining class > 0) in a row that
/// normalization sees: Unicode's Stream-Safe Text Format (UAX #15, D4).
constexpr int kStreamSafeMaxNonStarters = 30;
/// `s` in Stream-Safe Text Format (UAX #15, section 13, the Stream-Safe Text
/// Process): U+034F COMBINING GRAPHEME JOINER inserted before a character
/// whose leading non-starters (counted in its NFKD decomposition) would make
/// a run longer than 30. Canonical reordering is quadratic in a run of marks
/// ("a" + U+0301 U+0316 × 100,000 took 12–18 s), so every normalization here
/// runs on this; text with runs of at most 30 non-starters, which is all real
/// text, comes back unchanged.
std::u32string stream_safe(const std::u32string& s);
/// Rust's char::to_lowercase of every character (full mappings, no context).
std::u32string lowercase_chars(const std::u32string& s);

/// Length in bytes of the UTF-8 sequence that starts with byte `lead` (valid text).
inline size_t utf8_length(uint8_t lead) { return lead < 0x80 ? 1 : lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : 2; }
/// The code point at byte `i` of valid UTF-8 `s`.
inline char32_t code_point_at(std::string_view s, size_t i) {
  const uint8_t lead = uint8_t(s[i]);
  const size_t n = utf8_length(lead);
  if (n == 1) return lead;
  char32_t cp = lead & (0x3F >> (n - 1));
  for (size_t k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (uint8_t(s[i + k]) & 0x3F);
  return cp;
}

/// Code points of valid UTF-8 `s` (no checks: for text already validated).
std::u32string to_u32(std::string_view s);
/// UTF-8 of code points `s`.
std::string to_utf8(const std::u32string& s);
/// UTF-8 of one code point.
std::string to_utf8(char32_t c);
/// `bytes` as UTF-8, each maximal invalid subsequence replaced by U+FFFD (Rust's
/// String::from_utf8_lossy, Python's errors="replace").
std::string utf8_lossy(std::string_view bytes);
/// True when `bytes` is valid UTF-8.
bool valid_utf8(std::string_view bytes);

}  // namespace vkf::text::hf
