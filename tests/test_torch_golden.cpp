// PyTorch is the reference for every number: tests/golden/torch_ops.json holds
// small inputs and torch 1.13's outputs (tools/make_golden.py). Both the CPU
// references and the Vulkan kernels must reproduce them.
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

#include "test_util.hpp"

namespace vkf::test {
namespace {

// torch computes in fp32 too, so this bound covers both sides' rounding.
constexpr double kTorchBound = 2e-5;

nlohmann::json golden() {
  std::ifstream in(VKF_GOLDEN_DIR "/torch_ops.json");
  if (!in) throw Error("cannot open " VKF_GOLDEN_DIR "/torch_ops.json");
  return nlohmann::json::parse(in);
}

std::vector<float> f(const nlohmann::json& j) { return j.get<std::vector<float>>(); }
std::vector<double> d(const nlohmann::json& j) { return j.get<std::vector<double>>(); }

}  // namespace

class TorchGolden : public DeviceTest {
 protected:
  nlohmann::json g = golden();
};

TEST_F(TorchGolden, LinearWithEveryActivation) {
  const auto& c = g["linear"];
  const int64_t M = c["M"], N = c["N"], K = c["K"];
  auto x = f(c["x"]), w = f(c["w"]), b = f(c["b"]);
  Tensor tx = ctx().tensor({M, K}, x), tw = ctx().tensor({N, K}, w), tb = ctx().tensor({N}, b);
  Tensor ty = ctx().tensor({M, N});
  const std::pair<const char*, Activation> acts[] = {{"none", Activation::None},
                                                     {"relu", Activation::ReLU},
                                                     {"gelu", Activation::GeluErf},
                                                     {"gelu_tanh", Activation::GeluTanh},
                                                     {"silu", Activation::SiLU}};
  for (auto [name, act] : acts) {
    auto want = d(c[name]);
    std::vector<double> cpu = ref::gemm(x, w, &b, nullptr, M, N, K, act);
    EXPECT_LE(ref::max_rel_error(std::vector<float>(cpu.begin(), cpu.end()), want), kTorchBound) << name;
    Recorder rec(ctx());
    GemmArgs a;
    a.x = &tx; a.w = &tw; a.bias = &tb; a.y = &ty; a.act = act;
    gemm(rec, a);
    ctx().submit(rec);
    EXPECT_LE(ref::max_rel_error(ctx().read(ty), want), kTorchBound) << name;
  }
}

// nn.MultiheadAttention(batch_first) = in_proj GEMM → scores → masked softmax
// → values → out_proj GEMM, and the same with the fused flash kernel.
TEST_F(TorchGolden, MultiHeadAttentionWithMasks) {
  const auto& c = g["mha"];
  const uint32_t B = c["B"], L = c["L"], dm = c["d"], H = c["heads"], D = dm / H;
  auto x = f(c["x"]);
  Tensor tx = ctx().tensor({B, L, dm}, x);
  Tensor win = ctx().tensor({3 * dm, dm}, f(c["in_proj_weight"]));
  Tensor bin = ctx().tensor({3 * dm}, f(c["in_proj_bias"]));
  Tensor wout = ctx().tensor({dm, dm}, f(c["out_proj_weight"]));
  Tensor bout = ctx().tensor({dm}, f(c["out_proj_bias"]));
  Tensor pad = ctx().tensor_i32({B, L}, c["key_padding"].get<std::vector<int32_t>>());
  Tensor qkv = ctx().tensor({B, L, 3 * dm}), scores = ctx().tensor({B, H, L, L});
  Tensor attn = ctx().tensor({B, L, dm}), y = ctx().tensor({B, L, dm});
  AttentionShape s{B, H, D, L, L};
  HeadsView q{&qkv, 0}, k{&qkv, dm}, v{&qkv, 2 * dm};
  const float scale = 1.0f / std::sqrt(float(D));

  for (bool causal : {false, true}) {
    for (bool fused : {false, true}) {
      AttentionMask m;
      m.key_padding = &pad;
      m.causal = causal;
      Recorder rec(ctx());
      GemmArgs in;
      in.x = &tx; in.w = &win; in.bias = &bin; in.y = &qkv;
      gemm(rec, in);
      if (fused) {
        flash_attention(rec, {q, k, v, s, m, scale, &attn, ""});
      } else {
        attention_scores(rec, {q, k, s, scale, &scores, ""});
        masked_softmax(rec, {&scores, s, m, ""});
        attention_values(rec, {&scores, v, s, &attn, ""});
      }
      GemmArgs out;
      out.x = &attn; out.w = &wout; out.bias = &bout; out.y = &y;
      gemm(rec, out);
      ctx().submit(rec);
      auto want = d(c[causal ? "out_padding_causal" : "out_padding"]);
      EXPECT_LE(ref::max_rel_error(ctx().read(y), want), kTorchBound)
          << (causal ? "causal " : "") << (fused ? "fused" : "unfused");
    }
  }
}

TEST_F(TorchGolden, LayerNormAfterResidual) {
  const auto& c = g["layernorm"];
  const int64_t rows = c["rows"], dd = c["d"];
  auto x = f(c["x"]), r = f(c["residual"]), gm = f(c["gamma"]), bt = f(c["beta"]);
  auto want = d(c["y"]);
  auto cpu = ref::layernorm(x, &r, gm, bt, rows, dd, c["eps"].get<double>());
  EXPECT_LE(ref::max_rel_error(std::vector<float>(cpu.begin(), cpu.end()), want), kTorchBound);
  Tensor tx = ctx().tensor({rows, dd}, x), tr = ctx().tensor({rows, dd}, r);
  Tensor tg = ctx().tensor({dd}, gm), tb = ctx().tensor({dd}, bt), ty = ctx().tensor({rows, dd});
  Recorder rec(ctx());
  layernorm(rec, {&tx, &tr, &tg, &tb, &ty, c["eps"].get<float>(), ""});
  ctx().submit(rec);
  EXPECT_LE(ref::max_rel_error(ctx().read(ty), want), kTorchBound);
}

TEST_F(TorchGolden, ScaledEmbeddingPlusSinusoidalPositions) {
  const auto& c = g["embedding"];
  const uint32_t V = c["vocab"], D = c["d"], P = c["max_positions"], B = c["batch"], L = c["len"];
  auto pe = sinusoidal_table(P, D);
  EXPECT_LE(ref::max_rel_error(pe, d(c["pe"])), 1e-6);
  auto ids = c["ids"].get<std::vector<int32_t>>();
  Tensor tid = ctx().tensor_i32({B, L}, ids), tt = ctx().tensor({V, D}, f(c["table"]));
  Tensor tp = ctx().tensor({P, D}, pe), ty = ctx().tensor({B, L, D});
  Recorder rec(ctx());
  embedding(rec, {&tid, &tt, &tp, 0, nullptr, std::sqrt(float(D)), &ty, ""});
  ctx().submit(rec);
  EXPECT_LE(ref::max_rel_error(ctx().read(ty), d(c["y"])), kTorchBound);
}

}  // namespace vkf::test
