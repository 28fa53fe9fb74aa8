// Push constants of shaders/peak_bandwidth.comp (the macros: push/push.h).
#ifndef VKF_PUSH_PEAK_BANDWIDTH_H
#define VKF_PUSH_PEAK_BANDWIDTH_H
#include "push/push.h"

VKF_PUSH(PeakBandwidthPush)
  uint n_vec4;
  uint total_groups;
VKF_PUSH_END(PeakBandwidthPush)

#endif
