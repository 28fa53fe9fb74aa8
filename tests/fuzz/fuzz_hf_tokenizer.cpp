// Fuzzes the Hugging Face tokenizer (src/text/hf): the input is a tokenizer.json text,
// a NUL byte, then a text (no NUL: the text is "ab c"). The tokenizer.json either
// loads or is refused with a vkf::Error; a loaded tokenizer encodes the text (and a
// few fixed ones) or refuses it with a vkf::Error. Then:
// - ids, type ids and tokens have the same length; tokens are valid UTF-8;
// - without special tokens, every id is in the vocabulary (the model's and the added
//   tokens' ids; the post-processor's are taken as tokenizer.json gives them, as HF does);
// - their decode (special tokens skipped or not) does not throw and is valid UTF-8;
// - with max_length, at most max_length ids in all.
// Every vkf::Error message is one line under 1,000 characters. Anything else (a crash,
// a sanitizer report, another exception, a hang, too much memory) is a finding.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "text/hf/hf_tokenizer.hpp"
#include "text/hf/unicode.hpp"
#include "vkformer/tensor.hpp"  // vkf::Error
#include "vkformer/tokenizer.hpp"

namespace {

void check_message(const vkf::Error& e) {
  const std::string msg = e.what();
  if (msg.find('\n') != std::string::npos || msg.size() > 1000) std::abort();
}

void check_utf8(const std::string& s) {
  if (!vkf::text::hf::valid_utf8(s)) std::abort();
}

/// Encodes `text` under `o` into `e`; false when the tokenizer refuses it.
bool encode(const vkf::Tokenizer& t, std::string_view text, const vkf::EncodeOptions& o, vkf::Encoding& e) {
  try {
    e = t.encode_with(text, o);
  } catch (const vkf::Error& err) {
    check_message(err);
    return false;
  }
  if (e.type_ids.size() != e.ids.size() || e.tokens.size() != e.ids.size()) std::abort();
  if (o.max_length > 0 && e.ids.size() > o.max_length) std::abort();
  for (const std::string& token : e.tokens) check_utf8(token);
  return true;
}

void run(const vkf::Tokenizer& t, std::string_view text, uint32_t max_length) {
  vkf::Encoding e;
  if (!encode(t, text, {false, 0}, e)) return;
  for (int32_t id : e.ids) {
    if (id < 0 || uint32_t(id) >= t.vocab_size()) std::abort();
    check_utf8(t.id_to_token(id));  // a vkf::Error here escapes: a finding
  }
  check_utf8(t.decode(e.ids, true));
  check_utf8(t.decode(e.ids, false));

  if (!encode(t, text, {true, 0}, e)) return;
  for (bool skip : {true, false}) {
    try {
      check_utf8(t.decode(e.ids, skip));
    } catch (const vkf::Error& err) {
      check_message(err);  // a post-processor id outside the vocabulary
    }
  }
  encode(t, text, {true, max_length}, e);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string_view json = input.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? std::string_view("ab c") : input.substr(nul + 1);
  std::unique_ptr<vkf::Tokenizer> t;
  try {
    t = vkf::text::hf::load_hf_tokenizer_json("fuzz/tokenizer.json", json);
  } catch (const vkf::Error& e) {
    check_message(e);
    return 0;
  }
  const uint32_t max_length = 1 + uint32_t(size % 7);
  run(*t, text, max_length);
  for (const char* fixed : {"", " ", "Hello, WORLD! caf\xC3\xA9 \xF0\x9F\x98\x80 \xE4\xB8\xAD x\t\n  y"})
    run(*t, fixed, max_length);
  return 0;
}
