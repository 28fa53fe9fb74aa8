// Maps the state_dict() names of the PyTorch model (docs/model-format.md) onto
// TransformerWeights. Every tensor the config implies must be there with its
// exact shape; anything else in the file is reported and ignored.
#include "families/transformer/weights.hpp"

#include "families/transformer/family.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

const TransformerWeights& transformer_weights(const Model& m) {
  const auto* w = dynamic_cast<const TransformerWeights*>(&m.weights());
  if (!w) throw Error("a \"" + m.config().model_type + "\" model has no transformer weights");
  return *w;
}

Tensor position_table(Loader& L, const ModelConfig& cfg) {
  L.check_position_table(cfg, cfg.d_model);
  const bool halves = cfg.positional_encoding == PositionalEncoding::SinusoidalHalves;
  std::vector<float> table;
  if (L.uploads())
    table = halves ? halves_sinusoidal_table(cfg.max_positions, cfg.d_model)
                   : sinusoidal_table(cfg.max_positions, cfg.d_model);
  return L.upload({cfg.max_positions, int64_t(cfg.d_model)}, table,
                  halves ? "sinusoidal position table (sin | cos halves)" : "sinusoidal position table");
}

uint32_t TransformerFamily::output_dim(const Model& m) const {
  return transformer_weights(m).generator ? m.config().out_vocab() : m.config().d_model;
}

std::unique_ptr<ModelWeights> TransformerFamily::build_weights(Loader& L, const ModelConfig& cfg) const {
  auto w = std::make_unique<TransformerWeights>();
  const int64_t d = cfg.d_model, ff = cfg.d_ff;
  const bool encdec = cfg.encoder_decoder();

  w->src_embed = L.load("src_embed.weight", {cfg.src_vocab_size, d}, "[src_vocab_size, d_model]",
                        "every model has a source embedding");
  if (encdec)
    w->tgt_embed = L.load("tgt_embed.weight", {cfg.tgt_vocab_size, d}, "[tgt_vocab_size, d_model]",
                          "decoder_layers > 0 (an encoder-decoder model)");
  switch (cfg.positional_encoding) {
    case PositionalEncoding::Learned: {
      const std::string why = "positional_encoding is \"learned\"";
      L.check_position_table(cfg, d);
      w->src_pos = L.load("src_pos.weight", {cfg.max_positions, d}, "[max_positions, d_model]", why);
      if (encdec)
        w->tgt_pos = L.load("tgt_pos.weight", {cfg.max_positions, d}, "[max_positions, d_model]", why);
      break;
    }
    case PositionalEncoding::Sinusoidal:
    case PositionalEncoding::SinusoidalHalves:
      w->src_pos = position_table(L, cfg);
      if (encdec) w->tgt_pos = w->src_pos;  // the same read-only table serves both sides
      break;
    case PositionalEncoding::None:
    case PositionalEncoding::RelativeBias:  // T5's and the rotary families' kinds: their own weight maps
    case PositionalEncoding::Rotary:
      break;
  }

  // nn.MultiheadAttention packs Q, K and V in one in_proj_weight/in_proj_bias.
  auto in_proj = [&](const std::string& p, const std::string& why) {
    return LinearWeights{L.load_matrix(p + ".in_proj_weight", {3 * d, d}, "[3·d_model, d_model]", why),
                         L.load(p + ".in_proj_bias", {3 * d}, "[3·d_model]", why)};
  };

  for (uint32_t i = 0; i < cfg.encoder_layers; ++i) {
    const std::string p = "transformer.encoder.layers." + std::to_string(i);
    const std::string why = "encoder_layers is " + std::to_string(cfg.encoder_layers);
    EncoderLayerWeights l;
    l.qkv = in_proj(p + ".self_attn", why);
    l.attn_out = L.linear(p + ".self_attn.out_proj", d, d, "d_model", "d_model", why);
    l.ff1 = L.linear(p + ".linear1", ff, d, "d_ff", "d_model", why);
    l.ff2 = L.linear(p + ".linear2", d, ff, "d_model", "d_ff", why);
    l.norm1 = L.norm(p + ".norm1", d, why);
    l.norm2 = L.norm(p + ".norm2", d, why);
    w->encoder.push_back(std::move(l));
  }

  for (uint32_t i = 0; i < cfg.decoder_layers; ++i) {
    const std::string p = "transformer.decoder.layers." + std::to_string(i);
    const std::string why = "decoder_layers is " + std::to_string(cfg.decoder_layers);
    DecoderLayerWeights l;
    l.self_qkv = in_proj(p + ".self_attn", why);
    l.self_out = L.linear(p + ".self_attn.out_proj", d, d, "d_model", "d_model", why);
    // Cross-attention: queries come from the decoder, keys and values from the
    // encoder output, so its packed projection is split into Q and KV.
    const auto cw = L.fetch(p + ".multihead_attn.in_proj_weight", {3 * d, d}, "[3·d_model, d_model]", why);
    const auto cb = L.fetch(p + ".multihead_attn.in_proj_bias", {3 * d}, "[3·d_model]", why);
    const std::string cn = p + ".multihead_attn.in_proj_";
    const size_t dd = size_t(d);
    l.cross_q = {L.upload_matrix_part({d, d}, cw, 0, dd * dd, cn + "weight"),
                 L.upload_part({d}, cb, 0, dd, cn + "bias")};
    l.cross_kv = {L.upload_matrix_part({2 * d, d}, cw, dd * dd, 3 * dd * dd, cn + "weight"),
                  L.upload_part({2 * d}, cb, dd, 3 * dd, cn + "bias")};
    l.cross_out = L.linear(p + ".multihead_attn.out_proj", d, d, "d_model", "d_model", why);
    l.ff1 = L.linear(p + ".linear1", ff, d, "d_ff", "d_model", why);
    l.ff2 = L.linear(p + ".linear2", d, ff, "d_model", "d_ff", why);
    l.norm1 = L.norm(p + ".norm1", d, why);
    l.norm2 = L.norm(p + ".norm2", d, why);
    l.norm3 = L.norm(p + ".norm3", d, why);
    w->decoder.push_back(std::move(l));
  }

  std::string why;
  if (L.present("transformer.encoder.norm", why))
    w->encoder_norm = L.norm("transformer.encoder.norm", d, why);
  if (encdec && L.present("transformer.decoder.norm", why))
    w->decoder_norm = L.norm("transformer.decoder.norm", d, why);
  if (L.present("generator", why))
    w->generator = L.linear("generator", cfg.out_vocab(), d, encdec ? "tgt_vocab_size" : "src_vocab_size",
                            "d_model", why);
  return w;
}

}  // namespace vkf
