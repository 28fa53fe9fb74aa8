// Push constants of shaders/flash_attention_combine.comp (the macros: push/push.h).
#ifndef VKF_PUSH_FLASH_ATTENTION_COMBINE_H
#define VKF_PUSH_FLASH_ATTENTION_COMBINE_H
#include "push/push.h"

VKF_PUSH(FlashCombinePush)
  uint heads, head_dim;
  uint row_heads;  // (batch · q_len) rows × heads
  uint splits;     // partial records per row and head
  uint total;      // row_heads · D4 invocations
VKF_PUSH_END(FlashCombinePush)

#endif
