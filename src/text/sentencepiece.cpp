// SentencePiece unigram tokenizer, id for id the one of the npm package
// @energetic-ai/embeddings@0.2.0 (lib/tokenizer.ts, lib/trie.ts), quirks included:
// docs/tokenizer.md lists them, tests/sentencepiece_npm.py checks them against Node.
#include "text/sentencepiece.hpp"

#include <unicode/normalizer2.h>
#include <unicode/unistr.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <unordered_map>

#include "model/json_text.hpp"
#include "text/hf/unicode.hpp"
#include "text/trie_links.hpp"
#include "text/utf8.hpp"
#include "vkformer/error.hpp"

namespace vkf::text {
namespace {

constexpr char32_t kSeparator = 0x2581;  // "▁", SentencePiece's space
constexpr const char* kSeparatorUtf8 = "\xE2\x96\x81";

/// Code points of UTF-8 `s` (strict; the error names `what` and the byte offset).
std::u32string code_points(std::string_view s, const std::string& what) {
  const std::vector<uint32_t> cps = decode_utf8(s, what);
  return {cps.begin(), cps.end()};
}

/// The package's processInput + stringToChars: NFKC (ICU, as String.prototype.normalize
/// in Node), every U+0020 to "▁", a leading "▁" unless the result is empty; code points.
std::u32string normalize(std::string_view text) {
  // ICU counts in int32 UTF-16 units; sizes past that are no text to embed anyway.
  if (text.size() > size_t(INT32_MAX) / 4) throw Error("tokenizer input: longer than 512 MiB");
  std::u32string cps = code_points(text, "tokenizer input");
  const bool ascii = std::all_of(cps.begin(), cps.end(), [](char32_t c) { return c < 0x80; });
  if (!ascii) {  // ASCII is already NFKC: skip ICU for it
    cps = hf::stream_safe(cps);  // bounds canonical reordering (quadratic in a run of marks)
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* nfkc = icu::Normalizer2::getNFKCInstance(status);
    if (U_FAILURE(status)) throw Error(std::string("ICU: no NFKC normalizer: ") + u_errorName(status));
    const icu::UnicodeString src = icu::UnicodeString::fromUTF32(
        reinterpret_cast<const UChar32*>(cps.data()), int32_t(cps.size()));
    const icu::UnicodeString norm = nfkc->normalize(src, status);
    if (U_FAILURE(status)) throw Error(std::string("ICU: NFKC normalization failed: ") + u_errorName(status));
    cps.clear();
    for (int32_t k = 0; k < norm.length();) {
      const UChar32 c = norm.char32At(k);
      cps.push_back(char32_t(c));
      k += U16_LENGTH(c);
    }
  }
  if (cps.empty()) return cps;
  std::u32string out;
  out.reserve(cps.size() + 1);
  out.push_back(kSeparator);
  for (char32_t c : cps) out.push_back(c == U' ' ? kSeparator : c);
  return out;
}

class SentencePieceUnigram final : public Tokenizer {
 public:
  SentencePieceUnigram(const nlohmann::json& j, const std::string& file);
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  uint32_t vocab_size() const override { return uint32_t(pieces_.size()); }

 private:
  struct Node {
    bool end = false;
    double score = 0;
    int32_t id = 0;
  };
  /// Child of trie node `node` along code point `c`, or -1.
  int32_t child(int32_t node, char32_t c) const {
    auto it = edges_.find(edge_key(node, c));
    return it == edges_.end() ? -1 : it->second;
  }
  static uint64_t edge_key(int32_t node, char32_t c) { return (uint64_t(node) << 21) | c; }
  void insert(const std::u32string& piece, double score, int32_t id);

