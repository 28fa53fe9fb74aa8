// Linear layer with fused epilogue: shaders/gemm_tiled.comp (register blocks,
// staged through shared memory or not, for many rows) and shaders/gemm_vec.comp
// (a few rows, bound by reading W); reference in src/reference/gemm.cpp.
#include "ops/op_case.hpp"
#include "ops/op_util.hpp"
#include "ops/tuning_util.hpp"
#include "push/gemm.h"

namespace vkf {
namespace {

constexpr const char* kOp = "gemm";

struct Dims {
  uint32_t M, N, K;
};

/// A BM×BN tile of Y per workgroup, a TM×TN register block per invocation,
/// BK columns of K per shared-memory step (staged only).
struct Tiles {
  uint32_t bm, bn, bk, tm, tn;
  bool staged;
  // 64-bit: a tuned knob may be anything up to 2^32 - 1, and a product that
  // wraps would pass the fit checks (issue 29).
  uint64_t wg() const { return tm && tn ? uint64_t(bm / tm) * (bn / tn) : 0; }
  uint64_t shared_bytes() const { return staged ? (uint64_t(bm) + bn) * bk * 4 : 0; }
};

/// The register budget of one invocation: TM×TN accumulators (the defaults and
/// the tuner's candidates reach 256, broadcast's 32×8) and BK-wide steps. A
/// larger block is no faster and compiles for minutes: BM=TM=1024 BN=TN=1 took
/// lavapipe over 60 s and 5 GB.
constexpr uint64_t kMaxRegisterBlock = 256;
constexpr uint32_t kMaxBk = 64;

/// Rows up to which gemv is picked: it reads W once per ROWS rows and reduces
/// across lanes; with more rows a register block reuses each W load more.
constexpr uint32_t kGemvMaxRows = 4;

bool is_cpu(const Capabilities& c) { return c.device_type == "cpu"; }

/// Staged tiles: the first that fits the device's limits. The preferred ones
/// are common GPU choices (64×64 tiles, 4×4 blocks, 256 invocations).
Tiles staged_tiles(const Capabilities& c, bool small) {
  std::vector<Tiles> prefs;
  if (small) prefs.push_back({32, 32, 16, 2, 2, true});
  prefs.push_back({64, 64, 16, 4, 4, true});
  prefs.push_back({32, 32, 8, 4, 4, true});
  prefs.push_back({16, 16, 4, 2, 2, true});  // 64 invocations, 512 bytes: fits any Vulkan device
  const uint32_t limit = std::min(c.max_workgroup_invocations, c.max_workgroup_size[0]);
  for (const Tiles& t : prefs)
    if (t.wg() <= limit && t.shared_bytes() <= c.max_shared_memory) return t;
  return prefs.back();
}

/// Blocked (no shared memory), 16 invocations. On lavapipe per core: 16×16
/// blocks 11.7 GFLOP/s but ~9 s of LLVM compile on first use, 16×8 9.0 (3 s),
/// 8×8 7.4 (1 s). 16×8 for many rows; 8×8 in 16-row tiles for fewer rows,
/// which wastes less on padding rows.
Tiles blocked_tiles(uint32_t M) {
  if (M >= 48) return {64, 32, 4, 16, 8, false};
  return {16, 64, 4, 8, 8, false};
}

/// Broadcast: a subgroup spans BN/TN = SG column blocks and shares TM rows of
/// X, fetched one per lane and shuffled. Many rows per invocation pay: on
/// lavapipe, 128×3072×768 f32, TM=32 TN=4 beat TM=16 TN=8 and TM=8 TN=8. A
/// fetch is a call there, so the larger 32×8 block, TN + TM/SG calls for twice
/// the FMAs, runs 512³ 1.12–1.15× faster (the 128-row shapes ~1.05×), but
/// takes ~3× as long to compile (4 s): it is kept for many rows.
Tiles broadcast_tiles(uint32_t M, uint32_t sg) {
  if (M >= 256) return {32, 8 * sg, 4, 32, 8, false};
  if (M >= 32) return {32, 4 * sg, 4, 32, 4, false};
  return {16, 4 * sg, 4, 16, 4, false};
}

/// The texel variant reads X and W whole, as vec4 texels when K % 4 == 0.
bool texel_ok(const Dims& d, const GemmArgs& a, const Capabilities& c);

Dims check(const GemmArgs& a, const Capabilities& c) {
  require_tensor(a.x, kOp, "x", DType::F32);
  require_matrix(a.w, kOp, "w", c);
  require_tensor(a.y, kOp, "y", DType::F32);
  const auto& ws = a.w->shape();
  VKF_REQUIRE(ws.size() == 2, kOp, "w " + a.w->describe() + " must be [N, K]");
  const int64_t N = ws[0], K = ws[1];
  VKF_REQUIRE(a.x->dim(-1) == K, kOp,
              "x " + a.x->describe() + " must end in K = " + std::to_string(K) + " (w is " +
                  a.w->describe() + ")");
  std::vector<int64_t> ys = a.x->shape();
  ys.back() = a.y->dim(-1);  // N, or wider: Y's columns [y_col, y_col + N)
  VKF_REQUIRE(a.y->shape() == ys && uint64_t(a.y->dim(-1)) >= uint64_t(a.y_col) + uint64_t(N) &&
                  (a.y_col == 0 || a.y->dim(-1) > N),
              kOp, "y " + a.y->describe() + " must be the shape of x with the last dim N = " + std::to_string(N) +
                       (a.y_col ? " or wider, holding columns y_col = " + std::to_string(a.y_col) + " to y_col + N"
                                : std::string()));
  const int64_t NB = a.y->dim(-1);  // the bias's length
  if (a.bias) {
    VKF_REQUIRE(!a.bias->empty(), kOp, "bias is empty");
    if (is_block_dtype(a.w->dtype()))  // read as words: f16 needs no 16-bit storage
      VKF_REQUIRE(a.bias->shape() == std::vector<int64_t>{NB} &&
                      (a.bias->dtype() == DType::F32 || a.bias->dtype() == DType::F16),
                  kOp, "bias " + a.bias->describe() + " must be [" + std::to_string(NB) + "] f32 or f16 (w is " +
                           a.w->describe() + ")");
    else
      VKF_REQUIRE(a.bias->shape() == std::vector<int64_t>{NB} && a.bias->dtype() == a.w->dtype(), kOp,
                  "bias " + a.bias->describe() + " must be [" + std::to_string(NB) + "] " +
                      dtype_name(a.w->dtype()) + " like w");
  }
  if (a.residual) {
    require_tensor(a.residual, kOp, "residual", DType::F32);
    VKF_REQUIRE(a.residual->shape() == ys, kOp,
                "residual " + a.residual->describe() + " must have the shape of y " + a.y->describe());
    VKF_REQUIRE(!tensors_overlap(a.residual, a.y), kOp, "y must not alias residual");
  }
  VKF_REQUIRE(!tensors_overlap(a.x, a.y), kOp, "y must not alias x");
  // Shaders index elements with 32-bit integers.
  for (const Tensor* t : {a.x, a.w, static_cast<const Tensor*>(a.y)})
    VKF_REQUIRE(uint64_t(t->numel()) < (1ull << 32), kOp, t->describe() + " has 2^32 elements or more");
  return {uint32_t(a.x->numel() / K), uint32_t(N), uint32_t(K)};
}

/// A block of the product, [m0, m1) × [n0, n1), whose slices of X, W, Y and R
/// each fit one binding.
struct Piece {
  uint32_t m0, m1, n0, n1;
};

/// One piece when every tensor fits maxStorageBufferRange. Otherwise W is cut
/// into row blocks (columns of Y: a vocabulary projection's weight is the big
/// one) and X, Y and R into row blocks; a block of Y rows × W rows spans
/// (rows - 1)·N + cols elements of Y.
std::vector<Piece> plan_pieces(const Dims& d, const GemmArgs& a, const Capabilities& c) {
  const uint64_t R = c.max_storage_buffer_range, M = d.M, N = d.N, K = d.K;
  bool fits = true;
  for (const Tensor* t : {a.x, a.w, static_cast<const Tensor*>(a.y), a.residual})
    if (t && t->bytes() > R) fits = false;
  if (fits) return {{0, d.M, 0, d.N}};
  const uint64_t room = R > slice_align(c) ? R - slice_align(c) : 0;
  // Block-format W is bound whole (require_matrix): only X, Y and R are cut.
  uint64_t nc = is_block_dtype(a.w->dtype()) ? N : std::min({N, room / weight_bytes(weight_format(a.w), K), room / 4});
  VKF_REQUIRE(nc >= 1 && room / (K * 4) >= 1, kOp,
              "a row of K = " + std::to_string(K) + " elements does not fit maxStorageBufferRange (" +
                  std::to_string(R) + " bytes, profile " + c.profile + ")");
  if (nc < N && nc >= 64) nc = nc / 64 * 64;  // whole tiles in every piece but the last
  const uint64_t ldy = uint64_t(a.y->dim(-1));  // Y's (and R's) rows: N, or wider (GemmArgs::y_col)
  const uint64_t mc = std::min({M, room / (K * 4), (room - nc * 4) / (ldy * 4) + 1});
  std::vector<Piece> pieces;
  for (uint64_t m0 = 0; m0 < M; m0 += mc)
    for (uint64_t n0 = 0; n0 < N; n0 += nc)
      pieces.push_back({uint32_t(m0), uint32_t(std::min(M, m0 + mc)), uint32_t(n0), uint32_t(std::min(N, n0 + nc))});
  return pieces;
}

/// Block-format W is read as R32_UINT words (texel_u32), X as float texels.
bool texel_ok(const Dims& d, const GemmArgs& a, const Capabilities& c) {
  const uint32_t width = d.K % 4 == 0 ? 4 : 1;
  return texel_readable(a.x, width, c) && texel_readable(a.w, width, c) && plan_pieces(d, a, c).size() == 1;
}

/// One call as the variants see it: the device, the arguments and their sizes.
struct Problem {
  const Capabilities& caps;
  const GemmArgs& a;
  Dims d;
  bool cpu() const { return is_cpu(caps); }
  bool texel() const { return texel_ok(d, a, caps); }
  bool block() const { return is_block_dtype(a.w->dtype()); }
  uint32_t vec4() const { return d.K % 4 == 0; }
};

/// What a variant dispatches.
struct Plan {
  std::string shader;                                   ///< without the weight suffix (weight_suffix())
  std::vector<uint32_t> spec;                           ///< specialization constants, in the shader's order
  std::vector<std::pair<std::string, uint32_t>> knobs;  ///< what OpInfo::spec reports
  uint32_t tile_m = 0, tile_n = 0;                      ///< the block of Y one workgroup writes
  uint32_t sgs = 0;  ///< the subgroup size required (knob SGS); 0: the driver's
  /// Split-K (knob SPLITK; staged tiles and coopmat): K in this many chunks of
  /// whole k_step steps, each a workgroup's, summed by gemm_splitk_reduce.comp.
  uint32_t ksplit = 1, k_step = 0;
};

/// What the tuner's candidates are made for.
struct Search {
  const Capabilities& caps;
  const OpShape& shape;
  bool texel;      ///< X and W can be read as texel buffers
  uint32_t limit;  ///< invocations a workgroup may have
};

/// One way to compute the product: a row of kVariants. Adding one is a row
/// here and its shader in src/ops/ops.cmake.
struct Variant {
  const char* name;
  /// Whether the engine's own rule picks it (no variant asked for or tuned);
  /// the first row whose rule holds is picked.
  bool (*preferred)(const Problem&);
  /// Its plan, a tuned configuration's knobs over its own defaults.
  /// @throws vkf::Error when the device or the shape cannot run it, or the knobs do not fit.
  Plan (*plan)(const char* name, const Problem&, const TunedConfig*);
  /// Appends the configurations `vkformer tune` tries at a shape; nullptr: none.
  void (*candidates)(const char* name, const Search&, std::vector<TunedConfig>&);
  /// Where its candidates come in the search, lower first (a budget may end
  /// it early): the register blocks, then the staged tiles, as before the table.
  int search_order;
};

/// A tuned configuration's knob, or `fallback` without one.
uint32_t knob(const TunedConfig* tc, const char* name, uint32_t fallback) {
  return tc ? tc->knob(name, fallback) : fallback;
}

/// Ends an error about knobs, naming the tuned configuration that set them.
std::string tuned_note(const TunedConfig* tc) { return tc ? " (tuned: " + tc->text() + ")" : ""; }

/// gemm_vec.comp: ROWS rows a workgroup, COLS columns of Y, each a reduction
/// over K across the lanes (through subgroup operations or shared memory).
Plan gemv_plan(const Problem& p, const TunedConfig* tc, bool sg) {
  const Capabilities& caps = p.caps;
  // On a CPU one subgroup per workgroup skips the cross-subgroup step; a GPU
  // wants more lanes along K. Either at the subgroup size a tuned SGS requires.
  const uint32_t sgs_asked = knob(tc, "SGS", 0);
  uint32_t wg = p.cpu() ? subgroup_size(caps, sgs_asked) : workgroup_size(caps, 64, sgs_asked);
  const uint32_t rows = std::min(p.d.M, kGemvMaxRows);
  // One invocation per output at the end, so rows·cols ≤ wg. 8 columns
  // share each X load on lavapipe (M = 1: 6.3 GB/s of W vs 3.1 with 4).
  uint32_t cols = std::max(1u, std::min(8u, wg / rows));
  // TEXEL: X and W through texel buffers, as the texel variant reads them;
  // the default on a CPU device (M = 1, 3072 × 768 on lavapipe: ~2× faster).
  const bool texel_possible = p.texel();
  uint32_t texel = p.cpu() && texel_possible;
  if (tc) wg = tc->knob("WG", wg), cols = tc->knob("COLS", cols), texel = tc->knob("TEXEL", texel) && texel_possible;
  Plan plan;
  plan.sgs = tuned_subgroup_size(caps, tc, sg, wg, kOp);
  // 64-bit: COLS=2^30 wrapped the shared-memory product to 0 and passed (issue 29 #11).
  VKF_REQUIRE(wg >= 1 && cols >= 1 && wg <= std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0]) &&
                  uint64_t(rows) * cols * wg * 4 <= caps.max_shared_memory && uint64_t(rows) * cols <= wg,
              kOp, "gemv workgroup WG=" + std::to_string(wg) + " COLS=" + std::to_string(cols) +
                       " does not fit the device" + tuned_note(tc));
  plan.shader = std::string("gemm_vec_") + (sg ? "subgroup" : "shared") + (texel ? "_texel" : "");
  plan.spec = {wg, rows, cols, p.vec4(), uint32_t(p.a.act)};
  plan.knobs = {{"WG", wg}, {"ROWS", rows}, {"COLS", cols}, {"VEC4", p.vec4()}, {"TEXEL", texel}};
  if (plan.sgs) plan.knobs.emplace_back("SGS", plan.sgs);
  plan.tile_m = rows;
  plan.tile_n = cols;
  return plan;
}

