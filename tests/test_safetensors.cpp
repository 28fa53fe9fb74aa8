// SafeTensorsFile: exact F32/F16/BF16 conversion, and every malformed file is
// an error naming the file and the tensor or field. Host only.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "model/safetensors.hpp"
#include "model_writer.hpp"

namespace vkf::test {
namespace {

std::string write_st(const std::string& name, const std::string& bytes) {
  const std::string path = temp_dir("st-" + name) + "/model.safetensors";
  write_file(path, bytes);
  return path;
}

/// A file with this header and `data_bytes` zero bytes of data; expects an
/// error naming the file and `needle`.
void expect_header_error(const std::string& name, const std::string& header, size_t data_bytes,
                         const std::string& needle) {
  SCOPED_TRACE(name + ": " + header);
  const std::string path = write_st(name, safetensors_raw(header, std::string(data_bytes, '\0')));
  expect_error([&] { SafeTensorsFile f(path); }, needle);
  expect_error([&] { SafeTensorsFile f(path); }, path + ": ");
}

std::string le16(std::initializer_list<uint16_t> v) {
  std::string b;
  for (uint16_t h : v) b.push_back(char(h & 0xff)), b.push_back(char(h >> 8));
  return b;
}

TEST(SafeTensors, ReadsF32F16Bf16Exactly) {
  // Bit patterns decoded by hand, so the test does not trust the encoder.
  const std::string f16 = le16({0x3C00, 0xC000, 0x0001, 0x7BFF, 0x8000, 0x3555, 0x7C00, 0xFC00});
  const std::vector<float> f16_want = {
      1.f, -2.f, std::ldexp(1.f, -24), 65504.f, -0.f, 0.333251953125f, INFINITY, -INFINITY};
  const std::string bf16 = le16({0x3F80, 0xC049, 0x0001, 0x7F7F, 0x7F80, 0x8000});
  const std::vector<float> bf16_want = {1.f,      -3.140625f, std::ldexp(1.f, -133), 3.3895313892515355e38f,
                                        INFINITY, -0.f};
  FileTensor f32{"F32", {2, 2}, {0.1f, -7.f, 1e-30f, std::numeric_limits<float>::max()}};
  std::string data = encode(f32) + f16 + bf16;
  json h = {{"__metadata__", {{"format", "pt"}}},
            {"a", {{"dtype", "F32"}, {"shape", {2, 2}}, {"data_offsets", {0, 16}}}},
            {"b", {{"dtype", "F16"}, {"shape", {8}}, {"data_offsets", {16, 32}}}},
            {"c", {{"dtype", "BF16"}, {"shape", {2, 1, 3}}, {"data_offsets", {32, 44}}}},
            {"empty", {{"dtype", "F32"}, {"shape", {0, 4}}, {"data_offsets", {44, 44}}}},
            {"scalar", {{"dtype", "F16"}, {"shape", json::array()}, {"data_offsets", {44, 46}}}}};
  data += le16({0x4200});  // 3.0
  const std::string path = write_st("exact", safetensors_raw(h.dump(), data));
  SafeTensorsFile f(path);
  EXPECT_EQ(f.path(), path);
  EXPECT_EQ(f.tensors().size(), 5u);  // __metadata__ is not a tensor
  EXPECT_FALSE(f.has("__metadata__"));
  EXPECT_EQ(f.get("c").shape, (std::vector<int64_t>{2, 1, 3}));
  EXPECT_EQ(f.get("c").dtype, "BF16");
  EXPECT_EQ(f.get("c").offset, 32u);
  EXPECT_EQ(f.get("c").bytes, 12u);
  EXPECT_EQ(f.to_f32("a"), f32.data);
  const auto b = f.to_f32("b");
  ASSERT_EQ(b.size(), f16_want.size());
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(b[i], f16_want[i]) << i;
    EXPECT_EQ(std::signbit(b[i]), std::signbit(f16_want[i])) << i;
  }
  const auto c = f.to_f32("c");
  ASSERT_EQ(c.size(), bf16_want.size());
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(c[i], bf16_want[i]) << i;
    EXPECT_EQ(std::signbit(c[i]), std::signbit(bf16_want[i])) << i;
  }
  EXPECT_TRUE(f.to_f32("empty").empty());
  EXPECT_EQ(f.to_f32("scalar"), std::vector<float>{3.f});
  expect_error([&] { f.to_f32("nope"); }, path + ": no tensor \"nope\"");
}

