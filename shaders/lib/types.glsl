// Compile-time switches and storage types. Every kernel includes it first,
// right after #version and GL_GOOGLE_include_directive.
#ifndef VKF_TYPES_GLSL
#define VKF_TYPES_GLSL

// Switches a variant sets with -D (shaders/shaders.cmake); without one they are
// 0. Test them only as `#if NAME`.
#ifndef USE_SUBGROUP
#define USE_SUBGROUP 0  // 1: reductions use subgroup arithmetic (lib/reduce.glsl)
#endif
#ifndef W_F16
#define W_F16 0  // 1: weight-like operands (WTYPE) are fp16 in memory
#endif
// A kernel whose other operands have their own fp16 switches (embedding.comp)
// defines ANY_F16 before including this file.
#ifndef ANY_F16
#define ANY_F16 W_F16
#endif

#extension GL_EXT_control_flow_attributes : require  // [[unroll]]
#if USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#if ANY_F16
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

// Storage type of an operand by its fp16 switch: fp16 or fp32 in memory, fp32
// in registers (convert with float()).
#define STORAGE(f16) STORAGE_(f16)
#define STORAGE_(f16) STORAGE_##f16
#define STORAGE_0 float
#define STORAGE_1 float16_t
// Its vec4 view (convert with as_vec4()). Four fp16 are read as two 32-bit
// words: half the per-lane load work of four 16-bit loads on a CPU device, the
// same bytes anywhere else; and no fp16 value outside a buffer, which would
// need the Float16 capability (arithmetic), not only 16-bit storage.
#define QUAD(f16) QUAD_(f16)
#define QUAD_(f16) QUAD_##f16
#define QUAD_0 vec4
#define QUAD_1 uvec2

#define WTYPE STORAGE(W_F16)
#define WQUAD QUAD(W_F16)

vec4 as_vec4(vec4 v) { return v; }
vec4 as_vec4(uvec2 q) { return vec4(unpackHalf2x16(q.x), unpackHalf2x16(q.y)); }

#endif