/// Most chunks split-K cuts K into: each one's partial Y is M·N floats more to
/// write and add up, and 8 already multiplies the workgroups of a 64×64 tile by 8.
constexpr uint32_t kMaxSplitK = 8;

/// How many chunks of K (knob SPLITK) the product is split into on tiles of
/// tile_m × tile_n and K steps of k_step. The rule: on a GPU, a product of few
/// tiles (fewer than 32: 128 × 768 at 64 × 64 has 24, where a GPU has ~20–130
/// compute units) with at least 8 steps of K is split up to 64 workgroups,
/// each chunk at least 4 steps long. A CPU device is filled by far fewer
/// workgroups, so it never splits by rule.
uint32_t split_k(const char* variant, const Problem& p, const TunedConfig* tc, uint32_t tile_m, uint32_t tile_n,
                 uint32_t k_step) {
  const uint64_t tiles = uint64_t(ceil_div(p.d.M, tile_m)) * ceil_div(p.d.N, tile_n);
  const uint32_t steps = ceil_div(p.d.K, k_step);
  uint32_t rule = 1;
  if (!p.cpu() && tiles < 32 && steps >= 8)
    rule = uint32_t(std::min<uint64_t>({kMaxSplitK, ceil_div(64, tiles), steps / 4}));
  const uint32_t s = knob(tc, "SPLITK", rule);
  VKF_REQUIRE(s >= 1 && s <= kMaxSplitK, kOp,
              std::string(variant) + " SPLITK=" + std::to_string(s) + " must be 1.." + std::to_string(kMaxSplitK) +
                  tuned_note(tc));
  return s;
}

