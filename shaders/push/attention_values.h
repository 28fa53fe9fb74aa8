// Push constants of shaders/attention_values.comp (the macros: push/push.h).
#ifndef VKF_PUSH_ATTENTION_VALUES_H
#define VKF_PUSH_ATTENTION_VALUES_H
#include "push/push.h"

VKF_PUSH(AttentionValuesPush)
  uint heads, head_dim, q_len, kv_len;
  uint v_off, v_rs, v_bs;  // the value head view: start, row and batch strides (elements)
  uint q_blocks, total;
  uint heads_per_kv;  // query heads per V head: head h reads V head h / heads_per_kv
VKF_PUSH_END(AttentionValuesPush)

#endif
