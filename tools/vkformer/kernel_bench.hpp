// `vkformer kernel`: runs one kernel on given shapes, checks it against its CPU
// reference, and times it with timestamp queries. The seed of `vkformer bench`.
#pragma once

#include <string>
#include <vector>

#include "vkformer/context.hpp"

namespace vkf::tools {

struct KernelOptions {
  std::string op = "gemm";   ///< gemm, attention_scores, masked_softmax, attention_values,
                             ///< flash_attention, attention (unfused chain), layernorm,
                             ///< embedding, add, topk, copy_rows
  std::string variant;       ///< "" (engine's pick), a name, or "all"
  std::string dtype = "f32"; ///< storage of weights / tables / K,V
  std::string act = "none";  ///< gemm: none, relu, gelu, gelu_tanh, silu
  bool bias = true, residual = false;
  int64_t m = 128, n = 768, k = 768;                  ///< gemm, add (m·n), layernorm (m rows of n)
  uint32_t batch = 1, heads = 12, head_dim = 64, q_len = 128, kv_len = 128;  ///< attention
  std::string mask = "none"; ///< none, padding, causal, both
  uint32_t topk = 1;
  int warmup = 2, repeat = 10;
  bool check = true;
};

struct KernelResult {
  std::string op, variant, shape, spec;
  std::vector<std::pair<std::string, uint32_t>> spec_values;  ///< spec, as (name, value)
  double flops = 0, bytes = 0;  ///< per run, as the op counts them
  double median_ms = 0, min_ms = 0, max_ms = 0, wall_ms = 0;
  double gflops = 0, gbps = 0;
  double max_error = -1;  ///< vs the CPU reference; -1 when not checked
  bool checked = false, passed = true, picked = false;
};

/// Runs the kernel for each requested variant. Throws vkf::Error on bad options.
std::vector<KernelResult> run_kernel(Context& ctx, const KernelOptions& o);
/// Prints results as a table.
void print_results(const std::vector<KernelResult>& r);
/// Creates the pipelines of every kernel variant and runs each once on small
/// shapes; returns how many pipelines were created.
size_t create_all_pipelines(Context& ctx);
/// The op names run_kernel() knows.
std::vector<std::string> kernel_ops();

}  // namespace vkf::tools
