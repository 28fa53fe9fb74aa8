// config.json as transformers 4.44 writes it for LlamaConfig, MistralConfig and
// Qwen2Config. HF leaves out keys equal to their defaults, so a missing (or
// null) key takes the class's default. What vkformer does not compute, or what
// transformers 4.44 would not compute either, is refused naming the key.
#include "families/llama/config.hpp"

#include "families/llama/family.hpp"
#include "model/json_text.hpp"

namespace vkf {
namespace {

/// The defaults of the three config classes that differ.
struct Defaults {
  const char* causal_lm;  ///< the architectures name with an LM head
  const char* bare;       ///< and without
  uint32_t vocab, hidden, ff, kv_heads /* 0: num_attention_heads */, max_positions;
  int32_t bos, eos;       ///< -1: none (Qwen2Config sets neither)
};

Defaults defaults_of(const std::string& model_type) {
  if (model_type == "mistral") return {"MistralForCausalLM", "MistralModel", 32000, 4096, 14336, 8, 131072, 1, 2};
  if (model_type == "qwen2") return {"Qwen2ForCausalLM", "Qwen2Model", 151936, 4096, 22016, 0, 32768, -1, -1};
  return {"LlamaForCausalLM", "LlamaModel", 32000, 4096, 11008, 0, 2048, 1, 2};
}

/// rope_scaling["key"], a number; `def` when absent (and def ≥ 0), else an error.
double scaling_number(const ConfigReader& r, const nlohmann::json& s, const char* key, double def = -1) {
  if (!s.contains(key) || s.at(key).is_null()) {
    if (def >= 0) return def;
    r.fail("\"rope_scaling\" is missing \"" + std::string(key) + "\"");
  }
  if (!s.at(key).is_number()) r.fail("\"rope_scaling\" \"" + std::string(key) + "\" must be a number, got " + brief_json(s.at(key)));
  return s.at(key).get<double>();
}

RopeScaling read_rope_scaling(const ConfigReader& r, const std::string& model_type) {
  RopeScaling rs;
  if (!r.set("rope_scaling")) return rs;
  if (model_type != "llama")  // MistralRotaryEmbedding and Qwen2RotaryEmbedding of 4.44 have no scaling
    r.fail("\"rope_scaling\" is not supported for model_type \"" + model_type +
           "\" (transformers 4.44 reads it for llama only)");
  const nlohmann::json& s = r.need("rope_scaling");
  if (!s.is_object()) r.fail("\"rope_scaling\" must be an object or null, got " + brief_json(s));
  const char* type_key = s.contains("rope_type") ? "rope_type" : "type";  // "type" is the older name
  if (!s.contains(type_key) || !s.at(type_key).is_string())
    r.fail("\"rope_scaling\" needs a string \"rope_type\" (default, linear, dynamic, llama3)");
  rs.type = s.at(type_key).get<std::string>();
  if (rs.type == "default") return rs;
  if (rs.type != "linear" && rs.type != "dynamic" && rs.type != "llama3")
    r.fail("\"rope_scaling\" \"" + std::string(type_key) + "\" \"" + printable(rs.type) +
           "\" is not supported (default, linear, dynamic, llama3)");
  rs.factor = scaling_number(r, s, "factor");
  if (!(rs.factor >= 1.0)) r.fail("\"rope_scaling\" \"factor\" must be a number ≥ 1, got " + brief_json(s.at("factor")));
  if (rs.type == "llama3") {
    rs.low_freq_factor = scaling_number(r, s, "low_freq_factor");
    rs.high_freq_factor = scaling_number(r, s, "high_freq_factor");
    if (!(rs.high_freq_factor > rs.low_freq_factor) || !(rs.low_freq_factor > 0))
      r.fail("\"rope_scaling\": \"high_freq_factor\" must be greater than \"low_freq_factor\" > 0");
    const double orig = scaling_number(r, s, "original_max_position_embeddings");
    if (!(orig >= 1 && orig < 4294967296.0) || orig != double(uint64_t(orig)))
      r.fail("\"rope_scaling\" \"original_max_position_embeddings\" must be a positive integer");
    rs.original_max_positions = uint32_t(orig);
  }
  return rs;
}

}  // namespace

const LlamaConfig& llama_config(const ModelConfig& c) {
  const auto* l = dynamic_cast<const LlamaConfig*>(c.family_config.get());
  if (!l) throw Error("a \"" + c.model_type + "\" config has no llama settings");
  return *l;
}

void LlamaFamily::read_config(const ConfigReader& r, ModelConfig& c) const {
  const Defaults d = defaults_of(c.model_type);
  auto l = std::make_shared<LlamaConfig>();
  c.src_vocab_size = r.uint_or("vocab_size", d.vocab, 1);
  c.d_model = r.uint_or("hidden_size", d.hidden, 1);
  c.d_ff = r.uint_or("intermediate_size", d.ff, 1);
  c.encoder_layers = r.uint_or("num_hidden_layers", 32, 1);  // decoder-only: a causal stack
  c.n_heads = r.uint_or("num_attention_heads", 32, 1);
  c.kv_heads = r.uint_or("num_key_value_heads", d.kv_heads ? d.kv_heads : c.n_heads, 1);
  if (c.n_heads % c.kv_heads)
    r.fail("\"num_attention_heads\" " + std::to_string(c.n_heads) + " is not a multiple of \"num_key_value_heads\" " +
           std::to_string(c.kv_heads) + " (each K/V head serves a whole group of query heads)");
  if (c.model_type == "mistral" && r.set("head_dim")) {  // MistralAttention's head_dim may differ from hidden/heads
    c.head_dim = r.uint("head_dim", 1);
    if (c.head_dim > 256) r.fail("\"head_dim\" " + std::to_string(c.head_dim) + " is larger than 256 (the attention kernel's limit)");
  } else {
    r.check_heads("hidden_size", c.d_model, c.n_heads);
    if (r.set("head_dim") && r.uint("head_dim", 1) != c.d_model / c.n_heads)
      r.fail("\"head_dim\" " + std::to_string(r.uint("head_dim", 1)) + " is not hidden_size / num_attention_heads (" +
             std::to_string(c.d_model / c.n_heads) + "), which transformers 4.44's " + c.model_type + " attention uses");
    c.head_dim = c.d_model / c.n_heads;
  }
  if (c.head_dim % 2) r.fail("the head width " + std::to_string(c.head_dim) + " is odd: rotary positions rotate pairs");
  c.activation = r.hf_activation("hidden_act", "silu");
  c.gated_ffn = true;  // down(act(gate(x)) ⊙ up(x))
  c.norm = NormKind::RMSNorm;
  c.norm_first = true;
  c.layer_norm_eps = r.set("rms_norm_eps") ? r.positive_float("rms_norm_eps") : 1e-6f;
  c.max_positions = r.uint_or("max_position_embeddings", d.max_positions, 1);
  c.positions_key = "max_position_embeddings";
  c.positional_encoding = PositionalEncoding::Rotary;
  c.causal = true;
  c.decoder_layers = 0;
  c.scale_embeddings = false;
  c.pad_id = -1;  // padding is masked by position
  c.kv_cache_f16_default = true;  // generation keeps K/V in fp16 where the device stores it (--kv-cache f32: not)
  l->rope_theta = r.set("rope_theta") ? double(r.positive_float("rope_theta")) : 10000.0;
  l->rope_scaling = read_rope_scaling(r, c.model_type);

  if (c.model_type == "mistral") {
    // MistralConfig's default is 4096; null means none.
    c.sliding_window = r.set("sliding_window") ? r.uint("sliding_window", 1) : (r.has("sliding_window") ? 0 : 4096);
  } else if (c.model_type == "qwen2" && r.boolean_or("use_sliding_window", false)) {
    r.fail("\"use_sliding_window\": true is not supported (transformers 4.44 applies it only in flash-attention 2, "
           "and only to the layers past max_window_layers)");
  }
  if (c.model_type == "llama") {
    l->attention_bias = r.boolean_or("attention_bias", false);
    l->mlp_bias = r.boolean_or("mlp_bias", false);
    if (r.uint_or("pretraining_tp", 1, 1) != 1)
      r.fail("\"pretraining_tp\" other than 1 is not supported (it splits the projections; transformers sums the slices)");
  }

  c.bos_id = r.set("bos_token_id") ? r.ids("bos_token_id", c.src_vocab_size)[0] : d.bos;
  c.end_ids = r.set("eos_token_id") ? r.ids("eos_token_id", c.src_vocab_size)
                                    : (d.eos >= 0 ? std::vector<int32_t>{d.eos} : std::vector<int32_t>{});
  c.eos_id = c.end_ids.empty() ? -1 : c.end_ids[0];
  for (const auto& [key, def] : {std::pair{"bos_token_id", d.bos}, std::pair{"eos_token_id", d.eos}})
    if (!r.set(key) && def >= 0 && uint32_t(def) >= c.src_vocab_size)
      r.fail("\"" + std::string(key) + "\" is missing, and its default " + std::to_string(def) +
             " is outside the vocabulary [0, " + std::to_string(c.src_vocab_size) + ")");
  l->tied = r.boolean_or("tie_word_embeddings", false);

  l->architecture = d.causal_lm;
  if (r.set("architectures")) {
    const nlohmann::json& a = r.need("architectures");
    if (!a.is_array() || a.empty() || !a[0].is_string())
      r.fail("\"architectures\" must be a list of class names, got " + brief_json(a));
    l->architecture = a[0].get<std::string>();
  }
  if (l->architecture != d.causal_lm && l->architecture != d.bare)
    r.fail("\"architectures\" \"" + printable(l->architecture) + "\" is not supported for model_type \"" +
           c.model_type + "\" (" + d.causal_lm + ", " + d.bare + ")");
  l->lm_head = l->architecture == d.causal_lm;
  c.family_config = std::move(l);
}

}  // namespace vkf
