// Bad requests to a Session: each is a vkf::Error naming the sequence, the
// position and the limit, thrown before anything runs, and the Session stays
// usable afterwards.
#include "model_writer.hpp"
#include "vkformer/session.hpp"

namespace vkf::test {
namespace {

class Requests : public DeviceTest {
 protected:
  static std::shared_ptr<Model> load(Kind kind, const std::string& name) {
    const json cfg = tiny_config(kind);  // src vocab 11, tgt vocab 13, 16 positions
    return Model::load(*ctx_, write_model(name, cfg, tiny_weights(cfg)));
  }
};

TEST_F(Requests, EncoderDecoder) {
  Session s(load(Kind::EncDec, "req-encdec"));
  const std::vector<Ids> tgt1 = {{1, 5}};
  expect_error([&] { s.forward({{3, 11, 4}}, tgt1); },
               "source sequence 1: id 11 at position 1 is outside the vocabulary [0, 11)");
  expect_error([&] { s.forward({{3, -4}}, tgt1); }, "source sequence 1: id -4 at position 1 is outside");
  expect_error([&] { s.forward({{3}}, {{1, 13}}); },
               "target sequence 1: id 13 at position 1 is outside the vocabulary [0, 13)");
  expect_error([&] { s.forward({{3}, {}}, {{1}, {1}}); }, "source sequence 2 is empty");
  expect_error([&] { s.forward({}, {}); }, "no source sequences were given");
  expect_error([&] { s.forward({Ids(17, 3)}, tgt1); },
               "source sequence 1 has 17 tokens, more than the model's 16 positions (config.json \"max_positions\")");
  expect_error([&] { s.forward({{3}}, {Ids(17, 1)}); },
               "target sequence 1 has 17 tokens, more than the model's 16 positions (config.json \"max_positions\")");
  expect_error([&] { s.forward({{3}, {4}}, tgt1); },
               "an encoder-decoder model needs one target sequence per source: got 2 sources and 1 targets");
  expect_error([&] { s.generate({{3, 99}}); }, "source sequence 1: id 99 at position 1 is outside");
  expect_error([&] { s.generate({}); }, "no source sequences were given");
  GenerateOptions g;
  g.max_new_tokens = 17;  // the last token chosen is never fed back: 17 positions
  expect_error([&] { s.generate({{3}}, g); }, "17 new tokens need 17 positions, more than the model's 16 (config.json \"max_positions\")");
  g.beam = 0;
  expect_error([&] { s.generate({{3}}, g); }, "beam width must be at least 1");
  // Nothing broke: the same Session runs.
  EXPECT_EQ(s.forward({{3, 4}}, tgt1).len, 2u);
}

TEST_F(Requests, EncoderOnly) {
  Session s(load(Kind::EncoderOnly, "req-enc"));
  expect_error([&] { s.forward({{3}}, {{1}}); },
               "target sequences were given, but the model has no decoder (decoder_layers is 0)");
  expect_error([&] { s.forward({{3, 10, 11}}); }, "id 11 at position 2 is outside the vocabulary [0, 11)");
  EXPECT_EQ(s.forward({{3, 10}}).len, 2u);
}

TEST_F(Requests, DecoderOnly) {
  Session s(load(Kind::DecoderOnly, "req-lm"));
  GenerateOptions g;
  g.max_new_tokens = 8;
  expect_error([&] { s.generate({Ids(10, 3)}, g); },
               "the prompt plus 8 new tokens need 17 positions, more than the model's 16 (config.json \"max_positions\")");
  expect_error([&] { s.generate({{3, -1}}, g); }, "id -1 at position 1 is outside the vocabulary [0, 11)");
  g.max_new_tokens = 2;
  EXPECT_EQ(s.generate({{3, 4}}, g).size(), 1u);
}

}  // namespace
}  // namespace vkf::test
