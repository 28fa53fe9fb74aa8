// Push constants of shaders/masked_softmax.comp (the macros: push/push.h).
#ifndef VKF_PUSH_MASKED_SOFTMAX_H
#define VKF_PUSH_MASKED_SOFTMAX_H
#include "push/push.h"

VKF_PUSH(MaskedSoftmaxPush)
  uint rows, heads, q_len, kv_len;
  uint pad_stride, has_pad, causal, causal_offset;
  uint window;  // with causal: keys before i + causal_offset + 1 − window are masked too (0: none)
VKF_PUSH_END(MaskedSoftmaxPush)

#endif
