// Test helper (tests/gguf_check.py): prints what vkf::GgufFile reads from a GGUF
// file as one JSON object: version, alignment, data start, metadata in file
// order (each value with its type; arrays as nested lists), and every tensor's
// name, ggml type, shape, offset, byte count and a checksum of its bytes (or
// the bytes in hex with --hex). On an error prints its one line to stderr and
// exits 1.
//   gguf_dump [--hex] FILE.gguf
#include <cstring>
#include <iostream>

#include <nlohmann/json.hpp>

#include "model/gguf.hpp"
#include "vkformer/error.hpp"

namespace {

using json = nlohmann::json;

json value_json(const vkf::GgufValue& v) {
  using T = vkf::GgufType;
  if (v.is_array()) {
    json a = json::array();
    for (size_t i = 0; i < v.size(); ++i) a.push_back(value_json(v.at(i)));
    return a;
  }
  if (v.type() == T::STRING) return v.as_string();
  if (v.type() == T::BOOL) return v.as_bool();
  if (v.is_float()) return v.as_f64();
  if (auto u = v.to_u64()) return *u;
  return v.as_i64();
}

// sum of byte[i] * (i % 65521 + 1), mod 2^64: cheap in C++ and in numpy.
uint64_t checksum(const uint8_t* p, uint64_t n) {
  uint64_t s = 0;
  for (uint64_t i = 0; i < n; ++i) s += uint64_t(p[i]) * (i % 65521 + 1);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const bool hex = argc == 3 && std::strcmp(argv[1], "--hex") == 0;
  if (argc != 2 && !hex) {
    std::cerr << "usage: gguf_dump [--hex] FILE.gguf\n";
    return 2;
  }
  try {
    const vkf::GgufFile f(argv[argc - 1]);
    json out;
    out["version"] = f.version();
    out["alignment"] = f.alignment();
    out["data_start"] = f.data_start();
    json meta = json::array();
    for (const std::string& key : f.keys()) {
      const vkf::GgufValue& v = f.get(key);
      json e = {{"key", key}, {"type", vkf::gguf_type_name(v.type())}, {"value", value_json(v)}};
      if (v.is_array()) e["element_type"] = vkf::gguf_type_name(v.element_type());
      meta.push_back(std::move(e));
    }
    out["metadata"] = std::move(meta);
    json tensors = json::array();
    for (const vkf::GgufTensor& t : f.tensors()) {
      json e = {{"name", t.name},       {"type", uint32_t(t.type)}, {"type_name", vkf::ggml_type_name(t.type)},
                {"shape", t.shape},     {"elements", t.elements},   {"offset", t.offset},
                {"bytes", t.bytes},     {"checksum", checksum(t.data, t.bytes)}};
      if (hex) {
        static const char* kDigits = "0123456789abcdef";
        std::string h;
        h.reserve(size_t(t.bytes) * 2);
        for (uint64_t i = 0; i < t.bytes; ++i) h += kDigits[t.data[i] >> 4], h += kDigits[t.data[i] & 15];
        e["hex"] = std::move(h);
      }
      tensors.push_back(std::move(e));
    }
    out["tensors"] = std::move(tensors);
    std::cout << out.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  } catch (const vkf::Error& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
