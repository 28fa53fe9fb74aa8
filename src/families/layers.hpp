// Building blocks every family's layers are recorded with.
#pragma once

#include "model/weights.hpp"
#include "vkformer/ops.hpp"
#include "vkformer/recorder.hpp"

namespace vkf {

/// y = act(x·Wᵀ + b) + residual: one GEMM with its epilogue (GemmArgs::variant `variant`).
OpInfo linear(Recorder& rec, const Tensor& x, const LinearWeights& w, Tensor& y,
              Activation act = Activation::None, const Tensor* residual = nullptr,
              const std::string& variant = "");

/// y = LayerNorm(x) with the norm's γ and β and ε = layer_norm_eps.
void layer_norm(Recorder& rec, const ModelConfig& cfg, const NormWeights& w, const Tensor& x, Tensor& y);

}  // namespace vkf
