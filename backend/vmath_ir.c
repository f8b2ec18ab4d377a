/* lanemap's own vector math (the `ir` provider): exp, log, tanh and erf
 * emitted inline as LLVM IR, so that a kernel's math is not a call.  A
 * call clobbers every vector register under the SysV ABI (no callee-saved
 * vector registers), so values live across it are spilled and constants
 * reloaded; inline, LLVM keeps them in registers and can interleave the
 * routine with the rest of the step.
 *
 * The algorithms are the textbook ones (Cody-Waite range reduction and a
 * polynomial), written for any vector width and for f32 and f64:
 *   exp:  n = rint(x / ln2), r = x - n ln2 (ln2 in two parts), e^r by its
 *         Taylor polynomial (degree 7 for f32, 13 for f64: |r| <= ln2/2),
 *         times 2^n built in two halves so that subnormal results and
 *         overflow to +inf come out right; arguments whose result
 *         rounds to 0 or overflows compute on 0 and take their result
 *         by a select.
 *   log:  x = 2^e m with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by
 *         2^24 or 2^54 first), log m = 2 atanh(s), s = (m-1)/(m+1), by the
 *         odd series of atanh (|s| <= 0.172), plus e ln2 in two parts.
 *   tanh: the Taylor series of tanh for |x| below 0.5 (f32) or 0.15 (f64),
 *         else 1 - 2/(e^{2|x|} + 1) with the sign of x.
 *   erf:  a rational function x P(x^2) / Q(x^2) of degrees 13 and 8 in x
 *         (one division, no exp), fitted to erf on [-3.92, 3.92] for the
 *         smallest relative error by bench/vmath/fit_erf.py; the argument
 *         is clamped there, where erf rounds to 1 in f32.  The fit is an
 *         f32 one: its absolute bound is too large for f64 outputs, so
 *         lm_vmath_check refuses it there.
 * NaN, infinities, zeros and the domain's edges are handled with selects.
 * tests/test_vmath.c measures each against libm's long double functions. */
#include <math.h>
#include <string.h>

#include "backend/lower.h"

typedef struct Ir {
  LLVMBuilderRef B;
  LLVMModuleRef M;
  LLVMTypeRef vt, it;  /* the float vector, the same-width integer vector */
  int f64, n;          /* element is double; lanes */
} Ir;

static LLVMValueRef fc(Ir *o, double x) {
  LLVMValueRef c = LLVMConstReal(LLVMGetElementType(o->vt), x);
  LLVMValueRef e[64];
  for (int i = 0; i < o->n; i++)
    e[i] = c;
  return LLVMConstVector(e, (unsigned)o->n);
}

static LLVMValueRef ic(Ir *o, long long x) {
  LLVMValueRef c = LLVMConstInt(LLVMGetElementType(o->it), (unsigned long long)x, 1);
  LLVMValueRef e[64];
  for (int i = 0; i < o->n; i++)
    e[i] = c;
  return LLVMConstVector(e, (unsigned)o->n);
}

static LLVMValueRef intr(Ir *o, const char *name, LLVMValueRef *args, int n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMTypeRef t = o->vt;
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(o->M, id, &t, 1);
  LLVMTypeRef ft = LLVMIntrinsicGetType(LLVMGetModuleContext(o->M), id, &t, 1);
  return LLVMBuildCall2(o->B, ft, f, args, (unsigned)n, "");
}

static LLVMValueRef fma3(Ir *o, LLVMValueRef a, LLVMValueRef b, LLVMValueRef c) {
  LLVMValueRef args[3] = {a, b, c};
  return intr(o, "llvm.fmuladd", args, 3);
}

static LLVMValueRef un(Ir *o, const char *name, LLVMValueRef a) {
  return intr(o, name, &a, 1);
}

static LLVMValueRef mul(Ir *o, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFMul(o->B, a, b, "");
}
static LLVMValueRef add(Ir *o, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFAdd(o->B, a, b, "");
}
static LLVMValueRef sub(Ir *o, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFSub(o->B, a, b, "");
}
static LLVMValueRef fdiv(Ir *o, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFDiv(o->B, a, b, "");
}
static LLVMValueRef cmp(Ir *o, LLVMRealPredicate p, LLVMValueRef a,
                        LLVMValueRef b) {
  return LLVMBuildFCmp(o->B, p, a, b, "");
}
static LLVMValueRef sel(Ir *o, LLVMValueRef c, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildSelect(o->B, c, a, b, "");
}

/* c[0] + x*(c[1] + x*(... c[n-1])) */
static LLVMValueRef horner(Ir *o, LLVMValueRef x, const double *c, int n) {
  LLVMValueRef p = fc(o, c[n - 1]);
  for (int i = n - 2; i >= 0; i--)
    p = fma3(o, p, x, fc(o, c[i]));
  return p;
}

