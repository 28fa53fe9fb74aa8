// Writes tiny model directories (config.json + model.safetensors) for the
// loader tests: the tensor names of the PyTorch model, random values, and
// hooks to break any part of them.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "test_util.hpp"
#include "vkformer/tensor.hpp"

namespace vkf::test {

using json = nlohmann::json;

struct FileTensor {
  std::string dtype = "F32";  ///< F32, F16, BF16, I64 (the values as integers), anything else as 4-byte values
  std::vector<int64_t> shape;
  std::vector<float> data;  ///< rounded to the dtype when written
};
using TensorMap = std::map<std::string, FileTensor>;

/// A fresh directory under the test temp dir, removed when the test program ends.
inline std::string temp_dir(const std::string& name) {
  struct Root {
    std::filesystem::path path =
        std::filesystem::path(::testing::TempDir()) / ("vkformer-test-" + std::to_string(::getpid()));
    ~Root() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Root root;
  auto dir = root.path / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path);
}

inline uint16_t float_to_bf16(float f) {  // truncation: tests pick what they expect via file_values()
  uint32_t x;
  std::memcpy(&x, &f, 4);
  return uint16_t(x >> 16);
}

/// What the file holds for `v` stored as `dtype`, read back as fp32.
inline std::vector<float> file_values(const FileTensor& t) {
  std::vector<float> out(t.data.size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (t.dtype == "F16") {
      out[i] = half_to_float(float_to_half(t.data[i]));
    } else if (t.dtype == "BF16") {
      uint32_t x = uint32_t(float_to_bf16(t.data[i])) << 16;
      std::memcpy(&out[i], &x, 4);
    } else {
      out[i] = t.data[i];
    }
  }
  return out;
}

inline std::string encode(const FileTensor& t) {
  std::string b;
  auto put16 = [&](uint16_t h) { b.push_back(char(h & 0xff)), b.push_back(char(h >> 8)); };
  for (float v : t.data) {
    if (t.dtype == "F16") {
      put16(float_to_half(v));
    } else if (t.dtype == "BF16") {
      put16(float_to_bf16(v));
    } else if (t.dtype == "I64") {
      const auto x = uint64_t(int64_t(v));
      for (int k = 0; k < 8; ++k) b.push_back(char((x >> (8 * k)) & 0xff));
    } else {
      uint32_t x;
      std::memcpy(&x, &v, 4);
      for (int k = 0; k < 4; ++k) b.push_back(char((x >> (8 * k)) & 0xff));
    }
  }
  return b;
}

/// An 8-byte little-endian header length, the header, then the data.
inline std::string safetensors_raw(const std::string& header, const std::string& data) {
  std::string b(8, '\0');
  for (int k = 0; k < 8; ++k) b[size_t(k)] = char((uint64_t(header.size()) >> (8 * k)) & 0xff);
  return b + header + data;
}

/// A well-formed file: tensors laid out in name order, no gaps.
inline std::string safetensors_bytes(const TensorMap& tensors, const json& metadata = nullptr) {
  json h = json::object();
  if (!metadata.is_null()) h["__metadata__"] = metadata;
  std::string data;
  for (const auto& [name, t] : tensors) {
    std::string b = encode(t);
    h[name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {data.size(), data.size() + b.size()}}};
    data += b;
  }
  return safetensors_raw(h.dump(), data);
}

enum class Kind { EncDec, EncoderOnly, DecoderOnly };

/// d_model 8, 2 heads, d_ff 16; 2 encoder layers, 1 decoder layer (enc–dec),
/// source vocabulary 11, target vocabulary 13, 16 positions.
inline json tiny_config(Kind kind, const std::string& positional = "sinusoidal") {
  json c = {{"model_type", "transformer"},
            {"d_model", 8},
            {"n_heads", 2},
            {"d_ff", 16},
            {"encoder_layers", 2},
            {"decoder_layers", 0},
            {"activation", "relu"},
            {"norm_first", false},
            {"layer_norm_eps", 1e-5},
            {"src_vocab_size", 11},
            {"max_positions", 16},
            {"positional_encoding", positional},
            {"scale_embeddings", false},
            {"causal", false},
            {"pad_id", 0},
            {"bos_id", 1},
            {"eos_id", 2}};
  if (kind == Kind::EncDec) c["decoder_layers"] = 1, c["tgt_vocab_size"] = 13;
  if (kind == Kind::DecoderOnly) c["causal"] = true;
  return c;
}

struct WeightOptions {
  bool final_norms = true;
  bool generator = true;
  std::string dtype = "F32";
  uint32_t seed = 1;
};

