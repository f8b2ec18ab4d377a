/* Plain scalar C comparison kernels: the loops a user writes for each
 * operator, with float accumulators and libm's expf/erff, in the .lk
 * source's arithmetic.  CMake compiles this file twice with clang-19 -O3
 * -march=native: once as is (ANCHOR_PREFIX anchor_plain_; IEEE semantics,
 * so the reductions stay sequential and are not vectorized), and once with
 * -ffast-math (anchor_fast_), which lets clang reassociate the reductions
 * into vector partial sums: that rounds differently from the source order. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "bench/anchors/anchors.h"

#ifndef ANCHOR_PREFIX
#error "compile with -DANCHOR_PREFIX=anchor_plain_ or anchor_fast_"
#endif
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define NAME(op) CAT(ANCHOR_PREFIX, op)

#define PTR(i) ((void *)(uintptr_t)((const uint64_t *)args)[i])
#define I64(i) ((int64_t)((const uint64_t *)args)[i])
static double f64_at(const void *args, int i) {
  double v;
  memcpy(&v, (const uint64_t *)args + i, sizeof v);
  return v;
}

void NAME(rmsnorm)(const void *args, int64_t first, int64_t count) {
  const float *x = PTR(0), *g = PTR(1);
  float eps = (float)f64_at(args, 2), *y = PTR(3);
  int64_t C = I64(5);
  for (int64_t r = first; r < first + count; r++) {
    const float *xr = x + r * C;
    float ms = 0;
    for (int64_t j = 0; j < C; j++)
      ms += xr[j] * xr[j];
    float d = sqrtf(ms / (float)C + eps);
    for (int64_t j = 0; j < C; j++)
      y[r * C + j] = xr[j] / d * g[j];
  }
}

void NAME(layernorm)(const void *args, int64_t first, int64_t count) {
  const float *x = PTR(0), *g = PTR(1), *b = PTR(2);
  float eps = (float)f64_at(args, 3), *y = PTR(4);
  int64_t C = I64(6);
  for (int64_t r = first; r < first + count; r++) {
    const float *xr = x + r * C;
    float s = 0, v = 0;
    for (int64_t j = 0; j < C; j++)
      s += xr[j];
    float mu = s / (float)C;
    for (int64_t j = 0; j < C; j++)
      v += (xr[j] - mu) * (xr[j] - mu);
    float sd = sqrtf(v / (float)C + eps);
    for (int64_t j = 0; j < C; j++)
      y[r * C + j] = (xr[j] - mu) / sd * g[j] + b[j];
  }
}

/* Masked columns are skipped rather than set to -inf, so the loop stays
 * defined under -ffast-math (which assumes no infinities); the generator
 * keeps one unmasked column per row, so mx is always set. */
void NAME(masked_softmax)(const void *args, int64_t first, int64_t count) {
  const float *x = PTR(0);
  const int32_t *m = PTR(1);
  float *y = PTR(2);
  int64_t C = I64(4);
  for (int64_t r = first; r < first + count; r++) {
    const float *xr = x + r * C;
    const int32_t *mr = m + r * C;
    float *yr = y + r * C;
    float mx = -FLT_MAX, s = 0;
    for (int64_t j = 0; j < C; j++)
      if (mr[j] != 0 && xr[j] > mx)
        mx = xr[j];
    for (int64_t j = 0; j < C; j++) {
      yr[j] = mr[j] != 0 ? expf(xr[j] - mx) : 0.0f;
      s += yr[j];
    }
    for (int64_t j = 0; j < C; j++)
      yr[j] = yr[j] / s;
  }
}

void NAME(gelu_residual)(const void *args, int64_t first, int64_t count) {
  const float *x = PTR(0), *res = PTR(1);
  float *y = PTR(2);
  int64_t C = I64(4);
  for (int64_t i = first * C; i < (first + count) * C; i++)
    y[i] = 0.5f * x[i] * (1 + erff(x[i] * 0.7071067811865476f)) + res[i];
}

void NAME(swiglu)(const void *args, int64_t first, int64_t count) {
  const float *a = PTR(0), *b = PTR(1);
  float *y = PTR(2);
  int64_t C = I64(4);
  for (int64_t i = first * C; i < (first + count) * C; i++)
    y[i] = a[i] * (1 / (1 + expf(-a[i]))) * b[i];
}

void NAME(rope)(const void *args, int64_t first, int64_t count) {
  const float *x = PTR(0), *cs = PTR(1), *sn = PTR(2);
  float *y = PTR(3);
  int64_t H = I64(5);
  for (int64_t r = first; r < first + count; r++)
    for (int64_t i = 0; i < H; i++) {
      float a = x[r * 2 * H + 2 * i], b = x[r * 2 * H + 2 * i + 1];
      float c = cs[r * H + i], s = sn[r * H + i];
      y[r * 2 * H + 2 * i] = a * c - b * s;
      y[r * 2 * H + 2 * i + 1] = a * s + b * c;
    }
}
