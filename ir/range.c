/* Ranges: refuse a kernel whose f32 values may overflow for its inputs.
 *
 * The oracle computes in double, so where an f32 intermediate overflows to
 * infinity the oracle still holds a finite value.  The two then part ways
 * for good: `x * 1e38` with x in [10, 100] is +inf in f32 and 1e39 in the
 * oracle, `exp(x) * 0` is NaN against 0, and a sum can overflow in one
 * summation order and not in another.  No variant can agree with the
 * oracle there, so such a kernel is refused at check time instead of
 * failing every variant at run time.
 *
 * The value of every node is bounded by interval arithmetic, from the
 * ranges the seeded generator draws inputs from (docs/oracle.md): a float
 * input's in(LO, HI) (default [-1, 1]), a scalar's default when it has
 * one, 0/1 for a mask, [0, 9] for other i32 inputs, and dims, r, c and row
 * lengths up to 2^31 (no buffer is larger, see shape.c).  A reduction over
 * a row is bounded at that largest row: a sum of N values in [lo, hi]
 * lies, with every partial sum in any order, in [N*min(lo, 0), N*max(hi,
 * 0)].
 *
 * The rule: an f32 node whose operands are bounded (finite bounds) but
 * whose own bound passes FLT_MAX may overflow, and is an error naming the
 * node and its bound.  Two things are deliberately not errors:
 *   - a quotient (or rsqrt, or negative power) whose divisor's range
 *     contains 0.  Its bound is infinite, but how near 0 the divisor comes
 *     is not something the declared ranges say, and 1/0 is +inf in f32 and
 *     in the oracle alike.  Such a value is unbounded;
 *   - anything computed from an unbounded value, or from an infinity the
 *     kernel writes (`where(m, x, -inf)`) or gets from an empty ragged row
 *     (`max` of no columns is -inf).  There the infinity is the oracle's
 *     too.
 * So the check never refuses a kernel for a value it cannot bound, and it
 * refuses every kernel whose bounded f32 values can leave the f32 range.
 * f64 and i32 nodes are not checked: the oracle computes in double and
 * wraps i32 like the code does.
 *
 * Interval arithmetic forgets that operands are correlated, so `z -
 * max(z)` would be bounded by [lo - hi, hi - lo] and `c / C` by [0, 2^31].
 * Two correlations are kept because kernels lean on them: `z - max(z)` is
 * in [lo - hi, 0] (a softmax's exp(z - max(z)) is the common way to keep
 * exp in range), an index over its dim, `r / R` or `c / C`, is in
 * [0, 1], and a mean `sum(t) / C` is within t's range. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ir/frontend.h"

typedef struct rng {
  double lo, hi;
} rng;

static const rng whole = {-INFINITY, INFINITY};

static int bounded(rng x) { return isfinite(x.lo) && isfinite(x.hi); }

static rng hull(rng a, rng b) {
  return (rng){fmin(a.lo, b.lo), fmax(a.hi, b.hi)};
}

/* A product in which 0 times an infinite bound is 0: the bound of values
 * that approach 0, not a NaN. */
static double prod(double a, double b) { return a == 0 || b == 0 ? 0 : a * b; }

static rng mul(rng a, rng b) {
  double p[4] = {prod(a.lo, b.lo), prod(a.lo, b.hi), prod(a.hi, b.lo),
                 prod(a.hi, b.hi)};
  rng r = {p[0], p[0]};
  for (int i = 1; i < 4; i++)
    r.lo = fmin(r.lo, p[i]), r.hi = fmax(r.hi, p[i]);
  return r;
}

static rng square(rng a) {
  double m = fmax(fabs(a.lo), fabs(a.hi));
  double z = a.lo <= 0 && a.hi >= 0 ? 0 : fmin(fabs(a.lo), fabs(a.hi));
  return (rng){z * z, m * m};
}

