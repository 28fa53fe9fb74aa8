// ChatTemplate (vkformer/chat.hpp): tokenizer_config.json's chat template,
// rendered by the Jinja subset of text/jinja.hpp with the variables
// transformers' apply_chat_template passes (text/chat_template.hpp).
#include "vkformer/chat.hpp"

#include <fstream>
#include <nlohmann/json.hpp>

#include "model/gguf_model.hpp"
#include "model/json_parse.hpp"
#include "text/chat_template.hpp"
#include "text/jinja.hpp"
#include "vkformer/error.hpp"

namespace vkf {
namespace {

std::string config_path(const std::string& dir) { return dir + "/tokenizer_config.json"; }

/// A JSON file of the directory; null when it is missing.
nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nullptr;
  try {
    return parse_json_bounded(in);
  } catch (const std::exception& e) {
    throw Error(path + ": not JSON (" + e.what() + ")");
  }
}

/// Where the chat template is read from, for messages.
std::string template_file(const std::string& dir) {
  return is_gguf_file(dir) ? dir + ": tokenizer.chat_template" : config_path(dir);
}

/// DIR/tokenizer_config.json's chat template, or a GGUF file's tokenizer.chat_template;
/// "" when the file or the key is missing.
std::string template_source(const std::string& dir) {
  if (is_gguf_file(dir)) return gguf_chat_template(GgufFile(dir));
  try {
    return chat_template_of(read_json(config_path(dir)));
  } catch (const Error& e) {
    throw Error(dir + "/" + e.what());  // "tokenizer_config.json: chat_template: ..."
  }
}

}  // namespace

struct ChatTemplate::Parsed {
  std::string source;
  jinja::Template tmpl;
  nlohmann::json special_tokens;  ///< the tokenizer's special tokens, as strings, by role
};

bool ChatTemplate::present(const std::string& dir) { return !template_source(dir).empty(); }

ChatTemplate ChatTemplate::load(const std::string& dir, std::shared_ptr<const Tokenizer> tokenizer) {
  if (!tokenizer) throw Error(dir + " has no tokenizer: a chat needs one");
  const std::string source = template_source(dir);
  const bool gguf = is_gguf_file(dir);
  if (source.empty())
    throw Error((gguf ? dir + " has no tokenizer.chat_template" : config_path(dir) + " has no \"chat_template\"") +
                ": the model has no chat format (give it text with generate --prompt)");
  const nlohmann::json special =
      gguf ? special_tokens_of_tokenizer(*tokenizer)
           : special_tokens_of(read_json(config_path(dir)), read_json(dir + "/special_tokens_map.json"));
  ChatTemplate c;
  c.parsed_ = std::make_shared<const Parsed>(
      Parsed{source, jinja::Template(source, gguf ? template_file(dir) : config_path(dir) + " chat_template"), special});
  c.tok_ = std::move(tokenizer);
  // The end of an assistant's turn: what the template writes right after an
  // assistant message's content, when that is one special token (a token that
  // decodes to nothing once special tokens are skipped).
  const std::string mark = "vkformer-end-of-turn-probe";
  try {
    const std::string text = c.render({{"user", "?"}, {"assistant", mark}}, false);
    const size_t at = text.rfind(mark);
    if (at != std::string::npos) {
      std::string rest = text.substr(at + mark.size());
      rest.erase(0, rest.find_first_not_of(" \n"));
      EncodeOptions o;
      o.add_special_tokens = false;
      const std::vector<int32_t> ids = c.tok_->encode_with(rest, o).ids;
      if (!ids.empty() && c.tok_->decode({ids[0]}, true).empty()) c.end_of_turn_ = ids[0];
    }
  } catch (const Error&) {
    // A template that refuses this conversation (one that needs a system message
    // first, say) has no end-of-turn token found this way: the model's EOS ends turns.
  }
  return c;
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  return render_chat(parsed_->tmpl, messages, add_generation_prompt, parsed_->special_tokens);
}

std::vector<int32_t> ChatTemplate::encode(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  EncodeOptions o;
  o.add_special_tokens = false;
  return tok_->encode_with(render(messages, add_generation_prompt), o).ids;
}

std::vector<int32_t> ChatTemplate::end_ids(const std::vector<int32_t>& generation) const {
  std::vector<int32_t> ids = generation;
  if (end_of_turn_ >= 0 && std::find(ids.begin(), ids.end(), end_of_turn_) == ids.end()) ids.push_back(end_of_turn_);
  return ids;
}

}  // namespace vkf
