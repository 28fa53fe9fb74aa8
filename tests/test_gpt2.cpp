// The gpt2 family against Hugging Face's own outputs: the tiny random
// GPT2LMHeadModel / GPT2Model directories of `make hf-test-models`
// (tools/hf/make_tiny_models.py): logits of a right-padded batch of three
// prompts of unequal lengths against each prompt run alone in transformers,
// and greedy generation against HF generate(do_sample=False) on each prompt
// alone, token for token.
//
// Bounds (max |got − want| / max(1, max |want|)): 1e-4 with fp32 weights, as
// the other stacks; gpt2_lm_f16's and gpt2_lm_bf16's goldens come from their own
// rounded weights, which fp16 storage holds exactly: 1e-4 in either precision. An F32 file
// stored as fp16 is compared with a golden of unrounded weights: 1e-2, as the
// bert family. Greedy equality is well defined: the goldens' smallest top-1 −
// top-2 logit margin is ≥ 0.017, far above these errors.
#include <algorithm>

#include "model_util.hpp"
#include "model_writer.hpp"

namespace vkf::test {
namespace {

class Gpt2Test : public DeviceTest, public ::testing::WithParamInterface<std::string> {};

TEST_P(Gpt2Test, MatchesTransformers) {
  const std::string name = GetParam();
  const std::string dir = hf_model_dir(name);
  const json g = hf_golden(dir);
  const std::vector<Ids> ids = g["ids"].get<std::vector<Ids>>();
  for (Precision p : {Precision::F32, Precision::F16}) {
    if (p == Precision::F16 && !ctx().caps().f16_tensors()) continue;
    SCOPED_TRACE(name + (p == Precision::F16 ? " fp16" : " fp32"));
    const double bound = hf_bound(name, p);
    auto model = Model::load(ctx(), dir, p);
    Session s(model);
    const bool lm = g.contains("greedy");
    const ForwardOutput f = s.forward(ids);
    EXPECT_EQ(s.stats().submissions, 1u);
    EXPECT_EQ(f.dim, lm ? model->config().src_vocab_size : model->config().d_model);
    const double err = forward_error(f, golden_rows(g["outputs"][lm ? "logits" : "last_hidden_state"]));
    EXPECT_LE(err, bound);
    std::printf("%s %s: max error %.3g\n", name.c_str(), p == Precision::F16 ? "fp16" : "fp32", err);
    if (!lm) continue;
    ASSERT_EQ(model->config().eos_id, g["eos"].get<int32_t>());
    const auto want = g["greedy"].get<std::vector<Ids>>();
    GenerateOptions o;
    o.max_new_tokens = 8;
    // The batch of unequal prompts (right padding), with and without the KV cache.
    EXPECT_EQ(s.generate(ids, o), want);
    o.use_cache = false;
    EXPECT_EQ(s.generate(ids, o), want);
    o.use_cache = true;
    // Each prompt alone: one submission per generated token (the prompt's pass gives the first).
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(s.generate({ids[i]}, o), std::vector<Ids>{want[i]}) << "prompt " << i + 1;
      EXPECT_EQ(s.stats().submissions, std::min<size_t>(want[i].size() + 1, 8)) << "prompt " << i + 1;
    }
    // Beam search over the cache (beams reordered by gathering) equals recomputation.
    o.beam = 3;
    const auto beams = s.generate(ids, o);
    o.use_cache = false;
    EXPECT_EQ(s.generate(ids, o), beams);
  }
}

INSTANTIATE_TEST_SUITE_P(Hf, Gpt2Test, ::testing::Values("gpt2_lm", "gpt2_lm_untied", "gpt2_lm_f16", "gpt2_lm_bf16",
                                                           "gpt2_model"));

// ---- config.json and the tensors: each error names the file and the key or tensor.

json tiny_gpt2() {
  return {{"model_type", "gpt2"}, {"vocab_size", 23}, {"n_embd", 12}, {"n_layer", 2}, {"n_head", 3},
          {"n_positions", 16}, {"n_inner", nullptr}, {"bos_token_id", 22}, {"eos_token_id", 22}};
}

/// Every tensor GPT2LMHeadModel (tied) saves for `c`, as HF names them: Conv1D weights [in, out].
TensorMap tiny_gpt2_weights(const json& c, const std::string& prefix = "transformer.") {
  const int64_t d = c["n_embd"], V = c["vocab_size"], P = c["n_positions"], ff = 4 * d;
  TensorMap m;
  uint32_t seed = 1;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    m[prefix + name] = {"F32", shape, random_vector(size_t(n), seed++)};
  };
  add("wte.weight", {V, d});
  add("wpe.weight", {P, d});
  for (int l = 0; l < int(c["n_layer"]); ++l) {
    const std::string h = "h." + std::to_string(l) + ".";
    for (const char* n : {"ln_1", "ln_2"}) add(h + n + ".weight", {d}), add(h + n + ".bias", {d});
    const std::pair<const char*, std::pair<int64_t, int64_t>> convs[] = {
        {"attn.c_attn", {d, 3 * d}}, {"attn.c_proj", {d, d}}, {"mlp.c_fc", {d, ff}}, {"mlp.c_proj", {ff, d}}};
    for (const auto& [n, io] : convs) add(h + n + ".weight", {io.first, io.second}), add(h + n + ".bias", {io.second});
  }
  add("ln_f.weight", {d});
  add("ln_f.bias", {d});
  return m;
}

