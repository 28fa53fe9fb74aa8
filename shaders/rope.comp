#version 450
// Rotary position embedding in place, HF's rotate_half form: for each token
// (row) and i < half, with a = position·inv_freq[i] rounded to fp32 as HF's
// matmul does, c = cos(a)·scaling and s = sin(a)·scaling rounded to fp32 (HF's
// cos and sin tensors), every rotated head h gets
//   x[i] ← x[i]·c − x[i + half]·s,   x[i + half] ← x[i + half]·c + x[i]·s,
// each product and sum rounded as in PyTorch (precise: nothing fused).
// Interleaved (push flag): the pairs are (x[2i], x[2i+1]), GPT-J's layout.
// An invocation takes one (row, i, group of hpi heads): cos and sin once,
// then the heads in turn; neighbouring lanes take neighbouring columns.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"
#include "lib/trig.glsl"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer X { float x[]; };
layout(std430, binding = 1) readonly buffer F { float inv_freq[]; };
layout(std430, binding = 2) readonly buffer P { int position_ids[]; };

#include "push/rope.h"

void main() {
  const uint group = linear_group_id();
  if (group >= p.groups) return;
  const uint g = group * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  if (g >= p.units) return;
  const uint i = g % p.half_dim, rest = g / p.half_dim;
  const uint hg = rest % p.hgroups, row = rest / p.hgroups;
  // HF's position_ids.float(): an integer rounded to fp32.
  const float pos = p.has_position_ids != 0u ? float(position_ids[row]) : float(p.pos_offset + row % p.len);
  precise float angle = pos * inv_freq[i];
  const vec2 cs = trig_cos_sin(angle);
  precise float c = cs.x * p.scaling;
  precise float s = cs.y * p.scaling;
  const uint h1 = min(hg * p.hpi + p.hpi, p.heads);
  for (uint h = hg * p.hpi; h < h1; ++h) {
    const uint j = row * p.width + p.col0 + h * p.head_dim + (p.interleaved != 0u ? 2u * i : i);
    const uint j2 = j + (p.interleaved != 0u ? 1u : p.half_dim);
    const float x1 = x[j], x2 = x[j2];
    precise float y1 = x1 * c - x2 * s;
    precise float y2 = x2 * c + x1 * s;
    x[j] = y1;
    x[j2] = y2;
  }
}
