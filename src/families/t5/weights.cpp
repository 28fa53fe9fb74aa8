// HF's tensor names for T5: `shared`, {encoder,decoder}.block.N.layer.M.*,
// {encoder,decoder}.final_layer_norm and lm_head. No biases anywhere. Q, K and
// V (and cross-attention's K and V) are packed at load time so that each is
// one GEMM.
#include <cmath>

#include "families/t5/config.hpp"
#include "families/t5/family.hpp"
#include "families/t5/weights.hpp"

namespace vkf {

const T5Weights& t5_weights(const Model& m) {
  const auto* w = dynamic_cast<const T5Weights*>(&m.weights());
  if (!w) throw Error("a \"" + m.config().model_type + "\" model has no t5 weights");
  return *w;
}

uint32_t T5Family::output_dim(const Model& m) const {
  return t5_weights(m).lm_head ? m.config().tgt_vocab_size : m.config().d_model;
}

namespace {

struct BlockLoader {
  Loader& L;
  const ModelConfig& c;
  const T5Config& t;

  /// PREFIX.weight [out, in], no bias.
  LinearWeights linear(const std::string& p, int64_t out, int64_t in, const char* out_name, const char* in_name,
                       const std::string& why) const {
    return {L.load(p + ".weight", {out, in}, std::string("[") + out_name + ", " + in_name + "]", why), {}};
  }
  /// The PREFIX.{names}.weight [inner, d] stacked into one [n·inner, d] weight.
  LinearWeights packed(const std::string& p, const std::vector<const char*>& names, const std::string& why) const {
    const int64_t inner = t.inner, d = c.d_model;
    std::vector<float> all;
    for (const char* n : names) {
      const auto w = L.fetch(p + "." + n + ".weight", {inner, d}, "[d_kv·num_heads, d_model]", why);
      all.insert(all.end(), w.begin(), w.end());
    }
    return {L.upload({int64_t(names.size()) * inner, d}, all, p + " (packed)"), {}};
  }
  Tensor norm(const std::string& p, const std::string& why) const {
    return L.load(p + ".weight", {c.d_model}, "[d_model]", why);
  }

  T5BlockWeights block(const std::string& stack, uint32_t i, bool decoder, const std::string& why) const {
    const std::string p = stack + ".block." + std::to_string(i) + ".layer.";
    const int64_t d = c.d_model, ff = c.d_ff, inner = t.inner;
    T5BlockWeights b;
    b.self_norm = norm(p + "0.layer_norm", why);
    b.qkv = packed(p + "0.SelfAttention", {"q", "k", "v"}, why);
    b.self_o = linear(p + "0.SelfAttention.o", d, inner, "d_model", "d_kv·num_heads", why);
    const std::string f = p + (decoder ? "2" : "1");
    if (decoder) {
      b.cross_norm = norm(p + "1.layer_norm", why);
      b.cross_q = linear(p + "1.EncDecAttention.q", inner, d, "d_kv·num_heads", "d_model", why);
      b.cross_kv = packed(p + "1.EncDecAttention", {"k", "v"}, why);
      b.cross_o = linear(p + "1.EncDecAttention.o", d, inner, "d_model", "d_kv·num_heads", why);
    }
    b.ff_norm = norm(f + ".layer_norm", why);
    const std::string ffw = why + (t.gated ? ", feed_forward_proj gated" : ", feed_forward_proj not gated");
    b.wi = linear(f + (t.gated ? ".DenseReluDense.wi_0" : ".DenseReluDense.wi"), ff, d, "d_ff", "d_model", ffw);
    if (t.gated) b.wi_1 = linear(f + ".DenseReluDense.wi_1", ff, d, "d_ff", "d_model", ffw);
    b.wo = linear(f + ".DenseReluDense.wo", d, ff, "d_model", "d_ff", why);
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
  auto w = std::make_unique<T5Weights>();
  const int64_t d = c.d_model, V = c.src_vocab_size;
  w->shared = L.load("shared.weight", {V, d}, "[vocab_size, d_model]", "both T5 stacks embed with it");
  // HF's stacks hold the same Parameter as `shared`; older checkpoints save the copies.
  for (const char* copy : {"encoder.embed_tokens.weight", "decoder.embed_tokens.weight"}) L.ignore(copy);
  w->encoder_bias = B.bias_table("encoder");
  for (uint32_t i = 0; i < c.encoder_layers; ++i)
    w->encoder.push_back(B.block("encoder", i, false, "num_layers is " + std::to_string(c.encoder_layers)));
  w->encoder_norm = B.norm("encoder.final_layer_norm", "every T5 stack ends with it");
  if (!t.lm_head) return w;  // T5EncoderModel

  w->decoder_bias = B.bias_table("decoder");
  for (uint32_t i = 0; i < c.decoder_layers; ++i)
    w->decoder.push_back(B.block("decoder", i, true, "num_decoder_layers is " + std::to_string(c.decoder_layers)));
  // A tied head scales the decoder's output by d_model^-0.5 (T5ForConditionalGeneration):
  // folded into the final norm's γ, which nothing else reads.
  std::vector<float> g = L.fetch("decoder.final_layer_norm.weight", {d}, "[d_model]", "every T5 stack ends with it");
  if (t.tied)
    for (float& x : g) x = float(double(x) / std::sqrt(double(d)));
  w->decoder_norm = L.upload({d}, g, "decoder.final_layer_norm.weight");
  LinearWeights head;
  head.w = t.tied ? w->shared
                  : L.load("lm_head.weight", {V, d}, "[vocab_size, d_model]", "tie_word_embeddings is false");
  if (t.tied) L.ignore("lm_head.weight");  // a tied copy, when saved
  w->lm_head = std::move(head);
  return w;
}

}  // namespace vkf
