/* The FP64 oracle: the IR run one instance at a time, one node at a time,
 * in double precision (DESIGN.md §5).
 *
 * It is deliberately the slowest and plainest way to run a kernel.  There
 * are no phases and no lanes: for each instance r the nodes are evaluated
 * in node order (the IR is topologically sorted), a tile as an array over
 * the instance's active columns and a uniform as one double, and then
 * every store copies its value into the output.  Whatever the backend does
 * with loops, snapshots and masks, it must agree with this.
 *
 * Precision: f32 inputs are read as the doubles they are exactly, and no
 * intermediate result is rounded to f32 — the oracle is the exact-ish
 * answer the f32 code approximates, and the tolerance in compare.c is what
 * the approximation may cost.  A CAST is the one place values are rounded
 * (to f32, or truncated to i32), because there the rounding is the
 * program's meaning, not an accident of its evaluation.  A store into an f32
 * output rounds too: the output holds an f32, so the oracle wants the f32
 * nearest its value.  (The checker, range.c, refuses a kernel whose f32
 * values can pass FLT_MAX, so for a kernel that checks this rounding never
 * turns a finite value into an infinity.)  i32 arithmetic is
 * done exactly in int64 and wrapped like int32; bools are 0 and 1.
 *
 * The oracle defines the edge cases the backend must reproduce:
 *   - min/max propagate NaN (either operand NaN gives NaN), unlike fmin;
 *   - comparisons with NaN are false, except != which is true;
 *   - over no active columns, sum is 0, max is -inf and min is +inf;
 *   - inactive columns (at or past len[r] in a ragged kernel) are neither
 *     read nor written. */
#include <stdio.h>
#include <stdlib.h>

#include "ir/oracle_internal.h"
#include "lanemap/oracle.h"

typedef struct Interp {
  const lm_kernel *k;
  const lm_data *in;
  lm_oracle *o;
  int64_t N;      /* column domain */
  int64_t *pitch; /* [nparams] row pitch of rank-2 buffers */
  double **tile;  /* [nnodes] N doubles each for tile nodes */
  double *uni;    /* [nnodes] uniform values */
  double *block;  /* storage of the tiles */
} Interp;

static int op_arity(lm_op op) {
  if (op <= LM_OP_LOAD_INST)
    return 0;
  if (op <= LM_OP_CAST)
    return 1;
  if (op <= LM_OP_OR)
    return 2;
  if (op <= LM_OP_WHERE)
    return 3;
  return 1; /* reductions */
}

static int is_reduction(lm_op op) {
  return op == LM_OP_RSUM || op == LM_OP_RMAX || op == LM_OP_RMIN;
}

/* x ** n by binary powering; a negative n divides once at the end. */
static double powi(double x, int n) {
  unsigned m = n < 0 ? 0u - (unsigned)n : (unsigned)n;
  double r = 1, b = x;
  for (; m; m >>= 1) {
    if (m & 1)
      r *= b;
    b *= b;
  }
  return n < 0 ? 1 / r : r;
}

static int32_t powi_i32(int32_t x, int n) {
  if (n < 0) /* integer 1 / x**|n|, truncated; 1/0 is taken as 0 */
    return x == 1 ? 1 : x == -1 ? ((n & 1) ? -1 : 1) : 0;
  uint32_t r = 1, b = (uint32_t)x;
  for (unsigned m = (unsigned)n; m; m >>= 1) {
    if (m & 1)
      r *= b;
    b *= b;
  }
  return (int32_t)r;
}

static double nan_min(double a, double b) {
  if (isnan(a) || isnan(b))
    return NAN;
  return a < b ? a : b;
}

static double nan_max(double a, double b) {
  if (isnan(a) || isnan(b))
    return NAN;
  return a > b ? a : b;
}

