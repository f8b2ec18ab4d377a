/* The difftest generator and checker.
 *
 * A generated kernel is a random DAG written as `.lk` source: a few named
 * values (tiles and uniforms, so later values reuse earlier ones across
 * reductions and the kernel needs several column loops, with snapshot
 * tiles), then one to three outputs (row stores, strided views of one
 * output, per-row stores).  The inputs are drawn from 2-D buffers (possibly
 * strided, `x[r, s::T]` of `[R, T*H]`), per-column vectors, per-row values,
 * scalars, a mask and a rowlen, and the kernel is f32 or f64.
 *
 * The point is that a mismatch must mean a miscompile, so every expression
 * carries a bound on its magnitude and the generator keeps the values well
 * conditioned by construction:
 *   - magnitudes stay below CAP (a larger value is squashed with tanh or
 *     scaled by a power of two), so rounding errors of f32 stay far below
 *     atol = rtol = 5e-5;
 *   - math functions only see their safe domains: exp of a value clamped to
 *     [-4, 4], log of x*x + 1 or |x| + 1, sqrt and rsqrt of x*x + 0.5,
 *     negative powers of |x| + 1, division only by |x| + 1, sqrt(x*x + 0.5)
 *     or 1 + exp(...);
 *   - reductions are means (sum / N), max and min, or softmax denominators
 *     (sum of exp(t - max t), at least 1 on a non-empty row);
 *   - comparisons (in `where`) only look at exact values: loads, abs, neg,
 *     halving, elementwise and row max/min of those, the column index and
 *     the mask, against dyadic constants, so f32 code and the FP64 oracle
 *     always take the same branch;
 *   - with ragged rows, a per-row output never depends on a max or min
 *     reduction (it is infinite on an empty row, and inf arithmetic on
 *     values near zero is sign-sensitive).
 *
 * dt_check_source then compiles every legal variant (or a seeded sample)
 * and runs lm_verify on each shape. */
#define _GNU_SOURCE
#include "bench/difftest/gen.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAP 8.0
#define MAXV 16
#define MAXIN 10

/* ---- random numbers ---------------------------------------------------- */

static uint64_t mix(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static int rnd(uint64_t *s, int n) { return (int)(mix(s) % (uint64_t)n); }
static int chance(uint64_t *s, double p) {
  return (double)(mix(s) >> 11) * 0x1p-53 < p;
}

/* ---- strings ------------------------------------------------------------ */

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  if (vasprintf(&s, f, ap) < 0)
    abort();
  va_end(ap);
  return s;
}

typedef struct Buf {
  char *s;
  size_t n, cap;
} Buf;

static void put(Buf *b, const char *f, ...) __attribute__((format(printf, 2, 3)));
static void put(Buf *b, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  char *s = NULL;
  int n = vasprintf(&s, f, ap);
  va_end(ap);
  if (n < 0)
    abort();
  if (b->n + (size_t)n + 1 > b->cap) {
    b->cap = (b->n + (size_t)n + 1) * 2;
    b->s = realloc(b->s, b->cap);
    if (!b->s)
      abort();
  }
  memcpy(b->s + b->n, s, (size_t)n + 1);
  b->n += (size_t)n;
  free(s);
}

/* ---- the generator ------------------------------------------------------ */

typedef enum InKind {
  IN_ROW,    /* ft[R, T*H] (or [R, C]), read x[r, s::T] */
  IN_ROWD,   /* ft[R, H], read x[r, :] (strided kernels only) */
  IN_COL,    /* ft[T*H] (or [C]), read g[s::T] */
  IN_COLD,   /* ft[H], read g[:] (strided kernels only) */
  IN_INST,   /* ft[R], read b[r] */
  IN_SCALAR, /* ft scalar */
} InKind;

typedef struct Input {
  char name[8];
  InKind kind;
  double bound; /* max |value| */
} Input;

typedef struct Ex {
  char *t;       /* source text, malloc'ed */
  double B;      /* bound on |value| */
  int tile;      /* 1 tile, 0 uniform */
  int exact;     /* computed without rounding */
  int inf_empty; /* infinite on an empty row (max/min reductions) */
} Ex;

typedef struct Val {
  char name[16];
  Ex e; /* e.t is the name */
} Val;

