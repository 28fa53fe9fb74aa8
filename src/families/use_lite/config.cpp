// use_lite's config.json: one pre-LN encoder stack whose first layer may widen
// embed_dim -> d_model, then pooling and a tanh dense layer. Its keys set the
// shared fields too (vocab_size -> src_vocab_size, layers -> encoder_layers).
#include "families/use_lite/config.hpp"

#include "families/use_lite/family.hpp"

namespace vkf {

const UseLiteConfig& use_lite_config(const ModelConfig& c) {
  const auto* u = dynamic_cast<const UseLiteConfig*>(c.family_config.get());
  if (!u) throw Error("a \"" + c.model_type + "\" config has no use_lite settings");
  return *u;
}

void UseLiteFamily::read_config(const ConfigReader& r, ModelConfig& c) const {
  auto u = std::make_shared<UseLiteConfig>();
  c.src_vocab_size = r.uint("vocab_size", 1);
  u->embed_dim = r.uint("embed_dim", 1);
  c.d_model = r.uint("d_model", 1);
  c.n_heads = r.uint("n_heads", 1);
  c.d_ff = r.uint("d_ff", 1);
  c.encoder_layers = r.uint("layers", 1);
  c.activation = r.activation();
  c.layer_norm_eps = r.positive_float("layer_norm_eps");
  c.max_positions = r.uint("max_positions", 1);
  u->embedding_scale = r.positive_float("embedding_scale");
  u->l2_eps = r.positive_float("l2_eps");
  c.norm_first = true;
  c.positional_encoding = PositionalEncoding::None;  // its own timing signal (timing.inv_timescales)
  c.pad_id = c.bos_id = c.eos_id = 0;                 // unused: padding is by length
  if (u->embed_dim % 2 != 0)
    r.fail("\"embed_dim\" " + std::to_string(u->embed_dim) + " must be even (sines | cosines)");
  r.check_heads("embed_dim", u->embed_dim, c.n_heads);
  r.check_heads("d_model", c.d_model, c.n_heads);
  c.family_config = std::move(u);
}

}  // namespace vkf
