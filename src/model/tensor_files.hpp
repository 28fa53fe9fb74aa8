// A model's weights as one or more safetensors files: DIR/model.safetensors,
// or Hugging Face's sharded checkpoint (model.safetensors.index.json and the
// shards its "weight_map" names). TensorFiles finds a tensor by name in
// whichever file holds it; WeightFiles opens and checks a directory's files.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "model/safetensors.hpp"

namespace vkf {

/// A non-owning view of one or more safetensors files, no tensor name in two
/// of them. Errors and warnings name the file that holds the tensor, or, for a
/// tensor that none holds, path(): the single file or the shards' index.
class TensorFiles {
 public:
  /// One file. Implicit, so that load_weights(ctx, cfg, file, ...) and the
  /// other calls with a single SafeTensorsFile read as they always did.
  TensorFiles(const SafeTensorsFile& file) : path_(file.path()), files_{&file} {}  // NOLINT
  /// Several files; `path` stands for them all in messages. The caller has
  /// checked that no name is in two files (WeightFiles does).
  TensorFiles(std::string path, std::vector<const SafeTensorsFile*> files)
      : path_(std::move(path)), files_(std::move(files)) {}

  /// The single file, or the index of the shards.
  const std::string& path() const { return path_; }
  const std::vector<const SafeTensorsFile*>& files() const { return files_; }
  bool has(const std::string& name) const { return find(name) != nullptr; }
  /// @throws vkf::Error naming path() if no file holds the tensor.
  const SafeTensor& get(const std::string& name) const { return holder(name).get(name); }
  /// The tensor's bytes as stored. @throws vkf::Error as get() does.
  const uint8_t* bytes(const std::string& name) const { return holder(name).bytes(name); }
  /// The tensor converted to fp32. @throws vkf::Error as get() does.
  std::vector<float> to_f32(const std::string& name) const { return holder(name).to_f32(name); }
  /// The file that holds the tensor, or path() if none does: where it should be.
  const std::string& path_of(const std::string& name) const {
    const SafeTensorsFile* f = find(name);
    return f ? f->path() : path_;
  }

 private:
  const SafeTensorsFile* find(const std::string& name) const {
    for (const SafeTensorsFile* f : files_)
      if (f->has(name)) return f;
    return nullptr;
  }
  const SafeTensorsFile& holder(const std::string& name) const;

  std::string path_;
  std::vector<const SafeTensorsFile*> files_;
};

/// Where a model directory's weights are: DIR/model.safetensors if it exists,
/// else DIR/model.safetensors.index.json if that exists, else (for the message
/// of the failed open) DIR/model.safetensors.
/// @throws vkf::Error "DIR: not a model directory ..." when DIR is not a directory;
/// "DIR: has pytorch_model.bin but no model.safetensors; ..."
/// when the directory holds PyTorch pickles and no safetensors: vkformer never
/// unpickles, tools/hf/convert_to_safetensors.py converts them.
std::string weights_path(const std::string& dir);

/// The files of a model's weights, read and checked: a safetensors file, or a
/// sharded checkpoint's index and every shard it names.
class WeightFiles {
 public:
  /// `path` is a safetensors file, or an index (a name ending in ".index.json"):
  /// {"metadata": {...}, "weight_map": {tensor: shard file name}}, the shards in
  /// the index's directory. Every shard must hold every tensor mapped to it, and
  /// no tensor may be in two shards.
  /// @throws vkf::Error naming the index, the shard and the tensor.
  explicit WeightFiles(const std::string& path);
  WeightFiles(WeightFiles&&) = default;
  WeightFiles(const WeightFiles&) = delete;  // views point into files_
  /// Valid while this object lives.
  TensorFiles view() const;

 private:
  std::string path_;
  std::vector<SafeTensorsFile> files_;
};

}  // namespace vkf