typedef struct Gen {
  uint64_t rng;
  const char *ft; /* "f32" or "f64" */
  const char *N;  /* the column-domain symbol, C or H */
  int step;
  int ragged, mask;
  Input in[MAXIN];
  int nin;
  Val val[MAXV];
  int nval;
} Gen;

static Ex ex(char *t, double B, int tile, int exact, int inf_empty) {
  return (Ex){t, B, tile, exact, inf_empty};
}

static const double dyadic[] = {0.25, 0.5, 0.75, -0.25, -0.5, 0.125, 1, -0.75};

static const char *dy(Gen *g) {
  static const char *t[] = {"0.25", "0.5", "0.75", "-0.25", "-0.5", "0.125", "1", "-0.75"};
  return t[rnd(&g->rng, (int)(sizeof dyadic / sizeof dyadic[0]))];
}

/* Keep |value| below CAP: squash with tanh or scale by a power of two. */
static Ex cap(Gen *g, Ex e) {
  if (e.B <= CAP)
    return e;
  if (chance(&g->rng, 0.5)) {
    char *t = fmt("tanh(%s)", e.t);
    free(e.t);
    return ex(t, 1, e.tile, 0, e.inf_empty);
  }
  double f = 1;
  while (e.B * f > CAP)
    f *= 0.5;
  char *t = fmt("(%s * %.17g)", e.t, f);
  free(e.t);
  return ex(t, e.B * f, e.tile, e.exact, e.inf_empty);
}

static Ex load(Gen *g, int want_tile) {
  for (int tries = 0; tries < 64; tries++) {
    Input *p = &g->in[rnd(&g->rng, g->nin)];
    int s = g->step > 1 ? rnd(&g->rng, g->step) : 0;
    switch (p->kind) {
    case IN_ROW:
      if (!want_tile)
        continue;
      if (g->step > 1)
        return ex(fmt("%s[r, %d::%d]", p->name, s, g->step), p->bound, 1, 1, 0);
      return ex(fmt("%s[r, :]", p->name), p->bound, 1, 1, 0);
    case IN_ROWD:
      if (!want_tile)
        continue;
      return ex(fmt("%s[r, :]", p->name), p->bound, 1, 1, 0);
    case IN_COL:
      if (!want_tile)
        continue;
      if (g->step > 1)
        return ex(fmt("%s[%d::%d]", p->name, s, g->step), p->bound, 1, 1, 0);
      return ex(fmt("%s[:]", p->name), p->bound, 1, 1, 0);
    case IN_COLD:
      if (!want_tile)
        continue;
      return ex(fmt("%s[:]", p->name), p->bound, 1, 1, 0);
    case IN_INST:
      if (want_tile)
        continue;
      return ex(fmt("%s[r]", p->name), p->bound, 0, 1, 0);
    case IN_SCALAR:
      if (want_tile)
        continue;
      return ex(fmt("%s", p->name), p->bound, 0, 1, 0);
    }
  }
  /* x0 is always a row input; a uniform falls back to a row max */
  char view[32] = ":";
  if (g->step > 1)
    snprintf(view, sizeof view, "0::%d", g->step);
  if (want_tile)
    return ex(fmt("x0[r, %s]", view), g->in[0].bound, 1, 1, 0);
  return ex(fmt("max(x0[r, %s])", view), g->in[0].bound, 0, 1, 1);
}

static Ex named(Gen *g, int want_tile) {
  int idx[MAXV], n = 0;
  for (int i = 0; i < g->nval; i++)
    if (g->val[i].e.tile == want_tile)
      idx[n++] = i;
  if (n == 0)
    return ex(NULL, 0, 0, 0, 0);
  Val *v = &g->val[idx[rnd(&g->rng, n)]];
  Ex e = v->e;
  e.t = fmt("%s", v->name);
  return e;
}

static Ex leaf(Gen *g, int want_tile) {
  if (chance(&g->rng, 0.6)) {
    Ex e = named(g, want_tile);
    if (e.t)
      return e;
  }
  if (want_tile && chance(&g->rng, 0.08))
    return ex(fmt("(%s(c) / %s)", g->ft, g->N), 1, 1, 0, 0);
  if (!want_tile && chance(&g->rng, 0.1))
    return ex(fmt("(%s(r) / R)", g->ft), 1, 0, 0, 0);
  return load(g, want_tile);
}

static Ex gen_tile(Gen *g, int depth);
static Ex gen_uni(Gen *g, int depth);
static Ex gen(Gen *g, int tile, int depth) {
  return tile ? gen_tile(g, depth) : gen_uni(g, depth);
}