static double apply_float(const lm_node *n, double a, double b, double c) {
  switch (n->op) {
  case LM_OP_NEG:
    return -a;
  case LM_OP_ABS:
    return fabs(a);
  case LM_OP_NOT:
    return a == 0;
  case LM_OP_EXP:
    return exp(a);
  case LM_OP_LOG:
    return log(a);
  case LM_OP_SQRT:
    return sqrt(a);
  case LM_OP_RSQRT:
    return 1 / sqrt(a);
  case LM_OP_TANH:
    return tanh(a);
  case LM_OP_ERF:
    return erf(a);
  case LM_OP_SIGMOID:
    return 1 / (1 + exp(-a));
  case LM_OP_SIN:
    return sin(a);
  case LM_OP_COS:
    return cos(a);
  case LM_OP_POWI:
    return powi(a, n->ipow);
  case LM_OP_CAST:
    if (n->dtype == LM_F32)
      return (double)(float)a;
    if (n->dtype == LM_BOOL)
      return a != 0;
    return a;
  case LM_OP_ADD:
    return a + b;
  case LM_OP_SUB:
    return a - b;
  case LM_OP_MUL:
    return a * b;
  case LM_OP_DIV:
    return a / b;
  case LM_OP_MIN:
    return nan_min(a, b);
  case LM_OP_MAX:
    return nan_max(a, b);
  case LM_OP_EQ:
    return a == b;
  case LM_OP_NE:
    return a != b;
  case LM_OP_LT:
    return a < b;
  case LM_OP_LE:
    return a <= b;
  case LM_OP_GT:
    return a > b;
  case LM_OP_GE:
    return a >= b;
  case LM_OP_AND:
    return a != 0 && b != 0;
  case LM_OP_OR:
    return a != 0 || b != 0;
  case LM_OP_FMA:
    return fma(a, b, c);
  case LM_OP_WHERE:
    return a != 0 ? b : c;
  default:
    abort(); /* leaves and reductions never reach here (check_ir) */
  }
}

/* i32 results: exact in int64, then wrapped to int32. */
static double apply_i32(const lm_node *n, double a, double b, double c) {
  int64_t x = elem_to_i32(a), y = elem_to_i32(b), z = elem_to_i32(c);
  switch (n->op) {
  case LM_OP_NEG:
    return elem_wrap32(-x);
  case LM_OP_ABS:
    return elem_wrap32(x < 0 ? -x : x);
  case LM_OP_ADD:
    return elem_wrap32(x + y);
  case LM_OP_SUB:
    return elem_wrap32(x - y);
  case LM_OP_MUL:
    return elem_wrap32(x * y);
  case LM_OP_DIV: /* C division; x/0 is taken as 0 */
    return y == 0 ? 0 : elem_wrap32(x / y);
  case LM_OP_MIN:
    return x < y ? x : y;
  case LM_OP_MAX:
    return x > y ? x : y;
  case LM_OP_FMA:
    return elem_wrap32(x * y + z);
  case LM_OP_POWI:
    return powi_i32((int32_t)x, n->ipow);
  case LM_OP_WHERE:
    return a != 0 ? b : c;
  case LM_OP_CAST:
    return elem_to_i32(a);
  default: /* math on integers: computed in double, then truncated */
    return elem_to_i32(apply_float(n, a, b, c));
  }
}

static double apply(const lm_node *n, double a, double b, double c) {
  return n->dtype == LM_I32 ? apply_i32(n, a, b, c) : apply_float(n, a, b, c);
}

static inline double arg(const Interp *x, int id, int64_t j) {
  if (id < 0)
    return 0;
  return x->k->nodes[id].tile ? x->tile[id][j] : x->uni[id];
}

/* Value of a leaf that does not vary along the row. */
static double leaf_value(const Interp *x, const lm_node *n, int64_t r) {
  const lm_shape *s = &x->in->shape;
  double v = 0;
  switch (n->op) {
  case LM_OP_CONST:
    v = n->imm;
    break;
  case LM_OP_SCALAR:
    v = x->in->scalar[n->param];
    break;
  case LM_OP_DIM:
    v = (double)n->coef * (n->sym >= 0 ? (double)s->dims[n->sym] : 1.0);
    break;
  case LM_OP_ROWIDX:
    v = (double)r;
    break;
  case LM_OP_LOAD_INST:
    v = elem_get(x->in->buf[n->param], x->k->params[n->param].dtype, r);
    break;
  default:
    abort();
  }
  return n->dtype == LM_I32 ? elem_to_i32(v) : v;
}

static double reduce(const Interp *x, const lm_node *n, int64_t len) {
  const double *t = x->tile[n->a];
  double acc;
  switch (n->op) {
  case LM_OP_RSUM:
    acc = 0;
    for (int64_t j = 0; j < len; j++)
      acc += t[j];
    return n->dtype == LM_I32 ? elem_wrap32((int64_t)acc) : acc;
  case LM_OP_RMAX:
    acc = -INFINITY;
    for (int64_t j = 0; j < len; j++)
      acc = nan_max(acc, t[j]);
    return acc;
  case LM_OP_RMIN:
    acc = INFINITY;
    for (int64_t j = 0; j < len; j++)
      acc = nan_min(acc, t[j]);
    return acc;
  default:
    abort();
  }
}

