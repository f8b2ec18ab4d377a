/* Vector math: the lowering calls SLEEF's ISA-specific routines (u10: at
 * most 1.0 ULP), which are well inside the oracle tolerance, and resolves
 * them into the JIT by address.  The routine is picked by the vector's
 * byte width, so a 256-bit variant on an AVX-512 target calls the AVX2
 * routine and an SSE4.2 variant never executes AVX code.  sqrt and 1/sqrt
 * use the hardware square root (correctly rounded); sigmoid is expanded as
 * 1/(1+exp(-x)) around the vector exp. */
#include <stdio.h>
#include <string.h>

#include "backend/lower.h"

/* sleef.h declares the 256- and 512-bit routines only when the including
 * file is itself compiled for AVX/AVX-512; the table only needs their
 * addresses, so they are declared here without their vector types. */
#define DECL(fn, sfx) extern void Sleef_##fn##sfx(void);
#define DECLW(fn)                                                              \
  DECL(fn, f16_u10avx512f) DECL(fn, f8_u10avx2) DECL(fn, f4_u10sse4)           \
  DECL(fn, d8_u10avx512f) DECL(fn, d4_u10avx2) DECL(fn, d2_u10sse4)
DECLW(exp) DECLW(log) DECLW(tanh) DECLW(erf) DECLW(sin) DECLW(cos)

#define SYM(fn, sfx) {"Sleef_" #fn #sfx, (void *)Sleef_##fn##sfx}
#define ALLW(fn)                                                                \
  SYM(fn, f16_u10avx512f), SYM(fn, f8_u10avx2), SYM(fn, f4_u10sse4),           \
      SYM(fn, d8_u10avx512f), SYM(fn, d4_u10avx2), SYM(fn, d2_u10sse4)

static const lm_vmath_sym table[] = {
    ALLW(exp), ALLW(log), ALLW(tanh), ALLW(erf), ALLW(sin), ALLW(cos),
    {"lm_rt_scratch", (void *)lm_rt_scratch},
};

const lm_vmath_sym *lm_vmath_symbols(int *n) {
  *n = (int)(sizeof table / sizeof table[0]);
  return table;
}

const char *lm_vmath_name(lm_op op, lm_dtype t, int w, lm_isa isa) {
  (void)isa;
  const char *fn;
  switch (op) {
  case LM_OP_EXP: fn = "exp"; break;
  case LM_OP_LOG: fn = "log"; break;
  case LM_OP_TANH: fn = "tanh"; break;
  case LM_OP_ERF: fn = "erf"; break;
  case LM_OP_SIN: fn = "sin"; break;
  case LM_OP_COS: fn = "cos"; break;
  default: return NULL;
  }
  int bytes = w * (t == LM_F64 ? 8 : 4);
  const char *sfx = bytes == 64 ? "avx512f" : bytes == 32 ? "avx2" : "sse4";
  static _Thread_local char name[64];
  snprintf(name, sizeof name, "Sleef_%s%c%d_u10%s", fn, t == LM_F64 ? 'd' : 'f',
           w, sfx);
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(table[i].name, name) == 0)
      return table[i].name;
  return NULL;
}