/* An exact value (see the header): the only kind a comparison looks at. */
static Ex gen_exact(Gen *g, int want_tile, int depth) {
  int r = rnd(&g->rng, 6);
  if (depth <= 0 || r == 0) {
    if (chance(&g->rng, 0.4)) {
      int idx[MAXV], n = 0;
      for (int i = 0; i < g->nval; i++)
        if (g->val[i].e.exact && g->val[i].e.tile == want_tile)
          idx[n++] = i;
      if (n) {
        Val *v = &g->val[idx[rnd(&g->rng, n)]];
        Ex e = v->e;
        e.t = fmt("%s", v->name);
        return e;
      }
    }
    return load(g, want_tile);
  }
  if (!want_tile && r <= 2) {
    Ex a = gen_exact(g, 1, depth - 1);
    char *t = fmt("%s(%s)", r == 1 ? "max" : "min", a.t);
    Ex e = ex(t, a.B, 0, 1, 1);
    free(a.t);
    return e;
  }
  Ex a = gen_exact(g, want_tile, depth - 1);
  char *t;
  switch (r) {
  case 1:
    t = fmt("abs(%s)", a.t);
    break;
  case 2:
    t = fmt("-(%s)", a.t);
    break;
  case 3:
    t = fmt("(%s * 0.5)", a.t);
    break;
  default: {
    Ex b = gen_exact(g, chance(&g->rng, 0.5) ? want_tile : 0, depth - 1);
    t = fmt("%s(%s, %s)", r == 4 ? "max" : "min", a.t, b.t);
    a.B = fmax(a.B, b.B);
    a.inf_empty |= b.inf_empty;
    free(b.t);
  }
  }
  Ex e = ex(t, a.B, a.tile || want_tile, 1, a.inf_empty);
  free(a.t);
  return e;
}

static Ex gen_cond(Gen *g, int tile, int depth) {
  static const char *cmp[] = {"<", "<=", ">", ">="};
  int r = rnd(&g->rng, 10);
  if (tile && r == 0)
    return ex(fmt("(c * %d < %s)", 2 + rnd(&g->rng, 3), g->N), 0, 1, 1, 0);
  if (tile && r == 1)
    return ex(fmt("(c >= %d)", rnd(&g->rng, 8)), 0, 1, 1, 0);
  if (tile && r == 2 && g->mask)
    return ex(fmt("(m[r, :] != 0)"), 0, 1, 1, 0);
  if (depth > 0 && r == 3) {
    Ex a = gen_cond(g, tile, depth - 1), b = gen_cond(g, tile, depth - 1);
    char *t = fmt("(%s %s %s)", a.t, chance(&g->rng, 0.5) ? "&&" : "||", b.t);
    Ex e = ex(t, 0, a.tile || b.tile, 1, a.inf_empty | b.inf_empty);
    free(a.t), free(b.t);
    return e;
  }
  if (depth > 0 && r == 4) {
    Ex a = gen_cond(g, tile, depth - 1);
    char *t = fmt("!%s", a.t);
    free(a.t);
    a.t = t;
    return a;
  }
  Ex a = gen_exact(g, tile, 2);
  Ex b = chance(&g->rng, 0.5) ? gen_exact(g, chance(&g->rng, 0.5) ? tile : 0, 1)
                              : ex(fmt("%s", dy(g)), 1, 0, 1, 0);
  char *t = fmt("(%s %s %s)", a.t, cmp[rnd(&g->rng, 4)], b.t);
  Ex e = ex(t, 0, a.tile || b.tile, 1, a.inf_empty | b.inf_empty);
  free(a.t), free(b.t);
  return e;
}

/* A denominator bounded away from zero; *lo receives its lower bound. */
static Ex denom(Gen *g, int tile, double *lo) {
  Ex x = gen(g, tile, 1);
  char *t;
  double B;
  switch (rnd(&g->rng, 3)) {
  case 0:
    t = fmt("(abs(%s) + 1)", x.t), *lo = 1, B = x.B + 1;
    break;
  case 1:
    t = fmt("sqrt(%s * %s + 0.5)", x.t, x.t), *lo = sqrt(0.5),
    B = sqrt(x.B * x.B + 0.5);
    break;
  default:
    t = fmt("(1 + exp(min(max(%s, -4), 4)))", x.t), *lo = 1, B = 1 + exp(4);
  }
  Ex e = ex(t, B, x.tile, 0, x.inf_empty);
  free(x.t);
  return e;
}

