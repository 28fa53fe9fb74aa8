// Greedy and beam search over any family's next-token logits.
#pragma once

#include "run/logits_source.hpp"
#include "run/sampling.hpp"
#include "vkformer/session.hpp"

namespace vkf {

/// Generates up to o.max_new_tokens after each source (greedy or sampling for
/// o.beam 1, else beam search), stopping at o.eos_token_ids (default cfg.end_ids, else cfg.eos_id)
/// unless !o.stop_at_eos, or when o.on_token says so. contexts[b] is what source
/// b's sequence holds before the first new token (the prompt of a decoder-only
/// model, BOS for an enc–dec one): the processors (repetition penalty, no-repeat
/// n-gram) count it.
/// The token an enc–dec decoder starts from: o.decoder_start_token_id, else cfg.bos_id.
inline int32_t decoder_start(const ModelConfig& cfg, const GenerateOptions& o) {
  return o.decoder_start_token_id >= 0 ? o.decoder_start_token_id : cfg.bos_id;
}

/// Checks that every token id of `o` (decoder start, forced BOS/EOS, bad words,
/// EOS) is below `vocab`. @throws vkf::Error naming the option and the id.
void check_token_options(const GenerateOptions& o, uint32_t vocab);

/// The tokens that end a sequence: o.eos_token_ids, else cfg.end_ids, else
/// cfg.eos_id; none when !o.stop_at_eos.
std::vector<int32_t> stop_tokens(const ModelConfig& cfg, const GenerateOptions& o);

/// One sequence's next token, greedy or drawn from `rng` (o.do_sample), after
/// HF's processors; `history` is its context (context_len tokens) and what it
/// generated. search() and the continuous batch (run/decode_batch.cpp) both pick by it.
int32_t next_token(const float* row, uint32_t vocab, const Ids& history, size_t context_len,
                   const std::vector<int32_t>& eos, const GenerateOptions& o, sampling::SplitMix64& rng);

std::vector<Ids> search(LogitsSource& logits, const std::vector<Ids>& contexts, const ModelConfig& cfg,
                        const GenerateOptions& o);

}  // namespace vkf
