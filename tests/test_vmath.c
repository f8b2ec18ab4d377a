/* Vector math providers against libm's long double functions: every
 * provider's every routine, for f32 and f64, on every ISA target this
 * machine runs, through the real lowering (a one-line kernel
 * `y[r, :] = f(x[r, :])` compiled with the provider's variant).  Each
 * routine sees 2^20 sampled points over its
 * test domain (uniform, plus log-uniform magnitudes) and the edge points
 * (zeros, subnormals, the overflow and underflow thresholds, infinities,
 * NaN).  It checks:
 *   - the special values: NaN in, NaN out; an infinite result is that
 *     infinity; a finite one is finite;
 *   - the largest error, in ULP of the exact result rounded to the type,
 *     and absolute, against the routine's declaration (lm_vmath_bound_of).
 * The reference is libm's long double function (x87 extended precision),
 * good to far below an f64 ULP.  With LM_VMATH_TABLE=1 in the environment
 * the test prints the measured table that docs/backend.md shows. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/backend.h"
#include "lanemap/costmodel.h"

#define NPOINTS (1 << 20)
#define COLS 1024

typedef struct fn {
  const char *name;
  lm_op op;
  long double (*ref)(long double);
  double lo, hi;     /* uniform sampling range, f32 */
  double lo64, hi64; /* the same for f64 */
  double mag_lo; /* log-uniform magnitudes from here to max(|lo|, |hi|) */
  int positive;  /* log-uniform magnitudes positive only */
} fn;

static long double erfl_(long double x) { return erfl(x); }

static const fn fns[] = {
    {"exp", LM_OP_EXP, expl, -103.9, 88.7, -745.0, 709.7, 1e-30, 0},
    {"log", LM_OP_LOG, logl, 1e-3, 4, 1e-3, 4, 1e-45, 1},
    {"tanh", LM_OP_TANH, tanhl, -10, 10, -20, 20, 1e-30, 0},
    {"erf", LM_OP_ERF, erfl_, -5, 5, -7, 7, 1e-30, 0},
    {"sin", LM_OP_SIN, sinl, -1e4, 1e4, -1e6, 1e6, 1e-30, 0},
    {"cos", LM_OP_COS, cosl, -1e4, 1e4, -1e6, 1e6, 1e-30, 0},
};

