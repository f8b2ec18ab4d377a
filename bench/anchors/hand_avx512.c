/* Hand-vectorized AVX-512 comparison kernels in TorchInductor's structure:
 * a row loop; a 16-lane inner loop over the columns; a reduction is one
 * read-and-reduce pass (four accumulators, so four loads are in flight),
 * a horizontal reduce, then a re-read output pass that recomputes what it
 * needs from the source rather than keeping a snapshot; tails are masked
 * loads and stores; exp and erf are SLEEF's u10 AVX-512 routines, the ones
 * the lanemap backend calls.  The arithmetic is the .lk source's, in the
 * same order and without fast-math (x / sqrt(ms + eps) is a division per
 * element, as rmsnorm.lk asks), so a difference in time is a difference in
 * code generation.  This file is compiled with -mavx512f/bw/dq/vl and
 * -ffp-contract=off (no FMA the source does not ask for); its
 * kernels are only called after anchor_hand_runnable(). */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include <sleef.h>

#include "bench/anchors/anchors.h"

/* Slot i of the args block as a pointer, a double or an int64. */
static inline void *slot_ptr(const void *args, int i) {
  return (void *)(uintptr_t)((const uint64_t *)args)[i];
}
static inline double slot_f64(const void *args, int i) {
  double v;
  memcpy(&v, (const uint64_t *)args + i, sizeof v);
  return v;
}
static inline int64_t slot_i64(const void *args, int i) {
  return (int64_t)((const uint64_t *)args)[i];
}
/* The prefix mask of n <= 16 lanes. */
static inline __mmask16 tail_mask(int64_t n) {
  return _cvtu32_mask16((uint32_t)((1ull << n) - 1u));
}

/* sum of a row: four accumulators over 64 columns, one over 16, a masked
 * tail, then the horizontal reduce. */
static inline float row_sum(const float *x, int64_t C) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t j = 0;
  for (; j + 64 <= C; j += 64) {
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + j));
    a1 = _mm512_add_ps(a1, _mm512_loadu_ps(x + j + 16));
    a2 = _mm512_add_ps(a2, _mm512_loadu_ps(x + j + 32));
    a3 = _mm512_add_ps(a3, _mm512_loadu_ps(x + j + 48));
  }
  for (; j + 16 <= C; j += 16)
    a0 = _mm512_add_ps(a0, _mm512_loadu_ps(x + j));
  if (j < C)
    a1 = _mm512_add_ps(a1, _mm512_maskz_loadu_ps(tail_mask(C - j), x + j));
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/* sum((x - mu)^2) of a row, the same loop shape; the masked tail loads
 * zeros and subtracts mu only in the active lanes. */
