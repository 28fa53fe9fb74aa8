// DecodeBatch (continuous batching) on the tiny HF GPT-2 of `make
// hf-test-models`: eight requests of different prompt lengths, lengths to
// generate and options (greedy, sampling with their own seeds, one stopped by
// its on_token) join a 6-slot batch as slots free up and leave when they end.
// Each one's tokens, and the tokens its on_token saw, equal Session::generate
// on it alone: the batch is more than gemv's 4 rows, so this also checks that
// the step's kernels sum each row as they do alone.
#include "model/family.hpp"
#include "model_util.hpp"
#include "run/logits_source.hpp"
#include "run/session_impl.hpp"
#include "run/slot_source.hpp"
#include "vkformer/decode_batch.hpp"

namespace vkf::test {
namespace {

struct Request {
  Ids prompt;
  GenerateOptions o;
};

std::vector<Request> requests(const GenerateOptions& defaults) {
  std::vector<Request> r;
  const std::vector<Ids> prompts = {{5, 6, 7},      {10, 11, 12, 13, 14, 15, 16, 17}, {1},  {40, 41, 42, 43, 44},
                                    {7, 7},         {120, 3, 64, 9, 9, 9},            {88}, {2, 4, 8, 16, 32, 64, 128}};
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerateOptions o = defaults;
    o.max_new_tokens = uint32_t(3 + 4 * (i % 4));  // 3, 7, 11, 15: they leave at different steps
    if (i % 3 == 1) {
      o.do_sample = true;
      o.temperature = 1.5;
      o.top_p = 0.9;
      o.seed = 100 + i;
    }
    r.push_back({prompts[i], o});
  }
  r[6].o.on_token = [n = 0](uint32_t, int32_t) mutable { return ++n < 4; };  // a stop string after 4 tokens
  return r;
}

TEST_F(DeviceTest, DecodeBatchEqualsEachRequestAlone) {
  const std::string dir = hf_model_dir("gpt2_lm");
  auto model = Model::load(ctx(), dir);
  GenerateOptions defaults;
  defaults.eos_token_ids = {99};
  std::vector<Request> reqs = requests(defaults);

  std::vector<Ids> alone;
  for (const Request& r : requests(defaults)) alone.push_back(Session(model).generate({r.prompt}, r.o)[0]);

  Session s(model);
  auto batch = DecodeBatch::make(s, 6, 64);
  ASSERT_TRUE(batch);
  std::vector<Ids> seen(reqs.size()), got(reqs.size());
  std::map<uint64_t, size_t> which;
  size_t next = 0, done = 0, most = 0, steps = 0;
  while (done < reqs.size()) {
    // Two join per step boundary while there is room: joins and leaves interleave.
    for (int k = 0; k < 2 && next < reqs.size() && !batch->full(); ++k, ++next) {
      GenerateOptions o = reqs[next].o;
      ASSERT_TRUE(batch->fits(reqs[next].prompt, o));
      auto inner = o.on_token;
      o.on_token = [&seen, next, inner](uint32_t b, int32_t t) {
        seen[next].push_back(t);
        return inner ? inner(b, t) : true;
      };
      which[batch->add(reqs[next].prompt, o)] = next;
    }
    most = std::max(most, batch->size());
    batch->step();
    ++steps;
    for (auto& [id, tokens] : batch->take_finished()) {
      got[which.at(id)] = tokens;
      ++done;
    }
    ASSERT_LT(steps, 100u);
  }
  EXPECT_EQ(most, 6u);
  for (size_t i = 0; i < reqs.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    EXPECT_EQ(got[i], alone[i]);
    EXPECT_EQ(seen[i], alone[i]);
  }
  EXPECT_LE(alone[6].size(), 4u);
  size_t made = 0;
  for (const Ids& a : alone) made += a.size();
  EXPECT_GT(made, 40u) << "too few tokens to tell anything";
  std::printf("%zu tokens in %zu steps, at most %zu sequences at once\n", made, steps, most);
}

// Below the tokens: the logits of a prefill and of each batched step's row are
// bit for bit those of the KV-cached source of that prompt alone (6 rows: not
// gemv's 4 of the automatic choice, which would sum them in register blocks),
// with the caches (every slot's and the solo source's) stored as `kv`.
void expect_slot_logits_equal_solo(const std::shared_ptr<Model>& model, KvCacheType kv = KvCacheType::F32) {
  Session::Impl impl(*model);
  auto slots = model->family().slot_source(impl, 6, 40, kv_cache_dtype(kv, model->config(), impl.ctx.caps()));
  ASSERT_TRUE(slots);
  const ModelConfig& cfg = model->config();
  const uint32_t V = cfg.out_vocab(), steps = 3;
  const int32_t start = cfg.bos_id;
  std::vector<Ids> prompts;  // ids from 4: past the dates model's specials
  for (uint32_t b = 0; b < 6; ++b) prompts.push_back(Ids(1 + 2 * b, int32_t(4 + (17 * b) % (cfg.src_vocab_size - 4))));
  auto token = [V](uint32_t b, uint32_t k) { return int32_t(4 + (13 * k + 5 * b) % (V - 4)); };
  GenerateOptions o;
  o.max_new_tokens = steps + 1;
  o.kv_cache = kv;
  std::vector<uint32_t> rows;
  for (uint32_t b = 0; b < 6; ++b) {
    auto solo = model->family().logits_source(impl, {prompts[b]}, o);
    EXPECT_EQ(slots->prefill(b, prompts[b], start), solo->start()) << "prefill " << b;
    rows.push_back(cfg.encoder_decoder() ? 1 : uint32_t(prompts[b].size()));
  }
  std::vector<std::vector<float>> batched;
  for (uint32_t k = 0; k < steps; ++k) {
    std::vector<int32_t> tokens;
    for (uint32_t b = 0; b < 6; ++b) tokens.push_back(token(b, k));
    batched.push_back(slots->step(tokens, rows));
    for (uint32_t& r : rows) ++r;
  }
  for (uint32_t b = 0; b < 6; ++b) {
    auto solo = model->family().logits_source(impl, {prompts[b]}, o);
    solo->start();
    for (uint32_t k = 0; k < steps; ++k) {
      const std::vector<float> want = solo->step({token(b, k)}, {0});
      const std::vector<float> got(batched[k].begin() + b * V, batched[k].begin() + (b + 1) * V);
      EXPECT_EQ(got, want) << "sequence " << b << ", step " << k;
    }
  }
}

TEST_F(DeviceTest, SlotLogitsEqualSoloBitForBitGpt2) {
  expect_slot_logits_equal_solo(Model::load(ctx(), hf_model_dir("gpt2_lm")));
}

// The dates translator (enc–dec): each slot's source in its cross-attention K/V,
// the rows past it masked.
TEST_F(DeviceTest, SlotLogitsEqualSoloBitForBitEncDec) {
  expect_slot_logits_equal_solo(Model::load(ctx(), std::string(VKF_MODELS_DIR) + "/../../models/dates"));
}

// The same with fp16 caches (the cross-attention K/V too): copied and moved as halves.
TEST_F(DeviceTest, SlotLogitsEqualSoloBitForBitFp16Cache) {
  if (!has_f16()) GTEST_SKIP() << "no fp16 tensors";
  expect_slot_logits_equal_solo(Model::load(ctx(), hf_model_dir("gpt2_lm")), KvCacheType::F16);
  expect_slot_logits_equal_solo(Model::load(ctx(), std::string(VKF_MODELS_DIR) + "/../../models/dates"),
                                KvCacheType::F16);
}

TEST_F(DeviceTest, DecodeBatchRefusals) {
  auto gpt2 = Model::load(ctx(), hf_model_dir("gpt2_lm"));
  Session s(gpt2);
  auto batch = DecodeBatch::make(s, 2, 16);
  ASSERT_TRUE(batch);
  GenerateOptions o;
  o.max_new_tokens = 4;
  EXPECT_TRUE(batch->fits({1, 2, 3}, o));
  EXPECT_FALSE(batch->fits({}, o));                     // generate starts it from BOS, alone
  EXPECT_FALSE(batch->fits(Ids(14, 1), o));             // 14 + 4 − 1 rows > 16
  o.beam = 2;
  EXPECT_FALSE(batch->fits({1, 2, 3}, o));              // beam search runs alone
  o.beam = 1;
  expect_error([&] { batch->add({1, 500}, o); }, "500");  // generate's own check of the ids
  EXPECT_EQ(batch->size(), 0u);
}

}  // namespace
}  // namespace vkf::test
