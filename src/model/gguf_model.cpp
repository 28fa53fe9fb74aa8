// A GGUF file as the llama family sees a checkpoint directory: llama.cpp's
// metadata keys (general.architecture's ARCH.*) become the config.json keys
// transformers reads, and its tensor names (blk.N.attn_q.weight, ...) become
// transformers' (model.layers.N.self_attn.q_proj.weight, ...). The config then
// goes through the family's own reader, so what it refuses it refuses for both.
#include "model/gguf_model.hpp"

#include <algorithm>
#include <climits>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "model/config_reader.hpp"
#include "model/family.hpp"
#include "model/json_text.hpp"

namespace vkf {
namespace {

/// HF's class for each architecture vkformer reads from GGUF. Mistral's and
/// Mixtral's GGUF files say "llama" (llama.cpp converts them as Llama).
const std::map<std::string, std::string> kArchitectures = {{"llama", "LlamaForCausalLM"},
                                                           {"qwen2", "Qwen2ForCausalLM"}};

std::string known_architectures() {
  std::string s;
  for (const auto& [arch, cls] : kArchitectures) s += (s.empty() ? "" : ", ") + arch;
  return s;
}

}  // namespace

std::string gguf_hf_name(const std::string& name) {
  static const std::map<std::string, std::string> kTop = {{"token_embd.weight", "model.embed_tokens.weight"},
                                                          {"output_norm.weight", "model.norm.weight"},
                                                          {"output.weight", "lm_head.weight"}};
  static const std::map<std::string, std::string> kBlock = {
      {"attn_norm", "input_layernorm"}, {"ffn_norm", "post_attention_layernorm"}, {"attn_q", "self_attn.q_proj"},
      {"attn_k", "self_attn.k_proj"},   {"attn_v", "self_attn.v_proj"},           {"attn_output", "self_attn.o_proj"},
      {"ffn_gate", "mlp.gate_proj"},    {"ffn_up", "mlp.up_proj"},                {"ffn_down", "mlp.down_proj"}};
  if (auto it = kTop.find(name); it != kTop.end()) return it->second;
  // blk.N.PART.KIND
  if (name.rfind("blk.", 0) != 0) return "";
  const size_t a = name.find('.', 4), b = a == std::string::npos ? a : name.rfind('.');
  if (a == std::string::npos || b <= a) return "";
  const std::string block = name.substr(4, a - 4), part = name.substr(a + 1, b - a - 1), kind = name.substr(b + 1);
  if (block.empty() || block.find_first_not_of("0123456789") != std::string::npos) return "";
  const auto it = kBlock.find(part);
  if (it == kBlock.end() || (kind != "weight" && kind != "bias")) return "";
  return "model.layers." + block + "." + it->second + "." + kind;
}

bool is_gguf_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  return f && f.read(magic, 4) && std::memcmp(magic, "GGUF", 4) == 0;
}

