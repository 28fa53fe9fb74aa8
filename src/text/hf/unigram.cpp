// The Unigram model (models/unigram/model.rs, encode_optimized): Viterbi over
// the byte positions of a word, candidates from a byte trie of the pieces;
// where no piece covers a whole character, that character is an unknown scoring
// min_score - 10, and runs of unknowns are fused into one unk token (or, with
// byte_fallback, into <0xXX> byte tokens when all of them exist).
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

#include "text/hf/models.hpp"
#include "text/hf/unicode.hpp"
#include "text/trie_links.hpp"
#include "vkformer/error.hpp"

namespace vkf::text::hf {
namespace {

/// A score as HF's tokenizers reads it. serde_json (without its float_roundtrip
/// feature) parses a decimal as its digits, an integer, then one multiplication or
/// division by a power of ten: for some 17-digit numbers 1 ulp off the correctly
/// rounded value `d` nlohmann gives. In a Viterbi tie that last bit picks the path,
/// so the same rounding is applied here. The digits are d's shortest form, which is
/// what serde_json and Python write.
double serde_json_value(double d) {
  static const std::vector<double> pow10 = [] {
    std::vector<double> p(309);
    for (int i = 0; i < 309; ++i) p[size_t(i)] = std::strtod(("1e" + std::to_string(i)).c_str(), nullptr);
    return p;
  }();
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, std::fabs(d), std::chars_format::scientific);
  const std::string s(buf, r.ptr);  // "1.9963129085678197e+00"
  const size_t e = s.find('e');
  uint64_t significand = 0;
  int digits = 0;
  for (size_t i = 0; i < e; ++i)
    if (s[i] != '.') significand = significand * 10 + uint64_t(s[i] - '0'), ++digits;
  int exponent = std::atoi(s.c_str() + e + 1) - (digits - 1);
  double f = double(significand);
  while (std::abs(exponent) > 308) {  // serde_json's loop for exponents past its table
    if (f == 0 || exponent > 0) return d;
    f /= 1e308;
    exponent += 308;
  }
  f = exponent >= 0 ? f * pow10[size_t(exponent)] : f / pow10[size_t(-exponent)];
  return std::signbit(d) ? -f : f;
}

class Unigram final : public Model {
 public:
  explicit Unigram(const JsonNode& j) : where_(j.file() + ": " + j.path()) {
    const std::vector<JsonNode> vocab = j.at("vocab").elements();
    if (vocab.size() > size_t(INT32_MAX)) j.at("vocab").fail("has too many entries");
    if (j.has("unk_id")) {
      if (vocab.empty()) j.at("vocab").fail("is empty, but unk_id is set");
      unk_ = int32_t(j.at("unk_id").as_int(0, int64_t(vocab.size()) - 1));
    }
    byte_fallback_ = j.boolean("byte_fallback", false);
    for (size_t i = 0; i < vocab.size(); ++i) {
      const JsonNode& e = vocab[i];
      if (!e.json().is_array() || e.json().size() != 2 || !e.json()[0].is_string() || !e.json()[1].is_number())
        e.expected("[piece, score]");
      const std::string piece = e.json()[0].get<std::string>();
      const double score = serde_json_value(e.json()[1].get<double>());
      if (!std::isfinite(score)) e.fail("has a score that is not finite");
      pieces_.push_back(piece);
      scores_.push_back(score);
      ids_[piece] = int32_t(i);
      min_score_ = std::min(min_score_, score);
      insert(piece, int32_t(i));
    }
    std::vector<std::pair<int32_t, std::pair<uint32_t, int32_t>>> edges;
    edges.reserve(edges_.size());
    for (const auto& [key, to] : edges_) edges.push_back({int32_t(key >> 8), {uint32_t(key & 0xFF), to}});
    links_.build(node_id_.size(), edges, [this](int32_t node, uint32_t b) { return child(node, uint8_t(b)); },
                 [this](int32_t node) { return node_id_[size_t(node)] >= 0; });
  }

