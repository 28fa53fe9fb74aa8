// Greedy decoding, sampling and beam search over next-token logits
// (run/logits_source.hpp). The choices are made on the host in double precision
// (run/sampling.hpp); the beam search follows tools/vkformer_torch.py's reference
// step for step, with HF's processors applied to its log-probabilities as HF does.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "run/sampling.hpp"
#include "run/search.hpp"

namespace vkf {
namespace {

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

/// The tokens that end a sequence (none: never stop early), and the one fed to a finished slot.
struct Stops {
  std::vector<int32_t> eos;
  int32_t filler;
  bool is_eos(int32_t t) const { return std::find(eos.begin(), eos.end(), t) != eos.end(); }
};

bool processing(const GenerateOptions& o) { return o.repetition_penalty != 1.0 || o.no_repeat_ngram_size > 0; }

/// Greedy decoding or sampling, one token per live sequence per step.
std::vector<Ids> greedy_or_sample(LogitsSource& src, const std::vector<Ids>& contexts, uint32_t vocab,
                                  const GenerateOptions& o, const Stops& stops, RunStats& stats) {
  const uint32_t batch = uint32_t(contexts.size());
  std::vector<Ids> out(batch), history = contexts;
  std::vector<bool> done(batch, false);
  std::vector<int32_t> next(batch), parents(batch);
  std::vector<sampling::SplitMix64> rng;
  for (uint32_t b = 0; b < batch; ++b) {
    parents[b] = int32_t(b);
    rng.emplace_back(o.seed + b);
  }
  std::vector<float> logits = src.start();
  for (uint32_t t = 0; t < o.max_new_tokens; ++t) {
    bool all_done = true;
    for (uint32_t b = 0; b < batch; ++b) {
      next[b] = stops.filler;
      if (!done[b]) {
        const float* row = logits.data() + size_t(b) * vocab;
        sampling::Scores s(row, row + vocab);
        sampling::process(s, history[b], o);
        if (o.do_sample) sampling::warp(s, o);
        next[b] = o.do_sample ? sampling::draw(s, rng[b].uniform()) : sampling::argmax(s);
        if (stops.is_eos(next[b])) {
          done[b] = true;
        } else {
          out[b].push_back(next[b]);
          history[b].push_back(next[b]);
          if (o.on_token && !o.on_token(b, next[b])) done[b] = true;
        }
      }
      all_done = all_done && done[b];
    }
    if (all_done || t + 1 == o.max_new_tokens) break;
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

std::vector<Ids> beam_search(LogitsSource& src, const std::vector<Ids>& contexts, uint32_t vocab,
                             const GenerateOptions& o, const Stops& stops, int32_t pad, RunStats& stats) {
  const uint32_t batch = uint32_t(contexts.size()), beam = o.beam, max_new = o.max_new_tokens;
  const double alpha = o.length_penalty;
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
        if (processing(o)) {
          Ids history = contexts[b];
          history.insert(history.end(), h.tokens.begin(), h.tokens.end());
          sampling::process(lp, history, o);
        }
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
        if (stops.is_eos(c.v)) {
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

std::vector<Ids> search(LogitsSource& logits, const std::vector<Ids>& contexts, const ModelConfig& cfg,
                        const GenerateOptions& o, RunStats& stats) {
  Stops stops;
  if (o.stop_at_eos) stops.eos = !o.eos_token_ids.empty() ? o.eos_token_ids : !cfg.end_ids.empty() ? cfg.end_ids : std::vector<int32_t>{cfg.eos_id};
  stops.filler = stops.eos.empty() ? cfg.pad_id : stops.eos[0];
  if (o.beam == 1) return greedy_or_sample(logits, contexts, cfg.out_vocab(), o, stops, stats);
  std::vector<Ids> out = beam_search(logits, contexts, cfg.out_vocab(), o, stops, cfg.pad_id, stats);
  if (o.on_token)  // the winners' tokens, as if chosen one by one
    for (uint32_t b = 0; b < out.size(); ++b)
      for (size_t i = 0; i < out[b].size(); ++i)
        if (!o.on_token(b, out[b][i])) {
          out[b].resize(i + 1);
          break;
        }
  return out;
}

}  // namespace vkf