/* 2^k for integer vector k whose biased exponent is a normal one. */
static LLVMValueRef pow2i(Ir *o, LLVMValueRef k) {
  int mbits = o->f64 ? 52 : 23, bias = o->f64 ? 1023 : 127;
  LLVMValueRef e = LLVMBuildAdd(o->B, k, ic(o, bias), "");
  return LLVMBuildBitCast(o->B, LLVMBuildShl(o->B, e, ic(o, mbits), ""), o->vt,
                          "");
}

static LLVMValueRef ir_exp(Ir *o, LLVMValueRef x) {
  /* below lo the result rounds to 0, above hi it is +inf.  Those lanes
   * compute on 0 and take their result by a select at the end: computing
   * them would make subnormal intermediates, and every instruction that
   * makes one takes a microcode assist (a masked softmax's exp(-inf) lanes
   * ran 5x slower) */
  double lo = o->f64 ? -746.0 : -104.0, hi = o->f64 ? 710.0 : 89.0;
  double ln2hi = o->f64 ? 6.93147180369123816490e-01 : 0.693145751953125;
  double ln2lo = o->f64 ? 1.90821492927058770002e-10 : 1.428606765330187e-06;
  LLVMValueRef under = cmp(o, LLVMRealOLT, x, fc(o, lo));
  LLVMValueRef over = cmp(o, LLVMRealOGT, x, fc(o, hi));
  LLVMValueRef xc = sel(o, LLVMBuildOr(o->B, under, over, ""), fc(o, 0), x);
  LLVMValueRef n = un(o, "llvm.rint", mul(o, xc, fc(o, 1.0 / M_LN2)));
  LLVMValueRef r = fma3(o, n, fc(o, -ln2hi), xc);
  r = fma3(o, n, fc(o, -ln2lo), r);
  double c[14];
  int deg = o->f64 ? 13 : 7;
  c[0] = 1;
  for (int i = 1; i <= deg; i++)
    c[i] = c[i - 1] / i;
  LLVMValueRef p = horner(o, r, c, deg + 1);
  LLVMValueRef k = LLVMBuildFPToSI(o->B, n, o->it, "");
  LLVMValueRef k1 = LLVMBuildAShr(o->B, k, ic(o, 1), "");
  LLVMValueRef k2 = LLVMBuildSub(o->B, k, k1, "");
  LLVMValueRef y = mul(o, mul(o, p, pow2i(o, k1)), pow2i(o, k2));
  y = sel(o, under, fc(o, 0), sel(o, over, fc(o, INFINITY), y));
  return sel(o, cmp(o, LLVMRealUNO, x, x), x, y);
}

static LLVMValueRef ir_log(Ir *o, LLVMValueRef x) {
  int mbits = o->f64 ? 52 : 23, bias = o->f64 ? 1023 : 127;
  double tiny = o->f64 ? 2.2250738585072014e-308 : 1.17549435e-38;
  int up = o->f64 ? 54 : 24;
  double ln2hi = o->f64 ? 6.93147180369123816490e-01 : 0.693145751953125;
  double ln2lo = o->f64 ? 1.90821492927058770002e-10 : 1.428606765330187e-06;
  /* subnormals: scale into the normal range first */
  LLVMValueRef sub_n = cmp(o, LLVMRealOLT, x, fc(o, tiny));
  LLVMValueRef xs = sel(o, sub_n, mul(o, x, fc(o, ldexp(1.0, up))), x);
  LLVMValueRef bits = LLVMBuildBitCast(o->B, xs, o->it, "");
  LLVMValueRef e = LLVMBuildSub(
      o->B, LLVMBuildLShr(o->B, bits, ic(o, mbits), ""), ic(o, bias), "");
  e = LLVMBuildSub(o->B, e, sel(o, sub_n, ic(o, up), ic(o, 0)), "");
  long long mmask = ((long long)1 << mbits) - 1;
  LLVMValueRef mb = LLVMBuildOr(o->B, LLVMBuildAnd(o->B, bits, ic(o, mmask), ""),
                                ic(o, (long long)bias << mbits), "");
  LLVMValueRef m = LLVMBuildBitCast(o->B, mb, o->vt, ""); /* [1, 2) */
  LLVMValueRef big = cmp(o, LLVMRealOGT, m, fc(o, M_SQRT2));
  m = sel(o, big, mul(o, m, fc(o, 0.5)), m);
  e = LLVMBuildAdd(o->B, e, sel(o, big, ic(o, 1), ic(o, 0)), "");
  LLVMValueRef s = fdiv(o, sub(o, m, fc(o, 1)), add(o, m, fc(o, 1)));
  LLVMValueRef z = mul(o, s, s);
  double c[11];
  int terms = o->f64 ? 10 : 5; /* z/3 + z^2/5 + ... */
  for (int i = 0; i < terms; i++)
    c[i] = 1.0 / (2 * i + 3);
  LLVMValueRef q = mul(o, z, horner(o, z, c, terms));
  LLVMValueRef s2 = add(o, s, s);
  LLVMValueRef lm = fma3(o, s2, q, s2); /* 2s + 2s*q */
  LLVMValueRef ef = LLVMBuildSIToFP(o->B, e, o->vt, "");
  LLVMValueRef y = fma3(o, ef, fc(o, ln2hi), fma3(o, ef, fc(o, ln2lo), lm));
  y = sel(o, cmp(o, LLVMRealOEQ, x, fc(o, INFINITY)), x, y);
  y = sel(o, cmp(o, LLVMRealOEQ, x, fc(o, 0)), fc(o, -INFINITY), y);
  y = sel(o, cmp(o, LLVMRealOLT, x, fc(o, 0)), fc(o, NAN), y);
  return sel(o, cmp(o, LLVMRealUNO, x, x), x, y);
}

