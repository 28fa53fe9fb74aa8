// Fuzz target: the "char" tokenizer of models/dates encodes arbitrary bytes.
// Invalid UTF-8 must be a vkf::Error; otherwise every id is in the vocabulary,
// encode(decode(ids)) == ids, and text without unknown characters round-trips.
// Build with -DVKF_MODELS_TOP="<repo>/models" (the models directory).
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "vkformer/tensor.hpp"
#include "vkformer/tokenizer.hpp"

#ifndef VKF_MODELS_TOP
#error "define VKF_MODELS_TOP as the path of the repository's models/ directory"
#endif

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::unique_ptr<vkf::Tokenizer> tok = vkf::Tokenizer::load(VKF_MODELS_TOP "/dates");
  static const int32_t unk = tok->encode("\xEF\xBF\xBD")[0];  // U+FFFD is outside the vocabulary
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<int32_t> ids;
  try {
    ids = tok->encode(text);
  } catch (const vkf::Error&) {
    return 0;  // invalid UTF-8
  }
  bool any_unk = false;
  for (int32_t id : ids) {
    if (id < 0 || uint32_t(id) >= tok->vocab_size()) std::abort();
    any_unk = any_unk || id == unk;
  }
  const std::string back = tok->decode(ids);  // must not throw: every id is valid
  if (tok->encode(back) != ids) std::abort();
  if (!any_unk && back != text) std::abort();
  return 0;
}
