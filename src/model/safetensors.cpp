// Maps a safetensors file read-only and checks it as the format's reference
// implementation does: the tensors must tile the data section exactly (no
// overlaps, no gaps), so a truncated or hand-edited file is caught at open,
// before any tensor byte is read. Mapping instead of reading keeps a model's
// load from costing the file's size in memory on top of the device's copy.
#include "model/safetensors.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <new>
#include <map>
#include <nlohmann/json.hpp>

#include "io/read_file.hpp"
#include "model/json_parse.hpp"
#include "model/json_text.hpp"
#include "vkformer/tensor.hpp"

namespace vkf {
namespace {

using json = nlohmann::json;

constexpr uint64_t kMaxHeader = 100ull << 20;  // the reference implementation's limit

// Every dtype of the format, with its size: files may hold integer tensors
// (Hugging Face checkpoints carry "embeddings.position_ids" as I64) that the
// model does not read. Only the float ones convert to fp32.
uint64_t dtype_bytes(const std::string& dtype) {
  static const std::map<std::string, uint64_t> kSizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
  auto it = kSizes.find(dtype);
  return it == kSizes.end() ? 0 : it->second;
}

}  // namespace

SafeTensorsFile::SafeTensorsFile(const std::string& path) : path_(path) {
  io::MappedFile m = io::map_file(path_, "the safetensors file");
  storage_ = std::move(m.storage);
  mapped_ = storage_ != nullptr;
  data_ = m.data;
  size_ = m.size;
  parse();
}

SafeTensorsFile SafeTensorsFile::from_memory(const std::string& name, std::vector<uint8_t> bytes) {
  SafeTensorsFile f;
  f.path_ = name;
  auto owned = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  f.data_ = owned->data();
  f.size_ = owned->size();
  f.storage_ = std::move(owned);
  f.parse();
  return f;
}

SafeTensorsFile SafeTensorsFile::from_tensors(std::string path, std::map<std::string, SafeTensor> tensors,
                                              std::shared_ptr<const void> storage, const uint8_t* data,
                                              uint64_t size) {
  SafeTensorsFile f;
  f.path_ = std::move(path);
  f.tensors_ = std::move(tensors);
  f.storage_ = std::move(storage);
  f.data_ = data;
  f.size_ = size;
  return f;
}

void SafeTensorsFile::parse() {
  auto fail = [&](const std::string& what) -> Error { return Error(path_ + ": " + what); };

  const uint64_t size = size_;
  if (size == 0) throw fail("is empty (0 bytes), not a safetensors file");
  if (size < 8) throw fail("is " + std::to_string(size) + " bytes, too short for the 8-byte header length");
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | data_[size_t(i)];  // little-endian
  if (header_len > kMaxHeader)
    throw fail("header length " + std::to_string(header_len) +
               " is absurdly large (> 100 MB); not a safetensors file?");
  if (header_len > size - 8)
    throw fail("header length " + std::to_string(header_len) + " runs past the end of the file (" +
               std::to_string(size) + " bytes)");

  const char* text = reinterpret_cast<const char*>(data_) + 8;
  const std::string header(text, text + header_len);
  data_start_ = 8 + header_len;
  const uint64_t data_size = size - data_start_;

  json h;
  try {
    h = parse_json_bounded(header);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers like 1e400
    throw fail("header is not valid JSON: " + json_error_text(e));
  }
  if (!h.is_object()) throw fail("header must be a JSON object, got " + std::string(h.type_name()));

  for (const auto& [name, e] : h.items()) {
    const std::string where = "tensor \"" + printable(name) + "\"";
    if (name == "__metadata__") {
      if (!e.is_object()) throw fail("\"__metadata__\" must be an object of strings, got " + brief_json(e));
      for (const auto& [k, v] : e.items())
        if (!v.is_string())
          throw fail("\"__metadata__\" entry \"" + printable(k) + "\" must be a string, got " + brief_json(v));
      continue;
    }
    if (!e.is_object()) throw fail(where + ": header entry must be an object, got " + brief_json(e));
    for (const char* key : {"dtype", "shape", "data_offsets"})
      if (!e.contains(key)) throw fail(where + ": missing \"" + key + "\"");

    SafeTensor t;
    const json& dt = e["dtype"];
    if (!dt.is_string()) throw fail(where + ": \"dtype\" must be a string, got " + brief_json(dt));
    t.dtype = dt.get<std::string>();
    const uint64_t elem = dtype_bytes(t.dtype);
    if (elem == 0)
      throw fail(where + ": unknown dtype " + printable(t.dtype) +
                 " (safetensors has BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, F64, "
                 "I64, U64)");

    const json& sh = e["shape"];
    if (!sh.is_array()) throw fail(where + ": \"shape\" must be an array, got " + brief_json(sh));
    // The byte count, refusing shapes whose product overflows (unless a dim is 0).
    uint64_t expect = elem;
    bool overflow = false;
    for (const json& d : sh) {
      if (!d.is_number_integer() || (!d.is_number_unsigned() && d.get<int64_t>() < 0))
        throw fail(where + ": \"shape\" must hold non-negative integers, got " + brief_json(sh));
      const uint64_t n = d.get<uint64_t>();
      if (n > uint64_t(INT64_MAX)) throw fail(where + ": dimension " + brief_json(d) + " is too large");
      t.shape.push_back(int64_t(n));
      overflow = overflow || (n != 0 && expect > UINT64_MAX / n);
      expect *= n;  // unsigned: may wrap, but then overflow is set
    }
    const bool has_zero = std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end();
    if (has_zero)
      expect = 0;
    else if (overflow)
      throw fail(where + ": shape " + shape_string(t.shape) + " is absurdly large");

    const json& off = e["data_offsets"];
    if (!off.is_array() || off.size() != 2 || !off[0].is_number_unsigned() || !off[1].is_number_unsigned())
      throw fail(where + ": \"data_offsets\" must be [begin, end] with non-negative integers, got " +
                 brief_json(off));
    const uint64_t begin = off[0].get<uint64_t>(), stop = off[1].get<uint64_t>();
    if (begin > stop)
      throw fail(where + ": data_offsets [" + std::to_string(begin) + ", " + std::to_string(stop) +
                 "] has begin > end");
    if (stop > data_size)
      throw fail(where + ": data_offsets end " + std::to_string(stop) + " is beyond the data section (" +
                 std::to_string(data_size) + " bytes; file truncated?)");
    if (stop - begin != expect)
      throw fail(where + ": shape " + shape_string(t.shape) + " × " + t.dtype + " is " +
                 std::to_string(expect) + " bytes but data_offsets span " + std::to_string(stop - begin));
    t.offset = begin;
    t.bytes = stop - begin;
    tensors_.emplace(name, std::move(t));
  }

  // `vkformer quantize`'s block tensors: U8 rows of blocks, named in __metadata__.
  if (h.contains("__metadata__"))
    for (const auto& [key, v] : h["__metadata__"].items()) {
      if (key.rfind(kBlockFormatKey, 0) != 0) continue;
      const std::string name = key.substr(kBlockFormatKey.size()), format = v.get<std::string>();
      const std::string where = "__metadata__ \"" + printable(key) + "\": ";
      const auto it = tensors_.find(name);
      if (it == tensors_.end()) throw fail(where + "there is no tensor \"" + printable(name) + "\"");
      const std::optional<DType> dt = block_dtype_named(format);
      if (!dt) throw fail(where + "\"" + printable(format) + "\" is not a block format (Q8_0, Q4_0, Q4_1, Q4_K, Q6_K)");
      SafeTensor& t = it->second;
      const uint64_t row = t.shape.empty() ? 0 : uint64_t(t.shape.back());
      if (t.dtype != "U8" || row == 0 || row % dtype_block_bytes(*dt))
        throw fail(where + "tensor \"" + printable(name) + "\" must be U8 [..., whole " + format + " blocks of " +
                   std::to_string(dtype_block_bytes(*dt)) + " bytes], got " + t.dtype + " " + shape_string(t.shape));
      t.shape.back() = int64_t(row / dtype_block_bytes(*dt) * dtype_block(*dt));
      t.dtype = format;
    }

  // The tensors must cover the data section exactly once.
  std::vector<std::pair<const std::string*, const SafeTensor*>> order;
  for (const auto& [name, t] : tensors_) order.emplace_back(&name, &t);
  std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
    return a.second->offset != b.second->offset ? a.second->offset < b.second->offset
                                                : a.second->bytes < b.second->bytes;
  });
  uint64_t pos = 0;
  const std::string* prev = nullptr;
  for (const auto& [name, t] : order) {
    if (t->offset < pos)
      throw fail("tensors \"" + printable(*prev) + "\" and \"" + printable(*name) + "\" overlap (bytes " +
                 std::to_string(t->offset) + " to " + std::to_string(pos) + " of the data section)");
    if (t->offset > pos)
      throw fail("bytes " + std::to_string(pos) + " to " + std::to_string(t->offset) +
                 " of the data section belong to no tensor (a gap before \"" + printable(*name) + "\")");
    pos = t->offset + t->bytes;
    prev = name;
  }
  if (pos != data_size)
    throw fail("bytes " + std::to_string(pos) + " to " + std::to_string(data_size) +
               " of the data section belong to no tensor (trailing data)");
}

