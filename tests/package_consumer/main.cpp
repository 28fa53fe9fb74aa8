// Uses the installed vkformer: a context, one add on the device, an exact check, and
// a tokenizer (which links ICU, a dependency of the static library).
// Built twice by tests/package_consumer.sh: with find_package and with pkg-config.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include <vkformer/context.hpp>
#include <vkformer/ops.hpp>
#include <vkformer/recorder.hpp>
#include <vkformer/tokenizer.hpp>

// NFKC turns U+FB01 into "fi": the ids must be those of "▁" and "fi".
static int check_tokenizer() {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("vkformer-consumer-" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json")
      << R"({"type": "sentencepiece_unigram", "normalizer": "nfkc", "unk_id": 0, "reserved_ids": 1,)"
      << R"( "pieces": [["<unk>", 0], ["\u2581", -1], ["f", -3], ["i", -3], ["fi", -2]]})";
  std::vector<int32_t> ids;
  try {
    ids = vkf::Tokenizer::load(dir.string())->encode("\xEF\xAC\x81");
  } catch (...) {
    fs::remove_all(dir);
    throw;
  }
  fs::remove_all(dir);
  if (ids != std::vector<int32_t>{1, 4}) {
    std::fprintf(stderr, "consumer: tokenizer gave %zu ids, expected 1 4\n", ids.size());
    return 1;
  }
  std::printf("consumer: tokenizer matches\n");
  return 0;
}

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
    bad += check_tokenizer();
    if (bad) return 1;
    std::printf("consumer: add of %lld floats matches\n", (long long)n);
    return 0;
  } catch (const vkf::Error& e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
