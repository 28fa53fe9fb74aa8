// The BPE model (models/bpe/{model,word}.rs): each character of a word (with the
// continuing-subword prefix after the first and the end-of-word suffix on the
// last) is a symbol; unknown characters become their <0xXX> byte tokens
// (byte_fallback) or the unk token; then the adjacent pair with the lowest
// merge rank is merged, leftmost first, until no pair has a merge (a priority
// queue, as `tokenizers` does).
#include <array>
#include <cstdio>
#include <queue>

#include "model/json_text.hpp"
#include "text/hf/models.hpp"
#include "text/hf/unicode.hpp"
#include "vkformer/error.hpp"

namespace vkf::text::hf {
namespace {

using Options = BpeOptions;

class Bpe final : public Model {
 public:
  Bpe(Vocab vocab, const std::vector<RankedMerge>& merges, Options o, std::string where)
      : vocab_(std::move(vocab)), o_(std::move(o)), where_(std::move(where)) {
    const size_t prefix_len = o_.prefix ? o_.prefix->size() : 0;
    for (size_t i = 0; i < merges.size(); ++i) {
      const auto& [a, b, rank] = merges[i];
      const std::string merge = "merge " + std::to_string(i) + " \"" + printable(a + " " + b, 60) + "\"";
      const auto ia = vocab_.find(a), ib = vocab_.find(b);
      if (!ia || !ib)
        throw Error(where_ + ": " + merge + ": \"" + printable(ia ? b : a, 40) + "\" is not in the vocabulary");
      const std::string joined = a + (b.size() >= prefix_len ? b.substr(prefix_len) : std::string());
      const auto id = vocab_.find(joined);
      if (!id) throw Error(where_ + ": " + merge + ": the merged token \"" + printable(joined, 40) + "\" is not in the vocabulary");
      merges_[key(*ia, *ib)] = {rank, *id};  // a repeated pair: the last rank counts, as in HF
    }
    if (o_.byte_fallback)
      for (int b = 0; b < 256; ++b) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", b);
        byte_ids_[size_t(b)] = vocab_.find(name).value_or(-1);
      }
  }

