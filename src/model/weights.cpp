// The loading sequence every family goes through: its build_weights runs once
// as a dry run (names, shapes, bytes), the total is checked against the device
// memory left, and only then does it run again to upload.
#include "model/weights.hpp"

#include <new>

#include "model/family.hpp"
#include "model/loader.hpp"
#include "vk/context_impl.hpp"

namespace vkf {

std::unique_ptr<ModelWeights> load_weights(Context& ctx, const ModelConfig& cfg, const TensorFiles& files,
                                           Precision precision) {
  const Family& family = family_of(cfg);
  if (precision == Precision::F16 && !ctx.caps().f16_tensors())
    throw Error("load_weights: fp16 precision was requested but the device (" + ctx.caps().device_name +
                ", profile " + ctx.caps().profile + ") has no 16-bit storage; load the model in fp32 "
                "(F16 and BF16 files are converted)");
  // A block precision quantizes the linear layers' matrices (Loader::upload_matrix);
  // the other tensors are stored as precision f16 stores them, or in f32 without 16-bit storage.
  DType dtype = weight_format_info(precision).dtype, matrices = dtype;
  if (is_block_format(precision)) {
    if (precision != Precision::Q8_0 && precision != Precision::Q4_0 && precision != Precision::Q4_1)
      throw Error(std::string("load_weights: precision ") + weight_format_name(precision) +
                  " is not made at load (no quantizer); quantize-at-load takes q8_0, q4_0 or q4_1");
    dtype = ctx.caps().f16_tensors() ? DType::F16 : DType::F32;
  }
  Loader plan(&ctx, files, dtype, true, nullptr, matrices);
  family.build_weights(plan, cfg);
  const MemoryStatus mem = internals(ctx).memory->status();
  if (plan.planned() > mem.available())
    throw VulkanError(VK_ERROR_OUT_OF_DEVICE_MEMORY,
                      "out of device memory: the weights need " + format_bytes(plan.planned()) + " in " +
                          dtype_name(dtype) + ", more than the device can give: " + mem.describe());
  // Memory first (a table too big for the device says so), then what one binding covers.
  if (!plan.binding_error().empty()) throw Error(plan.binding_error());
  std::vector<std::string> warnings;
  Loader L(&ctx, files, dtype, false, &warnings, matrices);
  std::unique_ptr<ModelWeights> w;
  try {
    w = family.build_weights(L, cfg);
  } catch (const std::bad_alloc&) {  // host tables (sinusoids, conversions) under a memory limit
    throw Error(files.path() + ": out of host memory while converting and uploading the weights (" +
                format_bytes(plan.planned()) + " on the device)");
  }
  L.warn_unused();
  w->warnings = std::move(warnings);
  w->uploaded = L.uploaded();
  return w;
}

void check_weights(const ModelConfig& cfg, const TensorFiles& files) {
  Loader L(nullptr, files, DType::F32, false, nullptr);
  family_of(cfg).build_weights(L, cfg);
}

}  // namespace vkf
