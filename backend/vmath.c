/* Vector math providers (lm_math): who supplies exp, log, tanh, erf, sin
 * and cos for a variant, and whether a provider is legal for a kernel.
 *
 * - sleef-u10 (the default) and sleef-u35: SLEEF's ISA-specific routines
 *   of at most 1.0 and 3.5 ULP.  Debian's SLEEF 3.5.1 has no u35 exp or
 *   erf, so sleef-u35 has log, tanh, sin and cos only.
 * - mvec: glibc's libmvec, the vector-function ABI routines (_ZGV...).
 * - ir: lanemap's own routines, emitted inline as LLVM IR by the lowering
 *   (backend/vmath_ir.c): exp, log, tanh and erf.
 *
 * A call's routine is picked by the vector's byte width, so a 256-bit
 * variant on an AVX-512 target calls the AVX2 routine and an SSE4.2
 * variant never executes AVX code.  The addresses are resolved into the
 * JIT as absolute symbols.
 *
 * Every routine has a declared error bound over a declared domain
 * (lm_vmath_bound), measured by tests/test_vmath.c against libm's long
 * double functions on 2^20 points per routine plus edge points; the test fails if a routine
 * exceeds its declaration.  A provider is legal for a kernel only if it
 * has every routine the kernel calls, each call's argument range (by the
 * checker's interval arithmetic) lies inside the routine's domain, and the
 * bound uses at most LM_VMATH_TOL_SHARE of the oracle's tolerance.  A
 * provider other than the default must also keep every argument inside
 * its routine's fast range (lm_vmath_bound.fast_lo/hi): libmvec falls back
 * to scalar code for special inputs, and the cost terms are measured on
 * the vector path.  The default provider is legal wherever its bound is:
 * its own slow paths (SLEEF's large-argument reduction for sin and cos,
 * subnormal results) are left unpriced. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/lower.h"
#include "lanemap/backend.h"

/* sleef.h declares the 256- and 512-bit routines only when the including
 * file is itself compiled for AVX/AVX-512, and libmvec has no header; the
 * table only needs their addresses, so they are declared here without
 * their vector types. */
