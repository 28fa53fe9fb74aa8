#include "tokenize_command.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

#include "text_input.hpp"
#include "vkformer/tensor.hpp"  // vkf::Error
#include "vkformer/tokenizer.hpp"

namespace vkf::tools {
namespace {

/// The ids of "5 17 42" or "5,17,42".
std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(cur, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != cur.size() || v < INT32_MIN || v > INT32_MAX)
      throw Error("\"" + cur.substr(0, 40) + "\" is not an id (expected integers separated by spaces or commas)");
    ids.push_back(int32_t(v));
    cur.clear();
  };
  for (char c : s) {
    if (c == ' ' || c == ',' || c == '\t') flush();
    else cur += c;
  }
  flush();
  return ids;
}

/// "5,17,42": the format --src-ids and --ids accept, as generate prints it.
std::string joined(const std::vector<int32_t>& ids) {
  std::string line;
  for (int32_t id : ids) line += (line.empty() ? "" : ",") + std::to_string(id);
  return line;
}

}  // namespace

int run_tokenize(const TokenizeOptions& o) {
  auto tokenizer = Tokenizer::load(o.model_dir);
  const std::vector<std::string> texts = read_texts(o.texts, o.input);
  EncodeOptions eo;
  eo.add_special_tokens = !o.no_special;
  eo.max_length = o.max_length;
  nlohmann::json all = nlohmann::json::array();
  for (size_t i = 0; i < texts.size(); ++i) {
    try {
      if (o.decode) {
        const std::string text = tokenizer->decode(parse_ids(texts[i]), !o.keep_special);
        if (o.json) all.push_back(text);
        else std::printf("%s\n", text.c_str());
        continue;
      }
      const Encoding e = tokenizer->encode_with(texts[i], eo);
      if (o.json && o.tokens) all.push_back({{"ids", e.ids}, {"tokens", e.tokens}});
      else if (o.json) all.push_back(e.ids);
      else std::printf("%s\n", joined(e.ids).c_str());
      if (!o.json && o.tokens) std::printf("%s\n", nlohmann::json(e.tokens).dump().c_str());
    } catch (const Error& e) {
      throw Error("text #" + std::to_string(i + 1) + ": " + e.what());
    }
  }
  // Invalid UTF-8 from a decode is shown with U+FFFD rather than refused.
  if (o.json) std::printf("%s\n", all.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  return 0;
}

}  // namespace vkf::tools
