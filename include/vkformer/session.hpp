// Running a model: forward passes and generation (greedy and beam search) with
// a KV cache. One queue submission per forward pass and per decode step.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <memory>
#include <vector>

#include "vkformer/model.hpp"

namespace vkf {

/// Token ids of one sequence (no padding: the engine pads and masks).
using Ids = std::vector<int32_t>;

/// forward()'s result: [batch, len, dim], where len is the longest sequence
/// (the target side for enc–dec models) and positions past a sequence's length
/// are zero.
struct ForwardOutput {
  uint32_t batch = 0, len = 0, dim = 0;
  std::vector<uint32_t> lengths;  ///< valid positions of each sequence
  std::vector<float> data;        ///< batch·len·dim, C order
};

/// embed()'s result: one row per sequence.
struct EmbedOutput {
  uint32_t batch = 0, dim = 0;
  std::vector<uint32_t> lengths;  ///< tokens each embedding used (after the max_positions cap)
  std::vector<float> data;        ///< batch·dim, row b = sequence b's embedding (unit length unless not normalized)
};

/// forward()'s and embed()'s optional inputs and choices, for the families
/// that have them (the Hugging Face encoders: bert, roberta, xlm-roberta,
/// distilbert). Others refuse any option that is set.
struct RunOptions {
  /// Token types of each sequence (BERT's token_type_ids), each as long as its
  /// ids, below the config's type_vocab_size; empty: all 0.
  std::vector<Ids> type_ids;
  /// forward(): "" the model's own output (a head's logits, else the last
  /// hidden state), "hidden" (the last hidden state) or "pooler" (the pooler's
  /// output, [batch, 1, d]). Sequence-level outputs have len 1.
  std::string output;
  /// embed(): "" the directory's pooling (sentence-transformers' modules.json
  /// and 1_Pooling), or "mean", "cls", "max", "mean_sqrt_len".
  std::string pooling;
  /// embed(): -1 as the directory says (a 2_Normalize module), 0 no, 1 L2-normalize.
  int normalize = -1;
};

/// When beam search stops, as Hugging Face's `early_stopping` (BeamHypotheses.is_done):
/// a source is done when `beam` hypotheses have ended and...
enum class EarlyStopping {
  Enough,     ///< true: ...that is all (the search of the "transformer" family's reference)
  Heuristic,  ///< false (HF's default): ...no live one can beat the worst of them by its score
              ///< now divided by (generated length)^length_penalty
  Never,      ///< "never": ...none could, even at max_new_tokens (length_penalty > 0)
};

/// How generate()'s KV cache stores K and V (GenerateOptions::kv_cache). A
/// forward pass has no cache and is the same whatever this says.
enum class KvCacheType {
  /// fp16 when the model's family asks for it (ModelConfig::kv_cache_f16_default)
  /// and the device can store fp16 tensors (Capabilities::f16_tensors()), else fp32.
  Auto,
  F32,  ///< 4 bytes a value: K and V as the layers compute them
  /// 2 bytes a value, half the memory: K and V are rounded to fp16 as they are
  /// appended (attention still sums in fp32). Needs fp16 tensors, natively or packed.
  F16,
};

/// "auto", "f32" or "f16".
const char* kv_cache_type_name(KvCacheType t);
/// Reads kv_cache_type_name()'s names (also "fp32", "fp16").
/// @throws vkf::Error naming `what` and the valid names.
KvCacheType parse_kv_cache_type(const std::string& s, const std::string& what = "kv_cache");
/// The dtype (F32 or F16) of a KV cache of type `t` for a model of `cfg` on a
/// device with `caps`: Auto as it says, F16 only where caps.f16_tensors().
/// @throws vkf::Error for F16 on a device (or profile) without fp16 tensors.
DType kv_cache_dtype(KvCacheType t, const ModelConfig& cfg, const Capabilities& caps);

/// How generate() chooses tokens. The defaults are Hugging Face generate()'s (with
/// max_new_tokens 32); read_generation_config() takes them from a model directory.
/// Every choice is made on the host in double precision: the same options, seed and
/// inputs give the same tokens on any device. docs/cli.md#sampling has the order.
struct GenerateOptions {
  uint32_t beam = 1;              ///< 1: greedy (or sampling with do_sample)
  uint32_t max_new_tokens = 32;
  /// Beam score of an ended hypothesis = Σ log p / (generated length, EOS included)^length_penalty,
  /// of one that reached max_new_tokens: the same over its length (HF's BeamSearchScorer).
  double length_penalty = 1.0;
  /// Beam search's stopping rule. HF's default is Heuristic (early_stopping false), which
  /// read_generation_config() gives directories that transformers wrote; the default here
  /// is the "transformer" family's reference search.
  EarlyStopping early_stopping = EarlyStopping::Enough;
  bool use_cache = true;          ///< false: recompute the whole prefix every step (for checking)
  /// The KV cache's storage (with use_cache): fp32, fp16, or the model's and device's choice.
  KvCacheType kv_cache = KvCacheType::Auto;
  bool stop_at_eos = true;        ///< false: always generate max_new_tokens (for benchmarks)