/// The subgroup size gemm_tiled.comp's variants run with: a tuned SGS, else the device's.
uint32_t block_subgroup(const Problem& p, const TunedConfig* tc) { return subgroup_size(p.caps, knob(tc, "SGS", 0)); }

/// gemm_tiled.comp's variants (`shader`): tiles `t` unless tuned; `bcast`:
/// the broadcast variant, whose subgroups share rows of X.
Plan block_plan(const char* variant, const Problem& p, const TunedConfig* tc, const char* shader, Tiles t,
                bool bcast) {
  const Capabilities& caps = p.caps;
  const uint32_t sg = block_subgroup(p, tc);
  if (tc) t = {tc->knob("BM", t.bm), tc->knob("BN", t.bn), tc->knob("BK", t.bk), tc->knob("TM", t.tm),
               tc->knob("TN", t.tn), t.staged};
  // Only broadcast has subgroup operations, so only it takes an SGS. Where the
  // device can require a size, it runs with full subgroups of the size its
  // rows are shared by (SG); elsewhere the shader checks gl_SubgroupSize.
  Plan plan;
  // Clamped for the subgroup checks only: the fit check below refuses a larger one.
  const uint32_t wg = uint32_t(std::min<uint64_t>(t.wg(), UINT32_MAX));
  plan.sgs = tuned_subgroup_size(caps, tc, bcast, wg, kOp);
  if (bcast && !plan.sgs && caps.subgroup_size_control && subgroup_size_problem(caps, sg, wg).empty())
    plan.sgs = sg;
  VKF_REQUIRE(t.tm >= 1 && t.tn >= 1 && t.bm % t.tm == 0 && t.bn % t.tn == 0 && t.bk >= 4 && t.bk % 4 == 0 &&
                  t.bk <= kMaxBk && uint64_t(t.tm) * t.tn <= kMaxRegisterBlock && t.wg() >= 1 &&
                  t.wg() <= std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0]) &&
                  t.shared_bytes() <= caps.max_shared_memory,
              kOp, std::string(variant) + " tiles BM=" + std::to_string(t.bm) + " BN=" + std::to_string(t.bn) +
                       " BK=" + std::to_string(t.bk) + " TM=" + std::to_string(t.tm) + " TN=" + std::to_string(t.tn) +
                       " do not fit the device (BM/TM x BN/TN invocations up to " +
                       std::to_string(std::min(caps.max_workgroup_invocations, caps.max_workgroup_size[0])) +
                       ", TM x TN up to " + std::to_string(kMaxRegisterBlock) + ", BK a multiple of 4 up to " +
                       std::to_string(kMaxBk) + ", staged tiles in " + std::to_string(caps.max_shared_memory) +
                       " bytes)" + tuned_note(tc));
  // The lanes of a subgroup must share their rows of X.
  VKF_REQUIRE(!bcast || (t.bn / t.tn) % sg == 0, kOp,
              "broadcast tiles need BN/TN a multiple of the subgroup size " + std::to_string(sg) + tuned_note(tc));
  plan.shader = shader;
  const uint32_t ku = bcast ? knob(tc, "KU", 1) : 1;
  VKF_REQUIRE(ku >= 1 && ku <= 8, kOp, "broadcast KU=" + std::to_string(ku) + " must be 1..8" + tuned_note(tc));
  // Staged tiles read the next step's while they multiply this one's (PF), on
  // a GPU by default: a CPU device's caches already hide its reads.
  const uint32_t pf = knob(tc, "PF", t.staged && !p.cpu());
  VKF_REQUIRE(pf <= 1 && (t.staged || !pf), kOp,
              std::string(variant) + " PF=" + std::to_string(pf) + ": prefetching is 0 or 1, for staged tiles only" +
                  tuned_note(tc));
  plan.spec = {wg, t.bm, t.bn, t.bk, t.tm, t.tn, p.vec4(), t.staged, sg, ku, pf, uint32_t(p.a.act)};
  plan.knobs = {{"WG", wg},     {"BM", t.bm}, {"BN", t.bn},         {"BK", t.bk},
                {"TM", t.tm},   {"TN", t.tn}, {"VEC4", p.vec4()}, {"STAGED", t.staged}};
  if (t.staged) plan.knobs.emplace_back("PF", pf);
  if (ku != 1) plan.knobs.emplace_back("KU", ku);
  if (plan.sgs) plan.knobs.emplace_back("SGS", plan.sgs);
  plan.tile_m = t.bm;
  plan.tile_n = t.bn;
  if (t.staged) {
    plan.ksplit = split_k(variant, p, tc, t.bm, t.bn, t.bk);
    plan.k_step = t.bk;
  } else {
    VKF_REQUIRE(knob(tc, "SPLITK", 1) == 1, kOp, std::string(variant) + " does not split K (staged tiles and coopmat do)" +
                                                     tuned_note(tc));
  }
  if (plan.ksplit != 1) plan.knobs.emplace_back("SPLITK", plan.ksplit);
  return plan;
}

