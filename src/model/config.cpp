// config.json: every key is required except tgt_vocab_size for models without
// a decoder, so a typo or an exporter bug is an error naming the key, not a
// silent default. Unknown keys are ignored (exporters add their own).
// "model_type" picks the family (src/families), which reads the rest.
#include <filesystem>
#include <tuple>
#include <fstream>
#include <sstream>

#include "model/family.hpp"
#include "io/read_file.hpp"
#include "model/config.hpp"
#include "model/config_reader.hpp"
#include "model/json_parse.hpp"
#include "model/json_text.hpp"

namespace vkf {

const std::vector<std::string>& known_model_types() {
  static const std::vector<std::string> kTypes = [] {
    std::vector<std::string> v;
    for (const Family* f : families()) {
      v.push_back(f->name());
      for (const std::string& a : f->aliases()) v.push_back(a);
    }
    return v;
  }();
  return kTypes;
}

ModelConfig load_config(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw Error(path + ": is a directory, expected the model config");
  return parse_config(path, io::read_file(path, "the model config"));
}

ModelConfig parse_config(const std::string& path, const std::string& text) {
  nlohmann::json j;
  try {
    j = parse_json_bounded(text);
  } catch (const nlohmann::json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
    throw Error(path + ": not valid JSON: " + json_error_text(e));
  }
  if (!j.is_object()) throw Error(path + ": must hold a JSON object, got " + std::string(j.type_name()));

  ConfigReader r(path, j);
  ModelConfig c;
  c.model_type = r.string("model_type");
  const Family* family = find_family(c.model_type);
  if (!family) r.fail(unknown_model_type(c.model_type));
  family->read_config(r, c);
  return c;
}

}  // namespace vkf
