// What every KV-cached decoder shares (the transformer family's and T5's):
// `beam` slots per source, each decoder layer's self-attention K/V cache
// double-buffered so that beams are reordered by gathering, and one submission
// per step. The caches are f32 or f16 (GenerateOptions::kv_cache, resolved by
// kv_cache_dtype()); copy_rows converts as it appends and copies the halves as
// it reorders, flash_attention reads either. A family records its embedding,
// layers and head in record_step.
#pragma once

#include <vector>

#include "run/logits_source.hpp"
#include "model/family.hpp"

namespace vkf {

/// Writes a decode step's input (ids, positions, a mask) into `t` for the
/// recording `rec`: where the host cannot map tensors (a discrete GPU) through
/// a host-visible buffer copied inside `rec`, so the step is one submission
/// (Recorder::Impl::host_input). Call it before recording what reads `t`.
void write_step_input(Recorder& rec, const Tensor& t, const void* data, size_t bytes);
/// Submits `rec` through `s` and returns the f32 tensor `t` as the step left
/// it, read through a copy recorded in `rec` where the host cannot map it.
std::vector<float> submit_and_read(Runner& s, Recorder& rec, const Tensor& t);

class KvCacheSource : public LogitsSource {
 public:
  /// Reorders the caches by `parents` when they are not the identity, then records the step.
  std::vector<float> step(const std::vector<int32_t>& tokens, const std::vector<int32_t>& parents) override;

 protected:
  /// logits_ is [slots, 1, vocab]; no caches yet (make_caches).
  KvCacheSource(Runner& s, uint32_t batch, uint32_t beam, uint32_t vocab);
  /// `layers` caches [slots, max_len, width] of `dtype` (f32 or f16), twice.
  void make_caches(size_t layers, uint32_t max_len, uint32_t width, DType dtype);
  /// The current caches, one per layer.
  std::vector<Tensor>& caches() { return caches_[cur_]; }
  /// Gathers every layer's cache rows [0, filled_) by slot `index` into the other buffer.
  void reorder(Recorder& rec, const Tensor& index);
  /// dst [slots, rows, width] = each source's rows of src [batch, rows, width], in all its slots.
  void to_slots(Recorder& rec, const Tensor& src, Tensor& dst, uint32_t rows, uint32_t width);
  /// [slots, width] i32: row b of `per_source` ([batch, width]) in each of source b's slots.
  Tensor slot_rows_i32(const std::vector<int32_t>& per_source, uint32_t width);
  /// Feeds one token per slot at cache row filled_ and leaves the next logits in logits_.
  virtual void record_step(Recorder& rec, const std::vector<int32_t>& tokens) = 0;
  /// Submits and reads logits_ back.
  std::vector<float> finish(Recorder& rec);

  Runner& s_;
  Context& ctx_;
  uint32_t beam_, batch_, slots_, filled_ = 0;
  Tensor logits_;      ///< [slots, 1, vocab]
  Tensor first_slot_;  ///< [slots] i32: the first slot of each slot's source

 private:
  std::vector<Tensor> caches_[2];  ///< per layer; caches_[cur_] is current
  int cur_ = 0;
  uint32_t width_ = 0;
  Tensor parents_, owner_;
};

/// 0, 1, ..., n − 1.
std::vector<int32_t> iota_i32(size_t n);

}  // namespace vkf
