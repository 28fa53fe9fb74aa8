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

// ---- config.json and the tensors: each error names the file and the key or tensor.

json tiny_t5() {
  return {{"model_type", "t5"}, {"vocab_size", 23}, {"d_model", 12}, {"d_kv", 5}, {"num_heads", 2},
          {"d_ff", 14}, {"num_layers", 2}, {"num_decoder_layers", 1}, {"relative_attention_num_buckets", 8},
          {"relative_attention_max_distance", 10}};
}

/// Every tensor T5ForConditionalGeneration (tied, relu) saves for `c`, as HF names them.
TensorMap tiny_t5_weights(const json& c) {
  const int64_t d = c["d_model"], V = c["vocab_size"], in = int64_t(c["d_kv"]) * int64_t(c["num_heads"]);
  const int64_t ff = c["d_ff"], nb = c["relative_attention_num_buckets"], H = c["num_heads"];
  TensorMap m;
  uint32_t seed = 1;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    m[name] = {"F32", shape, random_vector(size_t(n), seed++)};
  };
  add("shared.weight", {V, d});
  for (const auto& [stack, layers] : {std::pair<std::string, int>{"encoder", c["num_layers"]},
                                      {"decoder", c["num_decoder_layers"]}}) {
    const bool dec = stack == "decoder";
    add(stack + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight", {nb, H});
    for (int l = 0; l < layers; ++l) {
      const std::string p = stack + ".block." + std::to_string(l) + ".layer.";
      for (const char* n : {"q", "k", "v"}) add(p + "0.SelfAttention." + n + ".weight", {in, d});
      add(p + "0.SelfAttention.o.weight", {d, in});
      add(p + "0.layer_norm.weight", {d});
      if (dec) {
        for (const char* n : {"q", "k", "v"}) add(p + "1.EncDecAttention." + n + ".weight", {in, d});
        add(p + "1.EncDecAttention.o.weight", {d, in});
        add(p + "1.layer_norm.weight", {d});
      }
      const std::string f = p + (dec ? "2" : "1");
      add(f + ".DenseReluDense.wi.weight", {ff, d});
      add(f + ".DenseReluDense.wo.weight", {d, ff});
      add(f + ".layer_norm.weight", {d});
    }
    add(stack + ".final_layer_norm.weight", {d});
  }
  return m;
}

std::string write_t5(const std::string& name, const json& c, const TensorMap& t) {
  return write_model("t5-" + name, c, t);
}

TEST(T5Config, HfKeysAndDefaults) {
  const std::string dir = temp_dir("t5-defaults-cfg");
  write_file(dir + "/config.json", json{{"model_type", "t5"}}.dump());
  const ModelConfig d = load_config(dir + "/config.json");  // T5Config's defaults: t5-small
  EXPECT_EQ(d.d_model, 512u);
  EXPECT_EQ(d.encoder_layers, 6u);
  EXPECT_EQ(d.decoder_layers, 6u);
  EXPECT_EQ(d.n_heads, 8u);
  EXPECT_EQ(d.d_ff, 2048u);
  EXPECT_EQ(d.src_vocab_size, 32128u);
  EXPECT_EQ(d.activation, Activation::ReLU);
  EXPECT_EQ(d.layer_norm_eps, 1e-6f);
  EXPECT_EQ(d.pad_id, 0);
  EXPECT_EQ(d.eos_id, 1);
  EXPECT_EQ(d.bos_id, 0);  // decoder_start_token_id defaults to pad
  const T5Config& t = t5_config(d);
  EXPECT_EQ(t.d_kv, 64u);
  EXPECT_EQ(t.num_buckets, 32u);
  EXPECT_EQ(t.max_distance, 128u);
  EXPECT_TRUE(t.tied && t.lm_head && !t.gated);
  // Flan-T5 / v1.1: gated-gelu is gelu_new; "gated-silu" and plain "gelu" as HF parses them.
  for (const auto& [ff, act, gated] : {std::tuple<const char*, Activation, bool>{"gated-gelu", Activation::GeluTanh, true},
                                       {"gated-silu", Activation::SiLU, true},
                                       {"gelu", Activation::GeluErf, false}}) {
    write_file(dir + "/config.json", json{{"model_type", "t5"}, {"feed_forward_proj", ff}}.dump());
    const ModelConfig c = load_config(dir + "/config.json");
    EXPECT_EQ(c.activation, act) << ff;
    EXPECT_EQ(t5_config(c).gated, gated) << ff;
  }
}