TEST(SafeTensors, OtherDtypesAreReadButNotConverted) {
  // Hugging Face checkpoints hold integer buffers (embeddings.position_ids, I64):
  // the file is valid; only asking for such a tensor as a weight is an error.
  const std::vector<std::pair<const char*, size_t>> dtypes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2},
      {"I32", 4},  {"U32", 4}, {"F64", 8}, {"I64", 8},     {"U64", 8},     {"F32", 4}};
  json h = json::object();
  size_t at = 0;
  for (const auto& [dtype, size] : dtypes) {
    h[std::string("t_") + dtype] = {{"dtype", dtype}, {"shape", {1, 3}}, {"data_offsets", {at, at + 3 * size}}};
    at += 3 * size;
  }
  const std::string path = write_st("dtypes", safetensors_raw(h.dump(), std::string(at, '\0')));
  SafeTensorsFile f(path);
  EXPECT_EQ(f.tensors().size(), dtypes.size());
  EXPECT_EQ(f.get("t_I64").bytes, 24u);
  EXPECT_EQ(f.to_f32("t_F32"), std::vector<float>(3, 0.f));
  expect_error([&] { f.to_f32("t_I64"); },
               path + ": tensor \"t_I64\": dtype I64 is not supported (only F32, F16 and BF16)");
  expect_error([&] { f.to_f32("t_F64"); }, "dtype F64 is not supported");
}

TEST(SafeTensors, WriterRoundTrip) {
  TensorMap m = {{"x", {"F16", {3, 5}, random_vector(15, 3)}},
                 {"y", {"BF16", {7}, random_vector(7, 4)}},
                 {"z", {"F32", {1, 2, 2}, random_vector(4, 5)}}};
  SafeTensorsFile f(write_st("roundtrip", safetensors_bytes(m, {{"k", "v"}})));
  for (const auto& [name, t] : m) EXPECT_EQ(f.to_f32(name), file_values(t)) << name;
  SafeTensorsFile empty(write_st("no-tensors", safetensors_raw("{}", "")));
  EXPECT_TRUE(empty.tensors().empty());
  // The format allows the header to be padded with spaces.
  SafeTensorsFile padded(write_st("padded", safetensors_raw("{}      ", "")));
  EXPECT_TRUE(padded.tensors().empty());
}

TEST(SafeTensors, FileErrors) {
  const std::string dir = temp_dir("st-files");
  expect_error([&] { SafeTensorsFile f(dir + "/missing.safetensors"); },
               dir + "/missing.safetensors: cannot open");
  expect_error([&] { SafeTensorsFile f(dir); }, "is a directory");
  const std::string empty = write_st("empty", "");
  expect_error([&] { SafeTensorsFile f(empty); }, empty + ": is empty (0 bytes)");
  const std::string tiny = write_st("tiny", std::string("\x05\0\0\0\0", 5));
  expect_error([&] { SafeTensorsFile f(tiny); }, tiny + ": is 5 bytes, too short");
  std::string past = safetensors_raw("{}", "");
  past[0] = 40;  // header length 40 in a 10-byte file
  const std::string p1 = write_st("past", past);
  expect_error([&] { SafeTensorsFile f(p1); },
               p1 + ": header length 40 runs past the end of the file (10 bytes)");
  std::string huge = safetensors_raw("{}", "");
  huge[5] = 1;  // 2^40
  const std::string p2 = write_st("huge", huge);
  expect_error([&] { SafeTensorsFile f(p2); }, p2 + ": header length 1099511627778 is absurdly large");
  // 2^63 and 2^64-1: refused from the 8 bytes alone, nothing allocated.
  std::string h63 = safetensors_raw("{}", "");
  for (int k = 0; k < 7; ++k) h63[size_t(k)] = 0;
  h63[7] = char(0x80);
  const std::string p3 = write_st("h63", h63);
  expect_error([&] { SafeTensorsFile f(p3); }, p3 + ": header length 9223372036854775808 is absurdly large");
  const std::string p4 = write_st("h64", std::string(8, char(0xff)) + "{}");
  expect_error([&] { SafeTensorsFile f(p4); }, p4 + ": header length 18446744073709551615 is absurdly large");
}

