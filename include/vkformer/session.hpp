// Running a model: forward passes and generation (greedy and beam search) with
// a KV cache. One queue submission per forward pass and per decode step.
#pragma once

#include <cstdint>
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

struct GenerateOptions {
  uint32_t beam = 1;              ///< 1: greedy
  uint32_t max_new_tokens = 32;
  double length_penalty = 1.0;    ///< beam score = Σ log p / (generated length)^length_penalty
  bool use_cache = true;          ///< false: recompute the whole prefix every step (for checking)
  bool stop_at_eos = true;        ///< false: always generate max_new_tokens (for benchmarks)
};

/// Counters of the last call: forward(), generate(), embed() or record_forward()
/// (which submits nothing; its dispatches are those it recorded).
struct RunStats {
  uint64_t submissions = 0;       ///< queue submissions in all
  uint64_t steps = 0;             ///< decode steps after the first token's pass
  uint64_t dispatches = 0;        ///< dispatches of the last recorded command buffer
  std::vector<double> step_ms;    ///< wall time of each decode step (record, submit, wait, read)
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
  std::shared_ptr<Model> model_;
  std::unique_ptr<Impl> impl_;
  RunStats stats_;
};

}  // namespace vkf
