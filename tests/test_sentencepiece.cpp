// The sentencepiece_unigram tokenizer on tiny hand-made vocabularies: Viterbi, the
// npm package's quirks, NFKC, decode and errors. tests/sentencepiece_npm.py checks the
// same against the package itself in Node.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "vkformer/tensor.hpp"  // vkf::Error
#include "vkformer/tokenizer.hpp"

namespace fs = std::filesystem;
using Ids = std::vector<int32_t>;

namespace {

/// A temporary model directory holding one tokenizer.json.
class TokenizerDir {
 public:
  explicit TokenizerDir(const std::string& json) {
    static int n = 0;
    dir_ = fs::temp_directory_path() / ("vkf-sp-" + std::to_string(getpid()) + "-" + std::to_string(n++));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "tokenizer.json") << json;
  }
  ~TokenizerDir() { fs::remove_all(dir_); }
  std::string path() const { return dir_.string(); }
  std::string file() const { return (dir_ / "tokenizer.json").string(); }

 private:
  fs::path dir_;
};

/// tokenizer.json with 6 reserved ids ("�" first, as in USE lite) and then `pieces`.
std::string sp_json(const std::string& pieces, const std::string& unk = "\xEF\xBF\xBD") {
  return R"({"type": "sentencepiece_unigram", "normalizer": "nfkc", "unk_id": 0, "reserved_ids": 6,
    "pieces": [[")" + unk + R"(", 0], ["<s>", 0], ["</s>", 0], ["r3", 0], ["r4", 0], ["r5", 0])" +
         (pieces.empty() ? "" : ", ") + pieces + "]}";
}

std::unique_ptr<vkf::Tokenizer> make(const std::string& pieces) {
  TokenizerDir d(sp_json(pieces));
  return vkf::Tokenizer::load(d.path());
}

/// The message of the vkf::Error that `f` throws ("" if none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const vkf::Error& e) {
    return e.what();
  }
  return "";
}

const std::string kBasic =
    R"(["▁", -1], ["a", -3], ["b", -3], ["ab", -2], ["é", -2], ["fi", -2], ["f", -3], ["i", -3])";

}  // namespace

TEST(SentencePiece, ViterbiPicksTheBestSegmentation) {
  auto t = make(kBasic);  // ids: ▁ 6, a 7, b 8, ab 9, é 10, fi 11, f 12, i 13
  EXPECT_EQ(t->vocab_size(), 14u);
  EXPECT_EQ(t->encode("ab"), (Ids{6, 9}));
  EXPECT_EQ(t->encode("ba"), (Ids{6, 8, 7}));
  EXPECT_EQ(t->encode("ab a"), (Ids{6, 9, 6, 7}));
  auto worse = make(R"(["▁", -1], ["a", -3], ["b", -3], ["ab", -7])");
  EXPECT_EQ(worse->encode("ab"), (Ids{6, 7, 8}));
}

TEST(SentencePiece, EmptyAndSpaces) {
  auto t = make(kBasic);
  EXPECT_EQ(t->encode(""), Ids{});
  EXPECT_EQ(t->encode(" "), (Ids{6, 6}));       // "▁" + "▁"
  EXPECT_EQ(t->encode("  a "), (Ids{6, 6, 6, 7, 6}));
  EXPECT_EQ(t->encode("a\tb"), (Ids{6, 7, 0, 8}));  // only U+0020 becomes "▁"
}

TEST(SentencePiece, UnknownsInARowBecomeOneId) {
  auto t = make(kBasic);
  EXPECT_EQ(t->encode("qqq"), (Ids{6, 0}));
  EXPECT_EQ(t->encode("q a q"), (Ids{6, 0, 6, 7, 6, 0}));
  EXPECT_EQ(t->encode("aqzxb"), (Ids{6, 7, 0, 8}));
  EXPECT_EQ(t->encode(std::string_view("a\0b", 3)), (Ids{6, 7, 0, 8}));
  EXPECT_EQ(t->encode("<s>"), (Ids{6, 0}));  // reserved pieces are not matched
}

TEST(SentencePiece, Nfkc) {
  auto t = make(kBasic);
  EXPECT_EQ(t->encode("\xEF\xAC\x81"), (Ids{6, 11}));         // U+FB01 "ﬁ" -> "fi"
  EXPECT_EQ(t->encode("\xEF\xBD\x81\xEF\xBD\x82"), (Ids{6, 9}));  // fullwidth "ａｂ" -> "ab"
  EXPECT_EQ(t->encode("e\xCC\x81"), (Ids{6, 10}));            // e + U+0301 -> "é"
  EXPECT_EQ(t->encode("a\xC2\xA0" "b"), (Ids{6, 7, 6, 8}));   // NBSP -> " " -> "▁"
  EXPECT_EQ(t->encode("a\xE3\x80\x80" "b"), (Ids{6, 7, 6, 8}));  // U+3000 -> " "
}

