// A model's weights in several files: Hugging Face's sharded checkpoint
// (model.safetensors.index.json + shards) loads exactly as the same tensors in
// one model.safetensors; a broken index or shard is one error naming the index,
// the shard and the tensor; a directory of PyTorch pickles says how to convert it.
#include <gtest/gtest.h>

#include "loaded_weights.hpp"
#include "model/config.hpp"
#include "model/loader.hpp"
#include "model/tensor_files.hpp"
#include "model/weights.hpp"
#include "model_util.hpp"
#include "model_writer.hpp"
#include "vkformer/session.hpp"

namespace vkf::test {
namespace {

class WeightFilesTest : public DeviceTest {};

const std::string kIndex = "/model.safetensors.index.json";

TEST_F(WeightFilesTest, ShardedEqualsSingleFile) {
  int n = 0;
  for (Kind kind : {Kind::EncDec, Kind::EncoderOnly})
    for (size_t shards : {1, 2, 3})
      for (Precision prec : {Precision::F32, Precision::F16}) {
        if (prec == Precision::F16 && !has_f16()) continue;
        const json cfg = tiny_config(kind, "learned");
        WeightOptions o;
        o.dtype = n % 2 ? "BF16" : "F32";
        o.seed = uint32_t(50 * n);
        TensorMap file = tiny_weights(cfg, o);
        file["src_embed.weight"].dtype = "F16";  // the shards' dtypes differ
        const std::string name = "sharded-" + std::to_string(n++);
        SCOPED_TRACE(name + ", " + std::to_string(shards) + " shards");
        const std::string dir = write_sharded_model(name, cfg, file, shards);
        ASSERT_FALSE(std::filesystem::exists(dir + "/model.safetensors"));
        auto sharded = Model::load(ctx(), dir, prec);
        EXPECT_TRUE(sharded->warnings().empty());
        expect_loaded(ctx(), *sharded, file, prec == Precision::F16 ? DType::F16 : DType::F32);

        // The same outputs as from one file, to the bit.
        auto single = Model::load(ctx(), write_model(name + "-single", cfg, file), prec);
        const std::vector<Ids> src = {{3, 4, 5, 6}, {7, 8}}, tgt = {{1, 9, 10}, {1, 4}};
        const auto a = Session(sharded).forward(src, kind == Kind::EncDec ? tgt : std::vector<Ids>{});
        const auto b = Session(single).forward(src, kind == Kind::EncDec ? tgt : std::vector<Ids>{});
        EXPECT_EQ(a.data, b.data);
      }
}

TEST_F(WeightFilesTest, SingleFileWinsOverIndex) {
  // As in transformers: model.safetensors is read when both are there.
  const json cfg = tiny_config(Kind::EncoderOnly);
  const TensorMap file = tiny_weights(cfg);
  const std::string dir = write_sharded_model("both", cfg, file, 2);
  write_file(dir + kIndex, "not json");  // would fail if read
  write_file(dir + "/model.safetensors", safetensors_bytes(file));
  EXPECT_EQ(weights_path(dir), dir + "/model.safetensors");
  expect_loaded(ctx(), *Model::load(ctx(), dir), file, DType::F32);
}

TEST_F(WeightFilesTest, MissingTensorNamesTheIndex) {
  const json cfg = tiny_config(Kind::EncoderOnly);
  TensorMap file = tiny_weights(cfg);
  file.erase("generator.bias");
  const std::string dir = write_sharded_model("sharded-missing", cfg, file, 2);
  expect_error([&] { Model::load(ctx(), dir); },
               dir + kIndex + ": missing tensor \"generator.bias\" [11] = [src_vocab_size] (expected because "
                              "\"generator.weight\" is present)");
}

TEST_F(WeightFilesTest, ShapeErrorsAndWarningsNameTheShard) {
  const json cfg = tiny_config(Kind::EncoderOnly);
  TensorMap file = tiny_weights(cfg);
  file["transformer.encoder.layers.0.linear1.weight"].shape = {8, 16};
  std::map<std::string, std::string> where;
  split_shards(file, 3, &where);
  const std::string dir = write_sharded_model("sharded-shape", cfg, file, 3);
  const std::string shard = dir + "/" + where.at("transformer.encoder.layers.0.linear1.weight");
  expect_error([&] { Model::load(ctx(), dir); },
               shard + ": tensor \"transformer.encoder.layers.0.linear1.weight\" has shape [8, 16], expected "
                       "[16, 8] = [d_ff, d_model]");

  file = tiny_weights(cfg);
  file["extra.weight"] = {"F32", {2}, {1.f, 2.f}};
  file["generator.bias"].data[0] = NAN;
  where.clear();
  split_shards(file, 3, &where);
  const std::string dir2 = write_sharded_model("sharded-warn", cfg, file, 3);
  auto model = Model::load(ctx(), dir2);
  EXPECT_EQ(model->warnings(),
            (std::vector<std::string>{
                dir2 + "/" + where.at("generator.bias") + ": tensor \"generator.bias\" holds 1 NaN and 0 Inf values",
                dir2 + "/" + where.at("extra.weight") + ": unexpected tensor \"extra.weight\" [2] F32 is ignored"}));
}

TEST_F(WeightFilesTest, IndexErrors) {
  const json cfg = tiny_config(Kind::EncoderOnly);
  const TensorMap file = tiny_weights(cfg);
  const json good = shard_index(file, 2);
  auto load_with = [&](const std::string& name, const std::string& index_text) {
    const std::string dir = write_sharded_model(name, cfg, file, 2);
    write_file(dir + kIndex, index_text);
    return dir;
  };
  auto expect_index_error = [&](const std::string& name, const std::string& index_text, const std::string& what) {
    SCOPED_TRACE(name);
    const std::string dir = load_with(name, index_text);
    expect_error([&] { Model::load(ctx(), dir); }, dir + kIndex + ": " + what);
  };
  expect_index_error("not-json", "{\"weight_map\": {", "not valid JSON: parse error");
  expect_index_error("array", "[]", "must hold a JSON object, got array");
  expect_index_error("no-map", R"({"metadata": {}})", "missing key \"weight_map\"");
  expect_index_error("map-array", R"({"weight_map": []})", "\"weight_map\" must be an object");
  expect_index_error("map-empty", R"({"weight_map": {}})", "\"weight_map\" names no tensor");
  expect_index_error("entry-number", R"({"weight_map": {"src_embed.weight": 3}})",
                     "\"weight_map\" entry \"src_embed.weight\" must be a shard file name, got 3");
  for (const char* outside : {"../model-00001-of-00002.safetensors", "/etc/passwd", ""})
    expect_index_error(std::string("outside-") + std::to_string(std::strlen(outside)),
                       json({{"weight_map", {{"src_embed.weight", outside}}}}).dump(),
                       "\"weight_map\" entry \"src_embed.weight\": shard \"" + std::string(outside) +
                           "\" is not a file name in the index's directory");

  // A shard file missing: the index, the shard and a tensor it should hold.
  json missing = good;
  missing["weight_map"]["src_embed.weight"] = "model-00003-of-00003.safetensors";
  expect_index_error("missing-shard", missing.dump(),
                     "shard \"model-00003-of-00003.safetensors\" is missing: ");
  const std::string dir = load_with("missing-shard-2", missing.dump());
  expect_error([&] { Model::load(ctx(), dir); },
               "is missing: " + dir + "/model-00003-of-00003.safetensors should hold \"src_embed.weight\"");
  std::filesystem::remove(dir + "/model-00002-of-00002.safetensors");
  expect_error([&] { Model::load(ctx(), dir); },
               "shard \"model-00002-of-00002.safetensors\" is missing: " + dir +
                   "/model-00002-of-00002.safetensors should hold \"");

  // The index maps a tensor to a shard that does not hold it.
  json wrong = good;
  const std::string name = "transformer.encoder.layers.1.norm2.bias";
  const std::string holder = wrong["weight_map"][name];
  const std::string other = holder == shard_name(0, 2) ? shard_name(1, 2) : shard_name(0, 2);
  wrong["weight_map"][name] = other;
  const std::string dir2 = load_with("wrong-shard", wrong.dump());
  expect_error([&] { Model::load(ctx(), dir2); },
               dir2 + "/" + other + ": no tensor \"" + name + "\", though " + dir2 + kIndex +
                   " maps it to this shard");

  // A broken shard is reported as a safetensors file.
  const std::string dir3 = load_with("truncated-shard", good.dump());
  write_file(dir3 + "/" + shard_name(1, 2), "12345");
  expect_error([&] { Model::load(ctx(), dir3); },
               dir3 + "/" + shard_name(1, 2) + ": is 5 bytes, too short for the 8-byte header length");
}

TEST_F(WeightFilesTest, TensorInTwoShards) {
  const json cfg = tiny_config(Kind::EncoderOnly);
  const TensorMap file = tiny_weights(cfg);
  const std::string dir = write_sharded_model("twice", cfg, file, 2);
  // Shard 2 also holds shard 1's first tensor.
  auto shards = split_shards(file, 2, nullptr);
  const std::string first = shards[0].begin()->first;
  shards[1][first] = shards[0].begin()->second;
  write_file(dir + "/" + shard_name(1, 2), safetensors_bytes(shards[1]));
  expect_error([&] { Model::load(ctx(), dir); },
               dir + kIndex + ": tensor \"" + first + "\" is in two shards, " + dir + "/" + shard_name(0, 2) +
                   " and " + dir + "/" + shard_name(1, 2));
}

TEST_F(WeightFilesTest, PicklesAreRefused) {
  const json cfg = tiny_config(Kind::EncoderOnly);
  for (const char* pickle : {"pytorch_model.bin", "pytorch_model.bin.index.json"}) {
    const std::string dir = temp_dir(std::string("pickle-") + pickle);
    write_file(dir + "/" + pickle, "\x80\x02}q\x00.");
    // Said before the config is read: a broken config would not help.
    write_file(dir + "/config.json", "{}");
    const std::string want = dir + ": has " + pickle +
                             " but no model.safetensors; vkformer does not read pickles: convert it with "
                             "tools/hf/convert_to_safetensors.py " + dir;
    try {
      Model::load(ctx(), dir);
      ADD_FAILURE() << "loaded a directory of pickles";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), want);
    }
    // With a model.safetensors beside it, the pickle is ignored.
    write_file(dir + "/config.json", cfg.dump());
    write_file(dir + "/model.safetensors", safetensors_bytes(tiny_weights(cfg)));
    EXPECT_TRUE(Model::load(ctx(), dir)->warnings().empty());
  }
}

