// Sampling (src/run/sampling.hpp): each of HF's processors and warpers alone and in
// HF's order against HF's own code (tests/data/sampling_reference.json, written by
// tools/hf/sampling_reference.py in the HF venv), the seeded generator, a chi-square
// test of the draws, every bad option's message, generation_config.json, the text
// stream of `vkformer generate`, and seeded generation on a model.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>

#include "model_util.hpp"
#include "run/sampling.hpp"
#include "text/text_stream.hpp"

namespace vkf::test {
namespace {

namespace sp = vkf::sampling;
constexpr double kInf = std::numeric_limits<double>::infinity();

nlohmann::json reference() {
  const std::string path = std::string(VKF_MODELS_DIR) + "/../data/sampling_reference.json";
  std::ifstream in(path);
  EXPECT_TRUE(in) << path << " is missing: run tools/hf/sampling_reference.py (see its header)";
  return nlohmann::json::parse(in);
}

std::vector<double> scores_of(const nlohmann::json& j) {
  std::vector<double> s;
  for (const auto& x : j) s.push_back(x.is_null() ? -kInf : x.get<double>());
  return s;
}

/// Same filtered tokens (-inf), and the others within 1e-12 relative.
void expect_same(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_TRUE(std::isinf(got[i]) && got[i] < 0) << what << " token " << i << ": got " << got[i] << ", want -inf";
    } else {
      EXPECT_NEAR(got[i], want[i], 1e-12 * std::max(1.0, std::abs(want[i]))) << what << " token " << i;
    }
  }
}

GenerateOptions options_of(const nlohmann::json& j) {
  GenerateOptions o;
  o.do_sample = j.value("do_sample", false);
  o.temperature = j.value("temperature", 1.0);
  o.top_k = j.value("top_k", 50);
  o.top_p = j.value("top_p", 1.0);
  o.min_p = j.value("min_p", 0.0);
  o.repetition_penalty = j.value("repetition_penalty", 1.0);
  o.no_repeat_ngram_size = j.value("no_repeat_ngram_size", 0u);
  return o;
}

TEST(Sampling, EachProcessorAloneEqualsHf) {
  const nlohmann::json ref = reference();
  ASSERT_GE(ref["cases"].size(), 13u);
  for (const auto& c : ref["cases"]) {
    const std::string p = c["processor"];
    const Ids history = c["history"].get<Ids>();
    std::vector<double> s = scores_of(c["logits"]);
    if (p == "repetition_penalty") sp::repetition_penalty(s, history, c["param"]);
    else if (p == "no_repeat_ngram") sp::no_repeat_ngram(s, history, c["param"]);
    else if (p == "temperature") sp::temperature(s, c["param"]);
    else if (p == "top_k") sp::top_k(s, c["param"]);
    else if (p == "top_p") sp::top_p(s, c["param"]);
    else if (p == "min_p") sp::min_p(s, c["param"]);
    else FAIL() << "unknown processor " << p;
    expect_same(s, scores_of(c["expected"]), p + " " + c["param"].dump() + " history " + c["history"].dump());
  }
}

TEST(Sampling, ProcessorsInHfOrderEqualHf) {
  const nlohmann::json ref = reference();  // not reference()["pipelines"] in the loop: that temporary dies first
  for (const auto& c : ref["pipelines"]) {
    const GenerateOptions o = options_of(c["options"]);
    std::vector<double> s = scores_of(c["logits"]);
    const Ids history = c["history"].get<Ids>();
    sp::process(s, history, history.size() + o.max_new_tokens, o.eos_token_ids, o);
    if (o.do_sample) sp::warp(s, o);
    expect_same(s, scores_of(c["expected"]), c["options"].dump());
  }
}

