#include "families/kv_cache_source.hpp"

#include <algorithm>
#include <cstring>

#include "vk/recorder_impl.hpp"

namespace vkf {

std::vector<int32_t> iota_i32(size_t n) {
  std::vector<int32_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = int32_t(i);
  return v;
}

void write_step_input(Recorder& rec, const Tensor& t, const void* data, size_t bytes) {
  if (bytes != t.bytes())
    throw Error("internal: " + std::to_string(bytes) + " bytes for the step input " + t.describe());
  std::memcpy(internals(rec).host_input(t), data, bytes);
}

std::vector<float> submit_and_read(Runner& s, Recorder& rec, const Tensor& t) {
  if (t.dtype() != DType::F32) throw Error("internal: reading " + t.describe() + " as f32");
  const uint8_t* host = internals(rec).host_output(t);
  s.submit(rec);
  std::vector<float> out(size_t(t.numel()));
  std::memcpy(out.data(), host, out.size() * 4);
  return out;
}

KvCacheSource::KvCacheSource(Runner& s, uint32_t batch, uint32_t beam, uint32_t vocab)
    : s_(s), ctx_(s.ctx), beam_(beam), batch_(batch), slots_(batch * beam) {
  parents_ = ctx_.tensor({slots_}, DType::I32);
  logits_ = ctx_.tensor({slots_, 1, int64_t(vocab)});
  // Slot s belongs to source s / beam.
  std::vector<int32_t> owner(slots_);
  for (uint32_t i = 0; i < slots_; ++i) owner[i] = int32_t(i / beam_);
  owner_ = ctx_.tensor_i32({slots_}, owner);
  for (auto& o : owner) o *= int32_t(beam_);
  first_slot_ = ctx_.tensor_i32({slots_}, owner);
}

void KvCacheSource::make_caches(size_t layers, uint32_t max_len, uint32_t width, DType dtype) {
  width_ = width;
  for (auto& set : caches_)
    for (size_t l = 0; l < layers; ++l) set.push_back(ctx_.tensor({slots_, max_len, width}, dtype));
}

std::vector<float> KvCacheSource::step(const std::vector<int32_t>& tokens, const std::vector<int32_t>& parents) {
  Recorder& rec = s_.step_recorder();
  if (parents != iota_i32(slots_)) {
    write_step_input(rec, parents_, parents.data(), parents.size() * 4);
    rec.set_scope("beam_reorder");
    reorder(rec, parents_);
  }
  record_step(rec, tokens);
  return finish(rec);
}

std::vector<float> KvCacheSource::finish(Recorder& rec) { return submit_and_read(s_, rec, logits_); }

void KvCacheSource::reorder(Recorder& rec, const Tensor& index) {
  for (size_t l = 0; l < caches_[cur_].size(); ++l) {
    CopyRowsArgs c;
    c.src = &caches_[cur_][l];
    c.dst = &caches_[1 - cur_][l];
    c.batch = slots_;
    c.rows = filled_;
    c.width = width_;
    c.index = &index;
    copy_rows(rec, c);
  }
  cur_ = 1 - cur_;
}

Tensor KvCacheSource::slot_rows_i32(const std::vector<int32_t>& per_source, uint32_t width) {
  std::vector<int32_t> rows(size_t(slots_) * width);
  for (uint32_t i = 0; i < slots_; ++i)
    std::copy_n(per_source.begin() + size_t(i / beam_) * width, width, rows.begin() + size_t(i) * width);
  return ctx_.tensor_i32({slots_, width}, rows);
}

void KvCacheSource::to_slots(Recorder& rec, const Tensor& src, Tensor& dst, uint32_t rows, uint32_t width) {
  CopyRowsArgs c;
  c.src = &src;
  c.dst = &dst;
  c.batch = slots_;
  c.rows = rows;
  c.width = width;
  c.index = &owner_;
  copy_rows(rec, c);
}

}  // namespace vkf
