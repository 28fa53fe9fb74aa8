// config.json as Hugging Face writes it for BERT, RoBERTa, XLM-RoBERTa and
// DistilBERT. HF leaves out keys equal to their defaults, so a missing key
// takes the default of the model's config class, as transformers does.
#include "io/read_file.hpp"
#include "families/bert/config.hpp"

#include <filesystem>
#include <fstream>

#include "families/bert/family.hpp"
#include "model/json_parse.hpp"
#include "model/json_text.hpp"

namespace vkf {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

/// More labels than this are refused (a classifier over a vocabulary has ~10^5).
constexpr uint32_t kMaxLabels = 1000000;

BertFlavor flavor_of(const std::string& model_type) {
  if (model_type == "distilbert") return BertFlavor::DistilBert;
  if (model_type == "roberta" || model_type == "xlm-roberta") return BertFlavor::Roberta;
  return BertFlavor::Bert;
}

/// HF's class-name stem of a model_type ("XLMRoberta" for "xlm-roberta").
std::string class_stem(const std::string& model_type) {
  if (model_type == "xlm-roberta") return "XLMRoberta";
  if (model_type == "distilbert") return "DistilBert";
  if (model_type == "roberta") return "Roberta";
  return "Bert";
}

void read_head(const ConfigReader& r, const std::string& model_type, BertConfig& b) {
  const std::string stem = class_stem(model_type);
  b.architecture = stem + "Model";
  if (r.set("architectures")) {
    const json& a = r.need("architectures");
    if (!a.is_array() || a.empty() || !a[0].is_string())
      r.fail("\"architectures\" must be a list of class names, got " + brief_json(a));
    b.architecture = a[0].get<std::string>();
  }
  const std::pair<const char*, BertHead> heads[] = {{"Model", BertHead::None},
                                                    {"ForSequenceClassification", BertHead::SequenceClassification},
                                                    {"ForTokenClassification", BertHead::TokenClassification},
                                                    {"ForMaskedLM", BertHead::MaskedLM}};
  std::string known;
  for (const auto& [suffix, head] : heads) {
    if (b.architecture == stem + suffix) {
      b.head = head;
      return;
    }
    known += (known.empty() ? "" : ", ") + stem + suffix;
  }
  r.fail("\"architectures\" \"" + printable(b.architecture) + "\" is not supported for model_type \"" +
         model_type + "\" (" + known + ")");
}

void read_labels(const ConfigReader& r, BertConfig& b) {
  if (r.set("id2label")) {
    const json& m = r.need("id2label");
    if (!m.is_object() || m.empty()) r.fail("\"id2label\" must be an object {\"0\": \"label\", ...}");
    b.labels.assign(m.size(), "");
    for (const auto& [k, v] : m.items()) {
      size_t id = m.size();
      try {
        size_t used = 0;
        id = std::stoul(k, &used);
        if (used != k.size()) id = m.size();
      } catch (const std::exception&) {
      }
      if (id >= m.size() || !v.is_string())
        r.fail("\"id2label\" must map the ids 0.." + std::to_string(m.size() - 1) + " to strings, got \"" +
               printable(k) + "\": " + brief_json(v));
      b.labels[id] = v.get<std::string>();
    }
  } else {
    const uint32_t n = r.set("num_labels") ? r.uint("num_labels", 1) : 2;  // PretrainedConfig's default
    if (n > kMaxLabels)  // each gets a name "LABEL_i": 4e9 of them would not fit in memory
      r.fail("\"num_labels\" " + std::to_string(n) + " is more than " + std::to_string(kMaxLabels));
    for (uint32_t i = 0; i < n; ++i) b.labels.push_back("LABEL_" + std::to_string(i));
  }
  b.num_labels = uint32_t(b.labels.size());
  const std::string problem = r.set("problem_type") ? r.string("problem_type") : "";
  if (!problem.empty() && problem != "single_label_classification" && problem != "multi_label_classification" &&
      problem != "regression")
    r.fail("\"problem_type\" \"" + printable(problem) +
           "\" is not one of single_label_classification, multi_label_classification, regression");
  b.problem_type = problem;
}

json read_json(const fs::path& p, const std::string& why) {
  const std::string text = io::read_file(p.string(), why);
  try {
    return parse_json_bounded(text);
  } catch (const json::exception& e) {
    throw Error(p.string() + ": not valid JSON: " + json_error_text(e));
  }
}

/// sentence-transformers: modules.json names the modules; the Transformer is
/// this directory, then Pooling, then an optional Normalize.
void read_sentence_transformers(const fs::path& dir, const ModelConfig& c, BertConfig& b) {
  const fs::path modules_path = dir / "modules.json";
  const std::string where = modules_path.string();
  const json modules = read_json(modules_path, "sentence-transformers modules");
  if (!modules.is_array()) throw Error(where + ": must be a list of modules, got " + brief_json(modules));
  for (size_t i = 0; i < modules.size(); ++i) {
    const json& m = modules[i];
    const std::string entry = where + ": module " + std::to_string(i);
    if (!m.is_object()) throw Error(entry + " must be an object with \"type\" and \"path\", got " + brief_json(m));
    for (const char* key : {"type", "path"})
      if (m.contains(key) && !m[key].is_string())
        throw Error(entry + ": \"" + key + "\" must be a string, got " + brief_json(m[key]));
    const std::string type = m.value("type", "");
    const std::string path = m.value("path", "");
    // A module's folder is inside the model directory: no absolute path, no "..".
    const fs::path rel(path);
    bool outside = rel.is_absolute();
    for (const fs::path& part : rel) outside = outside || part == "..";
    if (outside)
      throw Error(entry + ": \"path\" \"" + printable(path) + "\" is not a folder inside the model directory");
    const std::string kind = type.substr(type.rfind('.') + 1);
    if (kind == "Transformer") {
      if (!path.empty())
        throw Error(where + ": the Transformer module is in \"" + printable(path) +
                    "\"; give that folder as the model (it holds config.json)");
    } else if (kind == "Pooling") {
      const fs::path pc = dir / path / "config.json";
      const json p = read_json(pc, "the Pooling module of modules.json");
      if (!p.is_object()) throw Error(pc.string() + ": must hold a JSON object, got " + brief_json(p));
      auto on = [&](const char* key) {
        if (!p.contains(key) || p[key].is_null()) return false;
        if (!p[key].is_boolean())
          throw Error(pc.string() + ": \"" + key + "\" must be true or false, got " + brief_json(p[key]));
        return p[key].get<bool>();
      };
      const std::pair<const char*, const char*> modes[] = {{"pooling_mode_mean_tokens", "mean"},
                                                           {"pooling_mode_cls_token", "cls"},
                                                           {"pooling_mode_max_tokens", "max"},
                                                           {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len"}};
      for (const auto& [key, mode] : modes)
        if (on(key)) {
          if (!b.pooling.empty())
            throw Error(pc.string() + ": more than one pooling mode (" + b.pooling + " and " + mode +
                        ") is not supported");
          b.pooling = mode;
        }
      for (const char* key : {"pooling_mode_weightedmean_tokens", "pooling_mode_lasttoken"})
        if (on(key)) throw Error(pc.string() + ": \"" + std::string(key) + "\" is not supported (mean, cls, max, mean_sqrt_len)");
      if (b.pooling.empty()) throw Error(pc.string() + ": no pooling mode is true");
      if (p.contains("word_embedding_dimension") && p["word_embedding_dimension"] != json(c.d_model))
        throw Error(pc.string() + ": \"word_embedding_dimension\" " + brief_json(p["word_embedding_dimension"]) +
                    " differs from the model's hidden size " + std::to_string(c.d_model));
    } else if (kind == "Normalize") {
      b.normalize = true;
    } else {
      throw Error(where + ": module \"" + printable(type) + "\" is not supported (Transformer, Pooling, Normalize)");
    }
  }
  if (b.pooling.empty()) throw Error(where + ": lists no Pooling module");
  const fs::path sb = dir / "sentence_bert_config.json";
  std::error_code ec;
  if (fs::exists(sb, ec)) {
    const json s = read_json(sb, "sentence-transformers settings");
    if (!s.is_object()) throw Error(sb.string() + ": must hold a JSON object");
    if (s.contains("max_seq_length") && !s["max_seq_length"].is_null()) {
      if (!s["max_seq_length"].is_number_unsigned() || s["max_seq_length"].get<uint64_t>() == 0)
        throw Error(sb.string() + ": \"max_seq_length\" must be a positive integer, got " + brief_json(s["max_seq_length"]));
      b.max_seq_length = uint32_t(std::min<uint64_t>(s["max_seq_length"].get<uint64_t>(), UINT32_MAX));
    }
    if (s.contains("do_lower_case")) {
      if (!s["do_lower_case"].is_boolean()) throw Error(sb.string() + ": \"do_lower_case\" must be true or false");
      b.do_lower_case = s["do_lower_case"].get<bool>();
    }
  }
}

}  // namespace

const BertConfig& bert_config(const ModelConfig& c) {
  const auto* b = dynamic_cast<const BertConfig*>(c.family_config.get());
  if (!b) throw Error("a \"" + c.model_type + "\" config has no bert settings");
  return *b;
}

const char* classify_function(const BertConfig& b) {
  if (b.problem_type == "regression") return "none";
  if (b.problem_type == "multi_label_classification" || b.num_labels == 1) return "sigmoid";
  return "softmax";
}

const char* bert_prefix(BertFlavor f) {
  return f == BertFlavor::DistilBert ? "distilbert." : f == BertFlavor::Roberta ? "roberta." : "bert.";
}

void BertFamily::read_config(const ConfigReader& r, ModelConfig& c) const {
  auto b = std::make_shared<BertConfig>();
  b->flavor = flavor_of(c.model_type);
  const bool distil = b->flavor == BertFlavor::DistilBert, roberta = b->flavor == BertFlavor::Roberta;
  c.src_vocab_size = r.uint_or("vocab_size", roberta && c.model_type == "roberta" ? 50265 : 30522, 1);
  c.d_model = r.uint_or(distil ? "dim" : "hidden_size", 768, 1);
  c.encoder_layers = r.uint_or(distil ? "n_layers" : "num_hidden_layers", distil ? 6 : 12, 1);
  c.n_heads = r.uint_or(distil ? "n_heads" : "num_attention_heads", 12, 1);
  c.d_ff = r.uint_or(distil ? "hidden_dim" : "intermediate_size", 3072, 1);
  c.max_positions = r.uint_or("max_position_embeddings", 512, 1);
  c.positions_key = "max_position_embeddings";
  c.activation = r.hf_activation(distil ? "activation" : "hidden_act", "gelu");
  c.layer_norm_eps = distil ? 1e-12f : r.set("layer_norm_eps") ? r.positive_float("layer_norm_eps") : 1e-12f;
  c.norm_first = false;  // post-LN, as the paper
  c.positional_encoding = PositionalEncoding::Learned;
  c.pad_id = r.set("pad_token_id") ? r.int32("pad_token_id") : roberta ? 1 : 0;
  if (c.pad_id < 0 || uint32_t(c.pad_id) >= c.src_vocab_size)
    r.fail("\"pad_token_id\" " + std::to_string(c.pad_id) + " is outside the vocabulary [0, " +
           std::to_string(c.src_vocab_size) + ")");
  c.bos_id = c.eos_id = c.pad_id;  // unused: the family does not generate
  r.check_heads(distil ? "dim" : "hidden_size", c.d_model, c.n_heads);

  // 0 would leave out the token type embedding BERT adds to every token (transformers
  // builds an empty table and fails with an index out of range): refused.
  if (!distil && r.set("type_vocab_size") && r.uint("type_vocab_size", 0) == 0)
    r.fail("\"type_vocab_size\" 0 leaves no token type embedding, which every token adds (transformers fails with "
           "an index out of range); it must be at least 1");
  b->type_vocab_size = distil ? 0 : r.uint_or("type_vocab_size", 2, 1);
  b->head_act = distil ? c.activation : roberta ? Activation::GeluErf : c.activation;
  b->max_tokens = c.max_positions;
  if (roberta) {  // positions start at pad + 1 (create_position_ids_from_input_ids)
    if (c.max_positions <= uint32_t(c.pad_id) + 1)
      r.fail("\"max_position_embeddings\" " + std::to_string(c.max_positions) +
             " leaves no position after RoBERTa's offset pad_token_id + 1 = " + std::to_string(c.pad_id + 1));
    b->max_tokens = c.max_positions - uint32_t(c.pad_id) - 1;
  }
  if (r.set("position_embedding_type") && r.string("position_embedding_type") != "absolute")
    r.fail("\"position_embedding_type\" \"" + printable(r.string("position_embedding_type")) +
           "\" is not supported (absolute)");
  for (const char* key : {"is_decoder", "add_cross_attention"})
    if (r.set(key) && r.boolean(key)) r.fail("\"" + std::string(key) + "\": true is not supported (an encoder only)");
  if (distil && r.set("sinusoidal_pos_embds")) r.boolean("sinusoidal_pos_embds");  // the table is saved either way

  read_head(r, c.model_type, *b);
  if (b->head == BertHead::SequenceClassification || b->head == BertHead::TokenClassification) read_labels(r, *b);
  const fs::path dir = fs::path(r.path()).parent_path();
  std::error_code ec;
  if (fs::exists(dir / "modules.json", ec)) read_sentence_transformers(dir, c, *b);
  c.family_config = std::move(b);
}

}  // namespace vkf
