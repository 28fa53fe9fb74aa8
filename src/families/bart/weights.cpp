// HF's tensor names for BART, Marian and mBART. *ForConditionalGeneration and
// MarianMTModel prefix the base model's names with "model."; a bare *Model's
// have no prefix. Both are read. Everything is mapped onto TransformerWeights
// once, at load: q/k/v projections concatenated into the fused QKV the stack
// takes (cross-attention: K and V), BART's learned position table sliced past
// its offset of 2, Marian's sinusoid computed; nothing is left for run time.
#include "families/bart/config.hpp"
#include "families/bart/family.hpp"
#include "families/transformer/weights.hpp"

namespace vkf {
namespace {

/// PREFIX.{a,b,...}_proj concatenated by rows: one [n·d, d] weight and [n·d] bias.
LinearWeights fused(Loader& L, const std::string& prefix, const std::vector<const char*>& parts, int64_t d,
                    const std::string& why) {
  std::vector<Loader::MatrixPart> matrices;
  std::vector<float> b;
  std::string names;
  for (const char* part : parts) {
    const std::string p = prefix + part + "_proj";
    matrices.push_back({p + ".weight", d, "d_model, d_model"});
    const std::vector<float> pb = L.fetch(p + ".bias", {d}, "[d_model]", why);
    b.insert(b.end(), pb.begin(), pb.end());
    names += std::string(names.empty() ? "" : ",") + part;
  }
  const int64_t n = int64_t(parts.size());
  const std::string name = prefix + "{" + names + "}_proj";
  LinearWeights out = L.stacked_matrix(matrices, d, why, name + ".weight");
  out.b = L.upload({n * d}, b, name + ".bias");
  return out;
}

/// The first of `names` the files hold (else the first, so that the error names it).
std::string first_present(const Loader& L, const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (L.has(n)) return n;
  return names[0];
}

/// BART's learned positions: a table of max_position_embeddings + 2 rows, read at
/// position + 2 (HF's BartLearnedPositionalEmbedding offset); the first 2 rows are never read.
Tensor learned_positions(Loader& L, const std::string& name, const ModelConfig& c, const std::string& why) {
  const int64_t rows = int64_t(c.max_positions) + 2, d = c.d_model;
  L.check_position_table(c, d);  // the rows bound are max_position_embeddings
  const std::vector<float> t = L.fetch(name, {rows, d}, "[max_position_embeddings + 2, d_model]", why);
  return L.upload_part({rows - 2, d}, t, size_t(2 * d), t.size(), name + " (rows 2...)");
}

/// L.self_attn.{q,k,v,out}_proj and L.self_attn_layer_norm: a layer's self-attention.
void self_attention(Loader& L, const std::string& l, int64_t d, const std::string& why, LinearWeights& qkv,
                    LinearWeights& out, NormWeights& norm) {
  qkv = fused(L, l + "self_attn.", {"q", "k", "v"}, d, why);
  out = L.linear(l + "self_attn.out_proj", d, d, "d_model", "d_model", why);
  norm = L.norm(l + "self_attn_layer_norm", d, why);
}

/// L.fc1, L.fc2 and L.final_layer_norm: a layer's feed-forward block (`ff` names its width's key).
void feed_forward(Loader& L, const std::string& l, int64_t d, int64_t ff, const std::string& ff_key,
                  const std::string& why, LinearWeights& fc1, LinearWeights& fc2, NormWeights& norm) {
  fc1 = L.linear(l + "fc1", ff, d, ff_key, "d_model", why);
  fc2 = L.linear(l + "fc2", d, ff, "d_model", ff_key, why);
  norm = L.norm(l + "final_layer_norm", d, why);
}

}  // namespace

std::unique_ptr<ModelWeights> BartFamily::build_weights(Loader& L, const ModelConfig& c) const {
  const BartConfig& b = bart_config(c);
  const int64_t d = c.d_model, ff = c.d_ff;
  const bool marian = c.model_type == "marian", mbart = c.model_type == "mbart";
  const std::string why = "model_type is \"" + c.model_type + "\"";
  const std::string p = L.has("model.decoder.layers.0.fc1.weight") ? "model." : "";
  auto w = std::make_unique<TransformerWeights>();

  // Token embeddings: HF saves a tied table under one of its names.
  if (b.shared_embeddings) {
    const std::vector<std::string> names{p + "shared.weight", p + "encoder.embed_tokens.weight",
                                         p + "decoder.embed_tokens.weight"};
    const std::string name = first_present(L, names);
    w->src_embed = L.load(name, {c.src_vocab_size, d}, "[vocab_size, d_model]", why);
    w->tgt_embed = w->src_embed;
    for (const std::string& n : names) L.ignore(n);
  } else {
    const std::string why_s = why + " with share_encoder_decoder_embeddings false";
    w->src_embed = L.load(p + "encoder.embed_tokens.weight", {c.src_vocab_size, d}, "[vocab_size, d_model]", why_s);
    w->tgt_embed = L.load(p + "decoder.embed_tokens.weight", {c.tgt_vocab_size, d}, "[decoder_vocab_size, d_model]",
                          why_s);
    L.ignore(p + "shared.weight");
  }

  if (marian) {  // computed (HF does not save them either)
    w->src_pos = w->tgt_pos = position_table(L, c);
    L.ignore(p + "encoder.embed_positions.weight");
    L.ignore(p + "decoder.embed_positions.weight");
  } else {
    w->src_pos = learned_positions(L, p + "encoder.embed_positions.weight", c, why);
    w->tgt_pos = learned_positions(L, p + "decoder.embed_positions.weight", c, why);
    w->src_embed_norm = L.norm(p + "encoder.layernorm_embedding", d, why);
    w->tgt_embed_norm = L.norm(p + "decoder.layernorm_embedding", d, why);
  }

  for (uint32_t i = 0; i < c.encoder_layers; ++i) {
    const std::string l = p + "encoder.layers." + std::to_string(i) + ".";
    const std::string why_l = "encoder_layers is " + std::to_string(c.encoder_layers);
    EncoderLayerWeights e;
    self_attention(L, l, d, why_l, e.qkv, e.attn_out, e.norm1);
    feed_forward(L, l, d, ff, "encoder_ffn_dim", why_l, e.ff1, e.ff2, e.norm2);
    w->encoder.push_back(std::move(e));
  }
  for (uint32_t i = 0; i < c.decoder_layers; ++i) {
    const std::string l = p + "decoder.layers." + std::to_string(i) + ".";
    const std::string why_l = "decoder_layers is " + std::to_string(c.decoder_layers);
    DecoderLayerWeights e;
    self_attention(L, l, d, why_l, e.self_qkv, e.self_out, e.norm1);
    e.cross_q = L.linear(l + "encoder_attn.q_proj", d, d, "d_model", "d_model", why_l);
    e.cross_kv = fused(L, l + "encoder_attn.", {"k", "v"}, d, why_l);
    e.cross_out = L.linear(l + "encoder_attn.out_proj", d, d, "d_model", "d_model", why_l);
    e.norm2 = L.norm(l + "encoder_attn_layer_norm", d, why_l);
    feed_forward(L, l, d, ff, "decoder_ffn_dim", why_l, e.ff1, e.ff2, e.norm3);
    w->decoder.push_back(std::move(e));
  }
  if (mbart) {  // pre-LN: each stack ends with a norm
    w->encoder_norm = L.norm(p + "encoder.layer_norm", d, why);
    w->decoder_norm = L.norm(p + "decoder.layer_norm", d, why);
  }

  if (b.lm_head) {
    // Tied: the head is the decoder's embedding, whatever lm_head.weight holds (HF ties them on load).
    LinearWeights head;
    if (b.tied) {
      head.w = w->tgt_embed;
      L.ignore("lm_head.weight");
    } else {
      head.w = L.load_matrix("lm_head.weight", {c.tgt_vocab_size, d}, "[vocab_size, d_model]",
                             b.architecture + " with tie_word_embeddings false");
    }
    // final_logits_bias is a buffer HF may leave out (zeros then): the head's bias.
    if (L.has("final_logits_bias")) {
      const std::vector<float> bias = L.fetch("final_logits_bias", {1, c.tgt_vocab_size}, "[1, vocab_size]", why);
      head.b = L.upload({c.tgt_vocab_size}, bias, "final_logits_bias");
    }
    w->generator = std::move(head);
  } else {
    L.ignore("final_logits_bias");
  }
  return w;
}

}  // namespace vkf