static inline float row_sumsq(const float *x, float mu, int64_t C) {
  __m512 m = _mm512_set1_ps(mu);
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
  int64_t j = 0;
  for (; j + 64 <= C; j += 64) {
    __m512 d0 = _mm512_sub_ps(_mm512_loadu_ps(x + j), m);
    __m512 d1 = _mm512_sub_ps(_mm512_loadu_ps(x + j + 16), m);
    __m512 d2 = _mm512_sub_ps(_mm512_loadu_ps(x + j + 32), m);
    __m512 d3 = _mm512_sub_ps(_mm512_loadu_ps(x + j + 48), m);
    a0 = _mm512_add_ps(a0, _mm512_mul_ps(d0, d0));
    a1 = _mm512_add_ps(a1, _mm512_mul_ps(d1, d1));
    a2 = _mm512_add_ps(a2, _mm512_mul_ps(d2, d2));
    a3 = _mm512_add_ps(a3, _mm512_mul_ps(d3, d3));
  }
  for (; j + 16 <= C; j += 16) {
    __m512 d = _mm512_sub_ps(_mm512_loadu_ps(x + j), m);
    a0 = _mm512_add_ps(a0, _mm512_mul_ps(d, d));
  }
  if (j < C) {
    __mmask16 t = tail_mask(C - j);
    __m512 d = _mm512_maskz_sub_ps(t, _mm512_maskz_loadu_ps(t, x + j), m);
    a1 = _mm512_add_ps(a1, _mm512_mul_ps(d, d));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
}

/* rmsnorm.lk: y = x / sqrt(sum(x*x)/C + eps) * g.  Args x, g, eps, y; R, C. */
void anchor_hand_rmsnorm(const void *args, int64_t first, int64_t count) {
  const float *x = slot_ptr(args, 0), *g = slot_ptr(args, 1);
  float eps = (float)slot_f64(args, 2);
  float *y = slot_ptr(args, 3);
  int64_t C = slot_i64(args, 5);
  for (int64_t r = first; r < first + count; r++) {
    const float *xr = x + r * C;
    float *yr = y + r * C;
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    int64_t j = 0;
    for (; j + 64 <= C; j += 64) {
      __m512 v0 = _mm512_loadu_ps(xr + j), v1 = _mm512_loadu_ps(xr + j + 16);
      __m512 v2 = _mm512_loadu_ps(xr + j + 32), v3 = _mm512_loadu_ps(xr + j + 48);
      a0 = _mm512_add_ps(a0, _mm512_mul_ps(v0, v0));
      a1 = _mm512_add_ps(a1, _mm512_mul_ps(v1, v1));
      a2 = _mm512_add_ps(a2, _mm512_mul_ps(v2, v2));
      a3 = _mm512_add_ps(a3, _mm512_mul_ps(v3, v3));
    }
    for (; j + 16 <= C; j += 16) {
      __m512 v = _mm512_loadu_ps(xr + j);
      a0 = _mm512_add_ps(a0, _mm512_mul_ps(v, v));
    }
    if (j < C) {
      __m512 v = _mm512_maskz_loadu_ps(tail_mask(C - j), xr + j);
      a1 = _mm512_add_ps(a1, _mm512_mul_ps(v, v));
    }
    float ms = _mm512_reduce_add_ps(
        _mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)));
    __m512 d = _mm512_set1_ps(sqrtf(ms / (float)C + eps));
    for (j = 0; j + 16 <= C; j += 16)
      _mm512_storeu_ps(yr + j, _mm512_mul_ps(_mm512_div_ps(_mm512_loadu_ps(xr + j), d),
                                             _mm512_loadu_ps(g + j)));
    if (j < C) {
      __mmask16 t = tail_mask(C - j);
      __m512 v = _mm512_div_ps(_mm512_maskz_loadu_ps(t, xr + j), d);
      _mm512_mask_storeu_ps(yr + j, t, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(t, g + j)));
    }
  }
}

/* layernorm.lk: mu = sum(x)/C; var = sum((x-mu)^2)/C;
 * y = (x - mu) / sqrt(var + eps) * g + b.  Args x, g, b, eps, y; R, C.
 * Two reduce passes (the kernel's centred variance), then the output. */
void anchor_hand_layernorm(const void *args, int64_t first, int64_t count) {
  const float *x = slot_ptr(args, 0), *g = slot_ptr(args, 1), *b = slot_ptr(args, 2);
  float eps = (float)slot_f64(args, 3);
  float *y = slot_ptr(args, 4);
  int64_t C = slot_i64(args, 6);
  for (int64_t r = first; r < first + count; r++) {
    const float *xr = x + r * C;
    float *yr = y + r * C;
    float mu = row_sum(xr, C) / (float)C;
    float var = row_sumsq(xr, mu, C) / (float)C;
    __m512 m = _mm512_set1_ps(mu), s = _mm512_set1_ps(sqrtf(var + eps));
    int64_t j = 0;
    for (; j + 16 <= C; j += 16) {
      __m512 d = _mm512_div_ps(_mm512_sub_ps(_mm512_loadu_ps(xr + j), m), s);
      _mm512_storeu_ps(yr + j, _mm512_add_ps(_mm512_mul_ps(d, _mm512_loadu_ps(g + j)),
                                             _mm512_loadu_ps(b + j)));
    }
    if (j < C) {
      __mmask16 t = tail_mask(C - j);
      __m512 d = _mm512_div_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(t, xr + j), m), s);
      _mm512_mask_storeu_ps(yr + j, t,
                            _mm512_add_ps(_mm512_mul_ps(d, _mm512_maskz_loadu_ps(t, g + j)),
                                          _mm512_maskz_loadu_ps(t, b + j)));
    }
  }
}

/* z = where(m != 0, x, -inf) for 16 columns; inactive tail lanes too. */
static inline __m512 masked_z(const float *x, const int32_t *m, __mmask16 t) {
  __mmask16 on = _mm512_mask_cmpneq_epi32_mask(t, _mm512_maskz_loadu_epi32(t, m),
                                               _mm512_setzero_si512());
  return _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), on, x);
}

