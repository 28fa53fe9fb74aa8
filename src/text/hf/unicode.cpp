#include "text/hf/unicode.hpp"

#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/ustring.h>

#include <algorithm>

#include "text/utf8.hpp"
#include "vkformer/error.hpp"

namespace vkf::text::hf {
namespace {

bool in(const Range* table, size_t n, char32_t c) {
  const Range* end = table + n;
  const Range* it = std::upper_bound(table, end, uint32_t(c), [](uint32_t v, const Range& r) { return v < r.lo; });
  return it != table && c <= (it - 1)->hi;
}

/// True for characters that the Unicode 12.0 tables of `tokenizers` do not know.
bool newer_than_hf(char32_t c) {
  UVersionInfo age;
  u_charAge(UChar32(c), age);
  return age[0] > 12 || (age[0] == 12 && age[1] > 0);
}

icu::UnicodeString to_icu(const char32_t* s, size_t n) {
  return icu::UnicodeString::fromUTF32(reinterpret_cast<const UChar32*>(s), int32_t(n));
}

void append_icu(std::u32string& out, const icu::UnicodeString& u) {
  for (int32_t k = 0; k < u.length();) {
    const UChar32 c = u.char32At(k);
    out.push_back(char32_t(c));
    k += U16_LENGTH(c);
  }
}

}  // namespace

bool is_whitespace(char32_t c) { return in(tables::kWhitespace, tables::kWhitespaceSize, c); }
bool is_clean_text_removed(char32_t c) {
  return c == 0 || c == 0xFFFD || in(tables::kCleanTextRemoved, tables::kCleanTextRemovedSize, c);
}
bool is_nonspacing_mark(char32_t c) { return in(tables::kNonspacingMark, tables::kNonspacingMarkSize, c); }
bool is_combining_mark(char32_t c) { return in(tables::kCombiningMark, tables::kCombiningMarkSize, c); }
bool is_punctuation(char32_t c) { return in(tables::kPunctuation, tables::kPunctuationSize, c); }
bool is_numeric(char32_t c) { return in(tables::kNumeric, tables::kNumericSize, c); }
bool is_word_char(char32_t c) {
  if (c < 0x80) return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return u_hasBinaryProperty(UChar32(c), UCHAR_ALPHABETIC) || (U_GET_GC_MASK(UChar32(c)) & U_GC_M_MASK) ||
         u_charType(UChar32(c)) == U_DECIMAL_DIGIT_NUMBER || u_charType(UChar32(c)) == U_CONNECTOR_PUNCTUATION ||
         c == 0x200C || c == 0x200D;
}

std::u32string stream_safe(const std::u32string& s) {
  constexpr char32_t kCombiningGraphemeJoiner = 0x034F;
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* nfkd = icu::Normalizer2::getNFKDInstance(status);
  if (U_FAILURE(status)) throw Error(std::string("ICU: no NFKD normalizer: ") + u_errorName(status));
  std::u32string out;
  out.reserve(s.size());
  int run = 0;  // non-starters at the end of `out`, as NFKD would have them
  icu::UnicodeString decomposition;
  for (const char32_t c : s) {
    // Leading and trailing non-starters of c's NFKD decomposition, and whether all of it is.
    int leading = 0, trailing = 0;
    bool all_non_starters = false;
    if (c >= 0xA0) {  // below: no decomposition, combining class 0
      if (nfkd->getDecomposition(UChar32(c), decomposition)) {
        bool starter_seen = false;
        for (int32_t k = 0; k < decomposition.length(); k += U16_LENGTH(decomposition.char32At(k))) {
          if (u_getCombiningClass(decomposition.char32At(k)) == 0) {
            starter_seen = true;
            trailing = 0;
          } else {
            ++trailing;
            if (!starter_seen) ++leading;
          }
        }
        all_non_starters = !starter_seen;
      } else if (u_getCombiningClass(UChar32(c)) != 0) {
        leading = trailing = 1;
        all_non_starters = true;
      }
    }
    if (run + leading > kStreamSafeMaxNonStarters) {
      out.push_back(kCombiningGraphemeJoiner);
      run = 0;
    }
    out.push_back(c);
    run = all_non_starters ? run + leading : trailing;
  }
  return out;
}

std::u32string to_normal_form(const std::u32string& text, NormalForm f) {
  if (std::all_of(text.begin(), text.end(), [](char32_t c) { return c < 0x80; })) return text;  // ASCII: every form
  const std::u32string s = stream_safe(text);
  UErrorCode status = U_ZERO_ERROR;
  const icu::Normalizer2* n = nullptr;
  switch (f) {
    case NormalForm::NFC: n = icu::Normalizer2::getNFCInstance(status); break;
    case NormalForm::NFD: n = icu::Normalizer2::getNFDInstance(status); break;
    case NormalForm::NFKC: n = icu::Normalizer2::getNFKCInstance(status); break;
    case NormalForm::NFKD: n = icu::Normalizer2::getNFKDInstance(status); break;
  }
  if (U_FAILURE(status)) throw Error(std::string("ICU: no normalizer: ") + u_errorName(status));
  std::u32string out;
  out.reserve(s.size());
  size_t start = 0;
  auto flush = [&](size_t end) {
    if (end == start) return;
    const icu::UnicodeString norm = n->normalize(to_icu(s.data() + start, end - start), status);
    if (U_FAILURE(status)) throw Error(std::string("ICU: normalization failed: ") + u_errorName(status));
    append_icu(out, norm);
  };
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] >= 0x80 && newer_than_hf(s[i])) {
      flush(i);
      out.push_back(s[i]);
      start = i + 1;
    }
  }
  flush(s.size());
  return out;
}