/* One operation whose result has the given kind (operands of a tile may be
 * uniforms, which broadcast). */
static Ex gen_op(Gen *g, int tile, int depth) {
  int sub = depth - 1;
  int other = tile ? chance(&g->rng, 0.7) : 0; /* kind of a second operand */
  Ex a = gen(g, tile, sub);
  char *t = NULL;
  double B = 0;
  int exact = 0, inf = a.inf_empty;
  int op = rnd(&g->rng, 22);
  switch (op) {
  case 0: { /* exp of a clamped value */
    double in = fmin(a.B, 4);
    t = a.B > 4 ? fmt("exp(min(max(%s, -4), 4))", a.t) : fmt("exp(%s)", a.t);
    B = exp(in);
    break;
  }
  case 1:
    t = fmt("log(%s * %s + 1)", a.t, a.t), B = log(a.B * a.B + 1);
    break;
  case 2:
    if (a.B <= 4)
      t = fmt("log(exp(%s))", a.t), B = a.B;
    else
      t = fmt("log(abs(%s) + 1)", a.t), B = log(a.B + 1);
    break;
  case 3:
    t = fmt("sqrt(%s * %s + 0.5)", a.t, a.t), B = sqrt(a.B * a.B + 0.5);
    break;
  case 4:
    t = fmt("rsqrt(%s * %s + 0.5)", a.t, a.t), B = sqrt(2);
    break;
  case 5:
    t = fmt("tanh(%s)", a.t), B = 1;
    break;
  case 6:
    t = fmt("erf(%s)", a.t), B = 1;
    break;
  case 7:
    t = fmt("sigmoid(%s)", a.t), B = 1;
    break;
  case 8:
    t = fmt("%s(%s)", chance(&g->rng, 0.5) ? "sin" : "cos", a.t), B = 1;
    break;
  case 9:
    if (chance(&g->rng, 0.5)) {
      int n = 2 + rnd(&g->rng, 2);
      t = fmt("pow(%s, %d)", a.t, n), B = pow(a.B, n);
    } else {
      t = fmt("pow(abs(%s) + 1, %d)", a.t, -1 - rnd(&g->rng, 2)), B = 1;
    }
    break;
  case 10:
    t = fmt("abs(%s)", a.t), B = a.B, exact = a.exact;
    break;
  case 11:
    t = fmt("-(%s)", a.t), B = a.B, exact = a.exact;
    break;
  case 12: { /* division */
    double lo;
    Ex d = denom(g, other, &lo);
    t = fmt("(%s / %s)", a.t, d.t);
    B = a.B / lo, inf |= d.inf_empty;
    free(d.t);
    break;
  }
  case 13:
  case 14: { /* elementwise min / max */
    Ex b = gen(g, other, sub);
    t = fmt("%s(%s, %s)", op == 13 ? "min" : "max", a.t, b.t);
    B = fmax(a.B, b.B), exact = a.exact && b.exact, inf |= b.inf_empty;
    free(b.t);
    break;
  }
  case 15: { /* fma */
    Ex b = gen(g, other, sub), c = gen(g, chance(&g->rng, 0.5) ? tile : 0, sub);
    t = fmt("fma(%s, %s, %s)", a.t, b.t, c.t);
    B = a.B * b.B + c.B, inf |= b.inf_empty | c.inf_empty;
    free(b.t), free(c.t);
    break;
  }
  case 16: { /* where */
    Ex c = gen_cond(g, tile, 1), b = gen(g, other, sub);
    t = chance(&g->rng, 0.5) ? fmt("where(%s, %s, %s)", c.t, a.t, b.t)
                             : fmt("where(%s, %s, %s)", c.t, b.t, a.t);
    B = fmax(a.B, b.B), exact = a.exact && b.exact;
    inf |= b.inf_empty | c.inf_empty;
    free(b.t), free(c.t);
    break;
  }
  case 17: { /* a dyadic constant */
    const char *k = dy(g);
    t = fmt(chance(&g->rng, 0.5) ? "(%s * %s)" : "(%s + %s)", a.t, k);
    B = a.B + 1;
    break;
  }
  default: { /* + - * */
    Ex b = gen(g, other, sub);
    int o = op - 18;
    if (o >= 3)
      o = 2;
    t = fmt("(%s %s %s)", a.t, o == 0 ? "+" : o == 1 ? "-" : "*", b.t);
    B = o == 2 ? a.B * b.B : a.B + b.B, inf |= b.inf_empty;
    free(b.t);
  }
  }
  free(a.t);
  return cap(g, ex(t, B, tile, exact, inf));
}

