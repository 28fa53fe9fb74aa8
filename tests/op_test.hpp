// The generic op test. An op's test file lists its shapes and edge cases,
//   VKF_OP_SHAPES(layernorm, {"m=1,n=1", "m=37,n=127,residual=1,dtype=f16", ...})
// (the syntax of `vkformer bench ops --shape`; grid() spans a cross product of
// such parts), and each shape is checked
// through the op's registered case (src/ops/registry.hpp) against its CPU
// reference, within the bound the case states: for the engine's pick and every
// variant the device can run, once with the device's own capabilities and once
// choosing sizes as for a discrete GPU (wide workgroups), so that lavapipe runs
// those configurations too, and f16 shapes once more with packed fp16 loads. The op's special cases stay TESTs beside it.
#pragma once

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "ops/registry.hpp"
#include "test_util.hpp"

namespace vkf::test {

struct OpShapeParam {
  std::string op, shape;
};

inline std::ostream& operator<<(std::ostream& os, const OpShapeParam& p) { return os << p.op << " " << p.shape; }

/// Whether the device (under its profile) can run `variant` at `s`: fp16
/// tensors (native or packed) for f16 shapes, subgroup arithmetic for variants named for it
/// (the naming rule Pipelines::check_limits enforces).
inline bool device_runs(const Capabilities& c, const std::string& variant, const OpShape& s) {
  if (s.dtype == DType::F16 && !c.f16_tensors()) return false;
  // Block formats: gemm's texel variant reads them as R32_UINT words where the
  // device reads that format; broadcast never takes them.
  if (is_block_dtype(s.dtype) && variant.find("texel") != std::string::npos) return c.texel_u32 && c.texel_f32;
  if (is_block_dtype(s.dtype) && variant == "broadcast") return false;
  if (variant == "broadcast") return c.subgroup_shuffle;  // gemm's rows shared by shuffles
  if (variant == "split") return s.q_len <= 16;           // flash attention's for decoding (kSplitMaxRows)
  if (variant == "coopmat") return c.coopmat;  // gemm's tensor cores, any weight format
  return variant.find("subgroup") == std::string::npos || c.subgroup_arithmetic;
}

/// Whether this run is a capability leg: a profile or SwiftShader (VKF_TEST_LEG=1, set by
/// tests/CMakeLists.txt). There the op tests run at the device's own sizes and may run a
/// smaller set of shapes that still reaches every variant: on a CPU driver with a cold
/// shader cache, compiling pipelines (lavapipe does it at the first dispatch) is nearly
/// all of an op test's time, and every leg compiles its own.
inline bool in_capability_leg() {
  const char* e = std::getenv("VKF_TEST_LEG");
  return e && *e && std::string(e) != "0";
}

/// Whether this run is the subgroup-size leg (VKF_TEST_LEG=subgroup16: lavapipe at 512-bit
/// vectors, subgroups of 16). Its point is code that could assume a subgroup size, which only
/// variants using subgroup operations have; any other would only be compiled again for the
/// wider vectors.
inline bool in_subgroup_size_leg() {
  const char* e = std::getenv("VKF_TEST_LEG");
  return e && std::string(e) == "subgroup16";
}

/// Whether a dispatch of the resolved variant `variant` (OpInfo::variant) runs in this leg:
/// in the subgroup-size leg only those using subgroup operations (named for them, the rule
/// Pipelines::check_limits enforces, or gemm's broadcast, which shares rows by shuffles).
inline bool leg_runs_variant(const std::string& variant) {
  return !in_subgroup_size_leg() || variant.find("subgroup") != std::string::npos || variant == "broadcast";
}

class OpTest : public DeviceTest, public ::testing::WithParamInterface<OpShapeParam> {};
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OpTest);  // test_op_registry uses the helpers only

TEST_P(OpTest, MatchesReference) {
  const OpDescriptor& d = op(GetParam().op);
  const OpShape shape = parse_op_shape(GetParam().shape);
  // Every named variant (the engine's pick is one of them; the ops' own tests check the pick).
  std::vector<std::string> variants = d.variants;
  if (variants.empty()) variants = {""};
  int ran = 0;
  std::map<std::string, OpInfo> native;  // a GPU-size dispatch equal to the native one is not run twice
  // "packed": an f16 shape once more as a device without 16-bit storage runs it
  // (the *_packed shaders), when this device has 16-bit storage.
  // A capability leg's point is the device's own limits and features (in_capability_leg()):
  // the discrete-GPU sizes and the packed pass run in lavapipe's default leg (and the
  // no-fp16 profile runs packed natively); compiling them again per leg was most of a
  // cold suite's time.
  for (const char* sizes : {"native", "gpu", "packed"}) {
    if (in_capability_leg() && std::string(sizes) != "native") continue;
    ScopedCaps caps(ctx());
    if (std::string(sizes) == "gpu") caps->device_type = "discrete";
    if (std::string(sizes) == "packed") {
      if (shape.dtype != DType::F16 || !caps->storage_16bit || !caps->f16_packed) continue;
      caps->storage_16bit = false;
    }
    for (const auto& v : variants) {
      if (!device_runs(ctx().caps(), v, shape)) continue;
      SCOPED_TRACE(std::string(sizes) + " sizes, variant \"" + v + "\"");
      const OpCase c = d.make_case(ctx(), shape);
      Recorder rec(ctx());
      const OpInfo info = c.record(rec, v);
      if (!leg_runs_variant(info.variant)) continue;  // recorded, never dispatched: lavapipe compiles at the dispatch
      if (std::string(sizes) == "native") native[v] = info;
      else if (std::string(sizes) == "gpu" && native.count(v) && native[v].variant == info.variant &&
               native[v].spec == info.spec)
        continue;
      ctx().submit(rec);
      const double err = c.error();
      EXPECT_LE(err, c.bound) << c.shape;
      EXPECT_EQ(info.op, d.name);
      if (!v.empty() && v != "default") EXPECT_NE(info.variant.find(v), std::string::npos) << info.variant;
      ++ran;
    }
  }
  if (ran == 0) GTEST_SKIP() << "the device runs no variant at this shape";
}

/// The cross product of shape parts: grid({{"m=1", "m=37"}, {"n=3", "n=768"}})
/// gives "m=1,n=3", "m=1,n=768", "m=37,n=3", "m=37,n=768".
inline std::vector<std::string> grid(const std::vector<std::vector<std::string>>& parts) {
  std::vector<std::string> out = {""};
  for (const auto& options : parts) {
    std::vector<std::string> next;
    for (const auto& prefix : out)
      for (const auto& o : options) next.push_back(prefix.empty() ? o : prefix + "," + o);
    out = std::move(next);
  }
  return out;
}

inline std::vector<OpShapeParam> op_params(const std::string& op, const std::vector<std::string>& shapes) {
  std::vector<OpShapeParam> v;
  for (const auto& s : shapes) v.push_back({op, s});
  return v;
}

}  // namespace vkf::test

/// Instantiates the generic test of `op` over shapes (a vector of strings).
#define VKF_OP_SHAPES(op, ...) \
  INSTANTIATE_TEST_SUITE_P(op, OpTest, ::testing::ValuesIn(::vkf::test::op_params(#op, __VA_ARGS__)))
