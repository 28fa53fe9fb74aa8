// Generation against PyTorch: greedy equals torch's full-recompute greedy, beam
// search equals the reference in tools/vkformer_torch.py, the KV cache equals a
// full recompute, and every decode step is one submission (also where the host
// cannot map device memory).
#include "model_util.hpp"

namespace vkf::test {

class GenerateTest : public DeviceTest, public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    DeviceTest::SetUp();
    g = golden(GetParam());
    model = Model::load(ctx(), model_dir(GetParam()));
  }
  nlohmann::json g;
  std::shared_ptr<Model> model;
};

TEST_P(GenerateTest, GreedyMatchesTorch) {
  Session s(model);
  GenerateOptions o;
  o.max_new_tokens = g["max_new_tokens"];
  EXPECT_EQ(s.generate(ids_of(g["src"]), o), ids_of(g["greedy"]));
  // One submission for the first token, then one per step.
  if (ctx().host_mapped()) EXPECT_EQ(s.stats().submissions, 1 + s.stats().steps);
}

TEST_P(GenerateTest, BeamSearchMatchesReference) {
  Session s(model);
  GenerateOptions o;
  o.beam = g["beam"]["width"];
  o.length_penalty = g["beam"]["alpha"];
  o.max_new_tokens = g["beam"]["max_new_tokens"];
  EXPECT_EQ(s.generate(ids_of(g["src"]), o), ids_of(g["beam"]["sequences"]));
  if (ctx().host_mapped()) EXPECT_EQ(s.stats().submissions, 1 + s.stats().steps);
}

// A device whose tensors the host cannot map (a discrete GPU; forced here): a
// pass's inputs and outputs travel through host-visible buffers copied inside
// its command buffer, so a forward pass and each decode step are still one
// submission, and the results are those of the mapped context.
TEST_P(GenerateTest, StagedDeviceTakesOneSubmissionPerPassAndStep) {
  ContextOptions opts;
  opts.validation = 1;
  opts.verbose = false;
  opts.force_staging = true;
  Context staged(opts);
  ASSERT_FALSE(staged.host_mapped());
  Session s(Model::load(staged, model_dir(GetParam())));
  GenerateOptions o;
  o.max_new_tokens = g["max_new_tokens"];
  const std::vector<Ids> src = ids_of(g["src"]);
  EXPECT_EQ(s.generate(src, o), ids_of(g["greedy"]));
  // Each decode step is one submission: 3 more steps, 3 more submissions (the
  // setup's uploads, the caches' bookkeeping, come once per call).
  o.stop_at_eos = false;
  o.max_new_tokens = 2;
  s.generate(src, o);
  const RunStats shorter = s.stats();
  const MemoryReport held = staged.memory_report();
  o.max_new_tokens = 5;
  s.generate(src, o);
  EXPECT_EQ(s.stats().steps, shorter.steps + 3);
  EXPECT_EQ(s.stats().submissions, shorter.submissions + 3);
  // Each step is timed whole and in the queue (its one submission to its fence).
  EXPECT_EQ(s.stats().step_submissions, 1u);
  ASSERT_EQ(s.stats().step_queue_ms.size(), s.stats().step_ms.size());
  for (size_t i = 0; i < s.stats().step_ms.size(); ++i) {
    EXPECT_GT(s.stats().step_queue_ms[i], 0.0);
    EXPECT_LE(s.stats().step_queue_ms[i], s.stats().step_ms[i]);
  }
  // The steps' host buffers (ids, positions, logits) are the pool's kept ones,
  // not new allocations each token: a longer call holds no more blocks.
  EXPECT_EQ(staged.memory_report().blocks, held.blocks);
  EXPECT_EQ(staged.memory_report().block_bytes, held.block_bytes);
  Session mapped(model);
  const std::vector<Ids> tgt = model->config().encoder_decoder() ? std::vector<Ids>{{0, 1}} : std::vector<Ids>{};
  const ForwardOutput want = mapped.forward({src[0]}, tgt);
  const ForwardOutput got = s.forward({src[0]}, tgt);
  EXPECT_EQ(s.stats().submissions, 1u);
  EXPECT_GT(s.stats().queue_ms, 0.0);  // its one submission, timed to its fence
  EXPECT_EQ(got.data, want.data);
  EXPECT_EQ(staged.validation_messages(), 0u) << staged.last_validation_message();
}

TEST_P(GenerateTest, CacheEqualsFullRecompute) {
  Session s(model);
  const std::vector<Ids> src = ids_of(g["src"]);
  for (uint32_t beam : {1u, 3u}) {
    GenerateOptions o;
    o.beam = beam;
    o.max_new_tokens = g["max_new_tokens"];
    const auto cached = s.generate(src, o);
    o.use_cache = false;
    EXPECT_EQ(s.generate(src, o), cached) << "beam " << beam;
  }
}

TEST_P(GenerateTest, BatchEqualsEachSequenceAlone) {
  Session s(model);
  const std::vector<Ids> src = ids_of(g["src"]);
  GenerateOptions o;
  o.max_new_tokens = g["max_new_tokens"];
  const auto all = s.generate(src, o);
  for (size_t b = 0; b < src.size(); ++b) EXPECT_EQ(s.generate({src[b]}, o)[0], all[b]) << b;
}

INSTANTIATE_TEST_SUITE_P(Models, GenerateTest, ::testing::ValuesIn(generating_models()));

}  // namespace vkf::test

namespace vkf::test {

// Profiling labels every dispatch with its layer, and changes no result.
TEST_F(DeviceTest, ProfilingTimesEveryDispatchByLayer) {
  const auto g = golden("encdec_postln_relu");
  auto model = Model::load(ctx(), model_dir("encdec_postln_relu"));
  Session s(model);
  s.set_profiling(true);
  ForwardOutput out = s.forward(ids_of(g["src"]), ids_of(g["tgt"]));
  EXPECT_LE(forward_error(out, g["forward"].get<std::vector<std::vector<float>>>()), 1e-4);
  const auto& t = s.stats().timings;
  ASSERT_EQ(t.size(), s.stats().dispatches);
  size_t decoder1 = 0;
  for (const auto& x : t) decoder1 += x.label.rfind("decoder.1/", 0) == 0;
  EXPECT_GT(decoder1, 5u);
  GenerateOptions o;
  o.max_new_tokens = g["max_new_tokens"];
  EXPECT_EQ(s.generate(ids_of(g["src"]), o), ids_of(g["greedy"]));
  EXPECT_EQ(s.stats().timings.size(), s.stats().dispatches);
}

}  // namespace vkf::test
