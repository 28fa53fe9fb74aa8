// Push constants of shaders/copy_rows.comp (the macros: push/push.h).
#ifndef VKF_PUSH_COPY_ROWS_H
#define VKF_PUSH_COPY_ROWS_H
#include "push/push.h"

VKF_PUSH(CopyRowsPush)
  uint src_off;      // src_row0·src_row_stride + src_col
  uint src_row;      // src row stride (elements)
  uint src_batch;    // src batch stride (elements)
  uint src_batches;  // batches that fit in src: index values are clamped below it
  uint dst_off;
  uint dst_row;
  uint dst_batch;
  uint rows;
  uint units;        // units per row (width, or width / 4 when ALIGNED)
  uint lpr;          // lanes per row
  uint rpg;          // rows side by side in a workgroup (WG / lpr, or 1)
  uint segs;         // column tiles per row tile
  uint gpb;          // workgroups per batch
  uint total;        // workgroups
  uint has_index;
VKF_PUSH_END(CopyRowsPush)

#endif
