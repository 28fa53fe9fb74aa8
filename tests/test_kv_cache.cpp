// The KV cache in fp16 (GenerateOptions::kv_cache) on the tiny HF GPT-2 of
// `make hf-test-models` (gpt2_lm: 2 layers, 5 heads × 9, so a cache row holds
// 90 values and K/V come from column 45 of the QKV projection: copy_rows'
// scalar path, and rows sharing 32-bit words when fp16 is packed).
//
// What an fp16 cache changes is K and V rounded to fp16 as they are appended
// (at most 2⁻¹¹ relative, 2⁻¹⁰ if the device's conversion truncates); attention
// still sums in fp32. Bound on the logits, max |fp16 − fp32| / max(1, max |fp32|):
// 5e-3 (lavapipe: 3.5e-4, natively and packed). Greedy tokens are then those
// of the fp32 cache (and of transformers): the goldens' smallest top-1 − top-2
// margin (golden.json "greedy_margin", 0.17) is far above twice the logits'
// difference, which the test checks too.
#include <cmath>
#include <map>

#include "model/family.hpp"
#include "model_util.hpp"
#include "run/logits_source.hpp"
#include "run/session_impl.hpp"
#include "run/slot_source.hpp"
#include "vkformer/decode_batch.hpp"

namespace vkf::test {
namespace {

constexpr double kLogitsBound = 5e-3;

GenerateOptions with_cache(KvCacheType kv, uint32_t max_new = 8) {
  GenerateOptions o;
  o.max_new_tokens = max_new;
  o.kv_cache = kv;
  return o;
}

struct Difference {
  double rel = 0, abs = 0;  ///< max |a − b| / max(1, max |b|), and max |a − b|
};
void widen(Difference& d, const std::vector<float>& got, const std::vector<float>& want) {
  double diff = 0, scale = 1;
  for (size_t i = 0; i < want.size(); ++i) {
    diff = std::max(diff, std::abs(double(got.at(i)) - want[i]));
    scale = std::max(scale, std::abs(double(want[i])));
  }
  d.rel = std::max(d.rel, diff / scale);
  d.abs = std::max(d.abs, diff);
}

/// Each prompt's logits through its KV-cached source with `got` against `want`:
/// the prompt's, then each step's feeding the golden greedy tokens.
Difference logits_difference(const Model& model, const std::vector<Ids>& prompts, const std::vector<Ids>& tokens,
                             KvCacheType got, KvCacheType want) {
  Session::Impl impl(model);
  Difference d;
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto a = model.family().logits_source(impl, {prompts[i]}, with_cache(got));
    auto b = model.family().logits_source(impl, {prompts[i]}, with_cache(want));
    widen(d, a->start(), b->start());
    for (size_t k = 0; k + 1 < tokens[i].size(); ++k)
      widen(d, a->step({tokens[i][k]}, {0}), b->step({tokens[i][k]}, {0}));
  }
  return d;
}

struct Gpt2 {
  std::shared_ptr<Model> model;
  std::vector<Ids> ids, greedy;
  double margin;
};
Gpt2 gpt2(Context& ctx) {
  const std::string dir = hf_model_dir("gpt2_lm");
  const nlohmann::json g = hf_golden(dir);
  return {Model::load(ctx, dir), g["ids"].get<std::vector<Ids>>(), g["greedy"].get<std::vector<Ids>>(),
          g["greedy_margin"].get<double>()};
}

}  // namespace

TEST(KvCacheChoice, ResolvesByRequestFamilyAndDevice) {
  ModelConfig cfg;
  Capabilities native, packed, none;
  native.storage_16bit = native.f16_packed = true;
  packed.f16_packed = true;
  none.profile = "no-fp16";
  EXPECT_EQ(kv_cache_dtype(KvCacheType::F32, cfg, native), DType::F32);
  EXPECT_EQ(kv_cache_dtype(KvCacheType::F16, cfg, native), DType::F16);
  EXPECT_EQ(kv_cache_dtype(KvCacheType::F16, cfg, packed), DType::F16);
  expect_error([&] { kv_cache_dtype(KvCacheType::F16, cfg, none); },
               "an fp16 KV cache needs fp16 tensors, which the device (profile no-fp16) cannot store");
  // Auto: fp32 unless the family asks for fp16, and then only where it can be stored.
  EXPECT_EQ(kv_cache_dtype(KvCacheType::Auto, cfg, native), DType::F32);
  cfg.kv_cache_f16_default = true;
  EXPECT_EQ(kv_cache_dtype(KvCacheType::Auto, cfg, native), DType::F16);
  EXPECT_EQ(kv_cache_dtype(KvCacheType::Auto, cfg, packed), DType::F16);
  EXPECT_EQ(kv_cache_dtype(KvCacheType::Auto, cfg, none), DType::F32);
  EXPECT_EQ(kv_cache_dtype(KvCacheType::F32, cfg, native), DType::F32);
  for (KvCacheType t : {KvCacheType::Auto, KvCacheType::F32, KvCacheType::F16})
    EXPECT_EQ(parse_kv_cache_type(kv_cache_type_name(t)), t);
  EXPECT_EQ(parse_kv_cache_type("fp16"), KvCacheType::F16);
  expect_error([] { parse_kv_cache_type("bf16", "--kv-cache"); }, "--kv-cache must be auto, f32 or f16, got \"bf16\"");
  EXPECT_EQ(GenerateOptions().kv_cache, KvCacheType::Auto);
}