/* masked_softmax.lk: z = where(m != 0, x, -inf); e = exp(z - max(z));
 * y = e / sum(e).  Args x, m, y; R, C.  Inductor's three loops: max, sum of
 * exp, then exp again and divide (exp(-inf) is 0 for masked columns). */
void anchor_hand_masked_softmax(const void *args, int64_t first, int64_t count) {
  const float *x = slot_ptr(args, 0);
  const int32_t *mk = slot_ptr(args, 1);
  float *y = slot_ptr(args, 2);
  int64_t C = slot_i64(args, 4);
  const __mmask16 all = _cvtu32_mask16(0xFFFFu);
  for (int64_t r = first; r < first + count; r++) {
    const float *xr = x + r * C;
    const int32_t *mr = mk + r * C;
    float *yr = y + r * C;
    __m512 ninf = _mm512_set1_ps(-INFINITY);
    __m512 m0 = ninf, m1 = ninf, m2 = ninf, m3 = ninf;
    int64_t j = 0;
    for (; j + 64 <= C; j += 64) {
      m0 = _mm512_max_ps(m0, masked_z(xr + j, mr + j, all));
      m1 = _mm512_max_ps(m1, masked_z(xr + j + 16, mr + j + 16, all));
      m2 = _mm512_max_ps(m2, masked_z(xr + j + 32, mr + j + 32, all));
      m3 = _mm512_max_ps(m3, masked_z(xr + j + 48, mr + j + 48, all));
    }
    for (; j + 16 <= C; j += 16)
      m0 = _mm512_max_ps(m0, masked_z(xr + j, mr + j, all));
    if (j < C)
      m1 = _mm512_max_ps(m1, masked_z(xr + j, mr + j, tail_mask(C - j)));
    __m512 mx = _mm512_set1_ps(
        _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m0, m1), _mm512_max_ps(m2, m3))));
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    for (j = 0; j + 32 <= C; j += 32) {
      s0 = _mm512_add_ps(s0, Sleef_expf16_u10avx512f(
                                 _mm512_sub_ps(masked_z(xr + j, mr + j, all), mx)));
      s1 = _mm512_add_ps(s1, Sleef_expf16_u10avx512f(_mm512_sub_ps(
                                 masked_z(xr + j + 16, mr + j + 16, all), mx)));
    }
    for (; j + 16 <= C; j += 16)
      s0 = _mm512_add_ps(s0, Sleef_expf16_u10avx512f(
                                 _mm512_sub_ps(masked_z(xr + j, mr + j, all), mx)));
    if (j < C)
      s1 = _mm512_add_ps(s1, Sleef_expf16_u10avx512f(_mm512_sub_ps(
                                 masked_z(xr + j, mr + j, tail_mask(C - j)), mx)));
    __m512 sum = _mm512_set1_ps(_mm512_reduce_add_ps(_mm512_add_ps(s0, s1)));
    for (j = 0; j + 16 <= C; j += 16)
      _mm512_storeu_ps(yr + j, _mm512_div_ps(Sleef_expf16_u10avx512f(_mm512_sub_ps(
                                                 masked_z(xr + j, mr + j, all), mx)),
                                             sum));
    if (j < C) {
      __mmask16 t = tail_mask(C - j);
      _mm512_mask_storeu_ps(
          yr + j, t,
          _mm512_div_ps(Sleef_expf16_u10avx512f(_mm512_sub_ps(masked_z(xr + j, mr + j, t), mx)),
                        sum));
    }
  }
}

/* gelu_residual.lk: y = 0.5 * x * (1 + erf(x * 0.7071067811865476)) + res. */
static inline __m512 gelu_res(__m512 x, __m512 res) {
  __m512 e = Sleef_erff16_u10avx512f(_mm512_mul_ps(x, _mm512_set1_ps(0.7071067811865476f)));
  return _mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), x),
                                     _mm512_add_ps(_mm512_set1_ps(1.0f), e)),
                       res);
}

/* Args x, res, y; R, C.  Elementwise: one pass, masked tail. */
void anchor_hand_gelu_residual(const void *args, int64_t first, int64_t count) {
  const float *x = slot_ptr(args, 0), *res = slot_ptr(args, 1);
  float *y = slot_ptr(args, 2);
  int64_t C = slot_i64(args, 4);
  for (int64_t r = first; r < first + count; r++) {
    const float *xr = x + r * C, *rr = res + r * C;
    float *yr = y + r * C;
    int64_t j = 0;
    for (; j + 16 <= C; j += 16)
      _mm512_storeu_ps(yr + j, gelu_res(_mm512_loadu_ps(xr + j), _mm512_loadu_ps(rr + j)));
    if (j < C) {
      __mmask16 t = tail_mask(C - j);
      _mm512_mask_storeu_ps(yr + j, t,
                            gelu_res(_mm512_maskz_loadu_ps(t, xr + j),
                                     _mm512_maskz_loadu_ps(t, rr + j)));
    }
  }
}