static Ex gen_tile(Gen *g, int depth) {
  if (depth <= 0 || chance(&g->rng, 0.25))
    return leaf(g, 1);
  return gen_op(g, 1, depth);
}

/* A reduction of a tile to a uniform. */
static Ex reduce(Gen *g, int depth) {
  Ex a = gen_tile(g, depth - 1);
  char *t;
  Ex e;
  switch (rnd(&g->rng, 5)) {
  case 0:
  case 1:
    t = fmt("(sum(%s) / %s)", a.t, g->N);
    e = ex(t, a.B, 0, 0, a.inf_empty);
    break;
  case 2:
    t = fmt("max(%s)", a.t);
    e = ex(t, a.B, 0, a.exact, 1);
    break;
  case 3:
    t = fmt("min(%s)", a.t);
    e = ex(t, a.B, 0, a.exact, 1);
    break;
  default: /* a log-sum-exp of the row, shifted by its max */
    t = fmt("log(sum(exp(%s - max(%s))))", a.t, a.t);
    e = ex(t, log(2) + log(4096), 0, 0, 1);
  }
  free(a.t);
  return cap(g, e);
}

static Ex gen_uni(Gen *g, int depth) {
  if (depth <= 0)
    return leaf(g, 0);
  int r = rnd(&g->rng, 10);
  if (r < 4)
    return reduce(g, depth);
  if (r < 6)
    return leaf(g, 0);
  return gen_op(g, 0, depth);
}

/* A uniform safe to store per row in a ragged kernel (no max/min). */
static Ex gen_uni_store(Gen *g, int depth) {
  for (int tries = 0; tries < 16; tries++) {
    Ex e = gen_uni(g, depth);
    if (!g->ragged || !e.inf_empty)
      return e;
    free(e.t);
  }
  Ex a = load(g, 1);
  char *t = fmt("(sum(%s) / %s)", a.t, g->N);
  free(a.t);
  return ex(t, a.B, 0, 0, 0);
}

static const double ranges[][2] = {{-1, 1}, {-2, 2}, {0.5, 2}, {-4, 4}, {0, 1}};

static void add_input(Gen *g, Buf *b, const char *name, InKind kind) {
  Input *p = &g->in[g->nin++];
  snprintf(p->name, sizeof p->name, "%s", name);
  p->kind = kind;
  int ri = rnd(&g->rng, (int)(sizeof ranges / sizeof ranges[0]));
  double lo = ranges[ri][0], hi = ranges[ri][1];
  p->bound = fmax(fabs(lo), fabs(hi));
  const char *full = g->step > 1 ? fmt("%d*H", g->step) : "C";
  switch (kind) {
  case IN_ROW:
    put(b, "%s: %s[R, %s] in(%g, %g), ", name, g->ft, full, lo, hi);
    break;
  case IN_ROWD:
    put(b, "%s: %s[R, H] in(%g, %g), ", name, g->ft, lo, hi);
    break;
  case IN_COL:
    put(b, "%s: %s[%s] in(%g, %g), ", name, g->ft, full, lo, hi);
    break;
  case IN_COLD:
    put(b, "%s: %s[H] in(%g, %g), ", name, g->ft, lo, hi);
    break;
  case IN_INST:
    put(b, "%s: %s[R] in(%g, %g), ", name, g->ft, lo, hi);
    break;
  case IN_SCALAR:
    if (chance(&g->rng, 0.5)) {
      put(b, "%s: %s = 0.75, ", name, g->ft);
      p->bound = 0.75;
    } else {
      put(b, "%s: %s in(%g, %g), ", name, g->ft, lo, hi);
    }
    break;
  }
  if (g->step > 1)
    free((char *)full);
}

