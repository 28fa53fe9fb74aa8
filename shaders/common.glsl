// Shared by every kernel. Include it right after #version.

// Storage type of a weight-like operand: fp16 or fp32 in memory, fp32 in registers.
#if defined(W_F16) && W_F16
#extension GL_EXT_shader_16bit_storage : require
#define WTYPE float16_t
#define WTYPE4 f16vec4
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#else
#define WTYPE float
#define WTYPE4 vec4
#endif

// Workgroups are laid out by Recorder::Impl::fold(): any number of them,
// folded into y and z when x would pass the device's limit.
uint linear_group_id() {
  return gl_WorkGroupID.x + gl_NumWorkGroups.x * (gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z);
}
