// The t5 family against Hugging Face's own outputs: the tiny random
// T5ForConditionalGeneration directories of `make hf-test-models`
// (tools/hf/tiny_t5.py), relu with tied embeddings and gated-gelu untied, both
// with d_kv·num_heads ≠ d_model. Logits of one padded batch of three (source,
// decoder input) pairs of unequal lengths against each pair run alone in
// transformers; greedy and beam generation against HF generate() on each
// source alone, token for token; the bucket function against HF's
// _relative_position_bucket and a table of hand-worked cases.
//
// Bounds (max |got − want| / max(1, max |want|)): 1e-4 with fp32 weights, as
// the other HF families; 1e-2 with fp16 storage of these F32 files (their
// goldens are of the unrounded weights). Generation equality is well defined:
// the goldens' smallest greedy top-1 − top-2 margin is ≥ 0.03, far above 1e-4.
#include "families/t5/config.hpp"
#include "model_util.hpp"
#include "model_writer.hpp"

namespace vkf::test {
namespace {

class T5Test : public DeviceTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(T5Test, MatchesTransformers) {
  const std::string name = GetParam();
  const std::string dir = hf_model_dir(name);
  const json g = hf_golden(dir);
  const auto src = g["src"].get<std::vector<Ids>>(), tgt = g["tgt"].get<std::vector<Ids>>();
  for (Precision p : {Precision::F32, Precision::F16}) {
    if (p == Precision::F16 && !ctx().caps().storage_16bit) continue;
    SCOPED_TRACE(name + (p == Precision::F16 ? " fp16" : " fp32"));
    auto model = Model::load(ctx(), dir, p);
    EXPECT_TRUE(model->warnings().empty()) << model->warnings().front();
    Session s(model);
    const ForwardOutput f = s.forward(src, tgt);
    EXPECT_EQ(s.stats().submissions, 1u);
    EXPECT_EQ(f.dim, model->config().tgt_vocab_size);
    const double err = forward_error(f, golden_rows(g["outputs"]["logits"]));
    EXPECT_LE(err, hf_bound(name, p));
    std::printf("%s %s: max error %.3g\n", name.c_str(), p == Precision::F16 ? "fp16" : "fp32", err);
    if (p == Precision::F16) continue;  // generation: fp32 (fp16's errors may flip a close choice)
    ASSERT_EQ(model->config().eos_id, g["eos"].get<int32_t>());
    GenerateOptions o;
    o.max_new_tokens = 8;
    const auto greedy = g["greedy"].get<std::vector<Ids>>(), beam = g["beam"].get<std::vector<Ids>>();
    // The batch of unequal sources (padding), with and without the KV cache.
    EXPECT_EQ(s.generate(src, o), greedy);
    o.use_cache = false;
    EXPECT_EQ(s.generate(src, o), greedy);
    o.use_cache = true;
    // Each source alone: one submission per generated token (the encoder's gives the first).
    for (size_t i = 0; i < src.size(); ++i) {
      EXPECT_EQ(s.generate({src[i]}, o), std::vector<Ids>{greedy[i]}) << "source " << i + 1;
      EXPECT_EQ(s.stats().submissions, std::min<size_t>(greedy[i].size() + 1, 8)) << "source " << i + 1;
    }
    // Beam search with HF's options (beams reordered over the cache), and without the cache.
    o.beam = g["beam_options"]["num_beams"];
    o.length_penalty = g["beam_options"]["length_penalty"];
    o.no_repeat_ngram_size = g["beam_options"]["no_repeat_ngram_size"];
    for (size_t i = 0; i < src.size(); ++i)
      EXPECT_EQ(s.generate({src[i]}, o), std::vector<Ids>{beam[i]}) << "source " << i + 1;
    EXPECT_EQ(s.generate(src, o), beam);
    o.use_cache = false;
    EXPECT_EQ(s.generate(src, o), beam);
  }
}

INSTANTIATE_TEST_SUITE_P(Hf, T5Test, ::testing::Values("t5_relu_tied", "t5_gated_untied"));

// ---- the bucket of each relative position (memory − query) ----

/// Bucket of relative position r from t5_buckets (which covers ±max_distance; beyond, the ends).
int32_t bucket(uint32_t nb, uint32_t md, bool bidi, int64_t r) {
  const auto t = t5_buckets(nb, md, bidi);
  const int64_t m = int64_t(md);
  return t[size_t(std::clamp(r, -m, m) + m)];
}

TEST(T5Buckets, MatchHfOnEveryRelativePosition) {
  const json j = hf_golden(hf_model_dir("t5_buckets"));
  for (const auto& c : j["cases"]) {
    const uint32_t nb = c["num_buckets"], md = c["max_distance"];
    const bool bidi = c["bidirectional"];
    SCOPED_TRACE(c["num_buckets"].dump() + " buckets, max_distance " + c["max_distance"].dump() +
                 (bidi ? " bidirectional" : " causal"));
    const auto rel = c["relative_positions"].get<std::vector<int64_t>>();
    const auto want = c["buckets"].get<std::vector<int32_t>>();
    for (size_t i = 0; i < rel.size(); ++i) ASSERT_EQ(bucket(nb, md, bidi, rel[i]), want[i]) << "r = " << rel[i];
  }
}

// Worked by hand from HF's definition. T5's defaults (32 buckets, 128): the encoder
// has 16 per sign, 8 exact (|r| < 8), then 8 + ⌊log(|r|/8)/log(16)·8⌋ = 8 + ⌊2·log2(|r|/8)⌋
// up to 15; keys after the query (r > 0) add 16. The decoder sees only r ≤ 0: 32
// buckets, 16 exact, then 16 + ⌊log(n/16)/log(8)·16⌋ up to 31; r > 0 is bucket 0.
TEST(T5Buckets, HandWorkedCases) {
  const struct {
    bool bidi;
    int64_t r;
    int32_t want;
  } cases[] = {
      {true, 0, 0},      {true, -1, 1},     {true, 1, 17},     {true, -7, 7},     {true, 7, 23},
      {true, -8, 8},     // 8 + ⌊2·log2(1)⌋
      {true, -11, 8},    // 8 + ⌊2·log2(1.375)⌋ = 8 + ⌊0.92⌋
      {true, -12, 9},    // 8 + ⌊2·log2(1.5)⌋ = 8 + ⌊1.17⌋
      {true, -16, 10},   // 8 + ⌊2·log2(2)⌋
      {true, -32, 12},   {true, -64, 14},   {true, -90, 14},  // 8 + ⌊5.83⌋
      {true, -91, 15},   // 8 + ⌊2·log2(11.375)⌋ = 8 + ⌊7.01⌋
      {true, -127, 15},  {true, -128, 15},  {true, -5000, 15}, {true, 5000, 31}, {true, 16, 26},
      {false, 3, 0},     {false, 0, 0},     {false, -15, 15},  {false, -16, 16},
      {false, -32, 21},  // 16 + ⌊log(2)/log(8)·16⌋ = 16 + ⌊5.33⌋
      {false, -64, 26},  // 16 + ⌊10.67⌋
      {false, -127, 31}, // 16 + ⌊15.95⌋
      {false, -128, 31}, {false, -100000, 31},
  };
  for (const auto& c : cases)
    EXPECT_EQ(bucket(32, 128, c.bidi, c.r), c.want) << (c.bidi ? "encoder" : "decoder") << " r = " << c.r;
}

}  // namespace
}  // namespace vkf::test