  void tokenize(const std::string& word, std::vector<Token>& out, WordCache& cache) const override {
    if (o_.ignore_merges)
      if (const auto id = vocab_.find(word)) return out.push_back({*id, word});
    auto it = cache.find(word);
    if (it == cache.end()) it = cache.emplace(word, merge_word(word)).first;
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  std::optional<int32_t> token_to_id(const std::string& t) const override { return vocab_.find(t); }
  std::optional<std::string> id_to_token(int32_t id) const override { return vocab_.token(id); }
  size_t vocab_size() const override { return vocab_.size(); }
  size_t id_bound() const override { return vocab_.id_bound(); }

 private:
  struct Symbol {
    int32_t id;
    int32_t prev, next;
    bool gone;
  };
  struct Merge {
    uint32_t rank;
    int32_t id;
  };
  struct Candidate {
    uint32_t rank;
    int32_t pos;
    int32_t id;
    bool operator<(const Candidate& o) const {  // the lowest rank, then the leftmost, on top
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  static uint64_t key(int32_t a, int32_t b) { return (uint64_t(uint32_t(a)) << 32) | uint32_t(b); }
  const Merge* merge_of(int32_t a, int32_t b) const {
    auto it = merges_.find(key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  }

  std::vector<Token> merge_word(const std::string& w) const {
    std::vector<Symbol> sym;
    int32_t unk = -1;  // a pending unk (fuse_unk merges runs of them)
    auto add = [&](int32_t id) { sym.push_back({id, int32_t(sym.size()) - 1, int32_t(sym.size()) + 1, false}); };
    for (size_t i = 0; i < w.size();) {
      const size_t n = utf8_length(uint8_t(w[i]));
      std::string s = w.substr(i, n);
      if (i > 0 && o_.prefix) s = *o_.prefix + s;
      if (i + n >= w.size() && o_.suffix) s += *o_.suffix;
      i += n;
      if (const auto id = vocab_.find(s)) {
        if (unk >= 0) add(unk), unk = -1;
        add(*id);
        continue;
      }
      if (o_.byte_fallback) {
        bool all = true;
        for (char c : s) all = all && byte_ids_[uint8_t(c)] >= 0;
        if (all) {
          for (char c : s) add(byte_ids_[uint8_t(c)]);
          continue;
        }
      }
      if (o_.unk) {
        const auto id = vocab_.find(*o_.unk);
        if (!id) throw Error(where_ + ": unk_token \"" + printable(*o_.unk, 40) + "\" is not in the vocabulary");
        if (unk >= 0 && !o_.fuse_unk) add(unk);
        unk = *id;
      }
    }
    if (unk >= 0) add(unk);
    if (!sym.empty()) sym.back().next = -1;

    std::priority_queue<Candidate> queue;
    for (size_t k = 0; k + 1 < sym.size(); ++k)
      if (const Merge* m = merge_of(sym[k].id, sym[k + 1].id)) queue.push({m->rank, int32_t(k), m->id});
    while (!queue.empty()) {
      const Candidate top = queue.top();
      queue.pop();
      Symbol& cur = sym[size_t(top.pos)];
      if (cur.gone || cur.next < 0) continue;
      const Symbol right = sym[size_t(cur.next)];
      const Merge* m = merge_of(cur.id, right.id);
      if (!m || m->id != top.id) continue;  // a stale entry
      cur.id = top.id;
      sym[size_t(cur.next)].gone = true;
      cur.next = right.next;
      if (right.next >= 0) sym[size_t(right.next)].prev = top.pos;
      if (cur.prev >= 0)
        if (const Merge* p = merge_of(sym[size_t(cur.prev)].id, cur.id)) queue.push({p->rank, cur.prev, p->id});
      if (cur.next >= 0)
        if (const Merge* n = merge_of(cur.id, sym[size_t(cur.next)].id)) queue.push({n->rank, top.pos, n->id});
    }
    std::vector<Token> out;
    for (const Symbol& s : sym)
      if (!s.gone) out.push_back({s.id, vocab_.token(s.id).value_or(std::string())});
    return out;
  }

  Vocab vocab_;
  std::unordered_map<uint64_t, Merge> merges_;
  Options o_;
  std::array<int32_t, 256> byte_ids_{};
  std::string where_;
};

/// One merge: "a b" (exactly one space) or ["a", "b"].
/// Merges in list order: rank = position.
std::vector<RankedMerge> ranked(const std::vector<std::pair<std::string, std::string>>& merges) {
  std::vector<RankedMerge> out;
  out.reserve(merges.size());
  for (size_t i = 0; i < merges.size(); ++i) out.push_back({merges[i].first, merges[i].second, uint32_t(i)});
  return out;
}

std::pair<std::string, std::string> parse_merge(const JsonNode& m) {
  if (m.json().is_string()) {
    const std::string s = m.as_string();
    const size_t sp = s.find(' ');
    if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
      m.expected("\"a b\" (two tokens separated by one space) or [\"a\", \"b\"]");
    return {s.substr(0, sp), s.substr(sp + 1)};
  }
  if (m.json().is_array() && m.json().size() == 2 && m.json()[0].is_string() && m.json()[1].is_string())
    return {m.json()[0].get<std::string>(), m.json()[1].get<std::string>()};
  m.expected("\"a b\" or [\"a\", \"b\"]");
}

}  // namespace

std::unique_ptr<Model> make_bpe(const JsonNode& j) {
  if (j.has("dropout"))
    j.at("dropout").fail("must be null: BPE dropout samples a different tokenization each time, vkformer refuses it");
  std::vector<std::pair<std::string, std::string>> merges;
  for (const JsonNode& m : j.at("merges").elements()) {
    if (m.json().is_string() && m.json().get_ref<const std::string&>().rfind("#version", 0) == 0) continue;
    merges.push_back(parse_merge(m));
  }
  Options o;
  o.unk = j.opt_str("unk_token");
  o.prefix = j.opt_str("continuing_subword_prefix");
  o.suffix = j.opt_str("end_of_word_suffix");
  o.fuse_unk = j.boolean("fuse_unk", false);
  o.byte_fallback = j.boolean("byte_fallback", false);
  o.ignore_merges = j.boolean("ignore_merges", false);
  return std::make_unique<Bpe>(Vocab(j.at("vocab")), ranked(merges), o, j.file() + ": " + j.path());
}

std::unique_ptr<Model> make_bpe(Vocab vocab, const std::vector<std::pair<std::string, std::string>>& merges,
                                const std::string& where) {
  return std::make_unique<Bpe>(std::move(vocab), ranked(merges), Options{}, where);
}

std::unique_ptr<Model> make_bpe(Vocab vocab, const std::vector<RankedMerge>& merges, const BpeOptions& o,
                                const std::string& where) {
  return std::make_unique<Bpe>(std::move(vocab), merges, o, where);
}

}  // namespace vkf::text::hf