/* splitmix64 */
static uint64_t rnd(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static double unif(uint64_t *s) { return (double)(rnd(s) >> 11) * 0x1p-53; }

/* The points for f over [lo, hi] (clipped to the routine's domain): edges
 * first, then half uniform, half log-uniform magnitudes. */
static void points(const fn *f, const lm_vmath_bound *b, lm_dtype t, double *x,
                   int n) {
  double lo = fmax(t == LM_F64 ? f->lo64 : f->lo, b->lo);
  double hi = fmin(t == LM_F64 ? f->hi64 : f->hi, b->hi);
  double big = t == LM_F64 ? DBL_MAX : FLT_MAX;
  double tiny = t == LM_F64 ? DBL_MIN : FLT_MIN;
  double den = t == LM_F64 ? 4.9406564584124654e-324 : 1.4e-45;
  double ovf = t == LM_F64 ? 709.78 : 88.72, unf = t == LM_F64 ? -745.1 : -103.97;
  double edges[] = {0,     -0.0,   tiny,  -tiny, den,    -den,  1,    -1,
                    0.5,   -0.5,   2,     -2,    big,    -big,  ovf,  ovf + 0.02,
                    unf,   unf - 1, -87.33, -708.4, INFINITY, -INFINITY, NAN,
                    lo,    hi};
  int ne = (int)(sizeof edges / sizeof edges[0]), k = 0;
  for (int i = 0; i < ne; i++)
    if ((edges[i] >= b->lo && edges[i] <= b->hi) || isnan(edges[i]))
      x[k++] = edges[i];
  uint64_t s = 0x5eed0000u + (uint64_t)f->op * 131 + (uint64_t)t;
  double mhi = fmin(fmax(fabs(lo), fabs(hi)), fmin(fabs(b->lo), fabs(b->hi)));
  if (f->positive)
    mhi = fmin(big, b->hi);
  for (int i = 0; i < k; i++) /* the edges as the type holds them */
    if (t == LM_F32)
      x[i] = (float)x[i];
  for (; k < n; k++) {
    if (k % 2) {
      x[k] = lo + (hi - lo) * unif(&s);
    } else {
      double m = exp(log(f->mag_lo) + (log(mhi) - log(f->mag_lo)) * unif(&s));
      x[k] = f->positive || (rnd(&s) & 1) ? m : -m;
    }
    if (t == LM_F32)
      x[k] = (float)x[k];
    if (isinf(x[k]) && !isinf(b->hi))
      x[k] = hi;
  }
}

/* One ULP of the exact result r rounded to type t. */
static double ulp_of(long double r, lm_dtype t) {
  double a = fabs((double)r);
  int mant = t == LM_F64 ? 52 : 23, emin = t == LM_F64 ? -1022 : -126;
  double big = t == LM_F64 ? DBL_MAX : FLT_MAX;
  if (a > big)
    a = big;
  int e = a > 0 ? ilogb(a) : emin;
  if (e < emin)
    e = emin;
  return ldexp(1.0, e - mant);
}

typedef struct meas {
  double ulp, abs; /* largest errors over finite results */
  int bad_special;  /* special values wrong */
  double worst_x;   /* where the ULP maximum is */
  int refused;      /* not legal for the type: not measured */
} meas;

static void measure_one(const fn *f, lm_math m, lm_dtype t, lm_isa isa,
                        const lm_vmath_bound *b, meas *out) {
  memset(out, 0, sizeof *out);
  /* the kernel declares its input inside the routine's fast range, so that
   * the provider is legal for it; the points fed to it go everywhere */
  char src[320], range[96] = "";
  const char *tn = t == LM_F64 ? "f64" : "f32";
  if (isfinite(b->fast_lo) && isfinite(b->fast_hi))
    snprintf(range, sizeof range, " in(%.9g, %.9g)", /* inside after rounding */
             b->fast_lo + fabs(b->fast_lo) * 1e-6, b->fast_hi - fabs(b->fast_hi) * 1e-6);
  snprintf(src, sizeof src,
           "kernel t_%s(x: %s[R, C]%s) -> (y: %s[R, C]) {\n  y[r, :] = %s(x[r, :])\n}\n",
           f->name, tn, range, tn, f->name);
  lm_error err = {0};
  lm_kernel *k;
  cr_assert_eq(lm_kernel_parse("t.lk", src, strlen(src), &k, &err), LM_OK, "%s",
               err.msg);
  int W = lm_isa_lanes(isa, t, 1);
  char vs[96];
  if (m == LM_MATH_SLEEF)
    snprintf(vs, sizeof vs, "%s/w%d/l%d/t1", lm_isa_name(isa), W, W);
  else
    snprintf(vs, sizeof vs, "%s/w%d/l%d/math=%s/t1", lm_isa_name(isa), W, W,
             lm_math_name(m));
  lm_variant v;
  cr_assert_eq(lm_variant_parse(vs, &v, &err), LM_OK, "%s: %s", vs, err.msg);
  /* the declared input range lies inside every routine's domain, so only a
   * bound too large for the type's tolerance is refused */
  if (lm_vmath_tol_share(b, t) > LM_VMATH_TOL_SHARE) {
    cr_expect_eq(lm_variant_check(k, &v, &err), LM_EINPUT, "%s", vs);
    cr_expect(strstr(err.msg, "tolerance") != NULL, "%s: %s", vs, err.msg);
    out->refused = 1;
    lm_kernel_free(k);
    return;
  }
  cr_assert_eq(lm_variant_check(k, &v, &err), LM_OK, "%s: %s", vs, err.msg);
  lm_compiled *c;
  cr_assert_eq(lm_compile(k, &v, NULL, &c, &err), LM_OK, "%s: %s", vs, err.msg);
  lm_shape sh;
  cr_assert_eq(lm_shape_bind(k, NPOINTS / COLS, COLS, NULL, &sh, &err), LM_OK);
  lm_data *d;
  cr_assert_eq(lm_data_gen(k, &sh, 1, &d, &err), LM_OK);
  double *x = malloc(sizeof *x * NPOINTS);
  points(f, b, t, x, NPOINTS);
  for (int i = 0; i < NPOINTS; i++) {
    if (t == LM_F64)
      ((double *)d->buf[0])[i] = x[i];
    else
      ((float *)d->buf[0])[i] = (float)x[i];
  }
  uint64_t *args = lm_args_pack(k, d);
  cr_assert_eq(lm_compiled_launch(c, NULL, args, NPOINTS / COLS, &err), LM_OK,
               "%s", err.msg);
  for (int i = 0; i < NPOINTS; i++) {
    double got = t == LM_F64 ? ((double *)d->buf[1])[i]
                             : (double)((float *)d->buf[1])[i];
    long double r = f->ref((long double)x[i]);
    double rt = t == LM_F64 ? (double)r : (double)(float)r; /* rounded */
    if (isnan(rt) || isinf(rt)) {
      if (isnan(rt) ? !isnan(got) : got != rt)
        out->bad_special++;
      continue;
    }
    if (!isfinite(got)) {
      out->bad_special++;
      continue;
    }
    double e = fabs((double)((long double)got - r));
    double u = e / ulp_of(r, t);
    if (u > out->ulp)
      out->ulp = u, out->worst_x = x[i];
    out->abs = fmax(out->abs, e);
  }
  free(args);
  free(x);
  lm_data_free(d);
  lm_compiled_free(c);
  lm_kernel_free(k);
}

Test(vmath, every_provider_routine_within_its_declared_bound) {
  static const lm_isa isas[] = {LM_ISA_SSE42, LM_ISA_AVX2, LM_ISA_AVX512};
  int table = getenv("LM_VMATH_TABLE") != NULL, checked = 0;
  if (table)
    printf("| provider | routine | type | ISA | max ULP | at x | max abs error | "
           "declared ULP | declared abs |\n|---|---|---|---|---:|---:|---:|---:|---:|\n");
  for (int m = 0; m < LM_MATH__COUNT; m++)
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++)
      for (int t = LM_F32; t <= LM_F64; t += LM_F64 - LM_F32) {
        lm_vmath_bound b;
        if (!lm_vmath_bound_of(m, fns[i].op, t, &b))
          continue;
        for (size_t ii = 0; ii < sizeof isas / sizeof isas[0]; ii++) {
          if (!lm_isa_runnable(isas[ii]))
            continue;
          meas r;
          measure_one(&fns[i], m, t, isas[ii], &b, &r);
          if (r.refused) {
            if (table)
              printf("| %s | %s | %s | %s | refused: %g absolute is more than "
                     "the type's tolerance allows | | | | |\n",
                     lm_math_name(m), fns[i].name, lm_dtype_name(t),
                     lm_isa_name(isas[ii]), b.abs);
            continue;
          }
          checked++;
          if (table)
            printf("| %s | %s | %s | %s | %.3f | %.6g | %.2e | %g | %g |\n",
                   lm_math_name(m), fns[i].name, lm_dtype_name(t),
                   lm_isa_name(isas[ii]), r.ulp, r.worst_x, r.abs, b.ulp, b.abs);
          cr_expect_eq(r.bad_special, 0, "%s %s %s %s: %d special values wrong",
                       lm_math_name(m), fns[i].name, lm_dtype_name(t),
                       lm_isa_name(isas[ii]), r.bad_special);
          /* a declared ULP bound holds where no absolute one is declared,
           * and the other way round */
          if (b.ulp > 0)
            cr_expect_leq(r.ulp, b.ulp, "%s %s %s %s: %.2f ULP at x = %.9g > declared %g",
                          lm_math_name(m), fns[i].name, lm_dtype_name(t),
                          lm_isa_name(isas[ii]), r.ulp, r.worst_x, b.ulp);
          if (b.abs > 0)
            cr_expect_leq(r.abs, b.abs, "%s %s %s %s: abs error %.3g > declared %g",
                          lm_math_name(m), fns[i].name, lm_dtype_name(t),
                          lm_isa_name(isas[ii]), r.abs, b.abs);
        }
      }
  cr_expect_gt(checked, 20, "only %d routines measured", checked);
}

