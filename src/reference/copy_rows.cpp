#include <algorithm>
#include <string>

#include "vkformer/reference.hpp"

namespace vkf::ref {
namespace {

// A stride of 0 takes the tensor's default, as copy_rows() does.
uint64_t row_stride(uint32_t stride, const Tensor* t) {
  if (stride) return stride;
  if (!t || t->shape().empty()) throw Error("ref::copy_rows: a row stride of 0 needs its tensor's shape");
  return uint64_t(t->dim(-1));
}
uint64_t batch_stride(uint32_t stride, uint64_t row, const Tensor* t) {
  if (stride) return stride;
  if (!t || t->shape().size() < 2) throw Error("ref::copy_rows: a batch stride of 0 needs a 2-d tensor");
  return row * uint64_t(t->dim(-2));
}

}  // namespace

std::vector<float> copy_rows(const std::vector<float>& src, std::vector<float> dst,
                             const CopyRowsArgs& a, const std::vector<int32_t>* index) {
  if (a.rows == 0) return dst;
  const uint64_t sr = row_stride(a.src_row_stride, a.src), sb = batch_stride(a.src_batch_stride, sr, a.src);
  const uint64_t dr = row_stride(a.dst_row_stride, a.dst), db = batch_stride(a.dst_batch_stride, dr, a.dst);
  // Index values are clamped into the batches whose block lies inside src, as on the device.
  const uint64_t span = uint64_t(a.src_row0 + a.rows - 1) * sr + a.src_col + a.width;
  if (span > src.size()) throw Error("ref::copy_rows: src is too small");
  const int64_t src_batches = int64_t((src.size() - span) / sb + 1);
  const bool f16 = a.dst && a.dst->dtype() == DType::F16;
  for (uint32_t b = 0; b < a.batch; ++b) {
    const int64_t s = index ? std::clamp<int64_t>(index->at(b), 0, src_batches - 1) : b;
    for (uint32_t i = 0; i < a.rows; ++i)
      for (uint32_t c = 0; c < a.width; ++c) {
        const float v = src.at(uint64_t(s) * sb + (a.src_row0 + i) * sr + a.src_col + c);
        dst.at(b * db + (a.dst_row0 + i) * dr + a.dst_col + c) = f16 ? half_to_float(float_to_half(v)) : v;
      }
  }
  return dst;
}

}  // namespace vkf::ref
