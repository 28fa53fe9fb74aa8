// Push constants of shaders/topk.comp (the macros: push/push.h).
#ifndef VKF_PUSH_TOPK_H
#define VKF_PUSH_TOPK_H
#include "push/push.h"

VKF_PUSH(TopkPush)
  uint rows;
  uint n;
VKF_PUSH_END(TopkPush)

#endif
