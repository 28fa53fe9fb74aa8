#include "text/hf/regex.hpp"

#include <unicode/regex.h>
#include <unicode/unistr.h>

#include "model/json_text.hpp"  // printable
#include "text/hf/pipeline.hpp"
#include "text/hf/unicode.hpp"
#include "vkformer/error.hpp"

namespace vkf::text::hf {

namespace {
// ICU's time limit for one find(), in steps of its engine (about a millisecond each):
// Oniguruma has none, but an exponential pattern must not hang the caller.
constexpr int32_t kTimeLimit = 2000;
// Oniguruma's \s for Unicode text: \t \n \v \f \r, U+0085 and the separators Z.
constexpr const char* kOnigSpace = "\\t\\n\\x{0B}\\f\\r\\x{85}\\p{Z}";
}  // namespace

std::string onig_to_icu(const std::string& p) {
  std::string out;
  int depth = 0;  // inside [...] (nested classes count)
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[i + 1];
      if (e == 's') {
        out += depth ? std::string(kOnigSpace) : "[" + std::string(kOnigSpace) + "]";
      } else if (e == 'S') {
        // Inside a class, [^...] nests as a set in ICU.
        out += "[^" + std::string(kOnigSpace) + "]";
      } else {
        out += c;
        out += e;
      }
      ++i;
      continue;
    }
    if (c == '[') {
      ++depth;
      out += c;
      // A ']' right after '[' or '[^' is a literal in Oniguruma.
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') {
        out += "\\]";
        ++i;
      }
      continue;
    }
    if (c == ']' && depth > 0) --depth;
    out += c;
  }
  return out;
}

struct Regex::Impl {
  std::unique_ptr<icu::RegexPattern> pattern;
  std::string source;  ///< as tokenizer.json gives it, for errors
};

Regex::Regex(const std::string& pattern, const std::string& where, bool literal)
    : impl_(std::make_unique<Impl>()) {
  impl_->source = pattern;
  UParseError pe;
  UErrorCode status = U_ZERO_ERROR;
  impl_->pattern.reset(icu::RegexPattern::compile(
      icu::UnicodeString::fromUTF8(literal ? pattern : onig_to_icu(pattern)), literal ? UREGEX_LITERAL : 0, pe,
      status));
  if (U_FAILURE(status))
    throw Error(where + " \"" + printable(pattern, 60) + "\" is not a valid regular expression (" +
                u_errorName(status) + ")");
}


Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

std::vector<Span> Regex::find_all(std::string_view text) const {
  std::vector<Span> out;
  if (text.empty()) return out;
  const icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(text.data(), int32_t(text.size())));
  // UTF-16 index -> UTF-8 byte offset.
  std::vector<size_t> byte_at(size_t(u.length()) + 1, text.size());
  for (size_t b = 0, k = 0; b < text.size(); ++k) {
    const size_t n = utf8_length(uint8_t(text[b]));
    byte_at[k] = b;
    if (n == 4) byte_at[++k] = b;  // the low surrogate
    b += n;
  }
  UErrorCode status = U_ZERO_ERROR;
  std::unique_ptr<icu::RegexMatcher> m(impl_->pattern->matcher(u, status));
  m->setTimeLimit(kTimeLimit, status);  // catastrophic backtracking ends in U_REGEX_TIME_OUT
  if (U_FAILURE(status)) throw Error(std::string("ICU regex: ") + u_errorName(status));
  int32_t pos = 0;
  int32_t last_end = -1;
  while (pos <= u.length() && m->find(pos, status) && U_SUCCESS(status)) {
    const int32_t s = m->start(status), e = m->end(status);
    if (s == e && e == last_end) {  // an empty match right after the previous one: step on
      if (pos >= u.length()) break;
      pos += U16_IS_LEAD(u.charAt(pos)) && pos + 1 < u.length() ? 2 : 1;
      continue;
    }
    out.emplace_back(byte_at[size_t(s)], byte_at[size_t(e)]);
    last_end = e;
    pos = e;
  }
  if (status == U_REGEX_TIME_OUT)
    throw Error("regular expression \"" + printable(impl_->source, 60) + "\": one match took more than " +
                std::to_string(kTimeLimit) + " steps of ICU's engine (catastrophic backtracking)");
  if (U_FAILURE(status)) throw Error(std::string("ICU regex: ") + u_errorName(status));
  return out;
}

std::string replace_matches(const Regex& re, const std::string& text, const std::string& content) {
  const auto spans = re.find_all(text);
  if (spans.empty()) return text;
  std::string out;
  size_t last = 0;
  for (const auto& [b, e] : spans) {
    out.append(text, last, b - last);
    out += content;
    last = e;
    check_growth(text.size(), out.size(), "Replace");
  }
  out.append(text, last, std::string::npos);
  return out;
}

void check_growth(size_t before, size_t after, const char* what) {
  if (after > before * kMaxGrowth + kGrowthSlack)
    throw Error(std::string(what) + ": the text grows more than " + std::to_string(kMaxGrowth) + " times (" +
                std::to_string(before) + " bytes to " + std::to_string(after) + " and more)");
}

Regex pattern_regex(const JsonNode& j) {
  const JsonNode p = j.at("pattern");
  if (p.json().is_object() && p.json().size() == 1) {
    if (p.has("String")) return Regex(p.str("String"), p.file() + ": " + p.path() + ".String", true);
    if (p.has("Regex")) return Regex(p.str("Regex"), p.file() + ": " + p.path() + ".Regex");
  }
  p.expected("{\"String\": ...} or {\"Regex\": ...}");
}

}  // namespace vkf::text::hf
