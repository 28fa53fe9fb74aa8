// Hostile and unusual library inputs (docs/errors.md, "Library inputs
// (reliability round 2)"): deeply nested JSON in every JSON file, a directory or
// a FIFO where a file should be, a sparse safetensors file whose header lies,
// hostile tensor names, a long SentencePiece piece. Each must end in one clear
// vkf::Error (or a warning), never a crash, a hang or a stream exception.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "model/safetensors.hpp"
#include "model/tensor_files.hpp"
#include "model_writer.hpp"
#include "vkformer/model.hpp"
#include "vkformer/session.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::test {
namespace {

namespace fs = std::filesystem;

/// 100,000 nested arrays: nlohmann's dump() and copies recurse once per level.
const std::string& deep() {
  static const std::string s = std::string(100000, '[') + std::string(100000, ']');
  return s;
}

/// The message of the vkf::Error `f` throws; fails the test if it throws none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected a vkf::Error";
  return "";
}

/// One short line naming `path` (or the directory of the file).
void expect_clear(const std::string& msg, const std::string& path) {
  SCOPED_TRACE(path);
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  EXPECT_LT(msg.size(), 600u) << msg;
}

const json kWordPiece = {
    {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"vocab", {{"[UNK]", 0}, {"a", 1}}}}}};

TEST(LibraryInputs, DeeplyNestedJsonIsAnErrorNotACrash) {
  const std::string dir = temp_dir("deep");
  // Whole files.
  write_file(dir + "/config.json", deep());
  expect_clear(error_of([&] { load_config(dir + "/config.json"); }), dir + "/config.json");
  write_file(dir + "/tokenizer.json", deep());
  expect_clear(error_of([&] { Tokenizer::load(dir); }), dir + "/tokenizer.json");
  write_file(dir + "/generation_config.json", deep());
  expect_clear(error_of([&] { read_generation_config(dir); }), dir + "/generation_config.json");
  write_file(dir + "/s.safetensors", safetensors_raw("{\"w\": " + deep() + "}", ""));
  expect_clear(error_of([&] { SafeTensorsFile f(dir + "/s.safetensors"); }), dir + "/s.safetensors");
  write_file(dir + "/model.safetensors.index.json", "{\"weight_map\": " + deep() + "}");
  expect_clear(error_of([&] { WeightFiles f(dir + "/model.safetensors.index.json"); }),
               dir + "/model.safetensors.index.json");

  // A value that the error message quotes.
  auto with = [](json j, const std::string& key, const std::string& raw) {
    const std::string marker = "\"@@\"";
    j[key] = "@@";
    std::string text = j.dump();
    return text.replace(text.find(marker), marker.size(), raw);
  };
  write_file(dir + "/config.json", with(tiny_config(Kind::EncDec), "d_model", deep()));
  expect_clear(error_of([&] { load_config(dir + "/config.json"); }), "\"d_model\"");
  const json chars = {{"type", "char"}, {"vocab", {"<pad>", "<s>", "</s>", "<unk>", "a"}},
                      {"pad_id", 0}, {"bos_id", 1}, {"eos_id", 2}, {"unk_id", 3}};
  write_file(dir + "/tokenizer.json", with(chars, "pad_id", deep()));
  expect_clear(error_of([&] { Tokenizer::load(dir); }), "\"pad_id\"");
  const json sp = {{"type", "sentencepiece_unigram"}, {"normalizer", "nfkc"}, {"unk_id", 0}, {"reserved_ids", 0},
                   {"pieces", json::array({json::array({"<unk>", 0}), json::array({"a", -1})})}};
  write_file(dir + "/tokenizer.json", with(sp, "normalizer", deep()));
  expect_clear(error_of([&] { Tokenizer::load(dir); }), "\"normalizer\"");
  write_file(dir + "/tokenizer.json", with(sp, "unk_id", deep()));
  expect_clear(error_of([&] { Tokenizer::load(dir); }), "\"unk_id\"");
  json hf = kWordPiece;
  write_file(dir + "/tokenizer.json", with(hf, "normalizer", deep()));
  expect_clear(error_of([&] { Tokenizer::load(dir); }), "tokenizer.json");
  write_file(dir + "/generation_config.json", with(json::object(), "top_p", deep()));
  expect_clear(error_of([&] { read_generation_config(dir); }), "\"top_p\"");

  // The optional files beside an HF tokenizer.json.
  write_file(dir + "/tokenizer.json", kWordPiece.dump());
  for (const char* name : {"tokenizer_config.json", "special_tokens_map.json"}) {
    write_file(dir + "/" + name, deep());
    expect_clear(error_of([&] { Tokenizer::load(dir); }), name);
    write_file(dir + "/" + name, with(json::object(), "unk_token", deep()));
    expect_clear(error_of([&] { Tokenizer::load(dir); }), name);
    fs::remove(dir + "/" + name);
  }
}

