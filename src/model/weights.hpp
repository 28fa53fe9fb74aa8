// A model's tensors on the device, named for what they do in the layer.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vkformer/model.hpp"
#include "vkformer/tensor.hpp"

namespace vkf {

class SafeTensorsFile;

struct LinearWeights {
  Tensor w;  ///< [out, in]
  Tensor b;  ///< [out]
};

struct NormWeights {
  Tensor gamma, beta;  ///< [d]
};

struct EncoderLayerWeights {
  LinearWeights qkv;        ///< self_attn.in_proj_{weight,bias}: [3d, d]
  LinearWeights attn_out;   ///< self_attn.out_proj
  LinearWeights ff1, ff2;   ///< linear1 [d_ff, d], linear2 [d, d_ff]
  NormWeights norm1, norm2;
};

struct DecoderLayerWeights {
  LinearWeights self_qkv, self_out;  ///< self_attn
  LinearWeights cross_q;             ///< multihead_attn.in_proj rows [0, d)
  LinearWeights cross_kv;            ///< multihead_attn.in_proj rows [d, 3d)
  LinearWeights cross_out;           ///< multihead_attn.out_proj
  LinearWeights ff1, ff2;
  NormWeights norm1, norm2, norm3;
};

/// A use_lite layer (docs/model-format.md, tensors "layers.{i}.*").
struct UseLiteLayerWeights {
  NormWeights attn_norm, ffn_norm;
  LinearWeights qkv;                      ///< [3w, w], w the layer's input width
  LinearWeights attn_out;                 ///< [d_model, w]
  std::optional<LinearWeights> residual;  ///< [d_model, w] when w != d_model
  LinearWeights ff1, ff2;
};

/// The use_lite family's tensors.
struct UseLiteWeights {
  Tensor embed;    ///< [vocab_size, embed_dim]
  Tensor timing;   ///< [max_positions, embed_dim] f32: concat_sinusoidal_table(timing.inv_timescales)
  std::vector<UseLiteLayerWeights> layers;
  LinearWeights pooler;  ///< pooler.dense [d_model, d_model], tanh
};

/// A transformer model's tensors, or (`use_lite` set) a use_lite model's.
struct ModelWeights {
  Tensor src_embed;   ///< [src_vocab, d]
  Tensor tgt_embed;   ///< [tgt_vocab, d], enc–dec only
  Tensor src_pos;     ///< [max_positions, d]: learned table or sinusoidal_table(); empty for "none"
  Tensor tgt_pos;     ///< the same for the decoder (enc–dec only)
  std::vector<EncoderLayerWeights> encoder;
  std::optional<NormWeights> encoder_norm;
  std::vector<DecoderLayerWeights> decoder;
  std::optional<NormWeights> decoder_norm;
  std::optional<LinearWeights> generator;
  std::optional<UseLiteWeights> use_lite;
  /// Loading went on despite these (Model::warnings()).
  std::vector<std::string> warnings;
};

/// Checks every tensor the config implies (name, shape, dtype F32/F16/BF16),
/// checks that they fit in device memory, and uploads them in `precision`.
/// Unexpected tensors and NaN/Inf values become ModelWeights::warnings.
/// @throws vkf::Error naming the file and tensor: missing, wrong shape;
/// VulkanError (VK_ERROR_OUT_OF_DEVICE_MEMORY) when the weights do not fit.
std::unique_ptr<ModelWeights> load_weights(Context& ctx, const ModelConfig& cfg,
                                           const SafeTensorsFile& file, Precision precision);

/// The same checks as load_weights without a device (no upload, no warnings).
/// @throws vkf::Error as load_weights does.
void check_weights(const ModelConfig& cfg, const SafeTensorsFile& file);

}  // namespace vkf
