/* Claims about the FP64 oracle: the interpreter's values on small rows
 * worked out by hand, the comparison rule, the seeded generator, and the
 * summary.  Kernels are built as IR by hand here, so each claim pins the
 * interpreter and not the front end; the bundled kernels run through the
 * whole path at the end. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lanemap/oracle.h"

/* ---- building IR by hand ---------------------------------------------- */

#define KB_MAX 48
typedef struct KB {
  lm_kernel k;
  lm_param params[16];
  lm_node nodes[KB_MAX];
  lm_store stores[16];
  const char *syms[4];
} KB;

static const lm_dim D_R = {0, 1}, D_C = {1, 1};

/* A kernel over symbols R and C (or the given second symbol) with the
 * column domain N = ncols. */
static KB *kb_new(const char *name, lm_dtype elem, const char *sym1,
                  lm_dim ncols) {
  KB *b = calloc(1, sizeof *b);
  b->syms[0] = "R";
  b->syms[1] = sym1;
  b->k.name = name;
  b->k.file = "<hand>";
  b->k.syms = b->syms;
  b->k.nsyms = 2;
  b->k.params = b->params;
  b->k.nodes = b->nodes;
  b->k.stores = b->stores;
  b->k.ncols = ncols;
  b->k.col_sym = 1;
  b->k.rowlen_param = -1;
  b->k.elem = elem;
  return b;
}

static int kb_buf(KB *b, const char *name, lm_dtype t, int rank, lm_dim d0,
                  lm_dim d1, int is_output) {
  lm_param *q = &b->params[b->k.nparams];
  q->name = name;
  q->kind = LM_PARAM_BUFFER;
  q->dtype = t;
  q->is_output = is_output;
  q->rank = rank;
  q->dims[0] = d0;
  q->dims[1] = d1;
  q->lo = -1;
  q->hi = 1;
  return b->k.nparams++;
}

static int kb_scalar(KB *b, const char *name, lm_dtype t, double defval) {
  lm_param *q = &b->params[b->k.nparams];
  q->name = name;
  q->kind = LM_PARAM_SCALAR;
  q->dtype = t;
  q->has_default = 1;
  q->defval = defval;
  q->lo = -1;
  q->hi = 1;
  return b->k.nparams++;
}

static int kb_node(KB *b, lm_op op, lm_dtype t, int tile, int a, int bb,
                   int c) {
  cr_assert(b->k.nnodes < KB_MAX);
  lm_node *n = &b->nodes[b->k.nnodes];
  n->op = op;
  n->dtype = t;
  n->tile = tile;
  n->a = a;
  n->b = bb;
  n->c = c;
  n->param = -1;
  n->sym = -1;
  n->step = 1;
  return b->k.nnodes++;
}

static int kb_const(KB *b, lm_dtype t, double v) {
  int i = kb_node(b, LM_OP_CONST, t, 0, -1, -1, -1);
  b->nodes[i].imm = v;
  return i;
}

static int kb_dim(KB *b, int sym, int64_t coef) {
  int i = kb_node(b, LM_OP_DIM, b->k.elem, 0, -1, -1, -1);
  b->nodes[i].sym = sym;
  b->nodes[i].coef = coef;
  return i;
}

static int kb_load(KB *b, lm_op op, int p, int start, int step) {
  int i = kb_node(b, op, b->params[p].dtype, op != LM_OP_LOAD_INST, -1, -1, -1);
  b->nodes[i].param = p;
  b->nodes[i].start = start;
  b->nodes[i].step = step;
  return i;
}

static int kb_row(KB *b, int p) { return kb_load(b, LM_OP_LOAD_ROW, p, 0, 1); }
static int kb_col(KB *b, int p) { return kb_load(b, LM_OP_LOAD_COL, p, 0, 1); }

static int kb_scal(KB *b, int p) {
  int i = kb_node(b, LM_OP_SCALAR, b->params[p].dtype, 0, -1, -1, -1);
  b->nodes[i].param = p;
  return i;
}

static int is_cmp(lm_op op) { return op >= LM_OP_EQ && op <= LM_OP_OR; }

static int kb_un(KB *b, lm_op op, int a) {
  lm_dtype t = op == LM_OP_NOT ? LM_BOOL : b->nodes[a].dtype;
  return kb_node(b, op, t, b->nodes[a].tile, a, -1, -1);
}

static int kb_powi(KB *b, int a, int n) {
  int i = kb_un(b, LM_OP_POWI, a);
  b->nodes[i].ipow = n;
  return i;
}

static int kb_cast(KB *b, int a, lm_dtype t) {
  int i = kb_un(b, LM_OP_CAST, a);
  b->nodes[i].dtype = t;
  return i;
}

static int kb_bin(KB *b, lm_op op, int a, int c) {
  lm_dtype t = is_cmp(op) ? LM_BOOL : b->nodes[a].dtype;
  return kb_node(b, op, t, b->nodes[a].tile || b->nodes[c].tile, a, c, -1);
}

static int kb_tern(KB *b, lm_op op, int a, int x, int y) {
  int tile = b->nodes[a].tile || b->nodes[x].tile || b->nodes[y].tile;
  return kb_node(b, op, b->nodes[x].dtype, tile, a, x, y);
}

static int kb_red(KB *b, lm_op op, int a) {
  return kb_node(b, op, b->nodes[a].dtype, 0, a, -1, -1);
}

static void kb_store_row(KB *b, int p, int start, int step, int v) {
  lm_store *s = &b->stores[b->k.nstores++];
  s->kind = LM_STORE_ROW;
  s->param = p;
  s->start = start;
  s->step = step;
  s->value = v;
}

static void kb_store_inst(KB *b, int p, int v) {
  lm_store *s = &b->stores[b->k.nstores++];
  s->kind = LM_STORE_INST;
  s->param = p;
  s->value = v;
}

static lm_shape shape2(int64_t R, int64_t C) {
  lm_shape s = {.dims = {R, C}, .nsyms = 2};
  return s;
}

static lm_data *gen(KB *b, lm_shape s, uint64_t seed) {
  lm_data *d = NULL;
  lm_error err = {0};
  lm_status st = lm_data_gen(&b->k, &s, seed, &d, &err);
  cr_assert_eq(st, LM_OK, "lm_data_gen: %s", err.msg);
  cr_assert_not_null(d);
  return d;
}

static lm_oracle *run(KB *b, lm_data *d) {
  lm_oracle *o = NULL;
  lm_error err = {0};
  lm_status st = lm_oracle_run(&b->k, d, &o, &err);
  cr_assert_eq(st, LM_OK, "lm_oracle_run: %s", err.msg);
  cr_assert_not_null(o);
  return o;
}

static void set_f32(lm_data *d, int p, const float *v, int n) {
  memcpy(d->buf[p], v, sizeof *v * (size_t)n);
}
static void set_f64(lm_data *d, int p, const double *v, int n) {
  memcpy(d->buf[p], v, sizeof *v * (size_t)n);
}
static void set_i32(lm_data *d, int p, const int32_t *v, int n) {
  memcpy(d->buf[p], v, sizeof *v * (size_t)n);
}

/* Within 1e-13 relative: the hand values come from another libm.  Or, for
 * an f32 output, the f32 nearest the hand value: an f32 `got` within half
 * an f32 ulp (2^-24 relative) of it. */
static void expect_near(double got, double want) {
  int f32_nearest = (double)(float)got == got &&
                    fabs(got - want) <= ldexp(fabs(want), -24) * (1 + 1e-9);
  cr_expect(f32_nearest || fabs(got - want) <= 1e-13 * (1 + fabs(want)),
            "got %.17g, want %.17g", got, want);
}

/* Write the oracle's answer into the outputs in their native type, as a
 * correct implementation would. */
