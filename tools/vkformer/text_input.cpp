#include "text_input.hpp"

#include <fcntl.h>
#include <nlohmann/json.hpp>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <sstream>

#include "io/read_file.hpp"
#include "model/json_parse.hpp"
#include "vkformer/tensor.hpp"  // vkf::Error

namespace vkf::tools {
namespace {

std::vector<std::string> parse_texts(const std::string& name, const std::string& text) {
  const size_t first = text.find_first_not_of(" \t\r\n");
  std::vector<std::string> out;
  if (first != std::string::npos && text[first] == '[') {
    nlohmann::json j;
    try {
      j = parse_json_bounded(text);
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

constexpr size_t kMaxText = size_t(1) << 30;  // 1 GiB: beyond, an endless source such as < /dev/zero

/// All of `fd` (a pipe, FIFO, file, or for stdin a terminal or /dev/null), read
/// with blocking reads as cat does. A directory or socket is refused.
std::string read_all(int fd, const std::string& name) {
  struct stat st {};
  if (::fstat(fd, &st) == 0 && (S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode)))
    throw Error(name + ": is a " + (S_ISDIR(st.st_mode) ? "directory" : "socket") +
                ", expected a file of texts (or a pipe)");
  std::string s;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(name + ": read error: " + std::strerror(errno));
    if (n == 0) return s;
    if (s.size() + size_t(n) > kMaxText) throw Error(name + ": more than 1 GiB of text");
    s.append(buf, size_t(n));
  }
}

std::vector<std::string> stdin_texts() { return parse_texts("stdin", read_all(STDIN_FILENO, "stdin")); }

}  // namespace

std::vector<std::string> read_texts(const std::vector<std::string>& args, const std::string& input) {
  std::vector<std::string> texts;
  bool stdin_used = false;
  if (input == "-" || (input.empty() && args.empty() && !isatty(STDIN_FILENO))) {
    texts = stdin_texts();
    stdin_used = true;
  } else if (!input.empty()) {
    const std::string name = "--input " + input;
    struct stat st {};
    if (::stat(input.c_str(), &st) != 0) throw Error(name + ": cannot open: " + std::strerror(errno));
    if (S_ISFIFO(st.st_mode)) {  // <(cmd) and named pipes: wait for the writer, as cat does
      const int fd = ::open(input.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) throw Error(name + ": cannot open: " + std::strerror(errno));
      std::string text;
      try {
        text = read_all(fd, name);
      } catch (...) {
        ::close(fd);
        throw;
      }
      ::close(fd);
      texts = parse_texts(name, text);
    } else {
      // A directory or device is refused with its kind named (io::read_file).
      texts = parse_texts(name, io::read_file(input, "the --input file of texts"));
    }
  }
  for (const std::string& a : args) {
    if (a != "-") {
      texts.push_back(a);
      continue;
    }
    if (stdin_used) throw Error("stdin is given twice (- as a text, and --input - or - before)");
    stdin_used = true;
    for (std::string& t : stdin_texts()) texts.push_back(std::move(t));
  }
  return texts;
}

}  // namespace vkf::tools