/// Tensor cores (shaders/gemm_coopmat.comp): a BM×BN tile per workgroup, WM×WN
/// subgroups each holding (BM/WM/16)×(BN/WN/16) 16×16 fp32 accumulators twice
/// (the products of X's two fp16 parts), BK columns of K per shared-memory
/// step. 64×64 with 2×2 subgroups by default: 8 accumulators a subgroup, 15 KiB
/// of shared memory (20 KiB with fp32 or block W, whose two parts are staged).
/// Variant coopmat_emulated is the same kernel with the matrices' operations
/// done by the lanes through shared memory (shaders/lib/coopmat.glsl): any
/// device with fp16 arithmetic runs it, so lavapipe checks coopmat's tiling,
/// split-K and epilogue. It is never the rule's pick and never tuned.
struct CoopTiles {
  uint32_t bm, bn, bk, wm, wn;
  bool w_split;   ///< fp32 or block W: two fp16 parts in shared memory
  bool emulated;  ///< coopmat_emulated: 1 KiB of shared memory a subgroup for its products
  uint64_t matrices() const { return uint64_t(bm / (16 * wm)) * (bn / (16 * wn)); }
  uint64_t shared_bytes() const {
    return (2 * uint64_t(bm) + (w_split ? 2 : 1) * uint64_t(bn)) * (bk + 8) * 2 + uint64_t(wm) * wn * 256 * 4 +
           (emulated ? uint64_t(wm) * wn * kCoopEmulationBytesPerSubgroup : 0);
  }
  /// Whole 16×16 matrices, at most kMaxCoopMatrices a subgroup, WM·WN subgroups
  /// of `sg` lanes within `limit` invocations, and the shared memory the device has.
  bool fits(const Capabilities& c, uint32_t sg, uint64_t limit) const;
};

/// At most 8 matrices per subgroup: 16 accumulators of 8 registers a lane.
constexpr uint64_t kMaxCoopMatrices = 8;

bool CoopTiles::fits(const Capabilities& c, uint32_t sg, uint64_t limit) const {
  return wm >= 1 && wn >= 1 && bm % (16 * wm) == 0 && bn % (16 * wn) == 0 && bm >= 16 * wm && bn >= 16 * wn &&
         bk >= 16 && bk % 16 == 0 && bk <= kMaxBk && matrices() <= kMaxCoopMatrices &&
         uint64_t(wm) * wn * sg <= limit && shared_bytes() <= c.max_shared_memory;
}

Plan coopmat_plan(const char* variant, const Problem& p, const TunedConfig* tc) {
  const Capabilities& c = p.caps;
  const bool emulated = is_emulated(variant);
  const CoopTiles t{knob(tc, "BM", 64), knob(tc, "BN", 64), knob(tc, "BK", 32),
                    knob(tc, "WM", 2),  knob(tc, "WN", 2),  p.a.w->dtype() != DType::F16, emulated};
  const CoopSubgroups sgs = coop_subgroups(c, kOp, variant, uint64_t(t.wm) * t.wn, "tiled");
  const uint32_t sg = sgs.sg;
  const uint64_t wg = uint64_t(t.wm) * t.wn * sg;
  VKF_REQUIRE(t.fits(c, sg, std::min(c.max_workgroup_invocations, c.max_workgroup_size[0])), kOp, std::string(variant) + " tiles BM=" + std::to_string(t.bm) + " BN=" + std::to_string(t.bn) +
                       " BK=" + std::to_string(t.bk) + " WM=" + std::to_string(t.wm) + " WN=" + std::to_string(t.wn) +
                       " do not fit (BM a multiple of 16·WM, BN of 16·WN, BK of 16 up to " + std::to_string(kMaxBk) +
                       ", at most " + std::to_string(kMaxCoopMatrices) + " matrices a subgroup, WM·WN·" +
                       std::to_string(sg) + " invocations, " + std::to_string(t.shared_bytes()) + " bytes of " +
                       std::to_string(c.max_shared_memory) + " shared)" + tuned_note(tc));
  Plan plan;
  plan.shader = emulated ? "gemm_coopmat_emulated" : "gemm_coopmat";
  plan.sgs = sgs.required;
  // Prefetching the next step's tiles (PF) is the tuner's to try: more
  // registers beside the accumulators, so no rule turns it on unmeasured.
  const uint32_t pf = knob(tc, "PF", 0);
  VKF_REQUIRE(pf <= 1, kOp, std::string(variant) + " PF=" + std::to_string(pf) + " must be 0 or 1" + tuned_note(tc));
  plan.spec = {uint32_t(wg), t.bm, t.bn, t.bk, t.wm, t.wn, sg, pf, uint32_t(p.a.act)};
  plan.knobs = {{"WG", uint32_t(wg)}, {"BM", t.bm}, {"BN", t.bn}, {"BK", t.bk}, {"WM", t.wm}, {"WN", t.wn}};
  if (pf) plan.knobs.emplace_back("PF", pf);
  if (plan.sgs) plan.knobs.emplace_back("SGS", plan.sgs);
  plan.tile_m = t.bm;
  plan.tile_n = t.bn;
  plan.ksplit = split_k(variant, p, tc, t.bm, t.bn, t.bk);
  plan.k_step = t.bk;
  if (plan.ksplit != 1) plan.knobs.emplace_back("SPLITK", plan.ksplit);
  return plan;
}

