// Chat templates as transformers 4.44's apply_chat_template renders them
// (docs/chat-templates.md): the Jinja template of tokenizer_config.json with the
// messages, add_generation_prompt and the special tokens.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/jinja.hpp"
#include "vkformer/chat.hpp"

namespace vkf {

/// Renders tokenizer_config.json's chat_template with messages, add_generation_prompt,
/// bos_token, eos_token (and the other special tokens as strings, as transformers
/// passes them). `special_tokens` is an object such as {"bos_token": "<s>", ...};
/// a value may also be an AddedToken object ({"content": "<s>", ...}), which counts
/// as its content; null, "" and [] are left out, as transformers' special_tokens_map
/// leaves out unset tokens. `tools` and `documents` are None, as when
/// apply_chat_template is called without them.
/// @throws vkf::Error "chat_template: line N: <what>" for a template that cannot be
///         parsed or rendered, "chat_template: raise_exception: <message>" when the
///         template refuses the conversation.
std::string render_chat(const std::string& chat_template, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const nlohmann::json& special_tokens);
/// The same with a template parsed once (ChatTemplate renders every turn with it).
std::string render_chat(const jinja::Template& chat_template, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const nlohmann::json& special_tokens);

/// The chat_template of a tokenizer_config.json (string, or a list of {name, template}
/// where "default" is taken), "" when it has none.
/// @throws vkf::Error for a list without a "default" template (naming the ones it has)
///         or a chat_template that is neither a string nor such a list.
std::string chat_template_of(const nlohmann::json& tokenizer_config);

/// The special tokens transformers passes to the template, from a tokenizer_config.json
/// and, optionally, the special_tokens_map.json beside it: bos_token, eos_token,
/// unk_token, sep_token, pad_token, cls_token, mask_token (strings) and
/// additional_special_tokens (a list of strings), each only when set. As in
/// transformers, special_tokens_map.json is read only when tokenizer_config.json has
/// no added_tokens_decoder, and then its values win.
nlohmann::json special_tokens_of(const nlohmann::json& tokenizer_config,
                                 const nlohmann::json& special_tokens_map = nlohmann::json());
/// The same roles as `tokenizer` answers them (Tokenizer::special_token): a GGUF
/// file's, whose ids stand where tokenizer_config.json would be.
nlohmann::json special_tokens_of_tokenizer(const Tokenizer& tokenizer);

}  // namespace vkf
