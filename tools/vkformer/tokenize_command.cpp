#include "tokenize_command.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>

#include "text_input.hpp"
#include "vkformer/tensor.hpp"  // vkf::Error
#include "vkformer/tokenizer.hpp"

namespace vkf::tools {

int run_tokenize(const TokenizeOptions& o) {
  auto tokenizer = Tokenizer::load(o.model_dir);
  const std::vector<std::string> texts = read_texts(o.texts, o.input);
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
