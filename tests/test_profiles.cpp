// Capability profiles (docs/device-profiles.md): the clamped capabilities, the
// kernel variants and limits that follow them, tensors larger than one binding
// under "min", folded grids, and recordings split into several submissions.
// Each test makes its own contexts: the profile is fixed at context creation.
#include <cstdlib>
#include <filesystem>
#include <map>
#include <tuple>

#include "families/transformer/weights.hpp"
#include "ops/registry.hpp"
#include "model_writer.hpp"
#include "vk/recorder_impl.hpp"
#include "vk/shader_registry.hpp"
#include "vk/spirv_reflect.hpp"
#include "push/add.h"
#include "push/attention_scores.h"
#include "push/attention_values.h"
#include "push/copy_rows.h"
#include "push/embedding.h"
#include "push/flash_attention.h"
#include "push/gemm.h"
#include "push/l2_normalize.h"
#include "push/layernorm.h"
#include "push/masked_softmax.h"
#include "push/mean_pool.h"
#include "push/peak_bandwidth.h"
#include "push/peak_fma.h"
#include "push/topk.h"
#include "vkformer/model.hpp"
#include "vkformer/session.hpp"

namespace vkf::test {
namespace {

std::unique_ptr<Context> make(const std::string& profile, uint32_t max_dispatches = 0) {
  ContextOptions o;
  o.validation = 1;
  o.verbose = false;
  o.device_profile = profile;
  o.max_dispatches_per_submit = max_dispatches;
  return std::make_unique<Context>(o);
}

/// Values in [-1, 1) for tensors of tens of millions of elements, where
/// mt19937 would dominate the test's time.
std::vector<float> cheap_vector(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  uint32_t s = seed * 2654435761u + 1;
  for (auto& x : v) {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    x = float(int32_t(s >> 8) - (1 << 23)) / float(1 << 23);
  }
  return v;
}

/// Fails the test if the context's validation layer said anything.
void expect_clean(const Context& c) { EXPECT_EQ(c.validation_messages(), 0u) << c.last_validation_message(); }

const Capabilities& device_caps(const Context& c) {
  static std::vector<DeviceDescription> devs = list_devices();
  for (const auto& d : devs)
    if (d.name == c.caps().device_name && d.caps.device_id == c.caps().device_id) return d.caps;
  throw std::runtime_error("device not listed");
}

// The profile legs of ctest set VKFORMER_DEVICE_PROFILE; these tests pick their own.
class Profiles : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const char* e = std::getenv("VKFORMER_DEVICE_PROFILE")) saved_ = e, had_ = true;
    unsetenv("VKFORMER_DEVICE_PROFILE");
  }
  void TearDown() override {
    if (had_) setenv("VKFORMER_DEVICE_PROFILE", saved_.c_str(), 1);
  }
  std::string saved_;
  bool had_ = false;
};

TEST_F(Profiles, NamesAndErrors) {
  EXPECT_EQ(device_profiles(), (std::vector<std::string>{"full", "min", "no-fp16", "no-subgroup", "gpu", "no-coopmat"}));
  expect_error([] { make("tiny"); },
               "unknown device profile \"tiny\" in \"tiny\"; valid profiles are full, min, no-fp16, no-subgroup, gpu, no-coopmat");
  expect_error([] { make("min,"); }, "unknown device profile \"\"");
  setenv("VKFORMER_DEVICE_PROFILE", "no_fp16", 1);
  expect_error([] { make(""); }, "VKFORMER_DEVICE_PROFILE: unknown device profile \"no_fp16\"");
  setenv("VKFORMER_DEVICE_PROFILE", "no-subgroup", 1);
  EXPECT_EQ(make("")->caps().profile, "no-subgroup");
  EXPECT_EQ(make("min")->caps().profile, "min");  // the option wins over the environment
  unsetenv("VKFORMER_DEVICE_PROFILE");
  // Combinations are spelled canonically; the old flags are profile parts.
  EXPECT_EQ(make(" no-subgroup , min,full")->caps().profile, "min,no-subgroup");
  ContextOptions o;
  o.verbose = false;
  o.disable_fp16 = true;
  EXPECT_EQ(Context(o).caps().profile, "no-fp16");
  o.device_profile = "no-subgroup";
  EXPECT_EQ(Context(o).caps().profile, "no-fp16,no-subgroup");
  setenv("VKFORMER_MAX_DISPATCHES_PER_SUBMIT", "12x", 1);
  expect_error([] { make("full"); }, "VKFORMER_MAX_DISPATCHES_PER_SUBMIT must be a whole number");
  unsetenv("VKFORMER_MAX_DISPATCHES_PER_SUBMIT");
}

