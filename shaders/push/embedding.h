// Push constants of shaders/embedding.comp (the macros: push/push.h).
#ifndef VKF_PUSH_EMBEDDING_H
#define VKF_PUSH_EMBEDDING_H
#include "push/push.h"

VKF_PUSH(EmbeddingPush)
  uint rows;  // batch · len
  uint len;
  uint d;
  uint d4;    // ceil(d / 4)
  uint vocab;
  uint pos_offset;
  uint has_pos;
  uint groups_per_row;
  float scale;
  uint has_pos_ids;
  uint max_pos;  // rows of positions
  // The table rows this dispatch binds (all of them unless the table is larger
  // than one binding): [v0, v1), starting at element t_off of the binding.
  uint v0, v1, t_off;
VKF_PUSH_END(EmbeddingPush)

#endif