static void write_want(const lm_kernel *k, const lm_oracle *o, lm_data *d) {
  for (int p = 0; p < k->nparams; p++) {
    if (!o->want[p])
      continue;
    for (int64_t i = 0; i < o->count[p]; i++) {
      if (!o->written[p][i])
        continue;
      double v = o->want[p][i];
      switch (k->params[p].dtype) {
      case LM_F32:
        ((float *)d->buf[p])[i] = (float)v;
        break;
      case LM_F64:
        ((double *)d->buf[p])[i] = v;
        break;
      default:
        ((int32_t *)d->buf[p])[i] = (int32_t)v;
      }
    }
  }
}

/* ---- operator families, by hand ---------------------------------------- */

/* y = x / sqrt(sum(x*x)/C + eps) * g */
static KB *make_rmsnorm(void) {
  KB *b = kb_new("rmsnorm", LM_F32, "C", D_C);
  int x = kb_buf(b, "x", LM_F32, 2, D_R, D_C, 0);
  int g = kb_buf(b, "g", LM_F32, 1, D_C, D_C, 0);
  int eps = kb_scalar(b, "eps", LM_F32, 0.5);
  int y = kb_buf(b, "y", LM_F32, 2, D_R, D_C, 1);
  int xs = kb_row(b, x);
  int ms =
      kb_bin(b, LM_OP_DIV, kb_red(b, LM_OP_RSUM, kb_bin(b, LM_OP_MUL, xs, xs)),
             kb_dim(b, 1, 1));
  int den = kb_un(b, LM_OP_SQRT, kb_bin(b, LM_OP_ADD, ms, kb_scal(b, eps)));
  kb_store_row(
      b, y, 0, 1,
      kb_bin(b, LM_OP_MUL, kb_bin(b, LM_OP_DIV, xs, den), kb_col(b, g)));
  return b;
}

