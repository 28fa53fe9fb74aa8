// What a transformer-family model holds on the device, checked against the
// tensors of the file(s) it was loaded from (model_writer.hpp).
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "families/transformer/weights.hpp"
#include "model_writer.hpp"
#include "vkformer/model.hpp"

namespace vkf::test {

/// The device tensor each state_dict() name became (the cross-attention
/// in_proj, which is split, is checked separately).
inline std::map<std::string, const Tensor*> named_tensors(const ModelConfig& c, const TransformerWeights& w) {
  std::map<std::string, const Tensor*> m;
  auto linear = [&](const std::string& p, const LinearWeights& l) {
    m[p + ".weight"] = &l.w;
    m[p + ".bias"] = &l.b;
  };
  auto norm = [&](const std::string& p, const NormWeights& n) {
    m[p + ".weight"] = &n.gamma;
    m[p + ".bias"] = &n.beta;
  };
  auto in_proj = [&](const std::string& p, const LinearWeights& l) {
    m[p + ".in_proj_weight"] = &l.w;
    m[p + ".in_proj_bias"] = &l.b;
  };
  m["src_embed.weight"] = &w.src_embed;
  if (c.encoder_decoder()) m["tgt_embed.weight"] = &w.tgt_embed;
  if (c.positional_encoding == PositionalEncoding::Learned) {
    m["src_pos.weight"] = &w.src_pos;
    if (c.encoder_decoder()) m["tgt_pos.weight"] = &w.tgt_pos;
  }
  for (size_t i = 0; i < w.encoder.size(); ++i) {
    const std::string p = "transformer.encoder.layers." + std::to_string(i);
    const auto& l = w.encoder[i];
    in_proj(p + ".self_attn", l.qkv);
    linear(p + ".self_attn.out_proj", l.attn_out);
    linear(p + ".linear1", l.ff1);
    linear(p + ".linear2", l.ff2);
    norm(p + ".norm1", l.norm1);
    norm(p + ".norm2", l.norm2);
  }
  for (size_t i = 0; i < w.decoder.size(); ++i) {
    const std::string p = "transformer.decoder.layers." + std::to_string(i);
    const auto& l = w.decoder[i];
    in_proj(p + ".self_attn", l.self_qkv);
    linear(p + ".self_attn.out_proj", l.self_out);
    linear(p + ".multihead_attn.out_proj", l.cross_out);
    linear(p + ".linear1", l.ff1);
    linear(p + ".linear2", l.ff2);
    norm(p + ".norm1", l.norm1);
    norm(p + ".norm2", l.norm2);
    norm(p + ".norm3", l.norm3);
  }
  if (w.encoder_norm) norm("transformer.encoder.norm", *w.encoder_norm);
  if (w.decoder_norm) norm("transformer.decoder.norm", *w.decoder_norm);
  if (w.generator) linear("generator", *w.generator);
  return m;
}

inline std::vector<float> slice(const std::vector<float>& v, size_t begin, size_t end) {
  return {v.begin() + std::ptrdiff_t(begin), v.begin() + std::ptrdiff_t(end)};
}

/// Every file tensor is on the device with its shape, in `dtype`, holding the
/// file's values (rounded to fp16 for F16).
inline void expect_loaded(Context& ctx, const Model& model, const TensorMap& file, DType dtype) {
  const ModelConfig& c = model.config();
  const TransformerWeights& w = transformer_weights(model);
  auto want = [&](const FileTensor& t) {
    auto v = file_values(t);
    return dtype == DType::F16 ? round_to_half(v) : v;
  };
  auto expect_tensor = [&](const std::string& what, const Tensor& t, const std::vector<int64_t>& shape,
                           const std::vector<float>& values) {
    SCOPED_TRACE(what);
    ASSERT_FALSE(t.empty());
    EXPECT_EQ(t.shape(), shape);
    EXPECT_EQ(t.dtype(), dtype);
    EXPECT_EQ(ctx.read(t), values);  // exact: both sides hold the same rounding
  };

  size_t matched = 0;
  for (const auto& [name, t] : named_tensors(c, w)) {
    ASSERT_TRUE(file.count(name)) << name << " loaded but not in the file";
    expect_tensor(name, *t, file.at(name).shape, want(file.at(name)));
    ++matched;
  }
  const size_t d = c.d_model;
  for (size_t i = 0; i < w.decoder.size(); ++i) {
    const std::string p = "transformer.decoder.layers." + std::to_string(i) + ".multihead_attn.in_proj_";
    const auto wv = want(file.at(p + "weight")), bv = want(file.at(p + "bias"));
    const auto& l = w.decoder[i];
    const int64_t di = int64_t(d);
    expect_tensor("cross_q.w", l.cross_q.w, {di, di}, slice(wv, 0, d * d));
    expect_tensor("cross_q.b", l.cross_q.b, {di}, slice(bv, 0, d));
    expect_tensor("cross_kv.w", l.cross_kv.w, {2 * di, di}, slice(wv, d * d, 3 * d * d));
    expect_tensor("cross_kv.b", l.cross_kv.b, {2 * di}, slice(bv, d, 3 * d));
    matched += 2;
  }
  EXPECT_EQ(matched, file.size()) << "some file tensors were not loaded";

  const std::vector<int64_t> pos_shape = {c.max_positions, c.d_model};
  switch (c.positional_encoding) {
    case PositionalEncoding::Sinusoidal: {
      auto table = sinusoidal_table(c.max_positions, c.d_model);
      if (dtype == DType::F16) table = round_to_half(table);
      expect_tensor("src_pos", w.src_pos, pos_shape, table);
      if (c.encoder_decoder())
        expect_tensor("tgt_pos", w.tgt_pos, pos_shape, table);
      else
        EXPECT_TRUE(w.tgt_pos.empty());
      break;
    }
    case PositionalEncoding::Learned:
      if (!c.encoder_decoder()) EXPECT_TRUE(w.tgt_pos.empty());
      break;
    case PositionalEncoding::None:
      EXPECT_TRUE(w.src_pos.empty());
      EXPECT_TRUE(w.tgt_pos.empty());
      break;
  }
  if (!c.encoder_decoder()) EXPECT_TRUE(w.tgt_embed.empty());
}

}  // namespace vkf::test
