// Greedy decoding, sampling and beam search over next-token logits
// (run/logits_source.hpp). The choices are made on the host in double precision
// (run/sampling.hpp); the beam search is HF 4.44's BeamSearchScorer (with
// early_stopping true it is also tools/vkformer_torch.py's reference, step for step),
// with HF's processors applied to its log-probabilities as HF does.
#include <algorithm>
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

/// The tokens that end a sequence (none: never stop early), and the one fed to a finished slot.
struct Stops {
  std::vector<int32_t> eos;
  int32_t filler;
  bool is_eos(int32_t t) const { return std::find(eos.begin(), eos.end(), t) != eos.end(); }
};

/// Greedy decoding or sampling, one token per live sequence per step.
std::vector<Ids> greedy_or_sample(LogitsSource& src, const std::vector<Ids>& contexts, uint32_t vocab,
                                  const GenerateOptions& o, const Stops& stops) {
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
        next[b] = next_token(logits.data() + size_t(b) * vocab, vocab, history[b], contexts[b].size(), stops.eos,
                             o, rng[b]);
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
    logits = src.step(next, parents);
  }
  return out;
}

struct Hypothesis {
  double score;  ///< sum of log-probabilities (processed, as HF sums them)
  Ids tokens;
  uint32_t slot;
};

/// One source's ended hypotheses: HF's BeamHypotheses, the best `beam` kept.
class Ended {
 public:
  Ended(uint32_t beam, double alpha) : beam_(beam), alpha_(alpha) {}
  size_t size() const { return list_.size(); }
  double worst() const { return worst_; }
  /// Adds `tokens` with score sum / generated_len^alpha if it is among the best.
  void add(Ids tokens, double sum, size_t generated_len) {
    const double score = sum / std::pow(double(generated_len), alpha_);
    if (list_.size() >= beam_ && !(score > worst_)) return;
    list_.push_back({score, std::move(tokens)});
    if (list_.size() > beam_) {  // drop the worst (the first of equals), as HF's sort of (score, index)
      size_t w = 0;
      for (size_t i = 1; i < list_.size(); ++i)
        if (list_[i].first < list_[w].first) w = i;
      list_.erase(list_.begin() + long(w));
      worst_ = list_[0].first;
      for (const auto& e : list_) worst_ = std::min(worst_, e.first);
    } else {
      worst_ = std::min(score, worst_);
    }
  }
  /// The best; of equal scores the last added (HF pops the end of a stable sort).
  Ids best() const {
    const std::pair<double, Ids>* b = nullptr;
    for (const auto& e : list_)
      if (!b || e.first >= b->first) b = &e;
    return b ? b->second : Ids{};
  }

 private:
  uint32_t beam_;
  double alpha_;
  double worst_ = 1e9;
  std::vector<std::pair<double, Ids>> list_;
};

/// HF's BeamHypotheses.is_done after a step that made `generated` tokens per hypothesis.
bool beam_done(const Ended& e, uint32_t beam, double best_sum, size_t generated, const GenerateOptions& o) {
  if (e.size() < beam) return false;
  switch (o.early_stopping) {
    case EarlyStopping::Enough:
      return true;
    case EarlyStopping::Heuristic:
      return e.worst() >= best_sum / std::pow(double(generated), o.length_penalty);
    case EarlyStopping::Never: {
      const double len = o.length_penalty > 0 ? double(o.max_new_tokens) : double(generated);
      return e.worst() >= best_sum / std::pow(len, o.length_penalty);
    }
  }
  return false;
}

