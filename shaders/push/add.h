// Push constants of shaders/add.comp (the macros: push/push.h).
#ifndef VKF_PUSH_ADD_H
#define VKF_PUSH_ADD_H
#include "push/push.h"

VKF_PUSH(AddPush)
  uint n;
VKF_PUSH_END(AddPush)

#endif
