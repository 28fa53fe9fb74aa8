// What a Llama-architecture model's output means.
#include "families/llama/config.hpp"
#include "families/llama/family.hpp"

namespace vkf {

ModelInfo LlamaFamily::info(const Model& m) const {
  ModelInfo i;
  i.architecture = llama_config(m.config()).architecture;
  i.max_tokens = m.config().max_positions;
  return i;
}

}  // namespace vkf
