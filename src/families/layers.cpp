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
  return gemm(rec, g);
}

void layer_norm(Recorder& rec, const ModelConfig& cfg, const NormWeights& w, const Tensor& x, Tensor& y) {
  layernorm(rec, {&x, nullptr, &w.gamma, &w.beta, &y, cfg.layer_norm_eps, ""});
}

}  // namespace vkf