// Greedy tokens (a batch of unequal prompts, and each alone) equal the fp32
// cache's and transformers'; the logits stay within the bound, and differ
// (the cache is fp16 indeed). Natively, then packed when the device has both.
TEST_F(DeviceTest, Fp16CacheGreedyEqualsFp32) {
  if (!has_f16()) GTEST_SKIP() << "no fp16 tensors: Fp16CacheWithoutFp16Storage covers this device";
  const Gpt2 m = gpt2(ctx());
  for (bool packed : {false, true}) {
    ScopedCaps caps(ctx());
    if (packed) {
      if (!caps->storage_16bit || !caps->f16_packed) continue;
      caps->storage_16bit = false;
    }
    SCOPED_TRACE(std::string("fp16 storage ") + caps->f16_storage());
    Session s(m.model);
    EXPECT_EQ(s.generate(m.ids, with_cache(KvCacheType::F32)), m.greedy);
    EXPECT_EQ(s.generate(m.ids, with_cache(KvCacheType::F16)), m.greedy);
    for (size_t i = 0; i < m.ids.size(); ++i)
      EXPECT_EQ(s.generate({m.ids[i]}, with_cache(KvCacheType::F16)), std::vector<Ids>{m.greedy[i]}) << "prompt " << i;
    const Difference d = logits_difference(*m.model, m.ids, m.greedy, KvCacheType::F16, KvCacheType::F32);
    std::printf("gpt2_lm, fp16 storage %s: fp16 cache vs fp32 cache logits: max rel %.3g, max abs %.3g (greedy "
                "margin %.3g)\n", caps->f16_storage(), d.rel, d.abs, m.margin);
    EXPECT_LE(d.rel, kLogitsBound);
    EXPECT_GT(d.abs, 0.0) << "the fp16 cache gave the fp32 cache's logits exactly: is it fp16?";
    EXPECT_LT(2 * d.abs, m.margin) << "the greedy tokens' equality would not be well defined";
  }
}

// Beam search over an fp16 cache (beams reordered by gathering f16 → f16)
// equals the fp32 cache's.
TEST_F(DeviceTest, Fp16CacheBeamSearchEqualsFp32) {
  if (!has_f16()) GTEST_SKIP() << "no fp16 tensors";
  const Gpt2 m = gpt2(ctx());
  Session s(m.model);
  GenerateOptions o = with_cache(KvCacheType::F32);
  o.beam = 3;
  const auto want = s.generate(m.ids, o);
  o.kv_cache = KvCacheType::F16;
  EXPECT_EQ(s.generate(m.ids, o), want);
  o.early_stopping = EarlyStopping::Never;  // longer searches, more reorders
  const auto never = s.generate(m.ids, o);
  o.kv_cache = KvCacheType::F32;
  EXPECT_EQ(s.generate(m.ids, o), never);
}

// An encoder–decoder (T5, relative-position bias): the self-attention caches
// and the cross-attention K/V in fp16. Greedy tokens equal transformers' (the
// golden's margin is 0.29), the logits the fp32 cache's within the bound.
TEST_F(DeviceTest, Fp16CacheEncDecT5) {
  if (!has_f16()) GTEST_SKIP() << "no fp16 tensors";
  const std::string dir = hf_model_dir("t5_gated_untied");
  const nlohmann::json g = hf_golden(dir);
  const auto src = g["src"].get<std::vector<Ids>>(), greedy = g["greedy"].get<std::vector<Ids>>();
  auto model = Model::load(ctx(), dir);
  Session s(model);
  EXPECT_EQ(s.generate(src, with_cache(KvCacheType::F16)), greedy);
  const Difference d = logits_difference(*model, src, greedy, KvCacheType::F16, KvCacheType::F32);
  std::printf("t5_gated_untied: fp16 cache vs fp32 cache logits: max rel %.3g, max abs %.3g (greedy margin %.3g)\n",
              d.rel, d.abs, g["greedy_margin"].get<double>());
  EXPECT_LE(d.rel, kLogitsBound);
  EXPECT_GT(d.abs, 0.0);
  EXPECT_LT(2 * d.abs, g["greedy_margin"].get<double>());
}