TEST_F(WeightFilesTest, IntegerTensors) {
  // Hugging Face checkpoints carry embeddings.position_ids (I64): a valid
  // file, whose integer tensors are unexpected (a warning) or ignored on purpose.
  const json cfg = tiny_config(Kind::EncoderOnly);
  TensorMap file = tiny_weights(cfg);
  file["embeddings.position_ids"] = {"I64", {1, 4}, {0, 1, 2, 3}};
  const std::string dir = write_model("position-ids", cfg, file);
  auto model = Model::load(ctx(), dir);
  EXPECT_EQ(model->warnings(), std::vector<std::string>{dir + "/model.safetensors: unexpected tensor "
                                                              "\"embeddings.position_ids\" [1, 4] I64 is ignored"});
  const SafeTensorsFile f(dir + "/model.safetensors");
  std::vector<std::string> warnings;
  Loader L(nullptr, f, DType::F32, false, &warnings);
  L.ignore("embeddings.position_ids");
  L.warn_unused();
  // Every tensor but the ignored one (none was fetched): 8 named, then the count of the rest.
  ASSERT_EQ(warnings.size(), 9u);
  EXPECT_EQ(warnings.back(), dir + "/model.safetensors: ... and " + std::to_string(file.size() - 1 - 8) +
                                 " more unexpected tensors are ignored");
  for (const auto& w : warnings) EXPECT_EQ(w.find("position_ids"), std::string::npos) << w;

  // A weight stored as integers is an error, in the dry run already.
  file["generator.weight"].dtype = "I32";
  const std::string dir2 = write_model("int-weight", cfg, file);
  expect_error([&] { Model::load(ctx(), dir2); },
               dir2 + "/model.safetensors: tensor \"generator.weight\": dtype I32 is not supported (only F32, F16 "
                      "and BF16)");
  expect_error([&] { check_weights(load_config(dir2 + "/config.json"), SafeTensorsFile(dir2 + "/model.safetensors")); },
               "dtype I32 is not supported");
}

