// Push constants of shaders/layernorm.comp (the macros: push/push.h).
#ifndef VKF_PUSH_LAYERNORM_H
#define VKF_PUSH_LAYERNORM_H
#include "push/push.h"

VKF_PUSH(LayernormPush)
  uint rows;
  uint d;
  uint d4;  // vec4 units per row, ceil(d / 4)
  float eps;
  uint has_residual;
VKF_PUSH_END(LayernormPush)

#endif