/* 1/b, or the whole line when b's range contains 0. */
static rng recip(rng b) {
  if (b.lo <= 0 && b.hi >= 0)
    return whole;
  return (rng){1 / b.hi, 1 / b.lo};
}

static rng add(rng a, rng b) {
  rng r = {a.lo + b.lo, a.hi + b.hi};
  return isnan(r.lo) || isnan(r.hi) ? whole : r;
}

static rng neg(rng a) { return (rng){-a.hi, -a.lo}; }

static rng absr(rng a) {
  if (a.lo >= 0)
    return a;
  if (a.hi <= 0)
    return neg(a);
  return (rng){0, fmax(-a.lo, a.hi)};
}

static rng powi(rng a, int n) {
  if (n == 0)
    return (rng){1, 1};
  int m = n < 0 ? -n : n;
  rng base = m % 2 ? a : absr(a);
  rng p = {pow(base.lo, m), pow(base.hi, m)};
  return n < 0 ? recip(p) : p;
}

/* The range the generator draws parameter p from. */
static rng param_range(const lm_param *p) {
  if (p->dtype == LM_I32) {
    if (p->gen == LM_GEN_MASK)
      return (rng){0, 1};
    if (p->gen == LM_GEN_ROWLEN)
      return (rng){0, (double)LM_SHAPE_MAX_ELEMS};
    if (p->kind == LM_PARAM_SCALAR)
      return p->has_default ? (rng){p->defval, p->defval} : (rng){p->lo, p->hi};
    return (rng){0, 9};
  }
  rng r = p->has_default ? (rng){p->defval, p->defval} : (rng){p->lo, p->hi};
  if (p->dtype == LM_F32) /* values are stored as f32, rounded either way */
    r = hull(r, (rng){(float)r.lo, (float)r.hi});
  return r;
}

/* A reduction of a tile in range a over up to LM_SHAPE_MAX_ELEMS columns;
 * `ragged`: a row may be empty. */
static rng reduce(lm_op op, rng a, int ragged) {
  double n = (double)LM_SHAPE_MAX_ELEMS;
  switch (op) {
  case LM_OP_RSUM: {
    rng r = {a.lo < 0 ? prod(n, a.lo)
             : ragged ? 0
                      : a.lo,
             a.hi > 0 ? prod(n, a.hi)
             : ragged ? 0
                      : a.hi};
    return r;
  }
  case LM_OP_RMAX:
    return ragged ? (rng){-INFINITY, a.hi} : a;
  default:
    return ragged ? (rng){a.lo, INFINITY} : a;
  }
}

static rng cast(lm_dtype t, rng a) {
  if (t == LM_I32) {
    if (!(a.lo >= INT32_MIN && a.hi <= INT32_MAX))
      return (rng){INT32_MIN, INT32_MAX};
    return (rng){trunc(a.lo), trunc(a.hi)};
  }
  if (t == LM_F32)
    return (rng){(float)a.lo, (float)a.hi};
  return a;
}

static rng monotone(double (*f)(double), rng a) {
  return (rng){f(a.lo), f(a.hi)};
}

static double sigmoid(double x) { return 1 / (1 + exp(-x)); }

static const lm_node *uncast(const lm_kernel *k, int id) {
  while (k->nodes[id].op == LM_OP_CAST)
    id = k->nodes[id].a;
  return &k->nodes[id];
}

/* r / R and c / C, the usual way to make a position a fraction: an index
 * is below its dim, so the quotient is in [0, 1) (scaled by the coefs). */
static int index_over_dim(const lm_kernel *k, const lm_node *n, rng *out) {
  const lm_node *i = uncast(k, n->a), *d = uncast(k, n->b);
  if (d->op != LM_OP_DIM || d->sym < 0 || d->coef <= 0)
    return 0;
  if (i->op == LM_OP_ROWIDX && d->sym == 0) {
    *out = (rng){0, 1.0 / (double)d->coef};
    return 1;
  }
  if (i->op == LM_OP_COLIDX && d->sym == k->ncols.sym) {
    *out = (rng){0, (double)k->ncols.coef / (double)d->coef};
    return 1;
  }
  return 0;
}

