// Maps a GGUF file read-only and checks all of it at open, as safetensors.cpp
// does for its format: every count and length is held against the bytes left
// in the file before anything is allocated for it, so a hostile or truncated
// file costs one line of error, never a crash, a hang or gigabytes of memory.
// Tensor data is never copied: each GgufTensor points into the mapping.
#include "model/gguf.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <new>

#include "io/read_file.hpp"
#include "model/json_text.hpp"
#include "model/safetensors.hpp"
#include "vkformer/tensor.hpp"

namespace vkf {
namespace {

constexpr uint32_t kMaxDims = 4;          // GGML_MAX_DIMS
constexpr int kMaxNesting = 32;           // arrays of arrays; the format sets no limit, a stack does
constexpr uint32_t kDefaultAlignment = 32;  // GGUF_DEFAULT_ALIGNMENT
const char* const kReadTypes = "F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K";

std::string num(uint64_t v) { return std::to_string(v); }
std::string q_name(const std::string& s) { return "'" + printable(s) + "'"; }

// Bytes of one scalar of a metadata type, 0 for STRING, ARRAY and unknown types.
uint64_t scalar_bytes(uint32_t type) {
  switch (GgufType(type)) {
    case GgufType::UINT8: case GgufType::INT8: case GgufType::BOOL: return 1;
    case GgufType::UINT16: case GgufType::INT16: return 2;
    case GgufType::UINT32: case GgufType::INT32: case GgufType::FLOAT32: return 4;
    case GgufType::UINT64: case GgufType::INT64: case GgufType::FLOAT64: return 8;
    default: return 0;
  }
}

bool is_signed(GgufType t) {
  return t == GgufType::INT8 || t == GgufType::INT16 || t == GgufType::INT32 || t == GgufType::INT64;
}

// The least number of bytes one element of this type takes in the file.
uint64_t min_bytes(uint32_t type) {
  if (type == uint32_t(GgufType::STRING)) return 8;        // its length
  if (type == uint32_t(GgufType::ARRAY)) return 4 + 8;     // element type and count
  return scalar_bytes(type);
}

std::string shape_of(const std::vector<uint64_t>& ne) {
  std::string s = "[";
  for (size_t i = 0; i < ne.size(); ++i) s += (i ? ", " : "") + num(ne[i]);
  return s + "]";
}

}  // namespace

// ---- types ---------------------------------------------------------------

std::string ggml_type_name(uint32_t type) {
  static const char* const kNames[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",  "Q4_2",   "Q4_3",  "Q5_0",   "Q5_1",   "Q8_0",    "Q8_1",
      "Q2_K",    "Q3_K",   "Q4_K",    "Q5_K",  "Q6_K",   "Q8_K",  "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S",
      "IQ4_NL",  "IQ3_S",  "IQ2_S",   "IQ4_XS", "I8",    "I16",   "I32",    "I64",    "F64",     "IQ1_M",
      "BF16",    "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8", "TQ1_0", "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8",
      "IQ4_NL_8_8", "MXFP4", "NVFP4", "Q1_0"};
  if (type < sizeof(kNames) / sizeof(kNames[0])) return kNames[type];
  return "type " + num(type);
}

std::optional<GgmlTypeInfo> ggml_type_info(uint32_t type) {
  switch (GgmlType(type)) {
    case GgmlType::F32: return GgmlTypeInfo{1, 4};
    case GgmlType::F16: return GgmlTypeInfo{1, 2};
    case GgmlType::BF16: return GgmlTypeInfo{1, 2};
    case GgmlType::Q4_0: return GgmlTypeInfo{32, 18};   // fp16 scale, 16 bytes of nibbles
    case GgmlType::Q4_1: return GgmlTypeInfo{32, 20};   // fp16 scale and min, 16 bytes of nibbles
    case GgmlType::Q8_0: return GgmlTypeInfo{32, 34};   // fp16 scale, 32 int8
    case GgmlType::Q4_K: return GgmlTypeInfo{256, 144};  // 2 fp16, 12 bytes of scales, 128 of nibbles
    case GgmlType::Q6_K: return GgmlTypeInfo{256, 210};  // 128 low nibbles, 64 high bits, 16 scales, fp16
  }
  return std::nullopt;
}

std::string gguf_type_name(uint32_t type) {
  static const char* const kNames[] = {"uint8", "int8",   "uint16", "int16", "uint32", "int32",  "float32",
                                       "bool",  "string", "array",  "uint64", "int64", "float64"};
  if (type < sizeof(kNames) / sizeof(kNames[0])) return kNames[type];
  return "type " + num(type);
}

// ---- values --------------------------------------------------------------

bool GgufValue::is_integer() const { return scalar_bytes(uint32_t(type_)) != 0 && !is_float() && type_ != GgufType::BOOL; }

std::optional<uint64_t> GgufValue::to_u64() const {
  if (!is_integer()) return std::nullopt;
  if (is_signed(type_)) {
    const std::optional<int64_t> v = to_i64();
    if (!v || *v < 0) return std::nullopt;
    return uint64_t(*v);
  }
  return bits_;
}

std::optional<int64_t> GgufValue::to_i64() const {
  if (!is_integer()) return std::nullopt;
  switch (type_) {
    case GgufType::INT8: return int64_t(int8_t(uint8_t(bits_)));
    case GgufType::INT16: return int64_t(int16_t(uint16_t(bits_)));
    case GgufType::INT32: return int64_t(int32_t(uint32_t(bits_)));
    case GgufType::INT64: return int64_t(bits_);
    default:
      if (bits_ > uint64_t(INT64_MAX)) return std::nullopt;
      return int64_t(bits_);
  }
}

std::optional<double> GgufValue::to_f64() const {
  if (type_ == GgufType::FLOAT32) {
    float f;
    const uint32_t b = uint32_t(bits_);
    std::memcpy(&f, &b, 4);
    return double(f);
  }
  if (type_ == GgufType::FLOAT64) {
    double d;
    std::memcpy(&d, &bits_, 8);
    return d;
  }
  if (!is_integer()) return std::nullopt;
  if (is_signed(type_)) return double(*to_i64());
  return double(bits_);
}

std::optional<bool> GgufValue::to_bool() const {
  if (type_ != GgufType::BOOL) return std::nullopt;
  return bits_ != 0;
}

const std::string* GgufValue::to_string() const { return type_ == GgufType::STRING ? &string_ : nullptr; }

uint64_t GgufValue::as_u64() const {
  if (auto v = to_u64()) return *v;
  throw Error("the value is " + describe() + ", not a non-negative integer");
}
int64_t GgufValue::as_i64() const {
  if (auto v = to_i64()) return *v;
  throw Error("the value is " + describe() + ", not an integer that fits int64");
}
double GgufValue::as_f64() const {
  if (auto v = to_f64()) return *v;
  throw Error("the value is " + describe() + ", not a number");
}
bool GgufValue::as_bool() const {
  if (auto v = to_bool()) return *v;
  throw Error("the value is " + describe() + ", not a bool");
}
const std::string& GgufValue::as_string() const {
  if (const std::string* s = to_string()) return *s;
  throw Error("the value is " + describe() + ", not a string");
}

size_t GgufValue::size() const {
  if (!is_array()) return 0;
  if (elem_type_ == GgufType::STRING) return strings_.size();
  if (elem_type_ == GgufType::ARRAY) return arrays_.size();
  return raw_.size() / scalar_bytes(uint32_t(elem_type_));
}

GgufValue GgufValue::at(size_t i) const {
  if (!is_array()) throw Error("the value is " + describe() + ", not an array");
  if (i >= size()) throw Error("index " + num(i) + " is past the end of an array of " + num(size()));
  if (elem_type_ == GgufType::ARRAY) return arrays_[i];
  GgufValue v;
  v.type_ = elem_type_;
  if (elem_type_ == GgufType::STRING) {
    v.string_ = strings_[i];
  } else {
    const uint64_t n = scalar_bytes(uint32_t(elem_type_));
    std::memcpy(&v.bits_, raw_.data() + i * n, size_t(n));  // little-endian host
  }
  return v;
}

std::string GgufValue::describe() const {
  if (is_array()) return "an array of " + num(size()) + " " + gguf_type_name(elem_type_);
  if (type_ == GgufType::STRING) return "the string \"" + printable(string_, 60) + "\"";
  std::string s = "the " + gguf_type_name(type_) + " ";
  if (type_ == GgufType::BOOL) return s + (bits_ ? "true" : "false");
  if (is_float()) {
    char buf[40];
    std::snprintf(buf, sizeof buf, "%.9g", *to_f64());
    return s + buf;
  }
  return s + (is_signed(type_) ? std::to_string(*to_i64()) : num(bits_));
}

// ---- writing -------------------------------------------------------------

namespace {

template <class T>
void append_le(std::string& out, T v) {  // little-endian, as every host vkformer runs on
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void append_string(std::string& out, const std::string& s) {
  append_le<uint64_t>(out, s.size());
  out += s;
}

}  // namespace

GgufValue GgufValue::uint32(uint32_t v) {
  GgufValue g;
  g.type_ = GgufType::UINT32;
  g.bits_ = v;
  return g;
}

void GgufValue::append_to(std::string& out) const {
  if (type_ == GgufType::STRING) return append_string(out, string_);
  if (type_ != GgufType::ARRAY) {
    out.append(reinterpret_cast<const char*>(&bits_), size_t(scalar_bytes(uint32_t(type_))));
    return;
  }
  append_le<uint32_t>(out, uint32_t(elem_type_));
  append_le<uint64_t>(out, size());
  if (elem_type_ == GgufType::STRING) {
    for (const std::string& e : strings_) append_string(out, e);
  } else if (elem_type_ == GgufType::ARRAY) {
    for (const GgufValue& e : arrays_) e.append_to(out);
  } else {
    out.append(reinterpret_cast<const char*>(raw_.data()), raw_.size());
  }
}

std::string GgufFile::head(const std::map<std::string, GgufValue>& set, const std::vector<GgufTensorOut>& tensors) const {
  std::vector<std::string> keys = keys_;
  for (const auto& [k, v] : set)
    if (!metadata_.count(k)) keys.push_back(k);
  std::string out = "GGUF";
  append_le<uint32_t>(out, 3);
  append_le<uint64_t>(out, tensors.size());
  append_le<uint64_t>(out, keys.size());
  for (const std::string& k : keys) {
    const auto it = set.find(k);
    const GgufValue& v = it != set.end() ? it->second : metadata_.at(k);
    append_string(out, k);
    append_le<uint32_t>(out, uint32_t(v.type()));
    v.append_to(out);
  }
  uint64_t offset = 0;
  for (const GgufTensorOut& t : tensors) {
    append_string(out, t.name);
    append_le<uint32_t>(out, uint32_t(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) append_le<uint64_t>(out, uint64_t(*d));  // innermost first
    append_le<uint32_t>(out, uint32_t(t.type));
    append_le<uint64_t>(out, offset);
    offset = (offset + t.bytes + alignment_ - 1) / alignment_ * alignment_;
  }
  out.append((alignment_ - out.size() % alignment_) % alignment_, '\0');
  return out;
}

// ---- parsing -------------------------------------------------------------

/// A cursor over the file's bytes; every read checks the bytes left first.
struct GgufParser {
  const std::string& path;
  const uint8_t* data;
  uint64_t size;
  uint64_t pos = 0;

  Error fail(const std::string& what) const { return Error(path + ": " + what); }
  uint64_t left() const { return size - pos; }
  // `what` is a callable building the description, so that none is built unless needed.
  template <class What>
  void need(uint64_t n, const What& what) const {
    if (n > left())
      throw fail("ends at byte " + num(size) + ", inside " + what() + " (" + num(n) + " bytes from byte " +
                 num(pos) + "); truncated?");
  }
  template <class T, class What>
  T read(const What& what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data + pos, sizeof(T));  // the format is little-endian, as is every host vkformer runs on
    pos += sizeof(T);
    return v;
  }
  template <class What>
  std::string read_string(const What& what) {
    const uint64_t at = pos;
    const uint64_t n = read<uint64_t>([&] { return "the length of " + what(); });
    if (n > left())
      throw fail(what() + ": string length " + num(n) + " at byte " + num(at) + " runs past the end of the file (" +
                 num(left()) + " bytes left)");
    std::string s(reinterpret_cast<const char*>(data + pos), size_t(n));
    pos += n;
    return s;
  }

  // Not a template: arrays of arrays would instantiate it without end.
  GgufValue read_value(uint32_t type, const std::function<std::string()>& what, int depth) {
    GgufValue v;
    v.type_ = GgufType(type);
    if (type == uint32_t(GgufType::STRING)) {
      v.string_ = read_string(what);
      return v;
    }
    if (type == uint32_t(GgufType::ARRAY)) {
      if (depth >= kMaxNesting)
        throw fail(what() + ": arrays nested deeper than " + num(kMaxNesting) + " levels");
      const uint32_t et = read<uint32_t>([&] { return "the element type of " + what(); });
      if (et > uint32_t(GgufType::FLOAT64))
        throw fail(what() + ": array element type " + num(et) + " is not a GGUF value type (0 to 12)");
      const uint64_t at = pos;
      const uint64_t count = read<uint64_t>([&] { return "the element count of " + what(); });
      const uint64_t each = min_bytes(et);
      if (count > left() / each)
        throw fail(what() + ": array of " + num(count) + " " + gguf_type_name(et) + " at byte " + num(at) +
                   " runs past the end of the file (" + num(left()) + " bytes left)");
      v.elem_type_ = GgufType(et);
      if (et == uint32_t(GgufType::STRING)) {
        v.strings_.reserve(size_t(std::min<uint64_t>(count, 1u << 16)));  // grows with what is really read
        for (uint64_t i = 0; i < count; ++i)
          v.strings_.push_back(read_string([&] { return what() + " element " + num(i); }));
      } else if (et == uint32_t(GgufType::ARRAY)) {
        // Not reserved: an element takes 12 bytes in the file but a GgufValue in memory.
        for (uint64_t i = 0; i < count; ++i)
          v.arrays_.push_back(read_value(et, [&] { return what() + " element " + num(i); }, depth + 1));
      } else {
        v.raw_.assign(data + pos, data + pos + count * each);
        if (et == uint32_t(GgufType::BOOL))
          for (uint64_t i = 0; i < count; ++i)
            if (v.raw_[size_t(i)] > 1)
              throw fail(what() + " element " + num(i) + ": bool byte " + num(v.raw_[size_t(i)]) +
                         " at byte " + num(pos + i) + " is neither 0 nor 1");
        pos += count * each;
      }
      return v;
    }
    const uint64_t n = scalar_bytes(type);
    if (n == 0) throw fail(what() + ": value type " + num(type) + " is not a GGUF value type (0 to 12)");
    need(n, what);
    std::memcpy(&v.bits_, data + pos, size_t(n));
    if (type == uint32_t(GgufType::BOOL) && v.bits_ > 1)
      throw fail(what() + ": bool byte " + num(v.bits_) + " at byte " + num(pos) + " is neither 0 nor 1");
    pos += n;
    return v;
  }
};

GgufFile::GgufFile(const std::string& path) : path_(path) {
  io::MappedFile m = io::map_file(path_, "the GGUF file");
  storage_ = std::move(m.storage);
  mapped_ = storage_ != nullptr;
  data_ = m.data;
  size_ = m.size;
  parse();
}

GgufFile GgufFile::from_memory(const std::string& name, std::vector<uint8_t> bytes) {
  GgufFile f;
  f.path_ = name;
  auto owned = std::make_shared<const std::vector<uint8_t>>(std::move(bytes));
  f.data_ = owned->data();
  f.size_ = owned->size();
  f.storage_ = std::move(owned);
  f.parse();
  return f;
}

void GgufFile::parse() {
  GgufParser in{path_, data_, size_};
  auto fail = [&](const std::string& what) { return in.fail(what); };

  if (size_ == 0) throw fail("is empty (0 bytes), not a GGUF file");
  if (size_ < 4 || std::memcmp(data_, "GGUF", 4) != 0) {
    std::string head(reinterpret_cast<const char*>(data_), size_t(std::min<uint64_t>(size_, 4)));
    throw fail("does not start with the magic \"GGUF\" (it starts with \"" + printable(head) +
               "\"): not a GGUF file");
  }
  in.pos = 4;
  const uint32_t version = in.read<uint32_t>([] { return std::string("the version"); });
  if (version != 0 && (version & 0xffffu) == 0)
    throw fail("is a big-endian GGUF file (version " + num(__builtin_bswap32(version)) +
               " byte-swapped); vkformer reads little-endian files only");
  if (version == 1)
    throw fail("is GGUF version 1, an early format with 32-bit counts; vkformer reads versions 2 and 3 "
               "(convert the model again with a current llama.cpp)");
  if (version != 2 && version != 3) throw fail("has GGUF version " + num(version) + "; vkformer reads versions 2 and 3");
  version_ = version;

  const uint64_t tensor_count = in.read<uint64_t>([] { return std::string("the tensor count"); });
  const uint64_t kv_count = in.read<uint64_t>([] { return std::string("the metadata count"); });
  // Each metadata entry takes at least 13 bytes (key length, type, a uint8), each tensor info 24.
  if (kv_count > in.left() / 13)
    throw fail("metadata count " + num(kv_count) + " is more than the rest of the file can hold (" + num(in.left()) +
               " bytes, at least 13 per entry; truncated?)");
  if (tensor_count > (in.left() - kv_count * 13) / 24)
    throw fail("tensor count " + num(tensor_count) + " is more than the rest of the file can hold (" +
               num(in.left()) + " bytes, at least 24 per tensor and 13 per metadata entry; truncated?)");

  // ---- metadata
  std::map<std::string, uint64_t> key_index;
  for (uint64_t i = 0; i < kv_count; ++i) {
    const uint64_t at = in.pos;
    std::string key = in.read_string([&] { return "the key of metadata entry " + num(i) + " (at byte " + num(at) + ")"; });
    auto what = [&] { return "metadata key " + q_name(key); };
    if (key_index.count(key))
      throw fail("duplicate " + what() + " (entries " + num(key_index[key]) + " and " + num(i) + ")");
    const uint32_t type = in.read<uint32_t>([&] { return "the value type of " + what(); });
    if (type > uint32_t(GgufType::FLOAT64))
      throw fail(what() + ": value type " + num(type) + " is not a GGUF value type (0 to 12)");
    GgufValue v = in.read_value(type, what, 0);
    key_index.emplace(key, i);
    keys_.push_back(key);
    metadata_.emplace(std::move(key), std::move(v));
  }

  // ---- alignment (read before the tensor infos are checked against it)
  auto al = metadata_.find("general.alignment");
  if (al != metadata_.end()) {
    if (al->second.type() != GgufType::UINT32)
      throw fail("metadata key 'general.alignment' is " + al->second.describe() + "; expected a uint32");
    const uint64_t a = al->second.bits_;
    if (a == 0 || (a & (a - 1)) != 0)
      throw fail("metadata key 'general.alignment' is " + num(a) + "; expected a power of two");
    alignment_ = uint32_t(a);
  } else {
    alignment_ = kDefaultAlignment;
  }

  // ---- tensor infos
  tensors_.reserve(size_t(tensor_count));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    const uint64_t at = in.pos;
    GgufTensor t;
    t.name = in.read_string([&] { return "the name of tensor " + num(i) + " (at byte " + num(at) + ")"; });
    auto what = [&] { return "tensor " + q_name(t.name); };
    if (by_name_.count(t.name))
      throw fail("duplicate " + what() + " (tensors " + num(by_name_[t.name]) + " and " + num(i) + ")");
    const uint32_t n_dims = in.read<uint32_t>([&] { return "the dimension count of " + what(); });
    if (n_dims > kMaxDims)
      throw fail(what() + " has " + num(n_dims) + " dimensions; GGUF allows at most " + num(kMaxDims));
    std::vector<uint64_t> ne(n_dims);
    for (uint32_t d = 0; d < n_dims; ++d)
      ne[d] = in.read<uint64_t>([&] { return "dimension " + num(d) + " of " + what(); });
    const uint32_t type = in.read<uint32_t>([&] { return "the ggml type of " + what(); });
    t.offset = in.read<uint64_t>([&] { return "the data offset of " + what(); });

    // ne is innermost first: ne = [576, 1536] is 1536 rows of 576.
    uint64_t elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      if (ne[d] == 0) throw fail(what() + " has a zero dimension (ne = " + shape_of(ne) + ", innermost first)");
      if (ne[d] > uint64_t(INT64_MAX) || elements > uint64_t(INT64_MAX) / ne[d])
        throw fail(what() + ": dimensions ne = " + shape_of(ne) + " overflow 64 bits");
      elements *= ne[d];
    }
    const std::optional<GgmlTypeInfo> info = ggml_type_info(type);
    if (!info) {
      const std::string name = ggml_type_name(type);
      throw fail(what() + " has ggml type " +
                 (name.rfind("type ", 0) == 0 ? num(type) + " (not a ggml type)" : name + " (" + num(type) + ")") +
                 "; vkformer reads " + kReadTypes);
    }
    const uint64_t inner = n_dims ? ne[0] : 1;
    if (inner % info->block_values != 0)
      throw fail(what() + ": innermost dimension " + num(inner) + " (ne = " + shape_of(ne) + ") is not a multiple of " +
                 ggml_type_name(type) + "'s block of " + num(info->block_values) + " values");
    const uint64_t blocks = elements / info->block_values;
    if (blocks > UINT64_MAX / info->block_bytes)
      throw fail(what() + ": dimensions ne = " + shape_of(ne) + " overflow 64 bits in bytes");
    t.type = GgmlType(type);
    t.elements = elements;
    t.bytes = blocks * info->block_bytes;
    for (uint32_t d = n_dims; d-- > 0;) t.shape.push_back(int64_t(ne[d]));
    if (t.offset % alignment_ != 0)
      throw fail(what() + ": data offset " + num(t.offset) + " is not a multiple of the alignment " + num(alignment_));
    by_name_.emplace(t.name, size_t(i));
    tensors_.push_back(std::move(t));
  }

