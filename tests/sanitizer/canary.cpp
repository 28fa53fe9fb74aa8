// Deliberate bugs, one per argument: the ASan build's ctest checks that each is
// reported, so a sanitizer silently missing from the build (or an option that
// swallows reports) cannot make `make test-asan` pass by default.
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>

// The only pointer is a global, cleared: no frame keeps a copy (a local was still found
// on clang's fake stack of detect_stack_use_after_return, so the leak went unreported).
char* volatile leaked;
__attribute__((noinline)) void leak(int n) {
  leaked = new char[size_t(n) * 100];
  std::memset(leaked, 1, size_t(n) * 100);
  leaked = nullptr;
}

int main(int argc, char** argv) {
  const std::string kind = argc > 1 ? argv[1] : "";
  volatile int n = argc + 7;  // sizes the compiler cannot see through
  if (kind == "heap_overflow") {
    char* p = new char[size_t(n)];
    std::memset(p, 0, size_t(n));
    std::printf("%d\n", p[n]);
    delete[] p;
  } else if (kind == "use_after_free") {
    int* p = new int[size_t(n)];
    delete[] p;
    std::printf("%d\n", p[1]);
  } else if (kind == "signed_overflow") {
    int x = INT_MAX - 1 + n;
    std::printf("%d\n", x);
  } else if (kind == "leak") {
    leak(n);
  } else {
    std::fprintf(stderr, "usage: canary heap_overflow|use_after_free|signed_overflow|leak\n");
    return 2;
  }
  return 0;
}
