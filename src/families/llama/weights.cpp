// HF's tensor names for LlamaForCausalLM, MistralForCausalLM and
// Qwen2ForCausalLM: model.embed_tokens, model.layers.N.{input_layernorm,
// self_attn.{q,k,v,o}_proj, post_attention_layernorm, mlp.{gate,up,down}_proj},
// model.norm and lm_head (absent when tied). A bare <Name>Model has no "model."
// prefix. q, k and v are stacked at load into one [q + 2·kv, d] weight, so each
// layer's projection is one GEMM, and RoPE's inverse frequencies are computed here.
#include "families/llama/config.hpp"
#include "families/llama/family.hpp"
#include "families/transformer/weights.hpp"

namespace vkf {
namespace {

/// Llama 3.1's RoPE frequency factors, as a GGUF file names them (it has no transformers name).
constexpr const char* kRopeFactors = "rope_freqs.weight";

struct LayerLoader {
  Loader& L;
  const ModelConfig& c;
  const LlamaConfig& l;
  bool qkv_bias, o_bias;

  /// PREFIX.weight [out, in], and PREFIX.bias [out] when `bias`.
  LinearWeights linear(const std::string& p, int64_t out, int64_t in, const char* out_name, const char* in_name,
                       bool bias, const std::string& why) const {
    LinearWeights w{L.load_matrix(p + ".weight", {out, in}, std::string("[") + out_name + ", " + in_name + "]", why), {}};
    if (bias) w.b = L.load(p + ".bias", {out}, std::string("[") + out_name + "]", why);
    return w;
  }
  /// q_proj [q, d], k_proj and v_proj [kv, d] (and their biases) stacked into one [q + 2·kv, d].
  LinearWeights qkv(const std::string& p, const std::string& why) const {
    const int64_t d = c.d_model, q = c.q_width(), kv = c.kv_width();
    const char* q_dims = "num_attention_heads·head_dim";
    const char* kv_dims = "num_key_value_heads·head_dim";
    std::vector<Loader::MatrixPart> parts;
    std::vector<float> b;
    for (const auto& [name, rows, dims] : {std::tuple{"q_proj", q, q_dims}, std::tuple{"k_proj", kv, kv_dims},
                                           std::tuple{"v_proj", kv, kv_dims}}) {
      const std::string n = p + "." + name;
      parts.push_back({n + ".weight", rows, std::string(dims) + ", hidden_size"});
      if (qkv_bias) {
        const auto bias = L.fetch(n + ".bias", {rows}, std::string("[") + dims + "]", why);
        b.insert(b.end(), bias.begin(), bias.end());
      }
    }
    LinearWeights out = L.stacked_matrix(parts, d, why, p + ".{q,k,v}_proj.weight (stacked)");
    if (qkv_bias) out.b = L.upload({q + 2 * kv}, b, p + ".{q,k,v}_proj.bias (stacked)");
    return out;
  }
  /// LlamaRMSNorm: γ only.
  NormWeights norm(const std::string& p, const std::string& why) const {
    return {L.load(p + ".weight", {c.d_model}, "[hidden_size]", why), {}};
  }

  EncoderLayerWeights layer(const std::string& p, const std::string& why) const {
    const int64_t d = c.d_model, ff = c.d_ff, q = c.q_width();
    EncoderLayerWeights w;
    w.norm1 = norm(p + "input_layernorm", why);
    w.qkv = qkv(p + "self_attn", why);
    w.attn_out = linear(p + "self_attn.o_proj", d, q, "hidden_size", "num_attention_heads·head_dim", o_bias, why);
    w.norm2 = norm(p + "post_attention_layernorm", why);
    w.ff1 = linear(p + "mlp.gate_proj", ff, d, "intermediate_size", "hidden_size", l.mlp_bias, why);
    w.ff_up = linear(p + "mlp.up_proj", ff, d, "intermediate_size", "hidden_size", l.mlp_bias, why);
    w.ff2 = linear(p + "mlp.down_proj", d, ff, "hidden_size", "intermediate_size", l.mlp_bias, why);
    L.ignore(p + "self_attn.rotary_emb.inv_freq");  // a buffer older transformers saved
    return w;
  }
};

}  // namespace

std::unique_ptr<ModelWeights> LlamaFamily::build_weights(Loader& L, const ModelConfig& c) const {
  const LlamaConfig& l = llama_config(c);
  const int64_t d = c.d_model, V = c.src_vocab_size;
  const std::string why = "model_type is \"" + c.model_type + "\"";
  const std::string p = L.has("model.embed_tokens.weight") ? "model." : "";
  // Qwen2's q/k/v always have biases and its o_proj none; Llama's attention_bias gives all four.
  const bool qwen2 = c.model_type == "qwen2";
  const LayerLoader layers{L, c, l, qwen2 || l.attention_bias, !qwen2 && l.attention_bias};
  auto w = std::make_unique<TransformerWeights>();
  w->src_embed = L.load(p + "embed_tokens.weight", {V, d}, "[vocab_size, hidden_size]", why);
  for (uint32_t i = 0; i < c.encoder_layers; ++i)
    w->encoder.push_back(layers.layer(p + "layers." + std::to_string(i) + ".",
                                      "num_hidden_layers is " + std::to_string(c.encoder_layers)));
  w->encoder_norm = layers.norm(p + "norm", why);
  std::vector<float> inv_freq;
  if (L.uploads()) inv_freq = llama_inv_freq(c, l, c.max_positions);
  // A GGUF's rope_freqs (src/model/gguf_model.cpp): llama.cpp's form of rope_scaling "llama3",
  // one factor per frequency that ggml's rope divides the frequency by (freq_factors).
  if (L.has(kRopeFactors)) {
    const std::vector<float> factors = L.fetch(kRopeFactors, {int64_t(c.head_width() / 2)}, "[head_dim / 2]",
                                               "the file has RoPE frequency factors");
    for (size_t i = 0; i < factors.size() && i < inv_freq.size(); ++i) inv_freq[i] /= factors[i];
  }
  w->rope_inv_freq = L.upload({int64_t(c.head_width() / 2)}, inv_freq, "RoPE inverse frequencies", DType::F32);
  if (l.lm_head) {
    // Tied: save_pretrained leaves lm_head.weight out; the head is embed_tokens.
    w->generator = LinearWeights{!l.tied || L.has("lm_head.weight")
                                     ? L.load_matrix("lm_head.weight", {V, d}, "[vocab_size, hidden_size]",
                                              "architectures is " + l.architecture + " with tie_word_embeddings false")
                                     : w->src_embed,
                                 {}};
  }
  return w;
}

}  // namespace vkf
