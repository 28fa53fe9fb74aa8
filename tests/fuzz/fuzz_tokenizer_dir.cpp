// Fuzzes a tokenizer directory as Tokenizer::load reads it: every kind of
// tokenizer.json (the project's "char" and "sentencepiece_unigram", and Hugging
// Face's BPE, byte-level BPE, WordPiece and Unigram with their normalizers,
// pre-tokenizers, post-processors and decoders), with tokenizer_config.json and
// special_tokens_map.json beside it. The input is up to four parts separated by
// NUL bytes: tokenizer.json, tokenizer_config.json, special_tokens_map.json (an
// empty part: no such file) and a text (default "ab c"). The files are written
// to a directory of this process and loaded through the same path the CLI uses.
// The tokenizer loads or is refused with a one-line vkf::Error; a loaded one
// encodes the text and decodes the ids, or refuses with a vkf::Error. Anything
// else (a crash, a sanitizer report, another exception, a hang) is a finding.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vkformer/tensor.hpp"  // vkf::Error
#include "vkformer/tokenizer.hpp"

namespace {

namespace fs = std::filesystem;

void check_message(const vkf::Error& e) {
  const std::string msg = e.what();
  if (msg.find('\n') != std::string::npos || msg.size() > 1000) std::abort();
}

char g_dir[256];  // plain storage: still valid when the atexit handler runs

const fs::path& dir() {
  static const fs::path d = [] {
    fs::path p = fs::temp_directory_path() / ("vkf-fuzz-tokenizer-" + std::to_string(::getpid()));
    fs::create_directories(p);
    std::snprintf(g_dir, sizeof g_dir, "%s", p.c_str());
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(g_dir, ec);
    });
    return p;
  }();
  return d;
}

/// Writes `bytes` to DIR/name, or removes the file when `bytes` is empty.
void put(const char* name, std::string_view bytes) {
  const fs::path p = dir() / name;
  if (bytes.empty()) {
    std::error_code ec;
    fs::remove(p, ec);
    return;
  }
  FILE* f = std::fopen(p.c_str(), "wb");
  if (!f) std::abort();
  if (std::fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) std::abort();
  std::fclose(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view rest(reinterpret_cast<const char*>(data), size);
  std::vector<std::string_view> parts;
  for (int i = 0; i < 3; ++i) {
    const size_t nul = rest.find('\0');
    parts.push_back(rest.substr(0, nul));
    rest = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);
  }
  const std::string_view text = rest.empty() ? std::string_view("ab c") : rest;
  put("tokenizer.json", parts[0].empty() ? std::string_view("{}") : parts[0]);
  put("tokenizer_config.json", parts[1]);
  put("special_tokens_map.json", parts[2]);

  std::unique_ptr<vkf::Tokenizer> t;
  try {
    t = vkf::Tokenizer::load(dir().string());
  } catch (const vkf::Error& e) {
    check_message(e);
    return 0;
  }
  for (std::string_view s : {text, std::string_view("Hello, caf\xC3\xA9 \xF0\x9F\x98\x80 x\t\n y")}) {
    try {
      const std::vector<int32_t> ids = t->encode(s);
      for (int32_t id : ids)
        if (id < 0) std::abort();
      t->decode(ids);
      t->decode(ids, false);
    } catch (const vkf::Error& e) {
      check_message(e);
    }
  }
  for (const char* role : {"pad_token", "bos_token", "eos_token", "unk_token"})
    if (const auto token = t->special_token(role)) t->token_to_id(*token);
  return 0;
}
