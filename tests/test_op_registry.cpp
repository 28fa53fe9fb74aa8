// The op registry (src/ops/registry.hpp) is the one list of ops: every
// embedded shader belongs to a registered op, every op is whole (a case
// factory, variants, standard shapes), and the kernel table in
// docs/kernels.md lists exactly the registered ops.
#include <algorithm>
#include <fstream>
#include <set>
#include <tuple>

#include "op_test.hpp"
#include "vk/shader_registry.hpp"

namespace vkf::test {
namespace {

/// The op names in the first cell of docs/kernels.md's table rows (`name` ...).
std::vector<std::string> documented_ops() {
  std::ifstream in(std::string(VKF_DOCS_DIR) + "/kernels.md");
  EXPECT_TRUE(in) << "docs/kernels.md is missing";
  std::vector<std::string> ops;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const size_t end = line.find('`', 3);
    if (end != std::string::npos) ops.push_back(line.substr(3, end - 3));
  }
  return ops;
}

}  // namespace

TEST(OpRegistry, EveryOpIsWhole) {
  std::set<std::string> names;
  for (const OpDescriptor* d : op_registry()) {
    SCOPED_TRACE(d->name);
    EXPECT_TRUE(names.insert(d->name).second) << "registered twice";
    EXPECT_FALSE(d->summary.empty());
    EXPECT_FALSE(d->variants.empty());
    EXPECT_TRUE(bool(d->make_case));
    EXPECT_FALSE(d->dims.empty());
    if (!d->internal) EXPECT_FALSE(d->bench_shapes.empty()) << "no standard benchmark shape";
    EXPECT_EQ(find_op(d->name), d);
  }
  EXPECT_EQ(find_op("no_such_op"), nullptr);
  expect_error([] { op("no_such_op"); }, "unknown kernel \"no_such_op\" (known: gemm,");
}

TEST(OpRegistry, EveryShaderBelongsToARegisteredOp) {
  size_t listed = 0;
  for (const OpDescriptor* d : op_registry()) listed += op_shaders(d->name).size();
  for (const auto& b : spirv_blobs()) EXPECT_NE(find_op(b.op), nullptr) << b.name << " of op \"" << b.op << "\"";
  EXPECT_EQ(listed, spirv_blobs().size());
  const auto ln = op_shaders("layernorm");
  ASSERT_EQ(ln.size(), 6u);  // 4 variants, and each f16 one's packed twin (cmake/ops.cmake)
  EXPECT_EQ(ln[4].name, "layernorm_subgroup_f16");
  EXPECT_EQ(ln[4].source, "layernorm.comp");
  EXPECT_EQ(ln[4].defines, "-DUSE_SUBGROUP=1 -DW_F16=1");
  EXPECT_EQ(ln[5].name, "layernorm_subgroup_f16_packed");
  EXPECT_EQ(ln[5].defines, "-DUSE_SUBGROUP=1 -DW_F16=1 -DF16_PACKED=1");
  EXPECT_TRUE(op_shaders("attention").empty());  // the unfused chain runs the other ops' shaders
}

TEST(OpRegistry, KernelTableListsEveryOp) {
  const auto documented = documented_ops();
  EXPECT_EQ(std::set<std::string>(documented.begin(), documented.end()).size(), documented.size())
      << "an op has two rows";
  const auto registered = op_names();
  EXPECT_EQ(std::set<std::string>(documented.begin(), documented.end()),
            std::set<std::string>(registered.begin(), registered.end()))
      << "docs/kernels.md and src/ops/ops.cmake disagree";
}

TEST(OpRegistry, ShapesParseAndRefuseClearly) {
  const OpShape s = parse_op_shape("m=3,n=5,k=7,dtype=f16,act=gelu,residual=1,mask=causal,topk=2");
  EXPECT_EQ(s.m, 3);
  EXPECT_EQ(s.n, 5);
  EXPECT_EQ(s.k, 7);
  EXPECT_EQ(s.dtype, DType::F16);
  EXPECT_EQ(s.act, Activation::GeluErf);
  EXPECT_TRUE(s.residual);
  EXPECT_EQ(s.mask, "causal");
  EXPECT_EQ(s.topk, 2u);
  EXPECT_EQ(parse_op_shape("4x6x8").k, 8);
  EXPECT_EQ(parse_op_shape("4x6").n, 6);
  expect_error([] { parse_op_shape("m=0"); }, "\"0\" is not a positive integer");
  expect_error([] { parse_op_shape("m=3,q=1"); }, "unknown key \"q\"");
  expect_error([] { parse_op_shape("dtype=f8"); }, "dtype must be f32, f16, q8_0, q4_0, q4_1, q4_k or q6_k, got \"f8\"");
  expect_error([] { parse_op_shape("4x"); }, "is not a positive integer");
  EXPECT_EQ(grid({{"m=1", "m=2"}, {"n=3"}}), (std::vector<std::string>{"m=1,n=3", "m=2,n=3"}));
}

