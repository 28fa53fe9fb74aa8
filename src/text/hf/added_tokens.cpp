#include "text/hf/added_tokens.hpp"

#include <algorithm>

#include "model/json_text.hpp"  // printable
#include "text/hf/unicode.hpp"
#include "vkformer/error.hpp"

namespace vkf::text::hf {
namespace {

bool operator==(const AddedToken& a, const AddedToken& b) {
  return a.content == b.content && a.single_word == b.single_word && a.lstrip == b.lstrip && a.rstrip == b.rstrip &&
         a.normalized == b.normalized && a.special == b.special;
}

/// The start of the character that ends at byte `end` of valid UTF-8 `s` (end > 0).
size_t char_before(const std::string& s, size_t end) {
  size_t b = end - 1;
  while (b > 0 && (uint8_t(s[b]) & 0xC0) == 0x80) --b;
  return b;
}

}  // namespace

void AddedVocabulary::Matcher::add(const std::string& p, int32_t id) {
  if (p.empty()) return;
  int32_t node = 0;
  for (char c : p) {
    const uint64_t k = (uint64_t(node) << 8) | uint8_t(c);
    auto it = edges.find(k);
    if (it == edges.end()) {
      it = edges.emplace(k, int32_t(pattern.size())).first;
      pattern.push_back(-1);
    }
    node = it->second;
  }
  if (pattern[size_t(node)] < 0) {  // the same text twice: the first pattern wins
    pattern[size_t(node)] = int32_t(ids.size());
    ids.push_back(id);
  }
}

std::pair<size_t, int32_t> AddedVocabulary::Matcher::longest_at(const std::string& s, size_t at) const {
  std::pair<size_t, int32_t> best{0, -1};
  int32_t node = 0;
  for (size_t k = at; k < s.size(); ++k) {
    auto it = edges.find((uint64_t(node) << 8) | uint8_t(s[k]));
    if (it == edges.end()) break;
    node = it->second;
    if (pattern[size_t(node)] >= 0) best = {k + 1 - at, ids[size_t(pattern[size_t(node)])]};
  }
  return best;
}

void AddedVocabulary::add(const std::vector<AddedToken>& tokens, const Model& model, const Normalizer* normalizer) {
  for (const AddedToken& t : tokens)
    if (t.special && !t.content.empty() && special_set_.insert(t.content).second) special_.push_back(t);
  for (const AddedToken& t : tokens) {
    if (t.content.empty() ||
        std::any_of(tokens_.begin(), tokens_.end(), [&](const auto& kv) { return kv.second == t; }))
      continue;
    int32_t id;
    if (const auto known = token_to_id(t.content, model)) {
      id = *known;
    } else {
      const int64_t vocab = int64_t(model.vocab_size());
      const int64_t max = max_id();
      const int64_t next = max < 0 ? vocab : (max >= vocab || vocab == 0) ? max + 1 : vocab;
      if (next > INT32_MAX)
        throw Error("added token \"" + printable(t.content, 40) + "\": no id left (ids end at " +
                    std::to_string(INT32_MAX) + ")");
      id = int32_t(next);
    }
    ids_[t.content] = id;
    tokens_[id] = t;
    if (!special_set_.count(t.content)) added_.push_back(t);
  }
  raw_ = Matcher();
  normalized_ = Matcher();
  for (const auto* list : {&special_, &added_})
    for (const AddedToken& t : *list) {
      const int32_t id = *token_to_id(t.content, model);
      if (!t.normalized) {
        raw_.add(t.content, id);
      } else {
        std::string content = t.content;
        if (normalizer) normalizer->normalize(content);
        normalized_.add(content, id);
      }
    }
}

int32_t AddedVocabulary::max_id() const {
  int32_t m = -1;
  for (const auto& kv : ids_) m = std::max(m, kv.second);
  return m;
}

std::optional<int32_t> AddedVocabulary::token_to_id(const std::string& token, const Model& model) const {
  auto it = ids_.find(token);
  if (it != ids_.end()) return it->second;
  return model.token_to_id(token);
}

std::optional<std::string> AddedVocabulary::id_to_token(int32_t id, const Model& model) const {
  auto it = tokens_.find(id);
  if (it != tokens_.end()) return it->second.content;
  return model.id_to_token(id);
}

void AddedVocabulary::split(const Piece& piece, const Matcher& m, Pieces& out) const {
  const std::string& s = piece.text;
  auto emit = [&](size_t b, size_t e, int32_t id) {
    if (e > b) out.push_back({s.substr(b, e - b), piece.at_start && b == 0, id});
  };
  size_t done = 0;  // end of the last match
  for (size_t i = 0; i < s.size();) {
    const auto [len, id] = m.ids.empty() ? std::pair<size_t, int32_t>{0, -1} : m.longest_at(s, i);
    if (len == 0) {
      ++i;
      continue;
    }
    size_t start = i, stop = i + len;
    i = stop;
    const AddedToken& t = tokens_.at(id);
    if (t.single_word) {
      const bool space_before = start == 0 || !is_word_char(code_point_at(s, char_before(s, start)));
      const bool space_after = stop == s.size() || !is_word_char(code_point_at(s, stop));
      if (!space_before || !space_after) continue;
    }
    if (t.lstrip) {
      size_t b = start;
      while (b > 0 && is_whitespace(code_point_at(s, char_before(s, b)))) b = char_before(s, b);
      start = std::max(b, done);
    }
    if (t.rstrip)
      while (stop < s.size() && is_whitespace(code_point_at(s, stop))) stop += utf8_length(uint8_t(s[stop]));
    emit(done, start, -1);
    emit(start, stop, id);
    done = stop;
  }
  emit(done, s.size(), -1);
}

Pieces AddedVocabulary::extract_and_normalize(const std::string& text, const Normalizer* normalizer) const {
  Pieces raw;
  split({text, true, -1}, raw_, raw);
  Pieces out;
  for (Piece& p : raw) {
    if (p.added_id >= 0) {
      out.push_back(std::move(p));
      continue;
    }
    if (normalizer) normalizer->normalize(p.text);
    split(p, normalized_, out);
  }
  return out;
}

}  // namespace vkf::text::hf
