// A model directory read on the host: its config, tokenizer and generation
// defaults, checked against each other before a device is touched, and what
// its model's family can do. Model::load then uploads the weights.
#pragma once

#include <memory>
#include <string>

#include "vkformer/context.hpp"
#include "vkformer/model.hpp"
#include "vkformer/session.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf {

/// Whether ModelDir::open reads the directory's tokenizer.
enum class TokenizerUse {
  IfPresent,  ///< when the directory has tokenizer files (ModelDir::has_tokenizer); a broken one is an error
  Required,   ///< always: without one, Tokenizer::load's error names the files it needs
  Skip,       ///< never (the caller has ids)
};

/// What a model directory holds, read and checked without a device: "fail fast"
/// happens here, once, for every command and the server.
///
///     const vkf::ModelDir dir = vkf::ModelDir::open("models/dates", vkf::TokenizerUse::Required);
///     if (!dir.supports(vkf::Task::Generate)) throw vkf::Error(dir.refusal(vkf::Task::Generate));
///     vkf::Context ctx;
///     vkf::Session session(dir.load(ctx));
class ModelDir {
 public:
  /// Reads, in this order: that `dir` is a directory and holds no PyTorch pickle
  /// in place of model.safetensors; config.json (which names the family); the
  /// tokenizer, as `tokenizer` says; generation_config.json, when the family
  /// generates (read_generation_config); and config.json's special ids against
  /// the tokenizer (check_special_ids). The weights are read by load().
  /// @throws vkf::Error naming the file and what is wrong with it.
  static ModelDir open(const std::string& dir, TokenizerUse tokenizer = TokenizerUse::IfPresent);

  /// Whether `dir` has a tokenizer's files: tokenizer.json, vocab.txt, vocab.json,
  /// OPUS-MT's source.spm, or tokenizer_config.json. The one list of them.
  static bool has_tokenizer(const std::string& dir);

  const std::string& path() const { return path_; }
  const ModelConfig& config() const { return config_; }
  /// Null when the directory has none, or open() was told to skip it.
  const std::shared_ptr<const Tokenizer>& tokenizer() const { return tokenizer_; }
  /// generation_config.json over GenerateOptions' defaults; the defaults alone for
  /// a family that does not generate.
  const GenerateOptions& generation() const { return generation_; }

  /// Whether Session can run `task` on this model (by its family, as Model::supports).
  bool supports(Task task) const;
  /// Why it cannot: the family's message; for Task::Embed it lists the families
  /// that embed, from the registry.
  std::string refusal(Task task) const;

  /// Model::load of this directory: checks and uploads the weights.
  std::shared_ptr<Model> load(Context& ctx, Precision precision = Precision::F32) const;

 private:
  ModelDir() = default;  // open() makes them

  std::string path_;
  ModelConfig config_;
  std::shared_ptr<const Tokenizer> tokenizer_;
  GenerateOptions generation_;
};

}  // namespace vkf
