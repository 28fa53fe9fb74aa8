// Inside a Session: forward plans cached by shape, and input checking shared
// by forward passes and generation.
#pragma once

#include <map>
#include <memory>
#include <tuple>

#include "run/stack.hpp"
#include "run/use_lite.hpp"
#include "vk/check.hpp"
#include "vkformer/session.hpp"

namespace vkf {

/// Everything one forward pass of a given (batch, src_len, tgt_len) needs:
/// buffers and a command buffer recorded once and resubmitted.
struct ForwardPlan {
  uint32_t batch = 0, src_len = 0, tgt_len = 0;
  Tensor src_ids, src_pad, tgt_ids, tgt_pad;  ///< [batch, len] i32
  Activations enc, dec;
  Tensor cross_kv;                            ///< [batch, src_len, 2d], reused by every layer
  Tensor logits;                              ///< [batch, len, vocab] when there is a generator
  Tensor out;                                 ///< logits, or the last hidden state
  std::unique_ptr<Recorder> rec;  ///< forward()'s command buffer, recorded on first use
  bool recorded = false;
};

/// Ids padded with pad_id into [batch, len], and the key padding mask
/// (1 where the id is pad_id, as PyTorch's `ids == pad_id`).
struct PaddedIds {
  uint32_t batch = 0, len = 0;
  std::vector<int32_t> ids, pad;
  std::vector<uint32_t> lengths;
};

/// Checks every id against the vocabulary and every length against
/// max_positions; `side` names the input in errors ("source", "target").
PaddedIds pad_batch(const std::vector<Ids>& seqs, int32_t pad_id, uint32_t vocab,
                    uint32_t max_positions, const char* side);

struct Session::Impl {
  explicit Impl(const Model& m) : model(m), cfg(m.config()), w(m.weights()), ctx(m.context()) {}
  const Model& model;
  const ModelConfig& cfg;
  const ModelWeights& w;
  Context& ctx;
  std::map<std::tuple<uint32_t, uint32_t, uint32_t>, std::unique_ptr<ForwardPlan>> plans;
  std::map<std::pair<uint32_t, uint32_t>, std::unique_ptr<UseLitePlan>> embed_plans;  ///< use_lite, by (batch, len)
  uint64_t last_dispatches = 0;  ///< of the last command buffer submitted
  std::vector<DispatchTiming> last_timings;
  bool profiling = false;
  /// Submits and notes what the stats report; device errors say what was submitted.
  void submit(Recorder& rec, const char* what = "a command buffer") {
    try {
      ctx.submit(rec);
    } catch (const VulkanError& e) {
      rethrow_with_context(e, std::string("submitting ") + what + " of " + std::to_string(rec.dispatches()) +
                                  " dispatches");
    }
    last_dispatches = rec.dispatches();
    last_timings = rec.timings();
  }

  ForwardPlan& plan(uint32_t batch, uint32_t src_len, uint32_t tgt_len);
  void record_pass(Recorder& rec, ForwardPlan& p);
  void pad_inputs(const std::vector<Ids>& src, const std::vector<Ids>& tgt, PaddedIds& s, PaddedIds& t);
  ForwardOutput forward(const std::vector<Ids>& src, const std::vector<Ids>& tgt);
};

}  // namespace vkf