/* swiglu.lk: y = a * sigmoid(a) * b with sigmoid(a) = 1 / (1 + exp(-a)),
 * the expansion the backend uses. */
static inline __m512 swiglu16(__m512 a, __m512 b) {
  __m512 one = _mm512_set1_ps(1.0f);
  __m512 e = Sleef_expf16_u10avx512f(_mm512_sub_ps(_mm512_setzero_ps(), a));
  __m512 sg = _mm512_div_ps(one, _mm512_add_ps(one, e));
  return _mm512_mul_ps(_mm512_mul_ps(a, sg), b);
}

/* Args a, b, y; R, C. */
void anchor_hand_swiglu(const void *args, int64_t first, int64_t count) {
  const float *a = slot_ptr(args, 0), *b = slot_ptr(args, 1);
  float *y = slot_ptr(args, 2);
  int64_t C = slot_i64(args, 4);
  for (int64_t r = first; r < first + count; r++) {
    const float *ar = a + r * C, *br = b + r * C;
    float *yr = y + r * C;
    int64_t j = 0;
    for (; j + 16 <= C; j += 16)
      _mm512_storeu_ps(yr + j, swiglu16(_mm512_loadu_ps(ar + j), _mm512_loadu_ps(br + j)));
    if (j < C) {
      __mmask16 t = tail_mask(C - j);
      _mm512_mask_storeu_ps(yr + j, t,
                            swiglu16(_mm512_maskz_loadu_ps(t, ar + j),
                                     _mm512_maskz_loadu_ps(t, br + j)));
    }
  }
}

/* rope.lk on interleaved pairs: y[2i] = a*c - b*s, y[2i+1] = a*s + b*c with
 * a = x[2i], b = x[2i+1], c = cs[i], s = sn[i].  Args x, cs, sn, y; R, H.
 * 16 pairs per step: two loads of x, a two-source permute splits even and
 * odd lanes, and two permutes interleave the results back. */
void anchor_hand_rope(const void *args, int64_t first, int64_t count) {
  const float *x = slot_ptr(args, 0), *cs = slot_ptr(args, 1), *sn = slot_ptr(args, 2);
  float *y = slot_ptr(args, 3);
  int64_t H = slot_i64(args, 5);
  const __m512i even = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
  const __m512i odd = _mm512_setr_epi32(1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31);
  const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
  const __m512i hi = _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
  for (int64_t r = first; r < first + count; r++) {
    const float *xr = x + r * 2 * H, *cr = cs + r * H, *sr = sn + r * H;
    float *yr = y + r * 2 * H;
    for (int64_t i = 0; i < H; i += 16) {
      int64_t n = H - i < 16 ? H - i : 16; /* pairs in this step */
      __mmask16 t = tail_mask(n);
      __mmask16 t0 = tail_mask(2 * n < 16 ? 2 * n : 16);
      __mmask16 t1 = tail_mask(2 * n > 16 ? 2 * n - 16 : 0);
      __m512 x0 = _mm512_maskz_loadu_ps(t0, xr + 2 * i);
      __m512 x1 = _mm512_maskz_loadu_ps(t1, xr + 2 * i + 16);
      __m512 a = _mm512_permutex2var_ps(x0, even, x1);
      __m512 b = _mm512_permutex2var_ps(x0, odd, x1);
      __m512 c = _mm512_maskz_loadu_ps(t, cr + i), s = _mm512_maskz_loadu_ps(t, sr + i);
      __m512 ye = _mm512_sub_ps(_mm512_mul_ps(a, c), _mm512_mul_ps(b, s));
      __m512 yo = _mm512_add_ps(_mm512_mul_ps(a, s), _mm512_mul_ps(b, c));
      _mm512_mask_storeu_ps(yr + 2 * i, t0, _mm512_permutex2var_ps(ye, lo, yo));
      _mm512_mask_storeu_ps(yr + 2 * i + 16, t1, _mm512_permutex2var_ps(ye, hi, yo));
    }
  }
}
