// A GGUF file as a model: its metadata read as the config.json Hugging Face
// would write for the same model, and its tensors under Hugging Face's names,
// so that the llama family loads it as it loads a checkpoint directory.
// Quantized tensors keep their blocks (Loader uploads them as stored).
#pragma once

#include <memory>
#include <string>

#include "model/gguf.hpp"
#include "model/safetensors.hpp"
#include "text/gguf_tokenizer.hpp"
#include "vkformer/model.hpp"

namespace vkf {

/// Whether `path` is a GGUF file: a regular file whose first four bytes are "GGUF".
/// Model directories and everything else: false.
bool is_gguf_file(const std::string& path);

/// The ModelConfig of a GGUF file's metadata (general.architecture "llama" or
/// "qwen2"): heads, K/V heads, widths, context length, RMSNorm epsilon, RoPE base
/// and linear scaling, special ids, tied head. "llama" files rotate adjacent pairs
/// (llama.cpp's converter reorders the Q and K rows; ModelConfig::rope_interleaved).
/// @throws vkf::Error naming the file and the metadata key.
ModelConfig gguf_model_config(const GgufFile& file);

/// The file's tensors under the names transformers gives them
/// (blk.N.attn_q.weight -> model.layers.N.self_attn.q_proj.weight, ...), its
/// block-quantized types as their GGUF names ("Q4_1"); the file must outlive it.
/// @throws vkf::Error naming a tensor the llama family has no name for.
SafeTensorsFile gguf_tensors(std::shared_ptr<const GgufFile> file);

/// The transformers name of GGUF tensor `name` (blk.0.attn_q.weight ->
/// model.layers.0.self_attn.q_proj.weight), or "" when the llama family has none.
std::string gguf_hf_name(const std::string& name);

/// The file's tokenizer.ggml.* keys, for text::load_gguf_tokenizer.
/// @throws vkf::Error naming the file and a key of the wrong type.
text::GgufVocab gguf_vocab(const GgufFile& file);

/// tokenizer.chat_template; "" when the file has none.
std::string gguf_chat_template(const GgufFile& file);

}  // namespace vkf
