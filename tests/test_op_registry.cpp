// The op registry (src/ops/registry.hpp) is the one list of ops: every
// embedded shader belongs to a registered op, every op is whole (a case
// factory, variants, standard shapes), and the kernel table in
// docs/kernels.md lists exactly the registered ops.
#include <fstream>
#include <set>

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
  expect_error([] { parse_op_shape("dtype=f8"); }, "dtype must be f32 or f16, got \"f8\"");
  expect_error([] { parse_op_shape("4x"); }, "is not a positive integer");
  EXPECT_EQ(grid({{"m=1", "m=2"}, {"n=3"}}), (std::vector<std::string>{"m=1,n=3", "m=2,n=3"}));
}

}  // namespace vkf::test
