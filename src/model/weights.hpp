// A model's tensors on the device: what every family's weights are made of,
// and the generic loading sequence (check everything, check that it fits,
// upload) that each family's build_weights runs through (src/families).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "model/tensor_files.hpp"
#include "vkformer/model.hpp"
#include "vkformer/tensor.hpp"

namespace vkf {

/// A linear layer's weights, as linear() (src/families/layers.hpp) hands them to gemm.
struct LinearWeights {
  Tensor w;  ///< [out, in], stored in format()
  Tensor b;  ///< [out]
  /// A stacked projection whose parts are stored in different block formats (a
  /// GGUF's Q4_K_M Q, K and V): the parts [rows_i, in], each written to its
  /// columns of the output (w is empty; b is the stacked bias).
  std::vector<Tensor> parts;
  /// How w is stored: for the plain formats its dtype says it, whether the
  /// loader uploaded it or a family tied it to an embedding table.
  WeightFormat format() const { return weight_format_of(w.dtype()); }
};

struct NormWeights {
  Tensor gamma, beta;  ///< [d]
};

/// A family's tensors derive from this (e.g. TransformerWeights,
/// src/families/transformer/weights.hpp).
struct ModelWeights {
  virtual ~ModelWeights() = default;
  /// Loading went on despite these (Model::warnings()).
  std::vector<std::string> warnings;
  /// Device bytes uploaded, per storage type (Model::weight_memory()).
  std::map<DType, uint64_t> uploaded;
};

/// Checks every tensor the config implies (name, shape, dtype F32/F16/BF16) in
/// `files` (one SafeTensorsFile, or the shards of a sharded checkpoint),
/// checks that they fit in device memory, and uploads them in `precision`.
/// Unexpected tensors and NaN/Inf values become ModelWeights::warnings.
/// @throws vkf::Error naming the file and tensor: missing, wrong shape;
/// VulkanError (VK_ERROR_OUT_OF_DEVICE_MEMORY) when the weights do not fit.
std::unique_ptr<ModelWeights> load_weights(Context& ctx, const ModelConfig& cfg, const TensorFiles& files,
                                           Precision precision);

/// The same checks as load_weights without a device (no upload, no warnings).
/// @throws vkf::Error as load_weights does.
void check_weights(const ModelConfig& cfg, const TensorFiles& files);

}  // namespace vkf