char *dt_gen_kernel(uint64_t seed, dt_info *info) {
  Gen g = {0};
  g.rng = seed * 0x2545F4914F6CDD1Dull + 0x1234567ull;
  mix(&g.rng);
  dt_info in = {0};
  in.elem = chance(&g.rng, 0.3) ? LM_F64 : LM_F32;
  g.ft = in.elem == LM_F64 ? "f64" : "f32";
  in.step = chance(&g.rng, 0.3) ? 2 + 2 * rnd(&g.rng, 2) - (chance(&g.rng, 0.3) ? 1 : 0) : 1;
  g.step = in.step; /* 1, 2, 3 or 4 */
  g.N = g.step > 1 ? "H" : "C";
  g.ragged = in.ragged = chance(&g.rng, 0.25);
  g.mask = in.masked = chance(&g.rng, 0.15);

  Buf head = {0}, body = {0};
  put(&head, "kernel dk%llu(", (unsigned long long)seed);
  add_input(&g, &head, "x0", IN_ROW);
  if (chance(&g.rng, 0.6))
    add_input(&g, &head, "x1", g.step > 1 && chance(&g.rng, 0.5) ? IN_ROWD : IN_ROW);
  if (chance(&g.rng, 0.4))
    add_input(&g, &head, "g0", g.step > 1 && chance(&g.rng, 0.5) ? IN_COLD : IN_COL);
  if (chance(&g.rng, 0.3))
    add_input(&g, &head, "b0", IN_INST);
  if (chance(&g.rng, 0.4))
    add_input(&g, &head, "s0", IN_SCALAR);
  if (g.mask)
    put(&head, "m: i32[R, %s] mask, ", g.step > 1 ? "H" : "C");
  if (g.ragged)
    put(&head, "len: i32[R] rowlen, ");
  head.n -= 2; /* the last ", " */
  head.s[head.n] = 0;
  put(&head, ") -> (");

  /* named values */
  int nst = 1 + rnd(&g.rng, 5);
  for (int i = 0; i < nst && g.nval < MAXV; i++) {
    int tile = chance(&g.rng, 0.55);
    Ex e = gen(&g, tile, 1 + rnd(&g.rng, 3));
    if (e.tile != tile) { /* a tile-kind op may have produced a uniform leaf */
      free(e.t);
      continue;
    }
    Val *v = &g.val[g.nval++];
    snprintf(v->name, sizeof v->name, "%c%d", tile ? 't' : 'u', i);
    put(&body, "  %s = %s\n", v->name, e.t);
    v->e = e;
    free(e.t);
    v->e.t = NULL;
  }
  in.nstmts = g.nval;

  /* outputs */
  int nout = 1 + rnd(&g.rng, 3);
  for (int o = 0; o < nout; o++) {
    int per_row = o > 0 && chance(&g.rng, 0.4);
    if (per_row) {
      put(&head, "%sy%d: %s[R]", o ? ", " : "", o, g.ft);
      Ex e = gen_uni_store(&g, 2);
      put(&body, "  y%d[r] = %s\n", o, e.t);
      free(e.t);
      continue;
    }
    if (g.step > 1 && chance(&g.rng, 0.6)) {
      put(&head, "%sy%d: %s[R, %d*H]", o ? ", " : "", o, g.ft, g.step);
      int views = 1 + rnd(&g.rng, g.step), first = rnd(&g.rng, g.step);
      for (int v = 0; v < views; v++) {
        Ex e = gen_tile(&g, 3);
        put(&body, "  y%d[r, %d::%d] = %s\n", o, (first + v) % g.step, g.step, e.t);
        free(e.t);
      }
    } else {
      put(&head, "%sy%d: %s[R, %s]", o ? ", " : "", o, g.ft, g.N);
      Ex e = chance(&g.rng, 0.15) ? gen_uni_store(&g, 2) : gen_tile(&g, 3);
      if (!e.tile && chance(&g.rng, 0.5)) { /* mostly tiles */
        free(e.t);
        e = gen_tile(&g, 3);
      }
      put(&body, "  y%d[r, :] = %s\n", o, e.t);
      free(e.t);
    }
  }
  /* a softmax-style output on some kernels: e / sum(e) */
  if (chance(&g.rng, 0.3)) {
    Ex a = gen_tile(&g, 2);
    put(&body, "  e%d = exp(%s - max(%s))\n", nout, a.t, a.t);
    put(&body, "  y%d[r, :] = e%d / sum(e%d)\n", nout, nout, nout);
    put(&head, ", y%d: %s[R, %s]", nout, g.ft, g.N);
    free(a.t);
    nout++;
  }
  in.nout = nout;
  put(&head, ") {\n%s}\n", body.s ? body.s : "");
  free(body.s);
  if (info)
    *info = in;
  return head.s;
}

