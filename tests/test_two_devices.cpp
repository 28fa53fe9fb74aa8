// Two Contexts on two independent Vulkan drivers at once, in one process:
// lavapipe and SwiftShader (ctest adds SwiftShader's ICD with VK_ADD_DRIVER_FILES).
// Each runs the test models' forward passes, greedy decoding and a few kernels in
// its own thread at the same time; both must match PyTorch and each other. The
// drivers differ in subgroup size (8 / 4), workgroup limit (1024 / 256) and 16-bit
// storage, so the engine picks different kernel sizes on each.
#include <thread>

#include "model_util.hpp"

namespace vkf::test {
namespace {

/// What one device computed.
struct Results {
  std::vector<ForwardOutput> forward;            // one per all_models()
  std::vector<std::vector<Ids>> greedy;          // one per generating_models()
  std::vector<std::pair<std::string, bool>> kernels;  // (op shape, within its case's bound)
  std::string error;                             // a vkf::Error thrown in the thread
};

// Small shapes in the --shape syntax, each checked against its CPU reference.
const char* const kKernelShapes[][2] = {
    {"gemm", "m=37,n=70,k=300,act=gelu,residual=1"},
    {"gemm", "m=1,n=300,k=257"},
    {"flash_attention", "batch=2,heads=3,head_dim=40,q_len=19,kv_len=33,mask=both"},
    {"layernorm", "m=9,n=700,residual=1"},
    {"masked_softmax", "batch=2,heads=2,q_len=7,kv_len=300,mask=both"},
    {"topk", "m=5,n=1000,topk=5"},
};

void run_all(Context& ctx, Results& r) {
  try {
    for (const auto& name : all_models()) {
      const auto g = golden(name);
      Session s(Model::load(ctx, model_dir(name)));
      r.forward.push_back(s.forward(ids_of(g["src"]), g.contains("tgt") ? ids_of(g["tgt"]) : std::vector<Ids>{}));
    }
    for (const auto& name : generating_models()) {
      const auto g = golden(name);
      Session s(Model::load(ctx, model_dir(name)));
      GenerateOptions o;
      o.max_new_tokens = g["max_new_tokens"];
      r.greedy.push_back(s.generate(ids_of(g["src"]), o));
    }
    for (const auto& [op_name, shape] : kKernelShapes) {
      const OpCase c = op(op_name).make_case(ctx, parse_op_shape(shape));
      Recorder rec(ctx);
      c.record(rec, "");
      ctx.submit(rec);
      r.kernels.push_back({std::string(op_name) + " " + shape, c.error() <= c.bound});
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
}

std::unique_ptr<Context> open(const std::string& name) {
  ContextOptions o;
  o.device = name;
  o.validation = 1;
  o.verbose = false;
  return std::make_unique<Context>(o);
}

}  // namespace

TEST(TwoDevices, LavapipeAndSwiftShaderAtOnceAgree) {
  bool lvp = false, ss = false;
  for (const auto& d : list_devices()) {
    lvp = lvp || d.name.find("llvmpipe") != std::string::npos;
    ss = ss || d.name.find("SwiftShader") != std::string::npos;
  }
  ASSERT_TRUE(lvp && ss) << "needs both lavapipe and SwiftShader: install chromium-common and run with "
                            "VK_ADD_DRIVER_FILES=/usr/lib/chromium/vk_swiftshader_icd.json (ctest does)";
  auto a = open("llvmpipe");
  auto b = open("SwiftShader");
  EXPECT_NE(a->caps().device_name, b->caps().device_name);

  Results ra, rb;
  std::thread ta(run_all, std::ref(*a), std::ref(ra));
  std::thread tb(run_all, std::ref(*b), std::ref(rb));
  ta.join();
  tb.join();
  ASSERT_EQ(ra.error, "") << a->caps().device_name;
  ASSERT_EQ(rb.error, "") << b->caps().device_name;

  // Each against PyTorch (test_model_forward's fp32 bound), then against each other.
  const auto models = all_models();
  for (size_t i = 0; i < models.size(); ++i) {
    const auto want = golden(models[i])["forward"].get<std::vector<std::vector<float>>>();
    EXPECT_LE(forward_error(ra.forward[i], want), 1e-4) << models[i] << " on lavapipe";
    EXPECT_LE(forward_error(rb.forward[i], want), 1e-4) << models[i] << " on SwiftShader";
    std::vector<std::vector<float>> rows;
    for (uint32_t s = 0; s < ra.forward[i].batch; ++s) {
      const auto begin = ra.forward[i].data.begin() + size_t(s) * ra.forward[i].len * ra.forward[i].dim;
      rows.emplace_back(begin, begin + size_t(ra.forward[i].lengths[s]) * ra.forward[i].dim);
    }
    // Both compute in fp32 with different reduction orders: they differ by rounding only.
    EXPECT_LE(forward_error(rb.forward[i], rows), 1e-5) << models[i] << ": lavapipe vs SwiftShader";
  }
  const auto gen = generating_models();
  for (size_t i = 0; i < gen.size(); ++i) {
    EXPECT_EQ(ra.greedy[i], ids_of(golden(gen[i])["greedy"])) << gen[i];
    EXPECT_EQ(rb.greedy[i], ra.greedy[i]) << gen[i];
  }
  ASSERT_EQ(ra.kernels.size(), rb.kernels.size());
  for (size_t i = 0; i < ra.kernels.size(); ++i) {
    EXPECT_TRUE(ra.kernels[i].second) << ra.kernels[i].first << " on lavapipe";
    EXPECT_TRUE(rb.kernels[i].second) << rb.kernels[i].first << " on SwiftShader";
  }
  EXPECT_EQ(a->validation_messages(), 0u) << a->last_validation_message();
  EXPECT_EQ(b->validation_messages(), 0u) << b->last_validation_message();
}

}  // namespace vkf::test
