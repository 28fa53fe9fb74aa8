// Push constants of shaders/attention_scores.comp (the macros: push/push.h).
#ifndef VKF_PUSH_ATTENTION_SCORES_H
#define VKF_PUSH_ATTENTION_SCORES_H
#include "push/push.h"

VKF_PUSH(AttentionScoresPush)
  uint heads, head_dim, q_len, kv_len;
  // Head views: where each starts, its row and batch strides (elements).
  uint q_off, q_rs, q_bs, k_off, k_rs, k_bs;
  float scale;
  uint k_blocks, q_blocks, total;  // workgroups: key blocks, query blocks, all
  uint heads_per_kv;  // query heads per K head: head h reads K head h / heads_per_kv
VKF_PUSH_END(AttentionScoresPush)

#endif