/* ---- shapes --------------------------------------------------------------- */

static int col_coef(const lm_kernel *k) {
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind == LM_PARAM_BUFFER && k->params[i].rank == 2)
      return (int)(k->params[i].dims[1].sym >= 0 && k->params[i].dims[1].coef > 0
                       ? k->params[i].dims[1].coef
                       : 1);
  return 1;
}

int dt_pick_shapes(const lm_kernel *k, uint64_t seed, dt_shape *out, int max) {
  static const int64_t Rs[] = {1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64};
  static const int64_t Ns[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17,
                               23, 31, 32, 33, 47, 63, 65, 100, 129};
  uint64_t s = seed ^ 0xD1B54A32D192ED03ull;
  int coef = col_coef(k), n = 0;
  const int nr = (int)(sizeof Rs / sizeof Rs[0]), nn = (int)(sizeof Ns / sizeof Ns[0]);
  for (; n < max; n++) {
    int64_t R = Rs[rnd(&s, nr)], N = Ns[rnd(&s, nn)];
    if (n == 0 && chance(&s, 0.5))
      R = 1 + rnd(&s, 3); /* R = 1 and R < W often */
    if (n == 1 && chance(&s, 0.5))
      N = 1 + rnd(&s, 2); /* C = 1 (or 2) often */
    out[n] = (dt_shape){R, N * coef};
  }
  return n;
}

/* ---- the check --------------------------------------------------------------- */

#define MAXSHAPES 16
#define MAXPINNED 64

static void write_case(const dt_opts *o, const lm_kernel *k, const char *src,
                       const char *variant, const char *shape,
                       const char *msg) {
  if (o->log)
    fprintf(o->log, "MISMATCH %s %s %s: %s\n", k->name, variant, shape, msg);
  if (!o->out_dir)
    return;
  static int n;
  char path[4096];
  snprintf(path, sizeof path, "%s/mismatch-%s-%d.lk", o->out_dir, k->name, n++);
  Buf b = {0};
  put(&b, "# difftest-variant: %s\n# difftest-shape: %s\n", variant, shape);
  /* the message as a comment, one line */
  put(&b, "# ");
  for (const char *p = msg; *p; p++)
    put(&b, "%c", *p == '\n' ? ' ' : *p);
  put(&b, "\n");
  for (const char *p = src; *p;) { /* the source without its old pins */
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p + 1) : strlen(p);
    if (strncmp(p, "# difftest-", 11) != 0)
      put(&b, "%.*s", (int)len, p);
    p += len;
  }
  lm_error err;
  if (lm_file_write_atomic(path, b.s, b.n, &err) != LM_OK && o->log)
    fprintf(o->log, "%s\n", err.msg);
  free(b.s);
}

/* Read the `# difftest-variant:` and `# difftest-shape:` header lines. */
static int header_values(const char *src, const char *key, char out[][128],
                         int max) {
  int n = 0;
  size_t kl = strlen(key);
  for (const char *p = src; *p;) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (len > kl && strncmp(p, key, kl) == 0 && n < max) {
      const char *v = p + kl;
      while (*v == ' ')
        v++;
      size_t vl = len - (size_t)(v - p);
      if (vl >= 128)
        vl = 127;
      memcpy(out[n], v, vl);
      out[n][vl] = 0;
      n++;
    }
    p = e ? e + 1 : p + len;
  }
  return n;
}

/* Every legal variant on the runnable ISA targets, workers {1, 2}. */
static int all_variants(const lm_kernel *k, lm_variant **out, lm_error *err) {
  const lm_isa isas[] = {LM_ISA_SSE42, LM_ISA_AVX2, LM_ISA_AVX512};
  lm_variant *all = NULL;
  int n = 0;
  for (int i = 0; i < 3; i++) {
    if (!lm_isa_runnable(isas[i]))
      continue;
    lm_enum_opts eo;
    lm_enum_defaults(&eo);
    eo.isa = isas[i];
    eo.workers[0] = 1, eo.workers[1] = 2, eo.workers[2] = 0;
    eo.grains[0] = 1, eo.grains[1] = 16, eo.grains[2] = 0;
    lm_variant *vs = NULL;
    int nv = lm_variant_enumerate(k, &eo, &vs, err);
    if (nv < 0) {
      free(all);
      return -1;
    }
    lm_variant *na = realloc(all, (size_t)(n + nv + 1) * sizeof *na);
    if (!na) {
      free(vs), free(all);
      lm_error_set(err, LM_ESYS, "out of memory");
      return -1;
    }
    all = na;
    memcpy(all + n, vs, (size_t)nv * sizeof *vs);
    n += nv;
    free(vs);
  }
  *out = all;
  return n;
}

