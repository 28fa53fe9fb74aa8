// load_config(): the three model kinds parse, and every bad config.json is an
// error naming the file and the field. Host only: no device needed.
#include <gtest/gtest.h>

#include "model_writer.hpp"
#include "vkformer/model.hpp"

namespace vkf::test {
namespace {

std::string write_config(const std::string& name, const std::string& text) {
  const std::string path = temp_dir("config-" + name) + "/config.json";
  write_file(path, text);
  return path;
}

/// Writes `c` and expects load_config to fail naming the file and `needle`.
void expect_config_error(const std::string& name, const json& c, const std::string& needle) {
  SCOPED_TRACE(name + ": " + c.dump());
  const std::string path = write_config(name, c.dump());
  expect_error([&] { load_config(path); }, needle);
  expect_error([&] { load_config(path); }, path);
}

TEST(Config, EncoderDecoder) {
  json j = tiny_config(Kind::EncDec, "learned");
  j["activation"] = "gelu";
  j["norm_first"] = true;
  j["layer_norm_eps"] = 1e-6;
  j["scale_embeddings"] = true;
  j["pad_id"] = 3, j["bos_id"] = 12, j["eos_id"] = 11;  // bos/eos: target vocabulary (13)
  j["extra_key_from_exporter"] = "ignored";
  const ModelConfig c = load_config(write_config("encdec", j.dump()));
  EXPECT_EQ(c.model_type, "transformer");
  EXPECT_EQ(c.d_model, 8u);
  EXPECT_EQ(c.n_heads, 2u);
  EXPECT_EQ(c.d_ff, 16u);
  EXPECT_EQ(c.encoder_layers, 2u);
  EXPECT_EQ(c.decoder_layers, 1u);
  EXPECT_EQ(c.activation, Activation::GeluErf);
  EXPECT_TRUE(c.norm_first);
  EXPECT_FLOAT_EQ(c.layer_norm_eps, 1e-6f);
  EXPECT_EQ(c.src_vocab_size, 11u);
  EXPECT_EQ(c.tgt_vocab_size, 13u);
  EXPECT_EQ(c.max_positions, 16u);
  EXPECT_EQ(c.positional_encoding, PositionalEncoding::Learned);
  EXPECT_TRUE(c.scale_embeddings);
  EXPECT_FALSE(c.causal);
  EXPECT_EQ(c.pad_id, 3);
  EXPECT_EQ(c.bos_id, 12);
  EXPECT_EQ(c.eos_id, 11);
  EXPECT_TRUE(c.encoder_decoder());
  EXPECT_EQ(c.out_vocab(), 13u);
}

TEST(Config, EncoderOnlyAndDecoderOnly) {
  json j = tiny_config(Kind::EncoderOnly, "none");
  j["activation"] = "gelu_tanh";
  ModelConfig c = load_config(write_config("enc", j.dump()));
  EXPECT_FALSE(c.encoder_decoder());
  EXPECT_EQ(c.tgt_vocab_size, 0u);  // optional without a decoder
  EXPECT_EQ(c.out_vocab(), 11u);
  EXPECT_EQ(c.activation, Activation::GeluTanh);
  EXPECT_EQ(c.positional_encoding, PositionalEncoding::None);

  j = tiny_config(Kind::DecoderOnly);
  j["activation"] = "silu";
  j["tgt_vocab_size"] = 5;  // allowed, unused
  c = load_config(write_config("dec", j.dump()));
  EXPECT_TRUE(c.causal);
  EXPECT_EQ(c.activation, Activation::SiLU);
  EXPECT_EQ(c.positional_encoding, PositionalEncoding::Sinusoidal);
  EXPECT_EQ(c.out_vocab(), 11u);
  EXPECT_EQ(c.activation, Activation::SiLU);
}

TEST(Config, FileErrors) {
  const std::string dir = temp_dir("config-files");
  expect_error([&] { load_config(dir + "/missing.json"); }, dir + "/missing.json: cannot open");
  expect_error([&] { load_config(dir); }, "is a directory");
  const std::string bad = write_config("notjson", "{\n  \"d_model\": 8,\n  oops\n}");
  expect_error([&] { load_config(bad); }, bad + ": not valid JSON");
  expect_error([&] { load_config(bad); }, "line 3, column");
  const std::string empty = write_config("empty", "");
  expect_error([&] { load_config(empty); }, empty + ": not valid JSON");
  // Fuzzer finding: nlohmann::json throws out_of_range (not parse_error) for a
  // number beyond double, which escaped as a non-vkf exception.
  const std::string big = write_config("overflow", "{\"d_model\": 1e400}");
  expect_error([&] { load_config(big); }, big + ": not valid JSON: number overflow parsing '1e400'");
  // Deep nesting: the message used to dump() the value recursively and overflowed the stack;
  // now the parser refuses past 64 levels, before the tree exists (issue 29 #1).
  json deep = tiny_config(Kind::EncDec);
  deep.erase("d_ff");
  std::string text = deep.dump();
  text.insert(1, "\"d_ff\": " + std::string(200000, '[') + std::string(200000, ']') + ", ");
  const std::string nested = write_config("deep", text);
  expect_error([&] { load_config(nested); }, nested + ": not valid JSON: parse error: JSON nested deeper than 64 levels");
  text = deep.dump();
  text.insert(1, "\"d_ff\": " + std::string(63, '[') + std::string(63, ']') + ", ");  // 64 levels with the object
  const std::string nested64 = write_config("deep64", text);
  expect_error([&] { load_config(nested64); }, "\"d_ff\" must be a positive integer, got an array of 1 elements");
  // Fuzzer finding: the parser's "last read" excerpt spelled out every byte of
  // the token (8 characters per tab), so a message could be any length.
  const std::string tabs = write_config("tabs", "{\"d_model\": 8, " + std::string(5000, '\t') + "x}");
  try {
    load_config(tabs);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("<U+0009><U+0009>x'; expected"), std::string::npos) << e.what();
    EXPECT_LT(std::string(e.what()).size(), tabs.size() + 400) << e.what();
  }
  const std::string arr = write_config("array", "[1, 2]");
  expect_error([&] { load_config(arr); }, "must hold a JSON object, got array");
}

TEST(Config, MissingKeys) {
  const json base = tiny_config(Kind::EncDec);
  for (const auto& item : base.items()) {
    json j = base;
    j.erase(item.key());
    expect_config_error("missing-" + item.key(), j, "missing key \"" + item.key() + "\"");
  }
}

TEST(Config, WrongTypes) {
  const json base = tiny_config(Kind::EncDec);
  auto with = [&](const char* key, json v) {
    json j = base;
    j[key] = v;
    return j;
  };
  expect_config_error("d_model-str", with("d_model", "abc"),
                      "\"d_model\" must be a positive integer, got \"abc\"");
  expect_config_error("d_model-float", with("d_model", 8.5),
                      "\"d_model\" must be a positive integer, got 8.5");
  expect_config_error("d_model-neg", with("d_model", -8), "\"d_model\" must be a positive integer, got -8");
  expect_config_error("d_model-huge", with("d_model", 1ull << 33), "\"d_model\" must be a positive integer");
  expect_config_error("layers-neg", with("decoder_layers", -1),
                      "\"decoder_layers\" must be a non-negative integer");
  expect_config_error("norm_first", with("norm_first", "true"),
                      "\"norm_first\" must be true or false, got \"true\"");
  expect_config_error("causal", with("causal", 1), "\"causal\" must be true or false");
  expect_config_error("eps-str", with("layer_norm_eps", "1e-5"),
                      "\"layer_norm_eps\" must be a positive number");
  expect_config_error("eps-zero", with("layer_norm_eps", 0), "\"layer_norm_eps\" must be a positive number");
  // Fuzzer finding: 1e-57 is a positive double but 0 in fp32 (LayerNorm would divide by 0).
  expect_config_error("eps-underflow", with("layer_norm_eps", 1e-57),
                      "\"layer_norm_eps\" 1e-57 is outside the fp32 range");
  expect_config_error("eps-overflow", with("layer_norm_eps", 1e300), "\"layer_norm_eps\" 1e+300 is outside the fp32 range");
  expect_config_error("act-type", with("activation", 3), "\"activation\" must be a string, got 3");
  expect_config_error("pad-float", with("pad_id", 0.5), "\"pad_id\" must be an integer, got 0.5");
  expect_config_error("bos-huge", with("bos_id", 1ll << 40), "\"bos_id\" must be a 32-bit integer");
  expect_config_error("type-null", with("model_type", nullptr), "\"model_type\" must be a string, got null");
}

TEST(Config, BadValues) {
  const json base = tiny_config(Kind::EncDec);
  auto with = [&](const char* key, json v) {
    json j = base;
    j[key] = v;
    return j;
  };
  for (const char* key :
       {"d_model", "n_heads", "d_ff", "encoder_layers", "src_vocab_size", "tgt_vocab_size", "max_positions"})
    expect_config_error(std::string("zero-") + key, with(key, 0),
                        "\"" + std::string(key) + "\" must be a positive integer, got 0");
  expect_config_error("model_type", with("model_type", "funnel"), "unknown \"model_type\" \"funnel\" (known: ");
  // The message lists every known type, from the one list load_config checks.
  std::string listed;
  for (const auto& k : known_model_types()) listed += (listed.empty() ? "\"" : ", \"") + k + "\"";
  expect_config_error("model_type-list", with("model_type", "mpt"), "(known: " + listed + ")");
  for (const auto& k : known_model_types())
    EXPECT_NE(std::string("(known: " + listed + ")").find("\"" + k + "\""), std::string::npos);
  EXPECT_EQ(known_model_types().front(), "transformer");
  expect_config_error("activation", with("activation", "tanh"), "unknown \"activation\" \"tanh\"");
  expect_config_error("positional", with("positional_encoding", "rope"),
                      "unknown \"positional_encoding\" \"rope\"");
  expect_config_error("divisible", with("n_heads", 3), "\"d_model\" 8 is not divisible by \"n_heads\" 3");
  json wide = with("d_model", 512);
  wide["n_heads"] = 1;
  expect_config_error("head_dim", wide,
                      "d_model/n_heads = 512 exceeds 256, the limit of the flash-attention");
  wide["n_heads"] = 2;  // head_dim 256 is fine
  EXPECT_EQ(load_config(write_config("head_dim-ok", wide.dump())).d_model, 512u);
  expect_config_error("causal-encdec", with("causal", true),
                      "\"causal\": true with \"decoder_layers\" 1 is unsupported");
}

TEST(Config, IdsOutsideTheVocabulary) {
  // Enc–dec: source vocabulary 11, target 13. pad is used on both sides,
  // bos/eos on the target side.
  const json ed = tiny_config(Kind::EncDec);
  auto with = [](json j, const char* key, int v) {
    j[key] = v;
    return j;
  };
  expect_config_error("pad-src", with(ed, "pad_id", 11),
                      "\"pad_id\" 11 is outside the source vocabulary [0, 11)");
  expect_config_error("pad-neg", with(ed, "pad_id", -1), "\"pad_id\" -1 is outside the source vocabulary");
  json small_tgt = with(ed, "tgt_vocab_size", 5);
  expect_config_error("pad-tgt2", with(small_tgt, "pad_id", 5),
                      "\"pad_id\" 5 is outside the target vocabulary [0, 5)");
  expect_config_error("bos-tgt", with(ed, "bos_id", 13),
                      "\"bos_id\" 13 is outside the target vocabulary [0, 13)");
  expect_config_error("eos-tgt", with(ed, "eos_id", 20), "\"eos_id\" 20 is outside the target vocabulary");
  EXPECT_EQ(load_config(write_config("bos-ok", with(ed, "bos_id", 12).dump())).bos_id, 12);

  const json lm = tiny_config(Kind::DecoderOnly);
  expect_config_error("lm-bos", with(lm, "bos_id", 11),
                      "\"bos_id\" 11 is outside the source vocabulary [0, 11)");
  expect_config_error("lm-eos", with(lm, "eos_id", -2), "\"eos_id\" -2 is outside the source vocabulary");
  expect_config_error("lm-pad", with(lm, "pad_id", 100), "\"pad_id\" 100 is outside the source vocabulary");
}

}  // namespace
}  // namespace vkf::test
