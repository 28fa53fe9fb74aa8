// Fused attention with an online softmax: shaders/flash_attention.comp, and for
// its split variant (flash-decoding) shaders/flash_attention_combine.comp.
// Reference: ref::attention in src/reference/attention.cpp.
#include "ops/op_case.hpp"
#include "ops/attention_util.hpp"
#include "ops/tuning_util.hpp"
#include "push/flash_attention.h"
#include "push/flash_attention_combine.h"

namespace vkf {

/// Per-invocation arrays hold a query row and an accumulator of head_dim floats.
constexpr uint32_t kFlashMaxHeadDim = 256;

/// The split variant cuts the keys into ranges, one workgroup each, then merges
/// them: for decoding (a few query rows), where one workgroup per head leaves a
/// GPU's cores idle. Its rule, on a GPU only (a CPU device's few cores are
/// busy with one workgroup per head already): fewer than kSplitFewGroups
/// workgroups otherwise, and at least 2 × kSplitKeys keys; ranges of about
/// kSplitKeys keys, at most kMaxSplits. Not measured on a GPU yet (issue 28).
constexpr uint32_t kSplitMaxRows = 16, kSplitFewGroups = 128, kSplitKeys = 256, kMaxSplits = 64;

/// The tensor-core variants (shaders/flash_attention_coopmat.comp): a prompt's
/// rows (from kCoopMinRows, two 16-row subgroups' worth) by the rule where the
/// device has cooperative matrices; head dims up to kCoopMaxHeadDim (O's
/// accumulators, 2·head_dim/16 matrices a subgroup, stay in registers).
constexpr uint32_t kCoopMinRows = 32, kCoopMaxHeadDim = 128;

namespace {

/// A coopmat tiling: NSG subgroups of 16 query rows, key tiles of BK, the head
/// dim padded to DH (a multiple of 16); what its shared memory takes.
struct CoopTiling {
  uint32_t nsg, bk, dh;
  bool kv_f16, emulated;
  uint64_t shared_bytes() const {
    const uint64_t bq = 16ull * nsg, ld = dh + 8, pld = bk + 8;
    const uint64_t halves = 2 * bq * ld + (kv_f16 ? 2 : 4) * uint64_t(bk) * ld + 2 * nsg * 16 * pld;
    return 2 * halves + 4 * (uint64_t(nsg) * 16 * bk + 3 * bq) + (emulated ? nsg * kCoopEmulationBytesPerSubgroup : 0);
  }
  bool fits(const Capabilities& c, uint32_t sg) const {
    return nsg >= 1 && bk >= 16 && bk % 16 == 0 && bk <= 64 && dh % 16 == 0 && dh <= kCoopMaxHeadDim &&
           uint64_t(nsg) * sg <= std::min(c.max_workgroup_invocations, c.max_workgroup_size[0]) &&
           shared_bytes() <= c.max_shared_memory;
  }
};

/// The default coopmat tiling that fits: 2 subgroups and 32 keys a tile, fewer where
/// shared memory is short (fp32 K/V stage two parts each).
CoopTiling coop_default(const Capabilities& c, uint32_t head_dim, bool kv_f16, bool emulated) {
  const uint32_t dh = ceil_div(head_dim, 16) * 16;
  for (uint32_t nsg : {2u, 1u})
    for (uint32_t bk : {32u, 16u}) {
      const CoopTiling t{nsg, bk, dh, kv_f16, emulated};
      if (t.fits(c, c.subgroup_size)) return t;
    }
  return {1, 16, dh, kv_f16, emulated};  // the plan says why it does not fit
}

/// The key ranges of the split variant: `splits` ranges of `len` keys (a
/// multiple of the tile, `bk`), the last one shorter.
struct KeySplit {
  uint32_t splits, len;
};
KeySplit key_split(uint32_t kv_len, uint32_t asked, uint32_t bk) {
  const uint32_t len = ceil_div(ceil_div(kv_len, std::max(1u, asked)), bk) * bk;
  return {ceil_div(kv_len, len), len};
}

}  // namespace

OpInfo flash_attention(Recorder& rec, const FlashAttentionArgs& a) {
  const auto [r, caps, op] = start_op(rec, "flash_attention");
  const AttentionShape& s = a.shape;
  check_shape(s, op);
  VKF_REQUIRE(a.variant.empty() || a.variant == "online" || a.variant == "texel" || a.variant == "split" ||
                  a.variant == "coopmat" || a.variant == "coopmat_emulated" || a.variant == "untuned",
              op, "unknown variant \"" + a.variant + "\" (online, texel, split, coopmat, coopmat_emulated, untuned)");
  VKF_REQUIRE(s.head_dim <= kFlashMaxHeadDim, op,
              "head_dim " + std::to_string(s.head_dim) + " is more than " + std::to_string(kFlashMaxHeadDim) +
                  " (use attention_scores, masked_softmax and attention_values)");
  require_tensor(a.q.t, op, "q", DType::F32);
  require_weight(a.k.t, op, "k", caps);
  require_weight(a.v.t, op, "v", caps);
  VKF_REQUIRE(a.k.t->dtype() == a.v.t->dtype(), op,
              "k " + a.k.t->describe() + " and v " + a.v.t->describe() + " must share a dtype");
  const ViewStrides q = check_view(a.q, s, ViewHeads::Query, s.q_len, op, "q");
  const ViewStrides k = check_view(a.k, s, ViewHeads::KeyValue, s.kv_len, op, "k");
  const ViewStrides v = check_view(a.v, s, ViewHeads::KeyValue, s.kv_len, op, "v");
  check_out(a.out, s, op);
  for (const Tensor* in : {a.q.t, a.k.t, a.v.t})
    VKF_REQUIRE(!tensors_overlap(a.out, in), op, "out must not alias q, k or v");
  const uint32_t pad_stride = check_mask(a.mask, s, op);
  if (a.bias) {
    require_tensor(a.bias, op, "bias", DType::F32);
    const auto& b = a.bias->shape();
    VKF_REQUIRE(b.size() == 3 && b[0] == s.heads && b[1] == s.q_len && b[2] >= s.kv_len, op,
                "bias " + a.bias->describe() + " must be [" + std::to_string(s.heads) + ", " +
                    std::to_string(s.q_len) + ", ≥ " + std::to_string(s.kv_len) + "] (heads, q_len, kv_len)");
    VKF_REQUIRE(uint64_t(a.bias->numel()) < (1ull << 32), op, "bias has 2^32 elements or more");
    VKF_REQUIRE(!tensors_overlap(a.out, a.bias), op, "out must not alias bias");
  }

  // kv_heads only when it differs from heads: the classes without it stay as they were.
  // The tuner parses the class back into a shape (parse_op_shape), so it names every dim.
  const std::string kvh = s.kv_head_count() != s.heads ? ",kv_heads=" + std::to_string(s.kv_heads) : "";
  const std::string cls = "batch=" + std::to_string(size_class(s.batch)) + ",heads=" + std::to_string(s.heads) + kvh +
                          ",head_dim=" + std::to_string(s.head_dim) + ",q_len=" + std::to_string(size_class(s.q_len)) +
                          ",kv_len=" + std::to_string(size_class(s.kv_len)) + ",dtype=" + dtype_name(a.k.t->dtype());
  const TunedConfig* tc = tuned(r, op, cls, a.variant);
  // K/V through texel buffers: RGBA texels when every row starts 4-aligned.
  const bool kv_vec4 = s.head_dim % 4 == 0 && (k.off | k.row | k.batch | v.off | v.row | v.batch) % 4 == 0;
  const uint32_t texel_width = kv_vec4 ? 4 : 1;
  const bool texel_ok = texel_readable(a.k.t, texel_width, caps) && texel_readable(a.v.t, texel_width, caps);
  // The variant and its tiling, a tuned entry's over the rule's; a database
  // entry that does not fit is dropped (plan_tuned) and the rule's run.
  struct Tiling {
    std::string variant;
    uint32_t wg, tpr, bk, sh;
    KeySplit split;  // {1, kv_len} but for the split variant
    uint32_t nsg = 0, dh = 0, sg = 0, sgs = 0;  // the coopmat variants: CoopTiling, subgroups (coop_subgroups())
  };
  const Capabilities& dev = caps;
  const char* op_name = op;
  const uint32_t d4 = ceil_div(s.head_dim, 4), vec4s = caps.max_shared_memory / 16;
  const Tiling tiling = plan_tuned(r, op, cls, tc, [&]() -> Tiling {
    const auto& caps = dev;
    const char* op = op_name;
    std::string variant = pick_variant(a.variant == "untuned" ? "" : a.variant, tc);
    VKF_REQUIRE(variant.empty() || variant == "online" || variant == "texel" || variant == "split" ||
                    variant == "coopmat" || variant == "coopmat_emulated",
                op, "unknown variant \"" + variant + "\" (online, texel, split, coopmat, coopmat_emulated)" +
                        (tc ? " (tuned: " + tc->text() + ")" : ""));
    VKF_REQUIRE(a.variant != "texel" || texel_ok, op,
                "variant texel needs K and V readable as texel buffers (formats, maxTexelBufferElements, a host "
                "buffer's usage); use online");
    // The rule: texel reads on a CPU device, where they are gathers and staging
    // is a loop over the lanes. Both kernels sum in the same order, so a tuned
    // texel entry for tensors that cannot be texels runs staged, with its knobs.
    const bool by_rule = variant.empty() && !tc;  // a tuned entry keeps the variant it was measured with
    // Tensor cores for a prompt where the device has them.
    const bool kv_f16 = a.k.t->dtype() == DType::F16;
    if (by_rule && caps.coopmat && s.q_len >= kCoopMinRows && s.head_dim <= kCoopMaxHeadDim &&
        coop_default(caps, s.head_dim, kv_f16, false).fits(caps, caps.subgroup_size))
      variant = "coopmat";
    if (variant == "coopmat" || variant == "coopmat_emulated") {
      const CoopTiling def = coop_default(caps, s.head_dim, kv_f16, is_emulated(variant));
      const CoopTiling t{tc ? tc->knob("NSG", def.nsg) : def.nsg, tc ? tc->knob("BK", def.bk) : def.bk, def.dh, kv_f16,
                         def.emulated};
      const CoopSubgroups sgs = coop_subgroups(caps, op, variant, t.nsg, "online");
      VKF_REQUIRE(t.fits(caps, sgs.sg), op,
                  variant + " with NSG=" + std::to_string(t.nsg) + " BK=" + std::to_string(t.bk) + " at head_dim " +
                      std::to_string(s.head_dim) + " does not fit (head_dim up to " + std::to_string(kCoopMaxHeadDim) +
                      ", BK a multiple of 16 up to 64, NSG·" + std::to_string(sgs.sg) + " invocations, " +
                      std::to_string(t.shared_bytes()) + " bytes of " + std::to_string(caps.max_shared_memory) +
                      " shared)" + (tc ? " (tuned: " + tc->text() + ")" : "") + "; use online");
      Tiling tl{variant, t.nsg * sgs.sg, 0, t.bk, uint32_t(t.shared_bytes()), {1, s.kv_len}};
      tl.nsg = t.nsg, tl.dh = t.dh, tl.sg = sgs.sg, tl.sgs = sgs.required;
      return tl;
    }
    if (variant.empty() || (variant == "texel" && !texel_ok))
      variant = caps.device_type == "cpu" && texel_ok ? "texel" : "online";
    // A GPU with few workgroups to run (a decode step) and many keys splits them.
    if (by_rule && variant == "online" && caps.device_type != "cpu" && s.q_len <= kSplitMaxRows &&
        uint64_t(s.batch) * s.heads * ceil_div(s.q_len, 64u) < kSplitFewGroups && s.kv_len >= 2 * kSplitKeys)
      variant = "split";
    VKF_REQUIRE(variant != "split" || s.q_len <= kSplitMaxRows, op,
                "variant split is for decoding: at most " + std::to_string(kSplitMaxRows) + " query rows, not " +
                    std::to_string(s.q_len) + "; use online");
    const bool texel = variant == "texel";
    // Rows per workgroup: up to 64, fewer for short queries, the spare
    // invocations then share rows (TPR per row) and split the keys. Merging their
    // partial accumulators takes WG·(D4+1) shared vec4s, so a large head dim
    // halves the workgroup. K/V tiles get half the shared memory, at least one
    // key per invocation of a row.
    uint32_t wg = pow2_floor(workgroup_size(caps, 64));
    // Texel reads on a CPU device: a short query (decoding) takes one
    // subgroup's worth of lanes, not 64, since the partial rows' merge through
    // shared memory is a loop over the lanes there (lavapipe decode, 12 heads ×
    // 64, kv 128: 0.30 ms at 64 lanes, 0.13 at 8).
    if (texel && caps.device_type == "cpu" && s.q_len < wg)
      wg = std::min(wg, std::max(pow2_floor(std::max(1u, caps.subgroup_size)), pow2_ceil(s.q_len)));
    uint32_t tpr = wg / std::min(wg, pow2_ceil(s.q_len));
    uint32_t bk = 0;
    for (;; wg /= 2, tpr /= 2) {
      bk = std::max(tpr, std::min(64u, vec4s / 2 / (2 * d4)) / tpr * tpr);
      const bool merge_fits = tpr == 1 || wg * (d4 + 1) <= vec4s;
      if ((merge_fits && 2 * bk * d4 <= vec4s) || tpr == 1) break;
    }
    if (tc) {
      wg = tc->knob("WG", wg), tpr = tc->knob("TPR", tpr), bk = tc->knob("BK", bk);
      // The shader's own rules: TPR invocations share a row and split each K/V tile.
      // BK: keys a tile holds, at most 64 as the rule and the tuner choose (the texel variant stages none).
      VKF_REQUIRE(wg >= 1 && wg <= std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0]) && tpr >= 1 &&
                      wg % tpr == 0 && bk >= tpr && bk % tpr == 0 && bk <= 64,
                  op, "the tuned configuration \"" + tc->text() + "\" does not fit this device (WG at most " +
                          std::to_string(std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0])) +
                          ", a multiple of TPR; BK a multiple of TPR up to 64)");
    }
    // Shared memory: the K/V tiles (staged only), then the partial rows' merge.
    // 64-bit: tuned knobs may be anything up to 2^32 - 1, and a wrapped product would fit.
    const uint64_t sh = std::max<uint64_t>({texel ? 1u : 2ull * bk * d4, tpr > 1 ? uint64_t(wg) * (d4 + 1) : 0u});
    VKF_REQUIRE(sh <= vec4s, op,
                "head_dim " + std::to_string(s.head_dim) + " needs more shared memory than the device's " +
                    std::to_string(caps.max_shared_memory) + " bytes" + (tc ? " (tuned: " + tc->text() + ")" : ""));
    KeySplit split{1, s.kv_len};
    if (variant == "split") {
      const uint32_t asked = tc ? tc->knob("SPLITS", 0) : 0;
      if (tc && (asked < 2 || asked > kMaxSplits))
        throw Error(std::string(op) + ": the tuned configuration \"" + tc->text() + "\" needs SPLITS from 2 to " +
                    std::to_string(kMaxSplits));
      split = key_split(s.kv_len, asked ? asked : std::clamp(ceil_div(s.kv_len, kSplitKeys), 2u, kMaxSplits), bk);
    }
    return {variant, wg, tpr, bk, uint32_t(sh), split};
  });
  const std::string& variant = tiling.variant;
  const bool texel = variant == "texel";
  const uint32_t wg = tiling.wg, tpr = tiling.tpr, bk = tiling.bk, sh = tiling.sh;

  const double n_qk = double(s.batch) * s.heads * s.q_len * s.kv_len;
  const double width = double(s.heads) * s.head_dim, kv_width = double(s.kv_head_count()) * s.head_dim;
  const double flops = 4 * n_qk * s.head_dim;
  const double bytes = double(s.batch) * (width * 8.0 * s.q_len + kv_width * 2.0 * dtype_size(a.k.t->dtype()) * s.kv_len) +
                       (a.mask.key_padding ? 4.0 * s.batch * s.kv_len : 0.0) +
                       (a.bias ? 4.0 * s.heads * s.q_len * s.kv_len : 0.0);
  const uint32_t has_bias = a.bias ? 1 : 0;  // a constant: the path without bias does not read one
  const Tensor* pad = a.mask.key_padding ? a.mask.key_padding : a.q.t;
  const Tensor* bias = a.bias ? a.bias : a.q.t;

  if (tiling.nsg) {  // the coopmat variants: 16·NSG query rows a workgroup
    const uint32_t q_blocks = ceil_div(s.q_len, 16ull * tiling.nsg);
    const uint64_t total = uint64_t(s.batch) * s.heads * q_blocks;
    VKF_REQUIRE(total < (1ull << 32), op, "too many query blocks");
    const FlashAttentionPush push{s.heads, s.head_dim, s.q_len, s.kv_len, q.off, q.row, q.batch, k.off, k.row,
                                  k.batch, v.off, v.row, v.batch, pad_stride, a.mask.key_padding ? 1u : 0u,
                                  a.mask.causal ? 1u : 0u, a.mask.causal_offset, a.scale, q_blocks, uint32_t(total),
                                  a.bias ? uint32_t(a.bias->dim(-1)) : 0u, s.heads_per_kv(), a.mask.window, 1, s.kv_len};
    const Pipeline& p = r.pipeline(std::string(op) + "_" + variant + weight_suffix(a.k.t),
                                   {wg, tiling.dh, bk, tiling.nsg, tiling.sg, has_bias}, tiling.sgs);
    r.dispatch(p, {{a.q.t, false}, {a.k.t, false}, {a.v.t, false}, {pad, false}, {a.out, true}, {bias, false}}, push,
               r.fold(total), std::string(op) + "/" + variant + weight_suffix(a.k.t) + (a.bias ? "+bias" : ""));
    std::vector<std::pair<std::string, uint32_t>> knobs = {{"WG", wg}, {"NSG", tiling.nsg}, {"BK", bk}, {"DH", tiling.dh}};
    if (tiling.sgs) knobs.emplace_back("SGS", tiling.sgs);
    return {op, variant, knobs, flops, bytes, cls, tc != nullptr};
  }

  const KeySplit split = tiling.split;
  const uint32_t bq = wg / tpr, q_blocks = ceil_div(s.q_len, bq);
  const uint64_t total = uint64_t(s.batch) * s.heads * q_blocks * split.splits;
  VKF_REQUIRE(total < (1ull << 32), op, "too many query blocks");
  const FlashAttentionPush push{s.heads, s.head_dim, s.q_len, s.kv_len, q.off, q.row, q.batch, k.off, k.row,
                                k.batch, v.off, v.row, v.batch, pad_stride, a.mask.key_padding ? 1u : 0u,
                                a.mask.causal ? 1u : 0u, a.mask.causal_offset, a.scale, q_blocks, uint32_t(total),
                                a.bias ? uint32_t(a.bias->dim(-1)) : 0u, s.heads_per_kv(), a.mask.window,
                                split.splits, split.len};
  const bool splits = variant == "split";
  const std::string shader = std::string(op) + (texel ? "_texel" : splits ? "_split" : "") + weight_suffix(a.k.t);
  const uint32_t vec4 = texel && kv_vec4;
  const Pipeline& p = r.pipeline(shader, {wg, d4, bk, tpr, sh, has_bias, vec4});
  // The split variant writes each (row, head, range)'s partial record, then merges them into out.
  const uint64_t rows_heads = uint64_t(s.batch) * s.q_len * s.heads;
  const Tensor* first_out = splits ? &r.scratch({int64_t(rows_heads * split.splits * (d4 * 4 + 4))}) : a.out;
  r.dispatch(p,
             {{a.q.t, false}, {a.k.t, false, 0, 0, texel_width}, {a.v.t, false, 0, 0, texel_width}, {pad, false},
              {first_out, true}, {bias, false}},
             push, r.fold(total), std::string(op) + "/" + variant + weight_suffix(a.k.t) + (a.bias ? "+bias" : ""));
  if (splits) {
    const uint32_t cwg = pow2_floor(workgroup_size(caps, 64));
    const uint64_t invocations = rows_heads * d4;
    VKF_REQUIRE(invocations < (1ull << 32), op, "too many rows to merge");
    const FlashCombinePush cp{s.heads, s.head_dim, uint32_t(rows_heads), split.splits, uint32_t(invocations)};
    r.dispatch(r.pipeline("flash_attention_combine_f32", {cwg, d4}), {{first_out, false}, {a.out, true}}, cp,
               r.fold(ceil_div(invocations, cwg)), std::string(op) + "/split merge");
  }

  std::vector<std::pair<std::string, uint32_t>> knobs = {{"WG", wg},  {"D4", d4},          {"BK", bk},    {"TPR", tpr},
                                                         {"SH4", sh}, {"BIAS", has_bias}, {"VEC4", vec4}};
  if (splits) knobs.emplace_back("SPLITS", split.splits);
  return {op, variant, knobs, flops, bytes, cls, tc != nullptr};
}