static void eval_tile(Interp *x, int i, int64_t r, int64_t len) {
  const lm_node *n = &x->k->nodes[i];
  double *t = x->tile[i];
  const void *buf = n->op == LM_OP_LOAD_ROW || n->op == LM_OP_LOAD_COL
                        ? x->in->buf[n->param]
                        : NULL;
  switch (n->op) {
  case LM_OP_LOAD_ROW: {
    lm_dtype dt = x->k->params[n->param].dtype;
    int64_t base = r * x->pitch[n->param] + n->start;
    for (int64_t j = 0; j < len; j++)
      t[j] = elem_get(buf, dt, base + n->step * j);
    break;
  }
  case LM_OP_LOAD_COL: {
    lm_dtype dt = x->k->params[n->param].dtype;
    for (int64_t j = 0; j < len; j++)
      t[j] = elem_get(buf, dt, n->start + n->step * j);
    break;
  }
  case LM_OP_COLIDX:
    for (int64_t j = 0; j < len; j++)
      t[j] = (double)j;
    break;
  case LM_OP_CONST:
  case LM_OP_SCALAR:
  case LM_OP_DIM:
  case LM_OP_ROWIDX:
  case LM_OP_LOAD_INST: {
    double v = leaf_value(x, n, r);
    for (int64_t j = 0; j < len; j++)
      t[j] = v;
    break;
  }
  default:
    for (int64_t j = 0; j < len; j++)
      t[j] = apply(n, arg(x, n->a, j), arg(x, n->b, j), arg(x, n->c, j));
  }
}

static void eval_uniform(Interp *x, int i, int64_t r, int64_t len) {
  const lm_node *n = &x->k->nodes[i];
  if (op_arity(n->op) == 0)
    x->uni[i] = leaf_value(x, n, r);
  else if (is_reduction(n->op))
    x->uni[i] = reduce(x, n, len);
  else
    x->uni[i] = apply(n, arg(x, n->a, 0), arg(x, n->b, 0), arg(x, n->c, 0));
}

/* A value as the output's dtype holds it: an f32 output cannot hold more
 * than FLT_MAX, so the oracle does not want more than it either. */
static double stored(lm_dtype t, double v) {
  return t == LM_F32 ? (double)(float)v : v;
}

static void run_store(Interp *x, const lm_store *st, int64_t r, int64_t len) {
  double *want = x->o->want[st->param];
  uint8_t *written = x->o->written[st->param];
  lm_dtype t = x->k->params[st->param].dtype;
  if (st->kind == LM_STORE_INST) {
    want[r] = stored(t, arg(x, st->value, 0));
    written[r] = 1;
    return;
  }
  int64_t base = r * x->pitch[st->param] + st->start;
  for (int64_t j = 0; j < len; j++) {
    int64_t idx = base + (int64_t)st->step * j;
    want[idx] = stored(t, arg(x, st->value, j));
    written[idx] = 1;
  }
}

static int64_t active_len(const Interp *x, int64_t r) {
  int p = x->k->rowlen_param;
  if (p < 0)
    return x->N;
  int64_t len = ((const int32_t *)x->in->buf[p])[r];
  return len < 0 ? 0 : len > x->N ? x->N : len;
}

/* The view start + step*j for j < N stays inside [0, extent). */
static int view_ok(int start, int step, int64_t N, int64_t extent) {
  return start >= 0 && step >= 1 &&
         (N == 0 || start + (int64_t)step * (N - 1) < extent);
}

static lm_status check_param(const lm_kernel *k, const lm_data *in, int p,
                             const char *what, lm_error *err) {
  if (p < 0 || p >= k->nparams)
    return lm_error_set(err, LM_EINPUT, "%s: no parameter %d", what, p);
  if (k->params[p].kind == LM_PARAM_BUFFER && !in->buf[p])
    return lm_error_set(err, LM_EINPUT, "%s: buffer %s has no data", what,
                        k->params[p].name);
  return LM_OK;
}

/* The interpreter trusts nothing it would index with: a kernel built by
 * hand (or a broken front end) gets an error, never an out-of-bounds read. */
