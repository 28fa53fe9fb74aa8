// The use_lite family's tensors on the device (docs/model-format.md).
#pragma once

#include <optional>
#include <vector>

#include "model/weights.hpp"

namespace vkf {

/// A layer (tensors "layers.{i}.*").
struct UseLiteLayerWeights {
  NormWeights attn_norm, ffn_norm;
  LinearWeights qkv;                      ///< [3w, w], w the layer's input width
  LinearWeights attn_out;                 ///< [d_model, w]
  std::optional<LinearWeights> residual;  ///< [d_model, w] when w != d_model
  LinearWeights ff1, ff2;
};

struct UseLiteWeights : ModelWeights {
  Tensor embed;    ///< [vocab_size, embed_dim]
  Tensor timing;   ///< [max_positions, embed_dim] f32: concat_sinusoidal_table(timing.inv_timescales)
  std::vector<UseLiteLayerWeights> layers;
  LinearWeights pooler;  ///< pooler.dense [d_model, d_model], tanh
};

}  // namespace vkf
