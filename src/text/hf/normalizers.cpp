// Normalizers of `tokenizers` 0.19 (normalizers/*.rs), on whole strings.
#include <algorithm>

#include "text/hf/pipeline.hpp"
#include "text/hf/regex.hpp"
#include "text/hf/unicode.hpp"

namespace vkf::text::hf {
namespace {

/// A normalizer that works on code points.
class CharNormalizer : public Normalizer {
 public:
  void normalize(std::string& s) const final {
    std::u32string cps = to_u32(s);
    apply(cps);
    s = to_utf8(cps);
  }
  virtual void apply(std::u32string& s) const = 0;
};

bool is_chinese_char(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

template <class Keep>
void filter(std::u32string& s, Keep keep) {
  s.erase(std::remove_if(s.begin(), s.end(), [&](char32_t c) { return !keep(c); }), s.end());
}

class BertNormalizer final : public CharNormalizer {
 public:
  explicit BertNormalizer(const JsonNode& j)
      : clean_text_(j.boolean("clean_text", true)),
        chinese_(j.boolean("handle_chinese_chars", true)),
        lowercase_(j.boolean("lowercase", true)),
        strip_accents_(j.opt_bool("strip_accents").value_or(lowercase_)) {}
  void apply(std::u32string& s) const override {
    if (clean_text_) {
      filter(s, [](char32_t c) { return !is_clean_text_removed(c); });
      for (char32_t& c : s)
        if (is_whitespace(c)) c = U' ';
    }
    if (chinese_ && std::any_of(s.begin(), s.end(), is_chinese_char)) {
      std::u32string out;
      for (char32_t c : s) {
        if (is_chinese_char(c)) {
          out += U' ';
          out += c;
          out += U' ';
        } else {
          out += c;
        }
      }
      s = std::move(out);
    }
    if (strip_accents_) {
      s = to_normal_form(s, NormalForm::NFD);
      filter(s, [](char32_t c) { return !is_nonspacing_mark(c); });
    }
    if (lowercase_) s = lowercase_chars(s);
  }

 private:
  bool clean_text_, chinese_, lowercase_, strip_accents_;
};

class UnicodeNormalizer final : public CharNormalizer {
 public:
  explicit UnicodeNormalizer(NormalForm f) : form_(f) {}
  void apply(std::u32string& s) const override { s = to_normal_form(s, form_); }

 private:
  NormalForm form_;
};

class Lowercase final : public CharNormalizer {
 public:
  void apply(std::u32string& s) const override { s = lowercase_chars(s); }
};

class StripAccents final : public CharNormalizer {
 public:
  void apply(std::u32string& s) const override {
    filter(s, [](char32_t c) { return !is_combining_mark(c); });
  }
};

class Nmt final : public CharNormalizer {
 public:
  void apply(std::u32string& s) const override {
    filter(s, [](char32_t c) {
      return !((c >= 0x01 && c <= 0x08) || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || c == 0x8F ||
               c == 0x9F);
    });
    for (char32_t& c : s)
      if (c == 0x09 || c == 0x0A || c == 0x0C || c == 0x0D || c == 0x1680 || (c >= 0x200B && c <= 0x200F) ||
          c == 0x2028 || c == 0x2029 || c == 0x2581 || c == 0xFEFF || c == 0xFFFD)
        c = U' ';
  }
};

class Strip final : public CharNormalizer {
 public:
  explicit Strip(const JsonNode& j) : left_(j.boolean("strip_left", true)), right_(j.boolean("strip_right", true)) {}
  void apply(std::u32string& s) const override {
    size_t b = 0, e = s.size();
    if (left_)
      while (b < e && is_whitespace(s[b])) ++b;
    if (right_)
      while (e > b && is_whitespace(s[e - 1])) --e;
    s = s.substr(b, e - b);
  }

 private:
  bool left_, right_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(const JsonNode& j) : prepend_(j.str("prepend")) {}
  void normalize(std::string& s) const override {
    if (!s.empty()) s.insert(0, prepend_);
  }

 private:
  std::string prepend_;
};

class Replace final : public Normalizer {
 public:
  explicit Replace(const JsonNode& j) : regex_(pattern_regex(j)), content_(j.str("content")) {}
  void normalize(std::string& s) const override { s = replace_matches(regex_, s, content_); }

 private:
  Regex regex_;
  std::string content_;
};

class Sequence final : public Normalizer {
 public:
  Sequence(const JsonNode& j, int depth) {
    for (const JsonNode& e : j.at("normalizers").elements()) flatten_into<Sequence>(parts_, make_normalizer(e, depth + 1));
  }
  std::vector<std::unique_ptr<Normalizer>>& parts() { return parts_; }
  void normalize(std::string& s) const override {
    const size_t before = s.size();
    for (const auto& n : parts_) {
      n->normalize(s);
      check_growth(before, s.size(), "the normalizers");
    }
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

void check_depth(const JsonNode& j, int depth) {
  if (depth > kMaxDepth) j.fail("is nested more than " + std::to_string(kMaxDepth) + " deep");
}

std::unique_ptr<Normalizer> make_normalizer(const JsonNode& j, int depth) {
  check_depth(j, depth);
  const std::string t = j.type();
  if (t == "BertNormalizer") return std::make_unique<BertNormalizer>(j);
  if (t == "NFC") return std::make_unique<UnicodeNormalizer>(NormalForm::NFC);
  if (t == "NFD") return std::make_unique<UnicodeNormalizer>(NormalForm::NFD);
  if (t == "NFKC") return std::make_unique<UnicodeNormalizer>(NormalForm::NFKC);
  if (t == "NFKD") return std::make_unique<UnicodeNormalizer>(NormalForm::NFKD);
  if (t == "Lowercase") return std::make_unique<Lowercase>();
  if (t == "StripAccents") return std::make_unique<StripAccents>();
  if (t == "Nmt") return std::make_unique<Nmt>();
  if (t == "Strip") return std::make_unique<Strip>(j);
  if (t == "Prepend") return std::make_unique<Prepend>(j);
  if (t == "Replace") return std::make_unique<Replace>(j);
  if (t == "Precompiled") return make_precompiled(j);
  if (t == "Sequence") return std::make_unique<Sequence>(j, depth);
  j.unsupported_type(
      "BertNormalizer, NFC, NFD, NFKC, NFKD, Lowercase, StripAccents, Nmt, Strip, Prepend, Replace, Precompiled, "
      "Sequence");
}

}  // namespace vkf::text::hf