/// The split-K twins of configuration `c` (tiles bm × bn): where the shape
/// has few of its tiles, the same with SPLITK 2, 4 and 8.
void add_split_k(const Search& s, const TunedConfig& c, uint32_t bm, uint32_t bn, std::vector<TunedConfig>& out) {
  if (uint64_t(ceil_div(s.shape.m, bm)) * ceil_div(s.shape.n, bn) >= 32) return;
  for (uint32_t k : {2u, 4u, kMaxSplitK}) {
    TunedConfig t = c;
    t.knobs.emplace_back("SPLITK", k);
    out.push_back(t);
  }
}

void coopmat_candidates(const char* variant, const Search& s, std::vector<TunedConfig>& out) {
  if (!s.caps.coopmat || s.shape.m <= kGemvMaxRows) return;
  const size_t first = out.size();
  const uint32_t tiles[][5] = {{64, 64, 32, 2, 2},  {128, 64, 32, 2, 2}, {64, 128, 32, 2, 2}, {128, 128, 32, 2, 4},
                               {128, 128, 32, 4, 2}, {64, 64, 64, 2, 2},  {32, 64, 32, 1, 2},  {128, 64, 32, 4, 2}};
  for (auto& t : tiles) {
    const CoopTiles ct{t[0], t[1], t[2], t[3], t[4], s.shape.dtype != DType::F16, false};
    if (ct.fits(s.caps, s.caps.subgroup_size, s.limit))
      out.push_back({variant, {{"BM", t[0]}, {"BN", t[1]}, {"BK", t[2]}, {"WM", t[3]}, {"WN", t[4]}}});
  }
  if (out.size() > first && out[first].knob("BM", 0) == 64) {
    TunedConfig prefetching = out[first];  // the default tiles, prefetching
    prefetching.knobs.emplace_back("PF", 1);
    out.push_back(prefetching);
    add_split_k(s, out[first], 64, 64, out);
  }
}

/// The texel and broadcast variants read X and W whole, as texel buffers.
void require_texel(const char* variant, const Problem& p) {
  VKF_REQUIRE(p.texel(), kOp,
              "variant " + std::string(variant) +
                  " needs X and W readable as texel buffers (f32 or f16 W, or block-format W as R32_UINT words; "
                  "maxTexelBufferElements, a host buffer's usage, one binding each); use blocked");
}

// What the tuner tries: for a few rows the gemv variants over workgroup sizes,
// columns per workgroup and storage or texel reads (and gemv_subgroup over the
// subgroup sizes the device can require, gemm_candidates); for more, register
// blocks read from storage or texel buffers, or staged through shared memory,
// up to 128 accumulators per invocation (lavapipe's compile time grows with
// the block: 16×16 takes ~9 s).

void gemv_candidates(const char* variant, const Search& s, std::vector<TunedConfig>& out) {
  if (s.shape.m > kGemvMaxRows) return;
  const uint32_t rows = uint32_t(std::max<int64_t>(1, s.shape.m));
  for (uint32_t texel = 0; texel <= uint32_t(s.texel); ++texel)
    for (uint32_t wg : workgroup_candidates(s.caps, 128))
      for (uint32_t cols : {1u, 2u, 4u, 8u, 16u})
        if (rows * cols <= wg && rows * cols * wg * 4 <= s.caps.max_shared_memory)
          out.push_back({variant, {{"WG", wg}, {"COLS", cols}, {"TEXEL", texel}}});
}

void blocked_candidates(const char* variant, const Search& s, std::vector<TunedConfig>& out) {
  if (s.shape.m <= kGemvMaxRows) return;
  const uint32_t blocked[][4] = {{64, 32, 16, 8}, {16, 64, 8, 8}, {32, 32, 8, 8}, {32, 64, 8, 8}, {64, 64, 16, 8},
                                 {64, 32, 8, 8},  {32, 32, 8, 4}, {64, 64, 8, 8}, {16, 32, 4, 8}, {128, 32, 16, 8}};
  for (auto& b : blocked)
    if ((b[0] / b[2]) * (b[1] / b[3]) <= s.limit)
      out.push_back({variant, {{"BM", b[0]}, {"BN", b[1]}, {"BK", 4}, {"TM", b[2]}, {"TN", b[3]}}});
}

/// Broadcast: a subgroup spans SG column blocks and shares TM rows of X; two
/// K steps a loop iteration (KU) where the register block leaves room.
void broadcast_candidates(const char* variant, const Search& s, std::vector<TunedConfig>& out) {
  if (s.shape.m <= kGemvMaxRows || !s.texel || !s.caps.subgroup_shuffle || is_block_dtype(s.shape.dtype)) return;
  const uint32_t sg = std::max(1u, s.caps.subgroup_size);
  const uint32_t bcast[][2] = {{8, 4}, {8, 8}, {16, 4}, {16, 8}, {32, 2}, {32, 4}, {32, 8}, {64, 2}};
  for (auto& b : bcast)
    for (uint32_t rows : {1u, 2u})
      for (uint32_t ku : {1u, 2u})
        if (rows * sg <= s.limit && (ku == 1 || b[0] * b[1] <= 128))
          out.push_back({variant, {{"BM", rows * b[0]}, {"BN", sg * b[1]}, {"BK", 4}, {"TM", b[0]}, {"TN", b[1]}, {"KU", ku}}});
}