  void tokenize(const std::string& word, std::vector<Token>& out, WordCache& cache) const override {
    auto it = cache.find(word);
    if (it == cache.end()) it = cache.emplace(word, encode(word)).first;
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  std::optional<int32_t> token_to_id(const std::string& t) const override {
    auto it = ids_.find(t);
    if (it == ids_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::string> id_to_token(int32_t id) const override {
    if (id < 0 || size_t(id) >= pieces_.size()) return std::nullopt;
    return pieces_[size_t(id)];
  }
  size_t vocab_size() const override { return pieces_.size(); }
  size_t id_bound() const override { return pieces_.size(); }

 private:
  int32_t child(int32_t node, uint8_t b) const {
    auto it = edges_.find((uint64_t(node) << 8) | b);
    return it == edges_.end() ? -1 : it->second;
  }
  void insert(const std::string& piece, int32_t id) {
    int32_t node = 0;
    for (char c : piece) {
      int32_t next = child(node, uint8_t(c));
      if (next < 0) {
        next = int32_t(node_id_.size());
        node_id_.push_back(-1);
        edges_.emplace((uint64_t(node) << 8) | uint8_t(c), next);
      }
      node = next;
    }
    node_id_[size_t(node)] = id;  // a repeated piece: its last id, as HF's token map
  }

  std::vector<Token> encode(const std::string& s) const {
    struct Node {
      int32_t id = 0;
      double score = 0;
      int64_t start = -1;
    };
    const size_t n = s.size();
    std::vector<Node> best(n + 1);
    const double unk_score = min_score_ - 10.0;
    // Pieces by end position, each end's by ascending start (the suffix links), as
    // HF's loop over starts relaxes each end's edges; best[start] is final when an
    // edge from it is relaxed. A character no piece of exactly its length covers
    // gets an unknown edge, the last one into its end.
    auto unknown = [&](size_t start) {
      if (!unk_) throw Error(where_ + ": the text has a character no piece covers, and unk_id is not set");
      const double cand = unk_score + best[start].score;
      Node& t = best[std::min(start + utf8_length(uint8_t(s[start])), n)];
      if (t.start < 0 || cand > t.score) t = {*unk_, cand, int64_t(start)};
    };
    size_t next_char = 0;  // the next character start whose unknown edge is due
    bool single = false;   // whether a piece covers the character at next_char exactly
    auto flush = [&](size_t upto) {  // the unknown edges ending at or before `upto`
      while (next_char < n && next_char + utf8_length(uint8_t(s[next_char])) <= upto) {
        if (!single) unknown(next_char);
        next_char += utf8_length(uint8_t(s[next_char]));
        single = false;
      }
    };
    links_.scan(s.data(), n, [this](int32_t node, uint32_t b) { return child(node, uint8_t(b)); },
                [&](size_t end, int32_t node) {
                  flush(end - 1);
                  const size_t start = end - size_t(links_.depth[size_t(node)]);
                  const int32_t id = node_id_[size_t(node)];
                  const double cand = scores_[size_t(id)] + best[start].score;
                  Node& t = best[end];
                  if (t.start < 0 || cand > t.score) t = {id, cand, int64_t(start)};
                  if (start == next_char && end - start == utf8_length(uint8_t(s[start]))) single = true;
                });
    flush(n + 4);
    // Back from the end; runs of unknowns become one string.
    std::vector<std::string> strings;
    size_t unk_end = 0;  // the end of the run of unknowns being gathered, or 0
    for (size_t end = n; end > 0;) {
      const Node& nd = best[end];
      const size_t start = size_t(nd.start);
      if (unk_ && nd.id == *unk_) {
        if (!unk_end) unk_end = end;
      } else {
        if (unk_end) strings.push_back(s.substr(end, unk_end - end)), unk_end = 0;
        strings.push_back(s.substr(start, end - start));
      }
      end = start;
    }
    if (unk_end) strings.push_back(s.substr(0, unk_end));
    std::vector<Token> out;
    for (auto it = strings.rbegin(); it != strings.rend(); ++it) {
      if (const auto id = token_to_id(*it)) {
        out.push_back({*id, *it});
        continue;
      }
      if (byte_fallback_ && append_bytes(*it, out)) continue;
      out.push_back({unk_.value_or(0), *it});
    }
    return out;
  }

  /// The <0xXX> tokens of the bytes of `s`, if all exist.
  bool append_bytes(const std::string& s, std::vector<Token>& out) const {
    std::vector<Token> bytes;
    for (char c : s) {
      char name[8];
      std::snprintf(name, sizeof name, "<0x%02X>", unsigned(uint8_t(c)));
      const auto id = token_to_id(name);
      if (!id) return false;
      bytes.push_back({*id, name});
    }
    out.insert(out.end(), bytes.begin(), bytes.end());
    return true;
  }

  std::string where_;
  std::vector<std::string> pieces_;
  std::vector<double> scores_;
  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_map<uint64_t, int32_t> edges_;
  std::vector<int32_t> node_id_{-1};  ///< trie node -> id of the piece ending there, or -1
  TrieLinks links_;                   ///< suffix links: every piece ending at a byte in one pass
  double min_score_ = std::numeric_limits<double>::infinity();
  std::optional<int32_t> unk_;
  bool byte_fallback_ = false;
};

}  // namespace

std::unique_ptr<Model> make_unigram(const JsonNode& j) { return std::make_unique<Unigram>(j); }

}  // namespace vkf::text::hf
