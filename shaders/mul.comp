#version 450
// y = a ⊙ b, elementwise (T5's gated FFN: act(x·wi_0) ⊙ x·wi_1). Each
// workgroup covers ITEMS·WG elements, lanes reading neighbouring elements.
#extension GL_GOOGLE_include_directive : require
#include "lib/types.glsl"
#include "lib/grid.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint ITEMS = 4;

layout(std430, binding = 0) readonly buffer A { float a[]; };
layout(std430, binding = 1) readonly buffer B { float b[]; };
layout(std430, binding = 2) writeonly buffer Y { float y[]; };
#include "push/add.h"

void main() {
  uint base = linear_group_id() * ITEMS * gl_WorkGroupSize.x + gl_LocalInvocationID.x;
  for (uint k = 0; k < ITEMS; ++k) {
    uint i = base + k * gl_WorkGroupSize.x;
    if (i < p.n) y[i] = a[i] * b[i];
  }
}