/* sum(t) / C with C the column domain's dim: a mean, so within t's range
 * (and 0, for a ragged row), scaled by the coefs. */
static int mean_of_row(const lm_kernel *k, const rng *v, const lm_node *n,
                       rng *out) {
  const lm_node *s = &k->nodes[n->a], *d = uncast(k, n->b);
  if (s->op != LM_OP_RSUM || d->op != LM_OP_DIM || d->sym < 0 ||
      d->sym != k->ncols.sym || d->coef <= 0)
    return 0;
  rng t = hull(v[s->a], (rng){0, 0});
  *out = mul(t, (rng){0, (double)k->ncols.coef / (double)d->coef});
  return 1;
}

static rng node_range(const lm_kernel *k, const rng *v, int id) {
  const lm_node *n = &k->nodes[id];
  rng a = n->a >= 0 ? v[n->a] : whole, b = n->b >= 0 ? v[n->b] : whole;
  rng c = n->c >= 0 ? v[n->c] : whole;
  switch (n->op) {
  case LM_OP_CONST:
    return isnan(n->imm) ? whole : (rng){n->imm, n->imm};
  case LM_OP_SCALAR:
  case LM_OP_LOAD_ROW:
  case LM_OP_LOAD_COL:
  case LM_OP_LOAD_INST:
    return param_range(&k->params[n->param]);
  case LM_OP_DIM:
    return (rng){(double)n->coef, (double)n->coef * LM_SHAPE_MAX_ELEMS};
  case LM_OP_ROWIDX:
  case LM_OP_COLIDX:
    return (rng){0, (double)LM_SHAPE_MAX_ELEMS - 1};
  case LM_OP_NEG:
    return neg(a);
  case LM_OP_ABS:
    return absr(a);
  case LM_OP_EXP:
    return monotone(exp, a);
  case LM_OP_LOG:
    return a.hi <= 0 ? (rng){-INFINITY, -INFINITY}
                     : (rng){a.lo <= 0 ? -INFINITY : log(a.lo), log(a.hi)};
  case LM_OP_SQRT:
    return (rng){sqrt(fmax(a.lo, 0)), sqrt(fmax(a.hi, 0))};
  case LM_OP_RSQRT:
    return recip((rng){sqrt(fmax(a.lo, 0)), sqrt(fmax(a.hi, 0))});
  case LM_OP_TANH:
    return monotone(tanh, a);
  case LM_OP_ERF:
    return monotone(erf, a);
  case LM_OP_SIGMOID:
    return monotone(sigmoid, a);
  case LM_OP_SIN:
  case LM_OP_COS:
    return (rng){-1, 1};
  case LM_OP_POWI:
    return powi(a, n->ipow);
  case LM_OP_CAST:
    return cast(n->dtype, a);
  case LM_OP_ADD:
    return add(a, b);
  case LM_OP_SUB: {
    const lm_node *m = &k->nodes[n->b];
    if (m->op == LM_OP_RMAX && m->a == n->a)
      return (rng){a.lo - a.hi, 0};
    if (m->op == LM_OP_RMIN && m->a == n->a)
      return (rng){0, a.hi - a.lo};
    return add(a, neg(b));
  }
  case LM_OP_MUL:
    return n->a == n->b ? square(a) : mul(a, b);
  case LM_OP_DIV:
    return index_over_dim(k, n, &a) || mean_of_row(k, v, n, &a)
               ? a
               : mul(a, recip(b));
  case LM_OP_MIN:
    return (rng){fmin(a.lo, b.lo), fmin(a.hi, b.hi)};
  case LM_OP_MAX:
    return (rng){fmax(a.lo, b.lo), fmax(a.hi, b.hi)};
  case LM_OP_FMA:
    return add(mul(a, b), c);
  case LM_OP_WHERE:
    return hull(b, c);
  case LM_OP_RSUM:
  case LM_OP_RMAX:
  case LM_OP_RMIN:
    return reduce(n->op, a, k->rowlen_param >= 0);
  default: /* comparisons and logic: bool */
    return (rng){0, 1};
  }
}

