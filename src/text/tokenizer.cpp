// Tokenizer::load: reads DIR/tokenizer.json and dispatches on its "type".
#include <nlohmann/json.hpp>

#include <fstream>
#include <sstream>

#include "text/sentencepiece.hpp"
#include "vkformer/tensor.hpp"  // vkf::Error
#include "vkformer/tokenizer.hpp"

namespace vkf {

std::unique_ptr<Tokenizer> Tokenizer::load(const std::string& dir) {
  const std::string file = dir + "/tokenizer.json";
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(file + ": cannot open the tokenizer description");
  std::stringstream buf;
  buf << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(buf.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(file + ": not valid JSON: " + e.what());
  }
  if (!j.is_object()) throw Error(file + ": expected a JSON object");
  auto type = j.find("type");
  if (type == j.end() || !type->is_string())
    throw Error(file + ": \"type\" is missing or not a string (known: sentencepiece_unigram)");
  const std::string& t = type->get_ref<const std::string&>();
  if (t == "sentencepiece_unigram") return text::load_sentencepiece_unigram(j, file);
  throw Error(file + ": \"type\" is \"" + t + "\", expected one of: sentencepiece_unigram");
}

}  // namespace vkf