// ---- descriptor ----

namespace {

OpCase flash_attention_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const cases::Heads h = cases::attention_inputs(ctx, o, *D);
  auto mask = cases::make_mask(ctx, o);
  const FlashAttentionArgs a{h.q, h.k, h.v, h.shape, mask->dm, 1.0f / std::sqrt(float(o.head_dim)),
                             &D->t(ctx.tensor({o.batch, o.q_len, o.heads * o.head_dim})), ""};
  // The args point into the mask: the check's closure keeps it alive with the case.
  return cases::make(D, cases::attention_shape_text(o), cases::recording(flash_attention, a),
                     cases::against(ctx, *a.out, [=] { return ref::attention(h.hq, h.hk, h.hv, h.shape, mask->hm, a.scale); }));
}

// What the tuner tries: staged or texel reads × workgroup sizes × invocations
// per query row (the rest split the keys: q_len 1 is decoding) × keys per tile.
std::vector<TunedConfig> flash_attention_candidates(const Capabilities& c, const OpShape& o) {
  std::vector<TunedConfig> out;
  const uint32_t d4 = ceil_div(o.head_dim, 4), vec4s = c.max_shared_memory / 16;
  const bool texel = o.dtype == DType::F16 ? c.texel_f16 : c.texel_f32;
  for (const char* v : {"online", "texel"}) {
    const bool staged = std::string(v) == "online";
    if (!staged && !texel) continue;
    for (uint32_t wg : workgroup_candidates(c, 128))
      for (uint32_t tpr = 1; tpr <= wg; tpr *= 2) {
        if (wg / tpr > pow2_ceil(o.q_len)) continue;  // more rows than queries: idle invocations
        for (uint32_t bk : {16u, 32u, 64u}) {
          if (bk < tpr || bk % tpr || std::max(staged ? 2 * bk * d4 : 0u, tpr > 1 ? wg * (d4 + 1) : 0u) > vec4s)
            continue;
          out.push_back({v, {{"WG", wg}, {"TPR", tpr}, {"BK", bk}}});
        }
      }
  }
  // Tensor cores for a prompt's rows: subgroups × keys a tile.
  if (c.coopmat && o.q_len >= kCoopMinRows)
    for (uint32_t nsg : {1u, 2u, 4u})
      for (uint32_t bk : {16u, 32u, 64u})
        if (CoopTiling{nsg, bk, ceil_div(o.head_dim, 16) * 16, o.dtype == DType::F16, false}.fits(c, c.subgroup_size))
          out.push_back({"coopmat", {{"NSG", nsg}, {"BK", bk}}});
  // Split: the decode rows' own tiling (all of a workgroup's lanes on its few
  // rows) over key ranges of 2 to 64.
  if (o.q_len <= kSplitMaxRows)
    for (uint32_t wg : workgroup_candidates(c, 128)) {
      const uint32_t tpr = wg / std::min(wg, pow2_ceil(o.q_len));
      if (2 * 32 * d4 > vec4s || (tpr > 1 && wg * (d4 + 1) > vec4s) || 32 % tpr) continue;
      for (uint32_t splits : {2u, 4u, 8u, 16u, 32u, 64u})
        if (splits * 32 <= std::max<uint32_t>(64, o.kv_len))
          out.push_back({"split", {{"WG", wg}, {"TPR", tpr}, {"BK", 32}, {"SPLITS", splits}}});
    }
  return out;
}

