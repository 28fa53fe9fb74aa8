// config.json as Hugging Face writes it for GPT-2 (GPT2Config). HF leaves out
// keys equal to their defaults, so a missing (or null) key takes GPT2Config's
// default. What vkformer does not compute is refused, naming the key.
#include "families/gpt2/config.hpp"

#include "families/gpt2/family.hpp"
#include "model/json_text.hpp"

namespace vkf {

const Gpt2Config& gpt2_config(const ModelConfig& c) {
  const auto* g = dynamic_cast<const Gpt2Config*>(c.family_config.get());
  if (!g) throw Error("a \"" + c.model_type + "\" config has no gpt2 settings");
  return *g;
}

void Gpt2Family::read_config(const ConfigReader& r, ModelConfig& c) const {
  auto g = std::make_shared<Gpt2Config>();
  c.src_vocab_size = r.uint_or("vocab_size", 50257, 1);
  c.d_model = r.uint_or("n_embd", 768, 1);
  c.encoder_layers = r.uint_or("n_layer", 12, 1);
  c.n_heads = r.uint_or("n_head", 12, 1);
  if (!r.set("n_inner") && c.d_model > UINT32_MAX / 4)
    r.fail("\"n_embd\" " + std::to_string(c.d_model) + " is too large: n_inner = 4·n_embd would not fit 32 bits");
  c.d_ff = r.uint_or("n_inner", 4 * c.d_model, 1);  // null: 4·n_embd
  c.max_positions = r.uint_or("n_positions", 1024, 1);
  c.positions_key = "n_positions";
  c.activation = r.hf_activation("activation_function", "gelu_new");
  c.layer_norm_eps = r.set("layer_norm_epsilon") ? r.positive_float("layer_norm_epsilon") : 1e-5f;
  r.check_heads("n_embd", c.d_model, c.n_heads);
  // The transformer family's decoder-only model: a causal pre-LN stack, learned positions.
  c.decoder_layers = 0;
  c.causal = true;
  c.norm_first = true;
  c.positional_encoding = PositionalEncoding::Learned;
  c.scale_embeddings = false;
  c.pad_id = -1;  // no padding token: padding is masked by position
  const std::vector<int32_t> bos = r.set("bos_token_id") ? r.ids("bos_token_id", c.src_vocab_size) : std::vector{50256};
  if (bos.size() != 1) r.fail("\"bos_token_id\" must be one token id, got a list");
  c.bos_id = bos[0];
  c.end_ids = r.set("eos_token_id") ? r.ids("eos_token_id", c.src_vocab_size) : std::vector{50256};
  c.eos_id = c.end_ids[0];
  for (const char* key : {"bos_token_id", "eos_token_id"})  // GPT2Config's default 50256, outside a small vocabulary
    if (!r.set(key) && c.src_vocab_size <= 50256)
      r.fail("\"" + std::string(key) + "\" is missing, and its default 50256 is outside the vocabulary [0, " +
             std::to_string(c.src_vocab_size) + ")");

  if (!r.boolean_or("scale_attn_weights", true))
    r.fail("\"scale_attn_weights\": false is not supported (attention scores are scaled by 1/sqrt(head_dim))");
  for (const char* key : {"scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn", "add_cross_attention"})
    if (r.boolean_or(key, false)) r.fail("\"" + std::string(key) + "\": true is not supported");
  g->tied = r.boolean_or("tie_word_embeddings", true);

  g->architecture = "GPT2LMHeadModel";
  if (r.set("architectures")) {
    const nlohmann::json& a = r.need("architectures");
    if (!a.is_array() || a.empty() || !a[0].is_string())
      r.fail("\"architectures\" must be a list of class names, got " + brief_json(a));
    g->architecture = a[0].get<std::string>();
  }
  if (g->architecture != "GPT2LMHeadModel" && g->architecture != "GPT2Model")
    r.fail("\"architectures\" \"" + printable(g->architecture) +
           "\" is not supported for model_type \"gpt2\" (GPT2LMHeadModel, GPT2Model)");
  g->lm_head = g->architecture == "GPT2LMHeadModel";
  c.family_config = std::move(g);
}

}  // namespace vkf
