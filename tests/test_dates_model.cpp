// The dates model (models/dates, tools/train_dates.py): on held-out inputs,
// vkformer's greedy decoding with the KV cache predicts exactly what PyTorch's
// reference greedy decoding predicted (heldout.json), so both accuracies are equal.
// Runs every 4th held-out example (500) by default; VKF_DATES_ALL=1 runs all 2000.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>

#include "test_util.hpp"
#include "vkformer/model.hpp"
#include "vkformer/session.hpp"
#include "vkformer/tokenizer.hpp"

namespace vkf::test {

TEST_F(DeviceTest, DatesHeldOutMatchesTorch) {
  const std::string dir = VKF_MODELS_TOP "/dates";
  std::ifstream in(dir + "/heldout.json");
  ASSERT_TRUE(in) << "cannot open " << dir << "/heldout.json";
  const auto held = nlohmann::json::parse(in);
  const bool all = std::getenv("VKF_DATES_ALL") && std::string(std::getenv("VKF_DATES_ALL")) == "1";
  const size_t stride = all ? 1 : 4;

  auto tok = Tokenizer::load(dir);
  std::vector<Ids> src;
  std::vector<std::string> expected, torch;
  for (size_t i = 0; i < held["examples"].size(); i += stride) {
    const auto& e = held["examples"][i];
    src.push_back(tok->encode(e["input"].get<std::string>()));
    expected.push_back(e["expected"]);
    torch.push_back(e["torch"]);
  }
  auto model = Model::load(ctx(), dir);
  Session s(model);
  GenerateOptions o;
  o.max_new_tokens = held["max_new_tokens"];
  const std::vector<Ids> out = s.generate(src, o);  // one padded batch, KV cache
  ASSERT_EQ(out.size(), src.size());

  size_t same = 0, vkf_right = 0, torch_right = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    const std::string got = tok->decode(out[i]);
    same += got == torch[i];
    vkf_right += got == expected[i];
    torch_right += torch[i] == expected[i];
    EXPECT_EQ(got, torch[i]) << "input \"" << held["examples"][i * stride]["input"].get<std::string>() << "\"";
  }
  std::printf("dates held-out (%zu of %zu examples): vkformer %zu/%zu = %.2f%%, PyTorch %zu/%zu = %.2f%%, "
              "identical predictions %zu/%zu\n",
              src.size(), held["examples"].size(), vkf_right, src.size(), 100.0 * vkf_right / src.size(),
              torch_right, src.size(), 100.0 * torch_right / src.size(), same, src.size());
  EXPECT_EQ(vkf_right, torch_right);
}

}  // namespace vkf::test