TEST_F(Profiles, ClampedCapabilities) {
  auto full = make("full");
  const Capabilities& dev = device_caps(*full);
  const Capabilities& f = full->caps();
  EXPECT_EQ(f.profile, "full");
  EXPECT_EQ(f.storage_16bit, dev.storage_16bit);
  EXPECT_EQ(f.subgroup_arithmetic, dev.subgroup_arithmetic);
  EXPECT_EQ(f.max_shared_memory, dev.max_shared_memory);
  EXPECT_EQ(f.max_storage_buffer_range, dev.max_storage_buffer_range);
  EXPECT_EQ(f.subgroup_size_control, dev.subgroup_size_control);
  EXPECT_EQ(f.compute_full_subgroups, dev.compute_full_subgroups);
  EXPECT_LE(dev.min_subgroup_size, dev.subgroup_size);
  EXPECT_GE(dev.max_subgroup_size, dev.subgroup_size);

  auto no16 = make("no-fp16");
  EXPECT_FALSE(no16->caps().storage_16bit);
  EXPECT_FALSE(no16->caps().shader_float16);
  EXPECT_FALSE(no16->caps().coopmat);  // fp16 operands on the tensor cores
  EXPECT_EQ(no16->caps().subgroup_arithmetic, dev.subgroup_arithmetic);

  // gpu: a discrete GPU as the engine sees one, its memory not mapped by the host.
  auto gpu = make("gpu");
  EXPECT_EQ(gpu->caps().device_type, "discrete");
  EXPECT_EQ(gpu->caps().max_shared_memory, std::min(dev.max_shared_memory, 49152u));
  EXPECT_EQ(gpu->caps().subgroup_size, dev.subgroup_size);
  EXPECT_FALSE(gpu->host_mapped());

  auto nosg = make("no-subgroup");
  EXPECT_FALSE(nosg->caps().subgroup_arithmetic);
  EXPECT_FALSE(nosg->caps().subgroup_shuffle);
  EXPECT_EQ(nosg->caps().subgroup_size, dev.subgroup_size);  // hardware, not a feature
  EXPECT_EQ(nosg->caps().storage_16bit, dev.storage_16bit);
  EXPECT_FALSE(nosg->caps().subgroup_size_control);  // without subgroup operations, no size to choose
  EXPECT_FALSE(nosg->caps().compute_full_subgroups);
  EXPECT_FALSE(nosg->caps().coopmat);  // subgroup-scope matrices
  EXPECT_EQ(nosg->caps().max_subgroup_size, dev.max_subgroup_size);

  // no-coopmat: tensor cores off, all else as reported (the emulated variants still run).
  auto nocm = make("no-coopmat");
  EXPECT_FALSE(nocm->caps().coopmat);
  EXPECT_EQ(nocm->caps().shader_float16, dev.shader_float16);
  EXPECT_EQ(nocm->caps().subgroup_arithmetic, dev.subgroup_arithmetic);
  EXPECT_EQ(nocm->caps().max_shared_memory, dev.max_shared_memory);

  auto min = make("min");
  const Capabilities& m = min->caps();
  EXPECT_EQ(m.max_shared_memory, std::min(dev.max_shared_memory, 16384u));
  EXPECT_EQ(m.max_workgroup_invocations, std::min(dev.max_workgroup_invocations, 128u));
  for (int i = 0; i < 3; ++i) {
    EXPECT_LE(m.max_workgroup_size[i], i < 2 ? 128u : 64u);
    EXPECT_LE(m.max_workgroup_count[i], 65535u);
  }
  EXPECT_EQ(m.max_storage_buffer_range, std::min<uint64_t>(dev.max_storage_buffer_range, 64ull << 20));
  EXPECT_EQ(m.min_storage_buffer_offset_alignment, std::max<uint64_t>(dev.min_storage_buffer_offset_alignment, 256));
  EXPECT_EQ(m.storage_16bit, dev.storage_16bit);
  EXPECT_FALSE(m.subgroup_size_control);  // optional in Vulkan 1.2
  EXPECT_FALSE(m.coopmat);
  EXPECT_EQ(f.coopmat, dev.coopmat);
  EXPECT_EQ(m.min_subgroup_size, dev.min_subgroup_size);
  for (auto* c : {full.get(), no16.get(), nosg.get(), nocm.get(), min.get()}) expect_clean(*c);
}