Test(oracle_ops, rmsnorm_of_1_2_3_4_is_x_over_sqrt_8_times_g) {
  KB *b = make_rmsnorm();
  lm_data *d = gen(b, shape2(1, 4), 1);
  set_f32(d, 0, (float[]){1, 2, 3, 4}, 4);
  set_f32(d, 1, (float[]){2, 1, 1, 0.5f}, 4);
  cr_assert_eq(d->scalar[2], 0.5, "the scalar takes its default");
  lm_oracle *o = run(b, d);
  /* ms = 30/4 = 7.5, + eps = 8 */
  const double want[] = {0.7071067811865475, 0.7071067811865475,
                         1.0606601717798212, 0.7071067811865475};
  for (int j = 0; j < 4; j++) {
    expect_near(o->want[3][j], want[j]);
    cr_expect_eq(o->written[3][j], 1);
  }
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

Test(oracle_ops, a_store_into_an_f32_output_wants_the_nearest_f32) {
  /* x / 3 rounds to an f32; x * 1e38 past FLT_MAX is +inf, the most an f32
   * output can hold, not 7e44 (the checker refuses such a kernel; this one
   * is built by hand).  An f64 output keeps the double. */
  for (int f64 = 0; f64 < 2; f64++) {
    lm_dtype t = f64 ? LM_F64 : LM_F32;
    KB *b = kb_new("rounding", t, "C", D_C);
    int x = kb_buf(b, "x", t, 2, D_R, D_C, 0);
    int y = kb_buf(b, "y", t, 2, D_R, D_C, 1);
    int z = kb_buf(b, "z", t, 2, D_R, D_C, 1);
    int xs = kb_row(b, x);
    kb_store_row(b, y, 0, 1, kb_bin(b, LM_OP_DIV, xs, kb_const(b, t, 3)));
    kb_store_row(b, z, 0, 1, kb_bin(b, LM_OP_MUL, xs, kb_const(b, t, 1e38)));
    lm_data *d = gen(b, shape2(1, 2), 1);
    if (f64)
      set_f64(d, x, (double[]){1, 7e6}, 2);
    else
      set_f32(d, x, (float[]){1, 7e6f}, 2);
    lm_oracle *o = run(b, d);
    cr_expect_eq(o->want[y][0], f64 ? 1.0 / 3 : (double)(1.0f / 3));
    cr_expect_eq(o->want[z][0], f64 ? 1e38 : (double)1e38f);
    if (f64)
      cr_expect_eq(o->want[z][1], 7e44);
    else
      cr_expect(isinf(o->want[z][1]) && o->want[z][1] > 0, "%g", o->want[z][1]);
    lm_oracle_free(o);
    lm_data_free(d);
    free(b);
  }
}

Test(oracle_ops, layernorm_of_1_2_3_4_centres_and_scales_by_sqrt_2) {
  KB *b = kb_new("layernorm", LM_F32, "C", D_C);
  int x = kb_buf(b, "x", LM_F32, 2, D_R, D_C, 0);
  int g = kb_buf(b, "g", LM_F32, 1, D_C, D_C, 0);
  int bb = kb_buf(b, "b", LM_F32, 1, D_C, D_C, 0);
  int eps = kb_scalar(b, "eps", LM_F32, 0.75);
  int y = kb_buf(b, "y", LM_F32, 2, D_R, D_C, 1);
  int xs = kb_row(b, x), C = kb_dim(b, 1, 1);
  int mu = kb_bin(b, LM_OP_DIV, kb_red(b, LM_OP_RSUM, xs), C);
  int dd = kb_bin(b, LM_OP_SUB, xs, mu);
  int var = kb_bin(b, LM_OP_DIV,
                   kb_red(b, LM_OP_RSUM, kb_bin(b, LM_OP_MUL, dd, dd)), C);
  int den = kb_un(b, LM_OP_SQRT, kb_bin(b, LM_OP_ADD, var, kb_scal(b, eps)));
  int v =
      kb_bin(b, LM_OP_ADD,
             kb_bin(b, LM_OP_MUL, kb_bin(b, LM_OP_DIV, dd, den), kb_col(b, g)),
             kb_col(b, bb));
  kb_store_row(b, y, 0, 1, v);
  lm_data *d = gen(b, shape2(1, 4), 1);
  set_f32(d, x, (float[]){1, 2, 3, 4}, 4);
  set_f32(d, g, (float[]){1, 1, 1, 1}, 4);
  set_f32(d, bb, (float[]){0, 0, 0, 1}, 4);
  lm_oracle *o = run(b, d);
  /* mu = 2.5, var = 1.25, + eps = 2 */
  const double want[] = {-1.0606601717798212, -0.35355339059327373,
                         0.35355339059327373, 2.0606601717798212};
  for (int j = 0; j < 4; j++)
    expect_near(o->want[y][j], want[j]);
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

static KB *make_masked_softmax(void) {
  KB *b = kb_new("masked_softmax", LM_F32, "C", D_C);
  int x = kb_buf(b, "x", LM_F32, 2, D_R, D_C, 0);
  int m = kb_buf(b, "m", LM_I32, 2, D_R, D_C, 0);
  b->params[m].gen = LM_GEN_MASK;
  int y = kb_buf(b, "y", LM_F32, 2, D_R, D_C, 1);
  int cond = kb_bin(b, LM_OP_NE, kb_row(b, m), kb_const(b, LM_I32, 0));
  int z = kb_tern(b, LM_OP_WHERE, cond, kb_row(b, x),
                  kb_const(b, LM_F32, -INFINITY));
  int e =
      kb_un(b, LM_OP_EXP, kb_bin(b, LM_OP_SUB, z, kb_red(b, LM_OP_RMAX, z)));
  kb_store_row(b, y, 0, 1, kb_bin(b, LM_OP_DIV, e, kb_red(b, LM_OP_RSUM, e)));
  return b;
}

Test(oracle_ops, masked_softmax_gives_masked_columns_exactly_zero) {
  KB *b = make_masked_softmax();
  lm_data *d = gen(b, shape2(2, 4), 1);
  set_f32(d, 0, (float[]){0, 1, 2, 3, 0, 1, 2, 3}, 8);
  set_i32(d, 1, (int32_t[]){1, 0, 1, 1, 0, 0, 1, 0}, 8);
  lm_oracle *o = run(b, d);
  const double *w = o->want[2];
  /* row 0: exp(z - 3) = e^-3, 0, e^-1, 1 over their sum */
  expect_near(w[0], 0.03511902695933972);
  cr_expect_eq(w[1], 0.0, "a masked column is exactly 0, got %g", w[1]);
  expect_near(w[2], 0.2594964603424191);
  expect_near(w[3], 0.7053845126982411);
  /* row 1: one unmasked column */
  cr_expect_eq(w[4], 0.0);
  cr_expect_eq(w[5], 0.0);
  cr_expect_eq(w[6], 1.0, "a single unmasked column gives 1, got %.17g", w[6]);
  cr_expect_eq(w[7], 0.0);
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

Test(oracle_ops, a_fully_masked_softmax_row_is_nan_in_every_column) {
  KB *b = make_masked_softmax();
  lm_data *d = gen(b, shape2(1, 3), 1);
  set_i32(d, 1, (int32_t[]){0, 0, 0}, 3);
  lm_oracle *o = run(b, d);
  /* max is -inf, so z - max(z) is -inf - -inf = NaN */
  for (int j = 0; j < 3; j++)
    cr_expect(isnan(o->want[2][j]), "y[%d] = %g", j, o->want[2][j]);
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

Test(oracle_ops, swiglu_is_a_times_sigmoid_a_times_b) {
  KB *b = kb_new("swiglu", LM_F32, "C", D_C);
  int a = kb_buf(b, "a", LM_F32, 2, D_R, D_C, 0);
  int bb = kb_buf(b, "b", LM_F32, 2, D_R, D_C, 0);
  int y = kb_buf(b, "y", LM_F32, 2, D_R, D_C, 1);
  int av = kb_row(b, a);
  kb_store_row(b, y, 0, 1,
               kb_bin(b, LM_OP_MUL,
                      kb_bin(b, LM_OP_MUL, av, kb_un(b, LM_OP_SIGMOID, av)),
                      kb_row(b, bb)));
  lm_data *d = gen(b, shape2(1, 4), 1);
  set_f32(d, a, (float[]){0, 1, -2, 4}, 4);
  set_f32(d, bb, (float[]){1, 2, 3, 0.5f}, 4);
  lm_oracle *o = run(b, d);
  const double want[] = {0, 1.4621171572600098, -0.7152175321327052,
                         1.964027580075817};
  for (int j = 0; j < 4; j++)
    expect_near(o->want[y][j], want[j]);
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

Test(oracle_ops, gelu_uses_erf_and_adds_the_residual) {
  KB *b = kb_new("gelu_residual", LM_F32, "C", D_C);
  int x = kb_buf(b, "x", LM_F32, 2, D_R, D_C, 0);
  int res = kb_buf(b, "res", LM_F32, 2, D_R, D_C, 0);
  int y = kb_buf(b, "y", LM_F32, 2, D_R, D_C, 1);
  int xs = kb_row(b, x);
  int er =
      kb_un(b, LM_OP_ERF,
            kb_bin(b, LM_OP_MUL, xs, kb_const(b, LM_F32, 0.7071067811865476)));
  int gl =
      kb_bin(b, LM_OP_MUL, kb_bin(b, LM_OP_MUL, kb_const(b, LM_F32, 0.5), xs),
             kb_bin(b, LM_OP_ADD, kb_const(b, LM_F32, 1), er));
  kb_store_row(b, y, 0, 1, kb_bin(b, LM_OP_ADD, gl, kb_row(b, res)));
  lm_data *d = gen(b, shape2(1, 4), 1);
  set_f32(d, x, (float[]){0, 1, -1, 2}, 4);
  set_f32(d, res, (float[]){1, 0, 0, 0}, 4);
  lm_oracle *o = run(b, d);
  const double want[] = {1, 0.841344746068543, -0.15865525393145702,
                         1.9544997361036416};
  for (int j = 0; j < 4; j++)
    expect_near(o->want[y][j], want[j]);
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

static KB *make_rope(lm_dtype t) {
  lm_dim H = {1, 1}, H2 = {1, 2};
  KB *b = kb_new("rope", t, "H", H);
  int x = kb_buf(b, "x", t, 2, D_R, H2, 0);
  int cs = kb_buf(b, "cs", t, 2, D_R, H, 0);
  int sn = kb_buf(b, "sn", t, 2, D_R, H, 0);
  int y = kb_buf(b, "y", t, 2, D_R, H2, 1);
  int a = kb_load(b, LM_OP_LOAD_ROW, x, 0, 2);
  int bv = kb_load(b, LM_OP_LOAD_ROW, x, 1, 2);
  int c = kb_row(b, cs), s = kb_row(b, sn);
  kb_store_row(b, y, 0, 2,
               kb_bin(b, LM_OP_SUB, kb_bin(b, LM_OP_MUL, a, c),
                      kb_bin(b, LM_OP_MUL, bv, s)));
  kb_store_row(b, y, 1, 2,
               kb_bin(b, LM_OP_ADD, kb_bin(b, LM_OP_MUL, a, s),
                      kb_bin(b, LM_OP_MUL, bv, c)));
  return b;
}

Test(oracle_ops, rope_rotates_each_interleaved_pair) {
  KB *b = make_rope(LM_F64);
  lm_data *d = gen(b, shape2(1, 2), 1); /* H = 2: two pairs */
  set_f64(d, 0, (double[]){1, 2, 3, 4}, 4);
  set_f64(d, 1, (double[]){0.6, 0}, 2);
  set_f64(d, 2, (double[]){0.8, 1}, 2);
  lm_oracle *o = run(b, d);
  /* (1,2) by (0.6,0.8): (0.6-1.6, 0.8+1.2); (3,4) by (0,1): (-4, 3) */
  const double want[] = {-1, 2, -4, 3};
  for (int j = 0; j < 4; j++) {
    expect_near(o->want[3][j], want[j]);
    cr_expect_eq(o->written[3][j], 1,
                 "both views together write every "
                 "element");
  }
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

/* y[r, :] = 2*x; mx[r] = max(x); s[r] = sum(x), over len[r] columns */
static KB *make_ragged(void) {
  KB *b = kb_new("ragged", LM_F32, "C", D_C);
  int x = kb_buf(b, "x", LM_F32, 2, D_R, D_C, 0);
  int len = kb_buf(b, "len", LM_I32, 1, D_R, D_R, 0);
  b->params[len].gen = LM_GEN_ROWLEN;
  b->k.rowlen_param = len;
  int y = kb_buf(b, "y", LM_F32, 2, D_R, D_C, 1);
  int mx = kb_buf(b, "mx", LM_F32, 1, D_R, D_R, 1);
  int s = kb_buf(b, "s", LM_F32, 1, D_R, D_R, 1);
  int xs = kb_row(b, x);
  kb_store_row(b, y, 0, 1, kb_bin(b, LM_OP_MUL, kb_const(b, LM_F32, 2), xs));
  kb_store_inst(b, mx, kb_red(b, LM_OP_RMAX, xs));
  kb_store_inst(b, s, kb_red(b, LM_OP_RSUM, xs));
  return b;
}

Test(oracle_ragged, inactive_columns_are_neither_read_nor_written) {
  KB *b = make_ragged();
  lm_data *d = gen(b, shape2(5, 3), 7);
  set_f32(d, 0, (float[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
          15);
  /* full row, empty row, two columns, a length past N clamped to N and a
   * negative one clamped to 0 */
  set_i32(d, 1, (int32_t[]){3, 0, 2, 9, -3}, 5);
  lm_oracle *o = run(b, d);
  const uint8_t want_written[] = {1, 1, 1, 0, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 0};
  for (int i = 0; i < 15; i++)
    cr_expect_eq(o->written[2][i], want_written[i], "y[%d] written=%d", i,
                 o->written[2][i]);
  cr_expect_eq(o->want[2][6], 14.0);
  cr_expect_eq(o->want[2][7], 16.0);
  /* the max of row 2 ignores its inactive column 9 */
  cr_expect_eq(o->want[3][2], 8.0);
  cr_expect_eq(o->want[4][2], 15.0);
  cr_expect_eq(o->want[4][3], 33.0);
  cr_expect_eq(o->want[4][4], 0.0, "a negative length is an empty row");
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

Test(oracle_ragged, empty_row_writes_nothing_and_reduces_to_identities) {
  KB *b = make_ragged();
  lm_data *d = gen(b, shape2(3, 4), 7);
  int32_t *len = d->buf[1];
  cr_assert_eq(len[1], 0, "the generator makes row 1 empty");
  lm_oracle *o = run(b, d);
  for (int j = 0; j < 4; j++)
    cr_expect_eq(o->written[2][4 + j], 0, "empty row: y[1][%d] unwritten", j);
  cr_expect_eq(o->written[3][1], 1,
               "a per-row output of an empty row is "
               "still written");
  cr_expect(isinf(o->want[3][1]) && o->want[3][1] < 0,
            "max over no columns is -inf, got %g", o->want[3][1]);
  cr_expect_eq(o->want[4][1], 0.0, "sum over no columns is 0");
  /* and the oracle's own answer, written back, passes with the sentinels */
  write_want(&b->k, o, d);
  lm_compare_result r;
  cr_expect_eq(lm_oracle_compare(&b->k, o, d, &r), 0);
  cr_expect_eq(r.checked, 12 + 3 + 3);
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

Test(oracle_ops, per_row_output_holds_logsumexp_of_each_row) {
  KB *b = kb_new("logsumexp", LM_F32, "C", D_C);
  int x = kb_buf(b, "x", LM_F32, 2, D_R, D_C, 0);
  int out = kb_buf(b, "out", LM_F32, 1, D_R, D_R, 1);
  int xs = kb_row(b, x);
  int mx = kb_red(b, LM_OP_RMAX, xs);
  int lse =
      kb_bin(b, LM_OP_ADD, mx,
             kb_un(b, LM_OP_LOG,
                   kb_red(b, LM_OP_RSUM,
                          kb_un(b, LM_OP_EXP, kb_bin(b, LM_OP_SUB, xs, mx)))));
  kb_store_inst(b, out, lse);
  lm_data *d = gen(b, shape2(2, 4), 1);
  set_f32(d, x, (float[]){0, 0, 0, 0, 1, 2, 3, 4}, 8);
  lm_oracle *o = run(b, d);
  cr_expect_eq(o->count[out], 2);
  expect_near(o->want[out][0], 1.3862943611198906);
  expect_near(o->want[out][1], 4.440189698561196);
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

Test(oracle_ops, unary_math_follows_libm_and_rsqrt_is_one_over_sqrt) {
  static const lm_op ops[] = {LM_OP_EXP,   LM_OP_LOG,  LM_OP_SQRT,
                              LM_OP_RSQRT, LM_OP_TANH, LM_OP_SIN,
                              LM_OP_COS,   LM_OP_ABS,  LM_OP_NEG};
  enum { NOPS = sizeof ops / sizeof ops[0] };
  static const char *names[NOPS] = {"exp", "log", "sqrt", "rsqrt", "tanh",
                                    "sin", "cos", "abs",  "neg"};
  /* at x = 0.5 and x = 4 */
  static const double want[NOPS][2] = {
      {1.6487212707001282, 54.598150033144236},
      {-0.6931471805599453, 1.3862943611198906},
      {0.7071067811865476, 2},
      {1.4142135623730951, 0.5},
      {0.46211715726000974, 0.999329299739067},
      {0.479425538604203, -0.7568024953079282},
      {0.8775825618903728, -0.6536436208636119},
      {0.5, 4},
      {-0.5, -4}};
  KB *b = kb_new("math", LM_F64, "C", D_C);
  int x = kb_buf(b, "x", LM_F64, 2, D_R, D_C, 0);
  int xs = kb_row(b, x);
  for (int i = 0; i < NOPS; i++)
    kb_store_row(b, kb_buf(b, names[i], LM_F64, 2, D_R, D_C, 1), 0, 1,
                 kb_un(b, ops[i], xs));
  lm_data *d = gen(b, shape2(1, 2), 1);
  set_f64(d, x, (double[]){0.5, 4}, 2);
  lm_oracle *o = run(b, d);
  for (int i = 0; i < NOPS; i++)
    for (int j = 0; j < 2; j++) {
      double g = o->want[x + 1 + i][j];
      cr_expect(fabs(g - want[i][j]) <= 1e-15 * (1 + fabs(want[i][j])),
                "%s at %d: %.17g", names[i], j, g);
    }
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

Test(oracle_ops, powi_multiplies_and_divides_for_negative_exponents) {
  KB *b = kb_new("powi", LM_F64, "C", D_C);
  int x = kb_buf(b, "x", LM_F64, 2, D_R, D_C, 0);
  int y3 = kb_buf(b, "y3", LM_F64, 2, D_R, D_C, 1);
  int ym2 = kb_buf(b, "ym2", LM_F64, 2, D_R, D_C, 1);
  int y0 = kb_buf(b, "y0", LM_F64, 2, D_R, D_C, 1);
  int xs = kb_row(b, x);
  kb_store_row(b, y3, 0, 1, kb_powi(b, xs, 3));
  kb_store_row(b, ym2, 0, 1, kb_powi(b, xs, -2));
  kb_store_row(b, y0, 0, 1, kb_powi(b, xs, 0));
  lm_data *d = gen(b, shape2(1, 4), 1);
  set_f64(d, x, (double[]){2, -3, 0.5, 0}, 4);
  lm_oracle *o = run(b, d);
  const double w3[] = {8, -27, 0.125, 0}, wm2[] = {0.25, 1.0 / 9, 4, INFINITY};
  for (int j = 0; j < 4; j++) {
    cr_expect_eq(o->want[y3][j], w3[j], "x^3 at %d: %g", j, o->want[y3][j]);
    cr_expect_eq(o->want[ym2][j], wm2[j], "x^-2 at %d: %g", j, o->want[ym2][j]);
    cr_expect_eq(o->want[y0][j], 1.0);
  }
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

Test(oracle_ops, nan_compares_false_except_ne_and_propagates_through_min_max) {
  KB *b = kb_new("nan_rules", LM_F32, "C", D_C);
  int x = kb_buf(b, "x", LM_F32, 2, D_R, D_C, 0);
  int y1 = kb_buf(b, "y1", LM_F32, 2, D_R, D_C, 1);
  int y2 = kb_buf(b, "y2", LM_F32, 2, D_R, D_C, 1);
  int y3 = kb_buf(b, "y3", LM_F32, 2, D_R, D_C, 1);
  int mx = kb_buf(b, "mx", LM_F32, 1, D_R, D_R, 1);
  int xs = kb_row(b, x), zero = kb_const(b, LM_F32, 0);
  kb_store_row(
      b, y1, 0, 1,
      kb_tern(b, LM_OP_WHERE, kb_bin(b, LM_OP_GT, xs, zero), xs, zero));
  kb_store_row(b, y2, 0, 1,
               kb_tern(b, LM_OP_WHERE, kb_bin(b, LM_OP_NE, xs, xs),
                       kb_const(b, LM_F32, 5), xs));
  kb_store_row(b, y3, 0, 1, kb_bin(b, LM_OP_MIN, xs, zero));
  kb_store_inst(b, mx, kb_red(b, LM_OP_RMAX, xs));
  lm_data *d = gen(b, shape2(2, 4), 1);
  set_f32(d, x, (float[]){NAN, 1, -1, NAN, 1, 2, 3, 4}, 8);
  lm_oracle *o = run(b, d);
  const double w1[] = {0, 1, 0, 0}, w2[] = {5, 1, -1, 5};
  for (int j = 0; j < 4; j++) {
    cr_expect_eq(o->want[y1][j], w1[j], "where(x > 0) at %d", j);
    cr_expect_eq(o->want[y2][j], w2[j], "where(x != x) at %d", j);
  }
  cr_expect(isnan(o->want[y3][0]) && isnan(o->want[y3][3]),
            "min(NaN, 0) is NaN");
  cr_expect_eq(o->want[y3][1], 0.0);
  cr_expect_eq(o->want[y3][2], -1.0);
  cr_expect(isnan(o->want[mx][0]), "max over a row with NaN is NaN");
  cr_expect_eq(o->want[mx][1], 4.0);
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

Test(oracle_ops, i32_wraps_and_casts_truncate_or_round_to_f32) {
  KB *b = kb_new("ints", LM_F64, "C", D_C);
  int xi = kb_buf(b, "xi", LM_I32, 2, D_R, D_C, 0);
  int xf = kb_buf(b, "xf", LM_F64, 2, D_R, D_C, 0);
  int yi = kb_buf(b, "yi", LM_I32, 2, D_R, D_C, 1);
  int yt = kb_buf(b, "yt", LM_I32, 2, D_R, D_C, 1);
  int yf = kb_buf(b, "yf", LM_F64, 2, D_R, D_C, 1);
  int ym = kb_buf(b, "ym", LM_I32, 2, D_R, D_C, 1);
  int xs = kb_row(b, xi), fs = kb_row(b, xf);
  kb_store_row(b, yi, 0, 1, kb_bin(b, LM_OP_ADD, xs, kb_const(b, LM_I32, 1)));
  kb_store_row(b, yt, 0, 1, kb_cast(b, fs, LM_I32));
  kb_store_row(b, yf, 0, 1, kb_cast(b, fs, LM_F32));
  kb_store_row(b, ym, 0, 1, kb_bin(b, LM_OP_MUL, xs, xs));
  lm_data *d = gen(b, shape2(1, 3), 1);
  set_i32(d, xi, (int32_t[]){2147483647, -5, 65536}, 3);
  set_f64(d, xf, (double[]){-2.7, 2.7, 0.1}, 3);
  lm_oracle *o = run(b, d);
  cr_expect_eq(o->want[yi][0], -2147483648.0, "INT_MAX + 1 wraps");
  cr_expect_eq(o->want[yi][1], -4.0);
  cr_expect_eq(o->want[yt][0], -2.0, "cast to i32 truncates toward zero");
  cr_expect_eq(o->want[yt][1], 2.0);
  cr_expect_eq(o->want[yf][2], (double)0.1f, "cast to f32 rounds once");
  cr_expect_neq(o->want[yf][2], 0.1);
  cr_expect_eq(o->want[ym][2], 0.0, "65536^2 wraps to 0");
  cr_expect_eq(o->want[ym][0], 1.0, "INT_MAX^2 wraps to 1");
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

Test(oracle_ops, colidx_and_rowidx_are_the_column_and_instance) {
  KB *b = kb_new("index", LM_F32, "C", D_C);
  int y = kb_buf(b, "y", LM_I32, 2, D_R, D_C, 1);
  int c = kb_node(b, LM_OP_COLIDX, LM_I32, 1, -1, -1, -1);
  int r = kb_node(b, LM_OP_ROWIDX, LM_I32, 0, -1, -1, -1);
  kb_store_row(b, y, 0, 1,
               kb_bin(b, LM_OP_ADD,
                      kb_bin(b, LM_OP_MUL, r, kb_const(b, LM_I32, 10)), c));
  lm_data *d = gen(b, shape2(3, 4), 1);
  lm_oracle *o = run(b, d);
  for (int i = 0; i < 12; i++)
    cr_expect_eq(o->want[y][i], (double)(i / 4 * 10 + i % 4));
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

Test(oracle_ir, malformed_ir_is_refused_not_run) {
  lm_error err = {0};
  lm_oracle *o = NULL;
  /* an operand that comes after its user */
  KB *b = make_rmsnorm();
  lm_data *d = gen(b, shape2(2, 4), 1);
  b->nodes[2].a = 5;
  cr_expect_eq(lm_oracle_run(&b->k, d, &o, &err), LM_EINPUT);
  cr_expect_null(o);
  cr_expect(strstr(err.msg, "out of order") != NULL, "%s", err.msg);
  lm_data_free(d);
  free(b);
  /* a strided view that runs off the end of the row */
  b = make_rope(LM_F32);
  d = gen(b, shape2(1, 2), 1);
  b->nodes[1].start = 2; /* x[r, 2::2] reads x[r, 4] for H = 2 */
  cr_expect_eq(lm_oracle_run(&b->k, d, &o, &err), LM_EINPUT);
  cr_expect_null(o);
  cr_expect(strstr(err.msg, "bad load") != NULL, "%s", err.msg);
  lm_data_free(d);
  free(b);
}

/* ---- comparison rule ----------------------------------------------------- */

/* y[r, :] = x, in dtype t */
static KB *make_copy(lm_dtype t) {
  KB *b = kb_new("copy", t == LM_I32 ? LM_F32 : t, "C", D_C);
  int x = kb_buf(b, "x", t, 2, D_R, D_C, 0);
  int y = kb_buf(b, "y", t, 2, D_R, D_C, 1);
  kb_store_row(b, y, 0, 1, kb_row(b, x));
  return b;
}

typedef struct Case {
  KB *b;
  lm_data *d;
  lm_oracle *o;
} Case;

static Case copy_case(lm_dtype t) {
  Case c;
  c.b = make_copy(t);
  c.d = gen(c.b, shape2(1, 4), 3);
  c.o = run(c.b, c.d);
  write_want(&c.b->k, c.o, c.d);
  return c;
}

static void case_free(Case c) {
  lm_oracle_free(c.o);
  lm_data_free(c.d);
  free(c.b);
}

/* Compare with want[0] = w and got[0] = g (f32 output). */
static int64_t verdict_f32(double w, float g) {
  Case c = copy_case(LM_F32);
  c.o->want[1][0] = w;
  ((float *)c.d->buf[1])[0] = g;
  int64_t n = lm_oracle_compare(&c.b->k, c.o, c.d, NULL);
  case_free(c);
  return n;
}

Test(oracle_compare, the_oracles_own_answer_passes) {
  Case c = copy_case(LM_F32);
  lm_compare_result r;
  cr_expect_eq(lm_oracle_compare(&c.b->k, c.o, c.d, &r), 0);
  cr_expect_eq(r.mismatches, 0);
  cr_expect_eq(r.first_bad, -1);
  cr_expect_eq(r.checked, 4);
  case_free(c);
}

Test(oracle_compare, nan_matches_nan_of_any_payload) {
  union {
    uint32_t u;
    float f;
  } other = {.u = 0x7fc00123u};
  cr_expect_eq(verdict_f32(NAN, other.f), 0);
  cr_expect_eq(verdict_f32(NAN, 1.0f), 1, "a number does not answer NaN");
  cr_expect_eq(verdict_f32(1.0, NAN), 1, "NaN does not answer a number");
}

Test(oracle_compare, infinities_must_match_in_sign) {
  cr_expect_eq(verdict_f32(INFINITY, INFINITY), 0);
  cr_expect_eq(verdict_f32(-INFINITY, -INFINITY), 0);
  cr_expect_eq(verdict_f32(INFINITY, -INFINITY), 1);
  cr_expect_eq(verdict_f32(-INFINITY, 3.4e38f), 1);
  cr_expect_eq(verdict_f32(3.0e38, INFINITY), 1,
               "inf never answers a "
               "finite value");
}

Test(oracle_compare, f32_tolerance_is_5e_5_absolute_plus_5e_5_relative) {
  cr_expect_eq(lm_oracle_atol(LM_F32), 5e-5);
  cr_expect_eq(lm_oracle_rtol(LM_F32), 5e-5);
  /* at want = 1 the bound is 1e-4 */
  cr_expect_eq(verdict_f32(1.0, 1.00009f), 0, "within tolerance passes");
  cr_expect_eq(verdict_f32(1.0, 1.00011f), 1, "just outside fails");
  cr_expect_eq(verdict_f32(1.0, 0.99991f), 0);
  cr_expect_eq(verdict_f32(1.0, 0.99989f), 1);
  /* at want = 0 only atol is left */
  cr_expect_eq(verdict_f32(0.0, 4.9e-5f), 0);
  cr_expect_eq(verdict_f32(0.0, 5.1e-5f), 1);
}

Test(oracle_compare, f64_tolerance_is_1e_9) {
  Case c = copy_case(LM_F64);
  double *got = c.d->buf[1];
  double w = c.o->want[1][0];
  got[0] = w + 0.9e-9 * (1 + fabs(w));
  cr_expect_eq(lm_oracle_compare(&c.b->k, c.o, c.d, NULL), 0);
  got[0] = w + 1.1e-9 * (1 + fabs(w));
  cr_expect_eq(lm_oracle_compare(&c.b->k, c.o, c.d, NULL), 1);
  case_free(c);
}

Test(oracle_compare, i32_outputs_must_be_exact) {
  Case c = copy_case(LM_I32);
  int32_t *got = c.d->buf[1];
  lm_compare_result r;
  cr_expect_eq(lm_oracle_compare(&c.b->k, c.o, c.d, &r), 0);
  got[2] += 1;
  cr_expect_eq(lm_oracle_compare(&c.b->k, c.o, c.d, &r), 1);
  cr_expect_eq(r.first_bad, 2);
  cr_expect_eq(r.first_param, 1);
  cr_expect_eq(r.got_at_first, r.want_at_first + 1);
  case_free(c);
}

Test(oracle_compare, a_broken_sentinel_fails_even_with_a_plausible_value) {
  KB *b = make_rope(LM_F32);
  b->k.nstores = 1; /* only y[r, 0::2]: the odd elements stay unwritten */
  lm_data *d = gen(b, shape2(2, 3), 5);
  lm_oracle *o = run(b, d);
  write_want(&b->k, o, d);
  lm_compare_result r;
  cr_expect_eq(lm_oracle_compare(&b->k, o, d, &r), 0);
  cr_expect_eq(o->written[3][1], 0);
  ((unsigned char *)d->buf[3])[4 * 7 + 2] = 0; /* one byte of y[1][1] */
  cr_expect_eq(lm_oracle_compare(&b->k, o, d, &r), 1);
  cr_expect_eq(r.first_bad, 7);
  cr_expect_eq(r.first_param, 3);
  cr_expect(isnan(r.want_at_first), "nothing was wanted there");
  lm_data_reset_outputs(d);
  cr_expect_eq(lm_oracle_compare(&b->k, o, d, &r), 6,
               "after a reset only the written elements are wrong");
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

Test(oracle_compare, reports_the_first_mismatch_and_the_error_maxima) {
  Case c = copy_case(LM_F32);
  float *got = c.d->buf[1];
  double w1 = c.o->want[1][1], w3 = c.o->want[1][3];
  got[1] = (float)(w1 + 0.5);
  got[3] = (float)(w3 + 0.25);
  lm_compare_result r;
  cr_expect_eq(lm_oracle_compare(&c.b->k, c.o, c.d, &r), 2);
  cr_expect_eq(r.first_bad, 1);
  cr_expect_eq(r.want_at_first, w1);
  cr_expect_eq(r.got_at_first, (double)got[1]);
  cr_expect_float_eq(r.max_abs_err, 0.5, 1e-6);
  cr_expect_geq(r.max_rel_err, 0.5 / fabs(w1) * 0.99);
  case_free(c);
}

/* ---- generator -------------------------------------------------------------
 */

static int same_bytes(const lm_kernel *k, const lm_data *a, const lm_data *b) {
  for (int p = 0; p < k->nparams; p++) {
    if (!a->buf[p]) {
      if (a->scalar[p] != b->scalar[p])
        return 0;
      continue;
    }
    size_t n = (size_t)a->count[p] * (k->params[p].dtype == LM_F64 ? 8 : 4);
    if (memcmp(a->buf[p], b->buf[p], n))
      return 0;
  }
  return 1;
}

Test(oracle_gen, same_seed_gives_the_same_bytes_and_another_seed_others) {
  KB *b = make_masked_softmax();
  lm_data *d1 = gen(b, shape2(5, 33), 42), *d2 = gen(b, shape2(5, 33), 42);
  lm_data *d3 = gen(b, shape2(5, 33), 43);
  cr_expect(same_bytes(&b->k, d1, d2));
  cr_expect_eq(memcmp(d1->buf[0], d3->buf[0], 5 * 33 * 4) != 0, 1,
               "another seed changes x");
  cr_expect_eq(memcmp(d1->buf[1], d3->buf[1], 5 * 33 * 4) != 0, 1,
               "another seed changes the mask");
  lm_data_free(d1);
  lm_data_free(d2);
  lm_data_free(d3);
  free(b);
}

Test(oracle_gen, each_parameter_and_kernel_name_has_its_own_stream) {
  KB *b = make_rope(LM_F32);
  lm_data *d = gen(b, shape2(3, 8), 1);
  cr_expect_neq(memcmp(d->buf[1], d->buf[2], 3 * 8 * 4), 0,
                "cs and sn, same shape and seed, differ");
  b->k.name = "rope2";
  lm_data *e = gen(b, shape2(3, 8), 1);
  cr_expect_neq(memcmp(d->buf[1], e->buf[1], 3 * 8 * 4), 0);
  lm_data_free(d);
  lm_data_free(e);
  free(b);
}

Test(oracle_gen, the_stream_is_pinned_so_every_machine_sees_the_same_data) {
  /* FNV-1a + splitmix64 + xoshiro256** are integer-only and the scaling
   * into [lo, hi] is one IEEE multiply-add, so these values hold on every
   * machine; a change of generator (which would silently change every
   * recorded oracle summary) shows here. */
  KB *b = make_copy(LM_I32);
  lm_data *d = gen(b, shape2(1, 8), 0);
  const int32_t want_i[8] = {6, 2, 4, 1, 8, 8, 1, 4};
  cr_expect_eq(memcmp(d->buf[0], want_i, sizeof want_i), 0);
  lm_data_free(d);
  free(b);
  b = make_copy(LM_F32);
  d = gen(b, shape2(1, 8), 0);
  const float want_f[4] = {0x1.8f0af6p-2f, -0x1.082dfcp-1f, -0x1.4450bap-5f,
                           -0x1.3e6816p-1f};
  for (int j = 0; j < 4; j++)
    cr_expect_eq(((float *)d->buf[0])[j], want_f[j], "x[%d] = %a", j,
                 ((float *)d->buf[0])[j]);
  lm_data_free(d);
  free(b);
}

Test(oracle_gen, defaults_fill_floats_in_lo_hi_and_ints_in_0_9) {
  KB *b = kb_new("ranges", LM_F32, "C", D_C);
  int x = kb_buf(b, "x", LM_F32, 2, D_R, D_C, 0);
  b->params[x].lo = -4;
  b->params[x].hi = 4;
  int n = kb_buf(b, "n", LM_I32, 2, D_R, D_C, 0);
  int s = kb_scalar(b, "s", LM_F32, 0);
  b->params[s].has_default = 0;
  b->params[s].lo = 2;
  b->params[s].hi = 3;
  int y = kb_buf(b, "y", LM_F32, 2, D_R, D_C, 1);
  kb_store_row(b, y, 0, 1, kb_row(b, x));
  lm_data *d = gen(b, shape2(16, 64), 9);
  const float *xv = d->buf[x];
  const int32_t *nv = d->buf[n];
  int seen[10] = {0}, neg = 0, big = 0;
  for (int i = 0; i < 16 * 64; i++) {
    cr_expect(xv[i] >= -4 && xv[i] <= 4);
    neg += xv[i] < -2;
    big += xv[i] > 2;
    cr_expect(nv[i] >= 0 && nv[i] <= 9);
    if (nv[i] >= 0 && nv[i] <= 9)
      seen[nv[i]] = 1;
  }
  cr_expect(neg > 0 && big > 0, "the whole range [-4, 4] is used");
  for (int v = 0; v < 10; v++)
    cr_expect(seen[v], "i32 value %d appears", v);
  cr_expect(d->scalar[s] >= 2 && d->scalar[s] <= 3);
  cr_expect_eq(d->scalar[s], (double)(float)d->scalar[s],
               "an f32 scalar holds an f32 value");
  cr_expect_null(d->buf[s]);
  lm_data_free(d);
  free(b);
}

Test(oracle_gen, masks_are_0_1_with_a_one_in_every_row) {
  KB *b = make_masked_softmax();
  for (uint64_t seed = 0; seed < 20; seed++) {
    lm_data *d = gen(b, shape2(64, 3), seed);
    const int32_t *m = d->buf[1];
    for (int r = 0; r < 64; r++) {
      int ones = 0;
      for (int j = 0; j < 3; j++) {
        cr_assert(m[r * 3 + j] == 0 || m[r * 3 + j] == 1);
        ones += m[r * 3 + j];
      }
      cr_assert_geq(ones, 1, "seed %llu row %d has no 1",
                    (unsigned long long)seed, r);
    }
    lm_data_free(d);
  }
  free(b);
}

Test(oracle_gen, rowlen_spans_0_to_n_with_a_full_and_an_empty_row) {
  KB *b = make_ragged();
  lm_data *d = gen(b, shape2(50, 7), 11);
  const int32_t *len = d->buf[1];
  cr_expect_eq(len[0], 7);
  cr_expect_eq(len[1], 0);
  int mid = 0;
  for (int r = 0; r < 50; r++) {
    cr_expect(len[r] >= 0 && len[r] <= 7);
    mid += len[r] > 0 && len[r] < 7;
  }
  cr_expect(mid > 0, "lengths between the edges occur");
  lm_data_free(d);
  /* with fewer than three rows there is no forced empty row */
  d = gen(b, shape2(1, 7), 11);
  cr_expect_eq(((int32_t *)d->buf[1])[0], 7);
  lm_data_free(d);
  free(b);
}

Test(oracle_gen, outputs_start_as_sentinels_in_64_byte_aligned_buffers) {
  KB *b = make_ragged();
  lm_data *d = gen(b, shape2(3, 5), 1);
  for (int p = 0; p < b->k.nparams; p++) {
    cr_expect_eq((uintptr_t)d->buf[p] % 64, 0, "buffer %d aligned", p);
    if (!b->params[p].is_output)
      continue;
    const unsigned char *u = d->buf[p];
    for (int64_t i = 0; i < d->count[p] * 4; i++)
      cr_assert_eq(u[i], LM_SENTINEL_BYTE);
  }
  memset(d->buf[2], 0, 15 * 4);
  lm_data_reset_outputs(d);
  cr_expect_eq(((unsigned char *)d->buf[2])[0], LM_SENTINEL_BYTE);
  cr_expect_eq(((unsigned char *)d->buf[2])[59], LM_SENTINEL_BYTE);
  cr_expect_eq(d->count[2], 15);
  cr_expect_eq(d->count[3], 3);
  lm_data_free(d);
  free(b);
}

Test(oracle_gen, a_non_positive_dim_is_bad_input) {
  KB *b = make_rmsnorm();
  lm_data *d = (lm_data *)1;
  lm_error err = {0};
  lm_shape s = shape2(0, 4);
  cr_expect_eq(lm_data_gen(&b->k, &s, 1, &d, &err), LM_EINPUT);
  cr_expect_null(d);
  cr_expect(strstr(err.msg, "not positive") != NULL, "%s", err.msg);
  s = shape2(4, -1);
  cr_expect_eq(lm_data_gen(&b->k, &s, 1, &d, &err), LM_EINPUT);
  s = shape2(INT64_MAX / 2, INT64_MAX / 2);
  cr_expect_eq(lm_data_gen(&b->k, &s, 1, &d, &err), LM_EINPUT);
  free(b);
}

/* ---- summary ---------------------------------------------------------------
 */

Test(oracle_summary, json_names_the_case_and_summarises_each_output) {
  KB *b = make_ragged();
  lm_data *d = gen(b, shape2(3, 4), 7);
  set_f32(d, 0, (float[]){1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 12);
  set_i32(d, 1, (int32_t[]){4, 0, 2}, 3);
  lm_oracle *o = run(b, d);
  char *text = lm_oracle_summary_json(&b->k, d, o);
  cr_assert_not_null(text);
  cr_expect_null(strchr(text, '\n'), "one line");
  cJSON *j = cJSON_Parse(text);
  cr_assert_not_null(j, "valid JSON: %s", text);
  cr_expect_str_eq(cJSON_GetObjectItem(j, "kernel")->valuestring, "ragged");
  cJSON *shape = cJSON_GetObjectItem(j, "shape");
  cr_expect_eq(cJSON_GetObjectItem(shape, "R")->valuedouble, 3);
  cr_expect_eq(cJSON_GetObjectItem(shape, "C")->valuedouble, 4);
  cr_expect_eq(cJSON_GetObjectItem(j, "seed")->valuedouble, 7);
  cJSON *outs = cJSON_GetObjectItem(j, "outputs");
  cr_assert_eq(cJSON_GetArraySize(outs), 3);
  cJSON *y = cJSON_GetArrayItem(outs, 0);
  cr_expect_str_eq(cJSON_GetObjectItem(y, "name")->valuestring, "y");
  cr_expect_str_eq(cJSON_GetObjectItem(y, "dtype")->valuestring, "f32");
  cr_expect_eq(cJSON_GetObjectItem(y, "count")->valuedouble, 12);
  cr_expect_eq(cJSON_GetObjectItem(y, "written")->valuedouble, 6);
  /* 2*(1+2+3+4) + 2*(9+10) */
  cr_expect_eq(cJSON_GetObjectItem(y, "sum")->valuedouble, 58);
  cr_expect_eq(cJSON_GetObjectItem(y, "min")->valuedouble, 2);
  cr_expect_eq(cJSON_GetObjectItem(y, "max")->valuedouble, 20);
  cJSON *first = cJSON_GetObjectItem(y, "first");
  cr_expect_eq(cJSON_GetArraySize(first), 8);
  cr_expect_eq(cJSON_GetArrayItem(first, 3)->valuedouble, 8);
  cr_expect(cJSON_IsNull(cJSON_GetArrayItem(first, 4)), "unwritten is null");
  cJSON *mx = cJSON_GetArrayItem(outs, 1);
  cr_expect_eq(cJSON_GetObjectItem(mx, "inf")->valuedouble, 1,
               "the empty row's max");
  cr_expect_str_eq(
      cJSON_GetArrayItem(cJSON_GetObjectItem(mx, "first"), 1)->valuestring,
      "-inf");
  cJSON_Delete(j);
  free(text);
  lm_oracle_free(o);
  lm_data_free(d);
  free(b);
}

/* ---- the bundled kernels, through the front end
 * ------------------------------ */

static lm_kernel *parse_text(const char *name, const char *src) {
  lm_kernel *k = NULL;
  lm_error err = {0};
  lm_status st = lm_kernel_parse(name, src, strlen(src), &k, &err);
  cr_assert_eq(st, LM_OK, "%s", err.msg);
  return k;
}

/* gen + oracle + the oracle's own answer in native types: must pass. */
static void check_roundtrip(const lm_kernel *k, const lm_shape *s,
                            uint64_t seed, int expect_full) {
  lm_data *d = NULL;
  lm_oracle *o = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_data_gen(k, s, seed, &d, &err), LM_OK, "%s: %s", k->name,
               err.msg);
  cr_assert_eq(lm_oracle_run(k, d, &o, &err), LM_OK, "%s: %s", k->name,
               err.msg);
  for (int p = 0; p < k->nparams; p++) {
    if (!o->want[p])
      continue;
    for (int64_t i = 0; i < o->count[p]; i++) {
      if (expect_full)
        cr_assert_eq(o->written[p][i], 1, "%s.%s[%lld] is written", k->name,
                     k->params[p].name, (long long)i);
      if (o->written[p][i])
        cr_assert(isfinite(o->want[p][i]), "%s.%s[%lld] = %g is finite",
                  k->name, k->params[p].name, (long long)i, o->want[p][i]);
    }
  }
  write_want(k, o, d);
  lm_compare_result r;
  cr_expect_eq(lm_oracle_compare(k, o, d, &r), 0,
               "%s: %lld mismatches, first %s[%lld] got %g want %g", k->name,
               (long long)r.mismatches,
               r.first_param >= 0 ? k->params[r.first_param].name : "-",
               (long long)r.first_bad, r.got_at_first, r.want_at_first);
  char *json = lm_oracle_summary_json(k, d, o);
  cJSON *j = json ? cJSON_Parse(json) : NULL;
  cr_expect_not_null(j, "%s: the summary is JSON", k->name);
  cJSON_Delete(j);
  free(json);
  lm_oracle_free(o);
  lm_data_free(d);
}

Test(oracle_kernels, every_bundled_kernel_passes_its_own_oracle_in_f32) {
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/kernels", LANEMAP_SOURCE_DIR);
  DIR *dp = opendir(dir);
  cr_assert_not_null(dp, "%s", dir);
  int nkernels = 0;
  for (struct dirent *e; (e = readdir(dp));) {
    size_t n = strlen(e->d_name);
    if (n < 4 || strcmp(e->d_name + n - 3, ".lk"))
      continue;
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    lm_kernel *k = NULL;
    lm_error err = {0};
    cr_assert_eq(lm_kernel_load(path, &k, &err), LM_OK, "%s", err.msg);
    /* small shapes, odd ones included: 1 row, and rows not a power of 2 */
    const int64_t shapes[][2] = {{1, 8}, {5, 12}, {17, 66}};
    for (int s = 0; s < 3; s++) {
      lm_shape sh;
      cr_assert_eq(
          lm_shape_bind(k, shapes[s][0], shapes[s][1], NULL, &sh, &err), LM_OK,
          "%s: %s", e->d_name, err.msg);
      check_roundtrip(k, &sh, 1 + (uint64_t)s, k->rowlen_param < 0);
    }
    lm_kernel_free(k);
    nkernels++;
  }
  closedir(dp);
  cr_expect_geq(nkernels, 6, "the six reference kernels at least");
}

Test(oracle_kernels, bundled_rmsnorm_matches_the_hand_value) {
  char path[4096];
  snprintf(path, sizeof path, "%s/kernels/rmsnorm.lk", LANEMAP_SOURCE_DIR);
  lm_kernel *k = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_load(path, &k, &err), LM_OK, "%s", err.msg);
  lm_shape sh;
  cr_assert_eq(lm_shape_bind(k, 1, 4, NULL, &sh, &err), LM_OK, "%s", err.msg);
  lm_data *d = NULL;
  cr_assert_eq(lm_data_gen(k, &sh, 1, &d, &err), LM_OK, "%s", err.msg);
  int x = -1, g = -1, y = -1;
  for (int p = 0; p < k->nparams; p++) {
    if (!strcmp(k->params[p].name, "x"))
      x = p;
    if (!strcmp(k->params[p].name, "g"))
      g = p;
    if (!strcmp(k->params[p].name, "y"))
      y = p;
  }
  cr_assert(x >= 0 && g >= 0 && y >= 0);
  set_f32(d, x, (float[]){1, 2, 3, 4}, 4);
  set_f32(d, g, (float[]){1, 1, 1, 1}, 4);
  lm_oracle *o = NULL;
  cr_assert_eq(lm_oracle_run(k, d, &o, &err), LM_OK, "%s", err.msg);
  /* ms = 7.5, eps = f32(1e-6) */
  double den = sqrt(7.5 + (double)1e-6f);
  for (int j = 0; j < 4; j++)
    expect_near(o->want[y][j], (j + 1) / den);
  lm_oracle_free(o);
  lm_data_free(d);
  lm_kernel_free(k);
}

Test(oracle_kernels, parsed_ragged_softmax_leaves_inactive_columns_alone) {
  lm_kernel *k = parse_text(
      "ragged_softmax.lk",
      "kernel ragged_softmax(x: f32[R, C], len: i32[R] rowlen) -> (y: f32[R, "
      "C]) {\n"
      "  e = exp(x[r, :] - max(x[r, :]))\n"
      "  y[r, :] = e / sum(e)\n"
      "}\n");
  lm_shape sh;
  lm_error err = {0};
  cr_assert_eq(lm_shape_bind(k, 9, 16, NULL, &sh, &err), LM_OK, "%s", err.msg);
  check_roundtrip(k, &sh, 3, 0);
  lm_data *d = NULL;
  lm_oracle *o = NULL;
  cr_assert_eq(lm_data_gen(k, &sh, 3, &d, &err), LM_OK);
  cr_assert_eq(lm_oracle_run(k, d, &o, &err), LM_OK, "%s", err.msg);
  const int32_t *len = d->buf[k->rowlen_param];
  int y = k->nparams - 1;
  for (int r = 0; r < 9; r++) {
    double total = 0;
    for (int j = 0; j < 16; j++) {
      cr_expect_eq(o->written[y][r * 16 + j], j < len[r]);
      if (j < len[r])
        total += o->want[y][r * 16 + j];
    }
    /* each of up to 16 values is the f32 nearest its own: half an ulp off */
    if (len[r] > 0)
      cr_expect(fabs(total - 1) <= 16 * ldexp(1, -24), "row %d sums to %.17g",
                r, total);
  }
  lm_oracle_free(o);
  lm_data_free(d);
  lm_kernel_free(k);
}

Test(oracle_kernels, parsed_logsumexp_writes_one_value_per_row) {
  lm_kernel *k = parse_text(
      "logsumexp.lk", "kernel logsumexp(x: f32[R, C]) -> (out: f32[R]) {\n"
                      "  mx = max(x[r, :])\n"
                      "  out[r] = mx + log(sum(exp(x[r, :] - mx)))\n"
                      "}\n");
  lm_shape sh;
  lm_error err = {0};
  cr_assert_eq(lm_shape_bind(k, 2, 4, NULL, &sh, &err), LM_OK, "%s", err.msg);
  check_roundtrip(k, &sh, 1, 1);
  lm_data *d = NULL;
  lm_oracle *o = NULL;
  cr_assert_eq(lm_data_gen(k, &sh, 1, &d, &err), LM_OK);
  set_f32(d, 0, (float[]){0, 0, 0, 0, 1, 2, 3, 4}, 8);
  cr_assert_eq(lm_oracle_run(k, d, &o, &err), LM_OK, "%s", err.msg);
  expect_near(o->want[1][0], 1.3862943611198906);
  expect_near(o->want[1][1], 4.440189698561196);
  lm_oracle_free(o);
  lm_data_free(d);
  lm_kernel_free(k);
}
