// The unfused attention chain, attention_scores → masked_softmax →
// attention_values, registered as one op so that `vkformer kernel attention`
// and `bench ops` time it beside flash_attention. It has no shader of its own.
#include "ops/op_case.hpp"

namespace vkf {
namespace {

OpCase attention_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const cases::Heads h = cases::attention_inputs(ctx, o, *D);
  auto mask = cases::make_mask(ctx, o);
  const float scale = 1.0f / std::sqrt(float(o.head_dim));
  Tensor* out = &D->t(ctx.tensor({o.batch, o.q_len, o.heads * o.head_dim}));
  Tensor* scores = &D->t(ctx.tensor({o.batch, o.heads, o.q_len, o.kv_len}));
  // The variant is the softmax's; the chain is reported as one op.
  auto record = [h, mask, scale, out, scores](Recorder& rec, const std::string& v) {
    OpInfo s = attention_scores(rec, {h.q, h.k, h.shape, scale, scores, ""});
    OpInfo m = masked_softmax(rec, {scores, h.shape, mask->dm, v});
    OpInfo p = attention_values(rec, {scores, h.v, h.shape, out, ""});
    return OpInfo{"attention", "unfused/" + m.variant, {}, s.flops + m.flops + p.flops, s.bytes + m.bytes + p.bytes};
  };
  return cases::make(D, cases::attention_shape_text(o), record,
                     cases::against(ctx, *out, [=] { return ref::attention(h.hq, h.hk, h.hv, h.shape, mask->hm, scale); }));
}

}  // namespace

VKF_OP_DESCRIPTOR(attention) {
  return {"attention", "the unfused chain: attention_scores, masked_softmax, attention_values (variant: the softmax's)",
          {"subgroup", "shared"}, {}, {"batch", "heads", "kv_heads", "head_dim", "q_len", "kv_len"},
          {cases::attention_bench_shape()}, attention_case, cases::attention_label};
}

}  // namespace vkf