/// Puts a directory, then a FIFO, at `path` and expects `load` to refuse each
/// with a message naming the path (a FIFO never blocks: nothing writes to it).
template <class F>
void expect_refused(const std::string& path, F&& load) {
  std::error_code ec;
  fs::remove_all(path, ec);
  fs::create_directory(path);
  std::string msg = error_of(load);
  expect_clear(msg, path);
  EXPECT_NE(msg.find("is a directory"), std::string::npos) << msg;
  fs::remove_all(path);
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  msg = error_of(load);
  expect_clear(msg, path);
  EXPECT_NE(msg.find("FIFO"), std::string::npos) << msg;
  fs::remove(path);
}

TEST(LibraryInputs, EveryReaderRefusesADirectoryOrAFifo) {
  const std::string dir = temp_dir("kinds");
  expect_refused(dir + "/config.json", [&] { load_config(dir + "/config.json"); });
  expect_refused(dir + "/tokenizer.json", [&] { Tokenizer::load(dir); });
  expect_refused(dir + "/model.safetensors", [&] { SafeTensorsFile f(dir + "/model.safetensors"); });
  expect_refused(dir + "/model.safetensors.index.json",
                 [&] { WeightFiles f(dir + "/model.safetensors.index.json"); });
  expect_refused(dir + "/generation_config.json", [&] { read_generation_config(dir); });
  expect_refused(dir + "/vocab.txt", [&] { Tokenizer::load(dir); });
  // Optional files are skipped when missing, but not when something else is there.
  write_file(dir + "/tokenizer.json", kWordPiece.dump());
  expect_refused(dir + "/tokenizer_config.json", [&] { Tokenizer::load(dir); });
  expect_refused(dir + "/special_tokens_map.json", [&] { Tokenizer::load(dir); });
  fs::remove(dir + "/tokenizer.json");
  write_file(dir + "/vocab.json", R"({"a": 0, "b": 1, "ab": 2})");
  expect_refused(dir + "/merges.txt", [&] { Tokenizer::load(dir); });
  fs::remove(dir + "/vocab.json");
  // Marian: source.spm marks the directory.
  write_file(dir + "/vocab.json", R"({"<unk>": 0})");
  write_file(dir + "/target.spm", "x");
  expect_refused(dir + "/source.spm", [&] { Tokenizer::load(dir); });
}

/// A sparse file of `size` bytes that starts with `header`.
std::string sparse_safetensors(const std::string& dir, const std::string& header, uint64_t size) {
  const std::string path = dir + "/model.safetensors";
  write_file(path, safetensors_raw(header, ""));
  fs::resize_file(path, size);
  return path;
}

uint64_t rss_bytes() {
  std::ifstream in("/proc/self/statm");
  uint64_t pages = 0, resident = 0;
  in >> pages >> resident;
  return resident * uint64_t(::sysconf(_SC_PAGESIZE));
}

