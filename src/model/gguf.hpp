// The GGUF format (llama.cpp's model files; ggml's docs/gguf.md): the magic
// "GGUF", a version (2 or 3 here), tensor and metadata counts, the metadata as
// typed key/value pairs, the tensor infos (name, dims innermost first, ggml
// type, offset), then, at the next multiple of general.alignment, the data.
// Only little-endian files are read. Nothing here loads a model: this is the
// file, checked, with its metadata decoded and its tensors located.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace vkf {

/// The ggml tensor types vkformer reads (their numbers are the file's).
enum class GgmlType : uint32_t { F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q8_0 = 8, Q4_K = 12, Q6_K = 14, BF16 = 30 };

/// The ggml name of any type number: "Q4_1", "Q5_K", or "type 99" when unknown.
std::string ggml_type_name(uint32_t type);
inline std::string ggml_type_name(GgmlType type) { return ggml_type_name(uint32_t(type)); }

/// A type's block: how many values, in how many bytes (F32: 1 value in 4;
/// Q4_1: 32 in 20; Q6_K: 256 in 210). A tensor's innermost dimension is a
/// whole number of blocks.
struct GgmlTypeInfo {
  uint32_t block_values, block_bytes;
};
/// The block of a type vkformer reads, or nullopt for any other number.
std::optional<GgmlTypeInfo> ggml_type_info(uint32_t type);
inline GgmlTypeInfo ggml_type_info(GgmlType type) { return *ggml_type_info(uint32_t(type)); }

/// Metadata value types, with the file's numbers.
enum class GgufType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12
};
/// "uint32", "string", "array", ... ("type 99" when unknown).
std::string gguf_type_name(uint32_t type);
inline std::string gguf_type_name(GgufType type) { return gguf_type_name(uint32_t(type)); }

/// One metadata value: a scalar, a string, or an array (of scalars, of
/// strings or of arrays). The to_* accessors return nullopt when the value is
/// not of a fitting type; the as_* ones throw vkf::Error saying what it is.
class GgufValue {
 public:
  GgufValue() = default;

  GgufType type() const { return type_; }
  bool is_array() const { return type_ == GgufType::ARRAY; }
  bool is_integer() const;  ///< any of the eight integer types (not bool)
  bool is_float() const { return type_ == GgufType::FLOAT32 || type_ == GgufType::FLOAT64; }

  /// An integer ≥ 0 (of any integer type).
  std::optional<uint64_t> to_u64() const;
  /// An integer that fits int64 (of any integer type).
  std::optional<int64_t> to_i64() const;
  /// A float32/float64, or an integer, as a double.
  std::optional<double> to_f64() const;
  std::optional<bool> to_bool() const;  ///< BOOL only
  const std::string* to_string() const;  ///< STRING only, else nullptr

  uint64_t as_u64() const;
  int64_t as_i64() const;
  double as_f64() const;
  bool as_bool() const;
  const std::string& as_string() const;

  /// Arrays: the elements' type and count (0 for a scalar or a string).
  GgufType element_type() const { return elem_type_; }
  size_t size() const;
  /// Element i of an array, as a value of its own (a copy; strings and arrays
  /// are better read through strings() and arrays()). @throws vkf::Error when
  /// this is not an array or i is out of range.
  GgufValue at(size_t i) const;
  /// An array of strings' elements (empty for other values).
  const std::vector<std::string>& strings() const { return strings_; }
  /// An array of arrays' elements (empty for other values).
  const std::vector<GgufValue>& arrays() const { return arrays_; }

  /// "uint32 7", "string \"llama\"", "array of 49152 string", for messages.
  std::string describe() const;
  /// Appends the value as the file holds it after its type: a scalar's bytes, a
  /// string's length and bytes, an array's element type, count and elements.
  void append_to(std::string& out) const;
  /// A uint32 value (a written file's general.file_type).
  static GgufValue uint32(uint32_t v);

 private:
  friend class GgufFile;
  friend struct GgufParser;
  GgufType type_ = GgufType::UINT8;
  GgufType elem_type_ = GgufType::UINT8;  ///< arrays only
  uint64_t bits_ = 0;                     ///< a scalar's bytes, little-endian, zero-extended
  std::string string_;                    ///< STRING
  std::vector<uint8_t> raw_;              ///< an array of scalars: the elements' bytes as in the file
  std::vector<std::string> strings_;      ///< an array of strings
  std::vector<GgufValue> arrays_;         ///< an array of arrays
};

struct GgufTensor {
  std::string name;
  GgmlType type = GgmlType::F32;
  std::vector<int64_t> shape;   ///< outermost first, like safetensors (the file's dims reversed)
  uint64_t elements = 0;        ///< product of shape
  uint64_t offset = 0;          ///< into the data section, as the file says
  uint64_t bytes = 0;           ///< elements / block_values × block_bytes
  const uint8_t* data = nullptr;  ///< its bytes in the file (valid while the GgufFile or a copy lives)
};

