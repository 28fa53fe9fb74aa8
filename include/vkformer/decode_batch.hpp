// Continuous batching: sequences decoded together, one token each per step(),
// that join (their prompt prefilled alone into a free slot) and leave (when
// they finish) between steps. Each sequence's tokens equal Session::generate's
// for it alone, greedy or sampled (its own generator, seeded o.seed): the
// step's kernels sum every row as they would for that row alone.
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "vkformer/session.hpp"

namespace vkf {

class SlotSource;

class DecodeBatch {
 public:
  /// Up to `slots` sequences of up to `max_len` rows (prompt + new tokens, at
  /// most the model's positions) on `session`'s model, which must outlive it,
  /// their KV caches stored as `kv_cache` says (kv_cache_dtype()).
  /// nullptr if the model's family has no such batch (T5).
  /// @throws vkf::Error for an fp16 cache on a device without fp16 tensors.
  static std::unique_ptr<DecodeBatch> make(Session& session, uint32_t slots, uint32_t max_len,
                                           KvCacheType kv_cache = KvCacheType::Auto);
  ~DecodeBatch();

  /// Whether add() takes this request: greedy or sampling with the KV cache
  /// stored as this batch's (o.kv_cache resolved the same), a non-empty prompt,
  /// prompt + max_new_tokens within max_len. Otherwise Session::generate runs
  /// it alone.
  bool fits(const Ids& prompt, const GenerateOptions& o) const;
  /// The dtype of the batch's KV caches: F32 or F16.
  DType kv_cache() const;
  bool full() const;
  /// Sequences decoding (finished ones leave at once).
  size_t size() const;

  /// Prefills `prompt` and picks its first token (o.on_token(0, token) as
  /// generate calls it); it may finish at once. Returns the sequence's id.
  /// @throws vkf::Error for what generate refuses (options, ids), or when full or !fits.
  uint64_t add(const Ids& prompt, const GenerateOptions& o);
  /// One token for every sequence, in one submission. Finished ones leave.
  void step();
  /// The sequences finished since the last call, with their tokens (as generate returns them).
  std::vector<std::pair<uint64_t, Ids>> take_finished();
  /// Forgets every sequence (after a device error).
  void clear();

 private:
  struct Seq;
  DecodeBatch(Session& s, std::unique_ptr<SlotSource> src, DType kv);
  /// Picks seq's next token from its logits row; false once it is finished.
  bool choose(Seq& seq, const float* row);

  Session& session_;
  std::unique_ptr<SlotSource> src_;
  DType kv_;
  std::vector<Seq> live_;  ///< live_[i] is in slot i
  std::vector<std::pair<uint64_t, Ids>> finished_;
  uint64_t next_id_ = 1;
};

}  // namespace vkf
