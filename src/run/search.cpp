// Greedy and beam search over next-token logits (run/logits_source.hpp). The
// choices are made on the host in double precision; the beam search follows
// tools/vkformer_torch.py's reference step for step.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "run/search.hpp"

namespace vkf {
namespace {

/// Index of the largest value; ties go to the lowest index.
int32_t argmax(const float* x, uint32_t n) {
  uint32_t best = 0;
  for (uint32_t i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return int32_t(best);
}

std::vector<double> log_softmax(const float* x, uint32_t n) {
  double m = -std::numeric_limits<double>::infinity();
  for (uint32_t i = 0; i < n; ++i) m = std::max(m, double(x[i]));
  double sum = 0;
  for (uint32_t i = 0; i < n; ++i) sum += std::exp(double(x[i]) - m);
  const double lse = m + std::log(sum);
  std::vector<double> out(n);
  for (uint32_t i = 0; i < n; ++i) out[i] = double(x[i]) - lse;
  return out;
}

/// Times each step into stats.
std::vector<float> timed_step(LogitsSource& src, const std::vector<int32_t>& tokens,
                              const std::vector<int32_t>& parents, RunStats& stats) {
  auto t0 = std::chrono::steady_clock::now();
  std::vector<float> logits = src.step(tokens, parents);
  stats.step_ms.push_back(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  ++stats.steps;
  return logits;
}

/// eos < 0: never stop early.
std::vector<Ids> greedy(LogitsSource& src, uint32_t batch, uint32_t vocab, uint32_t max_new,
                        int32_t eos, RunStats& stats) {
  std::vector<Ids> out(batch);
  std::vector<bool> done(batch, false);
  std::vector<int32_t> next(batch), parents(batch);
  for (uint32_t b = 0; b < batch; ++b) parents[b] = int32_t(b);
  std::vector<float> logits = src.start();
  for (uint32_t t = 0; t < max_new; ++t) {
    bool all_done = true;
    for (uint32_t b = 0; b < batch; ++b) {
      next[b] = done[b] ? eos : argmax(logits.data() + size_t(b) * vocab, vocab);
      if (!done[b] && next[b] == eos) done[b] = true;
      if (!done[b]) out[b].push_back(next[b]);
      all_done = all_done && done[b];
    }
    if (all_done || t + 1 == max_new) break;
    logits = timed_step(src, next, parents, stats);
  }
  return out;
}

struct Hypothesis {
  double score;  ///< sum of log-probabilities
  Ids tokens;
  uint32_t slot;
};

struct Finished {
  double score;  ///< normalized by length^alpha
  Ids tokens;
};

std::vector<Ids> beam_search(LogitsSource& src, uint32_t batch, uint32_t vocab, uint32_t beam,
                             uint32_t max_new, int32_t eos, double alpha, int32_t pad,
                             RunStats& stats) {
  const uint32_t slots = batch * beam;
  std::vector<std::vector<Hypothesis>> alive(batch);
  std::vector<std::vector<Finished>> finished(batch);
  std::vector<bool> done(batch, false);
  for (uint32_t b = 0; b < batch; ++b) alive[b].push_back({0.0, {}, b * beam});
  auto normalized = [alpha](double s, size_t len) { return s / std::pow(double(len), alpha); };

  std::vector<float> logits = src.start();
  for (uint32_t t = 0; t < max_new; ++t) {
    // Finished sources' slots are fed a padding token (id 0 if the model has none).
    std::vector<int32_t> tokens(slots, std::max(pad, 0)), parents(slots);
    for (uint32_t i = 0; i < slots; ++i) parents[i] = int32_t(i);
    for (uint32_t b = 0; b < batch; ++b) {
      if (done[b]) continue;
      struct Cand { double score; uint32_t bi; int32_t v; };
      std::vector<Cand> cands;
      cands.reserve(alive[b].size() * vocab);
      for (uint32_t bi = 0; bi < alive[b].size(); ++bi) {
        const Hypothesis& h = alive[b][bi];
        std::vector<double> lp = log_softmax(logits.data() + size_t(h.slot) * vocab, vocab);
        for (uint32_t v = 0; v < vocab; ++v) cands.push_back({h.score + lp[v], bi, int32_t(v)});
      }
      std::stable_sort(cands.begin(), cands.end(), [](const Cand& x, const Cand& y) {
        if (x.score != y.score) return x.score > y.score;
        if (x.bi != y.bi) return x.bi < y.bi;
        return x.v < y.v;
      });
      std::vector<Hypothesis> next;
      for (size_t rank = 0; rank < cands.size() && next.size() < beam; ++rank) {
        const Cand& c = cands[rank];
        const Hypothesis& parent = alive[b][c.bi];
        Ids toks = parent.tokens;
        toks.push_back(c.v);
        if (c.v == eos) {
          if (rank < beam) {
            toks.pop_back();
            finished[b].push_back({normalized(c.score, toks.size() + 1), toks});
          }
          continue;
        }
        const uint32_t slot = b * beam + uint32_t(next.size());
        tokens[slot] = c.v;
        parents[slot] = int32_t(parent.slot);
        next.push_back({c.score, std::move(toks), slot});
      }
      alive[b] = std::move(next);
      if (finished[b].size() >= beam) done[b] = true;
    }
    if (std::all_of(done.begin(), done.end(), [](bool x) { return x; }) || t + 1 == max_new) break;
    logits = timed_step(src, tokens, parents, stats);
  }

  std::vector<Ids> out(batch);
  for (uint32_t b = 0; b < batch; ++b) {
    if (!done[b])  // ran out of steps: the live hypotheses compete as they are
      for (const Hypothesis& h : alive[b])
        finished[b].push_back({normalized(h.score, h.tokens.size()), h.tokens});
    const Finished* best = nullptr;
    for (const Finished& f : finished[b])
      if (!best || f.score > best->score) best = &f;
    if (best) out[b] = best->tokens;
  }
  return out;
}

}  // namespace

std::vector<Ids> search(LogitsSource& logits, uint32_t batch, const ModelConfig& cfg,
                        const GenerateOptions& o, RunStats& stats) {
  const int32_t eos = o.stop_at_eos ? cfg.eos_id : -1;
  if (o.beam == 1) return greedy(logits, batch, cfg.out_vocab(), o.max_new_tokens, eos, stats);
  return beam_search(logits, batch, cfg.out_vocab(), o.beam, o.max_new_tokens, eos, o.length_penalty,
                     cfg.pad_id, stats);
}

}  // namespace vkf
