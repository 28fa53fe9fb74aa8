// Workgroups are laid out by Recorder::Impl::fold(): any number of them,
// folded into y and z when x would pass the device's limit.
#ifndef VKF_GRID_GLSL
#define VKF_GRID_GLSL

uint linear_group_id() {
  return gl_WorkGroupID.x + gl_NumWorkGroups.x * (gl_WorkGroupID.y + gl_NumWorkGroups.y * gl_WorkGroupID.z);
}

#endif