TEST(SafeTensors, TruncatedFiles) {
  const std::string whole = safetensors_bytes({{"a", {"F32", {4, 4}, random_vector(16, 1)}},
                                               {"b", {"F16", {3}, random_vector(3, 2)}}});
  struct Cut {
    size_t keep;
    std::string needle;
  };
  const size_t data_begin = whole.size() - 16 * 4 - 3 * 2;
  const size_t mid_header = 8 + (data_begin - 8) / 2;
  for (const Cut& c : {Cut{5, "is 5 bytes, too short for the 8-byte header length"},
                       Cut{20, "runs past the end of the file (20 bytes)"},
                       Cut{mid_header, "runs past the end of the file"},
                       Cut{data_begin, "is beyond the data section (0 bytes; file truncated?)"},
                       Cut{whole.size() - 1, "data_offsets end 70 is beyond the data section (69 bytes"}}) {
    SCOPED_TRACE(c.keep);
    const std::string path = write_st("cut-" + std::to_string(c.keep), whole.substr(0, c.keep));
    expect_error([&] { SafeTensorsFile f(path); }, path + ": ");
    expect_error([&] { SafeTensorsFile f(path); }, c.needle);
  }
}

TEST(SafeTensors, HeaderErrors) {
  expect_header_error("notjson", "{\"a\": {\"dtype\": F32}}", 0,
                      "header is not valid JSON: parse error at line 1, column");
  expect_header_error("array", "[1, 2]", 0, "header must be a JSON object, got array");
  // Deep nesting: the message used to dump() the value recursively and overflowed the
  // stack; the parser now refuses it before the tree exists (issue 29 #1).
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  expect_header_error("deep", "{\"w\": " + deep + "}", 0,
                      "header is not valid JSON: parse error: JSON nested deeper than 64 levels");
  expect_header_error("deep-shape", "{\"w\": {\"dtype\": \"F32\", \"shape\": [1, " + deep +
                      "], \"data_offsets\": [0, 4]}}", 4,
                      "header is not valid JSON: parse error: JSON nested deeper than 64 levels");
  // Within the limit, the value is still described briefly, not dumped.
  const std::string nested = std::string(60, '[') + std::string(60, ']');
  expect_header_error("nested", "{\"w\": " + nested + "}", 0,
                      "tensor \"w\": header entry must be an object, got an array of 1 elements");
  // Names and values are quoted on one line, escaped and shortened.
  expect_header_error("newline-name", R"({"a\nb": {"dtype": "F64\n", "shape": [1], "data_offsets": [0, 8]}})", 8,
                      "tensor \"a\\nb\": unknown dtype F64\\n (safetensors has");
  // Fuzzer finding: out_of_range from the JSON parser escaped as a non-vkf exception.
  expect_header_error("overflow", R"({"w": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}})", 4,
                      "header is not valid JSON: number overflow parsing '1e400'");
  expect_header_error("entry", R"({"w": [1, 2]})", 0,
                      "tensor \"w\": header entry must be an object, got [1,2]");
  expect_header_error("no-dtype", R"({"w": {"shape": [1], "data_offsets": [0, 4]}})", 4,
                      "tensor \"w\": missing \"dtype\"");
  expect_header_error("no-shape", R"({"w": {"dtype": "F32", "data_offsets": [0, 4]}})", 4,
                      "tensor \"w\": missing \"shape\"");
  expect_header_error("no-offsets", R"({"w": {"dtype": "F32", "shape": [1]}})", 4,
                      "tensor \"w\": missing \"data_offsets\"");
  expect_header_error("dtype-type", R"({"w": {"dtype": 4, "shape": [1], "data_offsets": [0, 4]}})", 4,
                      "tensor \"w\": \"dtype\" must be a string, got 4");
  expect_header_error("dtype", R"({"w": {"dtype": "Q4", "shape": [1], "data_offsets": [0, 8]}})", 8,
                      "tensor \"w\": unknown dtype Q4 (safetensors has BOOL, U8, I8, F8_E5M2, F8_E4M3, I16, "
                      "U16, F16, BF16, I32, U32, F32, F64, I64, U64)");
  expect_header_error("shape-type", R"({"w": {"dtype": "F32", "shape": 3, "data_offsets": [0, 12]}})", 12,
                      "tensor \"w\": \"shape\" must be an array, got 3");
  expect_header_error("shape-neg", R"({"w": {"dtype": "F32", "shape": [2, -1], "data_offsets": [0, 8]}})", 8,
                      "tensor \"w\": \"shape\" must hold non-negative integers, got [2,-1]");
  expect_header_error("shape-float", R"({"w": {"dtype": "F32", "shape": [2.5], "data_offsets": [0, 8]}})", 8,
                      "tensor \"w\": \"shape\" must hold non-negative integers");
  expect_header_error("shape-overflow",
                      R"({"w": {"dtype": "F32", "shape": [4294967296, 4294967296], "data_offsets": [0, 8]}})",
                      8, "tensor \"w\": shape [4294967296, 4294967296] is absurdly large");
  expect_header_error("offsets-type", R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": "0-4"}})", 4,
                      "tensor \"w\": \"data_offsets\" must be [begin, end]");
  expect_header_error("offsets-len", R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0]}})", 4,
                      "tensor \"w\": \"data_offsets\" must be [begin, end]");
  expect_header_error("offsets-neg", R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [-4, 0]}})", 4,
                      "tensor \"w\": \"data_offsets\" must be [begin, end] with non-negative integers");
  expect_header_error("begin>end", R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [8, 4]}})", 8,
                      "tensor \"w\": data_offsets [8, 4] has begin > end");
  expect_header_error("end-beyond", R"({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 12]}})", 8,
                      "tensor \"w\": data_offsets end 12 is beyond the data section (8 bytes");
  expect_header_error("size", R"({"w": {"dtype": "F16", "shape": [2, 3], "data_offsets": [0, 8]}})", 8,
                      "tensor \"w\": shape [2, 3] × F16 is 12 bytes but data_offsets span 8");
  expect_header_error("metadata", R"({"__metadata__": {"n": 1}})", 0,
                      "\"__metadata__\" entry \"n\" must be a string");
  expect_header_error("metadata-type", R"({"__metadata__": [1]})", 0,
                      "\"__metadata__\" must be an object of strings");
}