  // ---- the data section: at the next multiple of the alignment
  const uint64_t pad = (alignment_ - in.pos % alignment_) % alignment_;
  data_start_ = in.pos + pad;  // no overflow: pos <= size and alignment < 2^32
  const uint64_t data_size = size_ > data_start_ ? size_ - data_start_ : 0;
  for (GgufTensor& t : tensors_) {
    if (t.offset > data_size || t.bytes > data_size - t.offset)
      throw fail("tensor " + q_name(t.name) + ": bytes " + num(t.offset) + " to " +
                 (t.offset > UINT64_MAX - t.bytes ? std::string("beyond 2^64") : num(t.offset + t.bytes)) +
                 " of the data section (at byte " + num(data_start_) + ") run past the end of the file (" + num(size_) +
                 " bytes; truncated?)");
    t.data = data_ + data_start_ + t.offset;
  }
  std::vector<const GgufTensor*> order;
  order.reserve(tensors_.size());
  for (const GgufTensor& t : tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const GgufTensor* a, const GgufTensor* b) { return a->offset < b->offset; });
  for (size_t i = 1; i < order.size(); ++i) {
    const GgufTensor& a = *order[i - 1];
    const GgufTensor& b = *order[i];
    if (b.offset < a.offset + a.bytes)
      throw fail("tensors " + q_name(a.name) + " and " + q_name(b.name) + " overlap (bytes " + num(b.offset) + " to " +
                 num(std::min(a.offset + a.bytes, b.offset + b.bytes)) + " of the data section)");
  }
}

