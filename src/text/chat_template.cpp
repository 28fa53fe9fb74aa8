#include "text/chat_template.hpp"

#include <algorithm>

#include "text/jinja.hpp"
#include "vkformer/error.hpp"

namespace vkf {

namespace {

const char* const kSpecialTokens[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                      "pad_token", "cls_token", "mask_token", "additional_special_tokens"};

// A token as transformers passes it to the template: str(AddedToken) is its content.
nlohmann::json token_text(const nlohmann::json& v) {
  if (v.is_object()) {
    const auto it = v.find("content");
    if (it == v.end() || !it->is_string()) throw Error("special token object without a string \"content\": " + v.dump());
    return *it;
  }
  if (v.is_array()) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& x : v) out.push_back(token_text(x));
    return out;
  }
  return v;
}

// Python truthiness of a token value: unset tokens are not passed.
bool is_set(const nlohmann::json& v) {
  if (v.is_null()) return false;
  if (v.is_string()) return !v.get_ref<const std::string&>().empty();
  if (v.is_array() || v.is_object()) return !v.empty();
  if (v.is_boolean()) return v.get<bool>();
  return true;
}

}  // namespace

std::string render_chat(const std::string& chat_template, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const nlohmann::json& special_tokens) {
  return render_chat(jinja::Template(chat_template, "chat_template"), messages, add_generation_prompt, special_tokens);
}

std::string render_chat(const jinja::Template& chat_template, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt, const nlohmann::json& special_tokens) {
  if (!special_tokens.is_null() && !special_tokens.is_object())
    throw Error("chat_template: the special tokens must be a JSON object");
  // ordered_json: each message is {"role", "content"} in that order, as Python's dicts
  // keep it (it shows in tojson and items()).
  nlohmann::ordered_json context = nlohmann::ordered_json::object();
  if (special_tokens.is_object())
    for (auto it = special_tokens.begin(); it != special_tokens.end(); ++it) {
      const nlohmann::json v = token_text(it.value());
      if (is_set(v)) context[it.key()] = nlohmann::ordered_json::parse(v.dump());
    }
  nlohmann::ordered_json list = nlohmann::ordered_json::array();
  for (const ChatMessage& m : messages) {
    nlohmann::ordered_json msg = nlohmann::ordered_json::object();
    msg["role"] = m.role;
    msg["content"] = m.content;
    list.push_back(std::move(msg));
  }
  context["messages"] = std::move(list);
  context["tools"] = nullptr;
  context["documents"] = nullptr;
  context["add_generation_prompt"] = add_generation_prompt;
  return chat_template.render(context);
}

std::string chat_template_of(const nlohmann::json& tokenizer_config) {
  if (!tokenizer_config.is_object()) return "";
  const auto it = tokenizer_config.find("chat_template");
  if (it == tokenizer_config.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    std::vector<std::string> names;
    for (const auto& t : *it) {
      if (!t.is_object() || !t.contains("name") || !t["name"].is_string() || !t.contains("template") ||
          !t["template"].is_string())
        throw Error("tokenizer_config.json: chat_template: each entry of the list must be {\"name\": ..., \"template\": ...}");
      if (t["name"] == "default") return t["template"].get<std::string>();
      names.push_back(t["name"].get<std::string>());
    }
    std::sort(names.begin(), names.end());
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    throw Error("tokenizer_config.json: chat_template: several templates and none named \"default\" (" + list + ")");
  }
  throw Error("tokenizer_config.json: chat_template must be a string or a list of {name, template}");
}

nlohmann::json special_tokens_of(const nlohmann::json& tokenizer_config, const nlohmann::json& special_tokens_map) {
  nlohmann::json init = tokenizer_config.is_object() ? tokenizer_config : nlohmann::json::object();
  // transformers' legacy path: special_tokens_map.json counts only without added_tokens_decoder.
  if (special_tokens_map.is_object() && !init.contains("added_tokens_decoder")) {
    for (auto it = special_tokens_map.begin(); it != special_tokens_map.end(); ++it) {
      if (it.key() == "additional_special_tokens" && it.value().is_array()) {
        nlohmann::json merged = init.contains(it.key()) && init[it.key()].is_array() ? init[it.key()] : nlohmann::json::array();
        for (const auto& t : it.value())
          if (std::find(merged.begin(), merged.end(), t) == merged.end()) merged.push_back(t);
        init[it.key()] = merged;
      } else {
        init[it.key()] = it.value();
      }
    }
  }
  nlohmann::json out = nlohmann::json::object();
  for (const char* key : kSpecialTokens) {
    const auto it = init.find(key);
    if (it == init.end()) continue;
    const nlohmann::json v = token_text(*it);
    if (is_set(v)) out[key] = v;
  }
  return out;
}

nlohmann::json special_tokens_of_tokenizer(const Tokenizer& tokenizer) {
  nlohmann::json out = nlohmann::json::object();
  for (const char* key : kSpecialTokens)
    if (const std::optional<std::string> t = tokenizer.special_token(key)) out[key] = *t;
  return out;
}

}  // namespace vkf