void staged_candidates(const char* variant, const Search& s, std::vector<TunedConfig>& out) {
  if (s.shape.m <= kGemvMaxRows) return;
  const uint32_t staged[][5] = {{64, 64, 16, 4, 4}, {32, 32, 16, 2, 2}, {32, 32, 8, 4, 4}, {64, 64, 8, 8, 4},
                                {64, 32, 16, 4, 4}, {128, 64, 8, 8, 8}, {16, 16, 4, 2, 2}};
  const size_t first = out.size();
  for (auto& t : staged)
    if ((t[0] / t[3]) * (t[1] / t[4]) <= s.limit && (t[0] + t[1]) * t[2] * 4 <= s.caps.max_shared_memory)
      out.push_back({variant, {{"BM", t[0]}, {"BN", t[1]}, {"BK", t[2]}, {"TM", t[3]}, {"TN", t[4]}}});
  if (out.size() > first && out[first].knob("BM", 0) == 64) {
    TunedConfig plain = out[first];  // the default tiles without prefetching
    plain.knobs.emplace_back("PF", 0);
    out.push_back(plain);
    add_split_k(s, out[first], 64, 64, out);
  }
}

/// Few rows: gemv. Otherwise on a CPU (measured on lavapipe) register blocks,
/// read as texels where X and W allow and shared across a subgroup where it
/// shuffles; on a GPU tensor cores where the device has them (coopmat, any
/// weight format), else staged tiles.
/// These rules exclude each other; a row whose rule overlaps another's wins
/// where it stands first. The order is the one `--variant all` runs and
/// errors list.
const Variant kVariants[] = {
    {"gemv_subgroup", [](const Problem& p) { return p.d.M <= kGemvMaxRows && p.caps.subgroup_arithmetic; },
     [](const char*, const Problem& p, const TunedConfig* tc) {
       use_subgroups(p.caps, "subgroup", kOp);  // throws without subgroup arithmetic
       return gemv_plan(p, tc, true);
     },
     [](const char* v, const Search& s, std::vector<TunedConfig>& out) {
       if (s.caps.subgroup_arithmetic) gemv_candidates(v, s, out);
     },
     0},
    {"gemv_shared", [](const Problem& p) { return p.d.M <= kGemvMaxRows && !p.caps.subgroup_arithmetic; },
     [](const char*, const Problem& p, const TunedConfig* tc) { return gemv_plan(p, tc, false); }, gemv_candidates,
     0},
    // Tensor cores where the device has them, from 32 rows (a 64-row tile at
    // half use should still beat the scalar tiles); any weight format.
    {"coopmat",
     [](const Problem& p) { return p.caps.coopmat && p.d.M >= 32; },
     coopmat_plan, coopmat_candidates, 1},
    {"coopmat_emulated", [](const Problem&) { return false; }, coopmat_plan, nullptr, 1},
    {"tiled", [](const Problem& p) { return !p.cpu() && p.d.M >= 64; },
     [](const char* v, const Problem& p, const TunedConfig* tc) {
       return block_plan(v, p, tc, "gemm_tiled", staged_tiles(p.caps, false), false);
     },
     staged_candidates, 1},
    {"tiled_small", [](const Problem& p) { return !p.cpu() && p.d.M > kGemvMaxRows && p.d.M < 64; },
     [](const char* v, const Problem& p, const TunedConfig* tc) {
       return block_plan(v, p, tc, "gemm_tiled", staged_tiles(p.caps, true), false);
     },
     nullptr, 1},
    {"blocked", [](const Problem& p) { return p.d.M > kGemvMaxRows && p.cpu() && !p.texel(); },
     [](const char* v, const Problem& p, const TunedConfig* tc) {
       return block_plan(v, p, tc, "gemm_tiled", blocked_tiles(p.d.M), false);
     },
     blocked_candidates, 0},
    // Block-format W: texel, never broadcast (whose shuffled steps read W a
    // vec4 at a time: the block-aware K loop is blocked's and texel's).
    {"texel",
     [](const Problem& p) {
       return p.d.M > kGemvMaxRows && p.cpu() && p.texel() && (!p.caps.subgroup_shuffle || p.block());
     },
     [](const char* v, const Problem& p, const TunedConfig* tc) {
       require_texel(v, p);
       return block_plan(v, p, tc, "gemm_texel", blocked_tiles(p.d.M), false);
     },
     [](const char* v, const Search& s, std::vector<TunedConfig>& out) {
       if (s.texel) blocked_candidates(v, s, out);
     },
     0},
    {"broadcast",
     [](const Problem& p) {
       return p.d.M > kGemvMaxRows && p.cpu() && p.texel() && p.caps.subgroup_shuffle && !p.block();
     },
     [](const char* v, const Problem& p, const TunedConfig* tc) {
       require_texel(v, p);
       VKF_REQUIRE(!p.block(), kOp, "variant broadcast reads f32 or f16 W only; use texel or blocked");
       VKF_REQUIRE(p.caps.subgroup_shuffle, kOp, "variant broadcast needs subgroup shuffles; use texel");
       return block_plan(v, p, tc, "gemm_broadcast", broadcast_tiles(p.d.M, block_subgroup(p, tc)), true);
     },
     broadcast_candidates, 0},
};

/// Names that stand for a variant, the one the device allows: "gemv" is
/// gemv_subgroup where subgroups do arithmetic, else gemv_shared.
struct Alias {
  const char* name;
  const char* (*variant)(const Capabilities&);
};
const Alias kAliases[] = {
    {"gemv", [](const Capabilities& c) { return use_subgroups(c, "", kOp) ? "gemv_subgroup" : "gemv_shared"; }}};

