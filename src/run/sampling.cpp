// Hugging Face 4.44's logits processors and warpers (transformers/generation/
// logits_process.py), in double precision, row by row; the seeded draw.
#include "run/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

#include <cstdio>

namespace vkf::sampling {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

/// exp(s_i − max s), as softmax's numerators.
std::vector<double> weights(const Scores& s) {
  const double m = *std::max_element(s.begin(), s.end());
  std::vector<double> w(s.size());
  for (size_t i = 0; i < s.size(); ++i) w[i] = m == kNegInf ? 0.0 : std::exp(s[i] - m);
  return w;
}

std::vector<double> softmax(const Scores& s) {
  std::vector<double> w = weights(s);
  double sum = 0;
  for (double x : w) sum += x;
  for (double& x : w) x /= sum;
  return w;
}

/// Ids by score, descending (ties: lower id first).
std::vector<uint32_t> by_score_desc(const Scores& s) {
  std::vector<uint32_t> idx(s.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) { return s[a] > s[b]; });
  return idx;
}

}  // namespace

void repetition_penalty(Scores& s, const Ids& history, double penalty) {
  std::vector<bool> seen(s.size(), false);
  for (int32_t id : history) {
    if (id < 0 || size_t(id) >= s.size() || seen[size_t(id)]) continue;
    seen[size_t(id)] = true;
    double& x = s[size_t(id)];
    x = x < 0 ? x * penalty : x / penalty;
  }
}

void no_repeat_ngram(Scores& s, const Ids& history, uint32_t n) {
  const size_t len = history.size();
  if (n == 0 || len + 1 < n) return;
  // The n-1 tokens before the next one; every earlier n-gram starting with them bans its last token.
  const size_t prefix = n - 1, start = len - prefix;
  for (size_t i = 0; i + n <= len; ++i)
    if (std::equal(history.begin() + long(i), history.begin() + long(i + prefix), history.begin() + long(start))) {
      const int32_t banned = history[i + prefix];
      if (banned >= 0 && size_t(banned) < s.size()) s[size_t(banned)] = kNegInf;
    }
}

void temperature(Scores& s, double t) {
  // HF divides the logits by t. A tiny t (1e-308, 5e-324) overflows that to
  // ±inf, softmax then gives NaN and torch.multinomial refuses; sampling would
  // draw garbage. Where the plain division overflows, the scores less their max
  // are divided instead: softmax does not see the shift, the other scores go to
  // -inf, and what remains is the limit t -> 0, greedy (ties among the top score
  // drawn evenly). Elsewhere the division is HF's, bit for bit.
  bool overflows = false;
  for (double x : s) overflows = overflows || (std::isfinite(x) && !std::isfinite(x / t));
  const double m = *std::max_element(s.begin(), s.end());
  if (!overflows || !std::isfinite(m)) {
    for (double& x : s) x /= t;
    return;
  }
  for (double& x : s) x = (x - m) / t;
}

void top_k(Scores& s, uint32_t k, uint32_t keep) {
  const size_t kk = std::min<size_t>(std::max(k, keep), s.size());
  if (kk == 0) return;
  Scores sorted = s;
  std::nth_element(sorted.begin(), sorted.begin() + long(kk - 1), sorted.end(), std::greater<double>());
  const double threshold = sorted[kk - 1];
  for (double& x : s)
    if (x < threshold) x = kNegInf;
}

void top_p(Scores& s, double p, uint32_t keep) {
  std::vector<uint32_t> asc(s.size());  // ascending, ties by id
  std::iota(asc.begin(), asc.end(), 0u);
  std::stable_sort(asc.begin(), asc.end(), [&](uint32_t a, uint32_t b) { return s[a] < s[b]; });
  const std::vector<double> prob = softmax(s);
  double cum = 0;
  std::vector<uint32_t> drop;
  for (size_t r = 0; r < asc.size(); ++r) {
    cum += prob[asc[r]];
    if (cum <= 1.0 - p && r + keep < asc.size()) drop.push_back(asc[r]);
  }
  for (uint32_t i : drop) s[i] = kNegInf;
}

void min_p(Scores& s, double p, uint32_t keep) {
  const std::vector<double> prob = softmax(s);
  const double threshold = p * *std::max_element(prob.begin(), prob.end());
  const std::vector<uint32_t> desc = by_score_desc(s);
  for (size_t r = keep; r < desc.size(); ++r)
    if (prob[desc[r]] < threshold) s[desc[r]] = kNegInf;
}

