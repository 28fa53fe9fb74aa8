// ref::dequantize and ref::quantize (src/reference/quant.cpp) against the
// files tests/quant_check.py writes from llama.cpp's gguf package: the values
// bit for bit (NaN where gguf has NaN), the blocks byte for byte.
// Usage: quant_check DIR. Exit 0 when everything matches.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "vkformer/reference.hpp"

namespace {

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "quant_check: cannot read %s\n", path.c_str());
    std::exit(2);
  }
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<float> floats(const std::vector<uint8_t>& b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), v.size() * 4);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: quant_check DIR (tests/quant_check.py writes it)\n");
    return 2;
  }
  const std::string dir = argv[1];
  const struct {
    const char* name;
    vkf::WeightFormat format;
    bool quantizer;
  } formats[] = {{"q8_0", vkf::WeightFormat::Q8_0, true},
                 {"q4_0", vkf::WeightFormat::Q4_0, true},
                 {"q4_1", vkf::WeightFormat::Q4_1, true},
                 {"q4_k", vkf::WeightFormat::Q4_K, false},
                 {"q6_k", vkf::WeightFormat::Q6_K, false}};
  int failures = 0;
  for (const auto& f : formats) {
    const std::vector<uint8_t> blocks = read_file(dir + "/" + f.name + ".blocks");
    const std::vector<float> want = floats(read_file(dir + "/" + f.name + ".deq"));
    const std::vector<float> got = vkf::ref::dequantize(f.format, blocks.data(), want.size());
    size_t bad = 0, nan = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      const bool same = std::isnan(want[i]) ? std::isnan(got[i]) : std::memcmp(&want[i], &got[i], 4) == 0;
      nan += std::isnan(want[i]);
      if (!same && bad++ < 5)
        std::fprintf(stderr, "%s dequantize: value %zu (block %zu): got %a, gguf %a\n", f.name, i,
                     i / vkf::weight_format_info(f.format).block_values, double(got[i]), double(want[i]));
    }
    std::printf("%s dequantize: %zu values (%zu NaN), %zu differ\n", f.name, want.size(), nan, bad);
    failures += bad != 0;
    if (!f.quantizer) continue;
    const std::vector<float> rows = floats(read_file(dir + "/" + f.name + ".rows"));
    const std::vector<uint8_t> want_q = read_file(dir + "/" + f.name + ".quant");
    const std::vector<uint8_t> got_q = vkf::ref::quantize(f.format, rows.data(), rows.size());
    size_t qbad = got_q.size() != want_q.size();
    for (size_t i = 0; i < std::min(got_q.size(), want_q.size()); ++i)
      if (got_q[i] != want_q[i] && qbad++ < 5)
        std::fprintf(stderr, "%s quantize: byte %zu (block %zu): got 0x%02x, gguf 0x%02x\n", f.name, i,
                     i / vkf::weight_format_info(f.format).block_bytes, got_q[i], want_q[i]);
    std::printf("%s quantize: %zu values, %zu blocks, %zu bytes differ\n", f.name, rows.size(),
                want_q.size() / vkf::weight_format_info(f.format).block_bytes, qbad);
    failures += qbad != 0;
  }
  std::printf(failures ? "quant_check: FAILED\n" : "quant_check: all equal to gguf\n");
  return failures ? 1 : 0;
}
