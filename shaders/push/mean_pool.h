// Push constants of shaders/mean_pool.comp (the macros: push/push.h).
#ifndef VKF_PUSH_MEAN_POOL_H
#define VKF_PUSH_MEAN_POOL_H
#include "push/push.h"

VKF_PUSH(MeanPoolPush)
  uint batch;
  uint len;
  uint d;
  uint d4;             // ceil(d / 4)
  uint groups_per_row; // workgroups per sequence
  uint has_mask;
  uint mask_stride;    // elements between sequences of the mask
VKF_PUSH_END(MeanPoolPush)

#endif
