// Whole stacks against PyTorch: padded batches of unequal lengths, every model
// kind, fp32 and fp16 weight storage.
#include "model_util.hpp"
#include "run/plan_cache.hpp"

namespace vkf::test {

/// The bound for fp32 storage: max abs error ≤ 1e-4 · max(1, |ref|max).
constexpr double kForwardF32Bound = 1e-4;
/// fp16 storage rounds every weight (relative error ≤ 2^-11 each) while the
/// reference keeps fp32 weights: the difference is quantization, not
/// arithmetic, and grows with depth. Measured worst case 5.3e-4 (encoder_learned).
constexpr double kForwardF16Bound = 3e-3;

class ForwardTest : public DeviceTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(ForwardTest, MatchesTorchOnPaddedBatch) {
  const auto g = golden(GetParam());
  auto model = Model::load(ctx(), model_dir(GetParam()));
  Session s(model);
  std::vector<Ids> tgt = g.contains("tgt") ? ids_of(g["tgt"]) : std::vector<Ids>{};
  ForwardOutput out = s.forward(ids_of(g["src"]), tgt);
  EXPECT_EQ(out.dim, g["dim"].get<uint32_t>());
  const double err = forward_error(out, g["forward"].get<std::vector<std::vector<float>>>());
  EXPECT_LE(err, kForwardF32Bound);
  RecordProperty("max_error", sci(err));
  // One submission per forward (devices without host-visible memory add staging copies).
  if (ctx().host_mapped()) EXPECT_EQ(s.stats().submissions, 1u);
}

TEST_P(ForwardTest, Fp16StorageStaysClose) {
  if (!has_f16()) GTEST_SKIP() << "no 16-bit storage";
  const auto g = golden(GetParam());
  auto model = Model::load(ctx(), model_dir(GetParam()), Precision::F16);
  Session s(model);
  std::vector<Ids> tgt = g.contains("tgt") ? ids_of(g["tgt"]) : std::vector<Ids>{};
  const double err = forward_error(s.forward(ids_of(g["src"]), tgt),
                                   g["forward"].get<std::vector<std::vector<float>>>());
  EXPECT_LE(err, kForwardF16Bound);
  RecordProperty("max_error", sci(err));
}

// Each sequence alone gives what it gives inside the padded batch.
TEST_P(ForwardTest, BatchEqualsEachSequenceAlone) {
  const auto g = golden(GetParam());
  auto model = Model::load(ctx(), model_dir(GetParam()));
  Session s(model);
  const std::vector<Ids> src = ids_of(g["src"]);
  const std::vector<Ids> tgt = g.contains("tgt") ? ids_of(g["tgt"]) : std::vector<Ids>{};
  ForwardOutput all = s.forward(src, tgt);
  for (size_t b = 0; b < src.size(); ++b) {
    ForwardOutput one = s.forward({src[b]}, tgt.empty() ? std::vector<Ids>{} : std::vector<Ids>{tgt[b]});
    std::vector<float> row(all.data.begin() + b * all.len * all.dim,
                           all.data.begin() + (b * all.len + all.lengths[b]) * all.dim);
    EXPECT_LE(forward_error(one, {row}), 1e-5) << "sequence " << b;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, ForwardTest, ::testing::ValuesIn(all_models()));

// A Session keeps 16 shapes recorded; past that it drops the least recently used.
TEST(PlanCache, DropsTheLeastRecentlyUsed) {
  PlanCache cache(2);
  int made = 0;
  auto get = [&](Task task, uint32_t batch) {
    return &cache.get({task, batch, 5, 0}, [&] {
      ++made;
      return std::make_unique<Plan>();
    });
  };
  auto has = [&](Task task, uint32_t batch) { return cache.contains({task, batch, 5, 0}); };
  Plan* one = get(Task::Forward, 1);
  get(Task::Forward, 2);
  EXPECT_EQ(get(Task::Forward, 1), one);  // a hit, now the most recently used
  get(Task::Embed, 1);                    // another task is another plan; 2 is dropped
  EXPECT_EQ(made, 3);
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_TRUE(has(Task::Forward, 1));
  EXPECT_FALSE(has(Task::Forward, 2));
  EXPECT_TRUE(has(Task::Embed, 1));
  get(Task::Forward, 2);  // made again; now Forward 1 is the least recently used
  EXPECT_EQ(made, 4);
  EXPECT_FALSE(has(Task::Forward, 1));
}

}  // namespace vkf::test
