// Texts into an encoder model: tokenized as the model directory says
// (sentence-transformers' lowercasing and max_seq_length, the model's
// positions), and run in batches.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "vkformer/model.hpp"
#include "vkformer/session.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::tools {

/// The longest sequence `info` and `tok` allow: the smallest of the model's
/// positions, sentence-transformers' max_seq_length and the tokenizer's
/// model_max_length (those that are set). 0: no limit known.
uint32_t token_limit(const Tokenizer& tok, const ModelInfo& info);

/// Each text's ids, with the tokenizer's special tokens (lowercased first when
/// info.lowercase), truncated at token_limit() with a warning on stderr naming
/// the first three truncated texts, then their count. Single texts: their token types are all 0, the default.
/// With `truncated`, it says which were cut instead (nothing is printed).
/// Models without an HF architecture (use_lite) take the tokenizer's plain
/// encode(); their family keeps the first max_positions.
/// @throws vkf::Error naming the text (from 1) for invalid UTF-8.
std::vector<Ids> encode_texts(const Tokenizer& tok, const ModelInfo& info, const std::vector<std::string>& texts,
                              std::vector<bool>* truncated = nullptr);

/// Calls fn(begin, end) for [0, n) in batches of `batch`, halving the batch
/// (and saying so on stderr) when fn throws because a batch does not fit one
/// binding of the device; after 2 s, and when stderr is a terminal, shows the
/// progress there (progress.hpp). fn must leave nothing done when it throws.
/// @return the batch size it ended with.
size_t in_batches(size_t n, size_t batch, const std::function<void(size_t, size_t)>& fn);

}  // namespace vkf::tools