  /// true: draw each token from the processed distribution (beam must be 1); false:
  /// greedy, or beam search with beam > 1.
  bool do_sample = false;
  /// Sampling: logits are divided by this (HF's TemperatureLogitsWarper); > 0 and finite.
  /// 0 is accepted only without do_sample (it then means greedy).
  double temperature = 1.0;
  /// Sampling: keep the top_k largest logits (and ties with the k-th); 0: off.
  /// HF's default, 50, is the default here too.
  int32_t top_k = 50;
  /// Sampling: nucleus filtering, keep the smallest set of largest-probability tokens
  /// whose probabilities sum past top_p (HF's TopPLogitsWarper); in (0, 1], 1: off.
  double top_p = 1.0;
  /// Sampling: drop tokens whose probability is below min_p × the top probability
  /// (HF's MinPLogitsWarper); in [0, 1], 0: off.
  double min_p = 0.0;
  /// HF's RepetitionPenaltyLogitsProcessor, in every mode: the logit of each token
  /// already in the sequence (the prompt too, for decoder-only models; BOS and the
  /// generated tokens for enc–dec ones) is multiplied by it when negative, else
  /// divided by it. > 0 and finite; 1: off.
  double repetition_penalty = 1.0;
  /// HF's NoRepeatNGramLogitsProcessor, in every mode: a token that would repeat an
  /// n-gram of this size already in the sequence (as repetition_penalty counts it)
  /// is banned; 0: off.
  uint32_t no_repeat_ngram_size = 0;
  /// Sampling: the seed of the host generator (splitmix64; source b's generator
  /// starts from seed + b, and each draw is (next() >> 11) · 2⁻⁵³ in [0, 1)).
  uint64_t seed = 0;
  /// Tokens that end a sequence; empty: the model config's (ModelConfig::end_ids, else eos_id).
  std::vector<int32_t> eos_token_ids;
  /// The token an enc–dec decoder starts from (HF's decoder_start_token_id); -1: the
  /// model config's bos_id (for HF families, their config's decoder_start_token_id).
  int32_t decoder_start_token_id = -1;
  /// HF's ForcedBOSTokenLogitsProcessor: the first generated token is this one; -1: off.
  int32_t forced_bos_token_id = -1;
  /// HF's ForcedEOSTokenLogitsProcessor: the max_new_tokens-th token is one of these
  /// (the first, unless processors ban it); empty: off.
  std::vector<int32_t> forced_eos_token_ids;
  /// HF's NoBadWordsLogitsProcessor: a token that would complete one of these sequences
  /// is never generated (one-token sequences: never at all). Sequences equal to [eos]
  /// are dropped, as HF drops them.
  std::vector<Ids> bad_words_ids;
  /// HF's MinLengthLogitsProcessor: EOS is banned while the sequence (with what it held
  /// before the first new token, as repetition_penalty counts it) is shorter; 0: off.
  uint32_t min_length = 0;
  /// The token an empty decoder-only source starts from (HF's bos_token_id);
  /// -1: none, and an empty source is an error.
  int32_t bos_token_id = -1;
  /// Called with (source index, token) for each token as it is chosen (greedy and
  /// sampling: step by step; beam search: the winners' tokens after the search),
  /// never with EOS. Returning false ends that source's sequence after this token
  /// (stop strings, streaming). Empty: not called.
  std::function<bool(uint32_t source, int32_t token)> on_token;
};

/// Checks `o`: beam ≥ 1, no do_sample with beam > 1, finite values, temperature > 0
/// with do_sample (≥ 0 without), top_k ≥ 0, 0 < top_p ≤ 1, 0 ≤ min_p ≤ 1,
/// repetition_penalty > 0. generate() calls it.
/// @throws vkf::Error naming the first bad option and its value.
void validate(const GenerateOptions& o);

/// `defaults` updated by DIR/generation_config.json when it exists (do_sample,
/// temperature, top_k, top_p, min_p, repetition_penalty, no_repeat_ngram_size,
/// max_new_tokens, num_beams, length_penalty, early_stopping (true, false or "never";
/// false when absent, HF's default), eos_token_id as a number or a list, bos_token_id,
/// decoder_start_token_id, forced_bos_token_id, forced_eos_token_id, bad_words_ids,
/// min_length; null values and other keys are ignored). Without that file, a
/// config.json that transformers wrote (it has "transformers_version") gives the same
/// keys, as HF's GenerationConfig.from_model_config takes them from the model config.
/// @throws vkf::Error "FILE: key ..." for invalid JSON, a value of the wrong type, or
/// a value validate() refuses.
GenerateOptions read_generation_config(const std::string& dir, GenerateOptions defaults = {});

/// Counters of the last call: forward(), generate(), embed() or record_forward()
/// (which submits nothing; its dispatches are those it recorded).
struct RunStats {
  uint64_t submissions = 0;       ///< queue submissions in all
  /// Of the call's wall time, the time its passes spent in the queue (submission
  /// to fence); the rest is the host's (uploads of the call's own, recording, reading).
  double queue_ms = 0;
  uint64_t steps = 0;             ///< decode steps after the first token's pass
  uint64_t dispatches = 0;        ///< dispatches of the last recorded command buffer
  std::vector<double> step_ms;    ///< wall time of each decode step (record, submit, wait, read)
  /// Of each step_ms, the time in the queue: from submitting the step to its
  /// fence. The rest is the host's: recording, writing inputs, reading logits.
  std::vector<double> step_queue_ms;
  uint64_t step_submissions = 0;  ///< queue submissions of the last decode step
  /// With profiling on: each dispatch of the last submission, labelled
  /// "<scope>/<op>/<variant>" (scope: embed, encoder.N, decoder.N, final_norm, generator...).
  std::vector<DispatchTiming> timings;
};

/// Runs one model. Plans (buffers + recorded command buffers) are cached by
/// shape; past 16 shapes the least recently used one is dropped. A Session is
/// used from one thread at a time.
class Session {
 public:
  explicit Session(std::shared_ptr<Model> model);
  ~Session();

