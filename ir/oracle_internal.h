/* Shared by the oracle's three files (datagen.c, oracle.c, compare.c):
 * reading and writing one element of a native buffer as a double, and the
 * integer rules the interpreter and the generator agree on.  Not a public
 * header; nothing outside ir/oracle*.c, datagen.c and compare.c includes
 * it. */
#ifndef LANEMAP_IR_ORACLE_INTERNAL_H
#define LANEMAP_IR_ORACLE_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "lanemap/ir.h"

/* Element i of a native buffer, widened to double (exact for every dtype). */
static inline double elem_get(const void *buf, lm_dtype t, int64_t i) {
  switch (t) {
  case LM_F32:
    return ((const float *)buf)[i];
  case LM_F64:
    return ((const double *)buf)[i];
  case LM_I32:
    return ((const int32_t *)buf)[i];
  case LM_BOOL: /* one byte, as lm_dtype_size says */
    return ((const uint8_t *)buf)[i];
  }
  return 0;
}

/* Double to int32 with truncation toward zero.  NaN and values outside the
 * int32 range give INT32_MIN, the value x86's cvttsd2si/cvttps2dq produce,
 * so the rule is defined (a plain C cast would be undefined). */
static inline int32_t elem_to_i32(double v) {
  if (!(v > -2147483649.0 && v < 2147483648.0))
    return INT32_MIN;
  return (int32_t)v;
}

/* Store v as element i in the buffer's dtype: f32 rounds to nearest, i32
 * truncates as elem_to_i32. */
static inline void elem_put(void *buf, lm_dtype t, int64_t i, double v) {
  switch (t) {
  case LM_F32:
    ((float *)buf)[i] = (float)v;
    break;
  case LM_F64:
    ((double *)buf)[i] = v;
    break;
  case LM_I32:
    ((int32_t *)buf)[i] = elem_to_i32(v);
    break;
  case LM_BOOL:
    ((uint8_t *)buf)[i] = v != 0;
    break;
  }
}

/* Int32 wrap-around of an exact int64 result (two's complement). */
static inline int32_t elem_wrap32(int64_t v) {
  return (int32_t)(uint32_t)(uint64_t)v;
}

#endif
