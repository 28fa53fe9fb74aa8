// HF's tensor names for BERT, RoBERTa / XLM-RoBERTa and DistilBERT. A head's
// checkpoint prefixes the base model's names ("bert.", "roberta.",
// "distilbert."); a bare *Model's does not. Both are read.
#include "families/bert/weights.hpp"

#include "families/bert/config.hpp"
#include "families/bert/family.hpp"

namespace vkf {
namespace {

/// Query, key and value [d, d] each, packed as the qkv projection [3d, d] the layers use.
LinearWeights packed_qkv(Loader& L, const std::string& p, const char* const names[3], int64_t d,
                         const std::string& why) {
  std::vector<Loader::MatrixPart> parts;
  std::vector<float> b;
  for (int i = 0; i < 3; ++i) {
    parts.push_back({p + names[i] + ".weight", d, "hidden_size, hidden_size"});
    auto bi = L.fetch(p + names[i] + ".bias", {d}, "[hidden_size]", why);
    b.insert(b.end(), bi.begin(), bi.end());
  }
  LinearWeights out = L.stacked_matrix(parts, d, why, p + names[0] + "/key/value");
  out.b = L.upload({3 * d}, b, p + "qkv bias");
  return out;
}

/// The first of `names` the file holds (the others, when present too, are the same tied tensor).
std::string first_present(const Loader& L, std::initializer_list<std::string> names) {
  for (const std::string& n : names)
    if (L.has(n)) return n;
  return *names.begin();
}

void build_head(Loader& L, const ModelConfig& c, const BertConfig& b, const std::string& prefix, BertWeights& w) {
  const int64_t d = c.d_model, labels = b.num_labels, V = c.src_vocab_size;
  const std::string why = "architectures is " + b.architecture;
  const bool distil = b.flavor == BertFlavor::DistilBert, roberta = b.flavor == BertFlavor::Roberta;
  switch (b.head) {
    case BertHead::None:
      return;
    case BertHead::TokenClassification:
      w.head_out = L.linear("classifier", labels, d, "num_labels", "hidden_size", why);
      return;
    case BertHead::SequenceClassification:
      if (roberta) {
        w.head_dense = L.linear("classifier.dense", d, d, "hidden_size", "hidden_size", why);
        w.head_out = L.linear("classifier.out_proj", labels, d, "num_labels", "hidden_size", why);
      } else {
        if (distil) w.head_dense = L.linear("pre_classifier", d, d, "dim", "dim", why);
        else if (!w.pooler) L.fetch(prefix + "pooler.dense.weight", {d, d}, "[hidden_size, hidden_size]", why);
        w.head_out = L.linear("classifier", labels, d, "num_labels", "hidden_size", why);
      }
      return;
    case BertHead::MaskedLM: {
      const std::string p = distil ? "" : roberta ? "lm_head." : "cls.predictions.";
      w.head_dense = L.linear(p + (distil ? "vocab_transform" : roberta ? "dense" : "transform.dense"), d, d,
                              "hidden_size", "hidden_size", why);
      w.head_norm = L.norm(p + (distil ? "vocab_layer_norm" : roberta ? "layer_norm" : "transform.LayerNorm"), d, why);
      const std::string dec = p + (distil ? "vocab_projector" : "decoder");
      // Tied to the word embeddings, so save_pretrained leaves the weight out.
      w.head_out.w =
          L.has(dec + ".weight") ? L.load_matrix(dec + ".weight", {V, d}, "[vocab_size, hidden_size]", why) : w.word;
      const std::string bias = distil ? dec + ".bias" : first_present(L, {p + "bias", dec + ".bias"});
      w.head_out.b = L.load(bias, {V}, "[vocab_size]", why);
      return;
    }
  }
}

}  // namespace

std::unique_ptr<ModelWeights> BertFamily::build_weights(Loader& L, const ModelConfig& c) const {
  const BertConfig& b = bert_config(c);
  const bool distil = b.flavor == BertFlavor::DistilBert;
  const int64_t d = c.d_model, ff = c.d_ff;
  const std::string why = "model_type is \"" + c.model_type + "\"";
  const std::string prefix = L.has(std::string(bert_prefix(b.flavor)) + "embeddings.word_embeddings.weight")
                                 ? bert_prefix(b.flavor) : "";
  auto w = std::make_unique<BertWeights>();
  const std::string e = prefix + "embeddings.";
  w->word = L.load(e + "word_embeddings.weight", {c.src_vocab_size, d}, "[vocab_size, hidden_size]", why);
  L.check_position_table(c, d);
  w->position = L.load(e + "position_embeddings.weight", {c.max_positions, d},
                       "[max_position_embeddings, hidden_size]", why);
  if (b.type_vocab_size > 0)
    w->type = L.load(e + "token_type_embeddings.weight", {b.type_vocab_size, d}, "[type_vocab_size, hidden_size]",
                     "type_vocab_size is " + std::to_string(b.type_vocab_size));
  w->embed_norm = L.norm(e + "LayerNorm", d, why);
  L.ignore(e + "position_ids");  // a buffer older transformers saved (0, 1, ...); computed here
  static const char* const kBertQkv[3] = {"attention.self.query", "attention.self.key", "attention.self.value"};
  static const char* const kDistilQkv[3] = {"attention.q_lin", "attention.k_lin", "attention.v_lin"};
  for (uint32_t i = 0; i < c.encoder_layers; ++i) {
    const std::string p = prefix + (distil ? "transformer.layer." : "encoder.layer.") + std::to_string(i) + ".";
    const std::string why_l = "the model has " + std::to_string(c.encoder_layers) + " layers";
    EncoderLayerWeights l;
    l.qkv = packed_qkv(L, p, distil ? kDistilQkv : kBertQkv, d, why_l);
    l.attn_out = L.linear(p + (distil ? "attention.out_lin" : "attention.output.dense"), d, d, "hidden_size",
                          "hidden_size", why_l);
    l.norm1 = L.norm(p + (distil ? "sa_layer_norm" : "attention.output.LayerNorm"), d, why_l);
    l.ff1 = L.linear(p + (distil ? "ffn.lin1" : "intermediate.dense"), ff, d, "intermediate_size", "hidden_size", why_l);
    l.ff2 = L.linear(p + (distil ? "ffn.lin2" : "output.dense"), d, ff, "hidden_size", "intermediate_size", why_l);
    l.norm2 = L.norm(p + (distil ? "output_layer_norm" : "output.LayerNorm"), d, why_l);
    w->layers.push_back(std::move(l));
  }
  std::string why_pooler;
  if (!distil && L.present(prefix + "pooler.dense", why_pooler))
    w->pooler = L.linear(prefix + "pooler.dense", d, d, "hidden_size", "hidden_size", why_pooler);
  build_head(L, c, b, prefix, *w);
  return w;
}

}  // namespace vkf