/// The variant named `name` (an alias resolved), or by the engine's own rule when it is "".
/// @throws vkf::Error naming `asked` and listing the names when none has that name.
const Variant& choose_variant(const Problem& p, std::string name, const TunedConfig* tc) {
  const std::string asked = name;
  if (name.empty()) {
    for (const Variant& v : kVariants)
      if (v.preferred(p)) return v;
    throw Error(std::string(kOp) + ": no variant's rule holds for M=" + std::to_string(p.d.M));  // a rule missing
  }
  for (const Alias& al : kAliases)
    if (name == al.name) name = al.variant(p.caps);
  for (const Variant& v : kVariants)
    if (name == v.name) return v;
  std::string names;
  for (const Alias& al : kAliases) names += std::string(names.empty() ? "" : ", ") + al.name;
  for (const Variant& v : kVariants) names += std::string(names.empty() ? "" : ", ") + v.name;
  throw Error(std::string(kOp) + ": unknown variant \"" + asked + "\" (" + names + ")" + tuned_note(tc));
}

}  // namespace

/// The variants `--variant all` and the op tests run: coopmat_emulated, a check
/// of coopmat's kernel that lavapipe takes ~20 s to compile per pipeline, only
/// when asked for by name (tests/test_gemm.cpp).
std::vector<std::string> gemm_variants() {
  std::vector<std::string> names;
  for (const Variant& v : kVariants)
    if (!is_emulated(v.name)) names.push_back(v.name);
  return names;
}

/// Split-K's two dispatches: the product's `splits` chunks of K (`chunk`
/// long) into partial rows P [splits·M, N] with no epilogue, then
/// gemm_splitk_reduce.comp's sum with the epilogue into Y. `push` is the
/// whole product's.
void split_k_dispatch(Recorder::Impl& r, const GemmArgs& a, const Problem& p, const Plan& plan, uint32_t splits,
                      uint32_t chunk, GemmPush push, const char* variant) {
  const Dims& d = p.d;
  const Tensor& part = r.scratch({int64_t(splits) * d.M, d.N});
  push.ksplit = splits;
  push.kchunk = chunk;
  GemmPush partial = push;
  partial.flags = 0;  // bias and residual wait for the sum; so does the activation (below)
  partial.groups_n = ceil_div(d.N, plan.tile_n);
  const uint64_t total = uint64_t(ceil_div(d.M, plan.tile_m)) * partial.groups_n * splits;
  VKF_REQUIRE(total < (1ull << 32), kOp, "too many workgroups");
  partial.total = uint32_t(total);
  std::vector<uint32_t> spec = plan.spec;
  spec.back() = uint32_t(Activation::None);  // the activation is the last constant of either shader
  const Use x{a.x, false}, w{a.w, false};
  r.dispatch(r.pipeline(plan.shader + weight_suffix(a.w), spec, plan.sgs), {x, w, w, x, {&part, true}}, partial,
             r.fold(total), std::string(kOp) + "/" + variant);
  const uint32_t wg = workgroup_size(p.caps, 256);
  push.total = d.M * d.N;
  const Use bias = a.bias ? Use{a.bias, false} : w, res = a.residual ? Use{a.residual, false} : Use{&part, false};
  r.dispatch(r.pipeline("gemm_splitk_reduce" + weight_suffix(a.w), {wg, uint32_t(a.act)}, 0),
             {{&part, false}, w, bias, res, {a.y, true}}, push, r.fold(ceil_div(push.total, wg)),
             std::string(kOp) + "/" + variant + "_splitk_sum");
}

OpInfo gemm(Recorder& rec, const GemmArgs& a) {
  auto& r = internals(rec);
  const Capabilities& caps = r.ctx.caps;
  const Problem p{caps, a, check(a, caps)};
  const Dims& d = p.d;
  const WeightFormat format = weight_format(a.w);

  const std::string cls = "m=" + std::to_string(size_class(d.M)) + ",n=" + std::to_string(d.N) + ",k=" +
                          std::to_string(d.K) + ",dtype=" + weight_format_name(format);
  const TunedConfig* tc = tuned(r, kOp, cls, a.variant);
  const Variant* chosen = nullptr;
  const Plan plan = plan_tuned(r, kOp, cls, tc, [&] {
    chosen = &choose_variant(p, pick_variant(a.variant, tc), tc);
    return chosen->plan(chosen->name, p, tc);
  });
  const Variant& v = *chosen;

  // The activation is specialized (shaders/lib/gemm_epilogue.glsl says why):
  // the last specialization constant of either shader. Bias and residual are flags.
  const bool has_bias = a.bias != nullptr, has_res = a.residual != nullptr;
  // M, N: this piece's; ldy: Y's (and R's) row length; n0: the piece's first
  // column (bias index); *_off: where the piece starts in its binding.
  // Flag 4: an f16 bias beside block-format W (shaders/lib/gemm_epilogue.glsl).
  const bool bias_f16 = has_bias && is_block_format(format) && a.bias->dtype() == DType::F16;
  const uint32_t ldy = uint32_t(a.y->dim(-1));  // d.N, or wider for a window of Y's columns (y_col)
  GemmPush push{d.M, d.N, d.K, 0, 0, uint32_t(has_bias) | uint32_t(has_res) << 1 | uint32_t(bias_f16) << 2,
                ldy, 0, 0, 0, 0, 0, 1, d.K};
  OpInfo info{kOp, v.name, {}, 2.0 * d.M * d.N * d.K, 0, cls, tc != nullptr};
  info.bytes = 4.0 * d.M * d.K + double(weight_bytes(format, uint64_t(d.N) * d.K)) +
               (has_bias ? double(a.bias->bytes()) : 0) + 4.0 * d.M * d.N * (has_res ? 2 : 1);

  info.spec = plan.knobs;
  const std::vector<Piece> pieces = plan_pieces(d, a, caps);
  // Split-K: chunks of whole K steps (the last may be shorter), a product too
  // large for one binding excepted (its pieces already make many workgroups).
  // The partial sums, splits·M·N floats, must fit one binding too.
  const uint64_t splits_fit = caps.max_storage_buffer_range / (uint64_t(d.M) * d.N * 4);
  const uint32_t ksplit = uint32_t(std::min<uint64_t>(plan.ksplit, splits_fit));
  const uint32_t chunk = ksplit > 1 ? ceil_div(ceil_div(d.K, ksplit), plan.k_step) * plan.k_step : d.K;
  if (pieces.size() == 1 && ceil_div(d.K, chunk) > 1 && ldy == d.N) {  // the partial sums are [M, N]: no window
    split_k_dispatch(r, a, p, plan, ceil_div(d.K, chunk), chunk, push, v.name);
    return info;
  }
  const Pipeline& pipe = r.pipeline(plan.shader + weight_suffix(a.w), plan.spec, plan.sgs);
  const uint32_t texel_width = p.vec4() ? 4 : 1;  // read by the texel variants only
  for (const Piece& pc : pieces) {
    const uint64_t K = d.K, N = ldy, n0 = a.y_col + pc.n0, n1 = a.y_col + pc.n1;  // Y's columns
    Slice xs = slice(a.x, false, pc.m0 * K, pc.m1 * K, caps);
    Slice wsl = slice(a.w, false, pc.n0 * K, pc.n1 * K, caps);
    xs.use.texel_width = wsl.use.texel_width = texel_width;
    const Slice ys = slice(a.y, true, pc.m0 * N + n0, (pc.m1 - 1) * N + n1, caps);
    const Slice rs = a.residual ? slice(a.residual, false, pc.m0 * N + n0, (pc.m1 - 1) * N + n1, caps) : xs;
    push.M = pc.m1 - pc.m0;
    push.N = pc.n1 - pc.n0;
    push.n0 = uint32_t(n0);  // the bias's index
    push.x_off = xs.elem_off;
    push.w_off = wsl.elem_off;
    push.y_off = ys.elem_off;
    push.r_off = rs.elem_off;
    push.groups_n = ceil_div(push.N, plan.tile_n);
    const uint64_t total = uint64_t(ceil_div(push.M, plan.tile_m)) * push.groups_n;
    VKF_REQUIRE(total < (1ull << 32), kOp, "too many workgroups");
    push.total = uint32_t(total);
    // Absent bias and residual bind a tensor of the same type the shader never reads.
    Use bias = a.bias ? Use{a.bias, false} : wsl.use;
    r.dispatch(pipe, {xs.use, wsl.use, bias, rs.use, ys.use}, push, r.fold(total), std::string(kOp) + "/" + v.name);
  }
  return info;
}

