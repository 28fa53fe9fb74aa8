// Aho–Corasick links over a tokenizer's trie of pieces, so that a Viterbi
// tokenizer finds every piece ending at each position of the text in time
// proportional to the text plus the matches. Walking the trie from every start
// instead costs the text length times the depth of the trie the text follows:
// a 100,000-character piece "aaa..." and a text of "aaa..." took minutes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace vkf::text {

struct TrieLinks {
  std::vector<int32_t> fail;   ///< node -> the node of its longest proper suffix in the trie (root: 0)
  std::vector<int32_t> out;    ///< node -> the deepest piece-ending node among it and its suffixes, or -1
  std::vector<int32_t> depth;  ///< node -> its length in symbols

  /// `edges` are (parent, symbol, child) of a trie of `nodes` nodes rooted at 0;
  /// child(node, symbol) returns the child or -1; terminal(node) says whether
  /// a piece ends at the node.
  template <class Child, class Terminal>
  void build(size_t nodes, const std::vector<std::pair<int32_t, std::pair<uint32_t, int32_t>>>& edges,
             Child child, Terminal terminal) {
    fail.assign(nodes, 0);
    out.assign(nodes, -1);
    depth.assign(nodes, 0);
    // Edges by the child's depth, so that a node's suffix is linked before it.
    std::vector<std::vector<size_t>> by_parent(nodes);
    for (size_t e = 0; e < edges.size(); ++e) by_parent[size_t(edges[e].first)].push_back(e);
    std::vector<int32_t> order{0};
    for (size_t i = 0; i < order.size(); ++i)
      for (size_t e : by_parent[size_t(order[i])]) order.push_back(edges[e].second.second);
    std::vector<std::pair<int32_t, uint32_t>> parent(nodes, {-1, 0});
    for (const auto& [p, sc] : edges) parent[size_t(sc.second)] = {p, sc.first};
    for (int32_t node : order) {
      if (node == 0) continue;
      const auto [p, sym] = parent[size_t(node)];
      depth[size_t(node)] = depth[size_t(p)] + 1;
      int32_t f = 0;
      if (p != 0) {
        f = fail[size_t(p)];
        while (f != 0 && child(f, sym) < 0) f = fail[size_t(f)];
        const int32_t c = child(f, sym);
        f = c >= 0 ? c : 0;
      }
      fail[size_t(node)] = f;
      out[size_t(node)] = terminal(node) ? node : out[size_t(f)];  // the root (an empty piece) never matches
    }
  }

  /// Runs over text[0, n): for every end position e (1..n), in order, calls
  /// visit(e, node) for every piece-ending node matching text[e - depth, e),
  /// deepest first (that is, by ascending start).
  template <class Sym, class Child, class Visit>
  void scan(const Sym* text, size_t n, Child child, Visit visit) const {
    int32_t s = 0;
    for (size_t k = 0; k < n; ++k) {
      const uint32_t c = uint32_t(text[k]);
      int32_t next = child(s, c);
      while (next < 0 && s != 0) {
        s = fail[size_t(s)];
        next = child(s, c);
      }
      s = next < 0 ? 0 : next;
      for (int32_t t = out[size_t(s)]; t > 0; t = out[size_t(fail[size_t(t)])]) visit(k + 1, t);
    }
  }
};

}  // namespace vkf::text
