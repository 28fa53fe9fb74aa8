// `vkformer kernel`: runs one registered op (src/ops/registry.hpp) on given
// shapes, checks it against its CPU reference, and times it with timestamp
// queries. The seed of `vkformer bench ops` and `vkformer pipelines`.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ops/registry.hpp"
#include "vkformer/context.hpp"

namespace vkf::tools {

struct KernelOptions {
  std::string op = "gemm";    ///< a registered op (op_names())
  std::string variant;        ///< "" (engine's pick), a name, or "all"
  std::string dtype = "f32";  ///< storage of weights / tables / K,V (parsed into shape.dtype)
  std::string act = "none";   ///< gemm: none, relu, gelu, gelu_tanh, silu, tanh
  OpShape shape;              ///< sizes; dtype and act come from the strings above
  int warmup = 2, repeat = 10;
  bool check = true;
  /// The shape with dtype and act parsed. @throws vkf::Error naming --dtype or --act.
  OpShape resolved() const;
};

struct KernelResult {
  std::string op, variant, shape, spec;
  std::vector<std::pair<std::string, uint32_t>> spec_values;  ///< spec, as (name, value)
  double flops = 0, bytes = 0;  ///< per run, as the op counts them
  double median_ms = 0, min_ms = 0, max_ms = 0, wall_ms = 0;
  std::vector<double> runs_ms;  ///< each timed run's device time, in order
  double gflops = 0, gbps = 0;
  double max_error = -1;  ///< vs the CPU reference; -1 when not checked
  bool checked = false, passed = true, picked = false;
  bool tuned = false;  ///< a tuning database entry chose the configuration
};

/// The median of timings (the mean of the middle two for an even count; 0 when empty).
double median(std::vector<double> v);
/// Runs the kernel for each requested variant. Throws vkf::Error on bad options.
/// Refuses a shape before anything is allocated: a size of 0 or less is a
/// UsageError (it would divide by zero or wrap around); buffers needing more
/// memory than the device has, or more than half the host's (the case keeps
/// its inputs and the CPU reference there), a vkf::Error. Tensors larger than
/// one binding are fine: ops split them.
void check_shape(const Context& ctx, const OpShape& s);
/// --repeat in 1..1e6 and --warmup in 0..1e6. @throws UsageError
void check_runs(const KernelOptions& o);

std::vector<KernelResult> run_kernel(Context& ctx, const KernelOptions& o);
/// Times configurations of one case side by side, one result each: `configs[i]`
/// records configuration i (the caller may force a tuning around its call);
/// the timed runs alternate between them, so a slow spell of the machine (on 2
/// cores, another process holding one) falls on all alike.
std::vector<KernelResult> run_kernel_side_by_side(
    Context& ctx, const KernelOptions& o, const std::vector<std::function<OpInfo(Recorder&, const OpCase&)>>& configs);
/// The same on a case the caller made (o.op names its op; o.shape is not used).
std::vector<KernelResult> run_kernel_side_by_side(
    Context& ctx, const OpCase& c, const KernelOptions& o,
    const std::vector<std::function<OpInfo(Recorder&, const OpCase&)>>& configs);
/// Prints results as a table.
void print_results(const std::vector<KernelResult>& r);
/// Creates the pipelines of every registered op's variants and runs each once
/// on small shapes; returns how many pipelines were created.
size_t create_all_pipelines(Context& ctx);

}  // namespace vkf::tools
