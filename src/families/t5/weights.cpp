// HF's tensor names for T5: `shared`, {encoder,decoder}.block.N.layer.M.*,
// {encoder,decoder}.final_layer_norm and lm_head. No biases anywhere. Q, K and
// V (and cross-attention's K and V) are packed at load time so that each is
// one GEMM.
#include <cmath>
#include <type_traits>

// They fill the shared block's TransformerWeights: T5's layer.0 / layer.1 /
// layer.2 are its norm1 / norm2 / norm3 (RMSNorm, γ only) with self-attention,
// cross-attention and the FFN.
#include "families/t5/config.hpp"
#include "families/t5/family.hpp"
#include "families/transformer/weights.hpp"

namespace vkf {
namespace {

struct BlockLoader {
  Loader& L;
  const ModelConfig& c;
  const T5Config& t;

  /// PREFIX.weight [out, in], no bias.
  LinearWeights linear(const std::string& p, int64_t out, int64_t in, const char* out_name, const char* in_name,
                       const std::string& why) const {
    return {L.load_matrix(p + ".weight", {out, in}, std::string("[") + out_name + ", " + in_name + "]", why), {}};
  }
  /// The PREFIX.{names}.weight [inner, d] stacked into one [n·inner, d] weight.
  LinearWeights packed(const std::string& p, const std::vector<const char*>& names, const std::string& why) const {
    std::vector<Loader::MatrixPart> parts;
    for (const char* n : names) parts.push_back({p + "." + n + ".weight", c.q_width(), "d_kv·num_heads, d_model"});
    return L.stacked_matrix(parts, c.d_model, why, p + " (packed)");
  }
  /// T5LayerNorm: γ only.
  NormWeights norm(const std::string& p, const std::string& why) const {
    return {L.load(p + ".weight", {c.d_model}, "[d_model]", why), {}};
  }

  /// layer.0 (self-attention), then the FFN at layer.1 (encoder) or layer.2
  /// after cross-attention at layer.1 (decoder).
  template <class Layer>
  Layer block(const std::string& stack, uint32_t i, const std::string& why) const {
    constexpr bool decoder = std::is_same_v<Layer, DecoderLayerWeights>;
    const std::string p = stack + ".block." + std::to_string(i) + ".layer.";
    const int64_t d = c.d_model, ff = c.d_ff, inner = c.q_width();
    Layer b;
    b.norm1 = norm(p + "0.layer_norm", why);
    LinearWeights qkv = packed(p + "0.SelfAttention", {"q", "k", "v"}, why);
    LinearWeights self_o = linear(p + "0.SelfAttention.o", d, inner, "d_model", "d_kv·num_heads", why);
    const std::string f = p + (decoder ? "2" : "1");
    if constexpr (decoder) {
      b.self_qkv = std::move(qkv);
      b.self_out = std::move(self_o);
      b.norm2 = norm(p + "1.layer_norm", why);
      b.cross_q = linear(p + "1.EncDecAttention.q", inner, d, "d_kv·num_heads", "d_model", why);
      b.cross_kv = packed(p + "1.EncDecAttention", {"k", "v"}, why);
      b.cross_out = linear(p + "1.EncDecAttention.o", d, inner, "d_model", "d_kv·num_heads", why);
      b.norm3 = norm(f + ".layer_norm", why);
    } else {
      b.qkv = std::move(qkv);
      b.attn_out = std::move(self_o);
      b.norm2 = norm(f + ".layer_norm", why);
    }
    const std::string ffw = why + (t.gated ? ", feed_forward_proj gated" : ", feed_forward_proj not gated");
    b.ff1 = linear(f + (t.gated ? ".DenseReluDense.wi_0" : ".DenseReluDense.wi"), ff, d, "d_ff", "d_model", ffw);
    if (t.gated) b.ff_up = linear(f + ".DenseReluDense.wi_1", ff, d, "d_ff", "d_model", ffw);
    b.ff2 = linear(f + ".DenseReluDense.wo", d, ff, "d_model", "d_ff", why);
    return b;
  }

  /// Block 0's relative_attention_bias: [num_buckets, num_heads].
  Tensor bias_table(const std::string& stack) const {
    return L.load(stack + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight",
                  {t.num_buckets, c.n_heads}, "[relative_attention_num_buckets, num_heads]",
                  "block 0 of every T5 stack computes the relative-position bias");
  }
};

}  // namespace

std::unique_ptr<ModelWeights> T5Family::build_weights(Loader& L, const ModelConfig& c) const {
  const T5Config& t = t5_config(c);
  const BlockLoader B{L, c, t};
  auto w = std::make_unique<TransformerWeights>();
  const int64_t d = c.d_model, V = c.src_vocab_size;
  w->src_embed = L.load("shared.weight", {V, d}, "[vocab_size, d_model]", "both T5 stacks embed with it");
  // HF's stacks hold the same Parameter as `shared`; older checkpoints save the copies.
  for (const char* copy : {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"}) L.ignore(copy);
  w->src_position_bias = B.bias_table("encoder");
  for (uint32_t i = 0; i < c.encoder_layers; ++i)
    w->encoder.push_back(
        B.block<EncoderLayerWeights>("encoder", i, "num_layers is " + std::to_string(c.encoder_layers)));
  w->encoder_norm = B.norm("encoder.final_layer_norm", "every T5 stack ends with it");
  if (!t.lm_head) return w;  // T5EncoderModel

  w->tgt_embed = w->src_embed;
  w->tgt_position_bias = B.bias_table("decoder");
  for (uint32_t i = 0; i < c.decoder_layers; ++i)
    w->decoder.push_back(
        B.block<DecoderLayerWeights>("decoder", i, "num_decoder_layers is " + std::to_string(c.decoder_layers)));
  // A tied head scales the decoder's output by d_model^-0.5 (T5ForConditionalGeneration):
  // folded into the final norm's γ, which nothing else reads.
  std::vector<float> g = L.fetch("decoder.final_layer_norm.weight", {d}, "[d_model]", "every T5 stack ends with it");
  if (t.tied)
    for (float& x : g) x = float(double(x) / std::sqrt(double(d)));
  w->decoder_norm = NormWeights{L.upload({d}, g, "decoder.final_layer_norm.weight"), {}};
  LinearWeights head;
  head.w = t.tied ? w->src_embed
                  : L.load_matrix("lm_head.weight", {V, d}, "[vocab_size, d_model]", "tie_word_embeddings is false");
  if (t.tied) L.ignore("lm_head.weight");  // a tied copy, when saved
  w->generator = std::move(head);
  return w;
}

}  // namespace vkf
