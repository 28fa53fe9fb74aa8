#include "text_input.hpp"

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "vkformer/tensor.hpp"  // vkf::Error

namespace vkf::tools {
namespace {

std::vector<std::string> parse_texts(const std::string& name, const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  std::vector<std::string> out;
  if (first != std::string::npos && text[first] == '[') {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
      throw Error(name + ": not valid JSON (a file starting with '[' is read as a JSON array of strings): " +
                  std::string(e.what()).substr(0, 200));
    }
    if (!j.is_array()) throw Error(name + ": expected a JSON array of strings");
    for (size_t i = 0; i < j.size(); ++i) {
      if (!j[i].is_string()) throw Error(name + ": element " + std::to_string(i) + " is not a string");
      out.push_back(j[i].get<std::string>());
    }
    return out;
  }
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(line);
  }
  return out;
}

std::string slurp(std::istream& in, const std::string& name) {
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(name + ": read error");
  return s;
}

}  // namespace

std::vector<std::string> read_texts(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> texts;
  if (input == "-" || (input.empty() && args.empty() && !isatty(STDIN_FILENO))) {
    texts = parse_texts("stdin", slurp(std::cin, "stdin"));
  } else if (!input.empty()) {
    const std::string name = "--input " + input;
    std::error_code ec;
    if (std::filesystem::is_directory(input, ec)) throw Error(name + ": is a directory, expected a file of texts");
    std::ifstream in(input, std::ios::binary);
    if (!in) throw Error(name + ": cannot open (missing or unreadable)");
    texts = parse_texts(name, slurp(in, name));
  }
  texts.insert(texts.end(), args.begin(), args.end());
  return texts;
}

}  // namespace vkf::tools
