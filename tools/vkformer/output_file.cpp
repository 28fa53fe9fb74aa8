#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <vector>

#include "usage_error.hpp"

namespace vkf::tools {
namespace {

struct Inode {
  dev_t dev;
  ino_t ino;
  bool dir;
};
std::vector<std::pair<std::string, Inode>> g_inputs;

// The partial files being written, for the signal handler: a fixed table of
// fixed buffers, so the handler only reads memory and calls unlink().
constexpr int kSlots = 8;
char g_partial[kSlots][4096];
volatile sig_atomic_t g_partial_used[kSlots];

int claim_slot(const std::string& path) {
  if (path.size() >= sizeof g_partial[0]) return -1;  // not cleaned on a signal; still removed on errors
  for (int i = 0; i < kSlots; ++i)
    if (!g_partial_used[i]) {
      std::memcpy(g_partial[i], path.c_str(), path.size() + 1);
      g_partial_used[i] = 1;
      return i;
    }
  return -1;
}

void on_signal(int sig) {
  for (int i = 0; i < kSlots; ++i)
    if (g_partial_used[i]) ::unlink(g_partial[i]);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

/// Removes the partial file and frees its slot, unless committed.
struct Partial {
  std::string path;
  int slot = -1, fd = -1;
  ~Partial() {
    if (fd >= 0) ::close(fd);
    if (!path.empty()) ::unlink(path.c_str());
    if (slot >= 0) g_partial_used[slot] = 0;
  }
};

void write_all(int fd, const std::string& bytes, const std::string& name) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error(name + ": write error: " + std::strerror(n < 0 ? errno : EIO));
    done += size_t(n);
  }
}

}  // namespace

void add_input_path(const std::string& path) {
  struct stat st {};
  if (path.empty() || path == "-" || ::stat(path.c_str(), &st) != 0) return;
  g_inputs.push_back({path, {st.st_dev, st.st_ino, S_ISDIR(st.st_mode)}});
}

void check_output_path(const std::string& path, const std::string& option) {
  if (path == "-") return;
  const std::string name = option + " " + path;
  if (path.empty()) throw UsageError(option + " needs a file name (or - for stdout)");
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    // A new file: its directory must exist and be writable, checked now rather than after the work.
    const std::string dir = parent_of(path);
    struct stat d {};
    if (::stat(dir.c_str(), &d) != 0) throw Error(name + ": cannot write into " + dir + ": " + std::strerror(errno));
    if (!S_ISDIR(d.st_mode)) throw Error(name + ": cannot write into " + dir + ": not a directory");
    if (::access(dir.c_str(), W_OK) != 0) throw Error(name + ": cannot write into " + dir + ": " + std::strerror(errno));
    return;
  }
  if (S_ISLNK(st.st_mode))
    throw UsageError(name + ": is a symbolic link; refusing to write through it (give the target's path)");
  if (S_ISDIR(st.st_mode)) throw UsageError(name + ": is a directory, expected a file name");
  if (!S_ISREG(st.st_mode))
    throw UsageError(name + ": exists and is not a regular file (a device, FIFO or socket); "
                     "use - to write to stdout");
  // The output, or a directory above it, must not be one of the inputs.
  std::string p = path;
  for (int depth = 0; depth < 4; ++depth) {
    struct stat s {};
    if (::stat(p.c_str(), &s) != 0) break;
    for (const auto& [in, node] : g_inputs)
      if (node.dev == s.st_dev && node.ino == s.st_ino)
        throw UsageError(name + ": is " + (depth == 0 ? "" : "inside ") + "the input " + in +
                         "; refusing to overwrite it");
    const std::string up = parent_of(p);
    if (up == p) break;
    p = up;
  }
}

void write_output(const std::string& path, const std::string& option, const std::string& bytes) {
  check_output_path(path, option);
  if (path == "-") {
    if (std::fflush(stdout) != 0) throw Error("stdout: write error: " + std::string(std::strerror(errno)));
    write_all(STDOUT_FILENO, bytes, "stdout");
    return;
  }
  Partial part;
  part.slot = claim_slot(path + ".partial");
  // PATH.partial is ours: whatever is there (a stale file, or a symlink, FIFO or
  // hard link planted there) is unlinked, never written through; O_EXCL then
  // creates a new file or fails.
  ::unlink((path + ".partial").c_str());
  part.fd = ::open((path + ".partial").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (part.fd < 0) {
    const int e = errno;
    if (part.slot >= 0) g_partial_used[part.slot] = 0;
    part.slot = -1;
    throw Error(option + " " + path + ": cannot write " + path + ".partial: " + std::strerror(e));
  }
  part.path = path + ".partial";
  write_all(part.fd, bytes, option + " " + path);
  // Delayed allocation can report a full disk only at fsync or close.
  if (::fsync(part.fd) != 0 && errno != EINVAL && errno != EROFS)
    throw Error(option + " " + path + ": write error: " + std::strerror(errno));
  const int fd = part.fd;
  part.fd = -1;
  if (::close(fd) != 0) throw Error(option + " " + path + ": write error: " + std::strerror(errno));
  if (::rename(part.path.c_str(), path.c_str()) != 0)
    throw Error(option + " " + path + ": cannot rename " + part.path + " into place: " + std::strerror(errno));
  part.path.clear();  // committed
}

void install_output_cleanup() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  // A closed pipe on stdout (`vkformer ... | head -c 1`) is a write error with
  // its message and exit 1, not a silent death by SIGPIPE (exit 141).
  std::signal(SIGPIPE, SIG_IGN);
}

void flush_stdout(int known_errno) {
  errno = 0;
  if (std::fflush(stdout) == 0 && !std::ferror(stdout)) return;
  const int e = errno ? errno : known_errno;
  throw Error(std::string("stdout: write error: ") +
              (e ? std::strerror(e) : "output was lost (disk full or pipe closed?)"));
}

int finish_stdout() {
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;
  const int e = errno;
  if (!flush_failed && !std::ferror(stdout)) return 0;
  std::fprintf(stderr, "vkformer: error: stdout: write error: %s\n",
               flush_failed && e ? std::strerror(e) : "output was lost (disk full or pipe closed?)");
  return 1;
}

}  // namespace vkf::tools