/// A decode step of a SmolLM-135M-shaped model (9 heads over 3 K/V heads of 64)
/// at 1024 cached keys in fp16: where a GPU's rule splits the keys.
OpShape decode_bench_shape() {
  OpShape s;
  s.batch = 1, s.heads = 9, s.kv_heads = 3, s.head_dim = 64, s.q_len = 1, s.kv_len = 1024;
  s.mask = "causal", s.dtype = DType::F16;
  return s;
}

}  // namespace

VKF_OP_DESCRIPTOR(flash_attention) {
  return {"flash_attention", "softmax(scale·QKᵀ + bias + mask)·V in one pass with an online softmax (dtype: K, V)",
          // coopmat_emulated (coopmat's kernel on any device with fp16 arithmetic, slow to
          // compile on lavapipe) runs only when asked for by name (tests/test_flash_attention.cpp).
          {"online", "texel", "split", "coopmat"}, {"WG", "D4", "BK", "TPR", "SH4", "BIAS", "VEC4", "SPLITS", "NSG", "DH"}, {"batch", "heads", "kv_heads", "head_dim", "q_len", "kv_len"},
          {cases::attention_bench_shape(), cases::attention_bench_shape(DType::F16), decode_bench_shape()},
          flash_attention_case,
          cases::attention_label, false, flash_attention_candidates};
}

}  // namespace vkf