// The pipeline-level guard every op goes through: limits read from the SPIR-V.
TEST_F(Profiles, PipelinesStayWithinTheProfile) {
  auto full = make("full");
  auto& fp = *internals(*full).pipelines;
  // gemm_tiled, staged: (BM + BN)·BK vec4-columns of floats; 64 invocations.
  const Pipeline& big = fp.get("gemm_tiled_f32", {64, 64, 64, 64, 8, 8, 1, 1});
  ASSERT_TRUE(big.shared_bytes.has_value());
  EXPECT_EQ(*big.shared_bytes, (64u + 64u) * 64u * 4u);
  EXPECT_EQ(*fp.get("gemm_tiled_f32", {64, 64, 64, 16, 8, 8, 1, 0}).shared_bytes, 2u * 16u);  // unstaged: 1 vec4 each
  EXPECT_EQ(*fp.get("topk_shared", {32, 4}).shared_bytes, 2u * 2u * 32u * 4u);  // keys, indices: 2·WG uint each
  EXPECT_EQ(*fp.get("layernorm_shared_f32", {48, 1, 1, 1}).shared_bytes, 2u * 48u * 4u);  // 2·WG float
  // Every embedded shader's shared memory and interface can be read (else the
  // guard would be blind to it). That each push block is its C++ struct's size
  // is checked by dispatch() on every dispatch, and the generic op test
  // dispatches every registered variant.
  std::map<std::string, ShaderInterface> iface;
  for (const auto& b : spirv_blobs()) {
    EXPECT_TRUE(spirv_shared_bytes(b.words, b.count, {}).has_value()) << b.name;
    ASSERT_NO_THROW(iface[b.name] = spirv_interface(b.words, b.count, b.name)) << b.name;
    EXPECT_GE(iface[b.name].bindings, 1u) << b.name;
    EXPECT_GT(iface[b.name].push_size, 0u) << b.name;
  }
  // A few by name: bindings counted once however many blocks alias them.
  for (const auto& [name, bindings, bytes] : std::vector<std::tuple<std::string, uint32_t, uint32_t>>{
           {"add", 3, 4}, {"layernorm_shared_f32", 5, 20}, {"layernorm_subgroup_f16", 5, 20},
           {"masked_softmax_subgroup", 2, 36}, {"topk_shared", 3, 8}, {"l2_normalize_shared", 2, 12},
           {"gemm_tiled_f16", 5, 56}, {"gemm_vec_subgroup_f32", 5, 56},
           {"gemm_splitk_reduce_q4_k", 5, 56}, {"embedding_f16_f32", 5, 56},
           {"copy_rows_f32_f32", 3, 60}, {"copy_rows_f32_f16_packed", 3, 60}, {"flash_attention_f32", 6, 100},
           {"peak_fma", 1, 16}}) {
    EXPECT_EQ(iface[name].bindings, bindings) << name;
    EXPECT_EQ(iface[name].push_size, bytes) << name;
  }
  EXPECT_EQ(iface["layernorm_shared_f32"].push_block, "LayernormPush");
  const Pipeline& ln = fp.get("layernorm_shared_f32", {32, 1, 1, 1});
  EXPECT_EQ(ln.bindings, 5u);
  EXPECT_EQ(ln.push_size, sizeof(LayernormPush));
  // A dispatch must bind what the shader declares and push its block.
  {
    Recorder rec(*full);
    Tensor t = full->tensor({4}), u = full->tensor({4});
    const Pipeline& p = internals(rec).pipeline("add", {64, 4});
    expect_error([&] { internals(rec).dispatch(p, {{&t, false}, {&u, true}}, AddPush{4}, {}, "t"); },
                 "internal: add: t binds 2 tensors, the shader declares 3");
    expect_error([&] { internals(rec).dispatch(p, {{&t, false}, {&t, false}, {&u, true}, {&u, true}}, AddPush{4}, {},
                                           "t"); },
                 "internal: add: t binds 4 tensors, the shader declares 3");
    expect_error([&] { internals(rec).dispatch(p, {{&t, false}, {&t, false}, {&u, true}}, TopkPush{1, 4}, {}, "t"); },
                 "internal: add: t pushes 8 bytes of constants, the shader's block AddPush has 4");
    EXPECT_EQ(rec.dispatches(), 0u);
  }
  // A required subgroup size is a pipeline of its own, asking for full
  // subgroups when the workgroup is made of them; a size the device cannot
  // require is refused by name.
  const Capabilities& fc = full->caps();
  if (fc.subgroup_arithmetic && fc.subgroup_size_control) {
    const uint32_t sg = fc.min_subgroup_size;
    const Pipeline& req = fp.get("layernorm_subgroup_f32", {2 * sg, 1, 1, 1}, sg);
    EXPECT_EQ(req.subgroup_size, sg);
    EXPECT_EQ(req.full_subgroups, fc.compute_full_subgroups);
    EXPECT_NE(&req, &fp.get("layernorm_subgroup_f32", {2 * sg, 1, 1, 1}));
    EXPECT_EQ(fp.get("layernorm_subgroup_f32", {2 * sg, 1, 1, 1}).subgroup_size, 0u);
    EXPECT_FALSE(fp.get("layernorm_subgroup_f32", {sg + 1, 1, 1, 1}, sg).full_subgroups);
    const uint32_t bad = fc.max_subgroup_size * 2;
    expect_error([&] { fp.get("layernorm_subgroup_f32", {sg, 1, 1, 1}, bad); },
                 "internal: shader layernorm_subgroup_f32 under profile full: subgroup size " + std::to_string(bad) +
                     " is not a power of two within the device's " + std::to_string(fc.min_subgroup_size) + ".." +
                     std::to_string(fc.max_subgroup_size));
  }
  auto min = make("min,no-subgroup,no-fp16");
  auto& mp = *internals(*min).pipelines;
  expect_error([&] { mp.get("layernorm_shared_f32", {32, 1, 1, 1}, min->caps().min_subgroup_size); },
               "under profile min,no-fp16,no-subgroup: subgroup size " + std::to_string(min->caps().min_subgroup_size) +
                   " was required, but the device (profile min,no-fp16,no-subgroup) offers no subgroup size control");
  expect_error([&] { mp.get("gemm_tiled_f32", {64, 64, 64, 64, 8, 8, 1, 1}); },
               "declares 32768 bytes of shared memory, more than 16384");
  expect_error([&] { mp.get("add", {256, 4}); }, "workgroup size 256 is outside 1..128");
  expect_error([&] { mp.get("layernorm_subgroup_f32", {32, 1, 1, 1}); }, "subgroup operations are not available");
  expect_error([&] { mp.get("gemm_vec_shared_f16", {8, 1, 8, 1}); }, "16-bit storage is not available");
  expect_error([&] { mp.get("gemm_coopmat_f16", {128, 64, 64, 32, 2, 2, 32, 0}); },
               "cooperative matrices are not available");
  expect_clean(*full);
  expect_clean(*min);
}