std::string write_gpt2(const std::string& name, const json& c, const TensorMap& t) {
  return write_model("gpt2-" + name, c, t);
}

TEST(Gpt2Config, HfKeysAndDefaults) {
  const std::string dir = temp_dir("gpt2-defaults-cfg");
  write_file(dir + "/config.json", json{{"model_type", "gpt2"}}.dump());
  const ModelConfig d = load_config(dir + "/config.json");  // GPT2Config's defaults: GPT-2 small
  EXPECT_EQ(d.d_model, 768u);
  EXPECT_EQ(d.encoder_layers, 12u);
  EXPECT_EQ(d.n_heads, 12u);
  EXPECT_EQ(d.d_ff, 3072u);
  EXPECT_EQ(d.max_positions, 1024u);
  EXPECT_EQ(d.src_vocab_size, 50257u);
  EXPECT_EQ(d.eos_id, 50256);
  EXPECT_EQ(d.end_ids, std::vector<int32_t>{50256});
  EXPECT_EQ(d.activation, Activation::GeluTanh);
  EXPECT_EQ(d.layer_norm_eps, 1e-5f);
  EXPECT_TRUE(d.causal && d.norm_first);
  EXPECT_LT(d.pad_id, 0);  // no padding token: padding is masked by position
}

TEST(Gpt2Config, BadKeysAreNamed) {
  const std::pair<json, std::string> cases[] = {
      {{{"n_embd", 13}}, "\"n_embd\""},
      {{{"n_layer", 0}}, "\"n_layer\""},
      {{{"vocab_size", "big"}}, "\"vocab_size\""},
      {{{"n_inner", -1}}, "\"n_inner\""},
      {{{"layer_norm_epsilon", 0}}, "\"layer_norm_epsilon\""},
      {{{"activation_function", "tanh"}}, "\"activation_function\" \"tanh\" is not supported"},
      {{{"eos_token_id", 23}}, "\"eos_token_id\" must be a token id in [0, 23) or a non-empty list of them, got 23"},
      {{{"eos_token_id", {1, 23}}}, "\"eos_token_id\" must be a token id in [0, 23)"},
      {{{"eos_token_id", json::array()}}, "\"eos_token_id\" must be a token id in [0, 23)"},
      {{{"bos_token_id", -1}}, "\"bos_token_id\" must be a token id in [0, 23)"},
      {{{"bos_token_id", {1, 2}}}, "\"bos_token_id\" must be one token id, got a list"},
      {{{"bos_token_id", nullptr}}, "\"bos_token_id\" is missing, and its default 50256 is outside the vocabulary [0, 23)"},
      {{{"scale_attn_weights", false}}, "\"scale_attn_weights\": false is not supported"},
      {{{"scale_attn_by_inverse_layer_idx", true}}, "\"scale_attn_by_inverse_layer_idx\": true is not supported"},
      {{{"reorder_and_upcast_attn", true}}, "\"reorder_and_upcast_attn\": true is not supported"},
      {{{"add_cross_attention", true}}, "\"add_cross_attention\": true is not supported"},
      {{{"tie_word_embeddings", 1}}, "\"tie_word_embeddings\""},
      {{{"architectures", {"GPT2ForSequenceClassification"}}},
       "\"architectures\" \"GPT2ForSequenceClassification\" is not supported for model_type \"gpt2\""},
  };
  for (const auto& [patch, needle] : cases) {
    SCOPED_TRACE(patch.dump());
    json c = tiny_gpt2();
    c.update(patch);
    const std::string dir = temp_dir("gpt2-bad");
    write_file(dir + "/config.json", c.dump());
    expect_error([&] { load_config(dir + "/config.json"); }, needle);
    expect_error([&] { load_config(dir + "/config.json"); }, dir + "/config.json: ");
  }
}

