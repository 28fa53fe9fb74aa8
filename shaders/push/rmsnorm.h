// Push constants of shaders/rmsnorm.comp (the macros: push/push.h).
#ifndef VKF_PUSH_RMSNORM_H
#define VKF_PUSH_RMSNORM_H
#include "push/push.h"

VKF_PUSH(RmsnormPush)
  uint rows;
  uint d;
  uint d4;  // vec4 units per row, ceil(d / 4)
  float eps;
VKF_PUSH_END(RmsnormPush)

#endif