// GEMM candidates that read through texel views are not offered when X or W
// is longer than one view can be (SwiftShader: 65536 texels, W of 768 × 768 is
// 147456 vec4s): the op would refuse each of them.
TEST(OpRegistry, GemmCandidatesFitTexelViews) {
  Capabilities c;
  c.subgroup_arithmetic = c.subgroup_shuffle = c.texel_f32 = true;
  c.subgroup_size = 4;
  c.max_workgroup_invocations = c.max_workgroup_size[0] = 256;
  c.max_shared_memory = 32768;
  const OpDescriptor& d = op("gemm");
  for (const char* shape : {"m=1,n=768,k=768", "m=128,n=768,k=768"}) {
    SCOPED_TRACE(shape);
    auto texel = [](const std::vector<TunedConfig>& v) {
      return std::count_if(v.begin(), v.end(), [](const TunedConfig& t) {
        return t.variant == "texel" || t.variant == "broadcast" || t.knob("TEXEL", 0) == 1;
      });
    };
    c.max_texel_buffer_elements = 65536;
    EXPECT_EQ(texel(d.candidates(c, parse_op_shape(shape))), 0);
    c.max_texel_buffer_elements = 1u << 27;
    EXPECT_GT(texel(d.candidates(c, parse_op_shape(shape))), 0);
  }
}

// The tuner's SGS candidates, on capabilities faked to a device with subgroup
// sizes 8..32: each configuration of a subgroup variant comes again, after the
// others, with each size up to its WG. With one size (lavapipe 8..8,
// SwiftShader 4..4) or without size control the lists are what they were, so
// the search takes no longer there.
TEST(OpRegistry, SubgroupSizeCandidates) {
  Capabilities c;
  c.subgroup_arithmetic = c.texel_f32 = true;
  c.subgroup_size = 8;
  c.max_workgroup_invocations = 1024;
  c.max_workgroup_size[0] = 1024;
  c.max_shared_memory = 32768;
  c.max_texel_buffer_elements = 1u << 27;  // lavapipe's; W of 768 × 768 fits one view
  c.subgroup_size_control = true;
  c.min_subgroup_size = 8, c.max_subgroup_size = 32, c.max_workgroup_subgroups = 32;
  Capabilities one = c, off = c;
  one.max_subgroup_size = 8;
  off.subgroup_size_control = false;
  // (op, shape, added configurations): 4 ROWS × WG 8, 16, 32, 64, 128 with 1, 2, 3, 3, 3 sizes;
  // gemv_subgroup: WG 8..128 × COLS 1..16 (COLS ≤ WG) × TEXEL 0, 1 likewise; no gemv at 128 rows.
  for (const auto& [name, shape, added] : std::vector<std::tuple<std::string, std::string, size_t>>{
           {"layernorm", "m=64,n=768", 48}, {"rmsnorm", "m=64,n=768", 48}, {"gemm", "m=1,n=768,k=768", 2 * 59},
           {"gemm", "m=128,n=768,k=768", 0}, {"flash_attention", "q_len=1,kv_len=128", 0}}) {
    SCOPED_TRACE(name + " " + shape);
    const OpDescriptor& d = op(name);
    const OpShape s = parse_op_shape(shape);
    const auto with = d.candidates(c, s), without = d.candidates(off, s);
    EXPECT_EQ(d.candidates(one, s).size(), without.size());
    ASSERT_EQ(with.size(), without.size() + added);
    for (size_t i = 0; i < without.size(); ++i) EXPECT_EQ(with[i].text(), without[i].text());
    for (size_t i = without.size(); i < with.size(); ++i) {
      const uint32_t sgs = with[i].knob("SGS", 0), wg = with[i].knob("WG", 0);
      EXPECT_NE(with[i].variant.find("subgroup"), std::string::npos) << with[i].text();
      EXPECT_TRUE(sgs == 8 || sgs == 16 || sgs == 32) << with[i].text();
      EXPECT_LE(sgs, wg) << with[i].text();
    }
    if (added) EXPECT_NE(std::find(d.knobs.begin(), d.knobs.end(), "SGS"), d.knobs.end()) << "SGS is not a listed knob";
  }
}

}  // namespace vkf::test
