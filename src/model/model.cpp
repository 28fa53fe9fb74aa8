// Model: config.json + model.safetensors from a directory, uploaded once.
#include "vkformer/model.hpp"

#include <filesystem>

#include "model/safetensors.hpp"
#include "model/weights.hpp"
#include "vk/context_impl.hpp"

namespace vkf {

std::shared_ptr<Model> Model::load(Context& ctx, const std::string& dir, Precision precision) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(dir +
                ": not a model directory (expected a directory with config.json and model.safetensors)");
  const fs::path root(dir);
  ModelConfig config = load_config((root / "config.json").string());
  SafeTensorsFile file((root / "model.safetensors").string());
  try {
    ctx.impl().alive("Model::load(" + dir + ")");
    auto weights = load_weights(ctx, config, file, precision);
    return std::make_shared<Model>(ctx, std::move(config), precision, std::move(weights));
  } catch (const VulkanError& e) {
    // Device errors say which model; file errors already name the file.
    if (std::string(e.what()).rfind("Model::load(", 0) == 0) throw;
    rethrow_with_context(e, "Model::load(" + dir + ")");
  }
}

Model::Model(Context& ctx, ModelConfig config, Precision precision, std::unique_ptr<ModelWeights> w)
    : ctx_(&ctx), config_(std::move(config)), precision_(precision), weights_(std::move(w)) {
  if (!weights_) throw Error("Model: no weights");
}

Model::~Model() = default;

const std::vector<std::string>& Model::warnings() const { return weights_->warnings; }

uint32_t Model::output_dim() const {
  if (config_.use_lite()) return config_.d_model;
  return weights_->generator ? config_.out_vocab() : config_.d_model;
}

}  // namespace vkf