void bad_words(Scores& s, const Ids& history, const std::vector<Ids>& bad, const std::vector<int32_t>& eos) {
  for (const Ids& seq : bad) {
    if (seq.empty() || seq.size() > history.size() + 1) continue;  // longer than the context: HF skips it
    if (seq.size() == 1 && std::find(eos.begin(), eos.end(), seq[0]) != eos.end()) continue;
    if (!std::equal(seq.begin(), seq.end() - 1, history.end() - long(seq.size() - 1))) continue;
    const int32_t last = seq.back();
    if (last >= 0 && size_t(last) < s.size()) s[size_t(last)] = kNegInf;
  }
}

void force(Scores& s, const std::vector<int32_t>& ids) {
  std::fill(s.begin(), s.end(), kNegInf);
  for (int32_t id : ids)
    if (id >= 0 && size_t(id) < s.size()) s[size_t(id)] = 0.0;
}

void process(Scores& s, const Ids& history, size_t max_length, const std::vector<int32_t>& eos,
             const GenerateOptions& o) {
  if (o.repetition_penalty != 1.0) repetition_penalty(s, history, o.repetition_penalty);
  if (o.no_repeat_ngram_size > 0) no_repeat_ngram(s, history, o.no_repeat_ngram_size);
  if (!o.bad_words_ids.empty()) bad_words(s, history, o.bad_words_ids, eos);
  if (history.size() < o.min_length)
    for (int32_t e : eos)
      if (e >= 0 && size_t(e) < s.size()) s[size_t(e)] = kNegInf;
  if (o.forced_bos_token_id >= 0 && history.size() == 1) force(s, {o.forced_bos_token_id});
  if (!o.forced_eos_token_ids.empty() && history.size() + 1 == max_length) force(s, o.forced_eos_token_ids);
}

bool processing(const GenerateOptions& o) {
  return o.repetition_penalty != 1.0 || o.no_repeat_ngram_size > 0 || !o.bad_words_ids.empty() ||
         o.min_length > 0 || o.forced_bos_token_id >= 0 || !o.forced_eos_token_ids.empty();
}

void warp(Scores& s, const GenerateOptions& o) {
  if (o.temperature != 1.0) temperature(s, o.temperature);
  if (o.top_k != 0) top_k(s, uint32_t(o.top_k));
  if (o.top_p < 1.0) top_p(s, o.top_p);
  if (o.min_p > 0.0) min_p(s, o.min_p);  // HF adds it for any min_p; 0 removes nothing
}

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

int32_t draw(const Scores& s, double u) {
  const std::vector<double> w = weights(s);
  double total = 0;
  for (double x : w) total += x;
  if (!(total > 0)) return argmax(s);
  const double target = u * total;
  double acc = 0;
  int32_t last = -1;
  for (size_t i = 0; i < w.size(); ++i) {
    if (w[i] == 0) continue;
    acc += w[i];
    last = int32_t(i);
    if (acc > target) return last;
  }
  return last;  // rounding left u·Σw at or past the sum: the last possible id
}

int32_t argmax(const Scores& s) {
  return int32_t(std::max_element(s.begin(), s.end()) - s.begin());  // first of the largest
}

}  // namespace vkf::sampling

namespace vkf {

void validate(const GenerateOptions& o) {
  auto bad = [](const char* name, const char* flag, const std::string& rule, double v) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", v);
    return Error(std::string(name) + " (" + flag + ") must be " + rule + ", got " + got);
  };
  if (o.beam < 1) throw Error("beam width must be at least 1");
  if (o.do_sample && o.beam > 1)
    throw Error("do_sample (--do-sample) with beam " + std::to_string(o.beam) +
                ": beam sampling is not supported; use beam 1 or leave out do_sample");
  if (!std::isfinite(o.temperature) || o.temperature < 0)
    throw bad("temperature", "--temperature", "a finite number > 0", o.temperature);
  if (o.do_sample && o.temperature == 0)
    throw bad("temperature", "--temperature", "> 0 with do_sample (for greedy decoding leave out do_sample)",
              o.temperature);
  if (o.top_k < 0) throw bad("top_k", "--top-k", ">= 0 (0: off)", o.top_k);
  if (!(o.top_p > 0 && o.top_p <= 1)) throw bad("top_p", "--top-p", "in (0, 1]", o.top_p);
  if (!(o.min_p >= 0 && o.min_p <= 1)) throw bad("min_p", "--min-p", "in [0, 1]", o.min_p);
  if (!std::isfinite(o.repetition_penalty) || !(o.repetition_penalty > 0))
    throw bad("repetition_penalty", "--repetition-penalty", "a finite number > 0", o.repetition_penalty);
  if (!std::isfinite(o.length_penalty)) throw bad("length_penalty", "--length-penalty", "finite", o.length_penalty);
}

}  // namespace vkf