std::u32string lowercase_chars(const std::u32string& s) {
  std::u32string out;
  out.reserve(s.size());
  for (char32_t c : s) {
    if (c < 0x80) {
      out.push_back(c >= 'A' && c <= 'Z' ? c + 32 : c);
      continue;
    }
    // One character at a time: Rust's char::to_lowercase has no context (a final
    // sigma stays σ), and full mappings (İ -> i̇) come out as several characters.
    UChar in16[2];
    int32_t n16 = 0;
    U16_APPEND_UNSAFE(in16, n16, UChar32(c));
    UChar buf[8];
    UErrorCode status = U_ZERO_ERROR;
    const int32_t len = u_strToLower(buf, 8, in16, n16, "", &status);
    if (U_FAILURE(status)) {
      out.push_back(c);
      continue;
    }
    for (int32_t k = 0; k < len;) {
      UChar32 l;
      U16_NEXT(buf, k, len, l);
      out.push_back(char32_t(l));
    }
  }
  return out;
}

std::u32string to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); i += utf8_length(uint8_t(s[i]))) out.push_back(code_point_at(s, i));
  return out;
}

std::string to_utf8(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

std::string to_utf8(char32_t c) {
  std::string out;
  append_utf8(out, c);
  return out;
}

namespace {
/// Length of the valid UTF-8 sequence at `s[i]`, or 0 with `*bad` set to the length of
/// the maximal invalid subpart (at least 1), as the Unicode standard defines it.
size_t utf8_sequence(std::string_view s, size_t i, size_t* bad) {
  const uint8_t b = uint8_t(s[i]);
  if (b < 0x80) return 1;
  size_t n;
  uint8_t lo = 0x80, hi = 0xBF;
  if (b >= 0xC2 && b <= 0xDF) n = 1;
  else if (b == 0xE0) n = 2, lo = 0xA0;
  else if (b >= 0xE1 && b <= 0xEC) n = 2;
  else if (b == 0xED) n = 2, hi = 0x9F;
  else if (b >= 0xEE && b <= 0xEF) n = 2;
  else if (b == 0xF0) n = 3, lo = 0x90;
  else if (b >= 0xF1 && b <= 0xF3) n = 3;
  else if (b == 0xF4) n = 3, hi = 0x8F;
  else {
    *bad = 1;
    return 0;
  }
  for (size_t k = 1; k <= n; ++k) {
    const uint8_t c = i + k < s.size() ? uint8_t(s[i + k]) : 0;
    if (i + k >= s.size() || c < lo || c > hi) {
      *bad = k;
      return 0;
    }
    lo = 0x80, hi = 0xBF;
  }
  return n + 1;
}
}  // namespace

std::string utf8_lossy(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  for (size_t i = 0; i < bytes.size();) {
    size_t bad = 0;
    const size_t n = utf8_sequence(bytes, i, &bad);
    if (n) {
      out.append(bytes.substr(i, n));
      i += n;
    } else {
      out += "\xEF\xBF\xBD";
      i += bad;
    }
  }
  return out;
}

bool valid_utf8(std::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    size_t bad = 0;
    const size_t n = utf8_sequence(bytes, i, &bad);
    if (!n) return false;
    i += n;
  }
  return true;
}

}  // namespace vkf::text::hf
