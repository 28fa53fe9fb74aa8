// The bert family's config.json (HF's keys and defaults, the head from
// "architectures") and sentence-transformers' modules; every bad file is one
// error naming the file and the key or module. Host only: no device needed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>

#include "families/bert/config.hpp"
#include "model_writer.hpp"
#include "vkformer/model.hpp"

namespace vkf::test {
namespace {

json tiny_bert(const std::string& type = "bert") {
  json j = {{"model_type", type}, {"vocab_size", 99}, {"num_attention_heads", 3}, {"num_hidden_layers", 2},
            {"intermediate_size", 37}, {"max_position_embeddings", 40}};
  j[type == "distilbert" ? "dim" : "hidden_size"] = 36;
  if (type == "distilbert") j = {{"model_type", type}, {"vocab_size", 99}, {"dim", 36}, {"n_heads", 3}, {"n_layers", 2}, {"hidden_dim", 37}, {"max_position_embeddings", 40}};
  return j;
}

/// Writes config.json (and `files`, path -> text) into a fresh directory; returns the config's path.
std::string write_dir(const std::string& name, const json& c, const std::map<std::string, std::string>& files = {}) {
  const std::string dir = temp_dir("bert-config-" + name);
  write_file(dir + "/config.json", c.dump());
  for (const auto& [p, text] : files) {
    std::filesystem::create_directories(std::filesystem::path(dir + "/" + p).parent_path());
    write_file(dir + "/" + p, text);
  }
  return dir + "/config.json";
}

void expect_bad(const std::string& name, const json& c, const std::string& needle,
                const std::map<std::string, std::string>& files = {}) {
  SCOPED_TRACE(name);
  const std::string path = write_dir(name, c, files);
  expect_error([&] { load_config(path); }, needle);
}

TEST(BertConfig, HfKeysAndDefaults) {
  const ModelConfig c = load_config(write_dir("bert", tiny_bert()));
  const BertConfig& b = bert_config(c);
  EXPECT_EQ(c.d_model, 36u);
  EXPECT_EQ(c.d_ff, 37u);
  EXPECT_EQ(c.n_heads, 3u);
  EXPECT_EQ(c.encoder_layers, 2u);
  EXPECT_FALSE(c.norm_first);
  EXPECT_EQ(c.layer_norm_eps, 1e-12f);      // BertConfig's default
  EXPECT_EQ(c.activation, Activation::GeluErf);
  EXPECT_EQ(b.type_vocab_size, 2u);
  EXPECT_EQ(b.head, BertHead::None);
  EXPECT_EQ(b.architecture, "BertModel");
  EXPECT_EQ(b.max_tokens, 40u);

  json r = tiny_bert("roberta");
  r["architectures"] = {"RobertaForSequenceClassification"};
  r["id2label"] = {{"0", "neg"}, {"1", "neu"}, {"2", "pos"}};
  const ModelConfig rc = load_config(write_dir("roberta", r));
  EXPECT_EQ(rc.pad_id, 1);                           // RobertaConfig's default
  EXPECT_EQ(bert_config(rc).max_tokens, 40u - 2u);   // positions start at pad + 1
  EXPECT_EQ(bert_config(rc).labels, (std::vector<std::string>{"neg", "neu", "pos"}));
  EXPECT_STREQ(classify_function(bert_config(rc)), "softmax");

  json d = tiny_bert("distilbert");
  d["architectures"] = {"DistilBertForMaskedLM"};
  d["activation"] = "relu";
  const ModelConfig dc = load_config(write_dir("distil", d));
  EXPECT_EQ(bert_config(dc).head, BertHead::MaskedLM);
  EXPECT_EQ(bert_config(dc).type_vocab_size, 0u);
  EXPECT_EQ(dc.activation, Activation::ReLU);

  json m = tiny_bert();
  m["architectures"] = {"BertForSequenceClassification"};
  m["problem_type"] = "multi_label_classification";
  const ModelConfig mc = load_config(write_dir("multi", m));
  EXPECT_EQ(bert_config(mc).labels, (std::vector<std::string>{"LABEL_0", "LABEL_1"}));  // HF's default
  EXPECT_STREQ(classify_function(bert_config(mc)), "sigmoid");
  EXPECT_EQ(load_config(write_dir("xlmr", tiny_bert("xlm-roberta"))).model_type, "xlm-roberta");
}

TEST(BertConfig, SentenceTransformersModules) {
  const std::string modules =
      R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
          {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"},
          {"idx":2,"name":"2","path":"2_Normalize","type":"sentence_transformers.models.Normalize"}])";
  const std::string pooling = R"({"word_embedding_dimension": 36, "pooling_mode_cls_token": false,
      "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false, "pooling_mode_mean_sqrt_len_tokens": false})";
  const ModelConfig c = load_config(write_dir("st", tiny_bert(), {{"modules.json", modules},
                                                                 {"1_Pooling/config.json", pooling},
                                                                 {"sentence_bert_config.json", R"({"max_seq_length": 16, "do_lower_case": true})"}}));
  const BertConfig& b = bert_config(c);
  EXPECT_EQ(b.pooling, "mean");
  EXPECT_TRUE(b.normalize);
  EXPECT_EQ(b.max_seq_length, 16u);
  EXPECT_TRUE(b.do_lower_case);

