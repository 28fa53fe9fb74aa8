// Model::load and load_weights(): every model kind loads and reads back what
// the file holds (or its fp16 rounding); missing or misshapen tensors are
// errors naming the file and tensor; extra tensors and NaN/Inf are warnings.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "loaded_weights.hpp"
#include "model/loader.hpp"
#include "model/safetensors.hpp"
#include "vkformer/reference.hpp"
#include "model_writer.hpp"
#include "vkformer/model.hpp"

namespace vkf::test {
namespace {

class ModelLoading : public DeviceTest {};

TEST_F(ModelLoading, EveryKindReadsBack) {
  const char* kinds[] = {"encdec", "encoder", "decoder"};
  const char* file_dtypes[] = {"F32", "F16", "BF16"};
  int n = 0;
  for (Kind kind : {Kind::EncDec, Kind::EncoderOnly, Kind::DecoderOnly})
    for (const char* pos : {"sinusoidal", "learned", "none"})
      for (bool extras : {true, false})
        for (Precision prec : {Precision::F32, Precision::F16}) {
          if (prec == Precision::F16 && !has_f16()) continue;
          WeightOptions o;
          o.final_norms = extras;
          o.generator = !extras;
          o.dtype = file_dtypes[n % 3];
          o.seed = uint32_t(100 * n);
          const json cfg = tiny_config(kind, pos);
          const TensorMap file = tiny_weights(cfg, o);
          const std::string name = std::string(kinds[int(kind)]) + "-" + pos + "-" + std::to_string(n++);
          SCOPED_TRACE(name + " file " + o.dtype +
                       (prec == Precision::F16 ? " precision f16" : " precision f32"));
          ::testing::internal::CaptureStderr();
          auto model = Model::load(ctx(), write_model(name, cfg, file), prec);
          EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
          EXPECT_TRUE(model->warnings().empty());  // a clean file: no warnings
          const ModelConfig& c = model->config();
          EXPECT_EQ(model->precision(), prec);
          EXPECT_EQ(&model->context(), &ctx());
          const TransformerWeights& w = transformer_weights(*model);
          EXPECT_EQ(w.encoder.size(), 2u);
          EXPECT_EQ(w.decoder.size(), kind == Kind::EncDec ? 1u : 0u);
          EXPECT_EQ(w.encoder_norm.has_value(), extras);
          EXPECT_EQ(w.decoder_norm.has_value(), extras && kind == Kind::EncDec);
          EXPECT_EQ(w.generator.has_value(), !extras);
          EXPECT_EQ(model->output_dim(), extras ? 8u : (kind == Kind::EncDec ? 13u : 11u));
          EXPECT_EQ(c.causal, kind == Kind::DecoderOnly);
          expect_loaded(ctx(), *model, file, prec == Precision::F16 ? DType::F16 : DType::F32);
        }
}

TEST_F(ModelLoading, CrossAttentionSplit) {
  const json cfg = tiny_config(Kind::EncDec);
  TensorMap file = tiny_weights(cfg);
  auto& w = file["transformer.decoder.layers.0.multihead_attn.in_proj_weight"];
  auto& b = file["transformer.decoder.layers.0.multihead_attn.in_proj_bias"];
  for (size_t i = 0; i < w.data.size(); ++i) w.data[i] = float(i);  // row r holds 8r .. 8r+7
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = float(1000 + i);
  auto model = Model::load(ctx(), write_model("cross", cfg, file));
  const auto& l = transformer_weights(*model).decoder[0];
  const auto q = ctx().read(l.cross_q.w), kv = ctx().read(l.cross_kv.w);
  ASSERT_EQ(q.size(), 64u);
  ASSERT_EQ(kv.size(), 128u);
  EXPECT_EQ(q.front(), 0.f);
  EXPECT_EQ(q.back(), 63.f);    // end of row 7 (the last query row)
  EXPECT_EQ(kv.front(), 64.f);  // row 8: the first key row
  EXPECT_EQ(kv.back(), 191.f);
  EXPECT_EQ(ctx().read(l.cross_q.b).back(), 1007.f);
  EXPECT_EQ(ctx().read(l.cross_kv.b).front(), 1008.f);
  EXPECT_EQ(ctx().read(l.cross_kv.b).back(), 1023.f);
}

// Under a block precision every linear layer's matrix (the packed in_proj, its
// cross-attention split included) is stored in the format, holding what ggml's
// quantizer makes of the file's rows; the rest is stored as in f16.
TEST_F(ModelLoading, QuantizedMatrices) {
  if (!has_f16()) GTEST_SKIP() << "block precisions store the other tensors in f16";
  json cfg = tiny_config(Kind::EncDec);
  cfg["d_model"] = 32, cfg["d_ff"] = 64;
  WeightOptions o;
  o.generator = true;
  const TensorMap file = tiny_weights(cfg, o);
  auto model = Model::load(ctx(), write_model("quantized", cfg, file), Precision::Q8_0);
  const TransformerWeights& w = transformer_weights(*model);
  auto rounded = [](const std::vector<float>& v) {
    return ref::dequantize(WeightFormat::Q8_0, ref::quantize(WeightFormat::Q8_0, v.data(), v.size()).data(), v.size());
  };
  size_t matrices = 0;
  for (const auto& [name, t] : named_tensors(model->config(), w)) {
    SCOPED_TRACE(name);
    const bool matrix = name.find("in_proj_weight") != std::string::npos ||
                        (t->shape().size() == 2 && name.find("embed") == std::string::npos &&
                         name.find("_pos.") == std::string::npos);
    const std::vector<float> v = file_values(file.at(name));
    EXPECT_EQ(t->dtype(), matrix ? DType::Q8_0 : DType::F16);
    EXPECT_EQ(ctx().read(*t), matrix ? rounded(v) : round_to_half(v));
    matrices += matrix;
  }
  EXPECT_EQ(matrices, 2u * 4 + 5u + 1u);  // 2 encoder layers' 4; the decoder's self-attention 2, cross out, FFN 2; generator
  const auto& l = w.decoder[0];
  const std::vector<float> in_proj = file_values(file.at("transformer.decoder.layers.0.multihead_attn.in_proj_weight"));
  EXPECT_EQ(l.cross_q.w.dtype(), DType::Q8_0);
  EXPECT_EQ(l.cross_kv.w.dtype(), DType::Q8_0);
  EXPECT_EQ(ctx().read(l.cross_q.w), rounded(slice(in_proj, 0, 32 * 32)));
  EXPECT_EQ(ctx().read(l.cross_kv.w), rounded(slice(in_proj, 32 * 32, 3 * 32 * 32)));
  uint64_t q8 = 0;
  for (const WeightMemory& m : model->weight_memory())
    if (m.dtype == DType::Q8_0) q8 = m.bytes;
  // Encoder layers: qkv 3, out 1 (d × d) and the FFN; the decoder's: self 4, cross 4; the generator's 13 rows.
  EXPECT_EQ(q8, dtype_bytes(DType::Q8_0, 2 * (4 * 32 * 32 + 2 * 32 * 64) + (8 * 32 * 32 + 2 * 32 * 64) + 13 * 32));
}

/// Writes a model and expects Model::load to fail naming the safetensors file and `needle`.
void expect_load_error(Context& ctx, const std::string& name, const json& cfg, const TensorMap& file,
                       const std::string& needle) {
  SCOPED_TRACE(name);
  const std::string dir = write_model(name, cfg, file);
  expect_error([&] { Model::load(ctx, dir); }, needle);
  expect_error([&] { Model::load(ctx, dir); }, dir + "/model.safetensors: ");
}

TEST_F(ModelLoading, MissingTensors) {
  const json ed = tiny_config(Kind::EncDec, "learned");
  const TensorMap full = tiny_weights(ed);
  auto without = [&](const std::string& name) {
    TensorMap m = full;
    EXPECT_EQ(m.erase(name), 1u) << name;
    return m;
  };
  expect_load_error(ctx(), "no-src-embed", ed, without("src_embed.weight"),
                    "missing tensor \"src_embed.weight\" [11, 8] = [src_vocab_size, d_model]");
  expect_load_error(
      ctx(), "no-tgt-embed", ed, without("tgt_embed.weight"),
      "missing tensor \"tgt_embed.weight\" [13, 8] = [tgt_vocab_size, d_model] (expected because "
      "decoder_layers > 0");
  expect_load_error(ctx(), "no-pos", ed, without("tgt_pos.weight"),
                    "missing tensor \"tgt_pos.weight\" [16, 8] = [max_positions, d_model] (expected because "
                    "positional_encoding is \"learned\")");
  expect_load_error(ctx(), "no-linear2", ed, without("transformer.encoder.layers.1.linear2.bias"),
                    "missing tensor \"transformer.encoder.layers.1.linear2.bias\" [8] = [d_model] (expected "
                    "because encoder_layers is 2)");
  expect_load_error(ctx(), "no-cross", ed,
                    without("transformer.decoder.layers.0.multihead_attn.in_proj_weight"),
                    "missing tensor \"transformer.decoder.layers.0.multihead_attn.in_proj_weight\" [24, 8] = "
                    "[3·d_model, d_model] (expected because decoder_layers is 1)");
  expect_load_error(ctx(), "no-norm3", ed, without("transformer.decoder.layers.0.norm3.weight"),
                    "missing tensor \"transformer.decoder.layers.0.norm3.weight\"");
  // Optional modules: one tensor of the pair implies the other.
  expect_load_error(ctx(), "half-generator", ed, without("generator.bias"),
                    "missing tensor \"generator.bias\" [13] = [tgt_vocab_size] (expected because "
                    "\"generator.weight\" is present)");
  expect_load_error(ctx(), "half-norm", ed, without("transformer.encoder.norm.weight"),
                    "missing tensor \"transformer.encoder.norm.weight\" [8] = [d_model] (expected because "
                    "\"transformer.encoder.norm.bias\" is present)");
  const json lm = tiny_config(Kind::DecoderOnly, "learned");
  TensorMap lm_file = tiny_weights(lm);
  lm_file.erase("src_pos.weight");
  expect_load_error(ctx(), "lm-no-pos", lm, lm_file, "missing tensor \"src_pos.weight\"");
}

TEST_F(ModelLoading, WrongShapes) {
  const json ed = tiny_config(Kind::EncDec, "learned");
  const TensorMap full = tiny_weights(ed);
  auto reshaped = [&](const std::string& name, std::vector<int64_t> shape) {
    TensorMap m = full;
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    m.at(name) = {"F32", shape, random_vector(size_t(n), 7)};
    return m;
  };
  expect_load_error(
      ctx(), "linear1", ed, reshaped("transformer.encoder.layers.0.linear1.weight", {16, 7}),
      "tensor \"transformer.encoder.layers.0.linear1.weight\" has shape [16, 7], expected [16, 8] "
      "= [d_ff, d_model]");
  expect_load_error(ctx(), "transposed", ed, reshaped("transformer.decoder.layers.0.linear2.weight", {16, 8}),
                    "has shape [16, 8], expected [8, 16] = [d_model, d_ff]");
  expect_load_error(
      ctx(), "generator", ed, reshaped("generator.weight", {11, 8}),
      "tensor \"generator.weight\" has shape [11, 8], expected [13, 8] = [tgt_vocab_size, d_model]");
  expect_load_error(ctx(), "pos", ed, reshaped("src_pos.weight", {15, 8}),
                    "expected [16, 8] = [max_positions, d_model]");
  expect_load_error(ctx(), "in_proj_bias", ed,
                    reshaped("transformer.decoder.layers.0.self_attn.in_proj_bias", {8}),
                    "has shape [8], expected [24] = [3·d_model]");
  expect_load_error(ctx(), "rank", ed, reshaped("transformer.encoder.norm.weight", {1, 8}),
                    "tensor \"transformer.encoder.norm.weight\" has shape [1, 8], expected [8]");
}

/// The one warning in `w` that contains `needle` (and fails unless there is exactly one).
std::string warning_with(const std::vector<std::string>& w, const std::string& needle) {
  std::string found;
  int n = 0;
  for (const auto& line : w)
    if (line.find(needle) != std::string::npos) found = line, ++n;
  EXPECT_EQ(n, 1) << "warnings with \"" << needle << "\": " << n;
  return found;
}

TEST_F(ModelLoading, UnexpectedTensorsWarn) {
  const json cfg = tiny_config(Kind::EncoderOnly);  // sinusoidal: a learned table is unexpected
  TensorMap file = tiny_weights(cfg);
  file["src_pos.weight"] = {"F32", {16, 8}, random_vector(128, 9)};
  file["transformer.decoder.layers.0.norm1.weight"] = {"F16", {8}, random_vector(8, 10)};
  const std::string dir = write_model("unexpected", cfg, file);
  ::testing::internal::CaptureStderr();
  auto model = Model::load(ctx(), dir);
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "") << "the library prints nothing; the CLI does";
  const std::string prefix = dir + "/model.safetensors: ";
  const auto& w = model->warnings();
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(warning_with(w, "\"src_pos.weight\""),
            prefix + "unexpected tensor \"src_pos.weight\" [16, 8] F32 is ignored");
  EXPECT_EQ(warning_with(w, "norm1"),
            prefix + "unexpected tensor \"transformer.decoder.layers.0.norm1.weight\" [8] F16 is ignored");
  // Loading went on: the sinusoidal table, not the file's tensor.
  EXPECT_EQ(ctx().read(transformer_weights(*model).src_pos), sinusoidal_table(16, 8));
}

TEST_F(ModelLoading, NonFiniteValuesWarn) {
  const json cfg = tiny_config(Kind::DecoderOnly);
  TensorMap file = tiny_weights(cfg);
  auto& t = file["transformer.encoder.layers.1.linear1.weight"].data;
  t[3] = NAN, t[9] = NAN, t[100] = -INFINITY;
  file["generator.bias"].data[0] = 1e5f;  // finite in fp32, Inf in fp16
  const std::string dir = write_model("nonfinite", cfg, file);
  const std::string prefix = dir + "/model.safetensors: ";
  for (Precision prec : {Precision::F32, Precision::F16}) {
    if (prec == Precision::F16 && !has_f16()) continue;
    ::testing::internal::CaptureStderr();
    auto model = Model::load(ctx(), dir, prec);
    EXPECT_EQ(::testing::internal::GetCapturedStderr(), "");
    const auto& w = model->warnings();
    EXPECT_EQ(warning_with(w, "linear1"),
              prefix + "tensor \"transformer.encoder.layers.1.linear1.weight\" holds 2 NaN and 1 Inf values");
    if (prec == Precision::F16) {
      EXPECT_EQ(warning_with(w, "generator.bias"),
                prefix + "tensor \"generator.bias\" has 1 values beyond the fp16 range; they become Inf in "
                         "fp16 precision");
      EXPECT_EQ(w.size(), 2u);
    } else {
      EXPECT_EQ(w.size(), 1u);
    }
    // Loading went on with the values as they are.
    const auto got = ctx().read(transformer_weights(*model).encoder[1].ff1.w);
    EXPECT_TRUE(std::isnan(got[3]) && std::isnan(got[9]));
    EXPECT_EQ(got[100], -INFINITY);
  }
}

TEST_F(ModelLoading, F16NeedsStorage16) {
  const json cfg = tiny_config(Kind::EncoderOnly);
  const std::string dir = write_model("nofp16", cfg, tiny_weights(cfg));
  ContextOptions o;
  o.validation = 1;
  o.verbose = false;
  o.disable_fp16 = true;
  Context no16(o);
  ASSERT_FALSE(no16.caps().storage_16bit);
  expect_error([&] { Model::load(no16, dir, Precision::F16); },
               "fp16 precision was requested but the device");
  EXPECT_EQ(Model::load(no16, dir, Precision::F32)->precision(), Precision::F32);
  EXPECT_EQ(no16.validation_messages(), 0u) << no16.last_validation_message();
}

TEST_F(ModelLoading, FileErrorsNameThePath) {
  const std::string dir = temp_dir("model-files");
  expect_error([&] { Model::load(ctx(), dir + "/nope"); }, dir + "/nope: not a model directory");
  expect_error([&] { Model::load(ctx(), dir); }, dir + "/config.json: cannot open");
  json cfg = tiny_config(Kind::EncDec);
  write_file(dir + "/config.json", cfg.dump());
  expect_error([&] { Model::load(ctx(), dir); }, dir + "/model.safetensors: cannot open");
  write_file(dir + "/model.safetensors", "");
  expect_error([&] { Model::load(ctx(), dir); }, dir + "/model.safetensors: is empty");
  cfg.erase("d_ff");
  write_file(dir + "/config.json", cfg.dump());
  expect_error([&] { Model::load(ctx(), dir); }, dir + "/config.json: missing key \"d_ff\"");
}

// Block formats through the Loader: tensors that arrive quantized (a GGUF
// file's) upload byte for byte and read back as ggml dequantizes them; a
// linear layer's matrix is quantized at load as ggml's reference quantizer does;
// rows that are not whole blocks and byte counts that do not match are named.
TEST_F(ModelLoading, BlockUploads) {
  TensorMap t;
  t["w"] = {"F32", {3, 64}, random_vector(192, 5)};
  const std::string bytes = safetensors_bytes(t);
  const SafeTensorsFile file = SafeTensorsFile::from_memory("mem.safetensors", {bytes.begin(), bytes.end()});
  Loader L(&ctx(), file, DType::F32, false, nullptr, DType::Q4_1);
  const std::vector<float> w = L.fetch("w", {3, 64}, "[3, 64]", "test");
  const Tensor q = L.upload_matrix({3, 64}, w, "w");
  EXPECT_EQ(q.dtype(), DType::Q4_1);
  EXPECT_EQ(q.bytes(), 3u * 2 * 20);
  const std::vector<uint8_t> blocks = ref::quantize(WeightFormat::Q4_1, w.data(), w.size());
  EXPECT_EQ(ctx().read(q), ref::dequantize(WeightFormat::Q4_1, blocks.data(), w.size()));
  // Already quantized: 34-byte blocks, an odd number of them (the allocation is padded to words).
  const std::vector<uint8_t> q8 = ref::quantize(WeightFormat::Q8_0, w.data(), 96);
  const Tensor b = L.upload_blocks({1, 96}, WeightFormat::Q8_0, q8.data(), q8.size(), "blk.0.attn_q.weight");
  EXPECT_EQ(b.dtype(), DType::Q8_0);
  EXPECT_EQ(b.bytes(), 102u);
  EXPECT_EQ(ctx().read(b), ref::dequantize(WeightFormat::Q8_0, q8.data(), 96));
  expect_error([&] { L.upload_blocks({1, 96}, WeightFormat::Q8_0, q8.data(), 100, "blk.0.attn_q.weight"); },
               "blk.0.attn_q.weight");
  expect_error([&] { L.upload_blocks({2, 48}, WeightFormat::Q8_0, q8.data(), q8.size(), "x"); }, "multiple of the q8_0 block");
  expect_error([&] { L.upload_matrix({4, 48}, w, "model.layers.0.mlp.up_proj.weight"); },
               "model.layers.0.mlp.up_proj.weight");
}

}  // namespace
}  // namespace vkf::test