/* ---- legality ----------------------------------------------------------- */

static lm_kernel *parse(const char *src) {
  lm_kernel *k;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_parse("t.lk", src, strlen(src), &k, &err), LM_OK, "%s",
               err.msg);
  return k;
}

static void refused(const lm_kernel *k, const char *vs, const char *why) {
  lm_variant v;
  lm_error err = {0};
  if (lm_variant_parse(vs, &v, &err) == LM_OK)
    cr_expect_eq(lm_variant_check(k, &v, &err), LM_EINPUT, "%s accepted", vs);
  cr_expect(strstr(err.msg, why) != NULL, "%s: '%s' lacks '%s'", vs, err.msg, why);
}

Test(vmath, providers_are_refused_with_the_reason) {
  int W = lm_isa_lanes(LM_ISA_SSE42, LM_F32, 1);
  char vs[96];
  lm_kernel *gelu = parse("kernel g(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                          "  y[r, :] = x[r, :] * (1 + erf(x[r, :]))\n}\n");
  lm_kernel *norm = parse("kernel n(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                          "  y[r, :] = x[r, :] * 2\n}\n");
  lm_kernel *wide = parse("kernel s(x: f32[R, C] in(-1000, 1000)) -> (y: f32[R, C]) {\n"
                          "  y[r, :] = sin(x[r, :])\n}\n");
  lm_kernel *fine = parse("kernel s(x: f32[R, C] in(-100, 100)) -> (y: f32[R, C]) {\n"
                          "  y[r, :] = sin(x[r, :])\n}\n");
  snprintf(vs, sizeof vs, "x86-64-v2/w%d/l%d/math=sleef-u35/t1", W, W);
  refused(gelu, vs, "has no f32 erf routine");
  refused(wide, vs, "outside [-392, 392]");
  lm_variant v;
  lm_error err = {0};
  cr_assert_eq(lm_variant_parse(vs, &v, &err), LM_OK);
  cr_expect_eq(lm_variant_check(fine, &v, &err), LM_OK, "%s", err.msg);
  snprintf(vs, sizeof vs, "x86-64-v2/w%d/l%d/math=mvec/t1", W, W);
  refused(norm, vs, "calls no vector math");
  /* a masked softmax's exp(z - max(z)) sees -inf: libmvec's exp would
   * leave its vector path there, SLEEF's and the inline one's do not */
  lm_kernel *soft = parse("kernel s(x: f32[R, C], m: i32[R, C] mask) -> (y: f32[R, C]) {\n"
                          "  z = where(m[r, :] != 0, x[r, :], -inf)\n"
                          "  e = exp(z - max(z))\n  y[r, :] = e / sum(e)\n}\n");
  snprintf(vs, sizeof vs, "x86-64-v2/w%d/l%d/phase=reread/math=mvec/t1", W, W);
  refused(soft, vs, "outside [-87.3, 88.7] where the routine stays on its vector path");
  snprintf(vs, sizeof vs, "x86-64-v2/w%d/l%d/phase=reread/math=ir/t1", W, W);
  cr_assert_eq(lm_variant_parse(vs, &v, &err), LM_OK);
  cr_expect_eq(lm_variant_check(soft, &v, &err), LM_OK, "%s", err.msg);
  lm_kernel_free(soft);
  snprintf(vs, sizeof vs, "x86-64-v2/w%d/l%d/math=fast/t1", W, W);
  refused(gelu, vs, "math must be sleef-u10, sleef-u35, mvec or ir");
  snprintf(vs, sizeof vs, "x86-64-v2/w%d/l%d/t1/math=ir", W, W);
  refused(gelu, vs, "unexpected field 'math=ir'");
  /* the string form round-trips, and the default provider is not written */
  const char *forms[] = {"x86-64-v2/w4/l4/math=ir/t2/dyn4", "x86-64-v2/w4/l4/t1",
                         "x86-64-v2/w4/l1/glob=gather/math=mvec/t1"};
  for (size_t i = 0; i < 3; i++) {
    char back[128];
    cr_assert_eq(lm_variant_parse(forms[i], &v, &err), LM_OK, "%s", err.msg);
    cr_expect_str_eq(lm_variant_format(&v, back, sizeof back), forms[i]);
  }
  cr_assert_eq(lm_variant_parse("x86-64-v2/w4/l4/math=sleef-u10/t1", &v, &err), LM_OK);
  cr_expect_eq(v.math, LM_MATH_SLEEF);
  lm_kernel_free(gelu), lm_kernel_free(norm), lm_kernel_free(wide),
      lm_kernel_free(fine);
}