ModelConfig gguf_model_config(const GgufFile& f) {
  const std::string& path = f.path();
  const std::string arch = f.get_string("general.architecture");
  const auto cls = kArchitectures.find(arch);
  if (cls == kArchitectures.end())
    throw Error(path + ": general.architecture \"" + printable(arch) + "\" is not supported (" +
                known_architectures() + ")");
  auto key = [&](const char* k) { return arch + "." + k; };
  nlohmann::json j;
  j["model_type"] = arch;
  j["architectures"] = {cls->second};
  j["hidden_size"] = f.get_uint(key("embedding_length"));
  j["intermediate_size"] = f.get_uint(key("feed_forward_length"));
  j["num_hidden_layers"] = f.get_uint(key("block_count"));
  const uint64_t heads = f.get_uint(key("attention.head_count"));
  j["num_attention_heads"] = heads;
  j["num_key_value_heads"] = f.has(key("attention.head_count_kv")) ? f.get_uint(key("attention.head_count_kv")) : heads;
  j["max_position_embeddings"] = f.get_uint(key("context_length"));
  j["rms_norm_eps"] = f.get_float(key("attention.layer_norm_rms_epsilon"));
  if (f.has(key("rope.freq_base"))) j["rope_theta"] = f.get_float(key("rope.freq_base"));
  j["vocab_size"] = f.get_strings("tokenizer.ggml.tokens").size();
  for (const char* id : {"bos_token_id", "eos_token_id"})
    if (f.has(std::string("tokenizer.ggml.") + id)) j[id] = f.get_uint(std::string("tokenizer.ggml.") + id);
  j["tie_word_embeddings"] = f.find("output.weight") == nullptr;

  // What a GGUF can say that the family would compute otherwise: refused by key.
  const uint64_t hidden = j["hidden_size"], head_dim = heads ? hidden / heads : 0;
  for (const char* k : {"rope.dimension_count", "attention.key_length", "attention.value_length"})
    if (f.has(key(k)) && f.get_uint(key(k)) != head_dim)
      throw Error(path + ": " + key(k) + " " + std::to_string(f.get_uint(key(k))) +
                  " is not embedding_length / head_count (" + std::to_string(head_dim) +
                  "): partial rotary and other head widths are not supported");
  if (f.has(key("rope.scaling.type"))) {
    const std::string type = f.get_string(key("rope.scaling.type"));
    if (type == "linear") {
      j["rope_scaling"] = {{"type", "linear"}, {"factor", f.get_float(key("rope.scaling.factor"))}};
    } else if (type != "none") {
      throw Error(path + ": " + key("rope.scaling.type") + " \"" + printable(type) + "\" is not supported (none, linear)");
    }
  }
  // Llama 3.1's RoPE frequency factors: llama.cpp's converter writes rope_scaling "llama3" as
  // a tensor, and ggml's rope divides each frequency by its factor. Its type is checked here,
  // its shape where the llama family reads it (families/llama/weights.cpp).
  if (const GgufTensor* t = f.find("rope_freqs.weight"); t && t->type != GgmlType::F32)
    throw Error(path + ": tensor \"rope_freqs.weight\" (Llama 3.1's RoPE frequency factors) is " +
                ggml_type_name(t->type) + ", expected F32 [" + std::to_string(head_dim / 2) + "] (head_dim / 2)");

  const ConfigReader r(path, j);
  ModelConfig c;
  c.model_type = arch;
  const Family* family = find_family(c.model_type);
  if (!family) r.fail(unknown_model_type(c.model_type));
  family->read_config(r, c);
  c.rope_interleaved = arch == "llama";  // llama.cpp's converter permuted Q and K for it; qwen2: HF's halves
  return c;
}

text::GgufVocab gguf_vocab(const GgufFile& f) {
  text::GgufVocab v;
  v.path = f.path();
  const std::string k = "tokenizer.ggml.";
  auto str = [&](const char* key) { return f.has(k + key) ? f.get_string(k + key) : std::string(); };
  v.model = str("model");
  v.pre = str("pre");
  if (f.has(k + "tokens")) v.tokens = f.get_strings(k + "tokens");
  if (f.has(k + "scores"))
    for (double s : f.get_floats(k + "scores")) v.scores.push_back(float(s));
  if (f.has(k + "token_type"))
    for (int64_t t : f.get_ints(k + "token_type")) v.token_types.push_back(int32_t(std::clamp<int64_t>(t, INT32_MIN, INT32_MAX)));
  if (f.has(k + "merges")) v.merges = f.get_strings(k + "merges");
  for (auto [key, id] : {std::pair{"bos_token_id", &v.bos_id}, {"eos_token_id", &v.eos_id},
                         {"unknown_token_id", &v.unk_id}, {"padding_token_id", &v.pad_id},
                         {"seperator_token_id", &v.sep_id}, {"cls_token_id", &v.cls_id}, {"mask_token_id", &v.mask_id}})
    if (f.has(k + key)) *id = int64_t(std::min<uint64_t>(f.get_uint(k + key), uint64_t(INT64_MAX)));
  for (auto [key, flag] : {std::pair{"add_bos_token", &v.add_bos}, {"add_eos_token", &v.add_eos},
                           {"add_space_prefix", &v.add_space_prefix}})
    if (f.has(k + key)) *flag = f.get_bool(k + key);
  return v;
}

std::string gguf_chat_template(const GgufFile& f) {
  return f.has("tokenizer.chat_template") ? f.get_string("tokenizer.chat_template") : std::string();
}

SafeTensorsFile gguf_tensors(std::shared_ptr<const GgufFile> file) {
  std::map<std::string, SafeTensor> tensors;
  // Offsets from the data section's start (each tensor's data less its offset).
  const std::vector<GgufTensor>& all = file->tensors();
  const uint8_t* data = all.empty() ? nullptr : all[0].data - all[0].offset;
  for (const GgufTensor& t : all) {
    const std::string name = gguf_hf_name(t.name);
    const std::string as = name.empty() ? t.name : name;  // unknown ones are warned about as unused
    SafeTensor s;
    s.dtype = ggml_type_name(t.type);
    s.shape = t.shape;
    s.offset = t.offset;
    s.bytes = t.bytes;
    tensors.emplace(as, std::move(s));
  }
  const uint64_t size = file->file_size() - file->data_start();
  const std::string path = file->path();
  return SafeTensorsFile::from_tensors(path, std::move(tensors), std::move(file), data, size);
}

}  // namespace vkf
