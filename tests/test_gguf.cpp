// GgufFile: files written here byte by byte (a small writer of little-endian
// fields, independent of the reader) are read back exactly, and every malformed
// file is a one-line vkf::Error naming the file and the key, tensor or offset,
// never a crash. Host only.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>

#include "model/gguf.hpp"
#include "model_writer.hpp"
#include "test_util.hpp"

namespace vkf::test {
namespace {

// ---- a tiny GGUF writer ----------------------------------------------------

struct Bytes {
  std::vector<uint8_t> b;
  template <class T>
  Bytes& put(T v) {
    uint8_t tmp[sizeof(T)];
    std::memcpy(tmp, &v, sizeof(T));  // little-endian host
    b.insert(b.end(), tmp, tmp + sizeof(T));
    return *this;
  }
  Bytes& u8(uint8_t v) { return put(v); }
  Bytes& u32(uint32_t v) { return put(v); }
  Bytes& u64(uint64_t v) { return put(v); }
  Bytes& str(const std::string& s) {
    u64(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& raw(const std::vector<uint8_t>& v) {
    b.insert(b.end(), v.begin(), v.end());
    return *this;
  }
};

// Metadata entries: key, type, value.
struct Meta {
  Bytes bytes;
  uint64_t count = 0;
  Bytes& key(const std::string& k, GgufType t) {
    ++count;
    return bytes.str(k).u32(uint32_t(t));
  }
};

struct TensorSpec {
  std::string name;
  std::vector<uint64_t> ne;  // innermost first, as in the file
  uint32_t type = 0;
  int64_t offset = -1;       // -1: the next aligned offset after the previous tensor
};

// Bytes per tensor, computed here from the format's block table.
uint64_t spec_bytes(const TensorSpec& t) {
  struct B { uint32_t type, values, bytes; };
  static const B kTable[] = {{0, 1, 4}, {1, 1, 2}, {2, 32, 18}, {3, 32, 20}, {8, 32, 34}, {12, 256, 144},
                             {14, 256, 210}, {30, 1, 2}};
  uint64_t n = 1;
  for (uint64_t d : t.ne) n *= d;
  for (const B& b : kTable)
    if (b.type == t.type) return n / b.values * b.bytes;
  return n;  // unknown types: anything, the reader refuses them first
}

struct Built {
  std::vector<uint8_t> file;
  uint64_t data_start = 0;
  std::vector<uint64_t> offsets;
};

// A whole file: header, metadata, tensor infos, padding, data. Tensor i's byte j
// is (i * 31 + j) & 0xff. The file ends where the last tensor (by offset) ends.
Built build(const Meta& meta, const std::vector<TensorSpec>& tensors, uint32_t version = 3, uint32_t alignment = 32) {
  Built out;
  Bytes f;
  f.raw({'G', 'G', 'U', 'F'}).u32(version).u64(tensors.size()).u64(meta.count).raw(meta.bytes.b);
  uint64_t next = 0, end = 0;
  for (const TensorSpec& t : tensors) {
    f.str(t.name).u32(uint32_t(t.ne.size()));
    for (uint64_t d : t.ne) f.u64(d);
    const uint64_t off = t.offset >= 0 ? uint64_t(t.offset) : next;
    f.u32(t.type).u64(off);
    out.offsets.push_back(off);
    const uint64_t nb = spec_bytes(t);
    next = (off + nb + alignment - 1) / alignment * alignment;
    end = std::max(end, off + nb);
  }
  while (f.b.size() % alignment) f.u8(0);
  out.data_start = f.b.size();
  if (end > (1u << 24)) {  // absurd sizes (for the overflow checks): no data at all
    out.file = std::move(f.b);
    return out;
  }
  f.b.resize(out.data_start + end, 0);
  for (size_t i = 0; i < tensors.size(); ++i) {
    const uint64_t nb = spec_bytes(tensors[i]);
    for (uint64_t j = 0; j < nb; ++j) f.b[out.data_start + out.offsets[i] + j] = uint8_t(i * 31 + j);
  }
  out.file = std::move(f.b);
  return out;
}

GgufFile open(const std::vector<uint8_t>& bytes) { return GgufFile::from_memory("t.gguf", bytes); }

/// The file must be refused with one line "t.gguf: ..." containing `needle`.
void expect_refused(const std::vector<uint8_t>& bytes, const std::string& needle) {
  try {
    open(bytes);
    ADD_FAILURE() << "accepted; expected an error mentioning " << needle;
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("t.gguf: ", 0), 0u) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

Meta some_meta() {
  Meta m;
  m.key("general.architecture", GgufType::STRING).str("llama");
  m.key("llama.block_count", GgufType::UINT32).u32(30);
  return m;
}

// ---- reading -----------------------------------------------------------------

TEST(Gguf, ReadsEveryMetadataType) {
  for (uint32_t version : {2u, 3u}) {
    SCOPED_TRACE(version);
    Meta m;
    m.key("u8", GgufType::UINT8).u8(200);
    m.key("i8", GgufType::INT8).put<int8_t>(-100);
    m.key("u16", GgufType::UINT16).put<uint16_t>(60000);
    m.key("i16", GgufType::INT16).put<int16_t>(-30000);
    m.key("u32", GgufType::UINT32).u32(4000000000u);
    m.key("i32", GgufType::INT32).put<int32_t>(-2000000000);
    m.key("f32", GgufType::FLOAT32).put<float>(1e-5f);
    m.key("t", GgufType::BOOL).u8(1);
    m.key("f", GgufType::BOOL).u8(0);
    m.key("s", GgufType::STRING).str("h\xc3\xa9llo");
    m.key("empty", GgufType::STRING).str("");
    m.key("u64", GgufType::UINT64).u64(18446744073709551615ull);
    m.key("i64", GgufType::INT64).put<int64_t>(-9000000000000000000ll);
    m.key("f64", GgufType::FLOAT64).put<double>(0.1);
    m.key("strs", GgufType::ARRAY).u32(uint32_t(GgufType::STRING)).u64(3).str("a").str("").str("<|im_end|>");
    m.key("f32s", GgufType::ARRAY).u32(uint32_t(GgufType::FLOAT32)).u64(2).put<float>(-1.5f).put<float>(2.25f);
    m.key("i32s", GgufType::ARRAY).u32(uint32_t(GgufType::INT32)).u64(3).put<int32_t>(1).put<int32_t>(-2).put<int32_t>(3);
    m.key("bools", GgufType::ARRAY).u32(uint32_t(GgufType::BOOL)).u64(2).u8(1).u8(0);
    m.key("none", GgufType::ARRAY).u32(uint32_t(GgufType::UINT8)).u64(0);
    // [[1, 2], [], [3]] of uint16, and [["x"]]
    m.key("nested", GgufType::ARRAY).u32(uint32_t(GgufType::ARRAY)).u64(3)
        .u32(uint32_t(GgufType::UINT16)).u64(2).put<uint16_t>(1).put<uint16_t>(2)
        .u32(uint32_t(GgufType::UINT16)).u64(0)
        .u32(uint32_t(GgufType::UINT16)).u64(1).put<uint16_t>(3);
    m.key("nested_str", GgufType::ARRAY).u32(uint32_t(GgufType::ARRAY)).u64(1)
        .u32(uint32_t(GgufType::STRING)).u64(1).str("x");
    const GgufFile f = open(build(m, {}, version).file);

    EXPECT_EQ(f.version(), version);
    EXPECT_EQ(f.keys().size(), 21u);
    EXPECT_EQ(f.keys().front(), "u8");
    EXPECT_EQ(f.get_uint("u8"), 200u);
    EXPECT_EQ(f.get_int("i8"), -100);
    EXPECT_EQ(f.get_uint("u16"), 60000u);
    EXPECT_EQ(f.get_int("i16"), -30000);
    EXPECT_EQ(f.get_uint("u32"), 4000000000u);
    EXPECT_EQ(f.get_int("i32"), -2000000000);
    EXPECT_EQ(f.get_float("f32"), double(1e-5f));
    EXPECT_EQ(f.get("f32").type(), GgufType::FLOAT32);
    EXPECT_TRUE(f.get_bool("t"));
    EXPECT_FALSE(f.get_bool("f"));
    EXPECT_EQ(f.get_string("s"), "h\xc3\xa9llo");
    EXPECT_EQ(f.get_string("empty"), "");
    EXPECT_EQ(f.get_uint("u64"), 18446744073709551615ull);
    EXPECT_EQ(f.get_int("i64"), -9000000000000000000ll);
    EXPECT_EQ(f.get_float("f64"), 0.1);
    EXPECT_EQ(f.get_float("u32"), 4e9);  // integers read as floats
    EXPECT_EQ(f.get_strings("strs"), (std::vector<std::string>{"a", "", "<|im_end|>"}));
    EXPECT_EQ(f.get_floats("f32s"), (std::vector<double>{-1.5, 2.25}));
    EXPECT_EQ(f.get_ints("i32s"), (std::vector<int64_t>{1, -2, 3}));
    EXPECT_EQ(f.get_floats("i32s"), (std::vector<double>{1, -2, 3}));
    EXPECT_EQ(f.get("bools").size(), 2u);
    EXPECT_EQ(f.get("bools").at(0).as_bool(), true);
    EXPECT_EQ(f.get("bools").element_type(), GgufType::BOOL);
    EXPECT_EQ(f.get("none").size(), 0u);
    EXPECT_TRUE(f.get_ints("none").empty());
    const GgufValue& nested = f.get("nested");
    ASSERT_TRUE(nested.is_array());
    EXPECT_EQ(nested.element_type(), GgufType::ARRAY);
    ASSERT_EQ(nested.size(), 3u);
    EXPECT_EQ(nested.arrays()[0].size(), 2u);
    EXPECT_EQ(nested.at(0).at(1).as_u64(), 2u);
    EXPECT_EQ(nested.at(1).size(), 0u);
    EXPECT_EQ(nested.at(2).at(0).as_i64(), 3);
    EXPECT_EQ(f.get("nested_str").at(0).strings(), std::vector<std::string>{"x"});
    EXPECT_EQ(f.get("nested_str").at(0).at(0).as_string(), "x");

    // Fallbacks for missing keys only.
    EXPECT_EQ(f.get_uint_or("missing", 7), 7u);
    EXPECT_EQ(f.get_uint_or("u8", 7), 200u);
    EXPECT_EQ(f.get_string_or("missing", "d"), "d");
    EXPECT_EQ(f.get_float_or("missing", 0.5), 0.5);
    EXPECT_TRUE(f.get_bool_or("missing", true));
    EXPECT_FALSE(f.has("missing"));
    EXPECT_TRUE(f.has("u8"));
    EXPECT_EQ(f.tensors().size(), 0u);
    EXPECT_EQ(f.alignment(), 32u);
  }
}

TEST(Gguf, TypedGettersNameKeyAndTypeInErrors) {
  Meta m;
  m.key("neg", GgufType::INT32).put<int32_t>(-1);
  m.key("name", GgufType::STRING).str("llama");
  m.key("big", GgufType::UINT64).u64(~0ull);
  m.key("strs", GgufType::ARRAY).u32(uint32_t(GgufType::STRING)).u64(1).str("a");
  m.key("fl", GgufType::ARRAY).u32(uint32_t(GgufType::FLOAT32)).u64(1).put<float>(1.f);
  const GgufFile f = open(build(m, {}).file);
  expect_error([&] { f.get_uint("neg"); }, "t.gguf: metadata key 'neg' is the int32 -1; expected a non-negative integer");
  expect_error([&] { f.get_uint("name"); }, "t.gguf: metadata key 'name' is the string \"llama\"; expected a non-negative");
  expect_error([&] { f.get_string("neg"); }, "'neg' is the int32 -1; expected a string");
  expect_error([&] { f.get_int("big"); }, "'big' is the uint64 18446744073709551615; expected an integer");
  expect_error([&] { f.get_bool("name"); }, "expected a bool");
  expect_error([&] { f.get_float("strs"); }, "'strs' is an array of 1 string; expected a number");
  expect_error([&] { f.get_strings("fl"); }, "'fl' is an array of 1 float32; expected an array of strings");
  expect_error([&] { f.get_ints("fl"); }, "expected an array of integers");
  expect_error([&] { f.get_floats("strs"); }, "expected an array of numbers");
  expect_error([&] { f.get("nope"); }, "t.gguf: no metadata key 'nope'");
  expect_error([&] { f.get_uint_or("name", 1); }, "expected a non-negative integer");
  expect_error([&] { f.tensor("w"); }, "t.gguf: no tensor 'w'");
  EXPECT_EQ(f.find("w"), nullptr);
}

TEST(Gguf, TensorSizesShapesAndOffsets) {
  const std::vector<TensorSpec> specs = {
      {"f32", {3, 2}, 0},            // 2 rows of 3
      {"f16", {5}, 1},
      {"q4_0", {64, 3}, 2},
      {"q4_1", {32, 2, 2}, 3},
      {"q8_0", {96}, 8},
      {"q4_k", {256, 2}, 12},
      {"q6_k", {512}, 14},
      {"bf16", {1, 1, 1, 7}, 30},
  };
  const uint64_t want_bytes[] = {24, 10, 3 * 2 * 18, 4 * 20, 3 * 34, 2 * 144, 2 * 210, 14};
  const std::vector<std::vector<int64_t>> want_shape = {{2, 3}, {5}, {3, 64}, {2, 2, 32}, {96}, {2, 256}, {512},
                                                        {7, 1, 1, 1}};
  for (uint32_t version : {2u, 3u}) {
    const Built b = build(some_meta(), specs, version);
    const GgufFile f = open(b.file);
    ASSERT_EQ(f.tensors().size(), specs.size());
    EXPECT_EQ(f.data_start(), b.data_start);
    EXPECT_EQ(f.data_start() % 32, 0u);
    for (size_t i = 0; i < specs.size(); ++i) {
      const GgufTensor& t = f.tensors()[i];
      SCOPED_TRACE(t.name);
      EXPECT_EQ(t.name, specs[i].name);
      EXPECT_EQ(uint32_t(t.type), specs[i].type);
      EXPECT_EQ(t.bytes, want_bytes[i]);
      EXPECT_EQ(t.bytes, uint64_t(ggml_type_info(t.type).block_bytes) * t.elements / ggml_type_info(t.type).block_values);
      EXPECT_EQ(t.shape, want_shape[i]);
      EXPECT_EQ(t.offset, b.offsets[i]);
      EXPECT_EQ(t.offset % 32, 0u);
      EXPECT_EQ(t.data, f.find(t.name)->data);
      for (uint64_t j = 0; j < t.bytes; ++j) ASSERT_EQ(t.data[j], uint8_t(i * 31 + j));
    }
    EXPECT_EQ(f.get_string("general.architecture"), "llama");
  }
  EXPECT_EQ(ggml_type_name(3), "Q4_1");
  EXPECT_EQ(ggml_type_name(GgmlType::Q6_K), "Q6_K");
  EXPECT_EQ(ggml_type_name(13), "Q5_K");
  EXPECT_EQ(ggml_type_name(999), "type 999");
  EXPECT_FALSE(ggml_type_info(13).has_value());
  EXPECT_EQ(gguf_type_name(GgufType::FLOAT64), "float64");
}

TEST(Gguf, CustomAlignment) {
  for (uint32_t align : {1u, 8u, 64u, 4096u}) {
    SCOPED_TRACE(align);
    Meta m = some_meta();
    m.key("general.alignment", GgufType::UINT32).u32(align);
    const Built b = build(m, {{"a", {3}, 0}, {"b", {5}, 1}, {"c", {32}, 8}}, 3, align);
    const GgufFile f = open(b.file);
    EXPECT_EQ(f.alignment(), align);
    EXPECT_EQ(f.data_start() % align, 0u);
    EXPECT_EQ(f.data_start(), b.data_start);
    EXPECT_EQ(f.tensor("b").offset, b.offsets[1]);
    EXPECT_EQ(f.tensor("c").data[0], uint8_t(2 * 31));
  }
}

TEST(Gguf, ConvertsFloatTensors) {
  // F32 1.5, -2; F16 1, -2, 2^-24; BF16 1, -0.5, inf: the bytes written by hand.
  Meta m;
  Built b = build(m, {{"f32", {2}, 0}, {"f16", {3}, 1}, {"bf16", {3}, 30}, {"q", {32}, 8}});
  auto put = [&](uint64_t at, std::vector<uint8_t> v) { std::copy(v.begin(), v.end(), b.file.begin() + long(b.data_start + at)); };
  put(b.offsets[0], {0, 0, 0xc0, 0x3f, 0, 0, 0, 0xc0});
  put(b.offsets[1], {0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00});
  put(b.offsets[2], {0x80, 0x3f, 0x00, 0xbf, 0x80, 0x7f});
  const GgufFile f = open(b.file);
  EXPECT_EQ(f.to_f32("f32"), (std::vector<float>{1.5f, -2.f}));
  EXPECT_EQ(f.to_f32("f16"), (std::vector<float>{1.f, -2.f, std::ldexp(1.f, -24)}));
  EXPECT_EQ(gguf_tensor_to_f32(f.tensor("bf16")), (std::vector<float>{1.f, -0.5f, INFINITY}));
  expect_error([&] { f.to_f32("q"); }, "t.gguf: tensor 'q' has ggml type Q8_0, which needs dequantizing");
}

TEST(Gguf, OpensFromAPathByMapping) {
  const Built b = build(some_meta(), {{"w", {4, 2}, 0}});
  const std::string path = temp_dir("gguf") + "/m.gguf";
  std::string bytes(b.file.begin(), b.file.end());
  write_file(path, bytes);
  const GgufFile f(path);
  EXPECT_EQ(f.path(), path);
  EXPECT_EQ(f.file_size(), b.file.size());
  EXPECT_EQ(f.tensor("w").shape, (std::vector<int64_t>{2, 4}));
  GgufFile copy = f;  // tensors still point into the shared mapping
  EXPECT_EQ(copy.tensor("w").data[3], 3);
  f.release(f.tensor("w"));
  EXPECT_EQ(f.to_f32("w").size(), 8u);
  expect_error([&] { GgufFile g(path + ".missing"); }, path + ".missing: cannot open the GGUF file");
  write_file(path, "");
  expect_error([&] { GgufFile g(path); }, path + ": is empty (0 bytes), not a GGUF file");
}

// The real SmolLM2-135M-Instruct Q4_1 file of `make llm-models` (VKF_SMOLLM2_GGUF
// names another copy); skipped when absent.
TEST(Gguf, RealSmolLM2) {
  const char* env = std::getenv("VKF_SMOLLM2_GGUF");
  const std::string path =
      env ? env : std::string(VKF_DOCS_DIR) + "/../models/llm/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::ifstream(path)) GTEST_SKIP() << path << " is absent (make llm-models)";
  const GgufFile f(path);
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_uint("llama.block_count"), 30u);
  EXPECT_EQ(f.get_uint("llama.embedding_length"), 576u);
  EXPECT_EQ(f.get_uint("llama.feed_forward_length"), 1536u);
  EXPECT_EQ(f.get_uint("llama.attention.head_count"), 9u);
  EXPECT_EQ(f.get_uint("llama.attention.head_count_kv"), 3u);
  EXPECT_EQ(f.get_float("llama.rope.freq_base"), 100000.0);
  EXPECT_EQ(f.get_float("llama.attention.layer_norm_rms_epsilon"), double(1e-5f));
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "smollm");
  const auto tokens = f.get_strings("tokenizer.ggml.tokens");
  ASSERT_EQ(tokens.size(), 49152u);
  EXPECT_EQ(tokens[2], "<|im_end|>");
  EXPECT_EQ(f.get_strings("tokenizer.ggml.merges").size(), 48900u);
  EXPECT_EQ(f.get_ints("tokenizer.ggml.token_type").size(), 49152u);
  EXPECT_EQ(f.get_uint("tokenizer.ggml.eos_token_id"), 2u);
  EXPECT_NE(f.get_string("tokenizer.chat_template").find("<|im_start|>"), std::string::npos);
  ASSERT_EQ(f.tensors().size(), 272u);
  std::map<GgmlType, int> count;
  for (const GgufTensor& t : f.tensors()) ++count[t.type];
  EXPECT_EQ(count[GgmlType::Q4_1], 210);
  EXPECT_EQ(count[GgmlType::F32], 61);
  EXPECT_EQ(count[GgmlType::Q8_0], 1);
  const GgufTensor& emb = f.tensor("token_embd.weight");
  EXPECT_EQ(emb.type, GgmlType::Q8_0);
  EXPECT_EQ(emb.shape, (std::vector<int64_t>{49152, 576}));
  EXPECT_EQ(emb.bytes, 49152u * 576 / 32 * 34);
  EXPECT_EQ(f.tensor("blk.0.ffn_down.weight").shape, (std::vector<int64_t>{576, 1536}));
  const std::vector<float> norm = f.to_f32("blk.0.attn_norm.weight");
  ASSERT_EQ(norm.size(), 576u);
  for (float x : norm) ASSERT_TRUE(std::isfinite(x));
}

// ---- refusing ------------------------------------------------------------------

TEST(Gguf, EveryTruncationIsAnError) {
  Meta m = some_meta();
  m.key("strs", GgufType::ARRAY).u32(uint32_t(GgufType::STRING)).u64(2).str("ab").str("c");
  m.key("nested", GgufType::ARRAY).u32(uint32_t(GgufType::ARRAY)).u64(1).u32(uint32_t(GgufType::INT8)).u64(2).u8(1).u8(2);
  m.key("f", GgufType::FLOAT64).put<double>(2.5);
  const Built b = build(m, {{"a", {3}, 0}, {"b", {32, 2}, 3}, {"c", {256}, 14}});
  ASSERT_NO_THROW(open(b.file));
  for (size_t n = 0; n < b.file.size(); ++n) {
    SCOPED_TRACE(n);
    expect_refused(std::vector<uint8_t>(b.file.begin(), b.file.begin() + long(n)), "");
  }
  // Some of them by name.
  expect_refused({}, "is empty");
  expect_refused({'G', 'G'}, "does not start with the magic \"GGUF\"");
  expect_refused(std::vector<uint8_t>(b.file.begin(), b.file.begin() + 6), "ends at byte 6, inside the version");
  expect_refused(std::vector<uint8_t>(b.file.begin(), b.file.begin() + 30),
                 "metadata count 5 is more than the rest of the file can hold (6 bytes, at least 13 per entry; truncated?)");
  Meta one;
  one.key("general.architecture", GgufType::STRING).str("llama");
  const std::vector<uint8_t> small = build(one, {}).file;
  expect_refused(std::vector<uint8_t>(small.begin(), small.begin() + 45),
                 "the key of metadata entry 0 (at byte 24): string length 20 at byte 24 runs past the end of the file "
                 "(13 bytes left)");
  expect_refused(std::vector<uint8_t>(small.begin(), small.begin() + 54),
                 "t.gguf: ends at byte 54, inside the value type of metadata key 'general.architecture' (4 bytes from byte "
                 "52); truncated?");
  expect_refused(std::vector<uint8_t>(small.begin(), small.begin() + 60),
                 "inside the length of metadata key 'general.architecture'");
  expect_refused(std::vector<uint8_t>(b.file.begin(), b.file.end() - 1), "tensor 'c': bytes");
  expect_refused(std::vector<uint8_t>(b.file.begin(), b.file.end() - 1), "run past the end of the file");
}

TEST(Gguf, RefusesWrongMagicAndVersions) {
  Built b = build(some_meta(), {});
  std::vector<uint8_t> bad = b.file;
  bad[0] = 'g';
  expect_refused(bad, "does not start with the magic \"GGUF\" (it starts with \"gGUF\"): not a GGUF file");
  for (uint32_t v : {0u, 1u, 4u, 0x7fffffffu}) {
    Built x = build(some_meta(), {}, v);
    expect_refused(x.file, v == 1 ? "is GGUF version 1" : "has GGUF version " + std::to_string(v) + "; vkformer reads versions 2 and 3");
  }
  // A big-endian file's version reads as 3 << 24 here.
  expect_refused(build(some_meta(), {}, 0x03000000u).file, "is a big-endian GGUF file (version 3 byte-swapped)");
}

TEST(Gguf, RefusesAbsurdCountsAndLengths) {
  // Tensor count 2^60, metadata count 2^60.
  {
    Bytes f;
    f.raw({'G', 'G', 'U', 'F'}).u32(3).u64(1ull << 60).u64(0);
    expect_refused(f.b, "tensor count 1152921504606846976 is more than the rest of the file can hold (0 bytes");
  }
  {
    Bytes f;
    f.raw({'G', 'G', 'U', 'F'}).u32(3).u64(0).u64(1ull << 60).raw(std::vector<uint8_t>(100, 0));
    expect_refused(f.b, "metadata count 1152921504606846976 is more than the rest of the file can hold (100 bytes");
  }
  // A key length of 2^62, a string value length past the end, a huge tensor name.
  {
    Bytes f;
    f.raw({'G', 'G', 'U', 'F'}).u32(3).u64(0).u64(1).u64(1ull << 62).raw(std::vector<uint8_t>(20, 'k'));
    expect_refused(f.b, "the key of metadata entry 0 (at byte 24): string length 4611686018427387904 at byte 24 runs past the end");
  }
  {
    Meta m;
    m.key("general.name", GgufType::STRING).u64(~0ull);
    m.bytes.raw(std::vector<uint8_t>(20, 'x'));
    expect_refused(build(m, {}).file, "metadata key 'general.name': string length 18446744073709551615");
  }
  {
    Meta m;
    m.key("tokenizer.ggml.tokens", GgufType::ARRAY).u32(uint32_t(GgufType::STRING)).u64(1ull << 40).str("a");
    expect_refused(build(m, {}).file,
                   "metadata key 'tokenizer.ggml.tokens': array of 1099511627776 string at byte 61 runs past the end");
  }
  {
    Meta m;
    m.key("scores", GgufType::ARRAY).u32(uint32_t(GgufType::FLOAT32)).u64(10).put<float>(1.f);
    expect_refused(build(m, {}).file, "metadata key 'scores': array of 10 float32");
  }
  {
    Meta m;
    m.key("deep", GgufType::ARRAY).u32(uint32_t(GgufType::ARRAY)).u64(1ull << 50);
    expect_refused(build(m, {}).file, "metadata key 'deep': array of 1125899906842624 array");
  }
  {
    Meta m;  // arrays of arrays 40 deep
    Bytes& b = m.key("deep", GgufType::ARRAY);
    for (int i = 0; i < 40; ++i) b.u32(uint32_t(GgufType::ARRAY)).u64(1);
    b.u32(uint32_t(GgufType::UINT8)).u64(0);
    expect_refused(build(m, {}).file, "metadata key 'deep' element 0 element 0");
    expect_refused(build(m, {}).file, "arrays nested deeper than 32 levels");
  }
  {
    Bytes f;
    f.raw({'G', 'G', 'U', 'F'}).u32(3).u64(1).u64(0).u64(1ull << 61).raw(std::vector<uint8_t>(40, 'n'));
    expect_refused(f.b, "the name of tensor 0 (at byte 24): string length 2305843009213693952");
  }
}

TEST(Gguf, RefusesBadMetadata) {
  {
    Meta m = some_meta();
    m.key("llama.block_count", GgufType::UINT32).u32(2);
    expect_refused(build(m, {}).file, "duplicate metadata key 'llama.block_count' (entries 1 and 2)");
  }
  {
    Meta m;
    m.key("k", GgufType(13)).u32(0);
    expect_refused(build(m, {}).file, "metadata key 'k': value type 13 is not a GGUF value type (0 to 12)");
  }
  {
    Meta m;
    m.key("k", GgufType::ARRAY).u32(77).u64(0);
    expect_refused(build(m, {}).file, "metadata key 'k': array element type 77 is not a GGUF value type");
  }
  {
    Meta m;
    m.key("b", GgufType::BOOL).u8(2);
    expect_refused(build(m, {}).file, "metadata key 'b': bool byte 2 at byte");
  }
  {
    Meta m;
    m.key("bad\x1b[31mkey", GgufType::BOOL).u8(7);
    expect_refused(build(m, {}).file, "metadata key 'bad\\x1b[31mkey'");
  }
  for (uint32_t a : {0u, 3u, 48u}) {
    Meta m;
    m.key("general.alignment", GgufType::UINT32).u32(a);
    expect_refused(build(m, {}).file,
                   "metadata key 'general.alignment' is " + std::to_string(a) + "; expected a power of two");
  }
  {
    Meta m;
    m.key("general.alignment", GgufType::UINT64).u64(32);
    expect_refused(build(m, {}).file, "metadata key 'general.alignment' is the uint64 32; expected a uint32");
  }
}

TEST(Gguf, RefusesBadTensors) {
  expect_refused(build(some_meta(), {{"blk.0.attn_q.weight", {256, 4}, 13}}).file,
                 "t.gguf: tensor 'blk.0.attn_q.weight' has ggml type Q5_K (13); vkformer reads F32, F16, BF16, Q8_0, "
                 "Q4_0, Q4_1, Q4_K, Q6_K");
  expect_refused(build(some_meta(), {{"w", {4}, 99}}).file, "tensor 'w' has ggml type 99 (not a ggml type); vkformer reads");
  expect_refused(build(some_meta(), {{"w", {1, 1, 1, 1, 1}, 0}}).file, "tensor 'w' has 5 dimensions; GGUF allows at most 4");
  expect_refused(build(some_meta(), {{"w", {4}, 0}, {"w", {4}, 0}}).file, "duplicate tensor 'w' (tensors 0 and 1)");
  expect_refused(build(some_meta(), {{"w", {4, 0}, 0}}).file, "tensor 'w' has a zero dimension (ne = [4, 0]");
  expect_refused(build(some_meta(), {{"w", {1ull << 32, 1ull << 32}, 0}}).file,
                 "tensor 'w': dimensions ne = [4294967296, 4294967296] overflow 64 bits");
  expect_refused(build(some_meta(), {{"w", {1ull << 63}, 0}}).file, "overflow 64 bits");
  expect_refused(build(some_meta(), {{"w", {1ull << 62}, 0}}).file, "overflow 64 bits in bytes");
  expect_refused(build(some_meta(), {{"w", {48, 2}, 3}}).file,
                 "tensor 'w': innermost dimension 48 (ne = [48, 2]) is not a multiple of Q4_1's block of 32 values");
  expect_refused(build(some_meta(), {{"w", {128}, 12}}).file, "is not a multiple of Q4_K's block of 256 values");
  expect_refused(build(some_meta(), {{"w", {4}, 0, 16}}).file, "tensor 'w': data offset 16 is not a multiple of the alignment 32");
  // Past the end, with an offset that wraps 2^64 with the size.
  {
    // Tensor infos written by hand: offset 2^64 - 32 (aligned) and 32 bytes.
    Bytes f;
    f.raw({'G', 'G', 'U', 'F'}).u32(3).u64(1).u64(0).str("w").u32(1).u64(8).u32(0).u64(~0ull - 31);
    while (f.b.size() % 32) f.u8(0);
    f.raw(std::vector<uint8_t>(32, 0));
    expect_refused(f.b, "tensor 'w': bytes 18446744073709551584 to beyond 2^64 of the data section");
  }
  {
    Built b = build(some_meta(), {{"w", {8}, 0}});
    b.file.resize(b.file.size() - 4);
    expect_refused(b.file, "tensor 'w': bytes 0 to 32 of the data section (at byte " + std::to_string(b.data_start) +
                               ") run past the end of the file (" + std::to_string(b.file.size()) + " bytes; truncated?)");
  }
  expect_refused(build(some_meta(), {{"a", {16}, 0, 0}, {"b", {8}, 0, 32}, {"c", {8}, 0, 64}}).file,
                 "tensors 'a' and 'b' overlap (bytes 32 to 64 of the data section)");
  expect_refused(build(some_meta(), {{"a", {8}, 0, 64}, {"b", {8}, 0, 64}}).file, "tensors 'a' and 'b' overlap");
  // Gaps and tensors out of order are fine (the format does not forbid them).
  const GgufFile f = open(build(some_meta(), {{"a", {8}, 0, 128}, {"b", {8}, 0, 0}}).file);
  EXPECT_EQ(f.tensor("a").offset, 128u);
}

}  // namespace
}  // namespace vkf::test
