// Workgroup reductions: every invocation calls them, in the same order, with
// workgroup-uniform control flow, and every invocation gets the result.
//
// Include after `layout(local_size_x_id = 0) in;`, with REDUCE_FLOAT (sum,
// max) and/or REDUCE_ARGMAX defined to 1: each brings its shared scratch, and
// shared arrays count against the device's limit even when unused.
//
// USE_SUBGROUP 1: subgroup arithmetic, then one slot per subgroup in shared
// memory; with a single subgroup the subgroup's result is the workgroup's and
// no barrier is taken (CPU devices switch per barrier). USE_SUBGROUP 0: a
// tree over shared memory (any workgroup size).
//
// The scratch has two halves used in turn, so a reduction never writes the
// half the previous one may still be reading, and none needs a barrier after
// its last read. Kernels that finish many sums at once keep their own form
// (gemm_vec.comp).
#ifndef VKF_REDUCE_GLSL
#define VKF_REDUCE_GLSL

#ifndef REDUCE_FLOAT
#define REDUCE_FLOAT 0
#endif
#ifndef REDUCE_ARGMAX
#define REDUCE_ARGMAX 0
#endif

const uint RED_WG = gl_WorkGroupSize.x;
// The tree's first stride, half the next power of two >= RED_WG (0 for one
// invocation): a constant once specialized, so the compiler can unroll the tree.
const uint RED_S0 = RED_WG - 1u;
const uint RED_S1 = RED_S0 | (RED_S0 >> 1u);
const uint RED_S2 = RED_S1 | (RED_S1 >> 2u);
const uint RED_S3 = RED_S2 | (RED_S2 >> 4u);
const uint RED_S4 = RED_S3 | (RED_S3 >> 8u);
const uint RED_TREE = ((RED_S4 | (RED_S4 >> 16u)) + 1u) >> 1u;

#if REDUCE_FLOAT
shared float red_f[2 * RED_WG];
uint red_f_half = 0;  // the same in every invocation: they make the same calls

float red_combine(float a, float b, bool is_max) { return is_max ? max(a, b) : a + b; }

float workgroup_reduce(float v, bool is_max) {
#if USE_SUBGROUP
  v = is_max ? subgroupMax(v) : subgroupAdd(v);
  if (gl_NumSubgroups == 1) return v;  // uniform
  const uint base = red_f_half * RED_WG;
  red_f_half ^= 1u;
  if (subgroupElect()) red_f[base + gl_SubgroupID] = v;
  barrier();
  // Every invocation combines the partials in the same order: the same bits.
  v = red_f[base];
  for (uint s = 1; s < gl_NumSubgroups; ++s) v = red_combine(v, red_f[base + s], is_max);
  return v;
#else
  const uint base = red_f_half * RED_WG, t = gl_LocalInvocationID.x;
  red_f_half ^= 1u;
  red_f[base + t] = v;
  barrier();
  for (uint h = RED_TREE; h > 0; h >>= 1) {
    if (t < h && t + h < RED_WG) red_f[base + t] = red_combine(red_f[base + t], red_f[base + t + h], is_max);
    barrier();
  }
  return red_f[base];
#endif
}

float workgroup_sum(float v) { return workgroup_reduce(v, false); }
float workgroup_max(float v) { return workgroup_reduce(v, true); }
#endif

#if REDUCE_ARGMAX
shared uint red_key[2 * RED_WG], red_idx[2 * RED_WG];
uint red_arg_half = 0;

// A larger key wins; equal keys go to the lower index.
bool argmax_better(uint ka, uint ia, uint kb, uint ib) { return ka > kb || (ka == kb && ia < ib); }

// (key, idx) becomes the workgroup's best pair. Indices must be unique among
// invocations holding the best key (0xffffffff is the largest, for empties).
void workgroup_argmax(inout uint key, inout uint idx) {
#if USE_SUBGROUP
  const uint bk = subgroupMax(key);
  idx = subgroupMin(key == bk ? idx : 0xffffffffu);
  key = bk;
  if (gl_NumSubgroups == 1) return;  // uniform
  const uint base = red_arg_half * RED_WG;
  red_arg_half ^= 1u;
  if (subgroupElect()) {
    red_key[base + gl_SubgroupID] = key;
    red_idx[base + gl_SubgroupID] = idx;
  }
  barrier();
  key = red_key[base];
  idx = red_idx[base];
  for (uint s = 1; s < gl_NumSubgroups; ++s)
    if (argmax_better(red_key[base + s], red_idx[base + s], key, idx)) {
      key = red_key[base + s];
      idx = red_idx[base + s];
    }
#else
  const uint base = red_arg_half * RED_WG, t = gl_LocalInvocationID.x;
  red_arg_half ^= 1u;
  red_key[base + t] = key;
  red_idx[base + t] = idx;
  barrier();
  for (uint h = RED_TREE; h > 0; h >>= 1) {
    if (t < h && t + h < RED_WG &&
        argmax_better(red_key[base + t + h], red_idx[base + t + h], red_key[base + t], red_idx[base + t])) {
      red_key[base + t] = red_key[base + t + h];
      red_idx[base + t] = red_idx[base + t + h];
    }
    barrier();
  }
  key = red_key[base];
  idx = red_idx[base];
#endif
}
#endif

#endif
