// RoPE's inverse frequencies, as transformers 4.44's rope init functions
// (modeling_rope_utils.py) compute them: torch float32 tensor arithmetic, with
// Python floats (doubles) where the code has them. Each fp32 operation here is
// one of torch's, in its order, so the frequencies agree to the last bit or so.
#include <cmath>

#include "families/llama/config.hpp"

namespace vkf {
namespace {

/// _compute_default_rope_parameters: 1 / base^(arange(0, dim, 2).float() / dim), in fp32.
std::vector<float> default_inv_freq(double base, uint32_t dim) {
  std::vector<float> f(dim / 2);
  const float b = float(base);
  for (uint32_t i = 0; i < dim / 2; ++i) {
    const float e = float(2 * i) / float(dim);
    f[i] = 1.0f / float(std::pow(double(b), double(e)));
  }
  return f;
}

}  // namespace

std::vector<float> llama_inv_freq(const ModelConfig& c, const LlamaConfig& l, uint32_t seq_len) {
  const uint32_t dim = c.head_width();
  const RopeScaling& s = l.rope_scaling;
  if (s.type == "dynamic") {
    // base · ((factor · seq_len / max) − (factor − 1))^(dim / (dim − 2)) in Python floats,
    // with seq_len no less than max_position_embeddings.
    const double max = c.max_positions, len = std::max<double>(seq_len, max);
    const double base = l.rope_theta * std::pow(s.factor * len / max - (s.factor - 1), double(dim) / double(dim - 2));
    return default_inv_freq(base, dim);
  }
  std::vector<float> f = default_inv_freq(l.rope_theta, dim);
  if (s.type == "linear") {
    for (float& x : f) x /= float(s.factor);  // inv_freq /= factor
  } else if (s.type == "llama3") {
    const float factor = float(s.factor), low = float(s.low_freq_factor);
    const float old_len = float(s.original_max_positions);
    const float low_wavelen = float(double(s.original_max_positions) / s.low_freq_factor);
    const float high_wavelen = float(double(s.original_max_positions) / s.high_freq_factor);
    const float span = float(s.high_freq_factor - s.low_freq_factor);
    for (float& x : f) {
      const float wavelen = float(2 * M_PI) / x;
      const float llama = wavelen > low_wavelen ? x / factor : x;  // long wavelengths: divided by factor
      const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
      if (medium) {  // (1 − smooth)·f/factor + smooth·f
        const float smooth = (old_len / wavelen - low) / span;
        x = (1.0f - smooth) * llama / factor + smooth * llama;
      } else {
        x = llama;
      }
    }
  }
  return f;
}

}  // namespace vkf