// Every registered op at a transformer-sized shape under "min" and
// "no-subgroup": the engine's pick and its constants follow the clamped limits
// (the pipeline guard above would throw otherwise), no subgroup variant is
// picked without subgroups, and the result is within the op's bound.
TEST_F(Profiles, VariantsFollowTheProfile) {
  OpShape s = parse_op_shape("m=33,n=256,k=256,batch=2,heads=4,head_dim=64,q_len=33,kv_len=33,topk=8,mask=both");
  for (const char* profile : {"min", "no-subgroup"}) {
    SCOPED_TRACE(profile);
    auto ctx = make(profile);
    Context& c = *ctx;
    const uint32_t limit = c.caps().max_workgroup_invocations;
    const bool subgroups = c.caps().subgroup_arithmetic;
    for (const OpDescriptor* d : op_registry()) {
      SCOPED_TRACE(d->name);
      const OpCase oc = d->make_case(c, s);
      Recorder rec(c);
      const OpInfo info = oc.record(rec, "");
      c.submit(rec);
      EXPECT_LE(oc.error(), oc.bound) << oc.shape;
      if (!subgroups) EXPECT_EQ(info.variant.find("subgroup"), std::string::npos) << info.variant;
      for (const auto& [name, value] : info.spec)
        if (name == "WG") EXPECT_LE(value, limit);
    }
    if (!subgroups) {
      Tensor scores = c.tensor({1, 1, 4, 4});
      Recorder rec(c);
      expect_error([&] { masked_softmax(rec, {&scores, {1, 1, 1, 4, 4}, {}, "subgroup"}); },
                   "needs subgroup arithmetic");
    }
    expect_clean(c);
  }
}