TEST(SentencePiece, TiesGoToTheLaterStart) {
  // "▁a" (from 0) and "▁" + "a" (from 1) both score -4: the package's >= keeps the later.
  auto t = make(R"(["▁", -2], ["a", -2], ["▁a", -4])");
  EXPECT_EQ(t->encode("a"), (Ids{6, 7}));
}

TEST(SentencePiece, ScoreZeroCountsAsUnset) {
  // "▁x" scores 0 (null, as ":" in USE lite's vocab.json), so the package takes the
  // next candidate, "▁" + "x" at -6, although 0 is better.
  auto t = make(R"(["▁", -1], ["x", -5], ["▁x", null])");
  EXPECT_EQ(t->encode("x"), (Ids{6, 7}));
  // Later on, "▁x" adds 0 to a nonzero best: no quirk.
  EXPECT_EQ(t->encode("x x"), (Ids{6, 7, 8}));
}

TEST(SentencePiece, RepeatedPieceTakesTheLastId) {
  auto t = make(R"(["▁", -1], ["a", -3], ["a", -2])");
  EXPECT_EQ(t->encode("a"), (Ids{6, 8}));
}

TEST(SentencePiece, BacktrackingStepsByUtf16Length) {
  // U+1F600 is one symbol but 2 JS code units: stepping back over it skips "a".
  auto t = make(R"(["▁", -1], ["a", -1], ["😀", -1])");
  EXPECT_EQ(t->encode("a\xF0\x9F\x98\x80"), (Ids{6, 8}));
  EXPECT_EQ(t->encode("\xF0\x9F\x98\x80"), (Ids{8}));  // and the leading "▁"
  // An unknown steps back by the length of the unk_id piece.
  TokenizerDir d(sp_json(R"(["▁", -1], ["a", -1])", "??"));
  EXPECT_EQ(vkf::Tokenizer::load(d.path())->encode("qa"), (Ids{0, 7}));
}

TEST(SentencePiece, PositionOnlyInsideLongerPiecesIsUnknown) {
  // "x" is no piece, so from "x" only "xy" matches and nothing ends between x and y;
  // "y" starting there on a 0 score wins over "xy", and the gap becomes an unknown.
  auto t = make(R"(["▁", -1], ["xy", -2], ["y", -1])");
  EXPECT_EQ(t->encode("xy"), (Ids{6, 0, 8}));
  EXPECT_EQ(t->encode("xz"), (Ids{6, 0}));
  auto no_f = make(R"(["▁", -1], ["fi", -2])");
  EXPECT_EQ(no_f->encode("fi"), (Ids{6, 0}));  // "i" (unknown, 0) from the unreached gap wins
}

TEST(SentencePiece, Decode) {
  auto t = make(kBasic);
  EXPECT_EQ(t->decode(t->encode("ab  ba a")), "ab  ba a");
  EXPECT_EQ(t->decode({1, 6, 7, 2}), "a");  // reserved ids left out
  EXPECT_EQ(t->decode({7, 6, 6}), "a  ");
  EXPECT_EQ(t->decode({}), "");
  EXPECT_NE(error_of([&] { t->decode({14}); }).find("id 14"), std::string::npos);
  EXPECT_NE(error_of([&] { t->decode({-1}); }).find("id -1"), std::string::npos);
}

TEST(SentencePiece, InvalidUtf8NamesTheByteOffset) {
  auto t = make(kBasic);
  const std::pair<std::string, size_t> cases[] = {
      {"\xC3", 0}, {"ab\xFF", 2}, {"a\xC0\x80", 1}, {"\xE2\x82", 0}, {"ab\xED\xA0\x80", 2},
      {"\xF4\x90\x80\x80", 0}, {"a\x80", 1}, {"\xE2\x28\xA1", 0}};
  for (const auto& c : cases) {  // not a structured binding: C++17 lambdas cannot capture one (clang)
    const std::string msg = error_of([&] { t->encode(c.first); });
    EXPECT_NE(msg.find("byte offset " + std::to_string(c.second)), std::string::npos) << msg;
  }
}

