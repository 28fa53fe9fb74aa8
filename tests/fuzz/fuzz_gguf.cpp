// Any byte string is either a GGUF file that GgufFile accepts, with every
// metadata value readable through its accessors and every tensor inside the
// file and sized as its shape and type say, or a one-line vkf::Error. Anything
// else (a crash, a sanitizer report, another exception, an absurd allocation)
// is a finding.
#include <cstdint>
#include <string>
#include <vector>

#include "model/gguf.hpp"
#include "vkformer/error.hpp"

namespace {

// Touches every value the way a loader would, through the typed accessors.
void walk(const vkf::GgufValue& v, int depth) {
  if (depth > 64) __builtin_trap();  // the reader bounds nesting
  (void)v.describe();
  (void)v.to_u64();
  (void)v.to_i64();
  (void)v.to_f64();
  (void)v.to_bool();
  (void)v.to_string();
  if (!v.is_array()) return;
  if (v.size() != 0) (void)v.at(v.size() - 1);
  for (const vkf::GgufValue& a : v.arrays()) walk(a, depth + 1);  // by reference: at() copies
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    // An exactly sized copy, so ASan sees any read past the end of the file.
    const auto file = vkf::GgufFile::from_memory("fuzz.gguf", std::vector<uint8_t>(data, data + size));
    for (const auto& [key, value] : file.metadata()) {
      walk(value, 0);
      try { (void)file.get_strings(key); } catch (const vkf::Error&) {}
      try { (void)file.get_floats(key); } catch (const vkf::Error&) {}
      try { (void)file.get_ints(key); } catch (const vkf::Error&) {}
      try { (void)file.get_uint(key); } catch (const vkf::Error&) {}
    }
    for (const auto& t : file.tensors()) {
      const vkf::GgmlTypeInfo info = vkf::ggml_type_info(t.type);
      uint64_t n = 1;
      for (int64_t d : t.shape) n *= uint64_t(d);
      if (n != t.elements || t.bytes != n / info.block_values * info.block_bytes) __builtin_trap();
      // Inside the file, where the offset says.
      if (t.offset + t.bytes > file.file_size() - file.data_start()) __builtin_trap();
      if (t.data - file.tensors()[0].data != int64_t(t.offset) - int64_t(file.tensors()[0].offset)) __builtin_trap();
      volatile uint8_t x = t.bytes ? t.data[0] ^ t.data[t.bytes - 1] : 0;  // ASan checks the range's ends
      (void)x;
      if (t.type == vkf::GgmlType::F32 || t.type == vkf::GgmlType::F16 || t.type == vkf::GgmlType::BF16)
        if (t.elements < (1u << 20) && vkf::gguf_tensor_to_f32(t).size() != t.elements) __builtin_trap();
    }
  } catch (const vkf::Error& e) {
    // Messages are one line of reasonable length, whatever the input.
    const std::string msg = e.what();
    if (msg.find('\n') != std::string::npos || msg.size() > 1000) __builtin_trap();
  }
  return 0;
}