// `vkformer quantize`'s files: a U8 tensor named in __metadata__ as a block format
// is read as that format's values; anything else it says is an error naming it.
TEST(SafeTensors, BlockFormatMetadata) {
  const std::string ok = R"({"__metadata__": {"vkformer.format.w": "Q8_0"},
                             "w": {"dtype": "U8", "shape": [2, 68], "data_offsets": [0, 136]}})";
  const SafeTensorsFile f(write_st("blocks", safetensors_raw(ok, std::string(136, '\0'))));
  EXPECT_EQ(f.get("w").dtype, "Q8_0");
  EXPECT_EQ(f.get("w").shape, (std::vector<int64_t>{2, 64}));
  EXPECT_EQ(f.get("w").bytes, 136u);
  // One 136-byte tensor "w": the metadata key, its format, w's dtype and shape; the error.
  const struct {
    const char *key, *format, *dtype, *shape, *needle;
  } bad[] = {
      {"v", "Q8_0", "U8", "[2, 68]", "__metadata__ \"vkformer.format.v\": there is no tensor \"v\""},
      {"w", "Q5_0", "U8", "[2, 68]", "\"Q5_0\" is not a block format (Q8_0, Q4_0, Q4_1, Q4_K, Q6_K)"},
      {"w", "Q8_0", "F32", "[2, 17]", "tensor \"w\" must be U8 [..., whole Q8_0 blocks of 34 bytes], got F32 [2, 17]"},
      {"w", "Q4_0", "U8", "[4, 34]", "must be U8 [..., whole Q4_0 blocks of 18 bytes], got U8 [4, 34]"},
  };
  for (const auto& b : bad)
    expect_header_error(std::string("blocks-") + b.format + "-" + b.dtype,
                        std::string(R"({"__metadata__": {"vkformer.format.)") + b.key + "\": \"" + b.format +
                            R"("}, "w": {"dtype": ")" + b.dtype + "\", \"shape\": " + b.shape +
                            R"(, "data_offsets": [0, 136]}})",
                        136, b.needle);
}

TEST(SafeTensors, LayoutErrors) {
  expect_header_error("overlap",
                      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                          "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})",
                      12, "tensors \"a\" and \"b\" overlap (bytes 4 to 8");
  expect_header_error("same",
                      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                          "b": {"dtype": "F16", "shape": [4], "data_offsets": [0, 8]}})",
                      8, "overlap");
  expect_header_error("gap",
                      R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
                          "b": {"dtype": "F32", "shape": [1], "data_offsets": [12, 16]}})",
                      16, "bytes 8 to 12 of the data section belong to no tensor (a gap before \"b\")");
  expect_header_error("leading-gap", R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})", 8,
                      "bytes 0 to 4 of the data section belong to no tensor");
  expect_header_error("trailing", R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}})", 10,
                      "bytes 4 to 10 of the data section belong to no tensor (trailing data)");
  expect_header_error("trailing-empty", "{}", 3, "bytes 0 to 3 of the data section belong to no tensor");
}

}  // namespace
}  // namespace vkf::test
