// Uses the installed vkformer: a context, one add on the device, an exact check.
// Built twice by tests/package_consumer.sh: with find_package and with pkg-config.
#include <cstdio>
#include <vector>

#include <vkformer/context.hpp>
#include <vkformer/ops.hpp>
#include <vkformer/recorder.hpp>

int main() {
  try {
    vkf::Context ctx;
    // Sums of these are exact in fp32, so the device must match to the bit.
    const std::vector<float> a = {1.0f, -2.5f, 0.125f, 1024.0f, 3.0f, -0.75f, 7.0f};
    const std::vector<float> b = {0.5f, 2.5f, 0.375f, -1.0f, 4.0f, 0.25f, 9.0f};
    const int64_t n = int64_t(a.size());
    vkf::Tensor ta = ctx.tensor({n}, a), tb = ctx.tensor({n}, b), ty = ctx.tensor({n});
    vkf::Recorder rec(ctx);
    vkf::add(rec, {&ta, &tb, &ty});
    ctx.submit(rec);
    const std::vector<float> y = ctx.read(ty);
    int bad = 0;
    for (size_t i = 0; i < a.size(); ++i) {
      if (y[i] != a[i] + b[i]) {
        std::fprintf(stderr, "consumer: y[%zu] = %g, expected %g\n", i, y[i], a[i] + b[i]);
        ++bad;
      }
    }
    if (ctx.validation_messages() != 0) {
      std::fprintf(stderr, "consumer: %llu validation messages, last: %s\n",
                   (unsigned long long)ctx.validation_messages(),
                   ctx.last_validation_message().c_str());
      ++bad;
    }
    if (bad) return 1;
    std::printf("consumer: add of %lld floats matches\n", (long long)n);
    return 0;
  } catch (const vkf::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
