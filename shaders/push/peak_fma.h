// Push constants of shaders/peak_fma.comp (the macros: push/push.h).
#ifndef VKF_PUSH_PEAK_FMA_H
#define VKF_PUSH_PEAK_FMA_H
#include "push/push.h"

VKF_PUSH(PeakFmaPush)
  uint iters;
  uint total_groups;
  float a, b;  // x <- x·a + b
VKF_PUSH_END(PeakFmaPush)

#endif
