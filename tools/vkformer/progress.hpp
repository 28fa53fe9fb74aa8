// Progress of long runs on stderr, only when stderr is a terminal (so logs and
// pipes stay clean) and only once a run has taken more than 2 s.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace vkf::tools {

class Progress {
 public:
  Progress(std::string what, size_t total, std::string unit)
      : what_(std::move(what)), unit_(std::move(unit)), total_(total), tty_(isatty(STDERR_FILENO) == 1) {}
  ~Progress() {
    if (shown_) std::fprintf(stderr, "\r\033[K");  // clear the line for what follows
  }
  /// `done` of the total are finished.
  void update(size_t done) {
    if (!tty_ || done >= total_) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    if (s < 2) return;
    std::fprintf(stderr, "\r\033[Kvkformer: %s: %zu of %zu %s, %.0f s", what_.c_str(), done, total_, unit_.c_str(), s);
    std::fflush(stderr);
    shown_ = true;
  }

 private:
  std::string what_, unit_;
  size_t total_;
  bool tty_, shown_ = false;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

}  // namespace vkf::tools
