// A model's tensors on the device, named for what they do in the layer.
#pragma once

#include <optional>
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
};

/// Checks every tensor the config implies (name, shape, dtype F32/F16/BF16) and
/// uploads it in `precision`. Warns on stderr about unexpected tensors and NaN/Inf.
/// @throws vkf::Error naming the file and tensor: missing, wrong shape.
std::unique_ptr<ModelWeights> load_weights(Context& ctx, const ModelConfig& cfg,
                                           const SafeTensorsFile& file, Precision precision);

/// The same checks as load_weights without a device (no upload, no warnings).
/// @throws vkf::Error as load_weights does.
void check_weights(const ModelConfig& cfg, const SafeTensorsFile& file);

}  // namespace vkf
