// The "char" tokenizer (docs/tokenizer.md) and Tokenizer::load: round trips,
// unknown characters, strict UTF-8, and one clear error per bad tokenizer.json.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "vkformer/tensor.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// A small vocabulary with multi-byte characters: ids 0-3 special, then a b é € 😀.
json small_vocab() {
  return {{"type", "char"},
          {"vocab", {"<pad>", "<bos>", "<eos>", "<unk>", "a", "b", "\u00e9", "\u20ac", "\U0001F600"}},
          {"pad_id", 0}, {"bos_id", 1}, {"eos_id", 2}, {"unk_id", 3}};
}

class CharTokenizerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("vkf_char_tok_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& text) { std::ofstream(dir_ / "tokenizer.json", std::ios::binary) << text; }
  std::unique_ptr<Tokenizer> load(const json& j) {
    write(j.dump());
    return Tokenizer::load(dir_.string());
  }
  // Loading `text` fails with a vkf::Error whose message has every one of `parts`.
  void expect_load_error(const std::string& text, std::initializer_list<std::string> parts) {
    write(text);
    try {
      Tokenizer::load(dir_.string());
      ADD_FAILURE() << "no error for " << text;
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
      for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
    }
  }

  fs::path dir_;
};

TEST_F(CharTokenizerTest, DatesModelRoundTrip) {
  auto tok = Tokenizer::load(VKF_MODELS_TOP "/dates");
  for (const char* s : {"22 November 2026", "Sunday, 22 November 2026", "the 22nd of November 2026",
                        "2026/11/22", "22.11.2026", "nOvEmBeR 22ND 2026", "2026-11-22"}) {
    const auto ids = tok->encode(s);
    EXPECT_EQ(ids.size(), std::string(s).size()) << s;
    EXPECT_EQ(tok->decode(ids), s);
  }
}

TEST_F(CharTokenizerTest, MultiByteRoundTripAndIds) {
  auto tok = load(small_vocab());
  EXPECT_EQ(tok->vocab_size(), 9u);
  const std::string s = "a\u00e9b\u20ac\U0001F600a";
  EXPECT_EQ(tok->encode(s), (std::vector<int32_t>{4, 6, 5, 7, 8, 4}));
  EXPECT_EQ(tok->decode(tok->encode(s)), s);
  EXPECT_TRUE(tok->encode("").empty());
}

TEST_F(CharTokenizerTest, UnknownCharactersAreUnk) {
  auto tok = load(small_vocab());
  // One unk per code point, whatever its length in bytes; unk decodes to U+FFFD.
  EXPECT_EQ(tok->encode("ac\u00e4\U0001F601b"), (std::vector<int32_t>{4, 3, 3, 3, 5}));
  EXPECT_EQ(tok->decode({4, 3, 5}), "a\uFFFDb");
  // The names of the special entries are not characters: "<" is unknown.
  EXPECT_EQ(tok->encode("<pad>")[0], 3);
}

TEST_F(CharTokenizerTest, DecodeSkipsSpecialIdsAndRefusesOutOfRange) {
  auto tok = load(small_vocab());
  EXPECT_EQ(tok->decode({1, 4, 0, 5, 2, 0}), "ab");
  for (int32_t bad : {-1, 9, 1000}) {
    try {
      tok->decode({4, bad});
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("id " + std::to_string(bad) + " at position 1"), std::string::npos)
          << e.what();
    }
  }
}

TEST_F(CharTokenizerTest, InvalidUtf8NamesTheByteOffset) {
  auto tok = load(small_vocab());
  const std::pair<std::string, size_t> cases[] = {
      {"ab\xff", 2},                 // never a UTF-8 byte
      {"a\x80", 1},                  // continuation without a lead byte
      {"ab\xc3", 2},                 // cut short by the end
      {"a\xc3(b", 1},                // cut short by an ASCII byte
      {"\xe2\x82", 0},               // three-byte sequence cut short
      {"aa\xc0\xaf", 2},             // overlong '/'
      {"\xe0\x80\xaf", 0},           // overlong, three bytes
      {"a\xed\xa0\x80", 1},          // UTF-16 surrogate U+D800
      {"\xf4\x90\x80\x80", 0},       // U+110000
      {"\xf8\x88\x80\x80\x80", 0},   // five-byte form
      {std::string("a\0\xfe", 3), 2},  // NUL is a valid character (unknown), 0xFE is not
  };
  for (const auto& [text, offset] : cases) {
    try {
      tok->encode(text);
      ADD_FAILURE() << "no error at offset " << offset;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("invalid UTF-8 at byte offset " + std::to_string(offset) + " "),
                std::string::npos)
          << e.what();
    }
  }
}

TEST_F(CharTokenizerTest, BadTokenizerJson) {
  const std::string f = "tokenizer.json";
  fs::remove(dir_ / f);
  EXPECT_THROW(Tokenizer::load(dir_.string()), Error);
  expect_load_error("{\"type\": \"char\", ", {f, "not valid JSON"});
  expect_load_error("", {f, "not valid JSON"});
  expect_load_error("[1, 2]", {f, "JSON object"});
  expect_load_error("{\"vocab\": []}", {f, "missing field \"type\"", "\"char\""});
  expect_load_error("{\"type\": 3}", {f, "\"type\" must be a string", "\"char\""});
  expect_load_error("{\"type\": \"bpe\"}", {f, "\"type\"", "\"bpe\"", "known types", "\"char\""});

  auto with = [](const char* key, json v) {
    json j = small_vocab();
    if (v.is_discarded()) j.erase(key);
    else j[key] = v;
    return j.dump();
  };
  const json gone = json(json::value_t::discarded);
  expect_load_error(with("vocab", gone), {f, "missing field \"vocab\""});
  expect_load_error(with("vocab", "abc"), {f, "\"vocab\" must be a non-empty array"});
  expect_load_error(with("vocab", json::array()), {f, "\"vocab\" must be a non-empty array"});
  expect_load_error(with("vocab", {"<pad>", "<bos>", "<eos>", "<unk>", "a", 5}), {f, "\"vocab\"[5] must be a string"});
  expect_load_error(with("vocab", {"<pad>", "<bos>", "<eos>", "<unk>", "ab"}), {f, "\"vocab\"[4]", "exactly one character"});
  expect_load_error(with("vocab", {"<pad>", "<bos>", "<eos>", "<unk>", ""}), {f, "\"vocab\"[4]", "exactly one character"});
  expect_load_error(with("vocab", {"<pad>", "<bos>", "<eos>", "<unk>", "a", "b", "a"}), {f, "\"vocab\"[6]", "already id 4"});
  expect_load_error(with("pad_id", gone), {f, "missing field \"pad_id\""});
  expect_load_error(with("unk_id", "3"), {f, "\"unk_id\" must be an integer id in [0, 9)"});
  expect_load_error(with("eos_id", 9), {f, "\"eos_id\" must be an integer id in [0, 9)"});
  expect_load_error(with("bos_id", -1), {f, "\"bos_id\""});
  expect_load_error(with("bos_id", 1.5), {f, "\"bos_id\""});
  expect_load_error(with("eos_id", 1), {f, "four different ids"});
  // An invalid UTF-8 vocabulary entry: the JSON parser refuses it first.
  expect_load_error("{\"type\": \"char\", \"vocab\": [\"\xff\"]}", {f, "not valid JSON"});
}

}  // namespace
}  // namespace vkf::test
