// Push constants of shaders/rope.comp (the macros: push/push.h).
#ifndef VKF_PUSH_ROPE_H
#define VKF_PUSH_ROPE_H
#include "push/push.h"

VKF_PUSH(RopePush)
  uint groups;            // workgroups (the folded grid may have more)
  uint units;             // invocations that work: rows·hgroups·half_dim
  uint half_dim;          // rotary_dim / 2
  uint hgroups;           // groups of heads, each taken by one invocation per (row, i)
  uint hpi;               // heads per invocation
  uint heads;
  uint head_dim;
  uint col0;
  uint width;             // elements per row of x
  uint len;               // tokens per sequence
  uint pos_offset;
  uint has_position_ids;
  float scaling;
  uint interleaved;       // 1: pairs (2i, 2i+1); 0: (i, i + half_dim)
VKF_PUSH_END(RopePush)

#endif
