// use_lite's tensors, as tools/use_lite/convert.py names them.
#include "families/use_lite/weights.hpp"

#include "families/use_lite/config.hpp"
#include "families/use_lite/family.hpp"
#include "vkformer/ops.hpp"

namespace vkf {

std::unique_ptr<ModelWeights> UseLiteFamily::build_weights(Loader& L, const ModelConfig& cfg) const {
  const UseLiteConfig& u = use_lite_config(cfg);
  const int64_t e = u.embed_dim, d = cfg.d_model, ff = cfg.d_ff;
  const std::string why = "model_type is \"use_lite\"";
  auto w = std::make_unique<UseLiteWeights>();
  w->embed = L.load("embed.weight", {cfg.src_vocab_size, e}, "[vocab_size, embed_dim]", why);
  // The timing table stays f32 in either precision: fp16 would cost ~1e-3 on
  // values up to 1, and it is only read once per token.
  const auto freqs = L.fetch("timing.inv_timescales", {e / 2}, "[embed_dim / 2]", why);
  L.check_position_table(cfg, e, DType::F32);
  w->timing = L.upload({cfg.max_positions, e},
                       !L.uploads() ? std::vector<float>{} : concat_sinusoidal_table(cfg.max_positions, freqs),
                       "timing signal table", DType::F32);
  for (uint32_t i = 0; i < cfg.encoder_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    const std::string why_l = "layers is " + std::to_string(cfg.encoder_layers);
    // The first layer reads the embeddings: its attention works at embed_dim.
    const int64_t win = i == 0 ? e : d;
    const std::string in = i == 0 ? "embed_dim" : "d_model";
    UseLiteLayerWeights l;
    l.attn_norm = {L.load(p + "attn_norm.weight", {win}, "[" + in + "]", why_l),
                   L.load(p + "attn_norm.bias", {win}, "[" + in + "]", why_l)};
    l.qkv = L.linear(p + "attn.qkv", 3 * win, win, "3·" + in, in, why_l);
    l.attn_out = L.linear(p + "attn.out", d, win, "d_model", in, why_l);
    if (win != d) l.residual = L.linear(p + "residual", d, win, "d_model", in, "embed_dim != d_model");
    l.ffn_norm = L.norm(p + "ffn_norm", d, why_l);
    l.ff1 = L.linear(p + "ffn.fc1", ff, d, "d_ff", "d_model", why_l);
    l.ff2 = L.linear(p + "ffn.fc2", d, ff, "d_model", "d_ff", why_l);
    w->layers.push_back(std::move(l));
  }
  w->pooler = L.linear("pooler.dense", d, d, "d_model", "d_model", why);
  return w;
}

}  // namespace vkf
