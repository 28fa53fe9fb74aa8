// Push constants of shaders/gemm_tiled.comp and gemm_vec.comp (the macros: push/push.h).
#ifndef VKF_PUSH_GEMM_H
#define VKF_PUSH_GEMM_H
#include "push/push.h"

VKF_PUSH(GemmPush)
  uint M, N, K;
  uint groups_n;  // workgroups along N
  uint total;     // workgroups
  uint flags;     // 1: add bias, 2: add residual (the activation is specialized)
  // A piece of a product too large for one binding (gemm.cpp): M and N are the
  // piece's, ldy is Y's row length, n0 the piece's first column, *_off where
  // the piece starts in each binding (elements; multiples of 4 when VEC4).
  uint ldy, n0, x_off, w_off, y_off, r_off;
  // Split-K (staged tiles and coopmat only; 1 and K elsewhere): workgroup g
  // sums K's chunk g / (total / ksplit), kchunk long, into rows of its own
  // [ksplit·M, N] block of Y, which gemm_splitk_reduce.comp adds up.
  uint ksplit, kchunk;
VKF_PUSH_END(GemmPush)

#endif