TEST(LibraryInputs, SafetensorsIsMappedAndItsHeaderCheckedFirst) {
  const std::string dir = temp_dir("sparse");
  const uint64_t size = 1536ull << 20;  // 1.5 GiB, no block of it on disk
  // The header claims more data than the file has: refused before any data is read.
  std::string path = sparse_safetensors(dir, R"({"w": {"dtype": "U8", "shape": [2147483648], "data_offsets": [0, 2147483648]}})", size);
  std::string msg = error_of([&] { SafeTensorsFile f(path); });
  expect_clear(msg, path);
  EXPECT_NE(msg.find("beyond the data section"), std::string::npos) << msg;

  // A header that tells the truth: opening reads the header only, not 1.5 GiB.
  auto truthful = [](uint64_t data) {
    const std::string n = std::to_string(data);
    return R"({"w": {"dtype": "U8", "shape": [)" + n + R"(], "data_offsets": [0, )" + n + "]}}";
  };
  uint64_t data = size;
  while (8 + truthful(data).size() + data != size) data = size - 8 - truthful(data).size();
  const std::string h = truthful(data);
  ASSERT_EQ(8 + h.size() + data, size);
  path = sparse_safetensors(dir, h, size);
  const uint64_t before = rss_bytes();
  {
    SafeTensorsFile f(path);
    EXPECT_EQ(f.get("w").bytes, data);
    EXPECT_LT(rss_bytes(), before + (64ull << 20)) << "opening read the data";
  }

  // Under an address-space limit smaller than the file, the mapping fails with
  // a vkf::Error (in a child: the limit must not reach the rest of the tests).
  const pid_t pid = ::fork();
  if (pid == 0) {
    // The limit: what the process maps now plus 512 MiB, well below the 1.5 GiB file.
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    statm >> pages;
    const rlim_t limit = rlim_t(pages * uint64_t(::sysconf(_SC_PAGESIZE)) + (512ull << 20));
    struct rlimit lim {limit, limit};
    int code = 3;
    try {
      if (::setrlimit(RLIMIT_AS, &lim) == 0) SafeTensorsFile f(path);
      code = 4;  // mapped despite the limit
    } catch (const Error& e) {
      code = std::string(e.what()).find(path + ": cannot map") == 0 ? 0 : 1;
    } catch (...) {
      code = 2;  // e.g. std::bad_alloc escaping
    }
    ::_exit(code);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
}

TEST(LibraryInputs, LongSentencePiecePieceAndLongTextAreLinear) {
  // One 100,000-symbol piece and a 100,000-symbol text that follows it all the
  // way without ever completing it: the trie walk from every start was quadratic.
  const size_t n = 100000;
  const std::string dir = temp_dir("long_piece");
  const json sp = {{"type", "sentencepiece_unigram"}, {"normalizer", "nfkc"}, {"unk_id", 0}, {"reserved_ids", 1},
                   {"pieces", json::array({json::array({"<unk>", 0}), json::array({"\xE2\x96\x81", -1}), json::array({"a", -2}),
                                            json::array({std::string(n, 'a'), -1})})}};
  write_file(dir + "/tokenizer.json", sp.dump());
  auto tok = Tokenizer::load(dir);
  std::vector<int32_t> ids = tok->encode(std::string(n - 1, 'a'));
  ASSERT_EQ(ids.size(), n);  // "▁" then 99,999 × "a"
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 2), std::ptrdiff_t(n - 1));
  ids = tok->encode(std::string(n, 'a') + " a");  // the long piece itself, then "▁" "a"
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 3, 1, 2}));

  // Hugging Face's Unigram (a byte trie): the same.
  json hf = {{"model", {{"type", "Unigram"}, {"unk_id", 0},
                        {"vocab", json::array({json::array({"<unk>", 0}), json::array({"a", -2}), json::array({"b", -2}),
                                                json::array({std::string(n, 'a'), -1})})}}}};
  write_file(dir + "/tokenizer.json", hf.dump());
  tok = Tokenizer::load(dir);
  ids = tok->encode(std::string(n - 1, 'a') + "b");
  ASSERT_EQ(ids.size(), n);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), 1), std::ptrdiff_t(n - 1));
  EXPECT_EQ(ids.back(), 2);
  EXPECT_EQ(tok->encode(std::string(n, 'a') + "ba"), (std::vector<int32_t>{3, 2, 1}));
  EXPECT_EQ(tok->encode("cc" + std::string(3, 'a') + "c"), (std::vector<int32_t>{0, 1, 1, 1, 0}));
}

}  // namespace
}  // namespace vkf::test
