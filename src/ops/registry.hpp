// The op registry. Each op's file (src/ops/<op>.cpp) declares one descriptor
// with VKF_OP_DESCRIPTOR, and one line in src/ops/ops.cmake (vkf_add_op)
// registers its shader variants, its descriptor and its test. Everything that
// lists ops iterates over op_registry() instead of naming them: `vkformer
// kernel`, `bench ops` and `pipelines`, the generic op test (tests/op_test.hpp),
// the profile legs, and the kernel table check of docs/kernels.md.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vkformer/context.hpp"
#include "vkformer/ops.hpp"
#include "vkformer/tuning.hpp"

namespace vkf {

/// The sizes and options an op runs with: the union of what the ops take.
/// Each op reads the fields its descriptor lists in `dims` (and dtype, act,
/// bias, residual where it says so in its summary).
struct OpShape {
  int64_t m = 128, n = 768, k = 768;
  uint32_t batch = 1, heads = 12, head_dim = 64, q_len = 128, kv_len = 128;
  uint32_t kv_heads = 0;            ///< attention's K/V heads (AttentionShape::kv_heads); 0: heads
  uint32_t topk = 1;
  std::string mask = "none";        ///< none, padding, causal, both
  uint32_t window = 0;              ///< attention's sliding window (AttentionMask::window), with causal; 0: none
  DType dtype = DType::F32;         ///< storage of weights, tables or K/V
  Activation act = Activation::None;
  bool bias = true, residual = false;
  bool operator==(const OpShape& o) const;
};

/// Parses "m=128,n=768,dtype=f16,mask=causal" (keys: m n k batch heads kv_heads
/// head_dim q_len kv_len topk mask window dtype act bias residual) or "MxNxK" / "MxN"
/// on top of `base`. @throws vkf::Error naming the bad part.
OpShape parse_op_shape(const std::string& text, OpShape base = {});
/// "f32" / "f16" (also "fp32" / "fp16"), or a block format: "q8_0", "q4_0",
/// "q4_1", "q4_k", "q6_k" (gemm and embedding read them). @throws vkf::Error naming `what`.
DType parse_storage_dtype(const std::string& s, const std::string& what);
/// none relu gelu gelu_tanh silu tanh. @throws vkf::Error naming `what`.
Activation parse_activation_name(const std::string& s, const std::string& what);
/// The name parse_activation_name reads back ("none" for an unknown value).
const char* activation_name(Activation a);

/// One op set up on the device at one shape, with its inputs on the device and
/// on the host: record it (any variant, as often as wanted), submit, then ask
/// how far the device's output is from the double-precision CPU reference.
struct OpCase {
  std::string shape;  ///< for tables: "rows=128 d=768 f32"
  /// Records the op with `variant` ("" = the engine's pick) and returns what it dispatched.
  std::function<OpInfo(Recorder&, const std::string& variant)> record;
  /// After a submitted run: max |got − want| / max |want| (ref::max_rel_error),
  /// or for ops with exact outputs 0 when every value matches and 1 otherwise.
  std::function<double()> error;
  /// The error bound the op promises at this shape: the test and `vkformer kernel` check it.
  double bound = 1e-5;
  /// Host data and tensors the closures refer to, kept alive with the case.
  std::shared_ptr<void> keep;
};

/// Everything the tools and tests need to know about one op.
struct OpDescriptor {
  std::string name;
  std::string summary;                 ///< one line: what it computes
  std::vector<std::string> variants;   ///< what `variant` accepts besides "" (run by --variant all)
  std::vector<std::string> knobs;      ///< specialization constants chosen per device (OpInfo::spec)
  std::vector<std::string> dims;       ///< OpShape fields it reads, in label order
  std::vector<OpShape> bench_shapes;   ///< `bench ops` standard shapes
  /// Sets the op up at a shape. @throws vkf::Error for a shape the op refuses.
  std::function<OpCase(Context&, const OpShape&)> make_case;
  /// Chart label of a shape; default: the dims joined by "x".
  std::function<std::string(const OpShape&)> label;
  /// Microbenchmarks (device peak): not in "all", tests or the kernel table.
  bool internal = false;
  /// The configurations `vkformer tune` tries at a shape (a variant and knobs
  /// by the names in `knobs`), within the device's limits. Empty function: the
  /// op is not tuned. The op reads a tuned configuration under the shape class
  /// it reports in OpInfo::shape_class.
  std::function<std::vector<TunedConfig>(const Capabilities&, const OpShape&)> candidates;
};

/// A shader variant embedded in the library, as its op's CMake line declared it.
struct ShaderVariant {
  std::string name;     ///< "layernorm_subgroup_f16"
  std::string source;   ///< "layernorm.comp"
  std::string defines;  ///< "-DUSE_SUBGROUP=1 -DW_F16=1"
};

/// Every registered op, in registration order (src/ops/ops.cmake).
const std::vector<const OpDescriptor*>& op_registry();
/// The op named `name`, or nullptr.
const OpDescriptor* find_op(const std::string& name);
/// The op named `name`. @throws vkf::Error listing the known ops.
const OpDescriptor& op(const std::string& name);
/// Names of the registered ops, internal ones only when asked.
std::vector<std::string> op_names(bool with_internal = false);
/// The shader variants an op registered.
std::vector<ShaderVariant> op_shaders(const std::string& op);
/// The chart label of a shape for an op (descriptor's label or its dims).
std::string op_label(const OpDescriptor& d, const OpShape& s);

}  // namespace vkf

/// Defines the descriptor function the generated registry calls:
///   VKF_OP_DESCRIPTOR(layernorm) { return {"layernorm", "summary", variants, knobs, dims, shapes, case}; }
#define VKF_OP_DESCRIPTOR(op)                               \
  ::vkf::OpDescriptor vkf_make_op_##op();                  \
  const ::vkf::OpDescriptor& vkf_op_##op() {               \
    static const ::vkf::OpDescriptor d = vkf_make_op_##op(); \
    return d;                                              \
  }                                                        \
  ::vkf::OpDescriptor vkf_make_op_##op()
