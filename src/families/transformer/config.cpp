// The transformer family's config.json keys (docs/model-format.md).
#include "families/transformer/family.hpp"

namespace vkf {

void TransformerFamily::read_config(const ConfigReader& r, ModelConfig& c) const {
  c.d_model = r.uint("d_model", 1);
  c.n_heads = r.uint("n_heads", 1);
  c.d_ff = r.uint("d_ff", 1);
  c.encoder_layers = r.uint("encoder_layers", 1);
  c.decoder_layers = r.uint("decoder_layers", 0);
  c.activation = r.activation();
  c.norm_first = r.boolean("norm_first");
  c.layer_norm_eps = r.positive_float("layer_norm_eps");
  c.src_vocab_size = r.uint("src_vocab_size", 1);
  if (c.decoder_layers > 0 || r.has("tgt_vocab_size"))
    c.tgt_vocab_size = r.uint("tgt_vocab_size", c.decoder_layers > 0 ? 1 : 0);
  c.max_positions = r.uint("max_positions", 1);
  c.positional_encoding = r.positional_encoding();
  c.scale_embeddings = r.boolean("scale_embeddings");
  c.causal = r.boolean("causal");
  c.pad_id = r.int32("pad_id");
  c.bos_id = r.int32("bos_id");
  c.eos_id = r.int32("eos_id");

  r.check_heads("d_model", c.d_model, c.n_heads);
  if (c.causal && c.decoder_layers > 0)
    r.fail("\"causal\": true with \"decoder_layers\" " + std::to_string(c.decoder_layers) +
           " is unsupported (causal means a decoder-only model: an encoder stack with decoder_layers 0)");

  // pad masks both sides' inputs; bos starts and eos ends what the model
  // generates, which is the target side of an encoder–decoder.
  auto in_vocab = [&](const char* key, int32_t id, uint32_t vocab, const char* which) {
    if (id < 0 || uint32_t(id) >= vocab)
      r.fail("\"" + std::string(key) + "\" " + std::to_string(id) + " is outside the " + which +
             " vocabulary [0, " + std::to_string(vocab) + ")");
  };
  in_vocab("pad_id", c.pad_id, c.src_vocab_size, "source");
  if (c.encoder_decoder()) {
    in_vocab("pad_id", c.pad_id, c.tgt_vocab_size, "target");
    in_vocab("bos_id", c.bos_id, c.tgt_vocab_size, "target");
    in_vocab("eos_id", c.eos_id, c.tgt_vocab_size, "target");
  } else {
    in_vocab("bos_id", c.bos_id, c.src_vocab_size, "source");
    in_vocab("eos_id", c.eos_id, c.src_vocab_size, "source");
  }
}

}  // namespace vkf