TEST(TensorFiles, ViewOfOneOrSeveralFiles) {
  const json cfg = tiny_config(Kind::EncDec);
  const TensorMap file = tiny_weights(cfg);
  const std::string dir = write_sharded_model("view", cfg, file, 3);
  const WeightFiles files(dir + kIndex);
  const TensorFiles view = files.view();
  EXPECT_EQ(view.path(), dir + kIndex);
  EXPECT_EQ(view.files().size(), 3u);
  std::map<std::string, std::string> where;
  split_shards(file, 3, &where);
  for (const auto& [name, t] : file) {
    ASSERT_TRUE(view.has(name)) << name;
    EXPECT_EQ(view.get(name).shape, t.shape);
    EXPECT_EQ(view.to_f32(name), file_values(t));
    EXPECT_EQ(view.path_of(name), dir + "/" + where.at(name));
  }
  EXPECT_FALSE(view.has("nope"));
  EXPECT_EQ(view.path_of("nope"), dir + kIndex);
  expect_error([&] { view.get("nope"); }, dir + kIndex + ": no tensor \"nope\"");
  check_weights(load_config(dir + "/config.json"), view);  // the device-free check, over shards

  // One file: the view of a SafeTensorsFile, as the single-file overloads take it.
  const std::string one = write_model("view-one", cfg, file) + "/model.safetensors";
  const SafeTensorsFile f(one);
  const TensorFiles single = f;
  EXPECT_EQ(single.path(), one);
  EXPECT_EQ(single.path_of("nope"), one);
  check_weights(load_config(dir + "/config.json"), f);
}

