// The bart family (BART, Marian, mBART) against Hugging Face's own outputs: the
// tiny random directories of `make hf-test-models` (tools/hf/tiny_encdec.py):
// logits of a right-padded batch of three sources and decoder inputs of
// unequal lengths against each pair run alone in transformers, and generate()
// (greedy, and beam search with num_beams, length_penalty, no_repeat_ngram_size
// and each early_stopping) against HF generate() on each source alone, token
// for token, with the directory's generation_config.json (decoder start,
// forced BOS/EOS, bad words) read by read_generation_config().
//
// Bounds (max |got − want| / max(1, max |want|)): 1e-4 with fp32 weights, as the
// other HF families; an F32 file stored as fp16: 1e-2 (hf_bound). Generation is
// compared in fp32 only: the goldens' smallest greedy top-1 − top-2 margin is
// 0.0019 (marian_mt_separate), above 1e-4 × the largest logit.
#include "model_util.hpp"
#include "model_writer.hpp"
#include "model/safetensors.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::test {
namespace {

class BartTest : public DeviceTest, public ::testing::WithParamInterface<std::string> {};

/// generate()'s options for one golden case: the directory's generation config, then HF's kwargs.
GenerateOptions options_of(const std::string& dir, const json& kw) {
  GenerateOptions o = read_generation_config(dir);
  o.max_new_tokens = kw.value("max_new_tokens", 20u);
  o.beam = kw.value("num_beams", 1u);
  o.length_penalty = kw.value("length_penalty", 1.0);
  o.no_repeat_ngram_size = kw.value("no_repeat_ngram_size", 0u);
  if (kw.contains("early_stopping"))
    o.early_stopping = kw["early_stopping"].is_string()  ? EarlyStopping::Never
                       : kw["early_stopping"].get<bool>() ? EarlyStopping::Enough
                                                          : EarlyStopping::Heuristic;
  return o;
}

TEST_P(BartTest, MatchesTransformers) {
  const std::string name = GetParam();
  const std::string dir = hf_model_dir(name);
  const json g = hf_golden(dir);
  const auto src = g["src"].get<std::vector<Ids>>(), tgt = g["tgt"].get<std::vector<Ids>>();
  const bool lm = g.contains("generate");
  for (Precision p : {Precision::F32, Precision::F16}) {
    if (p == Precision::F16 && !ctx().caps().storage_16bit) continue;
    SCOPED_TRACE(name + (p == Precision::F16 ? " fp16" : " fp32"));
    auto model = Model::load(ctx(), dir, p);
    EXPECT_TRUE(model->warnings().empty()) << model->warnings().front();
    Session s(model);
    const ForwardOutput f = s.forward(src, tgt);
    EXPECT_EQ(s.stats().submissions, 1u);
    EXPECT_EQ(f.dim, lm ? model->config().tgt_vocab_size : model->config().d_model);
    const double err = forward_error(f, golden_rows(g["outputs"][lm ? "logits" : "last_hidden_state"]));
    EXPECT_LE(err, hf_bound(name, p));
    std::printf("%s %s: max error %.3g\n", name.c_str(), p == Precision::F16 ? "fp16" : "fp32", err);
    if (!lm) {
      expect_error([&] { s.generate(src); }, "(hidden states only) cannot generate");
      continue;
    }
    if (p != Precision::F32) continue;
    // Every case on the padded batch; greedy and the first beam case also on each
    // source alone and without the KV cache (recomputation: the slow part of the test).
    for (size_t k = 0; k < g["generate"].size(); ++k) {
      const json& c = g["generate"][k];
      SCOPED_TRACE(c["options"].dump());
      GenerateOptions o = options_of(dir, c["options"]);
      const auto want = c["out"].get<std::vector<Ids>>();
      EXPECT_EQ(s.generate(src, o), want);
      if (k >= 2) continue;
      for (size_t i = 0; i < src.size(); ++i)
        EXPECT_EQ(s.generate({src[i]}, o), std::vector<Ids>{want[i]}) << "source " << i + 1;
      o.use_cache = false;
      EXPECT_EQ(s.generate(src, o), want);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Hf, BartTest, ::testing::Values("bart_lm", "bart_lm_untied", "bart_model", "marian_mt",
                                                           "marian_mt_separate", "mbart_lm"));

// ---- the generation config HF wrote, and its fallback to config.json.

TEST(BartGenerationConfig, ReadsHfKeys) {
  const GenerateOptions m = read_generation_config(hf_model_dir("marian_mt"));
  EXPECT_EQ(m.decoder_start_token_id, 96);
  EXPECT_EQ(m.forced_eos_token_ids, std::vector<int32_t>{0});
  EXPECT_EQ(m.bad_words_ids, std::vector<Ids>{{96}});
  EXPECT_EQ(m.early_stopping, EarlyStopping::Heuristic);  // HF's default
  EXPECT_EQ(read_generation_config(hf_model_dir("bart_lm_untied")).forced_bos_token_id, 0);
  // Without generation_config.json, config.json's keys (transformers wrote it).
  const std::string dir = temp_dir("bart-gencfg");
  write_file(dir + "/config.json", json{{"model_type", "marian"}, {"transformers_version", "4.44.2"},
                                        {"forced_eos_token_id", 0}, {"bad_words_ids", {{5}}},
                                        {"early_stopping", "never"}, {"num_beams", 4}}.dump());
  const GenerateOptions f = read_generation_config(dir);
  EXPECT_EQ(f.forced_eos_token_ids, std::vector<int32_t>{0});
  EXPECT_EQ(f.bad_words_ids, std::vector<Ids>{{5}});
  EXPECT_EQ(f.early_stopping, EarlyStopping::Never);
  EXPECT_EQ(f.beam, 4u);
  write_file(dir + "/generation_config.json", json{{"early_stopping", "sometimes"}}.dump());
  expect_error([&] { read_generation_config(dir); },
               dir + "/generation_config.json: \"early_stopping\" must be true, false or \"never\"");
  write_file(dir + "/generation_config.json", json{{"bad_words_ids", {5}}}.dump());
  expect_error([&] { read_generation_config(dir); }, "\"bad_words_ids\" must be a list of non-empty lists");
}

// ---- config.json and the tensors: each error names the file and the key or tensor.

/// An HF-made directory's files, with `patch` merged into config.json and `edit` applied to the tensors.
std::string variant(const std::string& name, const std::string& tag, const json& patch,
                    const std::function<void(TensorMap&)>& edit = {}) {
  const std::string from = hf_model_dir(name);
  std::ifstream in(from + "/config.json");
  json c = json::parse(in);
  if (!patch.is_null()) c.update(patch);
  const SafeTensorsFile f(from + "/model.safetensors");
  TensorMap t;
  for (const auto& [n, st] : f.tensors()) t[n] = {"F32", st.shape, f.to_f32(n)};
  if (edit) edit(t);
  return write_model("bart-" + tag, c, t);
}

TEST(BartConfig, HfKeysAndDefaults) {
  const std::string dir = temp_dir("bart-defaults");
  write_file(dir + "/config.json", json{{"model_type", "bart"}}.dump());
  const ModelConfig b = load_config(dir + "/config.json");  // BartConfig's defaults: bart-large
  EXPECT_EQ(b.d_model, 1024u);
  EXPECT_EQ(b.encoder_layers, 12u);
  EXPECT_EQ(b.decoder_layers, 12u);
  EXPECT_EQ(b.n_heads, 16u);
  EXPECT_EQ(b.d_ff, 4096u);
  EXPECT_EQ(b.src_vocab_size, 50265u);
  EXPECT_EQ(b.pad_id, -1);  // padding is masked by position, as HF's attention mask
  EXPECT_EQ(b.eos_id, 2);
  EXPECT_EQ(b.bos_id, 2);  // decoder_start_token_id
  EXPECT_EQ(b.activation, Activation::GeluErf);
  EXPECT_EQ(b.positional_encoding, PositionalEncoding::Learned);
  EXPECT_FALSE(b.norm_first || b.scale_embeddings);
  write_file(dir + "/config.json", json{{"model_type", "marian"}}.dump());
  const ModelConfig m = load_config(dir + "/config.json");
  EXPECT_EQ(m.src_vocab_size, 58101u);
  EXPECT_EQ(m.pad_id, -1);
  EXPECT_EQ(m.bos_id, 58100);
  EXPECT_EQ(m.eos_id, 0);
  EXPECT_EQ(m.positional_encoding, PositionalEncoding::SinusoidalHalves);
  write_file(dir + "/config.json", json{{"model_type", "mbart"}}.dump());
  EXPECT_TRUE(load_config(dir + "/config.json").norm_first);
}

TEST(BartConfig, BadKeysAreNamed) {
  const std::pair<json, std::string> cases[] = {
      {{{"d_model", 37}}, "\"d_model\" 37 is not divisible"},
      {{{"decoder_attention_heads", 4}}, "\"decoder_attention_heads\" 4 differs from \"encoder_attention_heads\" 3"},
      {{{"decoder_ffn_dim", 12}}, "\"decoder_ffn_dim\" 12 differs from \"encoder_ffn_dim\" 37"},
      {{{"activation_function", "tanh"}}, "\"activation_function\" \"tanh\" is not supported"},
      {{{"eos_token_id", 99}}, "\"eos_token_id\" must be a token id in [0, 99)"},
      {{{"decoder_start_token_id", -1}}, "\"decoder_start_token_id\" -1 is outside the vocabulary"},
      {{{"is_encoder_decoder", false}}, "\"is_encoder_decoder\": false is not supported"},
      {{{"architectures", {"BartForSequenceClassification"}}},
       "\"architectures\" \"BartForSequenceClassification\" is not supported for model_type \"bart\""},
  };
  for (const auto& [patch, needle] : cases) {
    SCOPED_TRACE(patch.dump());
    const std::string dir = variant("bart_lm", "badcfg", patch);
    expect_error([&] { load_config(dir + "/config.json"); }, dir + "/config.json: " );
    expect_error([&] { load_config(dir + "/config.json"); }, needle);
  }
}

TEST_F(DeviceTest, BartTensors) {
  expect_error([&] {
    Model::load(ctx(), variant("bart_lm", "missing", {}, [](TensorMap& t) {
      t.erase("model.decoder.layers.1.encoder_attn.v_proj.weight");
    }));
  }, "missing tensor \"model.decoder.layers.1.encoder_attn.v_proj.weight\" [36, 36] = [d_model, d_model]");
  expect_error([&] {
    Model::load(ctx(), variant("bart_lm", "positions", {}, [](TensorMap& t) {
      t["model.encoder.embed_positions.weight"].shape = {40, 36};  // without BART's 2 extra rows
      t["model.encoder.embed_positions.weight"].data.resize(40 * 36);
    }));
  }, "\"model.encoder.embed_positions.weight\" has shape [40, 36], expected [42, 36] = "
     "[max_position_embeddings + 2, d_model]");
  expect_error([&] { Model::load(ctx(), variant("bart_lm", "vocab", {{"vocab_size", 98}})); },
               "model.shared.weight");
  expect_error([&] { Model::load(ctx(), variant("marian_mt_separate", "untied", {}, [](TensorMap& t) {
                   t.erase("lm_head.weight");
                 })); },
               "missing tensor \"lm_head.weight\"");
  // final_logits_bias is optional (HF loads zeros without it); the rest loads without warnings.
  auto m = Model::load(ctx(), variant("marian_mt", "nobias", {}, [](TensorMap& t) { t.erase("final_logits_bias"); }));
  EXPECT_TRUE(m->warnings().empty());
  Session s(m);
  GenerateOptions o;
  o.forced_bos_token_id = 97;
  expect_error([&] { s.generate({{5, 0}}, o); },
               "forced_bos_token_id 97 is outside the model's output vocabulary [0, 97)");
  expect_error([&] { s.generate({Ids(41, 5)}); }, "41 tokens, more than the model's 40 positions (config.json \"max_position_embeddings\")");
}

}  // namespace
}  // namespace vkf::test

namespace vkf::test {
namespace {

// ---- the Marian tokenizer (source.spm / target.spm + vocab.json, through
// Debian's libsentencepiece) against transformers' MarianTokenizer on the
// tiny .spm files spm_train made (tools/hf/tiny_encdec.py): 320 texts (accents,
// CJK, emoji, combining marks, odd spaces, language codes), ids equal; 160 id
// lists decoded, texts equal.

TEST(MarianTokenizer, EqualsTransformers) {
  const std::string dir = hf_model_dir("marian_tok");
  std::ifstream in(dir + "/tok_golden.json");
  const json g = json::parse(in);
  auto tok = Tokenizer::load(dir);
  EXPECT_EQ(tok->vocab_size(), 376u);
  const auto texts = g["texts"].get<std::vector<std::string>>();
  ASSERT_GE(texts.size(), 300u);
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(tok->encode(texts[i]), g["ids"][i].get<Ids>()) << texts[i];
  for (const json& c : g["decode"]) EXPECT_EQ(tok->decode(c["ids"].get<Ids>()), c["text"].get<std::string>()) << c["ids"];
}

TEST(MarianTokenizer, BadFilesAreNamed) {
  const std::string from = hf_model_dir("marian_tok");
  for (const char* missing : {"source.spm", "target.spm", "vocab.json"}) {
    const std::string dir = temp_dir(std::string("marian-tok-") + missing);
    for (const char* f : {"source.spm", "target.spm", "vocab.json", "tokenizer_config.json"})
      if (std::string(f) != missing) std::filesystem::copy_file(from + "/" + f, dir + "/" + f);
    expect_error([&] { Tokenizer::load(dir); }, dir + "/" + missing + ": cannot open");
  }
  const std::string dir = temp_dir("marian-tok-bad-spm");
  for (const char* f : {"target.spm", "vocab.json", "tokenizer_config.json"})
    std::filesystem::copy_file(from + "/" + f, dir + "/" + f);
  write_file(dir + "/source.spm", "not a model");
  expect_error([&] { Tokenizer::load(dir); }, dir + "/source.spm: not a SentencePiece model");
  std::filesystem::copy_file(from + "/source.spm", dir + "/source.spm", std::filesystem::copy_options::overwrite_existing);
  write_file(dir + "/vocab.json", json{{"</s>", 0}, {"<pad>", 1}}.dump());
  expect_error([&] { Tokenizer::load(dir); }, dir + "/vocab.json: has no unk_token \"<unk>\"");
}

}  // namespace
}  // namespace vkf::test