void SafeTensorsFile::release(const uint8_t* p, uint64_t bytes) const {
  if (mapped_) io::drop_pages(p, bytes);
}

const SafeTensor& SafeTensorsFile::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) throw Error(path_ + ": no tensor \"" + printable(name) + "\"");
  return it->second;
}

std::string block_dtype_spelled(DType t) {
  std::string upper = dtype_name(t);
  for (char& ch : upper) ch = char(std::toupper(static_cast<unsigned char>(ch)));
  return upper;
}

std::optional<DType> block_dtype_named(const std::string& dtype) {
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q4_K, DType::Q6_K})
    if (dtype == block_dtype_spelled(t)) return t;
  return std::nullopt;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (s.size() > 80) return s + ", ... (" + std::to_string(shape.size()) + " dimensions)]";
    s += (i ? ", " : "") + std::to_string(shape[i]);
  }
  return s + "]";
}

std::string unsupported_dtype(const std::string& name, const std::string& dtype) {
  return "tensor \"" + printable(name) + "\": dtype " + dtype + " is not supported (only F32, F16 and BF16)";
}

std::vector<float> SafeTensorsFile::to_f32(const std::string& name) const {
  const SafeTensor& t = get(name);
  if (!is_float_dtype(t.dtype)) throw Error(path_ + ": " + unsupported_dtype(name, t.dtype));
  const uint8_t* p = data_ + data_start_ + t.offset;
  const size_t n = size_t(t.bytes / dtype_bytes(t.dtype));
  std::vector<float> out;
  try {
    out.resize(n);
  } catch (const std::bad_alloc&) {
    throw Error(path_ + ": tensor \"" + printable(name) + "\": no host memory for its " + std::to_string(n) +
                " values in fp32");
  }
  // The format is little-endian, as is every host vkformer runs on.
  if (t.dtype == "F32") {
    if (n) std::memcpy(out.data(), p, n * 4);
  } else if (t.dtype == "F16") {
    for (size_t i = 0; i < n; ++i) out[i] = half_to_float(uint16_t(p[2 * i] | (p[2 * i + 1] << 8)));
  } else {  // BF16
    for (size_t i = 0; i < n; ++i) out[i] = bf16_to_float(uint16_t(p[2 * i] | (p[2 * i + 1] << 8)));
  }
  release(p, t.bytes);
  return out;
}

}  // namespace vkf