TEST_F(Profiles, NoFp16RefusesOrConverts) {
  auto ctx = make("no-fp16");
  Context& c = *ctx;
  Tensor w16 = c.tensor({4, 8}, DType::F16), x = c.tensor({1, 8}), y = c.tensor({1, 4});
  Recorder rec(c);
  expect_error([&] { gemm(rec, {&x, &w16, nullptr, nullptr, &y}); },
               "w is f16 but the device (or its profile) has no 16-bit storage");
  // A model stored in F16 loads as fp32; fp16 precision is refused.
  const std::string dir = std::string(VKF_MODELS_DIR) + "/encdec_fp16";
  auto model = Model::load(c, dir);
  EXPECT_EQ(transformer_weights(*model).src_embed.dtype(), DType::F32);
  EXPECT_EQ(transformer_weights(*model).encoder[0].ff1.w.dtype(), DType::F32);
  expect_error([&] { Model::load(c, dir, Precision::F16); },
               "fp16 precision was requested but the device (" + c.caps().device_name +
                   ", profile no-fp16) has no 16-bit storage");
  expect_clean(c);
}

/// relu(x·wᵀ + bias) + r for tensors of more than 64 MiB under "min", against
/// a double-precision reference on every 97th row and column and around each
/// piece's edges; `pieces` dispatches expected.
void check_big_gemm(Context& c, uint32_t M, uint32_t N, uint32_t K, DType wt, size_t pieces, bool residual) {
  SCOPED_TRACE("M " + std::to_string(M) + " N " + std::to_string(N) + " K " + std::to_string(K) + " " +
               dtype_name(wt));
  const auto xv = cheap_vector(size_t(M) * K, 11), wv = as_stored(cheap_vector(size_t(N) * K, 12), wt);
  const auto bv = as_stored(cheap_vector(N, 13), wt), rv = cheap_vector(size_t(M) * N, 14);
  Tensor x = c.tensor({M, K}, xv), w = c.tensor({N, K}, wv, wt), b = c.tensor({N}, bv, wt);
  Tensor r = c.tensor({M, N}, rv), y = c.tensor({M, N});
  Recorder rec(c);
  gemm(rec, {&x, &w, &b, residual ? &r : nullptr, &y, Activation::ReLU});
  EXPECT_EQ(rec.dispatches(), pieces);
  c.submit(rec);
  const auto got_all = c.read(y);
  auto picks = [](uint32_t n) {
    std::vector<uint32_t> v;
    for (uint32_t i = 0; i < n; i += 97) v.push_back(i);
    for (uint32_t e = 1; e < 64; ++e)  // near every multiple of n/2^k: the piece edges
      for (uint32_t d : {0u, 1u}) v.push_back(std::min(n - 1, uint32_t(uint64_t(n) * e / 64) - d));
    v.push_back(n - 1);
    return v;
  };
  std::vector<float> got;
  std::vector<double> want;
  for (uint32_t m : picks(M))
    for (uint32_t n : picks(N)) {
      double acc = bv[n];
      for (uint32_t k = 0; k < K; ++k) acc += double(xv[size_t(m) * K + k]) * wv[size_t(n) * K + k];
      want.push_back(std::max(acc, 0.0) + (residual ? rv[size_t(m) * N + n] : 0.0));
      got.push_back(got_all[size_t(m) * N + n]);
    }
  const double err = ref::max_rel_error(got, want);
  EXPECT_LE(err, kF32Bound);
  ::testing::Test::RecordProperty("max_error_" + std::to_string(N) + "x" + std::to_string(K), sci(err));
}

