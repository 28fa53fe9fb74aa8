// Hugging Face's logits processors and warpers as pure host functions in double
// precision, the seeded generator, and the draw (docs/cli.md#sampling). Each
// function works on one row of scores; filtered scores become -infinity.
#pragma once

#include <cstdint>
#include <vector>

#include "vkformer/session.hpp"

namespace vkf::sampling {

using Scores = std::vector<double>;

/// RepetitionPenaltyLogitsProcessor: for each id in `history`, s < 0 ? s·penalty : s/penalty.
void repetition_penalty(Scores& s, const Ids& history, double penalty);
/// NoRepeatNGramLogitsProcessor: bans each token that would complete an n-gram
/// already in `history`.
void no_repeat_ngram(Scores& s, const Ids& history, uint32_t n);
/// NoBadWordsLogitsProcessor: bans the last token of each sequence of `bad` whose
/// other tokens end `history` (one-token sequences: always); sequences equal to
/// [e] for an e in `eos` are skipped, as HF filters them out.
void bad_words(Scores& s, const Ids& history, const std::vector<Ids>& bad, const std::vector<int32_t>& eos);
/// ForcedBOS/ForcedEOSTokenLogitsProcessor's forcing: every score -inf but those of
/// `ids`, which become 0.
void force(Scores& s, const std::vector<int32_t>& ids);
/// TemperatureLogitsWarper: s / t.
void temperature(Scores& s, double t);
/// TopKLogitsWarper: keeps the scores ≥ the max(k, keep)-th largest.
void top_k(Scores& s, uint32_t k, uint32_t keep = 1);
/// TopPLogitsWarper: sorted ascending (ties by id), drops the tokens whose
/// cumulative probability is ≤ 1 − p, always keeping the `keep` largest.
void top_p(Scores& s, double p, uint32_t keep = 1);
/// MinPLogitsWarper: drops the tokens with probability < p · the top probability,
/// always keeping the `keep` largest.
void min_p(Scores& s, double p, uint32_t keep = 1);

/// The processors that every mode applies, in HF's _get_logits_processor order:
/// repetition penalty, no-repeat-ngram, bad words, min length, forced BOS, forced
/// EOS. `history` is what the sequence holds so far (HF's input_ids), `max_length`
/// HF's max_length (what it held before the first new token + max_new_tokens),
/// `eos` the tokens that end it (bad words and min length use them).
void process(Scores& s, const Ids& history, size_t max_length, const std::vector<int32_t>& eos,
             const GenerateOptions& o);
/// Whether process() would change anything.
bool processing(const GenerateOptions& o);
/// The warpers of sampling in HF's _get_logits_warper order: temperature, top-k,
/// top-p, min-p (each only when it is on, as HF adds them).
void warp(Scores& s, const GenerateOptions& o);

/// splitmix64 (Steele, Lea, Flood 2014): state += 0x9E3779B97F4A7C15, then the
/// mix; uniform() is (next() >> 11) · 2⁻⁵³, in [0, 1).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

/// Inverse CDF over ids in order: w_i = exp(s_i − max s), the first id whose
/// running sum of w exceeds u · Σw (ids with w = 0 are never chosen).
int32_t draw(const Scores& s, double u);

/// Index of the largest score; ties go to the lowest index.
int32_t argmax(const Scores& s);

}  // namespace vkf::sampling