  expect_bad("no-pooling-dir", tiny_bert(), "1_Pooling/config.json: cannot open", {{"modules.json", modules}});
  // Not a file, and nested past any recursion: one clear error each (io::read_file, brief_json).
  expect_bad("deep-modules", tiny_bert(), "modules.json: ",
             {{"modules.json", std::string(100000, '[') + std::string(100000, ']')}});
  const std::string fifo_dir = write_dir("pooling-fifo", tiny_bert(), {{"modules.json", modules}});
  const std::string pooling_path = fifo_dir.substr(0, fifo_dir.rfind('/')) + "/1_Pooling/config.json";
  std::filesystem::create_directories(pooling_path);
  const std::string why = ": cannot read the Pooling module of modules.json: ";
  expect_error([&] { load_config(fifo_dir); }, pooling_path + why + "is a directory");
  std::filesystem::remove(pooling_path);
  ASSERT_EQ(::mkfifo(pooling_path.c_str(), 0600), 0);
  expect_error([&] { load_config(fifo_dir); }, pooling_path + why + "is a FIFO");
  expect_bad("dense", tiny_bert(), "modules.json: module \"sentence_transformers.models.Dense\" is not supported",
             {{"modules.json", R"([{"path":"2_Dense","type":"sentence_transformers.models.Dense"}])"}});
  expect_bad("two-modes", tiny_bert(), "more than one pooling mode",
             {{"modules.json", modules},
              {"1_Pooling/config.json", R"({"pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": true})"}});
  expect_bad("weighted", tiny_bert(), "\"pooling_mode_weightedmean_tokens\" is not supported",
             {{"modules.json", modules}, {"1_Pooling/config.json", R"({"pooling_mode_weightedmean_tokens": true})"}});
  expect_bad("dim", tiny_bert(), "\"word_embedding_dimension\" 384 differs from the model's hidden size 36",
             {{"modules.json", modules}, {"1_Pooling/config.json", R"({"word_embedding_dimension": 384, "pooling_mode_mean_tokens": true})"}});
  expect_bad("modules-json", tiny_bert(), "modules.json: not valid JSON", {{"modules.json", "[{"}});
  expect_bad("max-seq", tiny_bert(), "\"max_seq_length\" must be a positive integer",
             {{"modules.json", modules}, {"1_Pooling/config.json", pooling}, {"sentence_bert_config.json", R"({"max_seq_length": -3})"}});
}

TEST(BertConfig, BadConfigsNameTheKey) {
  auto with = [](json j, const std::string& k, const json& v) {
    j[k] = v;
    return j;
  };
  expect_bad("arch", with(tiny_bert(), "architectures", {"BertForQuestionAnswering"}),
             "\"architectures\" \"BertForQuestionAnswering\" is not supported for model_type \"bert\" (BertModel, "
             "BertForSequenceClassification, BertForTokenClassification, BertForMaskedLM)");
  expect_bad("act", with(tiny_bert(), "hidden_act", "mish"), "\"hidden_act\" \"mish\" is not supported");
  expect_bad("heads", with(tiny_bert(), "num_attention_heads", 5), "\"hidden_size\" 36 is not divisible");
  expect_bad("pad", with(tiny_bert(), "pad_token_id", 99), "\"pad_token_id\" 99 is outside the vocabulary [0, 99)");
  expect_bad("relative", with(tiny_bert(), "position_embedding_type", "relative_key"),
             "\"position_embedding_type\" \"relative_key\" is not supported (absolute)");
  expect_bad("decoder", with(tiny_bert(), "is_decoder", true), "\"is_decoder\": true is not supported");
  expect_bad("labels", with(with(tiny_bert(), "architectures", {"BertForTokenClassification"}), "id2label", {{"0", "a"}, {"5", "b"}}),
             "\"id2label\" must map the ids 0..1 to strings");
  // Found by review while fuzzing (tests/fuzz/corpus/config/crash-num-labels-4e9): 4e9 label names.
  expect_bad("num-labels", with(with(tiny_bert(), "architectures", {"BertForSequenceClassification"}), "num_labels", 4000000000u),
             "\"num_labels\" 4000000000 is more than 1000000");
  expect_bad("problem", with(with(tiny_bert(), "architectures", {"BertForSequenceClassification"}), "problem_type", "ranking"),
             "\"problem_type\" \"ranking\" is not one of");
  expect_bad("roberta-positions", with(tiny_bert("roberta"), "max_position_embeddings", 2),
             "leaves no position after RoBERTa's offset");
  expect_bad("eps", with(tiny_bert(), "layer_norm_eps", 1e-60), "\"layer_norm_eps\" 1e-60 is outside the fp32 range");
  expect_bad("unknown-type", with(tiny_bert(), "model_type", "funnel"),
             "unknown \"model_type\" \"funnel\" (known: \"transformer\", \"use_lite\", \"bert\", \"roberta\", \"xlm-roberta\", \"distilbert\", \"gpt2\", \"t5\", \"bart\", \"marian\", \"mbart\", \"llama\", \"mistral\", \"qwen2\")");
}

}  // namespace
}  // namespace vkf::test