/// One tensor of a GGUF file to write (gguf_head): its bytes follow in order.
struct GgufTensorOut {
  std::string name;
  GgmlType type;
  std::vector<int64_t> shape;  ///< outermost first
  uint64_t bytes;
};

/// A GGUF file, mapped read-only and checked at open: every count and length
/// against the bytes left, every tensor's range against the file, before
/// anything is allocated for it or any tensor byte is touched.
class GgufFile {
 public:
  /// @throws vkf::Error "PATH: ..." (one line) naming the offset, key or tensor
  /// that is wrong: truncated, wrong magic, version other than 2 or 3,
  /// big-endian, counts or lengths past the end, duplicate keys or tensor names,
  /// bad alignment, n_dims > 4, zero or overflowing dims, a ggml type other
  /// than F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q6_K, an innermost dim that is
  /// not whole blocks, tensors misaligned, past the end or overlapping.
  explicit GgufFile(const std::string& path);
  /// The same checks on bytes in memory; `name` stands for the path in messages.
  static GgufFile from_memory(const std::string& name, std::vector<uint8_t> bytes);

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_start() const { return data_start_; }  ///< the data section's offset in the file
  uint64_t file_size() const { return size_; }

  /// Metadata, in file order of keys (the map itself is sorted by key).
  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const std::vector<std::string>& keys() const { return keys_; }
  bool has(const std::string& key) const { return metadata_.count(key) != 0; }
  /// @throws vkf::Error "PATH: no metadata key 'KEY'".
  const GgufValue& get(const std::string& key) const;

  // Typed getters: @throws vkf::Error naming the file, the key, what it holds
  // and what was expected, or that the key is missing.
  std::string get_string(const std::string& key) const;
  uint64_t get_uint(const std::string& key) const;  ///< any integer type ≥ 0
  int64_t get_int(const std::string& key) const;    ///< any integer type that fits int64
  double get_float(const std::string& key) const;   ///< float32/float64 or any integer
  bool get_bool(const std::string& key) const;
  std::vector<std::string> get_strings(const std::string& key) const;  ///< array of string
  std::vector<double> get_floats(const std::string& key) const;        ///< array of floats or integers
  std::vector<int64_t> get_ints(const std::string& key) const;         ///< array of integers
  // The same, with a default for a missing key (a present key of another type still throws).
  std::string get_string_or(const std::string& key, const std::string& fallback) const;
  uint64_t get_uint_or(const std::string& key, uint64_t fallback) const;
  double get_float_or(const std::string& key, double fallback) const;
  bool get_bool_or(const std::string& key, bool fallback) const;

  /// Everything before the data section of a GGUF v3 file holding this file's
  /// metadata (keys in file order; `set` replaces or adds values) and `tensors`,
  /// each at the next multiple of alignment() after the one before, padded to
  /// where the first one starts. The caller writes each tensor's bytes, then
  /// zeros up to the next multiple of alignment().
  std::string head(const std::map<std::string, GgufValue>& set, const std::vector<GgufTensorOut>& tensors) const;
  /// Tensors in file order.
  const std::vector<GgufTensor>& tensors() const { return tensors_; }
  const GgufTensor* find(const std::string& name) const;
  /// find, or @throws vkf::Error "PATH: no tensor 'NAME'".
  const GgufTensor& tensor(const std::string& name) const;
  /// Drops the mapped pages that lie wholly inside the tensor's bytes from
  /// memory (the file keeps them; a later read maps them in again).
  void release(const GgufTensor& t) const;
  /// gguf_tensor_to_f32 of the named tensor, with the file in its errors, then
  /// release()s its pages. @throws vkf::Error if it is missing or quantized.
  std::vector<float> to_f32(const std::string& name) const;

 private:
  GgufFile() = default;
  void parse();
  std::string where(const std::string& key) const;

  std::string path_;
  std::shared_ptr<const void> storage_;  ///< owns the mapping (or from_memory's bytes)
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
  bool mapped_ = false;
  uint32_t version_ = 0;
  uint32_t alignment_ = 32;
  uint64_t data_start_ = 0;
  std::map<std::string, GgufValue> metadata_;
  std::vector<std::string> keys_;
  std::vector<GgufTensor> tensors_;
  std::map<std::string, size_t> by_name_;
};

/// An F32, F16 or BF16 tensor's values in fp32 (little-endian, as every host
/// vkformer runs on). @throws vkf::Error naming the tensor for quantized types
/// (they have their own dequantization) or when host memory runs out.
std::vector<float> gguf_tensor_to_f32(const GgufTensor& t);

}  // namespace vkf