/// Every tensor the config implies, with random values.
inline TensorMap tiny_weights(const json& c, const WeightOptions& o = {}) {
  const int64_t d = c["d_model"], ff = c["d_ff"], src = c["src_vocab_size"], pos = c["max_positions"];
  const int64_t dec = c["decoder_layers"], enc = c["encoder_layers"];
  const int64_t tgt = dec > 0 ? int64_t(c["tgt_vocab_size"]) : 0;
  TensorMap m;
  uint32_t seed = o.seed;
  auto add = [&](const std::string& name, std::vector<int64_t> shape) {
    int64_t n = 1;
    for (int64_t s : shape) n *= s;
    m[name] = {o.dtype, shape, random_vector(size_t(n), seed++)};
  };
  auto linear = [&](const std::string& p, int64_t out, int64_t in) {
    add(p + ".weight", {out, in});
    add(p + ".bias", {out});
  };
  auto norm = [&](const std::string& p) {
    add(p + ".weight", {d});
    add(p + ".bias", {d});
  };
  auto attn = [&](const std::string& p) {
    add(p + ".in_proj_weight", {3 * d, d});
    add(p + ".in_proj_bias", {3 * d});
    linear(p + ".out_proj", d, d);
  };
  add("src_embed.weight", {src, d});
  if (dec > 0) add("tgt_embed.weight", {tgt, d});
  if (c["positional_encoding"] == "learned") {
    add("src_pos.weight", {pos, d});
    if (dec > 0) add("tgt_pos.weight", {pos, d});
  }
  for (int64_t i = 0; i < enc; ++i) {
    const std::string p = "transformer.encoder.layers." + std::to_string(i);
    attn(p + ".self_attn");
    linear(p + ".linear1", ff, d);
    linear(p + ".linear2", d, ff);
    for (const char* n : {".norm1", ".norm2"}) norm(p + n);
  }
  for (int64_t i = 0; i < dec; ++i) {
    const std::string p = "transformer.decoder.layers." + std::to_string(i);
    attn(p + ".self_attn");
    attn(p + ".multihead_attn");
    linear(p + ".linear1", ff, d);
    linear(p + ".linear2", d, ff);
    for (const char* n : {".norm1", ".norm2", ".norm3"}) norm(p + n);
  }
  if (o.final_norms) {
    norm("transformer.encoder.norm");
    if (dec > 0) norm("transformer.decoder.norm");
  }
  if (o.generator) linear("generator", dec > 0 ? tgt : src, d);
  return m;
}

/// DIR/config.json and DIR/model.safetensors; returns DIR.
inline std::string write_model(const std::string& name, const json& config, const TensorMap& tensors) {
  const std::string dir = temp_dir(name);
  write_file(dir + "/config.json", config.dump(2));
  write_file(dir + "/model.safetensors", safetensors_bytes(tensors));
  return dir;
}

/// Hugging Face's shard file name: model-00001-of-00003.safetensors.
inline std::string shard_name(size_t i, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return buf;
}

/// `tensors` dealt round-robin (in name order) into `n` shards, each with the
/// name of the shard it went to.
inline std::vector<TensorMap> split_shards(const TensorMap& tensors, size_t n, std::map<std::string, std::string>* where) {
  std::vector<TensorMap> shards(n);
  size_t k = 0;
  for (const auto& [name, t] : tensors) {
    shards[k % n][name] = t;
    if (where) (*where)[name] = shard_name(k % n, n);
    ++k;
  }
  return shards;
}

/// The index as save_pretrained writes it, for shards made by split_shards.
inline json shard_index(const TensorMap& tensors, size_t n) {
  std::map<std::string, std::string> where;
  split_shards(tensors, n, &where);
  size_t total = 0;
  for (const auto& [name, t] : tensors) total += encode(t).size();
  return {{"metadata", {{"total_size", total}}}, {"weight_map", where}};
}

/// DIR/config.json, DIR/model.safetensors.index.json (`index`) and the shards of
/// split_shards(tensors, n); returns DIR.
inline std::string write_sharded_model(const std::string& name, const json& config, const TensorMap& tensors,
                                       size_t n, const json& index) {
  const std::string dir = temp_dir(name);
  write_file(dir + "/config.json", config.dump(2));
  write_file(dir + "/model.safetensors.index.json", index.dump(2));
  const auto shards = split_shards(tensors, n, nullptr);
  for (size_t i = 0; i < n; ++i) write_file(dir + "/" + shard_name(i, n), safetensors_bytes(shards[i]));
  return dir;
}
inline std::string write_sharded_model(const std::string& name, const json& config, const TensorMap& tensors,
                                       size_t n) {
  return write_sharded_model(name, config, tensors, n, shard_index(tensors, n));
}

}  // namespace vkf::test
