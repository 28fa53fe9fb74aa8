// `vkformer generate`: ids or text in (with the directory's tokenizer), greedy,
// beam search or sampling with HF's processors, stop strings, streaming.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "vkformer/chat.hpp"
#include "vkformer/context.hpp"
#include "vkformer/model_dir.hpp"

namespace vkf::tools {

struct GenerateCliOptions {
  std::string model_dir, precision = "fp32";
  std::vector<std::string> src_ids;             ///< "5,17,42", one per sequence
  std::vector<std::string> prompts, texts;      ///< --prompt, and the positional texts
  std::string input;                            ///< --input FILE (text_input.hpp)
  // Unset: generation_config.json's value, else GenerateOptions' default.
  std::optional<unsigned> beam, max_new_tokens, no_repeat_ngram_size;
  std::optional<double> length_penalty, temperature, top_p, min_p, repetition_penalty;
  std::optional<int32_t> top_k;
  bool do_sample = false, greedy = false;       ///< --do-sample, --greedy (override the file)
  uint64_t seed = 0;
  std::vector<std::string> stops;               ///< --stop, repeatable
  bool json = false, no_cache = false, stream = false;
  std::string chat;    ///< --chat MESSAGE: one user turn through the model's chat template
  std::string system;  ///< --system TEXT: the chat's system message
  std::string kv_cache = "auto";                ///< --kv-cache: auto, f32 or f16
};

/// generation_config.json's defaults, then what the command line says.
/// @throws UsageError for a value the command line got wrong.
GenerateOptions generate_options(const ModelDir& dir, const GenerateCliOptions& o);

/// The conversation `history` (after --system's message, when given) plus `user`.
std::vector<ChatMessage> chat_messages(const std::string& system, const std::vector<ChatMessage>& history,
                                       const std::string& user);

/// Returns the exit code; bad input throws vkf::Error.
int run_generate(const ContextOptions& ctx_opts, const GenerateCliOptions& o);

}  // namespace vkf::tools