Test(vmath, the_enumeration_offers_every_legal_provider) {
  lm_kernel *gelu = parse("kernel g(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                          "  y[r, :] = x[r, :] * (1 + erf(x[r, :]))\n}\n");
  lm_enum_opts o;
  lm_enum_defaults(&o);
  o.isa = LM_ISA_SSE42;
  lm_variant *vs;
  lm_error err = {0};
  int n = lm_variant_enumerate(gelu, &o, &vs, &err);
  int by[LM_MATH__COUNT] = {0};
  for (int i = 0; i < n; i++)
    by[vs[i].math]++;
  free(vs);
  cr_expect_gt(by[LM_MATH_SLEEF], 0);
  cr_expect_eq(by[LM_MATH_MVEC], by[LM_MATH_SLEEF], "mvec has erf");
  cr_expect_eq(by[LM_MATH_IR], by[LM_MATH_SLEEF], "ir has f32 erf");
  cr_expect_eq(by[LM_MATH_SLEEF35], 0, "sleef-u35 has no erf");
  o.maths = 1u << LM_MATH_SLEEF; /* the default provider only */
  int n1 = lm_variant_enumerate(gelu, &o, &vs, &err);
  free(vs);
  cr_expect_eq(n1, by[LM_MATH_SLEEF]);
  lm_kernel_free(gelu);
}