TEST_F(Profiles, TensorsLargerThanOneBindingUnderMin) {
  auto ctx = make("min");
  Context& c = *ctx;
  ASSERT_EQ(c.caps().max_storage_buffer_range, 64ull << 20);
  // 17000 × 1024 fp32 = 66.4 MiB: two row blocks of W (GEMV, then blocked).
  check_big_gemm(c, 1, 17000, 1024, DType::F32, 2, false);
  check_big_gemm(c, 6, 17000, 1024, DType::F32, 2, true);
  // K not a multiple of 4 (scalar loads, unaligned piece starts); gemv over 3 rows.
  check_big_gemm(c, 3, 17000, 1021, DType::F32, 2, false);
  if (c.caps().f16_tensors()) check_big_gemm(c, 2, 34000, 1024, DType::F16, 2, false);
  // Y and R larger than a binding: 20000 × 900 fp32 = 68.7 MiB, split by rows.
  check_big_gemm(c, 20000, 900, 4, DType::F32, 2, true);

  // Embedding lookup in a 17000 × 1024 fp32 table: ids on both sides of the block edge.
  const uint32_t vocab = 17000, d = 1024;
  const uint64_t block = ((64ull << 20) - 256) / (d * 4);
  const auto tv = cheap_vector(size_t(vocab) * d, 21);
  const std::vector<int32_t> ids{0, int32_t(block) - 1, int32_t(block), 16999, 5, -3, 40000};
  const auto pv = sinusoidal_table(16, d);
  Tensor table = c.tensor({vocab, d}, tv), pos = c.tensor({16, d}, pv);
  Tensor idt = c.tensor_i32({1, int64_t(ids.size())}, ids), out = c.tensor({1, int64_t(ids.size()), d});
  Recorder rec(c);
  embedding(rec, {&idt, &table, &pos, 2, nullptr, 0.5f, &out});
  EXPECT_EQ(rec.dispatches(), 2u);
  c.submit(rec);
  const auto want = ref::embedding(ids, 1, uint32_t(ids.size()), tv, d, &pv, 2, 0.5);
  EXPECT_LE(ref::max_rel_error(c.read(out), want), kF32Bound);

  // An op that does not split refuses a tensor that large, with the limit in the message.
  Tensor big = c.tensor({17000, 1024}), big2 = c.tensor({17000, 1024});
  rec.reset();
  expect_error([&] { add(rec, {&big, &big2, &big2}); }, "more than maxStorageBufferRange (67108864 bytes, profile min)");
  rec.reset();
  // The recorder's own check: a binding off the profile's offset alignment.
  const Pipeline& p = internals(rec).pipeline("add", {64, 4});
  expect_error([&] { internals(rec).dispatch(p, {{&big, false, 64}, {&big, false}, {&big2, true}}, AddPush{4}, {}, "t"); },
               "not a multiple of minStorageBufferOffsetAlignment (256, profile min)");
  expect_clean(c);
}

TEST_F(Profiles, LargeGridsFold) {
  auto ctx = make("min");
  Context& c = *ctx;
  Recorder rec(c);
  const Grid g = internals(rec).fold(70000);
  EXPECT_EQ(g.x, 65535u);
  EXPECT_EQ(g.y, 2u);
  EXPECT_EQ(g.z, 1u);
  const Grid g3 = internals(rec).fold(65535ull * 65535ull + 1);
  EXPECT_EQ(g3.z, 2u);
  // 70000 one-row workgroups: an embedding of 70000 tokens of d = 4.
  const uint32_t len = 70000;
  std::vector<int32_t> ids(len);
  for (uint32_t i = 0; i < len; ++i) ids[i] = int32_t(i % 7);
  const auto tv = random_vector(28, 31);
  Tensor table = c.tensor({7, 4}, tv), idt = c.tensor_i32({1, len}, ids), out = c.tensor({1, len, 4});
  embedding(rec, {&idt, &table, nullptr, 0, nullptr, 1.0f, &out});
  c.submit(rec);
  EXPECT_LE(ref::max_rel_error(c.read(out), ref::embedding(ids, 1, len, tv, 4, nullptr, 0, 1.0)), kF32Bound);
  expect_clean(c);
}

