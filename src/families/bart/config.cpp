// config.json as Hugging Face writes it for BART (BartConfig), Marian
// (MarianConfig) and mBART (MBartConfig). HF leaves out keys equal to their
// defaults, so a missing (or null) key takes the config class's default. What
// vkformer does not compute is refused, naming the key. Keys that HF's classes
// ignore (fairseq-era "normalize_before", "add_final_layer_norm"... in old BART
// config.json files) are ignored here too: HF is the reference.
#include "families/bart/config.hpp"

#include "families/bart/family.hpp"
#include "model/json_text.hpp"

namespace vkf {

const BartConfig& bart_config(const ModelConfig& c) {
  const auto* b = dynamic_cast<const BartConfig*>(c.family_config.get());
  if (!b) throw Error("a \"" + c.model_type + "\" config has no bart settings");
  return *b;
}

void BartFamily::read_config(const ConfigReader& r, ModelConfig& c) const {
  auto b = std::make_shared<BartConfig>();
  const bool marian = c.model_type == "marian", mbart = c.model_type == "mbart";

  c.src_vocab_size = r.uint_or("vocab_size", marian ? 58101 : 50265, 1);
  b->shared_embeddings = marian ? r.boolean_or("share_encoder_decoder_embeddings", true) : true;
  // MarianConfig: decoder_vocab_size or vocab_size; its LM head has the decoder's vocabulary.
  c.tgt_vocab_size = marian && !b->shared_embeddings ? r.uint_or("decoder_vocab_size", c.src_vocab_size, 1)
                                                     : c.src_vocab_size;
  if (marian && b->shared_embeddings && r.set("decoder_vocab_size") && r.uint("decoder_vocab_size", 1) != c.src_vocab_size)
    r.fail("\"decoder_vocab_size\" " + std::to_string(r.uint("decoder_vocab_size", 1)) + " differs from \"vocab_size\" " +
           std::to_string(c.src_vocab_size) + " with share_encoder_decoder_embeddings true (one table serves both)");
  c.d_model = r.uint_or("d_model", 1024, 1);
  c.encoder_layers = r.uint_or("encoder_layers", 12, 1);
  c.decoder_layers = r.uint_or("decoder_layers", 12, 1);
  // The stacks take one head count and one FFN width for both sides.
  c.n_heads = r.uint_or("encoder_attention_heads", 16, 1);
  c.d_ff = r.uint_or("encoder_ffn_dim", 4096, 1);
  if (r.uint_or("decoder_attention_heads", 16, 1) != c.n_heads)
    r.fail("\"decoder_attention_heads\" " + std::to_string(r.uint_or("decoder_attention_heads", 16, 1)) +
           " differs from \"encoder_attention_heads\" " + std::to_string(c.n_heads) + ": not supported");
  if (r.uint_or("decoder_ffn_dim", 4096, 1) != c.d_ff)
    r.fail("\"decoder_ffn_dim\" " + std::to_string(r.uint_or("decoder_ffn_dim", 4096, 1)) +
           " differs from \"encoder_ffn_dim\" " + std::to_string(c.d_ff) + ": not supported");
  r.check_heads("d_model", c.d_model, c.n_heads);
  c.max_positions = r.uint_or("max_position_embeddings", 1024, 1);
  c.positions_key = "max_position_embeddings";
  c.activation = r.hf_activation("activation_function", "gelu");
  c.layer_norm_eps = 1e-5f;  // nn.LayerNorm's default: the classes have no eps key
  c.scale_embeddings = r.boolean_or("scale_embedding", false);
  c.norm_first = mbart;      // mBART: pre-LN, with a final norm on each stack
  c.causal = false;
  c.positional_encoding = marian ? PositionalEncoding::SinusoidalHalves : PositionalEncoding::Learned;
  if (!r.boolean_or("is_encoder_decoder", true)) r.fail("\"is_encoder_decoder\": false is not supported");

  c.pad_id = r.int32_or("pad_token_id", marian ? 58100 : 1);
  // eos_token_id: one id or a list (generation stops at any of them).
  c.end_ids = r.set("eos_token_id") ? r.ids("eos_token_id", c.tgt_vocab_size) : std::vector<int32_t>{marian ? 0 : 2};
  c.eos_id = c.end_ids[0];
  // The decoder starts from decoder_start_token_id (BART: eos, Marian: pad); MBartConfig
  // has none, and HF's generate() then starts from bos_token_id.
  const int32_t bos = r.int32_or("bos_token_id", 0);
  c.bos_id = r.int32_or("decoder_start_token_id", marian ? 58100 : mbart ? bos : 2);
  auto in_vocab = [&](const char* key, int32_t id, uint32_t vocab) {
    if (id < 0 || uint32_t(id) >= vocab)
      r.fail("\"" + std::string(key) + "\" " + std::to_string(id) + " is outside the vocabulary [0, " +
             std::to_string(vocab) + ")");
  };
  in_vocab("pad_token_id", c.pad_id, std::min(c.src_vocab_size, c.tgt_vocab_size));
  // HF masks padding by the attention mask, by position, never by value: Marian's
  // decoder starts from the pad token itself. So vkformer's padding is by position.
  b->pad_token_id = c.pad_id;
  c.pad_id = -1;
  in_vocab("eos_token_id", c.eos_id, c.tgt_vocab_size);  // the default, in a small vocabulary
  in_vocab(r.set("decoder_start_token_id") ? "decoder_start_token_id" : "bos_token_id", c.bos_id, c.tgt_vocab_size);

  b->tied = r.boolean_or("tie_word_embeddings", true);
  const std::string head = marian ? "MarianMTModel" : mbart ? "MBartForConditionalGeneration"
                                                            : "BartForConditionalGeneration";
  const std::string bare = marian ? "MarianModel" : mbart ? "MBartModel" : "BartModel";
  b->architecture = head;
  if (r.set("architectures")) {
    const nlohmann::json& a = r.need("architectures");
    if (!a.is_array() || a.empty() || !a[0].is_string())
      r.fail("\"architectures\" must be a list of class names, got " + brief_json(a));
    b->architecture = a[0].get<std::string>();
  }
  if (b->architecture != head && b->architecture != bare)
    r.fail("\"architectures\" \"" + printable(b->architecture) + "\" is not supported for model_type \"" +
           c.model_type + "\" (" + head + ", " + bare + ")");
  b->lm_head = b->architecture == head;
  c.family_config = std::move(b);
}

}  // namespace vkf
