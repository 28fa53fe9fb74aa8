#version 450
// One instance per vocabulary entry: a bar whose height and colour come from
// that entry's logit, read straight from the buffer vkformer wrote.
layout(std430, set = 0, binding = 0) readonly buffer Logits { float logits[]; };
layout(push_constant) uniform Push {
  uint first;  // index of the row's first logit (the last target position)
  uint count;  // vocabulary size = number of bars
} pc;
layout(location = 0) out vec3 color;

const vec2 corners[6] = vec2[](vec2(0, 0), vec2(1, 0), vec2(0, 1),
                               vec2(0, 1), vec2(1, 0), vec2(1, 1));

void main() {
  // Every vertex finds the row's range itself: 31 loads are cheaper than a pass.
  float lo = logits[pc.first], hi = lo;
  for (uint i = 1; i < pc.count; ++i) {
    float v = logits[pc.first + i];
    lo = min(lo, v);
    hi = max(hi, v);
  }
  const uint bar = gl_InstanceIndex;
  const float t = hi > lo ? (logits[pc.first + bar] - lo) / (hi - lo) : 0.5;
  const float h = 0.05 + 0.9 * t;  // fraction of the image height
  const vec2 c = corners[gl_VertexIndex];
  const float w = 2.0 / float(pc.count);
  // Vulkan's clip-space y points down: the baseline is y = +1.
  gl_Position = vec4(-1.0 + w * (float(bar) + 0.15 + 0.7 * c.x), 1.0 - 2.0 * h * c.y, 0.0, 1.0);
  color = mix(vec3(0.15, 0.35, 0.95), vec3(0.95, 0.35, 0.1), t);
}