TEST(TensorFiles, TransformersShardedCheckpoint) {
  // transformers' own save_pretrained(max_shard_size="20KB") of the BertModel in
  // bert_model (make hf-test-models): every tensor as in the single file, to the bit.
  const std::string sharded = hf_model_dir("bert_model_sharded"), single = hf_model_dir("bert_model");
  EXPECT_EQ(weights_path(sharded), sharded + kIndex);
  const WeightFiles files(weights_path(sharded));
  const TensorFiles view = files.view();
  EXPECT_GE(view.files().size(), 2u);
  const SafeTensorsFile one(weights_path(single));
  size_t n = 0;
  for (const SafeTensorsFile* f : view.files()) n += f->tensors().size();
  EXPECT_EQ(n, one.tensors().size());
  for (const auto& [name, t] : one.tensors()) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(view.has(name));
    EXPECT_EQ(view.get(name).dtype, t.dtype);
    EXPECT_EQ(view.get(name).shape, t.shape);
    EXPECT_EQ(view.to_f32(name), one.to_f32(name));
    EXPECT_NE(view.path_of(name), view.path());  // a shard
  }
  // transformers' pytorch_model.bin alone: refused, with the command that converts it.
  const std::string bin = hf_model_dir("bert_mlm_bin");
  expect_error([&] { weights_path(bin); }, bin + ": has pytorch_model.bin but no model.safetensors; vkformer "
                                                  "does not read pickles: convert it with "
                                                  "tools/hf/convert_to_safetensors.py " + bin);
}

}  // namespace
}  // namespace vkf::test