#if defined(__x86_64__)
#define DECL(name) extern void name(void);
#define SLEEF10(fn)                                                            \
  DECL(Sleef_##fn##f16_u10avx512f) DECL(Sleef_##fn##f8_u10avx2)                \
  DECL(Sleef_##fn##f4_u10sse4) DECL(Sleef_##fn##d8_u10avx512f)                 \
  DECL(Sleef_##fn##d4_u10avx2) DECL(Sleef_##fn##d2_u10sse4)
#define SLEEF35(fn)                                                            \
  DECL(Sleef_##fn##f16_u35avx512f) DECL(Sleef_##fn##f8_u35avx2)                \
  DECL(Sleef_##fn##f4_u35sse4) DECL(Sleef_##fn##d8_u35avx512f)                 \
  DECL(Sleef_##fn##d4_u35avx2) DECL(Sleef_##fn##d2_u35sse4)
#define MVEC(fn)                                                               \
  DECL(_ZGVeN16v_##fn##f) DECL(_ZGVdN8v_##fn##f) DECL(_ZGVbN4v_##fn##f)        \
  DECL(_ZGVeN8v_##fn) DECL(_ZGVdN4v_##fn) DECL(_ZGVbN2v_##fn)
SLEEF10(exp) SLEEF10(log) SLEEF10(tanh) SLEEF10(erf) SLEEF10(sin) SLEEF10(cos)
SLEEF35(log) SLEEF35(tanh) SLEEF35(sin) SLEEF35(cos)
MVEC(exp) MVEC(log) MVEC(tanh) MVEC(erf) MVEC(sin) MVEC(cos)

#define SYM(name) {#name, (void *)name}
#define SLEEF10_SYMS(fn)                                                       \
  SYM(Sleef_##fn##f16_u10avx512f), SYM(Sleef_##fn##f8_u10avx2),                \
      SYM(Sleef_##fn##f4_u10sse4), SYM(Sleef_##fn##d8_u10avx512f),             \
      SYM(Sleef_##fn##d4_u10avx2), SYM(Sleef_##fn##d2_u10sse4)
#define SLEEF35_SYMS(fn)                                                       \
  SYM(Sleef_##fn##f16_u35avx512f), SYM(Sleef_##fn##f8_u35avx2),                \
      SYM(Sleef_##fn##f4_u35sse4), SYM(Sleef_##fn##d8_u35avx512f),             \
      SYM(Sleef_##fn##d4_u35avx2), SYM(Sleef_##fn##d2_u35sse4)
#define MVEC_SYMS(fn)                                                          \
  SYM(_ZGVeN16v_##fn##f), SYM(_ZGVdN8v_##fn##f), SYM(_ZGVbN4v_##fn##f),        \
      SYM(_ZGVeN8v_##fn), SYM(_ZGVdN4v_##fn), SYM(_ZGVbN2v_##fn)

static const lm_vmath_sym table[] = {
    SLEEF10_SYMS(exp), SLEEF10_SYMS(log), SLEEF10_SYMS(tanh),
    SLEEF10_SYMS(erf), SLEEF10_SYMS(sin), SLEEF10_SYMS(cos),
    SLEEF35_SYMS(log), SLEEF35_SYMS(tanh), SLEEF35_SYMS(sin),
    SLEEF35_SYMS(cos), MVEC_SYMS(exp),    MVEC_SYMS(log),
    MVEC_SYMS(tanh),   MVEC_SYMS(erf),    MVEC_SYMS(sin),
    MVEC_SYMS(cos),    {"lm_rt_scratch", (void *)lm_rt_scratch},
};
#else
/* Another host architecture (a native AArch64 build): its JIT links the
 * runtime only.  SLEEF's and libmvec's routines there have other names and
 * widths, and AArch64 variants take math=ir (lm_variant_check). */
static const lm_vmath_sym table[] = {
    {"lm_rt_scratch", (void *)lm_rt_scratch},
};
#endif

const lm_vmath_sym *lm_vmath_symbols(int *n) {
  *n = (int)(sizeof table / sizeof table[0]);
  return table;
}

static const char *const math_names[LM_MATH__COUNT] = {"sleef-u10", "sleef-u35",
                                                       "mvec", "ir"};

const char *lm_math_name(lm_math m) {
  return (unsigned)m < LM_MATH__COUNT ? math_names[m] : "?";
}

int lm_math_lookup(const char *name) {
  for (int i = 0; i < LM_MATH__COUNT; i++)
    if (strcmp(math_names[i], name) == 0)
      return i;
  return -1;
}

static const char *fn_name(lm_op op) {
  switch (op) {
  case LM_OP_EXP: return "exp";
  case LM_OP_LOG: return "log";
  case LM_OP_TANH: return "tanh";
  case LM_OP_ERF: return "erf";
  case LM_OP_SIN: return "sin";
  case LM_OP_COS: return "cos";
  default: return NULL;
  }
}

lm_op lm_vmath_routine(lm_op op) {
  return op == LM_OP_SIGMOID ? LM_OP_EXP : fn_name(op) ? op : LM_OP__COUNT;
}

int lm_vmath_calls(const lm_kernel *k) {
  int calls = 0;
  for (int i = 0; i < k->nnodes; i++)
    calls += lm_vmath_routine(k->nodes[i].op) != LM_OP__COUNT;
  return calls;
}

/* The declared bounds.  ulp: the largest error in units in the last place
 * of the FP64 result rounded to the type; abs: the largest absolute
 * error; both over [lo, hi] (the domain where the declaration holds; the
 * whole line where the routine is right everywhere, overflow and
 * underflow included).  SLEEF's are its documented 1.0 and 3.5 ULP;
 * libmvec's and lanemap's own are what tests/test_vmath.c measured on this
 * project's Intel Xeon host, rounded up (docs/backend.md "Vector math"
 * lists the measured figures). */
typedef struct decl {
  lm_math m;
  lm_op op;
  lm_dtype t;
  lm_vmath_bound b;
} decl;

#define ALL -INFINITY, INFINITY
/* the same declaration for f32 and f64 */
#define BOTH(m, op, ...)                                                       \
  {m, LM_OP_##op, LM_F32, {__VA_ARGS__}}, {m, LM_OP_##op, LM_F64, {__VA_ARGS__}}
static const decl decls[] = {
    /* SLEEF u10: 1.0 ULP by its documentation, everywhere; this test's
     * ULP (of the exact result rounded to the type) measures tanh at just
     * above 1.0 near 0, so 1.1 is declared */
    BOTH(LM_MATH_SLEEF, EXP, ALL, 1.1, 0, ALL),
    BOTH(LM_MATH_SLEEF, LOG, ALL, 1.1, 0, ALL),
    BOTH(LM_MATH_SLEEF, TANH, ALL, 1.1, 0, ALL),
    BOTH(LM_MATH_SLEEF, ERF, ALL, 1.1, 0, ALL),
    BOTH(LM_MATH_SLEEF, SIN, ALL, 1.1, 0, ALL),
    BOTH(LM_MATH_SLEEF, COS, ALL, 1.1, 0, ALL),
    /* SLEEF u35: 3.5 ULP; its f32 sin and cos only up to |x| = 125 * pi
     * (larger arguments lose the range reduction's accuracy) */
    BOTH(LM_MATH_SLEEF35, LOG, ALL, 3.5, 0, ALL),
    BOTH(LM_MATH_SLEEF35, TANH, ALL, 3.5, 0, ALL),
    {LM_MATH_SLEEF35, LM_OP_SIN, LM_F32, {-392.0, 392.0, 3.5, 0, ALL}},
    {LM_MATH_SLEEF35, LM_OP_COS, LM_F32, {-392.0, 392.0, 3.5, 0, ALL}},
    {LM_MATH_SLEEF35, LM_OP_SIN, LM_F64, {-1e14, 1e14, 3.5, 0, ALL}},
    {LM_MATH_SLEEF35, LM_OP_COS, LM_F64, {-1e14, 1e14, 3.5, 0, ALL}},
    /* glibc libmvec 2.36: 4 ULP by glibc's documentation of the vector
     * functions; measured up to 4.00 (f32 erf, AVX-512), 4.5 declared.
     * Its fast ranges, measured with bench/vmath/run.sh: exp leaves its
     * vector path where the result under- or overflows (2.8x slower than
     * SLEEF u10 on [-200, -100]), log on subnormals (14x), sin and cos past
     * |x| of a few thousand (fast at 3000, 4.5x slower than SLEEF at
     * 20000); the f64 ranges of sin and cos are taken as the same */
    {LM_MATH_MVEC, LM_OP_EXP, LM_F32, {ALL, 4.5, 0, -87.3, 88.7}},
    {LM_MATH_MVEC, LM_OP_EXP, LM_F64, {ALL, 4.5, 0, -708.0, 709.0}},
    {LM_MATH_MVEC, LM_OP_LOG, LM_F32, {ALL, 4.5, 0, FLT_MIN, FLT_MAX}},
    {LM_MATH_MVEC, LM_OP_LOG, LM_F64, {ALL, 4.5, 0, DBL_MIN, DBL_MAX}},
    BOTH(LM_MATH_MVEC, TANH, ALL, 4.5, 0, ALL),
    BOTH(LM_MATH_MVEC, ERF, ALL, 4.5, 0, ALL),
    BOTH(LM_MATH_MVEC, SIN, ALL, 4.5, 0, -3000.0, 3000.0),
    BOTH(LM_MATH_MVEC, COS, ALL, 4.5, 0, -3000.0, 3000.0),
    /* lanemap's IR routines: measured on x86-64-v2/v3/v4 (exp 1.18, log
     * 1.94, tanh 1.93 and 6.44 for f64 ULP; erf 3.9e-7 absolute near
     * |x| = 3.9, the fit's 5.2e-8 relative plus f32 rounding), everywhere */
    BOTH(LM_MATH_IR, EXP, ALL, 1.5, 0, ALL),
    BOTH(LM_MATH_IR, LOG, ALL, 2.5, 0, ALL),
    {LM_MATH_IR, LM_OP_TANH, LM_F32, {ALL, 2.5, 0, ALL}},
    {LM_MATH_IR, LM_OP_TANH, LM_F64, {ALL, 8, 0, ALL}},
    BOTH(LM_MATH_IR, ERF, ALL, 0, 5e-7, ALL),
};

int lm_vmath_bound_of(lm_math m, lm_op op, lm_dtype t, lm_vmath_bound *out) {
  op = lm_vmath_routine(op);
  for (size_t i = 0; i < sizeof decls / sizeof decls[0]; i++)
    if (decls[i].m == m && decls[i].op == op && decls[i].t == t) {
      if (out)
        *out = decls[i].b;
      return 1;
    }
  return 0;
}

double lm_vmath_tol_share(const lm_vmath_bound *b, lm_dtype t) {
  double eps = t == LM_F64 ? DBL_EPSILON : FLT_EPSILON; /* 2^-52, 2^-23 */
  /* |err| <= ulp * eps * |want| is at most ulp * eps / rtol of the
   * tolerance atol + rtol * |want|; |err| <= abs at most abs / atol */
  double by_ulp = b->ulp > 0 ? b->ulp * eps / lm_oracle_rtol(t) : INFINITY;
  double by_abs = b->abs > 0 ? b->abs / lm_oracle_atol(t) : INFINITY;
  return fmin(by_ulp, by_abs);
}

lm_status lm_vmath_check(const lm_kernel *k, lm_math m, lm_error *err) {
  if ((unsigned)m >= LM_MATH__COUNT)
    return lm_error_set(err, LM_EINPUT, "unknown math provider %d", (int)m);
  if (!lm_vmath_calls(k))
    return m == LM_MATH_SLEEF
               ? LM_OK
               : lm_error_set(err, LM_EINPUT,
                              "kernel %s calls no vector math: math does not "
                              "apply",
                              k->name);
  double *lo = malloc(sizeof *lo * (size_t)k->nnodes * 2);
  if (!lo)
    return lm_error_set(err, LM_ESYS, "out of memory");
  double *hi = lo + k->nnodes;
  lm_kernel_ranges(k, lo, hi);
  lm_status s = LM_OK;
  for (int i = 0; i < k->nnodes && s == LM_OK; i++) {
    const lm_node *n = &k->nodes[i];
    lm_op op = lm_vmath_routine(n->op);
    if (op == LM_OP__COUNT)
      continue;
    lm_vmath_bound b;
    if (!lm_vmath_bound_of(m, op, n->dtype, &b)) {
      s = lm_error_set(err, LM_EINPUT,
                       "math=%s has no %s %s routine (kernel %s, %d:%d)",
                       lm_math_name(m), lm_dtype_name(n->dtype), fn_name(op),
                       k->name, n->loc.line, n->loc.col);
      break;
    }
    /* the argument: sigmoid calls exp(-a) */
    double alo = lo[n->a], ahi = hi[n->a];
    if (n->op == LM_OP_SIGMOID)
      alo = -hi[n->a], ahi = -lo[n->a];
    /* inside the domain; and for a provider other than the default,
     * inside the fast range too */
    double rlo = b.lo, rhi = b.hi;
    const char *why = "where its error bound holds";
    if (alo >= b.lo && ahi <= b.hi && m != LM_MATH_SLEEF) {
      rlo = b.fast_lo, rhi = b.fast_hi;
      why = "where the routine stays on its vector path (past it, it falls "
            "back to slower code, which no cost term prices)";
    }
    if (alo < rlo || ahi > rhi) {
      s = lm_error_set(err, LM_EINPUT,
                       "math=%s: %s's argument is in [%.3g, %.3g] (kernel %s, "
                       "%d:%d), outside [%.3g, %.3g] %s",
                       lm_math_name(m), fn_name(op), alo, ahi, k->name,
                       n->loc.line, n->loc.col, rlo, rhi, why);
      break;
    }
    double share = lm_vmath_tol_share(&b, n->dtype);
    if (share > LM_VMATH_TOL_SHARE)
      s = lm_error_set(err, LM_EINPUT,
                       "math=%s: %s %s's error bound (%.3g ULP, %.3g absolute) "
                       "is %.3g of the oracle's %s tolerance, more than %.3g "
                       "(kernel %s, %d:%d)",
                       lm_math_name(m), lm_dtype_name(n->dtype), fn_name(op),
                       b.ulp, b.abs, share, lm_dtype_name(n->dtype),
                       LM_VMATH_TOL_SHARE, k->name, n->loc.line, n->loc.col);
  }
  free(lo);
  return s;
}

const char *lm_vmath_name(lm_math m, lm_op op, lm_dtype t, int w) {
  const char *fn = fn_name(op);
  if (!fn || m == LM_MATH_IR || !lm_vmath_bound_of(m, op, t, NULL))
    return NULL;
  int bytes = w * (t == LM_F64 ? 8 : 4);
  static _Thread_local char name[64];
  if (m == LM_MATH_MVEC) /* the vector-function ABI: b SSE, d AVX2, e AVX-512 */
    snprintf(name, sizeof name, "_ZGV%cN%dv_%s%s",
             bytes == 64 ? 'e' : bytes == 32 ? 'd' : 'b', w, fn,
             t == LM_F64 ? "" : "f");
  else
    snprintf(name, sizeof name, "Sleef_%s%c%d_%s%s", fn,
             t == LM_F64 ? 'd' : 'f', w, m == LM_MATH_SLEEF35 ? "u35" : "u10",
             bytes == 64 ? "avx512f" : bytes == 32 ? "avx2" : "sse4");
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(table[i].name, name) == 0)
      return table[i].name;
  return NULL;
}
