// Fuzzes the sentencepiece_unigram tokenizer. Input starting with '{': a tokenizer.json,
// loaded and run on a few texts; anything else: UTF-8 (or not) text encoded with the
// committed fixture tests/data/sp_small, whose ids must decode. vkf::Error is expected.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "text/sentencepiece.hpp"
#include "vkformer/tensor.hpp"  // vkf::Error
#include "vkformer/tokenizer.hpp"

#ifndef VKF_FUZZ_DATA_DIR  // the source tree's tests/data, found from this file's path
#define VKF_FUZZ_DATA_DIR ""
#endif

namespace {

std::string data_dir() {
  const std::string given = VKF_FUZZ_DATA_DIR;
  if (!given.empty()) return given;
  const std::string self = __FILE__;  // .../tests/fuzz/fuzz_sentencepiece.cpp
  const size_t slash = self.find_last_of('/');
  return (slash == std::string::npos ? std::string(".") : self.substr(0, slash)) + "/../data";
}

/// Encodes `text`; ids must be in the vocabulary and decode without error.
void round_trip(const vkf::Tokenizer& t, std::string_view text) {
  std::vector<int32_t> ids;
  try {
    ids = t.encode(text);
  } catch (const vkf::Error&) {
    return;  // invalid UTF-8
  }
  for (int32_t id : ids)
    if (id < 0 || uint32_t(id) >= t.vocab_size()) std::abort();
  (void)t.decode(ids);  // a vkf::Error here would be a bug: let it escape
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<vkf::Tokenizer> fixture = vkf::Tokenizer::load(data_dir() + "/sp_small");
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (!input.empty() && input[0] == '{') {
    const nlohmann::json j = nlohmann::json::parse(input, nullptr, /*allow_exceptions=*/false);
    if (j.is_discarded() || !j.is_object()) return 0;
    std::unique_ptr<vkf::Tokenizer> t;
    try {
      t = vkf::text::load_sentencepiece_unigram(j, "fuzz/tokenizer.json");
    } catch (const vkf::Error&) {
      return 0;
    }
    for (const char* text : {"", " ", "ab c\xC3\xA9 \xF0\x9F\x98\x80x", "\xEF\xAC\x81  q\tq"}) round_trip(*t, text);
    return 0;
  }
  round_trip(*fixture, input);
  return 0;
}
