// config.json as Hugging Face writes it for T5 (T5Config). HF leaves out keys
// equal to their defaults, so a missing (or null) key takes T5Config's default.
// What vkformer does not compute is refused, naming the key.
#include "families/t5/config.hpp"

#include "families/t5/family.hpp"
#include "model/json_text.hpp"

namespace vkf {

const T5Config& t5_config(const ModelConfig& c) {
  const auto* t = dynamic_cast<const T5Config*>(c.family_config.get());
  if (!t) throw Error("a \"" + c.model_type + "\" config has no t5 settings");
  return *t;
}

namespace {

/// feed_forward_proj as T5Config parses it: "ACT" or "gated-ACT", ACT one of
/// ACT2FN's names; "gated-gelu" means gelu_new (T5 v1.1).
void read_feed_forward(const ConfigReader& r, ModelConfig& c, T5Config& t) {
  const char* key = "feed_forward_proj";
  const std::string s = r.set(key) ? r.string(key) : "relu";
  const size_t dash = s.find('-');
  const std::string first = s.substr(0, dash), act = dash == std::string::npos ? s : s.substr(dash + 1);
  if (act.find('-') != std::string::npos || (dash != std::string::npos && first != "gated"))
    r.fail("\"feed_forward_proj\" \"" + printable(s) +
           "\" is not of the form \"gated-ACT\" or \"ACT\" (e.g. \"gated-gelu\", \"relu\")");
  t.gated = dash != std::string::npos;
  // The activation by its ACT2FN name, read as any HF activation key is (same errors).
  const nlohmann::json one = {{key, s == "gated-gelu" ? "gelu_new" : act}};
  c.activation = ConfigReader(r.path(), one).hf_activation(key, "relu");
}

}  // namespace

void T5Family::read_config(const ConfigReader& r, ModelConfig& c) const {
  auto t = std::make_shared<T5Config>();
  c.src_vocab_size = c.tgt_vocab_size = r.uint_or("vocab_size", 32128, 1);
  c.d_model = r.uint_or("d_model", 512, 1);
  t->d_kv = r.uint_or("d_kv", 64, 1);
  c.d_ff = r.uint_or("d_ff", 2048, 1);
  c.encoder_layers = r.uint_or("num_layers", 6, 1);
  c.decoder_layers = r.uint_or("num_decoder_layers", c.encoder_layers, 1);
  c.n_heads = r.uint_or("num_heads", 8, 1);
  if (t->d_kv > 256) r.fail("\"d_kv\" " + std::to_string(t->d_kv) + " exceeds 256, the limit of the flash-attention kernel");
  if (uint64_t(t->d_kv) * c.n_heads > (1u << 24))
    r.fail("\"d_kv\" · \"num_heads\" = " + std::to_string(uint64_t(t->d_kv) * c.n_heads) + " is too large");
  c.head_dim = t->d_kv;
  c.scale_scores = false;  // T5 folds 1/√d_kv into the initialisation of q
  t->num_buckets = r.uint_or("relative_attention_num_buckets", 32, 1);
  t->max_distance = r.uint_or("relative_attention_max_distance", 128, 1);
  // The encoder's buckets are split by sign: each half needs exact buckets
  // (max_exact = num_buckets/4 ≥ 1) and a max_distance past them, or HF's logarithm is undefined.
  if (t->num_buckets < 4)
    r.fail("\"relative_attention_num_buckets\" " + std::to_string(t->num_buckets) +
           " is less than 4 (the encoder's two halves need at least one exact bucket each)");
  if (t->max_distance <= t->num_buckets / 2 || t->max_distance > (1u << 20))
    r.fail("\"relative_attention_max_distance\" " + std::to_string(t->max_distance) + " must be in (" +
           std::to_string(t->num_buckets / 2) + ", 2^20] (above the decoder's exact buckets)");
  c.layer_norm_eps = r.set("layer_norm_epsilon") ? r.positive_float("layer_norm_epsilon") : 1e-6f;
  read_feed_forward(r, c, *t);
  t->tied = r.set("tie_word_embeddings") ? r.boolean("tie_word_embeddings") : true;
  // No position table: any length runs; the bound keeps every index in 32 bits.
  c.max_positions = 1u << 16;
  c.positions_key = "none: T5's positions are relative; 65536 is vkformer's limit";
  c.positional_encoding = PositionalEncoding::RelativeBias;
  c.relative_buckets = t->num_buckets;
  c.relative_max_distance = t->max_distance;
  c.norm_first = true;
  c.norm = NormKind::RMSNorm;
  c.gated_ffn = t->gated;
  c.pad_by_position = true;
  c.pad_id = r.int32_or("pad_token_id", 0);
  c.end_ids = r.set("eos_token_id") ? r.ids("eos_token_id", c.src_vocab_size) : std::vector<int32_t>{1};
  c.eos_id = c.end_ids[0];
  c.bos_id = r.int32_or("decoder_start_token_id", c.pad_id);  // generation starts from it
  for (const auto& [key, id] : {std::pair<const char*, int32_t>{"pad_token_id", c.pad_id},
                                {"decoder_start_token_id", c.bos_id}})
    if (id < 0 || uint32_t(id) >= c.src_vocab_size)
      r.fail("\"" + std::string(key) + "\" " + std::to_string(id) + " is outside the vocabulary [0, " +
             std::to_string(c.src_vocab_size) + ")");
  if (r.set("is_decoder") && r.boolean("is_decoder")) r.fail("\"is_decoder\": true is not supported");

  t->architecture = "T5ForConditionalGeneration";
  if (r.set("architectures")) {
    const nlohmann::json& a = r.need("architectures");
    if (!a.is_array() || a.empty() || !a[0].is_string())
      r.fail("\"architectures\" must be a list of class names, got " + brief_json(a));
    t->architecture = a[0].get<std::string>();
  }
  if (t->architecture != "T5ForConditionalGeneration" && t->architecture != "T5EncoderModel")
    r.fail("\"architectures\" \"" + printable(t->architecture) +
           "\" is not supported for model_type \"t5\" (T5ForConditionalGeneration, T5EncoderModel)");
  t->lm_head = t->architecture == "T5ForConditionalGeneration";
  if (!t->lm_head) c.decoder_layers = 0;
  c.family_config = std::move(t);
}

}  // namespace vkf
