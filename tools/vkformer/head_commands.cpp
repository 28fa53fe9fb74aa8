#include "head_commands.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "encoder_input.hpp"
#include "model_commands.hpp"
#include "text_input.hpp"
#include "usage_error.hpp"
#include "vkformer/model_dir.hpp"

namespace vkf::tools {
namespace {

using json = nlohmann::json;

/// What the commands share: the texts tokenized, the model loaded, the head's
/// output of every text (forward() in batches, one submission each).
struct HeadRun {
  std::unique_ptr<Context> ctx;  ///< first: destroyed after the model
  std::vector<std::string> texts;
  std::shared_ptr<const Tokenizer> tok;
  std::shared_ptr<Model> model;
  ModelInfo info;
  std::vector<Ids> ids;
  std::vector<ForwardOutput> outs;  ///< one per batch
  std::vector<std::pair<size_t, size_t>> where;  ///< text -> (batch, row)

  /// Row `pos` of text i's output (dim values).
  const float* row(size_t i, size_t pos) const {
    const ForwardOutput& o = outs[where[i].first];
    return o.data.data() + (size_t(where[i].second) * o.len + pos) * o.dim;
  }
};

HeadRun run_head(const ContextOptions& ctx_opts, const HeadOptions& o, const char* command,
                 std::vector<std::string> heads, const char* needs) {
  if (o.batch_size < 1) throw UsageError("--batch-size must be at least 1");
  HeadRun r;
  r.texts = read_texts(o.texts, o.input);
  if (r.texts.empty()) throw UsageError("give at least one text (as arguments, --input FILE or stdin)");
  r.tok = ModelDir::open(o.model_dir, TokenizerUse::Required).tokenizer();  // before the device: fails fast
  r.ctx = std::make_unique<Context>(ctx_opts);
  r.model = load_model(*r.ctx, o.model_dir, o.precision);
  r.info = r.model->info();
  if (std::find(heads.begin(), heads.end(), r.info.head) == heads.end())
    throw Error(o.model_dir + "/config.json: " + command + " needs " + needs + "; the model is " +
                (r.info.architecture.empty() ? "a \"" + r.model->config().model_type + "\" model"
                                             : "a " + r.info.architecture));
  r.ids = encode_texts(*r.tok, r.info, r.texts);
  Session session(r.model);
  in_batches(r.ids.size(), o.batch_size, [&](size_t b0, size_t b1) {
    ForwardOutput out = session.forward({r.ids.begin() + std::ptrdiff_t(b0), r.ids.begin() + std::ptrdiff_t(b1)});
    for (size_t i = b0; i < b1; ++i) r.where.emplace_back(r.outs.size(), i - b0);
    r.outs.push_back(std::move(out));
  });
  return r;
}

/// Scores of one row of logits as HF's pipelines compute them (fp64 on the host).
std::vector<double> scores(const float* logits, size_t n, const std::string& fn) {
  std::vector<double> s(logits, logits + n);
  if (fn == "sigmoid") {
    for (double& x : s) x = 1 / (1 + std::exp(-x));
  } else if (fn == "softmax") {
    const double m = *std::max_element(s.begin(), s.end());
    double sum = 0;
    for (double& x : s) sum += (x = std::exp(x - m));
    for (double& x : s) x /= sum;
  }
  return s;
}

/// The k best indices of s, best first (ties: the lower index).
std::vector<size_t> best(const std::vector<double>& s, size_t k) {
  std::vector<size_t> idx(s.size());
  std::iota(idx.begin(), idx.end(), 0);
  k = std::min(k, idx.size());
  std::partial_sort(idx.begin(), idx.begin() + std::ptrdiff_t(k), idx.end(),
                    [&](size_t a, size_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); });
  idx.resize(k);
  return idx;
}

}  // namespace

int run_classify(const ContextOptions& ctx_opts, const HeadOptions& o) {
  const HeadRun r = run_head(ctx_opts, o, "classify", {"sequence_classification", "token_classification"},
                             "a sequence or token classifier (*ForSequenceClassification, *ForTokenClassification)");
  const size_t k = o.top_k ? o.top_k : 1, n = r.info.labels.size();
  const bool tokens = r.info.head == "token_classification";
  json all = json::array();
  for (size_t i = 0; i < r.texts.size(); ++i) {
    json one = json::array();
    if (!o.json) std::printf("%s\n", r.texts[i].c_str());
    if (!tokens) {
      const std::vector<double> s = scores(r.row(i, 0), n, r.info.score);
      for (size_t l : best(s, k)) {
        one.push_back({{"label", r.info.labels[l]}, {"score", s[l]}});
        if (!o.json) std::printf("  %-24s %.4f\n", r.info.labels[l].c_str(), s[l]);
      }
    } else {  // each token's best label, as the pipeline's "none" aggregation: special tokens and "O" left out
      for (size_t t = 0; t < r.ids[i].size(); ++t) {
        if (r.tok->decode({r.ids[i][t]}, true).empty()) continue;
        const std::vector<double> s = scores(r.row(i, t), n, "softmax");
        const size_t l = best(s, 1)[0];
        if (r.info.labels[l] == "O") continue;
        const std::string word = r.tok->id_to_token(r.ids[i][t]);
        one.push_back({{"entity", r.info.labels[l]}, {"score", s[l]}, {"index", t}, {"word", word}});
        if (!o.json) std::printf("  %-20s %-16s %.4f\n", word.c_str(), r.info.labels[l].c_str(), s[l]);
      }
    }
    all.push_back(std::move(one));
  }
  if (o.json) std::printf("%s\n", all.dump().c_str());
  return 0;
}

int run_fill_mask(const ContextOptions& ctx_opts, const HeadOptions& o) {
  const HeadRun r = run_head(ctx_opts, o, "fill-mask", {"masked_lm"}, "a masked language model (*ForMaskedLM)");
  const auto mask = r.tok->special_token("mask_token");
  const auto mask_id = mask ? r.tok->token_to_id(*mask) : std::nullopt;
  if (!mask_id) throw Error(o.model_dir + ": the tokenizer has no mask token (tokenizer_config.json \"mask_token\")");
  const size_t k = o.top_k ? o.top_k : 5, V = r.model->output_dim();
  json all = json::array();
  for (size_t i = 0; i < r.texts.size(); ++i) {
    json one = json::array();
    if (!o.json) std::printf("%s\n", r.texts[i].c_str());
    size_t masks = 0;
    for (size_t t = 0; t < r.ids[i].size(); ++t) {
      if (r.ids[i][t] != *mask_id) continue;
      ++masks;
      const std::vector<double> s = scores(r.row(i, t), V, "softmax");
      json fills = json::array();
      for (size_t id : best(s, k)) {
        Ids filled = r.ids[i];
        filled[t] = int32_t(id);
        const std::string token = r.tok->decode({int32_t(id)}, false), sequence = r.tok->decode(filled, true);
        fills.push_back({{"score", s[id]}, {"token", id}, {"token_str", token}, {"sequence", sequence}});
        if (!o.json) std::printf("  %.4f  %-16s %s\n", s[id], token.c_str(), sequence.c_str());
      }
      one.push_back(std::move(fills));
    }
    if (masks == 0)
      throw Error("text #" + std::to_string(i + 1) + " has no mask token " + *mask + " (after truncation)");
    all.push_back(masks == 1 ? json(one[0]) : one);  // as the pipeline: a list per mask only when there are several
  }
  if (o.json) std::printf("%s\n", all.dump().c_str());
  return 0;
}

}  // namespace vkf::tools
