// Model: config.json + model.safetensors (or a sharded checkpoint) from a
// directory, uploaded once.
#include "vkformer/model.hpp"

#include <algorithm>
#include <filesystem>

#include "model/family.hpp"
#include "model/gguf_model.hpp"
#include "model/tensor_files.hpp"
#include "model/weights.hpp"
#include "vk/context_impl.hpp"

namespace vkf {

namespace {

/// Checks and uploads `files` as `config` says, naming `path` in device errors.
std::shared_ptr<Model> upload(Context& ctx, const std::string& path, ModelConfig config, const TensorFiles& files,
                              Precision precision) {
  const std::string call = "Model::load(" + path + ")";
  internals(ctx).alive(call);
  // Device errors say which model; file errors already name the file.
  return with_context([&] { return call; }, [&] {
    auto w = load_weights(ctx, config, files, precision);
    return std::make_shared<Model>(ctx, std::move(config), precision, std::move(w));
  });
}

}  // namespace

std::shared_ptr<Model> Model::load(Context& ctx, const std::string& dir, Precision precision) {
  if (is_gguf_file(dir)) {  // llama.cpp's single file: metadata and (quantized) tensors
    auto gguf = std::make_shared<const GgufFile>(dir);
    ModelConfig config = gguf_model_config(*gguf);
    const SafeTensorsFile tensors = gguf_tensors(gguf);
    return upload(ctx, dir, std::move(config), tensors, precision);
  }
  // First: not a directory, or a directory of pickles, says so, whatever its config.
  const std::string weights = weights_path(dir);
  ModelConfig config = load_config((std::filesystem::path(dir) / "config.json").string());
  const WeightFiles files(weights);
  return upload(ctx, dir, std::move(config), files.view(), precision);
}

Model::Model(Context& ctx, ModelConfig config, Precision precision, std::unique_ptr<ModelWeights> w)
    : ctx_(&ctx), config_(std::move(config)), family_(&family_of(config_)), precision_(precision),
      weights_(std::move(w)) {
  if (!weights_) throw Error("Model: no weights");
}

Model::~Model() = default;

const std::vector<std::string>& Model::warnings() const { return weights_->warnings; }

std::vector<WeightMemory> Model::weight_memory() const {
  std::vector<WeightMemory> m;
  for (const auto& [dtype, bytes] : weights_->uploaded) m.push_back({dtype, bytes});
  std::stable_sort(m.begin(), m.end(), [](const WeightMemory& a, const WeightMemory& b) { return a.bytes > b.bytes; });
  return m;
}

uint32_t Model::output_dim() const { return family_->output_dim(*this); }

bool Model::supports(Task task) const { return family_->supports(task); }

ModelInfo Model::info() const { return family_->info(*this); }

}  // namespace vkf
