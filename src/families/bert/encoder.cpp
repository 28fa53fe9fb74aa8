// The bert family's pass, as dispatches:
//
//   x = LayerNorm(word[id] + position[pos] + type[t])    pos: 0.. (RoBERTa: pad+1.., skipping pads)
//   x = post-LN encoder layers (the transformer family's), padding masked as keys
//   then one of: x (last hidden state); tanh(pooler(x[:, 0])); a head's logits;
//   or sentence-transformers pooling (+ L2 normalization) for embed().
#include <cmath>

#include "families/bert/config.hpp"
#include "families/bert/family.hpp"
#include "families/bert/weights.hpp"
#include "families/transformer/stack.hpp"

namespace vkf {
namespace {

/// PlanKey::mode: what a pass ends with.
enum Mode : uint32_t { kHead = 0, kHidden = 1, kPooler = 2, kEmbed = 16 };  // kEmbed + PoolMode (+ kNormalize)
constexpr uint32_t kNormalize = 8;

/// inputs: ids, type ids, position ids, key padding (1 past a sequence's end), [B, L] i32 each.
struct BertPlan : Plan {
  Task task = Task::Forward;
  uint32_t mode = kHidden;
  Activations a;
  Tensor pooled;   ///< [B, d]: the first row, or the pooling
  Tensor dense;    ///< [B, 1, d] or [B, L, d]: the pooler's or the head's dense layer
  Tensor normed;   ///< [B, L, d]: the LM transform after its LayerNorm
};

const BertWeights& weights_of(const Model& m) { return static_cast<const BertWeights&>(m.weights()); }

bool sequence_level(const BertConfig& b, uint32_t mode) {
  return mode == kPooler || (mode == kHead && b.head == BertHead::SequenceClassification);
}

PoolMode pool_mode(const std::string& s, const std::string& model_type) {
  if (s == "mean") return PoolMode::Mean;
  if (s == "cls") return PoolMode::First;
  if (s == "max") return PoolMode::Max;
  if (s == "mean_sqrt_len") return PoolMode::MeanSqrtLen;
  if (s.empty())
    throw Error("embed: this \"" + model_type + "\" model has no sentence-transformers pooling (modules.json, "
                "1_Pooling); choose one: mean, cls, max or mean_sqrt_len");
  throw Error("embed: unknown pooling \"" + s + "\" (mean, cls, max, mean_sqrt_len)");
}

uint32_t mode_of(Task task, const Model& m, const RunOptions& o) {
  const BertConfig& b = bert_config(m.config());
  if (task == Task::Embed) {
    if (!o.output.empty()) throw Error("embed: output \"" + o.output + "\" is for forward(); embed() pools");
    const uint32_t pool = uint32_t(pool_mode(o.pooling.empty() ? b.pooling : o.pooling, m.config().model_type));
    const bool norm = o.normalize == -1 ? b.normalize : o.normalize != 0;
    return kEmbed + pool + (norm ? kNormalize : 0);
  }
  if (!o.pooling.empty() || o.normalize != -1) throw Error("forward: pooling is for embed()");
  if (o.output.empty()) return b.head == BertHead::None ? kHidden : kHead;
  if (o.output == "hidden") return kHidden;
  if (o.output == "pooler") {
    if (!weights_of(m).pooler) throw Error("output \"pooler\": the model has no pooler (no pooler.dense tensors)");
    return kPooler;
  }
  throw Error("unknown output \"" + o.output + "\" (hidden, pooler, or \"\" for the model's own)");
}

}  // namespace

std::string BertFamily::refusal(Task task) const {
  if (task == Task::Generate) return "a \"bert\"-family model is an encoder: it cannot generate";
  return Family::refusal(task);
}

uint32_t BertFamily::output_dim(const Model& m) const {
  const BertConfig& b = bert_config(m.config());
  switch (b.head) {
    case BertHead::SequenceClassification:
    case BertHead::TokenClassification:
      return b.num_labels;
    case BertHead::MaskedLM:
      return m.config().src_vocab_size;
    case BertHead::None:
      break;
  }
  return m.config().d_model;
}

ModelInfo BertFamily::info(const Model& m) const {
  const BertConfig& b = bert_config(m.config());
  ModelInfo i;
  i.architecture = b.architecture;
  const char* heads[] = {"", "sequence_classification", "token_classification", "masked_lm"};
  i.head = heads[int(b.head)];
  i.labels = b.labels;
  i.score = classify_function(b);
  i.max_tokens = b.max_tokens;
  i.max_seq_length = b.max_seq_length;
  i.lowercase = b.do_lower_case;
  i.pooling = b.pooling;
  i.normalize = b.normalize;
  return i;
}

Batch BertFamily::prepare(Task task, const Model& m, const std::vector<Ids>& src, const std::vector<Ids>& tgt,
                          const RunOptions& o) const {
  const ModelConfig& cfg = m.config();
  const BertConfig& b = bert_config(cfg);
  if (!tgt.empty()) throw Error("a \"" + cfg.model_type + "\" model is an encoder: it takes no target sequences");
  if (src.empty()) throw Error("no sequences were given");
  if (!o.type_ids.empty()) {
    if (b.type_vocab_size == 0) throw Error("type ids: a \"" + cfg.model_type + "\" model has no token types");
    if (o.type_ids.size() != src.size())
      throw Error("type ids: " + std::to_string(o.type_ids.size()) + " sequences for " + std::to_string(src.size()) +
                  " sequences of ids");
  }
  const uint32_t mode = mode_of(task, m, o);
  Batch batch;
  uint32_t len = 0;
  for (size_t i = 0; i < src.size(); ++i) {
    const std::string seq = "sequence " + std::to_string(i + 1);
    if (src[i].empty()) throw Error(seq + " is empty");
    if (src[i].size() > b.max_tokens)
      throw Error(seq + ": " + std::to_string(src[i].size()) + " tokens, more than the model's " +
                  std::to_string(b.max_tokens) + " positions (max_position_embeddings); truncate it");
    for (size_t j = 0; j < src[i].size(); ++j)
      if (src[i][j] < 0 || uint32_t(src[i][j]) >= cfg.src_vocab_size)
        throw Error(seq + ": id " + std::to_string(src[i][j]) + " at position " + std::to_string(j) +
                    " is outside the vocabulary [0, " + std::to_string(cfg.src_vocab_size) + ")");
    if (!o.type_ids.empty()) {
      if (o.type_ids[i].size() != src[i].size())
        throw Error("type ids of " + seq + ": " + std::to_string(o.type_ids[i].size()) + " for " +
                    std::to_string(src[i].size()) + " ids");
      for (size_t j = 0; j < src[i].size(); ++j)
        if (o.type_ids[i][j] < 0 || uint32_t(o.type_ids[i][j]) >= b.type_vocab_size)
          throw Error("type ids of " + seq + ": " + std::to_string(o.type_ids[i][j]) + " at position " +
                      std::to_string(j) + " is outside [0, " + std::to_string(b.type_vocab_size) + ") (type_vocab_size)");
    }
    len = std::max(len, uint32_t(src[i].size()));
    batch.lengths.push_back(task == Task::Forward && sequence_level(b, mode) ? 1 : uint32_t(src[i].size()));
  }
  const size_t n = src.size() * size_t(len);
  std::vector<int32_t> ids(n, cfg.pad_id), types(n, 0), pos(n, 0), pad(n, 1);
  const bool roberta = b.flavor == BertFlavor::Roberta;
  for (size_t i = 0; i < src.size(); ++i) {
    int32_t seen = 0;  // RoBERTa: non-pad tokens so far
    for (size_t j = 0; j < len; ++j) {
      const size_t k = i * len + j;
      const bool valid = j < src[i].size();
      if (valid) {
        ids[k] = src[i][j];
        pad[k] = 0;
        if (!o.type_ids.empty()) types[k] = o.type_ids[i][j];
      }
      if (roberta)  // create_position_ids_from_input_ids: pads (also within the text) stay at padding_idx
        pos[k] = valid && ids[k] != cfg.pad_id ? cfg.pad_id + ++seen : cfg.pad_id;
      else
        pos[k] = int32_t(j);
    }
  }
  batch.key = {task, uint32_t(src.size()), len, 0, mode};
  batch.inputs = {std::move(ids), std::move(types), std::move(pos), std::move(pad)};
  return batch;
}

std::unique_ptr<Plan> BertFamily::make_plan(const Model& m, const PlanKey& key) const {
  const ModelConfig& cfg = m.config();
  Context& ctx = m.context();
  auto p = std::make_unique<BertPlan>();
  const int64_t B = key.batch, L = key.len, d = cfg.d_model;
  for (int i = 0; i < 4; ++i) p->inputs.push_back(ctx.tensor({B, L}, DType::I32));
  p->task = key.task;
  p->mode = key.mode;
  p->a = Activations(ctx, cfg, key.batch, key.len);
  p->pooled = ctx.tensor({B, d});
  const BertConfig& b = bert_config(cfg);
  const bool seq = key.task == Task::Forward && sequence_level(b, key.mode);
  p->dense = ctx.tensor({B, seq ? 1 : L, d});
  if (key.task == Task::Forward && key.mode == kHead && b.head == BertHead::MaskedLM) p->normed = ctx.tensor({B, L, d});
  if (key.task == Task::Embed)
    p->out = key.mode & kNormalize ? ctx.tensor({B, d}) : p->pooled;
  else if (key.mode == kPooler)
    p->out = p->dense;
  else if (key.mode == kHead)
    p->out = ctx.tensor({B, seq ? 1 : L, int64_t(output_dim(m))});
  p->what = key.task == Task::Embed ? "an embedding pass" : "a forward pass";
  return p;
}

void BertFamily::record(Recorder& rec, const Model& m, Plan& plan) const {
  auto& p = static_cast<BertPlan&>(plan);
  const ModelConfig& cfg = m.config();
  const BertConfig& b = bert_config(cfg);
  const BertWeights& w = weights_of(m);
  Activations& a = p.a;
  const int64_t B = a.batch, d = cfg.d_model;

  rec.set_scope("embed");
  a.restart();
  EmbeddingArgs e;
  e.ids = &p.inputs[0];
  e.table = &w.word;
  e.positions = &w.position;
  e.position_ids = &p.inputs[2];
  e.out = &a.y();
  embedding(rec, e);
  const Tensor* types = nullptr;
  if (!w.type.empty()) {
    EmbeddingArgs t;
    t.ids = &p.inputs[1];
    t.table = &w.type;
    t.out = &a.n;
    embedding(rec, t);
    types = &a.n;
  }
  layernorm(rec, {&a.y(), types, &w.embed_norm.gamma, &w.embed_norm.beta, &a.x(), cfg.layer_norm_eps, ""});

  StackAttention att;
  att.self.key_padding = &p.inputs[3];
  record_encoder_layers(rec, cfg, w.layers, "encoder", a, att);

  auto first_rows = [&] {  // x[:, 0] as [B, 1, d]
    mean_pool(rec, {&a.x(), nullptr, 0, &p.pooled, "", PoolMode::First});
    return p.pooled.reshaped({B, 1, d});
  };
  if (p.task == Task::Embed) {
    rec.set_scope("pooling");
    mean_pool(rec, {&a.x(), &p.inputs[3], 0, &p.pooled, "", PoolMode((p.mode - kEmbed) & (kNormalize - 1))});
    // F.normalize's max(‖x‖, 1e-12) is √max(Σx², 1e-24).
    if (p.mode & kNormalize) l2_normalize(rec, {&p.pooled, &p.out, 1e-24f, ""});
    return;
  }
  rec.set_scope("head");
  if (p.mode == kHidden) {
    p.out = a.x();
  } else if (p.mode == kPooler) {
    linear(rec, first_rows(), *w.pooler, p.dense, Activation::Tanh);
  } else if (b.head == BertHead::TokenClassification) {
    linear(rec, a.x(), w.head_out, p.out);
  } else if (b.head == BertHead::MaskedLM) {
    linear(rec, a.x(), *w.head_dense, p.dense, b.head_act);
    layer_norm(rec, cfg, *w.head_norm, p.dense, p.normed);
    linear(rec, p.normed, w.head_out, p.out);
  } else if (b.head == BertHead::SequenceClassification) {
    // BERT: the pooler, then the classifier; RoBERTa: dense + tanh, out_proj;
    // DistilBERT: pre_classifier + ReLU, classifier; all over x[:, 0].
    if (b.flavor == BertFlavor::Bert)
      linear(rec, first_rows(), *w.pooler, p.dense, Activation::Tanh);
    else
      linear(rec, first_rows(), *w.head_dense, p.dense,
             b.flavor == BertFlavor::Roberta ? Activation::Tanh : Activation::ReLU);
    linear(rec, p.dense, w.head_out, p.out);
  }
}

}  // namespace vkf
