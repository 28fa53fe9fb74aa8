// Push constants of shaders/l2_normalize.comp (the macros: push/push.h).
#ifndef VKF_PUSH_L2_NORMALIZE_H
#define VKF_PUSH_L2_NORMALIZE_H
#include "push/push.h"

VKF_PUSH(L2NormalizePush)
  uint rows;
  uint d;
  float eps;
VKF_PUSH_END(L2NormalizePush)

#endif
