// Push constants of shaders/flash_attention.comp (the macros: push/push.h).
#ifndef VKF_PUSH_FLASH_ATTENTION_H
#define VKF_PUSH_FLASH_ATTENTION_H
#include "push/push.h"

VKF_PUSH(FlashAttentionPush)
  uint heads, head_dim, q_len, kv_len;
  // Head views: where each starts, its row and batch strides (elements).
  uint q_off, q_rs, q_bs, k_off, k_rs, k_bs, v_off, v_rs, v_bs;
  uint pad_stride, has_pad, causal, causal_offset;
  float scale;
  uint q_blocks, total;
  uint bias_rs;  // elements between the bias's rows (≥ kv_len)
  uint heads_per_kv;  // query heads per K/V head: head h reads K/V head h / heads_per_kv
  uint window;        // with causal: keys before i + causal_offset + 1 − window are masked too (0: none)
  uint splits, split_len;  // key ranges of split_len keys, one workgroup each (variant split; else 1, kv_len)
VKF_PUSH_END(FlashAttentionPush)


#endif