  std::vector<std::string> pieces_;
  std::vector<uint32_t> utf16_len_;  ///< JS .length of each piece: the backtracking step
  std::vector<Node> nodes_{1};       ///< the trie; node 0 is the root
  std::unordered_map<uint64_t, int32_t> edges_;
  TrieLinks links_;  ///< suffix links: every piece ending at a position in one pass
  int32_t unk_ = 0, reserved_ = 0;
};

SentencePieceUnigram::SentencePieceUnigram(const nlohmann::json& j, const std::string& file) {
  auto field = [&](const char* name) -> const nlohmann::json& {
    auto it = j.find(name);
    if (it == j.end()) throw Error(file + ": \"" + name + "\" is missing");
    return *it;
  };
  const nlohmann::json& normalizer = field("normalizer");
  if (normalizer != "nfkc") throw Error(file + ": \"normalizer\" must be \"nfkc\", got " + brief_json(normalizer));
  const nlohmann::json& pieces = field("pieces");
  if (!pieces.is_array() || pieces.empty())
    throw Error(file + ": \"pieces\" must be a non-empty array of [piece, score]");
  if (pieces.size() > size_t(INT32_MAX)) throw Error(file + ": \"pieces\" has more than 2^31-1 entries");
  const int64_t n = int64_t(pieces.size());
  auto int_field = [&](const char* name, int64_t lo, int64_t hi) {
    const nlohmann::json& v = field(name);
    if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
      throw Error(file + ": \"" + name + "\" must be an integer in [" + std::to_string(lo) + ", " +
                  std::to_string(hi) + "], got " + brief_json(v));
    return int32_t(v.get<int64_t>());
  };
  unk_ = int_field("unk_id", 0, n - 1);
  reserved_ = int_field("reserved_ids", 0, n);

  pieces_.reserve(pieces.size());
  utf16_len_.reserve(pieces.size());
  for (int64_t i = 0; i < n; ++i) {
    const nlohmann::json& p = pieces[i];
    // A null score is what the package's vocab.json has for ":" and a few others;
    // in JS null + x == x, so it counts as 0.
    if (!p.is_array() || p.size() != 2 || !p[0].is_string() || !(p[1].is_number() || p[1].is_null())) {
      throw Error(file + ": \"pieces\"[" + std::to_string(i) + "] must be [string, number], got " +
                  brief_json(p, 60));
    }
    const double score = p[1].is_null() ? 0.0 : p[1].get<double>();
    if (!std::isfinite(score))
      throw Error(file + ": \"pieces\"[" + std::to_string(i) + "] has a score that is not finite");
    const std::string& s = p[0].get_ref<const std::string&>();
    const std::u32string cps = code_points(s, file + ": \"pieces\"[" + std::to_string(i) + "]");
    uint32_t len16 = 0;
    for (char32_t c : cps) len16 += c > 0xFFFF ? 2 : 1;
    pieces_.push_back(s);
    utf16_len_.push_back(len16);
    // Reserved ids are not matched; "" inserts nothing, as in the package.
    if (i >= reserved_) insert(cps, score, int32_t(i));
  }
  // Backtracking steps back by the JS length of the chosen piece; unknowns are unk_id.
  if (utf16_len_[unk_] == 0)
    throw Error(file + ": \"pieces\"[" + std::to_string(unk_) + "] (the unk_id piece) must not be empty");
  std::vector<std::pair<int32_t, std::pair<uint32_t, int32_t>>> edges;
  edges.reserve(edges_.size());
  for (const auto& [key, to] : edges_) edges.push_back({int32_t(key >> 21), {uint32_t(key & 0x1FFFFF), to}});
  links_.build(nodes_.size(), edges, [this](int32_t node, uint32_t c) { return child(node, char32_t(c)); },
               [this](int32_t node) { return nodes_[size_t(node)].end; });
}

void SentencePieceUnigram::insert(const std::u32string& piece, double score, int32_t id) {
  if (piece.empty()) return;
  int32_t node = 0;
  for (char32_t c : piece) {
    int32_t next = child(node, c);
    if (next < 0) {
      next = int32_t(nodes_.size());
      nodes_.emplace_back();
      edges_.emplace(edge_key(node, c), next);
    }
    node = next;
  }
  // A repeated piece takes the score and id of its last occurrence (Trie.insert overwrites).
  nodes_[node] = {true, score, id};
}

std::vector<int32_t> SentencePieceUnigram::encode(std::string_view text) const {
  const std::u32string sym = normalize(text);
  const size_t n = sym.size();
  // best[e] == 0 means "unset" in the package, even when a path truly scores 0.
  std::vector<double> best(n + 1, 0.0);
  std::vector<int32_t> words(n + 1, unk_);
  auto relax = [&](size_t start, size_t end, double piece_score, int32_t id) {
    const double score = piece_score + best[start];
    if (best[end] == 0 || score >= best[end]) {  // ties go to the later edge
      best[end] = score;
      words[end] = id;
    }
  };
  // The package gathers all edges first and then relaxes them by end position and
  // ascending start, which the trie's suffix links give directly (best[start] is
  // final when an edge from it is relaxed). An unknown symbol scoring 0 is the edge
  // (i, i + 1) when no piece starts at i, so the starts are found in a first pass.
  // (When only longer pieces match at i, there is no one-symbol edge at all, and
  // i + 1 may stay unreached.)
  auto child_of = [this](int32_t node, uint32_t c) { return child(node, char32_t(c)); };
  std::vector<uint8_t> matched(n, 0);
  links_.scan(sym.data(), n, child_of,
              [&](size_t end, int32_t node) { matched[end - size_t(links_.depth[size_t(node)])] = 1; });
  size_t done = 0;  // the starts before this have had their unknown edge considered
  links_.scan(sym.data(), n, child_of, [&](size_t end, int32_t node) {
    for (; done + 1 < end; ++done)
      if (!matched[done]) relax(done, done + 1, 0.0, unk_);
    relax(end - size_t(links_.depth[size_t(node)]), end, nodes_[node].score, nodes_[node].id);
  });
  for (; done < n; ++done)
    if (!matched[done]) relax(done, done + 1, 0.0, unk_);
  // Walk back by the UTF-16 length of each piece, as the package does (a piece outside
  // the BMP steps back further than the symbols it covered), merging runs of unknowns.
  std::vector<int32_t> out;
  for (size_t pos = n; pos > 0;) {
    const int32_t id = words[pos];
    if (!(id == unk_ && !out.empty() && out.back() == unk_)) out.push_back(id);
    const size_t step = utf16_len_[id];
    pos = step >= pos ? 0 : pos - step;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::string SentencePieceUnigram::decode(const std::vector<int32_t>& ids) const {
  std::string joined;
  for (int32_t id : ids) {
    if (id < 0 || size_t(id) >= pieces_.size())
      throw Error("decode: id " + std::to_string(id) + " is outside the vocabulary [0, " +
                  std::to_string(pieces_.size()) + ")");
    if (id >= reserved_) joined += pieces_[id];
  }
  std::string out;
  out.reserve(joined.size());
  for (size_t i = 0; i < joined.size();) {
    if (joined.compare(i, 3, kSeparatorUtf8) == 0) {
      if (i != 0) out += ' ';  // the leading "▁" is not text
      i += 3;
    } else {
      out += joined[i++];
    }
  }
  return out;
}

}  // namespace

std::unique_ptr<Tokenizer> load_sentencepiece_unigram(const nlohmann::json& j, const std::string& file) {
  return std::make_unique<SentencePieceUnigram>(j, file);
}

}  // namespace vkf::text
