// HF's tensor names for GPT-2. GPT2LMHeadModel prefixes the base model's
// names with "transformer."; a bare GPT2Model's have no prefix. Both are read.
// GPT-2's Conv1D stores weights [in, out], the transpose of nn.Linear's: they
// are transposed once at load, on the host (Loader::load_transposed_matrix), so
// the layers are the transformer family's, with no extra pass at run time.
#include "families/gpt2/config.hpp"
#include "families/gpt2/family.hpp"
#include "families/transformer/weights.hpp"

namespace vkf {
namespace {

/// PREFIX.weight [in, out] and PREFIX.bias [out], as the LinearWeights [out, in] the GEMM takes.
LinearWeights conv1d(Loader& L, const std::string& prefix, int64_t in, int64_t out, const std::string& in_name,
                     const std::string& out_name, const std::string& why) {
  return {L.load_transposed_matrix(prefix + ".weight", out, in, out_name, in_name, why),
          L.load(prefix + ".bias", {out}, "[" + out_name + "]", why)};
}

}  // namespace

std::unique_ptr<ModelWeights> Gpt2Family::build_weights(Loader& L, const ModelConfig& c) const {
  const Gpt2Config& g = gpt2_config(c);
  const int64_t d = c.d_model, ff = c.d_ff, V = c.src_vocab_size;
  const std::string why = "model_type is \"gpt2\"";
  const std::string p = L.has("transformer.wte.weight") ? "transformer." : "";
  auto w = std::make_unique<TransformerWeights>();
  w->src_embed = L.load(p + "wte.weight", {V, d}, "[vocab_size, n_embd]", why);
  L.check_position_table(c, d);
  w->src_pos = L.load(p + "wpe.weight", {c.max_positions, d}, "[n_positions, n_embd]", why);
  for (uint32_t i = 0; i < c.encoder_layers; ++i) {
    const std::string h = p + "h." + std::to_string(i) + ".";
    const std::string why_l = "n_layer is " + std::to_string(c.encoder_layers);
    EncoderLayerWeights l;
    l.norm1 = L.norm(h + "ln_1", d, why_l);
    l.qkv = conv1d(L, h + "attn.c_attn", d, 3 * d, "n_embd", "3·n_embd", why_l);
    l.attn_out = conv1d(L, h + "attn.c_proj", d, d, "n_embd", "n_embd", why_l);
    l.norm2 = L.norm(h + "ln_2", d, why_l);
    l.ff1 = conv1d(L, h + "mlp.c_fc", d, ff, "n_embd", "n_inner", why_l);
    l.ff2 = conv1d(L, h + "mlp.c_proj", ff, d, "n_inner", "n_embd", why_l);
    L.ignore(h + "attn.bias");         // the causal-mask buffer older transformers saved
    L.ignore(h + "attn.masked_bias");  // and its fill value
    w->encoder.push_back(std::move(l));
  }
  w->encoder_norm = L.norm(p + "ln_f", d, why);
  if (g.lm_head) {
    // Tied: save_pretrained leaves lm_head.weight out; the head is wte. No bias.
    LinearWeights head;
    head.w = !g.tied || L.has("lm_head.weight")
                 ? L.load_matrix("lm_head.weight", {V, d}, "[vocab_size, n_embd]",
                          "architectures is GPT2LMHeadModel with tie_word_embeddings false")
                 : w->src_embed;
    w->generator = std::move(head);
  }
  return w;
}

}  // namespace vkf
