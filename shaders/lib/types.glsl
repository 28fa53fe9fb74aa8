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
#ifndef WQ
#define WQ 0  // 1..5: the weights are blocks of a GGUF format, read as words (lib/quant.glsl)
#endif
// A kernel whose other operands have their own fp16 switches (embedding.comp)
// defines ANY_F16 before including this file.
#ifndef ANY_F16
#define ANY_F16 W_F16
#endif
// 1: fp16 operands are read as 32-bit words holding two halves each and
// unpacked with unpackHalf2x16, for devices without 16-bit storage (every f16
// variant has such a *_packed twin, cmake/ops.cmake). The bytes in memory are
// the same; only the loads differ.
#ifndef F16_PACKED
#define F16_PACKED 0
#endif

#extension GL_EXT_control_flow_attributes : require  // [[unroll]]
#if USE_SUBGROUP
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif
#if ANY_F16 && !F16_PACKED
#extension GL_EXT_shader_16bit_storage : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif

// Storage type of an operand by its fp16 switch: fp16 or fp32 in memory, fp32
// in registers (convert with float()).
#define STORAGE(f16) STORAGE_(f16)
#define STORAGE_(f16) STORAGE_##f16
#define STORAGE_0 float
#if F16_PACKED
// A struct, not a uint, so that a load that forgets AT() fails to compile
// instead of converting the word to a float.
struct f16x2 { uint bits; };
#define STORAGE_1 f16x2
#else
#define STORAGE_1 float16_t
#endif
// Its vec4 view (convert with as_vec4()). Four fp16 are read as two 32-bit
// words: half the per-lane load work of four 16-bit loads on a CPU device, the
// same bytes anywhere else; and no fp16 value outside a buffer, which would
// need the Float16 capability (arithmetic), not only 16-bit storage.
#define QUAD(f16) QUAD_(f16)
#define QUAD_(f16) QUAD_##f16
#define QUAD_0 vec4
#define QUAD_1 uvec2

#if WQ
#define WTYPE uint  // words of blocks, decoded by lib/quant.glsl
#define WQUAD uint
#else
#define WTYPE STORAGE(W_F16)
#define WQUAD QUAD(W_F16)
#endif

vec4 as_vec4(vec4 v) { return v; }
vec4 as_vec4(uvec2 q) { return vec4(unpackHalf2x16(q.x), unpackHalf2x16(q.y)); }

// Element i of an array of STORAGE(f16), as a float: AT(W_F16, w, i).
#define AT(f16, ARR, i) AT_(f16, ARR, i)
#define AT_(f16, ARR, i) AT_##f16(ARR, i)
#define AT_0(ARR, i) float(ARR[i])
#if F16_PACKED
#define AT_1(ARR, i) half_at(ARR[(i) >> 1u], (i))
float half_at(f16x2 w, uint i) { return unpackHalf2x16(w.bits)[i & 1u]; }
#else
#define AT_1(ARR, i) float(ARR[i])
#endif

#endif
