// Push constants of shaders/position_bias.comp (the macros: push/push.h).
#ifndef VKF_PUSH_POSITION_BIAS_H
#define VKF_PUSH_POSITION_BIAS_H
#include "push/push.h"

VKF_PUSH(PositionBiasPush)
  uint heads, q_len, kv_len, q_offset, max_rel, num_buckets, n;
  uint out_rs;  // elements between the output's rows (≥ kv_len)
VKF_PUSH_END(PositionBiasPush)

#endif