// A temperature whose division overflows (1e-308, 5e-324; HF's softmax gives NaN
// there) leaves the limit t -> 0: every draw is the top score's id, never garbage;
// ties among the top share the draws. Ordinary temperatures divide as HF (issue 29).
TEST(Sampling, TinyTemperatureIsTheGreedyLimit) {
  for (double t : {1e-308, 5e-324, 1e-300}) {
    sp::Scores s = {3.5, -2.0, 7.25, 7.0, -kInf, 0.0};
    sp::temperature(s, t);
    for (double x : s) EXPECT_FALSE(std::isnan(x)) << t;
    EXPECT_EQ(std::max_element(s.begin(), s.end()) - s.begin(), 2) << t;
    for (double u : {0.0, 0.3, 0.999999}) EXPECT_EQ(sp::draw(s, u), 2) << "t " << t << " u " << u;
    sp::Scores tie = {1e300, 5.0, 1e300};
    sp::temperature(tie, t);
    EXPECT_EQ(sp::draw(tie, 0.25), 0) << t;
    EXPECT_EQ(sp::draw(tie, 0.75), 2) << t;
  }
  sp::Scores s = {3.5, -2.0, 7.25};
  sp::temperature(s, 0.5);
  EXPECT_EQ(s, (sp::Scores{7.0, -4.0, 14.5}));
}

TEST(Sampling, SplitMix64IsTheDocumentedGenerator) {
  EXPECT_EQ(sp::SplitMix64(0).next(), 0xE220A8397B1DCDAFull);  // the published first output for seed 0
  const nlohmann::json prng = reference()["prng"];
  sp::SplitMix64 r(prng["seed"].get<uint64_t>());
  for (const auto& x : prng["next"]) EXPECT_EQ(r.next(), std::stoull(x.get<std::string>()));
  EXPECT_EQ(sp::SplitMix64(7).uniform(), prng["uniform"][0].get<double>());  // the Python twin's, exactly
}

TEST(Sampling, DrawIsTheInverseCdfInIdOrder) {
  const std::vector<double> s = {std::log(0.25), -kInf, std::log(0.5), std::log(0.25)};
  EXPECT_EQ(sp::draw(s, 0.0), 0);
  EXPECT_EQ(sp::draw(s, 0.2499), 0);
  EXPECT_EQ(sp::draw(s, 0.2501), 2);
  EXPECT_EQ(sp::draw(s, 0.7501), 3);
  EXPECT_EQ(sp::draw(s, std::nextafter(1.0, 0.0)), 3);
}

TEST(Sampling, SameSeedSameDraws) {
  const std::vector<double> s = {0.1, 1.2, -0.3, 0.8, 2.0, 0.0};
  auto run = [&](uint64_t seed) {
    sp::SplitMix64 r(seed);
    std::vector<int32_t> out;
    for (int i = 0; i < 200; ++i) out.push_back(sp::draw(s, r.uniform()));
    return out;
  };
  EXPECT_EQ(run(5), run(5));
  EXPECT_NE(run(5), run(6));
}

// 20000 draws (seed fixed, so the test is deterministic) from 8 tokens after
// temperature, top-k and top-p: the filtered tokens never come, and the counts of
// the others fit the filtered softmax (chi-square below its 0.1 % critical value).
TEST(Sampling, ChiSquareOfDrawsAfterTopKTopP) {
  const std::vector<double> logits = {0.3, 1.9, -0.7, 1.1, 2.4, -1.5, 0.9, 1.6};
  GenerateOptions o;
  o.do_sample = true;
  o.temperature = 0.9;
  o.top_k = 6;
  o.top_p = 0.93;
  std::vector<double> s = logits;
  sp::warp(s, o);
  std::vector<double> p(s.size());
  double sum = 0;
  for (size_t i = 0; i < s.size(); ++i) sum += p[i] = std::exp(s[i]);
  size_t kept = 0;
  for (double& x : p) {
    x /= sum;
    kept += x > 0;
  }
  ASSERT_EQ(kept, 5u);  // top-k leaves 6, top-p then 5
  const int n = 20000;
  std::vector<int> count(s.size(), 0);
  sp::SplitMix64 r(2024);
  for (int i = 0; i < n; ++i) ++count[size_t(sp::draw(s, r.uniform()))];
  double chi2 = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (p[i] == 0) {
      EXPECT_EQ(count[i], 0) << "token " << i << " was filtered out";
      continue;
    }
    chi2 += (count[i] - n * p[i]) * (count[i] - n * p[i]) / (n * p[i]);
  }
  EXPECT_LT(chi2, 18.467) << "chi-square with 4 degrees of freedom, p < 0.001";
  EXPECT_GT(chi2, 0.0);
}

