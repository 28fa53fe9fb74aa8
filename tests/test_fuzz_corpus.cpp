// Replays the committed fuzz corpora of the parsers (tests/fuzz/corpus/{safetensors,gguf,config,hf_tokenizer,...})
// in the normal and the sanitizer builds: every file, including each crasher
// the fuzzer once found, must parse or throw vkf::Error. Host only.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <iterator>

#include "model/config.hpp"
#include "model/gguf.hpp"
#include "model/safetensors.hpp"
#include "model/weights.hpp"
#include "text/hf/hf_tokenizer.hpp"
#include "vkformer/tokenizer.hpp"

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

/// Runs `parse` on every file of corpus `name` (at least `min_files`): it must return or
/// throw a one-line vkf::Error. Returns how many returned.
size_t replay(const std::string& name, size_t min_files,
              const std::function<void(const fs::path&, const std::string&)>& parse) {
  const auto files = corpus(name);
  EXPECT_GE(files.size(), min_files);
  size_t accepted = 0;
  for (const auto& p : files) {
    SCOPED_TRACE(p.string());
    try {
      parse(p, slurp(p));
      ++accepted;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
    }
  }
  return accepted;
}

TEST(FuzzCorpus, SafeTensors) {
  const ModelConfig cfg = load_config(std::string(VKF_MODELS_DIR) + "/encoder_bf16/config.json");
  const size_t accepted = replay("safetensors", 10, [&](const fs::path& p, const std::string& bytes) {
    const auto f =
        SafeTensorsFile::from_memory(p.filename().string(), std::vector<uint8_t>(bytes.begin(), bytes.end()));
    for (const auto& [name, t] : f.tensors()) f.to_f32(name);
    try {
      check_weights(cfg, f);
    } catch (const Error&) {
    }
  });
  EXPECT_GE(accepted, 3u);  // the valid models at least
}

TEST(FuzzCorpus, Gguf) {
  const size_t accepted = replay("gguf", 5, [](const fs::path& p, const std::string& bytes) {
    const auto f = GgufFile::from_memory(p.filename().string(), std::vector<uint8_t>(bytes.begin(), bytes.end()));
    for (const auto& t : f.tensors())
      if (t.type == GgmlType::F32 || t.type == GgmlType::F16 || t.type == GgmlType::BF16)
        EXPECT_EQ(gguf_tensor_to_f32(t).size(), t.elements);
  });
  EXPECT_GE(accepted, 4u);  // the valid seeds
}

TEST(FuzzCorpus, Config) {
  const size_t accepted = replay("config", 10, [](const fs::path& p, const std::string& bytes) {
    parse_config(p.filename().string(), bytes);
  });
  EXPECT_GE(accepted, 6u);  // the six test models' configs
}

TEST(FuzzCorpus, HfTokenizer) {
  // tokenizer.json, a NUL byte, a text (fuzz_hf_tokenizer.cpp).
  const size_t accepted = replay("hf_tokenizer", 5, [](const fs::path& p, const std::string& bytes) {
    const size_t nul = bytes.find('\0');
    const std::string text = nul == std::string::npos ? "ab c" : bytes.substr(nul + 1);
    const auto t = text::hf::load_hf_tokenizer_json(p.filename().string(), std::string_view(bytes).substr(0, nul));
    const Encoding e = t->encode_with(text, {false, 0});
    EXPECT_EQ(e.tokens.size(), e.ids.size());
    t->decode(e.ids, false);
    t->encode(text);
  });
  EXPECT_GE(accepted, 5u);  // the hand-made tokenizers
}

TEST(FuzzCorpus, TokenizerDir) {
  // tokenizer.json NUL tokenizer_config.json NUL special_tokens_map.json NUL text
  // (fuzz_tokenizer_dir.cpp), loaded from a directory.
  const fs::path dir = fs::temp_directory_path() / ("vkf-corpus-tokenizer-" + std::to_string(::getpid()));
  const size_t accepted = replay("tokenizer_dir", 6, [&](const fs::path&, const std::string& bytes) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    size_t from = 0;
    for (const char* name : {"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"}) {
      const size_t nul = std::min(bytes.find('\0', from), bytes.size());
      if (nul > from) std::ofstream(dir / name, std::ios::binary) << bytes.substr(from, nul - from);
      from = std::min(nul + 1, bytes.size());
    }
    const auto t = Tokenizer::load(dir.string());
    t->decode(t->encode(bytes.substr(from)), false);
  });
  fs::remove_all(dir);
  EXPECT_EQ(accepted, 6u);  // one of each kind, all valid
}

}  // namespace
}  // namespace vkf::test