TEST_F(DeviceTest, Gpt2Tensors) {
  const json c = tiny_gpt2();
  // GPT2Model's names (no prefix), its mask buffers ignored: loads without warnings, generation refused.
  TensorMap bare = tiny_gpt2_weights(c, "");
  bare["h.0.attn.bias"] = {"F32", {1, 1, 16, 16}, std::vector<float>(256, 1.0f)};
  json bc = c;
  bc["architectures"] = {"GPT2Model"};
  auto m = Model::load(ctx(), write_gpt2("bare", bc, bare));
  EXPECT_TRUE(m->warnings().empty()) << m->warnings().front();
  Session s(m);
  EXPECT_EQ(s.forward({{1, 2, 3}}).dim, 12u);
  expect_error([&] { s.generate({{1, 2}}); }, "GPT2Model (hidden states only) cannot generate");
  // No padding token: padding (filled with id 0) is masked by position, so a right-padded
  // sequence's rows equal its rows alone.
  const ForwardOutput alone = s.forward({{1, 0, 5}}), padded = s.forward({{1, 0, 5}, {0, 0, 0, 0, 7}});
  EXPECT_LE(forward_error(padded, {alone.data, std::vector<float>(padded.data.begin() + 5 * 12,
                                                                   padded.data.end())}), 1e-6);

  const TensorMap full = tiny_gpt2_weights(c);
  TensorMap t = full;
  t.erase("transformer.h.1.mlp.c_fc.weight");
  expect_error([&] { Model::load(ctx(), write_gpt2("missing", c, t)); },
               "missing tensor \"transformer.h.1.mlp.c_fc.weight\" [12, 48] = [n_embd, n_inner]");
  t = full;
  t["transformer.h.0.attn.c_attn.weight"].shape = {36, 12};  // nn.Linear's layout, not Conv1D's
  expect_error([&] { Model::load(ctx(), write_gpt2("linear", c, t)); }, "transformer.h.0.attn.c_attn.weight");
  json untied = c;
  untied["tie_word_embeddings"] = false;
  expect_error([&] { Model::load(ctx(), write_gpt2("untied", untied, full)); }, "missing tensor \"lm_head.weight\"");
  expect_error([&] { Session(Model::load(ctx(), write_gpt2("long", c, full))).generate({Ids(10, 1)}, {1, 8}); },
               "positions, more than the model's 16 (config.json \"n_positions\")");
  expect_error([&] { Session(Model::load(ctx(), write_gpt2("long", c, full))).forward({Ids(17, 1)}); },
               "source sequence 1 has 17 tokens, more than the model's 16 positions (config.json \"n_positions\")");
}

// "eos_token_id": [a, b] in config.json: generation ends at whichever comes first.
TEST_F(DeviceTest, Gpt2EosList) {
  json c = tiny_gpt2();
  const TensorMap w = tiny_gpt2_weights(c);
  GenerateOptions o;
  o.max_new_tokens = 12;
  o.stop_at_eos = false;
  const Ids free_run = Session(Model::load(ctx(), write_gpt2("eos-free", c, w))).generate({{1, 2, 3}}, o)[0];
  ASSERT_EQ(free_run.size(), 12u);
  // End at the run's 5th token, listed second: the output stops before it.
  c["eos_token_id"] = {22, free_run[4]};
  auto m = Model::load(ctx(), write_gpt2("eos-list", c, w));
  EXPECT_EQ(m->config().end_ids, (std::vector<int32_t>{22, free_run[4]}));
  o.stop_at_eos = true;
  const Ids stopped = Session(m).generate({{1, 2, 3}}, o)[0];
  const auto first_end = std::find_if(free_run.begin(), free_run.end(), [&](int32_t t) { return t == 22 || t == free_run[4]; });
  EXPECT_EQ(stopped, Ids(free_run.begin(), first_end));
}

}  // namespace
}  // namespace vkf::test
