#include "families/layers.hpp"

namespace vkf {

OpInfo linear(Recorder& rec, const Tensor& x, const LinearWeights& w, Tensor& y, Activation act,
              const Tensor* residual, const std::string& variant) {
  GemmArgs g;
  g.x = &x;
  g.w = &w.w;
  g.bias = w.b.empty() ? nullptr : &w.b;  // a head without bias (GPT-2's tied LM head)
  g.residual = residual;
  g.y = &y;
  g.act = act;
  g.variant = variant;
  if (w.parts.empty()) return gemm(rec, g);
  OpInfo info;
  for (const Tensor& part : w.parts) {  // each to its columns of y, with the stacked bias's
    g.w = &part;
    info = gemm(rec, g);
    g.y_col += uint32_t(part.dim(0));
  }
  return info;
}

void layer_norm(Recorder& rec, const ModelConfig& cfg, const NormWeights& w, const Tensor& x, Tensor& y) {
  layernorm(rec, {&x, nullptr, &w.gamma, &w.beta, &y, cfg.layer_norm_eps, ""});
}

}  // namespace vkf