// Auto takes the family's choice (ModelConfig::kv_cache_f16_default, which no
// family sets yet: set here by hand) where the device can store fp16: then
// exactly the explicit fp16 cache's logits.
TEST_F(DeviceTest, AutoFollowsTheFamily) {
  const Gpt2 m = gpt2(ctx());
  EXPECT_EQ(logits_difference(*m.model, {m.ids[1]}, {m.greedy[1]}, KvCacheType::Auto, KvCacheType::F32).abs, 0.0);
  auto& cfg = const_cast<ModelConfig&>(m.model->config());
  cfg.kv_cache_f16_default = true;
  const KvCacheType as = has_f16() ? KvCacheType::F16 : KvCacheType::F32;
  EXPECT_EQ(logits_difference(*m.model, {m.ids[1]}, {m.greedy[1]}, KvCacheType::Auto, as).abs, 0.0);
  Session s(m.model);
  EXPECT_EQ(s.generate(m.ids, with_cache(KvCacheType::Auto)), m.greedy);
  cfg.kv_cache_f16_default = false;
}

// Without fp16 tensors (the no-fp16 profile, or a device with neither 16-bit
// storage nor packed halves): Auto is fp32, even for a family that asks for
// fp16, and an explicit fp16 cache is refused by generate and DecodeBatch,
// saying why; without a cache there is nothing to store.
TEST_F(DeviceTest, Fp16CacheWithoutFp16Storage) {
  const Gpt2 m = gpt2(ctx());
  ScopedCaps caps(ctx());
  caps->storage_16bit = caps->f16_packed = caps->texel_f16 = false;
  Session s(m.model);
  auto& cfg = const_cast<ModelConfig&>(m.model->config());
  cfg.kv_cache_f16_default = true;
  EXPECT_EQ(s.generate(m.ids, with_cache(KvCacheType::Auto)), m.greedy);
  cfg.kv_cache_f16_default = false;
  const char* why = "an fp16 KV cache needs fp16 tensors, which the device (profile ";
  expect_error([&] { s.generate(m.ids, with_cache(KvCacheType::F16)); }, why);
  expect_error([&] { DecodeBatch::make(s, 2, 16, KvCacheType::F16); }, why);
  GenerateOptions no_cache = with_cache(KvCacheType::F16);
  no_cache.use_cache = false;
  EXPECT_EQ(s.generate(m.ids, no_cache), m.greedy);
  // A batch of Auto (fp32 here) does not take an fp16 request: generate runs it alone, and refuses it.
  auto batch = DecodeBatch::make(s, 2, 16);
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->kv_cache(), DType::F32);
  EXPECT_TRUE(batch->fits({1, 2, 3}, with_cache(KvCacheType::Auto, 4)));
  EXPECT_FALSE(batch->fits({1, 2, 3}, with_cache(KvCacheType::F16, 4)));
}

// Memory: a cache row per token per layer is 2·kv values, 8·kv bytes in fp32
// and 4·kv in fp16. The pool says the same of a generation's caches (two
// buffers per layer for beam reordering): what an fp16 source holds less.
TEST_F(DeviceTest, Fp16CacheHalvesTheMemory) {
  if (!has_f16()) GTEST_SKIP() << "no fp16 tensors";
  const Gpt2 m = gpt2(ctx());
  const ModelConfig& cfg = m.model->config();
  const uint64_t layers = cfg.encoder_layers, kv = cfg.kv_width(), beam = 2, max_new = 20;
  const Ids& prompt = m.ids[0];
  Session::Impl impl(*m.model);
  auto held = [&](KvCacheType t) {
    GenerateOptions o = with_cache(t, uint32_t(max_new));
    o.beam = uint32_t(beam);
    const uint64_t before = ctx().memory_report().bytes_in_use;
    auto src = m.model->family().logits_source(impl, {prompt}, o);
    return ctx().memory_report().bytes_in_use - before;
  };
  const uint64_t f32 = held(KvCacheType::F32), f16 = held(KvCacheType::F16);
  // Rows: the prompt plus the new tokens; two buffers per layer, one slot per beam.
  const uint64_t rows = 2 * layers * beam * (prompt.size() + max_new);
  const double saved = double(f32 - f16) / double(rows);
  std::printf("gpt2_lm KV cache per token per layer: fp32 %llu bytes, fp16 %llu bytes (kv width %llu); "
              "the pool holds %.1f bytes less per cached row with fp16 (%llu vs %llu bytes)\n",
              (unsigned long long)(8 * kv), (unsigned long long)(4 * kv), (unsigned long long)kv, saved,
              (unsigned long long)f32, (unsigned long long)f16);
  EXPECT_NEAR(saved, double(4 * kv), 2.0 * 256 * 2 * layers / double(rows));  // allocation rounding
}

