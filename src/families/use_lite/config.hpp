// use_lite's own config.json settings (beyond ModelConfig's generic fields).
#pragma once

#include "model/family.hpp"

namespace vkf {

struct UseLiteConfig : FamilyConfig {
  uint32_t embed_dim = 0;        ///< embedding width, the first layer's input width
  float embedding_scale = 1.0f;  ///< token embeddings × this before the timing signal
  float l2_eps = 1e-12f;         ///< ε of the final L2 normalization
};

/// A use_lite config's own settings. @throws vkf::Error for another family's config.
const UseLiteConfig& use_lite_config(const ModelConfig& c);

}  // namespace vkf
