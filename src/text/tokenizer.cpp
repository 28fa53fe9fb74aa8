// Tokenizer::load: reads DIR/tokenizer.json and picks the implementation by "type".
#include "vkformer/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <fstream>

#include "text/char_tokenizer.hpp"
#include "text/sentencepiece.hpp"
#include "vkformer/tensor.hpp"

namespace vkf {

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string& dir) {
  const std::string file = dir + "/tokenizer.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file + ": cannot open (the model directory needs a tokenizer.json, see docs/tokenizer.md)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(file + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(file + ": must be a JSON object, got " + std::string(j.type_name()));
  static const char* kKnown = "\"char\", \"sentencepiece_unigram\"";
  if (!j.contains("type")) throw Error(file + ": missing field \"type\" (known types: " + kKnown + ")");
  if (!j["type"].is_string())
    throw Error(file + ": field \"type\" must be a string (known types: " + kKnown + "), got " + j["type"].dump());
  const std::string& type = j["type"].get_ref<const std::string&>();
  if (type == "char") return text::make_char_tokenizer(j, file);
  if (type == "sentencepiece_unigram") return text::load_sentencepiece_unigram(j, file);
  throw Error(file + ": field \"type\" is unknown: " + j["type"].dump() + " (known types: " + kKnown + ")");
}

}  // namespace vkf
