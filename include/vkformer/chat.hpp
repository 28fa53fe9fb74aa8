// Chat: a model directory's chat template (tokenizer_config.json's
// "chat_template", Jinja) rendered over a conversation as transformers'
// apply_chat_template does, and the tokens that end an assistant's turn.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "vkformer/tokenizer.hpp"

namespace vkf {

/// One message of a conversation: role "system", "user" or "assistant" (the
/// template decides which it accepts), and its text.
struct ChatMessage {
  std::string role, content;
};

/// A model directory's chat format.
///
///     auto chat = vkf::ChatTemplate::load(dir.path(), *dir.tokenizer());
///     std::vector<int32_t> ids = chat.encode({{"user", "Hello!"}});
///     GenerateOptions g;  g.eos_token_ids = chat.end_ids(dir.config());
class ChatTemplate {
 public:
  /// DIR/tokenizer_config.json's "chat_template" (a string, or HF's list of named
  /// templates, of which "default" is taken), parsed once.
  /// @throws vkf::Error naming the file when there is none, or the line of the
  /// template that uses a Jinja feature vkformer does not have.
  static ChatTemplate load(const std::string& dir, std::shared_ptr<const Tokenizer> tokenizer);
  /// Whether DIR/tokenizer_config.json has a chat template.
  static bool present(const std::string& dir);

  /// The conversation as the template writes it, with `add_generation_prompt`
  /// (the start of the assistant's turn) and the tokenizer's special tokens
  /// (bos_token, eos_token, ...) as apply_chat_template passes them.
  /// @throws vkf::Error with the template's raise_exception message.
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const;
  /// render(), tokenized without adding special tokens (the template writes
  /// them), as apply_chat_template(tokenize=True).
  std::vector<int32_t> encode(const std::vector<ChatMessage>& messages, bool add_generation_prompt = true) const;
  /// The token that ends an assistant's turn in this template (ChatML's
  /// <|im_end|>, Llama 3's <|eot_id|>, </s>): the special token the template
  /// writes right after an assistant message; -1 when it writes none.
  int32_t end_of_turn() const { return end_of_turn_; }
  /// What ends generation in a chat: `config`'s (or generation_config.json's,
  /// `generation`) end ids, and end_of_turn().
  std::vector<int32_t> end_ids(const std::vector<int32_t>& generation) const;

 private:
  struct Parsed;
  std::shared_ptr<const Parsed> parsed_;
  std::shared_ptr<const Tokenizer> tok_;
  int32_t end_of_turn_ = -1;
};

}  // namespace vkf