// A chain of dependent dispatches split into pieces gives what one submission gives.
TEST_F(Profiles, SplitSubmissions) {
  const auto xv = random_vector(1000, 41);
  std::vector<float> results[2];
  for (uint32_t limit : {0u, 3u}) {
    auto ctx = make("full", limit);
    Context& c = *ctx;
    Tensor x = c.tensor({1000}, xv);
    std::vector<Tensor> ys;
    for (int i = 0; i < 10; ++i) ys.push_back(c.tensor({1000}));
    for (bool timestamps : {false, true}) {
      Recorder rec(c, timestamps);
      add(rec, {&x, &x, &ys[0]});
      for (int i = 1; i < 10; ++i) add(rec, {&ys[i - 1], &x, &ys[i]});
      for (int run = 0; run < 2; ++run) {  // a recording is resubmitted as recorded
        const uint64_t before = c.submissions();
        c.submit(rec);
        EXPECT_EQ(c.submissions() - before, limit ? 4u : 1u);
      }
      if (timestamps) EXPECT_EQ(rec.timings().size(), 10u);
      results[limit != 0] = c.read(ys[9]);
    }
    // Non-blocking submission: the host waits on its fence.
    Recorder rec(c);
    for (int i = 1; i < 10; ++i) add(rec, {&ys[i - 1], &x, &ys[i]});
    VkFenceCreateInfo fci{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    ASSERT_EQ(vkCreateFence(c.vk_device(), &fci, nullptr, &fence), VK_SUCCESS);
    const uint64_t before = c.submissions();
    SubmitSync sync;
    sync.fence = fence;
    c.submit_async(rec, sync);
    vkWaitForFences(c.vk_device(), 1, &fence, VK_TRUE, UINT64_MAX);
    vkDestroyFence(c.vk_device(), fence, nullptr);
    EXPECT_EQ(c.submissions() - before, limit ? 3u : 1u);
    expect_clean(c);
  }
  std::vector<double> want(1000);
  for (size_t i = 0; i < 1000; ++i) want[i] = 11.0 * xv[i];
  EXPECT_LE(ref::max_rel_error(results[0], want), kF32Bound);
  EXPECT_EQ(results[0], results[1]);
}

// A forward pass split into pieces equals the unsplit one, with the expected submissions.
TEST_F(Profiles, SplitForwardPass) {
  const json cfg = tiny_config(Kind::EncDec);
  const std::string dir = write_model("split", cfg, tiny_weights(cfg));
  const std::vector<Ids> src{{5, 3, 7, 2}, {4, 9}}, tgt{{1, 3, 4}, {1, 12}};
  ForwardOutput outs[2];
  for (uint32_t limit : {0u, 7u}) {
    auto ctx = make("full", limit);
    Session s(Model::load(*ctx, dir));
    outs[limit != 0] = s.forward(src, tgt);
    if (ctx->host_mapped()) {
      const uint64_t dispatches = s.stats().dispatches;
      EXPECT_EQ(s.stats().submissions, limit ? (dispatches + limit - 1) / limit : 1u) << dispatches;
      EXPECT_GT(dispatches, 2u * limit);
    }
    expect_clean(*ctx);
  }
  EXPECT_EQ(outs[0].data, outs[1].data);
}

// The model path with a vocabulary whose embedding table and generator weight
// each pass 64 MiB: under "min" both are split, and the logits equal "full"'s.
TEST_F(Profiles, BigVocabularyModelUnderMin) {
  json cfg = tiny_config(Kind::DecoderOnly);
  cfg["d_model"] = 256;
  cfg["d_ff"] = 32;
  cfg["encoder_layers"] = 1;
  cfg["src_vocab_size"] = 66000;  // 66000 × 256 × 4 bytes = 64.5 MiB
  json small = cfg;
  small["src_vocab_size"] = 1;
  TensorMap weights = tiny_weights(small);
  weights["src_embed.weight"] = {"F32", {66000, 256}, cheap_vector(66000 * 256, 51)};
  weights["generator.weight"] = {"F32", {66000, 256}, cheap_vector(66000 * 256, 52)};
  weights["generator.bias"] = {"F32", {66000}, cheap_vector(66000, 53)};
  const std::string dir = write_model("bigvocab", cfg, weights);
  const std::vector<Ids> src{{3, 65534, 65535, 65999, 17}};
  std::vector<float> logits[2];
  for (const char* profile : {"full", "min"}) {
    auto ctx = make(profile);
    Session s(Model::load(*ctx, dir));
    const ForwardOutput o = s.forward(src);
    EXPECT_EQ(o.dim, 66000u);
    logits[std::string(profile) == "min"] = o.data;
    expect_clean(*ctx);
  }
  EXPECT_LE(ref::max_rel_error(logits[1], std::vector<double>(logits[0].begin(), logits[0].end())), 1e-5);
}

}  // namespace
}  // namespace vkf::test