/* Whether the op can take bounded operands past FLT_MAX.  The others
 * cannot: a cast rounds in the oracle too, log(0) is -inf in both, the max
 * or min of an empty row is meant to be infinite, and so is an infinite
 * literal. */
static int can_overflow(const lm_node *n) {
  switch (n->op) {
  case LM_OP_CONST:
    return isfinite(n->imm);
  case LM_OP_ADD:
  case LM_OP_SUB:
  case LM_OP_MUL:
  case LM_OP_DIV:
  case LM_OP_FMA:
  case LM_OP_EXP:
  case LM_OP_POWI:
  case LM_OP_RSQRT:
  case LM_OP_RSUM:
    return 1;
  default:
    return 0;
  }
}

/* Whether every operand of node id has finite bounds. */
static int operands_bounded(const lm_node *n, const rng *v) {
  int ops[3] = {n->a, n->b, n->c};
  for (int i = 0; i < 3; i++)
    if (ops[i] >= 0 && !bounded(v[ops[i]]))
      return 0;
  return 1;
}

/* A division by a range containing 0 is unbounded, not an overflow. */
static int divides_by_zero_range(const lm_node *n, const rng *v) {
  switch (n->op) {
  case LM_OP_DIV:
    return v[n->b].lo <= 0 && v[n->b].hi >= 0;
  case LM_OP_RSQRT:
    return v[n->a].lo <= 0;
  case LM_OP_POWI:
    return n->ipow < 0 && v[n->a].lo <= 0 && v[n->a].hi >= 0;
  default:
    return 0;
  }
}

/* The range of node i from its operands' (v[0..i-1]). */
static rng value_range(const lm_kernel *k, const rng *v, int i) {
  rng r = node_range(k, v, i);
  if (isnan(r.lo) || isnan(r.hi))
    r = whole;
  if (k->nodes[i].dtype == LM_I32 && !(r.lo >= INT32_MIN && r.hi <= INT32_MAX))
    r = (rng){INT32_MIN, INT32_MAX}; /* i32 arithmetic wraps */
  return r;
}

void lm_kernel_ranges(const lm_kernel *k, double *lo, double *hi) {
  rng *v = malloc((size_t)(k->nnodes ? k->nnodes : 1) * sizeof *v);
  if (!v) { /* no bound is known */
    for (int i = 0; i < k->nnodes; i++)
      lo[i] = -INFINITY, hi[i] = INFINITY;
    return;
  }
  for (int i = 0; i < k->nnodes; i++) {
    v[i] = value_range(k, v, i);
    lo[i] = v[i].lo, hi[i] = v[i].hi;
  }
  free(v);
}

void lm_fe_ranges(lm_fe *fe) {
  const lm_kernel *k = fe->k;
  rng *v = lm_arena_alloc(fe->arena,
                          (size_t)(k->nnodes ? k->nnodes : 1) * sizeof *v);
  for (int i = 0; i < k->nnodes; i++) {
    const lm_node *n = &k->nodes[i];
    rng r = value_range(k, v, i);
    v[i] = r;
    if (n->dtype != LM_F32 || !can_overflow(n) || !operands_bounded(n, v) ||
        divides_by_zero_range(n, v))
      continue;
    if (fmax(fabs(r.lo), fabs(r.hi)) <= FLT_MAX)
      continue;
    char expr[96];
    lm_fe_node_str(k, i, expr, sizeof expr);
    lm_fe_fail(fe, n->loc,
               "value may overflow f32: %s is in [%.2g, %.2g] for the declared "
               "inputs (f32 max %.2g)",
               expr, r.lo, r.hi, (double)FLT_MAX);
  }
}