// ---- descriptor: `vkformer kernel gemm`, bench ops, the generic op test ----

namespace {

OpCase gemm_case(Context& ctx, const OpShape& o) {
  auto D = std::make_shared<cases::Data>();
  const auto* x = &D->h(cases::random_vector(size_t(o.m * o.k), 1));
  // Block-format W: random blocks, its bias f32 (what a quantized model's linear layers have).
  const auto stored = cases::weight_tensor(ctx, *D, {o.n, o.k}, cases::random_vector(size_t(o.n * o.k), 2), o.dtype, 2);
  const std::vector<float>* w = stored.first;
  const DType bias_dtype = is_block_dtype(o.dtype) ? DType::F32 : o.dtype;
  const auto* b = &D->h(cases::as_stored(cases::random_vector(size_t(o.n), 3), bias_dtype));
  const auto* res = &D->h(cases::random_vector(size_t(o.m * o.n), 4));
  GemmArgs g;
  g.x = &D->t(ctx.tensor({o.m, o.k}, *x));
  g.w = stored.second;
  g.bias = o.bias ? &D->t(ctx.tensor({o.n}, *b, bias_dtype)) : nullptr;
  g.residual = o.residual ? &D->t(ctx.tensor({o.m, o.n}, *res)) : nullptr;
  g.y = &D->t(ctx.tensor({o.m, o.n}));
  g.act = o.act;
  // The activation is named when there is one, so that bench rows differing only in it differ.
  const std::string act = o.act == Activation::None ? "" : std::string(" ") + activation_name(o.act);
  return cases::make(D, "M=" + std::to_string(o.m) + " N=" + std::to_string(o.n) + " K=" + std::to_string(o.k) + " " +
                            dtype_name(o.dtype) + act,
                     cases::recording(gemm, g), cases::against(ctx, *g.y, [=] {
                       return ref::gemm(*x, *w, o.bias ? b : nullptr, o.residual ? res : nullptr, o.m, o.n, o.k, o.act);
                     }));
}

/// Every variant's candidates, in their search order (Variant::search_order);
/// texel reads only when the device reads the formats and X and W fit one
/// texel view each (SwiftShader: 65536 texels), or the op would refuse every
/// such candidate, one by one (recording checks the actual buffers again).
std::vector<TunedConfig> gemm_candidates(const Capabilities& c, const OpShape& s) {
  const uint64_t width = s.k % 4 == 0 ? 4 : 1;
  const bool block = is_block_dtype(s.dtype);
  // Block-format W: R32_UINT words.
  const uint64_t w_texels = block ? (weight_bytes(weight_format_of(s.dtype), uint64_t(s.n) * uint64_t(s.k)) + 3) / 4
                                  : uint64_t(s.n) * uint64_t(s.k) / width;
  const bool texel_fits = uint64_t(s.m) * uint64_t(s.k) / width <= c.max_texel_buffer_elements &&
                          w_texels <= c.max_texel_buffer_elements;
  const bool texel_formats = (block ? c.texel_u32 : s.dtype == DType::F16 ? c.texel_f16 : c.texel_f32) &&
                             c.texel_f32 && texel_fits;
  const Search search{c, s, texel_formats, std::min(c.max_workgroup_invocations, c.max_workgroup_size[0])};
  std::vector<const Variant*> order;
  for (const Variant& v : kVariants)
    if (v.candidates) order.push_back(&v);
  std::stable_sort(order.begin(), order.end(),
                   [](const Variant* x, const Variant* y) { return x->search_order < y->search_order; });
  std::vector<TunedConfig> out;
  for (const Variant* v : order) v->candidates(v->name, search, out);
  add_subgroup_sizes(c, out);
  return out;
}

OpShape gemm_shape(int64_t m, int64_t n, int64_t k, DType dt = DType::F32) {
  OpShape s;
  s.m = m, s.n = n, s.k = k, s.dtype = dt;
  return s;
}

}  // namespace

// Standard shapes: BERT-base-like layers (d 768, d_ff 3072, 128 tokens), 512³,
// and a one-token GEMV in fp32 and with fp16 weights.
VKF_OP_DESCRIPTOR(gemm) {
  return {"gemm", "Y = act(X·Wᵀ + b) + R (dtype: W and b; act, bias, residual)", gemm_variants(),
          {"WG", "BM", "BN", "BK", "TM", "TN", "VEC4", "STAGED", "ROWS", "COLS", "TEXEL", "SGS", "KU", "WM", "WN"}, {"m", "n", "k"},
          {gemm_shape(128, 3072, 768), gemm_shape(512, 512, 512), gemm_shape(128, 768, 768),
           gemm_shape(1, 3072, 768), gemm_shape(1, 3072, 768, DType::F16)},
          gemm_case, nullptr, false, gemm_candidates};
}

}  // namespace vkf