/// Beam search as HF 4.44's _beam_search with BeamSearchScorer: per source, the
/// candidates are every live hypothesis's sum + processed log-probability; the
/// best 2·beam (more with several EOS tokens) are taken in order, an EOS among
/// the first `beam` ends its hypothesis, the others continue until `beam` do.
std::vector<Ids> beam_search(LogitsSource& src, const std::vector<Ids>& contexts, uint32_t vocab,
                             const GenerateOptions& o, const Stops& stops, int32_t pad) {
  const uint32_t batch = uint32_t(contexts.size()), beam = o.beam, max_new = o.max_new_tokens;
  const uint32_t slots = batch * beam;
  std::vector<std::vector<Hypothesis>> alive(batch);
  std::vector<Ended> ended(batch, Ended(beam, o.length_penalty));
  std::vector<bool> done(batch, false);
  for (uint32_t b = 0; b < batch; ++b) alive[b].push_back({0.0, {}, b * beam});

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
        if (sampling::processing(o)) {
          Ids history = contexts[b];
          history.insert(history.end(), h.tokens.begin(), h.tokens.end());
          sampling::process(lp, history, contexts[b].size() + max_new, stops.eos, o);
        }
        for (uint32_t v = 0; v < vocab; ++v) cands.push_back({h.score + lp[v], bi, int32_t(v)});
      }
      std::stable_sort(cands.begin(), cands.end(), [](const Cand& x, const Cand& y) {
        if (x.score != y.score) return x.score > y.score;
        if (x.bi != y.bi) return x.bi < y.bi;
        return x.v < y.v;
      });
      std::vector<Hypothesis> next;
      // HF looks at the best max(2, 1 + #EOS)·beam only, and fails if they hold fewer
      // than `beam` continuations; looking further only differs where HF would fail.
      for (size_t rank = 0; rank < cands.size() && next.size() < beam; ++rank) {
        const Cand& c = cands[rank];
        const Hypothesis& parent = alive[b][c.bi];
        if (stops.is_eos(c.v)) {
          if (rank < beam) ended[b].add(parent.tokens, c.score, parent.tokens.size() + 1);
          continue;
        }
        Ids toks = parent.tokens;
        toks.push_back(c.v);
        const uint32_t slot = b * beam + uint32_t(next.size());
        tokens[slot] = c.v;
        parents[slot] = int32_t(parent.slot);
        next.push_back({c.score, std::move(toks), slot});
      }
      alive[b] = std::move(next);
      done[b] = alive[b].empty() || beam_done(ended[b], beam, cands.empty() ? 0.0 : cands[0].score, t + 1, o);
    }
    if (std::all_of(done.begin(), done.end(), [](bool x) { return x; }) || t + 1 == max_new) break;
    logits = src.step(tokens, parents);
  }

  std::vector<Ids> out(batch);
  for (uint32_t b = 0; b < batch; ++b) {
    if (!done[b])  // ran out of steps: the live hypotheses compete as they are
      for (const Hypothesis& h : alive[b]) ended[b].add(h.tokens, h.score, h.tokens.size());
    out[b] = ended[b].best();
  }
  return out;
}

}  // namespace

int32_t next_token(const float* row, uint32_t vocab, const Ids& history, size_t context_len,
                   const std::vector<int32_t>& eos, const GenerateOptions& o, sampling::SplitMix64& rng) {
  sampling::Scores s(row, row + vocab);
  sampling::process(s, history, context_len + o.max_new_tokens, eos, o);
  if (o.do_sample) sampling::warp(s, o);
  return o.do_sample ? sampling::draw(s, rng.uniform()) : sampling::argmax(s);
}

std::vector<int32_t> stop_tokens(const ModelConfig& cfg, const GenerateOptions& o) {
  if (!o.stop_at_eos) return {};
  return !o.eos_token_ids.empty() ? o.eos_token_ids : !cfg.end_ids.empty() ? cfg.end_ids : std::vector<int32_t>{cfg.eos_id};
}

void check_token_options(const GenerateOptions& o, uint32_t vocab) {
  auto check = [vocab](const char* what, int32_t id) {
    if (id >= 0 && uint32_t(id) >= vocab)
      throw Error(std::string(what) + " " + std::to_string(id) + " is outside the model's output vocabulary [0, " +
                  std::to_string(vocab) + ")");
  };
  check("decoder_start_token_id", o.decoder_start_token_id);
  check("forced_bos_token_id", o.forced_bos_token_id);
  for (int32_t id : o.forced_eos_token_ids) check("forced_eos_token_id", id);
  for (int32_t id : o.eos_token_ids) check("eos_token_id", id);
  for (const Ids& seq : o.bad_words_ids)
    for (int32_t id : seq) check("bad_words_ids: token", id);
}

std::vector<Ids> search(LogitsSource& logits, const std::vector<Ids>& contexts, const ModelConfig& cfg,
                        const GenerateOptions& o) {
  Stops stops;
  stops.eos = stop_tokens(cfg, o);
  stops.filler = stops.eos.empty() ? cfg.pad_id : stops.eos[0];
  if (o.beam == 1) return greedy_or_sample(logits, contexts, cfg.out_vocab(), o, stops);
  std::vector<Ids> out = beam_search(logits, contexts, cfg.out_vocab(), o, stops, cfg.pad_id);
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