/// The message of the vkf::Error call() throws, or "(no error)".
template <class F>
std::string message_of(F&& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string error_of(const GenerateOptions& o) {
  return message_of([&] { validate(o); });
}

TEST(Sampling, EveryBadOptionIsRefusedClearly) {
  auto with = [](auto set) {
    GenerateOptions o;
    o.do_sample = true;
    set(o);
    return error_of(o);
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(error_of(GenerateOptions{}), "(no error)");
  EXPECT_EQ(with([](GenerateOptions& o) { o.temperature = 0; }),
            "temperature (--temperature) must be > 0 with do_sample (for greedy decoding leave out do_sample), got 0");
  EXPECT_EQ(with([](GenerateOptions& o) { o.temperature = -1; }),
            "temperature (--temperature) must be a finite number > 0, got -1");
  EXPECT_EQ(with([&](GenerateOptions& o) { o.temperature = nan; }),
            "temperature (--temperature) must be a finite number > 0, got nan");
  EXPECT_EQ(with([](GenerateOptions& o) { o.top_p = 0; }), "top_p (--top-p) must be in (0, 1], got 0");
  EXPECT_EQ(with([](GenerateOptions& o) { o.top_p = 1.5; }), "top_p (--top-p) must be in (0, 1], got 1.5");
  EXPECT_EQ(with([&](GenerateOptions& o) { o.top_p = nan; }), "top_p (--top-p) must be in (0, 1], got nan");
  EXPECT_EQ(with([](GenerateOptions& o) { o.min_p = -0.1; }), "min_p (--min-p) must be in [0, 1], got -0.1");
  EXPECT_EQ(with([](GenerateOptions& o) { o.min_p = 2; }), "min_p (--min-p) must be in [0, 1], got 2");
  EXPECT_EQ(with([](GenerateOptions& o) { o.top_k = -1; }), "top_k (--top-k) must be >= 0 (0: off), got -1");
  EXPECT_EQ(with([](GenerateOptions& o) { o.repetition_penalty = 0; }),
            "repetition_penalty (--repetition-penalty) must be a finite number > 0, got 0");
  EXPECT_EQ(with([](GenerateOptions& o) { o.repetition_penalty = kInf; }),
            "repetition_penalty (--repetition-penalty) must be a finite number > 0, got inf");
  EXPECT_EQ(with([](GenerateOptions& o) { o.beam = 2; }),
            "do_sample (--do-sample) with beam 2: beam sampling is not supported; use beam 1 or leave out do_sample");
  GenerateOptions greedy;
  greedy.temperature = 0;  // without do_sample, temperature 0 means greedy
  EXPECT_EQ(error_of(greedy), "(no error)");
}

/// A directory holding generation_config.json with `text`.
std::string config_dir(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / ("vkf_gencfg_" + name);
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "generation_config.json") << text;
  return dir.string();
}

std::string read_error(const std::string& dir) {
  return message_of([&] { read_generation_config(dir); });
}

TEST(Sampling, GenerationConfigGivesDefaults) {
  GenerateOptions o = read_generation_config(config_dir(
      "good", R"({"do_sample": true, "temperature": 0.7, "top_k": 0, "top_p": 0.9, "min_p": null,
                 "repetition_penalty": 1.1, "no_repeat_ngram_size": 3, "max_new_tokens": 12,
                 "eos_token_id": [2, 7], "bos_token_id": 1, "pad_token_id": 0, "transformers_version": "4.44.2"})"));
  EXPECT_TRUE(o.do_sample);
  EXPECT_EQ(o.temperature, 0.7);
  EXPECT_EQ(o.top_k, 0);
  EXPECT_EQ(o.top_p, 0.9);
  EXPECT_EQ(o.min_p, 0.0);
  EXPECT_EQ(o.repetition_penalty, 1.1);
  EXPECT_EQ(o.no_repeat_ngram_size, 3u);
  EXPECT_EQ(o.max_new_tokens, 12u);
  EXPECT_EQ(o.eos_token_ids, (std::vector<int32_t>{2, 7}));
  EXPECT_EQ(o.bos_token_id, 1);
  EXPECT_EQ(read_generation_config(config_dir("one_eos", R"({"eos_token_id": 50256})")).eos_token_ids,
            std::vector<int32_t>{50256});
  EXPECT_EQ(read_generation_config("/nonexistent-dir").top_k, 50);  // no file: HF's defaults

  std::string d = config_dir("bad_type", R"({"top_p": "abc"})");
  EXPECT_EQ(read_error(d), d + "/generation_config.json: \"top_p\" must be a number, got \"abc\"");
  d = config_dir("bad_value", R"({"do_sample": true, "top_p": 1.5})");
  EXPECT_EQ(read_error(d), d + "/generation_config.json: top_p (--top-p) must be in (0, 1], got 1.5");
  d = config_dir("bad_eos", R"({"eos_token_id": [2, "x"]})");
  EXPECT_EQ(read_error(d), d + "/generation_config.json: \"eos_token_id\" must be a token id or a list of token ids, got [2,\"x\"]");
  d = config_dir("bad_json", "{\"top_k\": 5,");
  EXPECT_EQ(read_error(d).rfind(d + "/generation_config.json: not valid JSON", 0), 0u) << read_error(d);
}

/// Bytes per id: decode is byte-exact concatenation, as byte-level BPE's.
class BytesTokenizer : public Tokenizer {
 public:
  std::vector<std::string> pieces = {"\xC3", "\xA9", "ab", "E", "ND", " x", "\xE2\x82", "\xAC"};
  std::vector<int32_t> encode(std::string_view) const override { return {}; }
  std::string decode(const std::vector<int32_t>& ids) const override {
    std::string s;
    for (int32_t id : ids) s += pieces.at(size_t(id));
    return s;
  }
  uint32_t vocab_size() const override { return uint32_t(pieces.size()); }
};

TEST(Sampling, TextStreamHoldsBackPartialCharactersAndStopStrings) {
  BytesTokenizer tok;
  TextStream t(tok, {"END"});
  EXPECT_EQ(t.push(2), "ab");
  EXPECT_EQ(t.push(0), "");  // first byte of é
  EXPECT_EQ(t.push(1), "\xC3\xA9");
  EXPECT_EQ(t.push(3), "");  // "E" may begin "END"
  EXPECT_EQ(t.push(4), "");  // "END": stop, not printed
  EXPECT_TRUE(t.stopped());
  EXPECT_EQ(t.text(), "ab\xC3\xA9");
  EXPECT_EQ(t.finish(), "");

  TextStream u(tok, {"END", "zzz"});
  EXPECT_EQ(u.push(6), "");  // two bytes of €
  // A new character shows the bytes will never complete: they go out as they are
  // (byte-exact), and "E" waits, as it may begin "END".
  EXPECT_EQ(u.push(3), "\xE2\x82");
  EXPECT_EQ(u.push(5), "E x");
  EXPECT_FALSE(u.stopped());  // a stop string never produced is not an error
  EXPECT_EQ(u.finish(), "");
  EXPECT_EQ(u.text(), "\xE2\x82" "E x");
  TextStream v(tok, {"zzz"});
  EXPECT_EQ(v.push(6), "");
  EXPECT_EQ(v.finish(), "\xE2\x82");  // the end releases what was held back

  // A lossy decoder, as HF's ByteLevel: an incomplete character decodes as U+FFFD until it completes.
  struct Lossy : BytesTokenizer {
    std::string decode(const std::vector<int32_t>& ids) const override {
      std::string s = BytesTokenizer::decode(ids);
      const size_t ok = complete_utf8_prefix(s);
      return ok < s.size() ? s.substr(0, ok) + "\xEF\xBF\xBD" : s;
    }
  } lossy;
  TextStream w(lossy, {});
  EXPECT_EQ(w.push(2), "ab");
  EXPECT_EQ(w.push(6), "");  // "ab\uFFFD": held back
  EXPECT_EQ(w.push(7), "\xE2\x82\xAC");
  EXPECT_EQ(w.finish(), "");

  EXPECT_EQ(complete_utf8_prefix("a\xE2\x82"), 1u);
  EXPECT_EQ(complete_utf8_prefix("a\xE2\x82\xAC"), 4u);
  EXPECT_EQ(complete_utf8_prefix("a\xF0\x9F\x98"), 1u);
  EXPECT_EQ(complete_utf8_prefix("\x80\x80"), 2u);
}

class SampledGeneration : public DeviceTest {};

TEST_F(SampledGeneration, SameSeedSameTokensAndCallbacksStop) {
  auto model = Model::load(ctx(), model_dir("decoder_only"));
  Session s(model);
  GenerateOptions o;
  o.do_sample = true;
  o.top_k = 0;
  o.temperature = 1.5;
  o.max_new_tokens = 12;
  o.stop_at_eos = false;
  o.seed = 11;
  const std::vector<Ids> src = {{1, 5, 6, 7}, {1, 9}};
  const std::vector<Ids> a = s.generate(src, o);
  EXPECT_EQ(s.generate(src, o), a);
  o.seed = 12;
  EXPECT_NE(s.generate(src, o), a);
  // Each source draws from its own generator (seed + index): source 1 of the batch
  // with seed 11 is source 0 alone with seed 12.
  EXPECT_EQ(s.generate({src[1]}, o)[0], a[1]);
  o.seed = 11;
  // on_token sees every token in order, and stops a sequence.
  std::vector<Ids> seen(2);
  o.on_token = [&](uint32_t b, int32_t t) {
    seen[b].push_back(t);
    return seen[b].size() < 3;
  };
  const std::vector<Ids> cut = s.generate(src, o);
  EXPECT_EQ(cut[0], Ids(a[0].begin(), a[0].begin() + 3));
  EXPECT_EQ(seen, cut);
  // An empty prompt starts from bos_token_id, or is refused without one.
  o.on_token = nullptr;
  expect_error([&] { s.generate({{}}, o); },
               "prompt #1 is empty and the model has no bos_token_id (generation_config.json) to start from");
  o.bos_token_id = 1;
  EXPECT_EQ(s.generate({{}}, o), s.generate({{1}}, o));
}

// no_repeat_ngram_size 1 bans every token already in the sequence, prompt included,
// in greedy decoding and in beam search alike.
TEST_F(SampledGeneration, ProcessorsApplyToGreedyAndBeam) {
  auto model = Model::load(ctx(), model_dir("decoder_only"));
  Session s(model);
  GenerateOptions o;
  o.max_new_tokens = 10;
  o.stop_at_eos = false;
  o.no_repeat_ngram_size = 1;
  const Ids prompt = {1, 5, 6, 7};
  for (uint32_t beam : {1u, 3u}) {
    o.beam = beam;
    const Ids out = s.generate({prompt}, o)[0];
    EXPECT_EQ(out.size(), 10u) << "beam " << beam;
    Ids all = prompt;
    all.insert(all.end(), out.begin(), out.end());
    std::sort(all.begin(), all.end());
    EXPECT_EQ(std::adjacent_find(all.begin(), all.end()), all.end()) << "beam " << beam << ": a token repeats";
  }
}

}  // namespace
}  // namespace vkf::test
