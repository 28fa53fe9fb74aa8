// Test helper (tests/jinja_check.py): renders a Jinja template file with a JSON
// context file through vkf::jinja (the context's key order kept), prints the result
// to stdout byte for byte; on an error prints its one line to stderr and exits 1.
//   jinja_render TEMPLATE.jinja CONTEXT.json
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "text/jinja.hpp"
#include "vkformer/error.hpp"

namespace {

std::string read_file(const char* path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw vkf::Error(std::string("cannot read ") + path);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: jinja_render TEMPLATE CONTEXT.json\n";
    return 2;
  }
  try {
    const std::string source = read_file(argv[1]);
    const auto context = nlohmann::ordered_json::parse(read_file(argv[2]));
    const vkf::jinja::Template tmpl(source);
    const std::string out = tmpl.render(context);
    std::cout.write(out.data(), std::streamsize(out.size()));
    return std::cout.flush() ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
