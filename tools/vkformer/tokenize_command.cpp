#include "tokenize_command.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

#include "vkformer/tensor.hpp"  // vkf::Error
#include "vkformer/tokenizer.hpp"

namespace vkf::tools {

int run_tokenize(const TokenizeOptions& o) {
  auto tokenizer = Tokenizer::load(o.model_dir);
  std::vector<std::string> texts;
  if (!o.input.empty()) {
    // A file, so that texts may start with "-", hold NULs or be longer than an argument.
    std::ifstream in(o.input, std::ios::binary);
    if (!in) throw Error("--input " + o.input + ": cannot open");
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw Error("--input " + o.input + ": not valid JSON: " + e.what());
    }
    if (!j.is_array()) throw Error("--input " + o.input + ": expected a JSON array of strings");
    for (size_t i = 0; i < j.size(); ++i) {
      if (!j[i].is_string())
        throw Error("--input " + o.input + ": element " + std::to_string(i) + " is not a string");
      texts.push_back(j[i].get<std::string>());
    }
  }
  texts.insert(texts.end(), o.texts.begin(), o.texts.end());
  nlohmann::json all = nlohmann::json::array();
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int32_t> ids;
    try {
      ids = tokenizer->encode(texts[i]);
    } catch (const Error& e) {
      throw Error("text #" + std::to_string(i + 1) + ": " + e.what());
    }
    if (o.json) {
      all.push_back(ids);
    } else {
      std::string line;
      for (int32_t id : ids) line += (line.empty() ? "" : " ") + std::to_string(id);
      std::printf("%s\n", line.c_str());
    }
  }
  if (o.json) std::printf("%s\n", all.dump().c_str());
  return 0;
}

}  // namespace vkf::tools
