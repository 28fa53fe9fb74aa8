#include "io/read_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "vkformer/tensor.hpp"  // vkf::Error

namespace vkf::io {
namespace {

std::string kind_reason(mode_t mode) {
  if (S_ISDIR(mode)) return "is a directory, expected a file";
  if (S_ISFIFO(mode)) return "is a FIFO (named pipe), expected a regular file";
  if (S_ISSOCK(mode)) return "is a socket, expected a regular file";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "is a device, expected a regular file";
  if (!S_ISREG(mode)) return "is not a regular file";
  return "";
}

struct Fd {
  int fd;
  ~Fd() { if (fd >= 0) ::close(fd); }
};

}  // namespace

std::string not_a_regular_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::strerror(errno);
  return kind_reason(st.st_mode);
}

std::string read_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  auto fail = [&](const std::string& why) -> Error {
    return Error(path + ": cannot read " + what + ": " + why);
  };
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) throw Error(path + ": cannot open " + what + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw fail(std::strerror(errno));
  if (std::string why = kind_reason(st.st_mode); !why.empty()) throw fail(why);
  if (uint64_t(st.st_size) > max_bytes)
    throw fail(std::to_string(st.st_size) + " bytes, more than the " + std::to_string(max_bytes) + " allowed");
  std::string data(size_t(st.st_size), '\0');
  size_t got = 0;
  while (got < data.size()) {
    ssize_t n = ::read(f.fd, data.data() + got, data.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail(std::strerror(errno));
    if (n == 0) break;  // the file shrank while we read it
    got += size_t(n);
  }
  data.resize(got);
  return data;
}

}  // namespace vkf::io
