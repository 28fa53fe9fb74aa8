// Opening a model's weight files: one safetensors file, or a sharded
// checkpoint as Hugging Face writes it (save_pretrained with max_shard_size):
// model.safetensors.index.json = {"metadata": {"total_size": N}, "weight_map":
// {"tensor name": "model-00001-of-00002.safetensors", ...}} beside its shards.
// As in transformers, model.safetensors wins when both are there, and each
// shard is read whole.
#include "io/read_file.hpp"
#include "model/tensor_files.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/json_parse.hpp"
#include "model/json_text.hpp"
#include "vkformer/tensor.hpp"

namespace vkf {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const char kIndexSuffix[] = ".index.json";

bool is_index(const std::string& path) {
  const std::string tail = kIndexSuffix;
  return path.size() >= tail.size() && path.compare(path.size() - tail.size(), tail.size(), tail) == 0;
}

json read_index(const std::string& path) {
  const std::string text = io::read_file(path, "the index of the sharded checkpoint");
  try {
    return parse_json_bounded(text);
  } catch (const json::exception& e) {
    throw Error(path + ": not valid JSON: " + json_error_text(e));
  }
}

/// The index's weight_map inverted: shard file name → the tensors mapped to it.
std::map<std::string, std::vector<std::string>> shards_of(const std::string& path, const json& index) {
  auto fail = [&](const std::string& what) { return Error(path + ": " + what); };
  if (!index.is_object()) throw fail("must hold a JSON object, got " + std::string(index.type_name()));
  if (!index.contains("weight_map")) throw fail("missing key \"weight_map\" (tensor name -> shard file)");
  const json& map = index["weight_map"];
  if (!map.is_object())
    throw fail("\"weight_map\" must be an object of tensor name -> shard file, got " + brief_json(map));
  if (map.empty()) throw fail("\"weight_map\" names no tensor");
  std::map<std::string, std::vector<std::string>> shards;
  for (const auto& [name, shard] : map.items()) {
    const std::string entry = "\"weight_map\" entry \"" + printable(name) + "\"";
    if (!shard.is_string()) throw fail(entry + " must be a shard file name, got " + brief_json(shard));
    const std::string file = shard.get<std::string>();
    const fs::path rel(file);
    bool outside = file.empty() || rel.is_absolute();
    for (const fs::path& part : rel) outside = outside || part == "..";
    if (outside)
      throw fail(entry + ": shard \"" + printable(file) + "\" is not a file name in the index's directory");
    shards[file].push_back(name);
  }
  return shards;
}

}  // namespace

const SafeTensorsFile& TensorFiles::holder(const std::string& name) const {
  if (const SafeTensorsFile* f = find(name)) return *f;
  throw Error(path_ + ": no tensor \"" + printable(name) + "\"");
}

std::string weights_path(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(dir + ": not a model directory (expected a directory with config.json and model.safetensors)");
  const fs::path root(dir);
  const fs::path single = root / "model.safetensors";
  const fs::path index = root / ("model.safetensors" + std::string(kIndexSuffix));
  if (fs::exists(single, ec)) return single.string();
  if (fs::exists(index, ec)) return index.string();
  for (const char* pickle : {"pytorch_model.bin", "pytorch_model.bin.index.json"})
    if (fs::exists(root / pickle, ec))
      throw Error(dir + ": has " + pickle + " but no model.safetensors; vkformer does not read pickles: " +
                  "convert it with tools/hf/convert_to_safetensors.py " + dir);
  return single.string();  // the open fails, naming it
}

WeightFiles::WeightFiles(const std::string& path) : path_(path) {
  if (!is_index(path)) {
    files_.emplace_back(path);
    return;
  }
  const auto shards = shards_of(path, read_index(path));
  const fs::path dir = fs::path(path).parent_path();
  files_.reserve(shards.size());  // no reallocation: view() points into files_
  for (const auto& [shard, names] : shards) {
    const std::string shard_path = (dir / shard).string();
    const std::string shown = printable(shard_path, 300);  // the name comes from the index: one line
    std::error_code ec;
    if (!fs::exists(shard_path, ec))
      throw Error(path + ": shard \"" + printable(shard) + "\" is missing: " + shown + " should hold \"" +
                  printable(names.front()) + "\"" +
                  (names.size() > 1 ? " and " + std::to_string(names.size() - 1) + " more tensors" : ""));
    const SafeTensorsFile& f = files_.emplace_back(shard_path);
    for (const std::string& name : names)
      if (!f.has(name))
        throw Error(shown + ": no tensor \"" + printable(name) + "\", though " + path +
                    " maps it to this shard");
  }
  // A name must mean one tensor.
  std::map<std::string, const std::string*> holder;
  for (const SafeTensorsFile& f : files_)
    for (const auto& entry : f.tensors()) {
      const auto [it, fresh] = holder.emplace(entry.first, &f.path());
      if (!fresh)
        throw Error(path + ": tensor \"" + printable(entry.first) + "\" is in two shards, " + *it->second +
                    " and " + f.path());
    }
}

TensorFiles WeightFiles::view() const {
  std::vector<const SafeTensorsFile*> files;
  for (const SafeTensorsFile& f : files_) files.push_back(&f);
  return TensorFiles(path_, std::move(files));
}

}  // namespace vkf