TEST(T5Config, BadKeysAreNamed) {
  const std::pair<json, std::string> cases[] = {
      {{{"d_model", 0}}, "\"d_model\""},
      {{{"num_heads", "8"}}, "\"num_heads\""},
      {{{"d_kv", 300}}, "\"d_kv\" 300 exceeds 256"},
      {{{"feed_forward_proj", "gated-gelu-new"}}, "\"feed_forward_proj\" \"gated-gelu-new\" is not of the form"},
      {{{"feed_forward_proj", "gelu-relu"}}, "\"feed_forward_proj\" \"gelu-relu\" is not of the form"},
      {{{"feed_forward_proj", "tanh"}}, "\"feed_forward_proj\" \"tanh\" is not supported"},
      {{{"relative_attention_num_buckets", 2}}, "\"relative_attention_num_buckets\" 2 is less than 4"},
      {{{"relative_attention_max_distance", 4}}, "\"relative_attention_max_distance\" 4 must be in (4, 2^20]"},
      {{{"eos_token_id", 23}}, "\"eos_token_id\" must be a token id in [0, 23)"},
      {{{"decoder_start_token_id", -1}}, "\"decoder_start_token_id\" -1 is outside the vocabulary"},
      {{{"layer_norm_epsilon", 0}}, "\"layer_norm_epsilon\""},
      {{{"is_decoder", true}}, "\"is_decoder\": true is not supported"},
      {{{"architectures", {"T5ForQuestionAnswering"}}},
       "\"architectures\" \"T5ForQuestionAnswering\" is not supported for model_type \"t5\""},
  };
  for (const auto& [patch, needle] : cases) {
    SCOPED_TRACE(patch.dump());
    json c = tiny_t5();
    c.update(patch);
    const std::string dir = temp_dir("t5-bad");
    write_file(dir + "/config.json", c.dump());
    expect_error([&] { load_config(dir + "/config.json"); }, needle);
    expect_error([&] { load_config(dir + "/config.json"); }, dir + "/config.json: ");
  }
}

TEST_F(DeviceTest, T5Tensors) {
  const json c = tiny_t5();
  const TensorMap full = tiny_t5_weights(c);
  {  // loads without warnings; padding is masked by position (id 0 is also the start token)
    auto m = Model::load(ctx(), write_t5("ok", c, full));
    EXPECT_TRUE(m->warnings().empty()) << m->warnings().front();
    Session s(m);
    const ForwardOutput one = s.forward({{3, 0, 5}}, {{0, 4}}), two = s.forward({{7, 8, 9, 10}}, {{0, 1, 2}});
    const ForwardOutput padded = s.forward({{3, 0, 5}, {7, 8, 9, 10}}, {{0, 4}, {0, 1, 2}});
    EXPECT_LE(forward_error(padded, {one.data, two.data}), 1e-6);
    expect_error([&] { s.forward({{1, 2}}); }, "one decoder input per source");
  }
  TensorMap t = full;
  t.erase("decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
  expect_error([&] { Model::load(ctx(), write_t5("nobias", c, t)); },
               "missing tensor \"decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight\" [8, 2] = "
               "[relative_attention_num_buckets, num_heads]");
  json more = c;
  more["relative_attention_num_buckets"] = 16;
  expect_error([&] { Model::load(ctx(), write_t5("buckets", more, full)); },
               "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight");
  expect_error([&] { Model::load(ctx(), write_t5("buckets", more, full)); }, "[relative_attention_num_buckets, num_heads]");
  t = full;
  t.erase("encoder.block.1.layer.1.DenseReluDense.wi.weight");
  expect_error([&] { Model::load(ctx(), write_t5("nowi", c, t)); },
               "missing tensor \"encoder.block.1.layer.1.DenseReluDense.wi.weight\" [14, 12] = [d_ff, d_model]");
  json gated = c;
  gated["feed_forward_proj"] = "gated-gelu";
  expect_error([&] { Model::load(ctx(), write_t5("gated", gated, full)); }, "DenseReluDense.wi_0.weight");
  json untied = c;
  untied["tie_word_embeddings"] = false;
  expect_error([&] { Model::load(ctx(), write_t5("untied", untied, full)); }, "missing tensor \"lm_head.weight\"");
  // T5EncoderModel: the encoder's tensors only; hidden states; no generation.
  json enc = c;
  enc["architectures"] = {"T5EncoderModel"};
  t = full;
  for (auto it = t.begin(); it != t.end();) it = it->first.rfind("decoder.", 0) == 0 ? t.erase(it) : std::next(it);
  auto m = Model::load(ctx(), write_t5("enc", enc, t));
  Session s(m);
  EXPECT_EQ(s.forward({{1, 2, 3}}).dim, 12u);
  expect_error([&] { s.generate({{1, 2}}); }, "T5EncoderModel (hidden states only) cannot generate");
}

}  // namespace
}  // namespace vkf::test
