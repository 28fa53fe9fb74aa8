#version 450
// Top k of each row, largest first, ties to the lower index; one workgroup per row.
// Each invocation keeps a sorted top-K of its strided slice in registers, then
// K rounds of a workgroup argmax over the heads of those lists pick the result:
// the winner of a round drops its head. Values are compared as order-preserving
// uint keys so that the order is total: -0 == +0, NaN (any sign) above +inf as
// torch.topk does, -inf above the empty-slot key 0.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint K = 1;
const uint WG = gl_WorkGroupSize.x;
const uint NONE = 0xffffffffu;  // index of an empty slot (its key is 0)
#define REDUCE_ARGMAX 1
#include "lib/reduce.glsl"

layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) writeonly buffer V { float vals[]; };
layout(std430, binding = 2) writeonly buffer I { int idx[]; };
#include "push/topk.h"

uint order_key(float v) {
  uint b = floatBitsToUint(v);
  if ((b & 0x7fffffffu) > 0x7f800000u) return NONE;  // NaN
  if (b == 0x80000000u) b = 0u;                      // -0 ties with +0
  return (b & 0x80000000u) != 0u ? ~b : b | 0x80000000u;
}

uint lk[K], li[K];  // this invocation's top K, best first

void insert(uint key, uint i) {
  // Indices arrive in increasing order, so an equal key never displaces an
  // earlier one: strict comparisons keep ties at the lower index.
  if (key > lk[K - 1]) {
    // Shift-insert from the tail, every slot a select (no indirect indexing).
    for (uint j = K - 1; j > 0; --j) {
      bool above = key > lk[j - 1], here = key > lk[j];
      li[j] = above ? li[j - 1] : here ? i : li[j];
      lk[j] = above ? lk[j - 1] : here ? key : lk[j];
    }
    if (key > lk[0]) { lk[0] = key; li[0] = i; }
  }
}

void main() {
  const uint row = linear_group_id();
  if (row >= p.rows) return;  // workgroup-uniform
  const uint tid = gl_LocalInvocationID.x;
  const uint base = row * p.n;
  for (uint j = 0; j < K; ++j) { lk[j] = 0u; li[j] = NONE; }

  // Elements up to the first 16-byte boundary, then vec4 units, then the
  // rest: every invocation still sees its indices in increasing order.
  const uint head = min((4u - base % 4u) % 4u, p.n);
  const uint body4 = (p.n - head) / 4u, b4 = (base + head) / 4u;
  if (tid < head) insert(order_key(x[base + tid]), tid);
  for (uint m = 0; m * WG < body4; ++m) {  // uniform trip count
    const uint u = m * WG + tid;
    uvec4 keys = uvec4(0u);  // key 0 never enters a list
    if (u < body4) {
      vec4 v = x4[b4 + u];
      keys = uvec4(order_key(v.x), order_key(v.y), order_key(v.z), order_key(v.w));
    }
#if USE_SUBGROUP
    // Most elements fail the first comparison. A subgroup-uniform test lets
    // SIMD devices (lavapipe) branch around the insertion instead of running
    // it masked for every element (an OR, not subgroupAny: the variant only
    // asks for subgroup arithmetic).
    if (K > 1 && subgroupOr(uint(any(greaterThan(keys, uvec4(lk[K - 1]))))) == 0u) continue;
#endif
    for (uint c = 0; c < 4; ++c) insert(keys[c], head + 4u * u + c);
  }
  for (uint i = head + 4u * body4 + tid; i < p.n; i += WG) insert(order_key(x[base + i]), i);

  for (uint r = 0; r < K; ++r) {
    uint bk = lk[0], bi = li[0];
    workgroup_argmax(bk, bi);
    // n >= K guarantees a real element wins every round; indices are unique,
    // so exactly one invocation holds it.
    if (li[0] == bi) {
      for (uint j = 0; j + 1 < K; ++j) { lk[j] = lk[j + 1]; li[j] = li[j + 1]; }
      lk[K - 1] = 0u;
      li[K - 1] = NONE;
    }
    if (tid == 0) {
      vals[row * K + r] = x[base + min(bi, p.n - 1u)];
      idx[row * K + r] = int(bi);
    }
  }
}
