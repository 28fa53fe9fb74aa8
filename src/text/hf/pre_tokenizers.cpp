// Pre-tokenizers of `tokenizers` 0.19 (pre_tokenizers/*.rs and NormalizedString::split).
#include <array>

#include "text/hf/byte_level.hpp"
#include "text/hf/pipeline.hpp"
#include "text/hf/regex.hpp"
#include "text/hf/unicode.hpp"

namespace vkf::text::hf {

const char* const kGpt2Pattern = R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

namespace {

struct ByteTable {
  std::array<std::string, 256> chars;
  std::array<char32_t, 256> cps;
  ByteTable() {
    uint32_t n = 0;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      cps[b] = printable ? b : 256 + n++;
      chars[b] = to_utf8(cps[b]);
    }
  }
};
const ByteTable& byte_table() {
  static const ByteTable t;
  return t;
}

}  // namespace

const std::string& byte_level_char(uint8_t b) { return byte_table().chars[b]; }
int byte_level_byte(char32_t c) {
  if (c < 256 && byte_table().cps[c] == c) return int(c);
  if (c >= 256 && c < 256 + 68) {
    for (int b = 0; b < 256; ++b)
      if (byte_table().cps[b] == c) return b;
  }
  return -1;
}

namespace {

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior behavior(const JsonNode& j, Behavior def) {
  if (!j.has("behavior")) return def;
  const JsonNode b = j.at("behavior");
  const std::string s = b.as_string();
  if (s == "Removed") return Behavior::Removed;
  if (s == "Isolated") return Behavior::Isolated;
  if (s == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (s == "MergedWithNext") return Behavior::MergedWithNext;
  if (s == "Contiguous") return Behavior::Contiguous;
  b.expected("one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

/// A stretch of a piece's text (byte offsets) and whether the pattern matched it.
struct Match {
  size_t b, e;
  bool matched;
};

/// HF's find_matches for a character predicate: each matching character on its own.
template <class Pred>
std::vector<Match> char_matches(const std::string& s, Pred pred) {
  std::vector<Match> out;
  size_t last = 0;
  for (size_t i = 0; i < s.size();) {
    const size_t n = utf8_length(uint8_t(s[i]));
    if (pred(code_point_at(s, i))) {
      if (last < i) out.push_back({last, i, false});
      out.push_back({i, i + n, true});
      last = i + n;
    }
    i += n;
  }
  if (last < s.size()) out.push_back({last, s.size(), false});
  return out;
}

/// HF's find_matches for a regex: the matches and the stretches between them.
std::vector<Match> regex_matches(const std::string& s, const Regex& re, bool invert) {
  std::vector<Match> out;
  size_t prev = 0;
  for (const auto& [b, e] : re.find_all(s)) {
    if (prev != b) out.push_back({prev, b, invert});
    out.push_back({b, e, !invert});
    prev = e;
  }
  if (prev != s.size()) out.push_back({prev, s.size(), invert});
  return out;
}

/// NormalizedString::split: the pieces of `p` that `behavior` keeps, empty ones dropped.
void split_into(Pieces& out, const Piece& p, const std::vector<Match>& ms, Behavior behavior) {
  std::vector<Match> parts;  // here `matched` means "remove"
  bool previous = false;
  switch (behavior) {
    case Behavior::Isolated:
      for (const Match& m : ms) parts.push_back({m.b, m.e, false});
      break;
    case Behavior::Removed:
      parts = ms;
      break;
    case Behavior::Contiguous:
      for (const Match& m : ms) {
        if (m.matched == previous && !parts.empty()) parts.back().e = m.e;
        else parts.push_back({m.b, m.e, false});
        previous = m.matched;
      }
      break;
    case Behavior::MergedWithPrevious:
      for (const Match& m : ms) {
        if (m.matched && !previous && !parts.empty()) parts.back().e = m.e;
        else parts.push_back({m.b, m.e, false});
        previous = m.matched;
      }
      break;
    case Behavior::MergedWithNext:
      for (auto it = ms.rbegin(); it != ms.rend(); ++it) {
        if (it->matched && !previous && !parts.empty()) parts.back().b = it->b;
        else parts.push_back({it->b, it->e, false});
        previous = it->matched;
      }
      std::reverse(parts.begin(), parts.end());
      break;
  }
  for (const Match& m : parts)
    if (!m.matched && m.e > m.b) out.push_back({p.text.substr(m.b, m.e - m.b), p.at_start && m.b == 0, -1});
}

/// Replaces every piece that is not an added token by what `f(piece, out)` appends.
template <class F>
void split_each(Pieces& pieces, F f) {
  Pieces out;
  out.reserve(pieces.size());
  for (const Piece& p : pieces) {
    if (p.added_id >= 0) out.push_back(p);
    else if (!p.text.empty()) f(p, out);
  }
  pieces = std::move(out);
}

class BertPreTokenizer final : public PreTokenizer {
 public:
  void pre_tokenize(Pieces& pieces) const override {
    split_each(pieces, [](const Piece& p, Pieces& out) {
      split_into(out, p, char_matches(p.text, is_whitespace), Behavior::Removed);
    });
    split_each(pieces, [](const Piece& p, Pieces& out) {
      split_into(out, p, char_matches(p.text, is_punctuation), Behavior::Isolated);
    });
  }
};

class ByteLevel final : public PreTokenizer {
 public:
  explicit ByteLevel(const JsonNode& j)
      : prefix_space_(j.boolean("add_prefix_space", true)),
        regex_(j.boolean("use_regex", true) ? std::make_unique<Regex>(kGpt2Pattern, "GPT-2 pattern") : nullptr) {}
  void pre_tokenize(Pieces& pieces) const override {
    split_each(pieces, [&](const Piece& piece, Pieces& out) {
      Piece p = piece;
      if (prefix_space_ && p.text[0] != ' ') p.text.insert(0, " ");
      if (regex_) split_into(out, p, regex_matches(p.text, *regex_, false), Behavior::Isolated);
      else out.push_back(p);
    });
    for (Piece& p : pieces) {
      if (p.added_id >= 0) continue;
      std::string mapped;
      mapped.reserve(p.text.size() * 2);
      for (char c : p.text) mapped += byte_level_char(uint8_t(c));
      p.text = std::move(mapped);
    }
  }

 private:
  bool prefix_space_;
  std::unique_ptr<Regex> regex_;
};

class Metaspace final : public PreTokenizer {
 public:
  explicit Metaspace(const JsonNode& j)
      : replacement_(one_char(j, "replacement")),
        rep_(to_utf8(replacement_)),
        scheme_(prepend_scheme(j)),
        split_(j.boolean("split", true)) {}
  void pre_tokenize(Pieces& pieces) const override {
    split_each(pieces, [&](const Piece& piece, Pieces& out) {
      Piece p{std::string(), piece.at_start, -1};
      for (char c : piece.text) {
        if (c == ' ') p.text += rep_;
        else p.text += c;
      }
      const bool starts = p.text.compare(0, rep_.size(), rep_) == 0;
      if (!starts && (scheme_ == PrependScheme::Always || (scheme_ == PrependScheme::First && p.at_start)))
        p.text.insert(0, rep_);
      if (split_)
        split_into(out, p, char_matches(p.text, [&](char32_t c) { return c == replacement_; }),
                   Behavior::MergedWithNext);
      else out.push_back(std::move(p));
    });
  }

 private:
  char32_t replacement_;
  std::string rep_;
  PrependScheme scheme_;
  bool split_;
};

class Whitespace final : public PreTokenizer {
 public:
  // \w+|[^\w\s]+ kept, the rest removed: maximal runs of word characters or of others.
  void pre_tokenize(Pieces& pieces) const override {
    split_each(pieces, [](const Piece& p, Pieces& out) {
      int run = -1;  // 0: word run, 1: other run
      size_t run_start = 0;
      auto close = [&](size_t end) {
        if (run >= 0) out.push_back({p.text.substr(run_start, end - run_start), p.at_start && run_start == 0, -1});
        run = -1;
      };
      for (size_t byte = 0; byte < p.text.size(); byte += utf8_length(uint8_t(p.text[byte]))) {
        const char32_t c = code_point_at(p.text, byte);
        const int kind = is_word_char(c) ? 0 : is_whitespace(c) ? -1 : 1;
        if (kind != run) {
          close(byte);
          run = kind;
          run_start = byte;
        }
      }
      close(p.text.size());
    });
  }
};

template <class Pred>
class PredicateSplit final : public PreTokenizer {
 public:
  PredicateSplit(Pred pred, Behavior b) : pred_(pred), behavior_(b) {}
  void pre_tokenize(Pieces& pieces) const override {
    split_each(pieces, [&](const Piece& p, Pieces& out) { split_into(out, p, char_matches(p.text, pred_), behavior_); });
  }

 private:
  Pred pred_;
  Behavior behavior_;
};
template <class Pred>
std::unique_ptr<PreTokenizer> predicate_split(Pred pred, Behavior b) {
  return std::make_unique<PredicateSplit<Pred>>(pred, b);
}

class Split final : public PreTokenizer {
 public:
  explicit Split(const JsonNode& j)
      : regex_(pattern_regex(j)), behavior_(behavior(j, Behavior::Removed)), invert_(j.boolean("invert", false)) {
    j.at("behavior").as_string();  // required, as in `tokenizers`
  }
  void pre_tokenize(Pieces& pieces) const override {
    split_each(pieces, [&](const Piece& p, Pieces& out) {
      split_into(out, p, regex_matches(p.text, regex_, invert_), behavior_);
    });
  }

 private:
  Regex regex_;
  Behavior behavior_;
  bool invert_;
};

class Sequence final : public PreTokenizer {
 public:
  Sequence(const JsonNode& j, int depth) {
    for (const JsonNode& e : j.at("pretokenizers").elements()) parts_.push_back(make_pre_tokenizer(e, depth + 1));
  }
  void pre_tokenize(Pieces& pieces) const override {
    for (const auto& p : parts_) p->pre_tokenize(pieces);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

char32_t one_char(const JsonNode& j, const char* key) {
  const JsonNode v = j.at(key);
  const std::string s = v.as_string();
  if (!valid_utf8(s) || to_u32(s).size() != 1) v.expected("one character");
  return to_u32(s)[0];
}

PrependScheme prepend_scheme(const JsonNode& j) {
  PrependScheme s = PrependScheme::Always;
  if (j.has("prepend_scheme")) {
    const JsonNode v = j.at("prepend_scheme");
    const std::string name = v.as_string();
    if (name == "always") s = PrependScheme::Always;
    else if (name == "first") s = PrependScheme::First;
    else if (name == "never") s = PrependScheme::Never;
    else v.expected("\"always\", \"first\" or \"never\"");
  }
  if (j.opt_bool("add_prefix_space") == false) {
    if (s != PrependScheme::Never) j.at("add_prefix_space").fail("is false but prepend_scheme is not \"never\"");
    s = PrependScheme::Never;
  }
  return s;
}

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const JsonNode& j, int depth) {
  check_depth(j, depth);
  const std::string t = j.type();
  if (t == "BertPreTokenizer") return std::make_unique<BertPreTokenizer>();
  if (t == "ByteLevel") return std::make_unique<ByteLevel>(j);
  if (t == "Metaspace") return std::make_unique<Metaspace>(j);
  if (t == "Whitespace") return std::make_unique<Whitespace>();
  if (t == "WhitespaceSplit") return predicate_split(is_whitespace, Behavior::Removed);
  if (t == "Punctuation") return predicate_split(is_punctuation, behavior(j, Behavior::Isolated));
  if (t == "Digits")
    return predicate_split(is_numeric,
                           j.boolean("individual_digits", false) ? Behavior::Isolated : Behavior::Contiguous);
  if (t == "CharDelimiterSplit") {
    const char32_t d = one_char(j, "delimiter");
    return predicate_split([d](char32_t c) { return c == d; }, Behavior::Removed);
  }
  if (t == "Split") return std::make_unique<Split>(j);
  if (t == "Sequence") return std::make_unique<Sequence>(j, depth);
  j.unsupported_type(
      "BertPreTokenizer, ByteLevel, Metaspace, Whitespace, WhitespaceSplit, Punctuation, Digits, "
      "CharDelimiterSplit, Split, Sequence");
}

}  // namespace vkf::text::hf
