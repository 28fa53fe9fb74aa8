// Replays the committed fuzz corpora of the parsers (tests/fuzz/corpus/{safetensors,config})
// in the normal and the sanitizer builds: every file, including each crasher
// the fuzzer once found, must parse or throw vkf::Error. Host only.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "model/config.hpp"
#include "model/safetensors.hpp"
#include "model/weights.hpp"

namespace vkf::test {
namespace {

namespace fs = std::filesystem;

std::vector<fs::path> corpus(const std::string& name) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(fs::path(VKF_FUZZ_DIR) / "corpus" / name))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(FuzzCorpus, SafeTensors) {
  const auto files = corpus("safetensors");
  ASSERT_GE(files.size(), 10u);
  const ModelConfig cfg = load_config(std::string(VKF_MODELS_DIR) + "/encoder_bf16/config.json");
  size_t accepted = 0;
  for (const auto& p : files) {
    SCOPED_TRACE(p.string());
    const std::string bytes = slurp(p);
    try {
      const auto f = SafeTensorsFile::from_memory(p.filename().string(),
                                                  std::vector<uint8_t>(bytes.begin(), bytes.end()));
      for (const auto& [name, t] : f.tensors()) f.to_f32(name);
      ++accepted;
      try {
        check_weights(cfg, f);
      } catch (const Error&) {
      }
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
    }
  }
  EXPECT_GE(accepted, 3u);  // the valid models at least
}

TEST(FuzzCorpus, Config) {
  const auto files = corpus("config");
  ASSERT_GE(files.size(), 10u);
  size_t accepted = 0;
  for (const auto& p : files) {
    SCOPED_TRACE(p.string());
    try {
      parse_config(p.filename().string(), slurp(p));
      ++accepted;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
    }
  }
  EXPECT_GE(accepted, 6u);  // the six test models' configs
}

}  // namespace
}  // namespace vkf::test
