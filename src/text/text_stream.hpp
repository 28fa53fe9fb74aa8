// Generated text as it grows token by token: what is safe to print now (whole
// UTF-8 characters, nothing that may still turn into a stop string) and where a
// stop string ends it. `vkformer generate` streams and stops through it.
#pragma once

#include <string>
#include <vector>

#include "vkformer/tokenizer.hpp"

namespace vkf {

/// Decodes the whole id list at every token and hands out the new printable
/// suffix: a character split across tokens is printed when its last byte arrives
/// (held back as incomplete bytes, or as a trailing U+FFFD from a lossy decoder
/// such as HF's ByteLevel).
class TextStream {
 public:
  /// `stops`: texts that end generation when they appear; they are never printed.
  TextStream(const Tokenizer& tok, std::vector<std::string> stops);

  /// Adds generated token `id`; returns the text that became printable (possibly empty).
  std::string push(int32_t id);
  /// At the end of generation: the rest of the text, held-back bytes included.
  std::string finish();
  /// A stop string appeared (push() has then returned everything before it).
  bool stopped() const { return stopped_; }
  /// The text so far, cut before the first stop string.
  const std::string& text() const { return text_; }

 private:
  /// Hands out text_[printed .. end).
  std::string emit(size_t end);
  const Tokenizer& tok_;
  std::vector<std::string> stops_;
  std::vector<int32_t> ids_;
  std::string text_, printed_;
  bool stopped_ = false;
};

/// Length of the longest prefix of `s` that does not end inside a UTF-8 character
/// (an incomplete last sequence is left out; invalid bytes count as complete).
size_t complete_utf8_prefix(const std::string& s);

}  // namespace vkf