lm_status dt_check_source(const char *file, const char *src, const dt_opts *o,
                          dt_stats *st, lm_error *err) {
  lm_kernel *k = NULL;
  lm_variant *vs = NULL;
  lm_data *data[MAXSHAPES] = {0};
  lm_oracle *orc[MAXSHAPES] = {0};
  char label[MAXSHAPES][128];
  int ns = 0, nv = 0;
  lm_status s = lm_kernel_parse(file, src, strlen(src), &k, err);
  if (s != LM_OK)
    goto error;
  st->kernels++;
  uint64_t rs = o->seed ^ 0x6A09E667F3BCC909ull;
  for (const char *p = k->name; *p; p++)
    rs = rs * 131 + (unsigned char)*p;

  /* shapes: pinned or picked */
  static char pinned[MAXPINNED][128];
  int np = header_values(src, "# difftest-shape:", pinned, MAXSHAPES);
  dt_shape picked[3];
  int npick = np ? 0 : dt_pick_shapes(k, mix(&rs), picked, 3);
  for (int i = 0; i < (np ? np : npick); i++) {
    lm_shape sh;
    if (np) {
      s = lm_shape_parse(k, pinned[i], &sh, err);
      snprintf(label[ns], sizeof label[ns], "%s", pinned[i]);
    } else {
      s = lm_shape_bind(k, picked[i].R, picked[i].C, NULL, &sh, err);
      snprintf(label[ns], sizeof label[ns], "%lld,%lld", (long long)picked[i].R,
               (long long)picked[i].C);
    }
    if (s != LM_OK)
      goto error;
    s = lm_data_gen(k, &sh, 1 + mix(&rs) % 1000, &data[ns], err);
    if (s != LM_OK)
      goto error;
    ns++;
    s = lm_oracle_run(k, data[ns - 1], &orc[ns - 1], err);
    if (s != LM_OK)
      goto error;
  }

  /* variants: pinned, or all legal ones (sampled) */
  int npv = header_values(src, "# difftest-variant:", pinned, MAXPINNED);
  if (npv) {
    vs = calloc((size_t)npv, sizeof *vs);
    for (nv = 0; nv < npv; nv++) {
      s = lm_variant_parse(pinned[nv], &vs[nv], err);
      if (s == LM_OK)
        s = lm_variant_check(k, &vs[nv], err);
      if (s != LM_OK)
        goto error;
    }
  } else {
    nv = all_variants(k, &vs, err);
    if (nv < 0) {
      s = err->status;
      goto error;
    }
    int keep = o->variants_per_kernel > 0 && o->variants_per_kernel < nv
                   ? o->variants_per_kernel
                   : nv;
    for (int i = 0; i < keep; i++) { /* partial Fisher-Yates */
      int j = i + rnd(&rs, nv - i);
      lm_variant t = vs[i];
      vs[i] = vs[j], vs[j] = t;
    }
    nv = keep;
  }

  for (int vi = 0; vi < nv; vi++) {
    char name[128];
    lm_variant_format(&vs[vi], name, sizeof name);
    lm_compiled *c = NULL;
    lm_error e2 = {0};
    if (lm_compile(k, &vs[vi], NULL, &c, &e2) != LM_OK) {
      st->compile_errors++;
      write_case(o, k, src, name, ns ? label[0] : "1,1", e2.msg);
      continue;
    }
    st->variants++;
    for (int si = 0; si < ns; si++) {
      lm_verify_result res;
      st->shape_checks++;
      if (lm_verify(k, c, data[si], orc[si], NULL, &res, &e2) != LM_OK) {
        st->mismatches++;
        write_case(o, k, src, name, label[si], e2.msg);
      }
    }
    lm_compiled_free(c);
  }
  s = LM_OK;
error:
  for (int i = 0; i < MAXSHAPES; i++) {
    lm_oracle_free(orc[i]);
    lm_data_free(data[i]);
  }
  free(vs);
  lm_kernel_free(k);
  return s;
}