// The continuous batch with fp16 caches: each request's tokens equal its
// generate alone with an fp16 cache, and a slot's logits those of its solo
// source bit for bit (the same kernels, the same fp16 rows).
TEST_F(DeviceTest, DecodeBatchWithFp16CacheEqualsEachRequestAlone) {
  if (!has_f16()) GTEST_SKIP() << "no fp16 tensors";
  const Gpt2 m = gpt2(ctx());
  Session s(m.model);
  auto batch = DecodeBatch::make(s, 3, 32, KvCacheType::F16);
  ASSERT_TRUE(batch);
  EXPECT_EQ(batch->kv_cache(), DType::F16);
  std::vector<Ids> prompts = {{5, 6, 7}, {10, 11, 12, 13, 14, 15, 16, 17}, {1}, {40, 41, 42, 43, 44}, {88}};
  std::vector<GenerateOptions> opts;
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateOptions o = with_cache(KvCacheType::F16, uint32_t(3 + 3 * (i % 3)));
    o.eos_token_ids = {99};
    if (i % 2 == 1) {
      o.do_sample = true;
      o.seed = 7 + i;
    }
    opts.push_back(o);
  }
  EXPECT_FALSE(batch->fits(prompts[0], with_cache(KvCacheType::F32)));  // another cache: alone
  std::vector<Ids> alone, got(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) alone.push_back(Session(m.model).generate({prompts[i]}, opts[i])[0]);
  std::map<uint64_t, size_t> which;
  size_t next = 0, done = 0, steps = 0;
  while (done < prompts.size()) {
    while (next < prompts.size() && !batch->full()) {
      ASSERT_TRUE(batch->fits(prompts[next], opts[next]));
      which[batch->add(prompts[next], opts[next])] = next;
      ++next;
    }
    batch->step();
    for (auto& [id, tokens] : batch->take_finished()) {
      got[which.at(id)] = tokens;
      ++done;
    }
    ASSERT_LT(++steps, 100u);
  }
  for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(got[i], alone[i]) << "request " << i;

  // Below the tokens: slot logits against the solo fp16 source, bit for bit.
  Session::Impl impl(*m.model);
  auto slots = m.model->family().slot_source(impl, 3, 24, DType::F16);
  ASSERT_TRUE(slots);
  const uint32_t V = m.model->config().out_vocab();
  std::vector<uint32_t> rows;
  for (uint32_t b = 0; b < 3; ++b) {
    auto solo = m.model->family().logits_source(impl, {m.ids[b]}, with_cache(KvCacheType::F16, 3));
    EXPECT_EQ(slots->prefill(b, m.ids[b], 0), solo->start()) << "prefill " << b;
    rows.push_back(uint32_t(m.ids[b].size()));
  }
  const std::vector<float> step = slots->step({3, 4, 5}, rows);
  for (uint32_t b = 0; b < 3; ++b) {
    auto solo = m.model->family().logits_source(impl, {m.ids[b]}, with_cache(KvCacheType::F16, 3));
    solo->start();
    EXPECT_EQ(std::vector<float>(step.begin() + b * V, step.begin() + (b + 1) * V), solo->step({int32_t(3 + b)}, {0}))
        << "sequence " << b;
  }
  // A slot moved (the batch packing itself when one leaves) keeps its rows, f16 → f16.
  slots->move(2, 0, rows[2] + 1);
  rows = {rows[2] + 1, rows[1] + 1};
  auto solo = m.model->family().logits_source(impl, {m.ids[2]}, with_cache(KvCacheType::F16, 3));
  solo->start();
  solo->step({5}, {0});
  const std::vector<float> moved = slots->step({6, 7}, rows);
  EXPECT_EQ(std::vector<float>(moved.begin(), moved.begin() + V), solo->step({6}, {0}));
}

}  // namespace vkf::test