TEST(SentencePiece, LoadErrorsNameFileAndField) {
  const std::string good = sp_json(kBasic);
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  const std::pair<std::string, std::string> cases[] = {
      {"{", "not valid JSON"},
      {"[]", "JSON object"},
      {R"({"normalizer": "nfkc"})", "\"type\""},
      {replace("sentencepiece_unigram", "bpe"), "sentencepiece_unigram"},
      {replace("\"pieces\"", "\"piece\""), "\"pieces\" is missing"},
      {replace("[\"<s>\", 0]", "[\"<s>\"]"), "\"pieces\"[1]"},
      {replace("[\"<s>\", 0]", "[\"<s>\", \"0\"]"), "\"pieces\"[1]"},
      {replace("[\"<s>\", 0]", "[1, 0]"), "\"pieces\"[1]"},
      {replace("\"unk_id\": 0", "\"unk_id\": 99"), "\"unk_id\""},
      {replace("\"reserved_ids\": 6", "\"reserved_ids\": -1"), "\"reserved_ids\""},
      {replace("\"nfkc\"", "\"nfc\""), "\"normalizer\""},
      {replace("\"\xEF\xBF\xBD\"", "\"\""), "\"pieces\"[0]"},
  };
  for (const auto& [json, field] : cases) {
    TokenizerDir d(json);
    const std::string msg = error_of([&] { vkf::Tokenizer::load(d.path()); });
    EXPECT_NE(msg.find(d.file()), std::string::npos) << msg;
    EXPECT_NE(msg.find(field), std::string::npos) << "want " << field << " in: " << msg;
  }
  const std::string msg = error_of([] { vkf::Tokenizer::load("/nonexistent-vkf-dir"); });
  EXPECT_NE(msg.find("/nonexistent-vkf-dir/tokenizer.json"), std::string::npos) << msg;
}

TEST(SentencePiece, CommittedFixtureLoads) {
  auto t = vkf::Tokenizer::load(VKF_GOLDEN_DIR "/../data/sp_small");
  EXPECT_EQ(t->vocab_size(), 31u);
  EXPECT_EQ(t->encode("ab"), (Ids{10}));          // "▁ab" -4.5 beats "▁" + "ab" -2 - 3.9
  EXPECT_EQ(t->encode("zz"), (Ids{6, 21, 21}));  // positive scores: "z" +5 twice beats "zz" 0
  EXPECT_EQ(t->encode("\xF0\x9F\x98\x80"), (Ids{13}));  // the 2-unit "😀" swallows the "▁"
}

TEST(SentencePiece, LongInputIsLinear) {
  // Pieces up to 16 symbols long, as in USE lite; 100 KB of text.
  std::string pieces = R"(["▁", -1])";
  for (int len = 1; len <= 16; ++len) pieces += ", [\"" + std::string(len, 'a') + "\", " + std::to_string(-len) + "]";
  auto t = make(pieces);
  std::string text;
  while (text.size() < 100000) text += "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa caf\xC3\xA9 \xE6\x97\xA5\xE6\x9C\xAC ";
  const auto t0 = std::chrono::steady_clock::now();
  const Ids ids = t->encode(text);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("encode of %zu bytes: %zu ids in %.1f ms\n", text.size(), ids.size(), ms);
  EXPECT_GT(ids.size(), 3000u);
}

// Issue 29 #9: NFKC's canonical reordering is quadratic in a run of marks
// ('a' + U+0301 U+0316 × 100,000 took seconds); the text is first put in
// Unicode's Stream-Safe Text Format, a U+034F after every 30 non-starters.
TEST(SentencePiece, LongRunsOfMarksAreStreamSafe) {
  // ids: ▁ 6, a 7, U+0316 8, U+0301 9, U+034F 10, á 11
  auto t = make(R"(["▁", -1], ["a", -1], ["̖", -1], ["́", -1], ["͏", -1], ["á", -1])");
  const std::string acute = "\xCC\x81", grave_below = "\xCC\x96";
  std::string text = "a";
  for (int i = 0; i < 20; ++i) text += acute + grave_below;
  // Stretch 1 (30 marks): a, 15 × U+0316, 15 × U+0301 reordered, and a + the first U+0301 composed
  // (U+0316, class 220, does not block it); then U+034F and stretch 2: 5 × U+0316, 5 × U+0301.
  Ids expected = {6, 11};
  expected.insert(expected.end(), 15, 8);
  expected.insert(expected.end(), 14, 9);
  expected.push_back(10);
  expected.insert(expected.end(), 5, 8);
  expected.insert(expected.end(), 5, 9);
  EXPECT_EQ(t->encode(text), expected);
  // Ordinary text with a few marks: as before (NFKC of the whole run).
  EXPECT_EQ(t->encode("a" + acute + grave_below + acute), (Ids{6, 11, 8, 9}));
  // 200,000 marks: one U+034F per 30 after the first stretch, every mark kept (á takes one).
  text = "a";
  for (int i = 0; i < 100000; ++i) text += acute + grave_below;
  const Ids ids = t->encode(text);
  EXPECT_EQ(ids.size(), 1 + 1 + (200000 - 1) + (200000 - 1) / 30);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 10), (200000 - 1) / 30);
}