// ---- access --------------------------------------------------------------

std::string GgufFile::where(const std::string& key) const { return path_ + ": metadata key " + q_name(key); }

const GgufValue& GgufFile::get(const std::string& key) const {
  auto it = metadata_.find(key);
  if (it == metadata_.end()) throw Error(path_ + ": no metadata key " + q_name(key));
  return it->second;
}

namespace {
Error wrong(const std::string& where, const GgufValue& v, const char* expected) {
  return Error(where + " is " + v.describe() + "; expected " + expected);
}
}  // namespace

std::string GgufFile::get_string(const std::string& key) const {
  const GgufValue& v = get(key);
  if (const std::string* s = v.to_string()) return *s;
  throw wrong(where(key), v, "a string");
}
uint64_t GgufFile::get_uint(const std::string& key) const {
  const GgufValue& v = get(key);
  if (auto x = v.to_u64()) return *x;
  throw wrong(where(key), v, "a non-negative integer");
}
int64_t GgufFile::get_int(const std::string& key) const {
  const GgufValue& v = get(key);
  if (auto x = v.to_i64()) return *x;
  throw wrong(where(key), v, "an integer");
}
double GgufFile::get_float(const std::string& key) const {
  const GgufValue& v = get(key);
  if (auto x = v.to_f64()) return *x;
  throw wrong(where(key), v, "a number");
}
bool GgufFile::get_bool(const std::string& key) const {
  const GgufValue& v = get(key);
  if (auto x = v.to_bool()) return *x;
  throw wrong(where(key), v, "a bool");
}
std::vector<std::string> GgufFile::get_strings(const std::string& key) const {
  const GgufValue& v = get(key);
  if (v.is_array() && v.element_type() == GgufType::STRING) return v.strings();
  throw wrong(where(key), v, "an array of strings");
}
std::vector<double> GgufFile::get_floats(const std::string& key) const {
  const GgufValue& v = get(key);
  const uint64_t each = v.is_array() ? scalar_bytes(uint32_t(v.element_type())) : 0;
  if (each == 0 || v.element_type() == GgufType::BOOL) throw wrong(where(key), v, "an array of numbers");
  std::vector<double> out(v.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = *v.at(i).to_f64();
  return out;
}
std::vector<int64_t> GgufFile::get_ints(const std::string& key) const {
  const GgufValue& v = get(key);
  if (!v.is_array() || scalar_bytes(uint32_t(v.element_type())) == 0 || v.element_type() == GgufType::BOOL ||
      v.element_type() == GgufType::FLOAT32 || v.element_type() == GgufType::FLOAT64)
    throw wrong(where(key), v, "an array of integers");
  std::vector<int64_t> out(v.size());
  for (size_t i = 0; i < out.size(); ++i) {
    const std::optional<int64_t> x = v.at(i).to_i64();
    if (!x) throw Error(where(key) + ": element " + num(i) + " is " + v.at(i).describe() + ", beyond int64");
    out[i] = *x;
  }
  return out;
}

std::string GgufFile::get_string_or(const std::string& key, const std::string& fallback) const {
  return has(key) ? get_string(key) : fallback;
}
uint64_t GgufFile::get_uint_or(const std::string& key, uint64_t fallback) const {
  return has(key) ? get_uint(key) : fallback;
}
double GgufFile::get_float_or(const std::string& key, double fallback) const {
  return has(key) ? get_float(key) : fallback;
}
bool GgufFile::get_bool_or(const std::string& key, bool fallback) const { return has(key) ? get_bool(key) : fallback; }

const GgufTensor* GgufFile::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

const GgufTensor& GgufFile::tensor(const std::string& name) const {
  if (const GgufTensor* t = find(name)) return *t;
  throw Error(path_ + ": no tensor " + q_name(name));
}

void GgufFile::release(const GgufTensor& t) const {
  if (mapped_) io::drop_pages(t.data, t.bytes);
}

std::vector<float> GgufFile::to_f32(const std::string& name) const {
  const GgufTensor& t = tensor(name);
  std::vector<float> out;
  try {
    out = gguf_tensor_to_f32(t);
  } catch (const Error& e) {
    throw Error(path_ + ": " + e.what());
  }
  release(t);
  return out;
}

std::vector<float> gguf_tensor_to_f32(const GgufTensor& t) {
  if (t.type != GgmlType::F32 && t.type != GgmlType::F16 && t.type != GgmlType::BF16)
    throw Error("tensor " + q_name(t.name) + " has ggml type " + ggml_type_name(t.type) +
                ", which needs dequantizing; only F32, F16 and BF16 convert directly");
  const size_t n = size_t(t.elements);
  std::vector<float> out;
  try {
    out.resize(n);
  } catch (const std::bad_alloc&) {
    throw Error("tensor " + q_name(t.name) + ": no host memory for its " + num(n) + " values in fp32");
  }
  const uint8_t* p = t.data;
  if (t.type == GgmlType::F32) {
    if (n) std::memcpy(out.data(), p, n * 4);
  } else if (t.type == GgmlType::F16) {
    for (size_t i = 0; i < n; ++i) out[i] = half_to_float(uint16_t(p[2 * i] | (p[2 * i + 1] << 8)));
  } else {
    for (size_t i = 0; i < n; ++i) out[i] = bf16_to_float(uint16_t(p[2 * i] | (p[2 * i + 1] << 8)));
  }
  return out;
}

}  // namespace vkf
