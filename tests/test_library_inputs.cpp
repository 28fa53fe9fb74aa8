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
#include "test_util.hpp"
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
/// Arrays nested as deeply as the parser allows inside an object's field
/// (kMaxJsonDepth = 64 levels with the object): messages quote them briefly.
const std::string& nested_to_the_limit() {
  static const std::string s = std::string(63, '[') + std::string(63, ']');
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

  // A value that the error message quotes, nested to the parser's limit (deeper is refused while parsing).
  auto with = [](json j, const std::string& key, const std::string& raw) {
    const std::string marker = "\"@@\"";
    j[key] = "@@";
    std::string text = j.dump();
    return text.replace(text.find(marker), marker.size(), raw);
  };
  write_file(dir + "/config.json", with(tiny_config(Kind::EncDec), "d_model", nested_to_the_limit()));
  expect_clear(error_of([&] { load_config(dir + "/config.json"); }), "\"d_model\"");
  const json chars = {{"type", "char"}, {"vocab", {"<pad>", "<s>", "</s>", "<unk>", "a"}},
                      {"pad_id", 0}, {"bos_id", 1}, {"eos_id", 2}, {"unk_id", 3}};
  write_file(dir + "/tokenizer.json", with(chars, "pad_id", nested_to_the_limit()));
  expect_clear(error_of([&] { Tokenizer::load(dir); }), "\"pad_id\"");
  const json sp = {{"type", "sentencepiece_unigram"}, {"normalizer", "nfkc"}, {"unk_id", 0}, {"reserved_ids", 0},
                   {"pieces", json::array({json::array({"<unk>", 0}), json::array({"a", -1})})}};
  write_file(dir + "/tokenizer.json", with(sp, "normalizer", nested_to_the_limit()));
  expect_clear(error_of([&] { Tokenizer::load(dir); }), "\"normalizer\"");
  write_file(dir + "/tokenizer.json", with(sp, "unk_id", nested_to_the_limit()));
  expect_clear(error_of([&] { Tokenizer::load(dir); }), "\"unk_id\"");
  json hf = kWordPiece;
  write_file(dir + "/tokenizer.json", with(hf, "normalizer", nested_to_the_limit()));
  expect_clear(error_of([&] { Tokenizer::load(dir); }), "tokenizer.json");
  write_file(dir + "/generation_config.json", with(json::object(), "top_p", nested_to_the_limit()));
  expect_clear(error_of([&] { read_generation_config(dir); }), "\"top_p\"");

  write_file(dir + "/config.json", with(tiny_config(Kind::EncDec), "d_model", deep()));
  expect_clear(error_of([&] { load_config(dir + "/config.json"); }), "nested deeper than 64 levels");

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

class LibraryInputsOnDevice : public DeviceTest {};

TEST_F(LibraryInputsOnDevice, HostileTensorNamesAreEscapedCutAndSummarised) {
  const json cfg = tiny_config(Kind::EncoderOnly);
  TensorMap file = tiny_weights(cfg);
  const std::string terminal = "evil\n\x1b[31mred\x1b[0m\r\"q\"\xc2\x9b\xe2\x80\xae", longname(100000, 'a');
  file[terminal] = {"F32", {1}, {1.f}};
  file[longname] = {"F32", {1}, {1.f}};
  for (int i = 0; i < 2000; ++i) file["extra." + std::to_string(i)] = {"F32", {0}, {}};
  const std::string dir = write_model("hostile_names", cfg, file);
  auto model = Model::load(ctx(), dir);
  const auto& warnings = model->warnings();
  ASSERT_EQ(warnings.size(), 9u);  // 8 named, then the count
  size_t bytes = 0;
  for (const std::string& w : warnings) {
    bytes += w.size();
    for (unsigned char c : w) EXPECT_TRUE(c >= 0x20 && c != 0x7f) << w;  // no control character
    EXPECT_EQ(w.find("\xc2\x9b"), std::string::npos) << w;                // nor a C1 CSI
    EXPECT_EQ(w.find("\xe2\x80\xae"), std::string::npos) << w;            // nor a bidi override
  }
  EXPECT_LT(bytes, 3000u);
  const std::string all = ::testing::PrintToString(warnings);
  EXPECT_NE(all.find(R"(evil\\n\\x1b[31mred\\x1b[0m\\r\\\"q\\\"\\u009b\\u202e)"), std::string::npos) << all;
  EXPECT_NE(all.find("... (100000 bytes)"), std::string::npos) << all;
  EXPECT_EQ(warnings.back(), dir + "/model.safetensors: ... and 1994 more unexpected tensors are ignored");
}

TEST_F(LibraryInputsOnDevice, APositionTableNoBindingCoversFailsAtLoad) {
  // 2^21 sinusoidal positions of d_model 16 in f32 are 128 MiB: a tiny file, but a
  // table the embedding op binds whole. It failed at the first forward, after the
  // host computed and uploaded it; now the dry run refuses it, naming the key.
  ScopedCaps caps(ctx());
  caps->max_storage_buffer_range = 1u << 20;  // 1 MiB: 16384 positions of 16 floats
  json cfg = tiny_config(Kind::EncDec);
  cfg["d_model"] = 16;
  const TensorMap weights = tiny_weights(cfg);
  cfg["max_positions"] = 16385;
  const std::string dir = write_model("positions", cfg, weights);
  expect_error([&] { Model::load(ctx(), dir); },
               dir + "/config.json: \"max_positions\" 16385 needs a position table [16385, 16] f32 of 1.0 MiB, "
                     "more than one binding of the device covers (maxStorageBufferRange 1.0 MiB, profile ");
  expect_error([&] { Model::load(ctx(), dir); }, "): at most 16384 positions");
  cfg["max_positions"] = 16384;
  write_file(dir + "/config.json", cfg.dump());
  EXPECT_NO_THROW(Model::load(ctx(), dir));
  // Learned tables too, in the model's precision.
  cfg["positional_encoding"] = "learned";
  cfg["max_positions"] = 16385;
  const std::string learned = write_model("positions_learned", cfg, tiny_weights(cfg));
  expect_error([&] { Model::load(ctx(), learned); }, "\"max_positions\" 16385 needs a position table");
}

TEST_F(LibraryInputsOnDevice, PipelineCacheThatIsNotAFileIsAWarning) {
  const std::string dir = temp_dir("pipeline_cache");
  ContextOptions o;
  o.validation = 1;
  o.verbose = false;
  o.cache_dir = dir;
  std::string file;
  {
    Context c(o);
    file = c.pipeline_cache_file();
    EXPECT_EQ(c.pipeline_cache_warning(), "");
  }
  ASSERT_FALSE(file.empty());
  auto run = [&]() -> std::string {  // a context that compiles one pipeline and saves the cache
    Context c(o);
    Tensor x = c.tensor({2, 4}, std::vector<float>(8, 1.f));
    Tensor y = c.tensor({2, 4});
    Recorder r(c);
    add(r, {&x, &x, &y});
    c.submit(r);
    c.save_pipeline_cache();
    EXPECT_EQ(c.validation_messages(), 0u) << c.last_validation_message();
    return c.pipeline_cache_warning();
  };
  std::error_code ec;
  // A directory, then a FIFO: one warning naming the path, the command runs, nothing is replaced.
  fs::remove(file, ec);
  fs::create_directory(file);
  std::string warning = run();
  EXPECT_NE(warning.find(file + ": cannot read the pipeline cache: is a directory"), std::string::npos) << warning;
  EXPECT_TRUE(fs::is_directory(file));
  fs::remove_all(file);
  ASSERT_EQ(::mkfifo(file.c_str(), 0600), 0);
  warning = run();
  EXPECT_NE(warning.find("FIFO"), std::string::npos) << warning;
  EXPECT_TRUE(fs::is_fifo(file));
  fs::remove(file);
  // Garbage is replaced by a real cache, silently; a symlink is not followed.
  write_file(file, "garbage");
  EXPECT_EQ(run(), "");
  EXPECT_GE(fs::file_size(file), 32u);  // a VkPipelineCache header at least (lavapipe keeps no more)
  const std::string target = dir + "/elsewhere";
  write_file(target, "keep");
  fs::remove(file);
  fs::create_symlink(target, file);
  run();
  EXPECT_TRUE(fs::is_symlink(file));
  std::ifstream in(target);
  std::string kept;
  in >> kept;
  EXPECT_EQ(kept, "keep");
  // No temporary files are left behind.
  for (const auto& e : fs::directory_iterator(dir))
    EXPECT_EQ(e.path().string().find(".tmp"), std::string::npos) << e.path();
}

TEST(LibraryInputs, ConfigSpecialIdsMustBeTheTokenizers) {
  const std::string dir = temp_dir("special_ids");
  write_file(dir + "/tokenizer.json", json({{"type", "char"}, {"vocab", {"<pad>", "<s>", "</s>", "<unk>", "a", "b"}},
                                            {"pad_id", 0}, {"bos_id", 1}, {"eos_id", 2}, {"unk_id", 3}}).dump());
  const auto tok = Tokenizer::load(dir);
  ModelConfig cfg;
  cfg.model_type = "transformer";
  cfg.pad_id = 0, cfg.bos_id = 1, cfg.eos_id = 2;
  EXPECT_NO_THROW(check_special_ids(cfg, *tok, dir));
  cfg.pad_id = 2;  // pad = EOS: text never holds EOS, nothing real is masked
  EXPECT_NO_THROW(check_special_ids(cfg, *tok, dir));
  cfg.pad_id = 4;  // "a" would be masked
  expect_error([&] { check_special_ids(cfg, *tok, dir); },
               dir + "/config.json: \"pad_id\" 4 is not the id of the tokenizer's pad_token \"<pad>\" (0)");
  cfg.pad_id = 0, cfg.eos_id = 0;  // eos = pad: generation never sees the model's EOS
  expect_error([&] { check_special_ids(cfg, *tok, dir); }, "\"eos_id\" 0 is not the id of the tokenizer's eos_token");
  cfg.eos_id = 2, cfg.bos_id = 2;
  expect_error([&] { check_special_ids(cfg, *tok, dir); }, "\"bos_id\" 2 is not the id of the tokenizer's bos_token");
  cfg.model_type = "bart";  // BART starts from EOS: Hugging Face families are not checked
  EXPECT_NO_THROW(check_special_ids(cfg, *tok, dir));
  EXPECT_EQ(tok->special_token("eos_token"), "</s>");
  EXPECT_EQ(tok->token_to_id("</s>"), 2);
  EXPECT_EQ(tok->token_to_id("b"), 5);
  EXPECT_EQ(tok->token_to_id("ab"), std::nullopt);
}

}  // namespace
}  // namespace vkf::test