static lm_status check_ir(const Interp *x, lm_error *err) {
  const lm_kernel *k = x->k;
  const lm_data *in = x->in;
  int64_t R = in->shape.dims[0], N = x->N;
  lm_status st;
  if (in->k->nparams != k->nparams)
    return lm_error_set(err, LM_EINPUT, "data made for another kernel");
  for (int p = 0; p < k->nparams; p++)
    if (in->count[p] != lm_param_count(k, p, &in->shape))
      return lm_error_set(err, LM_EINPUT, "%s: data has the wrong size",
                          k->params[p].name);
  if (k->rowlen_param >= 0) {
    int p = k->rowlen_param;
    if ((st = check_param(k, in, p, "rowlen", err)))
      return st;
    const lm_param *q = &k->params[p];
    if (q->kind != LM_PARAM_BUFFER || q->dtype != LM_I32 || in->count[p] < R)
      return lm_error_set(err, LM_EINPUT, "rowlen %s is not i32[R]", q->name);
  }
  for (int i = 0; i < k->nnodes; i++) {
    const lm_node *n = &k->nodes[i];
    char what[64];
    snprintf(what, sizeof what, "node %d", i);
    if ((unsigned)n->op >= LM_OP__COUNT)
      return lm_error_set(err, LM_EINPUT, "%s: bad op %d", what, (int)n->op);
    int ar = op_arity(n->op), ops[3] = {n->a, n->b, n->c};
    for (int o = 0; o < 3; o++) {
      if (o >= ar)
        continue;
      if (ops[o] < 0 || ops[o] >= i)
        return lm_error_set(err, LM_EINPUT, "%s: operand %d out of order", what,
                            ops[o]);
      if (!n->tile && k->nodes[ops[o]].tile && !is_reduction(n->op))
        return lm_error_set(err, LM_EINPUT, "%s: uniform with a tile operand",
                            what);
    }
    if (is_reduction(n->op) && (n->tile || !k->nodes[n->a].tile))
      return lm_error_set(err, LM_EINPUT,
                          "%s: reduction must map a tile to "
                          "a uniform",
                          what);
    switch (n->op) {
    case LM_OP_SCALAR:
      if ((st = check_param(k, in, n->param, what, err)))
        return st;
      if (k->params[n->param].kind != LM_PARAM_SCALAR)
        return lm_error_set(err, LM_EINPUT, "%s: %s is not a scalar", what,
                            k->params[n->param].name);
      break;
    case LM_OP_DIM:
      if (n->sym >= k->nsyms)
        return lm_error_set(err, LM_EINPUT, "%s: no symbol %d", what, n->sym);
      break;
    case LM_OP_LOAD_ROW:
    case LM_OP_LOAD_COL:
    case LM_OP_LOAD_INST: {
      if ((st = check_param(k, in, n->param, what, err)))
        return st;
      const lm_param *q = &k->params[n->param];
      int64_t c = in->count[n->param];
      int ok = q->kind == LM_PARAM_BUFFER && !q->is_output;
      if (n->op == LM_OP_LOAD_ROW)
        ok = ok && n->tile && q->rank == 2 &&
             view_ok(n->start, n->step, N, x->pitch[n->param]);
      else if (n->op == LM_OP_LOAD_COL)
        ok = ok && n->tile && view_ok(n->start, n->step, N, c);
      else
        ok = ok && !n->tile && q->rank == 1 && c >= R;
      if (!ok)
        return lm_error_set(err, LM_EINPUT, "%s: bad load of %s", what,
                            q->name);
      break;
    }
    case LM_OP_COLIDX:
      if (!n->tile)
        return lm_error_set(err, LM_EINPUT, "%s: c must be a tile", what);
      break;
    default:
      break;
    }
  }
  for (int i = 0; i < k->nstores; i++) {
    const lm_store *s = &k->stores[i];
    char what[64];
    snprintf(what, sizeof what, "store %d", i);
    if ((st = check_param(k, in, s->param, what, err)))
      return st;
    const lm_param *q = &k->params[s->param];
    if (s->value < 0 || s->value >= k->nnodes)
      return lm_error_set(err, LM_EINPUT, "%s: no node %d", what, s->value);
    int ok = q->kind == LM_PARAM_BUFFER && q->is_output;
    if (s->kind == LM_STORE_ROW)
      ok = ok && q->rank == 2 &&
           view_ok(s->start, s->step, N, x->pitch[s->param]);
    else
      ok = ok && q->rank == 1 && in->count[s->param] >= R &&
           !k->nodes[s->value].tile;
    if (!ok)
      return lm_error_set(err, LM_EINPUT, "%s: bad store into %s", what,
                          q->name);
  }
  return LM_OK;
}