  /// Runs the whole stack on a batch. Enc–dec models need one target per source.
  /// @throws vkf::Error on bad ids (outside the vocabulary, empty, longer than max_positions).
  ForwardOutput forward(const std::vector<Ids>& src, const std::vector<Ids>& tgt = {});
  /// forward() with token types or another output (RunOptions).
  /// @throws vkf::Error as forward(), and for an option the model's family does not have.
  ForwardOutput forward(const std::vector<Ids>& src, const std::vector<Ids>& tgt, const RunOptions& options);

  /// Generates a continuation of each source: for enc–dec models the target
  /// after BOS, for decoder-only models the tokens after the prompt; up to, not
  /// including, EOS.
  std::vector<Ids> generate(const std::vector<Ids>& src, const GenerateOptions& options = {});

  /// Records a forward pass into `rec` without submitting it: a recorder on the
  /// host's command buffer (way (b)) or one for Context::submit_async (way (a)).
  /// The ids travel inside the command buffer. Returns the output tensor
  /// [batch, len, dim] (positions past a sequence's end hold unspecified
  /// values); it is valid until this Session next runs the same shape. With
  /// `out` (e.g. a wrapped host buffer of batch·len·dim f32), the output is also
  /// copied there.
  Tensor record_forward(Recorder& rec, const std::vector<Ids>& src, const std::vector<Ids>& tgt = {},
                        Tensor* out = nullptr);

  /// Sentence embeddings of a "use_lite" model: one [d_model] unit vector per
  /// sequence of token ids (from its tokenizer, no BOS/EOS), computed as one
  /// padded batch in one queue submission. As the TF graph does, only the
  /// first max_positions (128) tokens of a sequence count; an empty sequence
  /// gets the embedding of zero tokens (normalized tanh of the pooler's bias).
  /// @throws vkf::Error for another model type, no sequences, or an id outside the vocabulary.
  EmbedOutput embed(const std::vector<Ids>& ids);
  /// Sentence embeddings of an encoder with sentence-transformers pooling (the
  /// directory's, or options.pooling): [d] per sequence, unit length when the
  /// directory or options.normalize says so. Ids as its tokenizer gives them
  /// (with [CLS]/[SEP]), at most the model's maximum length each.
  /// @throws vkf::Error as embed(), and when no pooling is known.
  EmbedOutput embed(const std::vector<Ids>& ids, const RunOptions& options);

  const RunStats& stats() const { return stats_; }
  /// Brackets every dispatch with timestamp queries from now on (and serializes
  /// them, so each time is the kernel's own); stats().timings then has them.
  void set_profiling(bool on);
  const Model& model() const { return *model_; }

  struct Impl;

 private:
  friend class DecodeBatch;  // runs its steps on this session's Impl
  std::shared_ptr<Model> model_;
  std::unique_ptr<Impl> impl_;
  RunStats stats_;
};

}  // namespace vkf
