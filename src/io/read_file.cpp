#include "io/read_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <new>

#include "vkformer/error.hpp"

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

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

std::optional<std::string> read_file_if_present(const std::string& path, const std::string& what,
                                                uint64_t max_bytes) {
  if (!exists(path)) return std::nullopt;
  return read_file(path, what, max_bytes);
}

int open_regular_file(const std::string& path, const std::string& what, uint64_t* size) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) throw Error(path + ": cannot open " + what + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw Error(path + ": cannot read " + what + ": " + std::strerror(errno));
  if (std::string why = kind_reason(st.st_mode); !why.empty())
    throw Error(path + ": cannot read " + what + ": " + why);
  *size = uint64_t(st.st_size);
  const int fd = f.fd;
  f.fd = -1;
  return fd;
}

std::string read_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
  auto fail = [&](const std::string& why) -> Error {
    return Error(path + ": cannot read " + what + ": " + why);
  };
  uint64_t size = 0;
  Fd f{open_regular_file(path, what, &size)};
  if (size > max_bytes)
    throw fail(std::to_string(size) + " bytes, more than the " + std::to_string(max_bytes) + " allowed");
  std::string data;
  try {
    data.resize(size_t(size));
  } catch (const std::bad_alloc&) {  // a huge (often sparse) file: a clear error, not an escape
    throw fail(std::to_string(size) + " bytes do not fit in memory");
  }
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

MappedFile map_file(const std::string& path, const std::string& what) {
  MappedFile m;
  const int fd = open_regular_file(path, what, &m.size);
  void* p = m.size ? ::mmap(nullptr, size_t(m.size), PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
  const int err = errno;
  ::close(fd);  // the mapping keeps the file
  if (p == MAP_FAILED)
    throw Error(path + ": cannot map " + what + " (" + std::to_string(m.size) + " bytes): " + std::strerror(err));
  if (p) {
    const size_t len = size_t(m.size);
    m.storage = std::shared_ptr<const void>(p, [len](const void* q) { ::munmap(const_cast<void*>(q), len); });
  }
  m.data = static_cast<const uint8_t*>(p);
  return m;
}

void drop_pages(const uint8_t* p, uint64_t bytes) {
  if (bytes == 0) return;
  // Whole pages inside the range only: a neighbour's bytes may share the edges.
  const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(p) + page - 1) / page * page, end = (uintptr_t(p) + bytes) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace vkf::io