static lm_status alloc_outputs(lm_oracle *o, const lm_kernel *k,
                               const lm_data *in, lm_error *err) {
  o->nparams = k->nparams;
  o->want = calloc((size_t)k->nparams + 1, sizeof *o->want);
  o->written = calloc((size_t)k->nparams + 1, sizeof *o->written);
  o->count = calloc((size_t)k->nparams + 1, sizeof *o->count);
  if (!o->want || !o->written || !o->count)
    return lm_error_set(err, LM_ESYS, "out of memory");
  for (int p = 0; p < k->nparams; p++) {
    o->count[p] = in->count[p];
    if (!k->params[p].is_output || k->params[p].kind != LM_PARAM_BUFFER)
      continue;
    o->want[p] = calloc((size_t)o->count[p], sizeof(double));
    o->written[p] = calloc((size_t)o->count[p], 1);
    if (!o->want[p] || !o->written[p])
      return lm_error_set(err, LM_ESYS, "out of memory for %s",
                          k->params[p].name);
  }
  return LM_OK;
}

static lm_status alloc_tiles(Interp *x, lm_error *err) {
  const lm_kernel *k = x->k;
  size_t ntiles = 0;
  x->tile = calloc((size_t)k->nnodes + 1, sizeof *x->tile);
  x->uni = calloc((size_t)k->nnodes + 1, sizeof *x->uni);
  x->pitch = calloc((size_t)k->nparams + 1, sizeof *x->pitch);
  if (!x->tile || !x->uni || !x->pitch)
    return lm_error_set(err, LM_ESYS, "out of memory");
  for (int p = 0; p < k->nparams; p++) {
    const lm_param *q = &k->params[p];
    if (q->kind == LM_PARAM_BUFFER)
      x->pitch[p] = lm_dim_eval(q->dims[q->rank == 2 ? 1 : 0], &x->in->shape);
  }
  for (int i = 0; i < k->nnodes; i++)
    ntiles += k->nodes[i].tile != 0;
  size_t bytes;
  if (__builtin_mul_overflow(ntiles, (size_t)x->N, &bytes) ||
      __builtin_mul_overflow(bytes, sizeof(double), &bytes))
    return lm_error_set(err, LM_EINPUT, "%zu tiles of %lld columns: too big",
                        ntiles, (long long)x->N);
  x->block = malloc(bytes ? bytes : 1);
  if (!x->block)
    return lm_error_set(err, LM_ESYS, "out of memory for %zu tile bytes",
                        bytes);
  double *next = x->block;
  for (int i = 0; i < k->nnodes; i++)
    if (k->nodes[i].tile) {
      x->tile[i] = next;
      next += x->N;
    }
  return LM_OK;
}

lm_status lm_oracle_run(const lm_kernel *k, const lm_data *in, lm_oracle **out,
                        lm_error *err) {
  lm_status st;
  Interp x = {.k = k, .in = in, .N = lm_dim_eval(k->ncols, &in->shape)};
  *out = NULL;
  x.o = calloc(1, sizeof *x.o);
  if (!x.o) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto error;
  }
  if (x.N < 0) {
    st = lm_error_set(err, LM_EINPUT, "column domain of %lld columns",
                      (long long)x.N);
    goto error;
  }
  if ((st = alloc_tiles(&x, err)) || (st = check_ir(&x, err)) ||
      (st = alloc_outputs(x.o, k, in, err)))
    goto error;
  for (int64_t r = 0; r < in->shape.dims[0]; r++) {
    int64_t len = active_len(&x, r);
    for (int i = 0; i < k->nnodes; i++) {
      if (k->nodes[i].tile)
        eval_tile(&x, i, r, len);
      else
        eval_uniform(&x, i, r, len);
    }
    for (int i = 0; i < k->nstores; i++)
      run_store(&x, &k->stores[i], r, len);
  }
  *out = x.o;
  x.o = NULL;
error:
  lm_oracle_free(x.o);
  free(x.tile);
  free(x.uni);
  free(x.pitch);
  free(x.block);
  return st;
}

void lm_oracle_free(lm_oracle *o) {
  if (!o)
    return;
  for (int p = 0; p < o->nparams; p++) {
    if (o->want)
      free(o->want[p]);
    if (o->written)
      free(o->written[p]);
  }
  free(o->want);
  free(o->written);
  free(o->count);
  free(o);
}