static LLVMValueRef ir_tanh(Ir *o, LLVMValueRef x) {
  /* tanh x = x (1 + c1 x^2 + c2 x^4 + ...), Taylor */
  static const double c[] = {1.0,
                             -1.0 / 3,
                             2.0 / 15,
                             -17.0 / 315,
                             62.0 / 2835,
                             -1382.0 / 155925,
                             21844.0 / 6081075,
                             -929569.0 / 638512875};
  double thr = o->f64 ? 0.15 : 0.5;
  double sat = o->f64 ? 19.5 : 9.5; /* tanh rounds to 1 past it */
  LLVMValueRef ax = un(o, "llvm.fabs", x);
  LLVMValueRef small = mul(o, x, horner(o, mul(o, x, x), c, 8));
  LLVMValueRef axc = sel(o, cmp(o, LLVMRealOGT, ax, fc(o, sat)), fc(o, sat), ax);
  LLVMValueRef e = ir_exp(o, add(o, axc, axc));
  LLVMValueRef t = sub(o, fc(o, 1), fdiv(o, fc(o, 2), add(o, e, fc(o, 1))));
  LLVMValueRef args[2] = {t, x};
  LLVMValueRef big = intr(o, "llvm.copysign", args, 2);
  return sel(o, cmp(o, LLVMRealOLT, ax, fc(o, thr)), small, big);
}

static LLVMValueRef ir_erf(Ir *o, LLVMValueRef x) {
  /* x P(x^2) / Q(x^2), fitted by bench/vmath/fit_erf.py (relative error
   * 5.2e-8 with these coefficients in float64); the argument is clamped to
   * [-3.92, 3.92], past which erf rounds to +-1 in f32.  The clamp is two
   * ordered compares, so a NaN passes through them to the result. */
  static const double p[] = {1.12837911,     0.199918628,     0.0505725257,
                             0.00370134856,  0.000141843368,  -1.95779194e-06,
                             1.9924089e-08};
  static const double q[] = {1, 0.510504961, 0.114995956, 0.0143526858,
                             0.000955973053};
  const double c = 3.92;
  LLVMValueRef xc = sel(o, cmp(o, LLVMRealOGT, x, fc(o, c)), fc(o, c), x);
  xc = sel(o, cmp(o, LLVMRealOLT, xc, fc(o, -c)), fc(o, -c), xc);
  LLVMValueRef t = mul(o, xc, xc);
  return fdiv(o, mul(o, xc, horner(o, t, p, 7)), horner(o, t, q, 5));
}

LLVMValueRef lm_vmath_ir(LLVMBuilderRef B, LLVMModuleRef M, lm_op op,
                         LLVMValueRef a) {
  Ir o = {B, M, LLVMTypeOf(a), NULL, 0, 0};
  LLVMTypeRef et = LLVMGetElementType(o.vt);
  o.f64 = LLVMGetTypeKind(et) == LLVMDoubleTypeKind;
  o.n = (int)LLVMGetVectorSize(o.vt);
  LLVMContextRef C = LLVMGetModuleContext(M);
  o.it = LLVMVectorType(o.f64 ? LLVMInt64TypeInContext(C)
                              : LLVMInt32TypeInContext(C),
                        (unsigned)o.n);
  switch (op) {
  case LM_OP_EXP: return ir_exp(&o, a);
  case LM_OP_LOG: return ir_log(&o, a);
  case LM_OP_TANH: return ir_tanh(&o, a);
  case LM_OP_ERF: return ir_erf(&o, a);
  default: return NULL;
  }
}
