/* Claims about the kernel language front end: the bundled kernels parse
 * with the phase facts the backend relies on, weak literals take their
 * context's type, nodes are hash-consed, the printer round-trips, shapes
 * bind (and refuse what they must), and the IR listing matches its
 * goldens in tests/golden/print/. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glob.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/ir.h"

#define KDIR LANEMAP_SOURCE_DIR "/kernels/"

static lm_kernel *load(const char *name) {
  char path[512];
  snprintf(path, sizeof path, KDIR "%s", name);
  lm_kernel *k = NULL;
  lm_error err = {0};
  lm_status s = lm_kernel_load(path, &k, &err);
  cr_assert_eq(s, LM_OK, "%s: %s", name, err.msg);
  return k;
}

static lm_kernel *parse(const char *src) {
  lm_kernel *k = NULL;
  lm_error err = {0};
  lm_status s = lm_kernel_parse("test.lk", src, strlen(src), &k, &err);
  cr_assert_eq(s, LM_OK, "%s", err.msg);
  return k;
}

static const char *parse_error(const char *src) {
  static lm_error err;
  lm_kernel *k = NULL;
  lm_status s = lm_kernel_parse("test.lk", src, strlen(src), &k, &err);
  cr_assert_eq(s, LM_EINPUT);
  cr_assert_null(k);
  return err.msg;
}

static int find_named(const lm_kernel *k, const char *name) {
  for (int i = 0; i < k->nnodes; i++)
    if (k->nodes[i].name && !strcmp(k->nodes[i].name, name))
      return i;
  cr_assert_fail("no node named %s", name);
  return -1;
}

static int count_op(const lm_kernel *k, lm_op op) {
  int n = 0;
  for (int i = 0; i < k->nnodes; i++)
    n += k->nodes[i].op == op;
  return n;
}

static int any_snap(const lm_kernel *k) {
  for (int i = 0; i < k->nnodes; i++)
    if (k->nodes[i].snap)
      return 1;
  return 0;
}

static const lm_node *store_value(const lm_kernel *k, int s) {
  return &k->nodes[k->stores[s].value];
}

/* ---- bundled kernels -------------------------------------------------- */

typedef struct kname {
  char name[64];
} kname;

static kname bundled[] = {{"rmsnorm.lk"},        {"layernorm.lk"},
                          {"masked_softmax.lk"}, {"swiglu.lk"},
                          {"gelu_residual.lk"},  {"rope.lk"}};

ParameterizedTestParameters(ir, bundled_kernel_parses_and_checks) {
  return cr_make_param_array(kname, bundled, sizeof bundled / sizeof *bundled);
}

ParameterizedTest(kname *p, ir, bundled_kernel_parses_and_checks) {
  lm_kernel *k = load(p->name);
  cr_expect_gt(k->nnodes, 0);
  cr_expect_gt(k->nstores, 0);
  cr_expect_eq(k->elem, LM_F32);
  /* operands precede their users; every node is typed and not bool-stored */
  for (int i = 0; i < k->nnodes; i++) {
    const lm_node *n = &k->nodes[i];
    cr_expect(n->a < i && n->b < i && n->c < i, "%s: node %d", p->name, i);
  }
  for (int s = 0; s < k->nstores; s++)
    cr_expect_neq(store_value(k, s)->dtype, LM_BOOL);
  lm_kernel_free(k);
}

Test(ir, rmsnorm_has_two_loops_and_snapshots_xs) {
  lm_kernel *k = load("rmsnorm.lk");
  cr_expect_eq(k->nloops, 2);
  int xs = find_named(k, "xs");
  cr_expect(k->nodes[xs].snap);
  cr_expect(k->nodes[xs].tile);
  cr_expect_eq(k->nodes[xs].level, 0);
  cr_expect_eq(k->nodes[find_named(k, "ms")].avail, 1);
  cr_expect_eq(k->ncols.sym, 1);
  cr_expect_eq(k->ncols.coef, 1);
  cr_expect_str_eq(k->syms[k->ncols.sym], "C");
  cr_expect_eq(k->col_sym, 1);
  cr_expect_eq(k->rowlen_param, -1);
  cr_expect_eq(k->stores[0].level, 1);
  const lm_param *eps = &k->params[2];
  cr_expect_str_eq(eps->name, "eps");
  cr_expect_eq(eps->kind, LM_PARAM_SCALAR);
  cr_expect(eps->has_default && eps->defval == 1e-6);
  lm_kernel_free(k);
}

Test(ir, layernorm_has_three_loops_with_d_at_level_one) {
  lm_kernel *k = load("layernorm.lk");
  cr_expect_eq(k->nloops, 3);
  int d = find_named(k, "d");
  cr_expect_eq(k->nodes[d].level, 1);
  cr_expect(k->nodes[d].snap);
  cr_expect(k->nodes[find_named(k, "xs")].snap);
  cr_expect_eq(k->nodes[find_named(k, "mu")].avail, 1);
  cr_expect_eq(k->nodes[find_named(k, "var")].avail, 2);
  cr_expect_eq(k->stores[0].level, 2);
  lm_kernel_free(k);
}

Test(ir, masked_softmax_has_three_loops_and_a_mask_input) {
  lm_kernel *k = load("masked_softmax.lk");
  cr_expect_eq(k->nloops, 3);
  cr_expect_eq(k->params[1].gen, LM_GEN_MASK);
  cr_expect_eq(k->params[0].lo, -4);
  cr_expect_eq(k->params[0].hi, 4);
  cr_expect(k->nodes[find_named(k, "z")].snap);
  cr_expect_eq(k->nodes[find_named(k, "e")].level, 1);
  /* the 0 of m[r, :] != 0 is an i32 constant, -inf an f32 one */
  int ne = -1;
  for (int i = 0; i < k->nnodes; i++)
    if (k->nodes[i].op == LM_OP_NE)
      ne = i;
  cr_assert_geq(ne, 0);
  cr_expect_eq(k->nodes[k->nodes[ne].b].op, LM_OP_CONST);
  cr_expect_eq(k->nodes[k->nodes[ne].b].dtype, LM_I32);
  cr_expect_eq(k->nodes[ne].dtype, LM_BOOL);
  lm_kernel_free(k);
}

Test(ir, swiglu_and_gelu_run_in_one_loop_without_snapshots) {
  const char *names[] = {"swiglu.lk", "gelu_residual.lk"};
  for (int i = 0; i < 2; i++) {
    lm_kernel *k = load(names[i]);
    cr_expect_eq(k->nloops, 1, "%s", names[i]);
    cr_expect(!any_snap(k), "%s", names[i]);
    lm_kernel_free(k);
  }
}

Test(ir, rope_runs_over_h_with_two_strided_stores) {
  lm_kernel *k = load("rope.lk");
  cr_expect_str_eq(k->syms[k->ncols.sym], "H");
  cr_expect_eq(k->ncols.coef, 1);
  cr_expect_eq(k->col_sym, k->ncols.sym);
  cr_expect_eq(k->params[0].dims[1].coef, 2);
  cr_expect_eq(k->nstores, 2);
  cr_expect_eq(k->stores[0].start, 0);
  cr_expect_eq(k->stores[0].step, 2);
  cr_expect_eq(k->stores[1].start, 1);
  cr_expect_eq(k->stores[1].step, 2);
  int a = find_named(k, "a"), b = find_named(k, "b");
  cr_expect_eq(k->nodes[a].op, LM_OP_LOAD_ROW);
  cr_expect_eq(k->nodes[a].start, 0);
  cr_expect_eq(k->nodes[b].start, 1);
  cr_expect_eq(k->nodes[b].step, 2);
  cr_expect_eq(k->nloops, 1);
  lm_kernel_free(k);
}

/* ---- typing ----------------------------------------------------------- */

Test(ir, weak_literal_takes_the_type_of_its_strong_operand) {
  lm_kernel *k = parse("kernel k(x: f64[R, C]) -> (y: f64[R, C]) {\n"
                       "  y[r, :] = x[r, :] * 2\n}\n");
  const lm_node *mul = store_value(k, 0);
  cr_assert_eq(mul->op, LM_OP_MUL);
  cr_expect_eq(k->nodes[mul->b].op, LM_OP_CONST);
  cr_expect_eq(k->nodes[mul->b].dtype, LM_F64);
  cr_expect_eq(k->elem, LM_F64);
  lm_kernel_free(k);
}

Test(ir, dim_compared_with_c_is_an_i32_dim) {
  lm_kernel *k = parse("kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                       "  y[r, :] = where(c < C - 1, x[r, :], 0)\n}\n");
  int dim = -1;
  for (int i = 0; i < k->nnodes; i++)
    if (k->nodes[i].op == LM_OP_DIM)
      dim = i;
  cr_assert_geq(dim, 0);
  cr_expect_eq(k->nodes[dim].dtype, LM_I32);
  cr_expect_eq(count_op(k, LM_OP_DIM), 1);
  lm_kernel_free(k);
}

Test(ir, weak_value_without_context_takes_the_kernel_float_type) {
  lm_kernel *k = parse("kernel k(x: f64[R, C], n: i32) -> (y: f64[R, C]) {\n"
                       "  two = 2\n  half = C / 2\n"
                       "  y[r, :] = x[r, :] * two * half\n}\n");
  cr_expect_eq(k->nodes[find_named(k, "two")].dtype, LM_F64);
  cr_expect_eq(k->nodes[find_named(k, "half")].dtype, LM_F64);
  lm_kernel_free(k);
}

Test(ir, weak_value_stored_takes_the_output_type) {
  lm_kernel *k = parse("kernel k(x: f32[R, C]) -> (y: f32[R, C], n: i32[R]) {\n"
                       "  y[r, :] = x[r, :]\n  n[r] = C + 1\n}\n");
  const lm_node *add = store_value(k, 1);
  cr_expect_eq(add->dtype, LM_I32);
  cr_expect_eq(k->nodes[add->a].dtype, LM_I32);
  cr_expect_eq(k->nodes[add->a].op, LM_OP_DIM);
  lm_kernel_free(k);
}

Test(ir, sum_over_c_divides_in_float) {
  lm_kernel *k = load("rmsnorm.lk");
  int ms = find_named(k, "ms");
  const lm_node *div = &k->nodes[ms];
  cr_assert_eq(div->op, LM_OP_DIV);
  cr_expect_eq(k->nodes[div->a].op, LM_OP_RSUM);
  cr_expect_eq(k->nodes[div->b].op, LM_OP_DIM);
  cr_expect_eq(k->nodes[div->b].dtype, LM_F32);
  lm_kernel_free(k);
}

Test(ir, no_node_is_left_weak_or_untyped) {
  lm_kernel *k = parse(
      "kernel k(x: f32[R, C], m: i32[R, C]) -> (y: f32[R, C], q: i32[R, C]) {\n"
      "  y[r, :] = where(m[r, :] > 1 && 1 < 2, 0.5, -inf) + pow(3, 2)\n"
      "  q[r, :] = m[r, :] * 2 + i32(2.5) + c\n}\n");
  for (int i = 0; i < k->nnodes; i++) {
    const lm_node *n = &k->nodes[i];
    cr_expect(n->dtype == LM_F32 || n->dtype == LM_I32 || n->dtype == LM_BOOL,
              "node %d", i);
    if (n->op >= LM_OP_EQ && n->op <= LM_OP_OR)
      cr_expect_eq(n->dtype, LM_BOOL);
  }
  lm_kernel_free(k);
}

Test(ir, casts_are_explicit_nodes) {
  lm_kernel *k =
      parse("kernel k(x: f32[R, C], m: i32[R, C]) -> (y: f32[R, C]) {\n"
            "  y[r, :] = x[r, :] * f32(m[r, :])\n}\n");
  const lm_node *mul = store_value(k, 0);
  cr_expect_eq(k->nodes[mul->b].op, LM_OP_CAST);
  cr_expect_eq(k->nodes[mul->b].dtype, LM_F32);
  cr_expect_eq(k->nodes[k->nodes[mul->b].a].dtype, LM_I32);
  lm_kernel_free(k);
}

Test(ir, reduction_avail_is_operand_level_plus_one) {
  lm_kernel *k = parse("kernel k(x: f32[R, C]) -> (y: f32[R]) {\n"
                       "  mx = max(x[r, :])\n"
                       "  y[r] = mx + log(sum(exp(x[r, :] - mx)))\n}\n");
  cr_expect_eq(k->nodes[find_named(k, "mx")].avail, 1);
  cr_expect_eq(k->stores[0].kind, LM_STORE_INST);
  cr_expect_eq(k->stores[0].level, 2);
  cr_expect_eq(k->nloops, 2);
  lm_kernel_free(k);
}

Test(ir, unnamed_tile_reused_later_is_not_a_snapshot) {
  lm_kernel *k = parse("kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                       "  y[r, :] = exp(x[r, :]) / sum(exp(x[r, :]))\n}\n");
  cr_expect_eq(k->nloops, 2);
  cr_expect(!any_snap(k));
  cr_expect_eq(count_op(k, LM_OP_EXP), 1);
  lm_kernel_free(k);
}

Test(ir, rowlen_input_is_recorded) {
  lm_kernel *k =
      parse("kernel k(x: f32[R, C], len: i32[R] rowlen) -> (y: f32[R, C]) {\n"
            "  e = exp(x[r, :] - max(x[r, :]))\n  y[r, :] = e / sum(e)\n}\n");
  cr_expect_eq(k->rowlen_param, 1);
  cr_expect_eq(k->params[1].gen, LM_GEN_ROWLEN);
  lm_kernel_free(k);
}

/* ---- hash-consing, aliases, precedence -------------------------------- */

Test(ir, identical_subexpressions_are_one_node) {
  lm_kernel *k = parse("kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                       "  y[r, :] = x[r, :] * 2 + x[r, :] * 2\n}\n");
  const lm_node *add = store_value(k, 0);
  cr_expect_eq(add->a, add->b);
  cr_expect_eq(count_op(k, LM_OP_LOAD_ROW), 1);
  cr_expect_eq(count_op(k, LM_OP_CONST), 1);
  cr_expect_eq(k->nnodes, 4);
  lm_kernel_free(k);
}

Test(ir, alias_names_the_same_node_and_keeps_the_first_name) {
  lm_kernel *k = parse("kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                       "  a = x[r, :]\n  b = a\n  y[r, :] = b * a\n}\n");
  const lm_node *mul = store_value(k, 0);
  cr_expect_eq(mul->a, mul->b);
  cr_expect_str_eq(k->nodes[mul->a].name, "a");
  cr_expect_eq(k->nnodes, 2);
  lm_kernel_free(k);
}

Test(ir, later_definition_names_an_earlier_unnamed_node) {
  lm_kernel *k = parse("kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                       "  y[r, :] = exp(x[r, :]) + 1\n  t = exp(x[r, :])\n}\n");
  const lm_node *add = store_value(k, 0);
  cr_expect_str_eq(k->nodes[add->a].name, "t");
  lm_kernel_free(k);
}

Test(ir, multiplication_binds_tighter_than_addition) {
  lm_kernel *k = parse("kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                       "  y[r, :] = x[r, :] + 2 * 3\n}\n");
  const lm_node *add = store_value(k, 0);
  cr_assert_eq(add->op, LM_OP_ADD);
  cr_expect_eq(k->nodes[add->b].op, LM_OP_MUL);
  lm_kernel_free(k);
}

Test(ir, subtraction_is_left_associative) {
  lm_kernel *k = parse("kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                       "  y[r, :] = x[r, :] - 1 - 2\n}\n");
  const lm_node *sub = store_value(k, 0);
  cr_assert_eq(sub->op, LM_OP_SUB);
  cr_expect_eq(k->nodes[sub->a].op, LM_OP_SUB);
  cr_expect_eq(k->nodes[sub->b].op, LM_OP_CONST);
  cr_expect_eq(k->nodes[sub->b].imm, 2);
  lm_kernel_free(k);
}

Test(ir, unary_minus_binds_tighter_than_multiplication) {
  lm_kernel *k = parse("kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                       "  y[r, :] = -x[r, :] * 2\n}\n");
  const lm_node *mul = store_value(k, 0);
  cr_assert_eq(mul->op, LM_OP_MUL);
  cr_expect_eq(k->nodes[mul->a].op, LM_OP_NEG);
  lm_kernel_free(k);
}

Test(ir, and_binds_tighter_than_or_and_comparisons_tighter_than_and) {
  lm_kernel *k =
      parse("kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
            "  y[r, :] = where(c > 1 || c < 5 && c != 3, x[r, :], 0)\n}\n");
  const lm_node *w = store_value(k, 0);
  const lm_node *o = &k->nodes[w->a];
  cr_assert_eq(o->op, LM_OP_OR);
  cr_expect_eq(k->nodes[o->a].op, LM_OP_GT);
  cr_expect_eq(k->nodes[o->b].op, LM_OP_AND);
  cr_expect_eq(k->nodes[k->nodes[o->b].b].op, LM_OP_NE);
  lm_kernel_free(k);
}

Test(ir, comparison_binds_looser_than_addition) {
  lm_kernel *k = parse("kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                       "  y[r, :] = where(x[r, :] + 1 < 2 * 3, 1, 0)\n}\n");
  const lm_node *lt = &k->nodes[store_value(k, 0)->a];
  cr_assert_eq(lt->op, LM_OP_LT);
  cr_expect_eq(k->nodes[lt->a].op, LM_OP_ADD);
  cr_expect_eq(k->nodes[lt->b].op, LM_OP_MUL);
  lm_kernel_free(k);
}

Test(ir, number_literal_forms_are_read_exactly) {
  lm_kernel *k = parse("kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                       "  y[r, :] = x[r, :] * .5 + 1e-6 + 2.5E+3 + 7.\n}\n");
  double want[] = {0.5, 1e-6, 2.5e3, 7.0};
  for (int i = 0; i < 4; i++) {
    int found = 0;
    for (int j = 0; j < k->nnodes; j++)
      found |= k->nodes[j].op == LM_OP_CONST && k->nodes[j].imm == want[i];
    cr_expect(found, "literal %g", want[i]);
  }
  lm_kernel_free(k);
}

Test(ir, semicolons_and_wrapped_lines_separate_statements) {
  lm_kernel *k = parse(
      "kernel k(x: f32[R, C],\n         g: f32[C])\n  -> (y: f32[R, C])\n{\n"
      "  a = x[r, :]; b = g[:]\n  y[r, :] = a *\n"
      "    b\n}\n");
  cr_expect_eq(k->nstores, 1);
  cr_expect_eq(store_value(k, 0)->op, LM_OP_MUL);
  lm_kernel_free(k);
}

Test(ir, uniform_broadcast_store_fills_a_row) {
  lm_kernel *k = parse("kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                       "  y[r, :] = sum(x[r, :])\n}\n");
  cr_expect_eq(k->stores[0].kind, LM_STORE_ROW);
  cr_expect(!store_value(k, 0)->tile);
  cr_expect_eq(k->stores[0].level, 1);
  cr_expect_eq(k->nloops, 2);
  lm_kernel_free(k);
}

Test(ir, reserved_words_cannot_name_values_but_attributes_can) {
  cr_expect(strstr(parse_error("kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                               "  c = 1\n  y[r, :] = x[r, :]\n}\n"),
                   "reserved name 'c'") != NULL);
  lm_kernel *k =
      parse("kernel k(mask: i32[R, C] mask, in: f32) -> (y: f32[R, C]) {\n"
            "  y[r, :] = f32(mask[r, :]) * in\n}\n");
  lm_kernel_free(k);
}

/* ---- printer ---------------------------------------------------------- */

static void expect_round_trip(const lm_kernel *k, const char *what) {
  char *text = lm_kernel_print(k);
  cr_assert_not_null(text);
  lm_kernel *k2 = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_parse("printed.lk", text, strlen(text), &k2, &err),
               LM_OK, "%s: printed text does not parse: %s\n%s", what, err.msg,
               text);
  cr_expect(lm_kernel_equal(k, k2), "%s: re-parse differs:\n%s", what, text);
  char *text2 = lm_kernel_print(k2);
  cr_expect_str_eq(text, text2, "%s: print is not a fixed point", what);
  free(text2);
  free(text);
  lm_kernel_free(k2);
}

ParameterizedTestParameters(ir, printed_bundled_kernel_reparses_equal) {
  return cr_make_param_array(kname, bundled, sizeof bundled / sizeof *bundled);
}

ParameterizedTest(kname *p, ir, printed_bundled_kernel_reparses_equal) {
  lm_kernel *k = load(p->name);
  expect_round_trip(k, p->name);
  lm_kernel_free(k);
}

static const char *tricky[] = {
    /* every operator, both float types of literal, inf and nan */
    "kernel t1(x: f64[R, C], n: i32 = -3, len: i32[R] rowlen, w: f64[R]) -> "
    "(y: f64[R, C], s: f64[R], q: i32[R]) {\n"
    "  y[r, :] = exp(x[r, :]) + x[r, :] * 2 - -inf\n"
    "  t = x[r, :] * 2\n  u = 2; v = u\n"
    "  k = C / 2 + f64(n) * w[r]\n"
    "  s[r] = max(exp(x[r, :])) + k * v\n"
    "  m = where(c < C && !(c == 3) || r > 1, pow(t, -2), fma(t, 1.5, nan))\n"
    "  q[r] = i32(sum(m)) + len[r] + 1\n"
    "  dead = sqrt(u) * (1 - (2 - 3)) / (4 / 5)\n}\n",
    /* strided views, per-column strides, broadcast and per-row stores */
    "kernel t2(a: f32[R, 4*K] in(-0.25, 3e3), g: f32[2*K]) -> (o: f32[R, 4*K], "
    "p: f32[R]) {\n"
    "  o[r, 3::4] = a[r, 0::4] * g[1::2]\n  o[r, 1::4] = 7\n"
    "  o[r, 0::4] = sum(a[r, 2::4]) * f32(c)\n  p[r] = R + 1\n}\n",
    /* nodes named after their first use; stores out of node order */
    "kernel t4(x: f32[R, C]) -> (y: f32[R, C], z: f32[R, C]) {\n"
    "  z[r, :] = x[r, :] * 3\n"
    "  y[r, :] = exp(x[r, :]) + x[r, :] * 2\n"
    "  t = x[r, :] * 2\n  w = exp(x[r, :])\n  alias = t\n}\n",
    /* constant dims, abs/neg/min/max/casts, unary chains, dims as values */
    "kernel t5(x: f32[R, 64], m: i32[R, 64] mask, s: f32 = -inf) -> (y: f32[R, "
    "64], q: i32[R, 64]) {\n"
    "  y[r, :] = -(-x[r, :]) * -s + min(abs(x[r, :]), 1) - max(neg(x[r, :]), "
    "0.1) + f32(i32(2.5))\n"
    "  q[r, :] = m[r, :] * (c - 1) + i32(x[r, :] * 0)\n}\n",
    /* a deep chain of named values */
    "kernel t6(x: f32[R, C]) -> (y: f32[R, C]) {\n"
    "  a = x[r, :]; b = a + 1; c1 = b * b; d = sum(c1); e = c1 / d\n"
    "  f = e - max(e); g = exp(f); h = g / sum(g)\n  y[r, :] = h + a\n}\n",
};

Test(ir, printed_tricky_kernels_reparse_equal) {
  for (size_t i = 0; i < sizeof tricky / sizeof *tricky; i++) {
    lm_kernel *k = parse(tricky[i]);
    char what[32];
    snprintf(what, sizeof what, "tricky[%zu]", i);
    expect_round_trip(k, what);
    lm_kernel_free(k);
  }
}

Test(ir, printer_prints_rope_canonically) {
  lm_kernel *k = load("rope.lk");
  char *text = lm_kernel_print(k);
  cr_expect_str_eq(text, "kernel rope(x: f32[R, 2*H], cs: f32[R, H], sn: "
                         "f32[R, H]) -> (y: f32[R, 2*H]) {\n"
                         "  a = x[r, 0::2]\n"
                         "  b = x[r, 1::2]\n"
                         "  y[r, 0::2] = a * cs[r, :] - b * sn[r, :]\n"
                         "  y[r, 1::2] = a * sn[r, :] + b * cs[r, :]\n"
                         "}\n");
  free(text);
  lm_kernel_free(k);
}

Test(ir, printer_keeps_parentheses_the_tree_needs) {
  lm_kernel *k = parse(
      "kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
      "  y[r, :] = (x[r, :] - (1 - 2)) / (3 * (4 / 5)) * -(x[r, :] + 1)\n}\n");
  char *text = lm_kernel_print(k);
  cr_expect(
      strstr(
          text,
          "y[r, :] = (x[r, :] - (1 - 2)) / (3 * (4 / 5)) * -(x[r, :] + 1)\n"),
      "%s", text);
  free(text);
  lm_kernel_free(k);
}

Test(ir, equal_is_false_for_different_kernels) {
  lm_kernel *a = load("rmsnorm.lk"), *b = load("layernorm.lk");
  lm_kernel *c = parse("kernel rmsnorm(x: f32[R, C], g: f32[C], eps: f32 = "
                       "1e-5) -> (y: f32[R, C]) {\n"
                       "  xs = x[r, :]\n  ms = sum(xs * xs) / C\n"
                       "  y[r, :] = xs / sqrt(ms + eps) * g[:]\n}\n");
  cr_expect(lm_kernel_equal(a, a));
  cr_expect(!lm_kernel_equal(a, b));
  cr_expect(!lm_kernel_equal(a, c), "defaults differ");
  lm_kernel_free(a);
  lm_kernel_free(b);
  lm_kernel_free(c);
}

static char *read_golden(const char *name) {
  char path[512], *text = NULL;
  lm_error err;
  snprintf(path, sizeof path, LANEMAP_SOURCE_DIR "/tests/golden/print/%s",
           name);
  cr_assert_eq(lm_file_read(path, &text, NULL, &err), LM_OK, "%s", err.msg);
  return text;
}

Test(ir, dump_of_rmsnorm_matches_golden) {
  lm_kernel *k = load("rmsnorm.lk");
  char *got = lm_kernel_dump(k), *want = read_golden("rmsnorm.ir");
  cr_expect_str_eq(got, want);
  free(got);
  free(want);
  lm_kernel_free(k);
}

Test(ir, dump_of_rope_matches_golden) {
  lm_kernel *k = load("rope.lk");
  char *got = lm_kernel_dump(k), *want = read_golden("rope.ir");
  cr_expect_str_eq(got, want);
  free(got);
  free(want);
  lm_kernel_free(k);
}

Test(ir, print_of_layernorm_matches_golden) {
  lm_kernel *k = load("layernorm.lk");
  char *got = lm_kernel_print(k), *want = read_golden("layernorm.lk");
  cr_expect_str_eq(got, want);
  free(got);
  free(want);
  lm_kernel_free(k);
}

/* ---- shapes ----------------------------------------------------------- */

Test(ir, shape_binds_r_and_c) {
  lm_kernel *k = load("rmsnorm.lk");
  lm_shape s;
  lm_error err = {0};
  cr_assert_eq(lm_shape_bind(k, 17, 65, NULL, &s, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(s.nsyms, 2);
  cr_expect_eq(s.dims[0], 17);
  cr_expect_eq(s.dims[1], 65);
  cr_expect_eq(lm_dim_eval(k->ncols, &s), 65);
  cr_expect_eq(lm_param_count(k, 0, &s), 17 * 65);
  cr_expect_eq(lm_param_count(k, 1, &s), 65);
  cr_expect_eq(lm_param_count(k, 2, &s), 1);
  lm_kernel_free(k);
}

Test(ir, shape_solves_h_from_c_for_rope) {
  lm_kernel *k = load("rope.lk");
  lm_shape s;
  lm_error err = {0};
  cr_assert_eq(lm_shape_bind(k, 17, 66, NULL, &s, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(s.dims[k->col_sym], 33);
  cr_expect_eq(lm_dim_eval(k->ncols, &s), 33);
  cr_expect_eq(lm_param_count(k, 0, &s), 17 * 66);
  cr_expect_eq(lm_param_count(k, 1, &s), 17 * 33);
  lm_kernel_free(k);
}

Test(ir, shape_rejects_c_not_a_multiple_of_the_dim_coefficient) {
  lm_kernel *k = load("rope.lk");
  lm_shape s;
  lm_error err = {0};
  cr_expect_eq(lm_shape_bind(k, 17, 65, NULL, &s, &err), LM_EINPUT);
  cr_expect_str_eq(err.msg, "C=65 is not a multiple of 2 (dim 2*H of x)");
  lm_kernel_free(k);
}

Test(ir, shape_rejects_nonpositive_extents) {
  lm_kernel *k = load("rmsnorm.lk");
  lm_shape s;
  lm_error err = {0};
  cr_expect_eq(lm_shape_bind(k, 0, 65, NULL, &s, &err), LM_EINPUT);
  cr_expect_str_eq(err.msg, "R=0 must be at least 1");
  cr_expect_eq(lm_shape_bind(k, 4, -1, NULL, &s, &err), LM_EINPUT);
  cr_expect_str_eq(err.msg, "C=-1 must be positive (dim C of x)");
  lm_kernel_free(k);
}

Test(ir, shape_rejects_buffers_over_two_to_the_31_elements) {
  lm_kernel *k = load("rmsnorm.lk");
  lm_shape s;
  lm_error err = {0};
  cr_expect_eq(lm_shape_bind(k, 65536, 65536, NULL, &s, &err), LM_EINPUT);
  cr_expect_str_eq(
      err.msg,
      "shape too large: x would have 4294967296 elements (at most 2^31)");
  cr_expect_eq(lm_shape_bind(k, INT64_MAX, INT64_MAX, NULL, &s, &err),
               LM_EINPUT);
  cr_expect_str_eq(err.msg,
                   "shape too large: the element count of x overflows 64 bits");
  cr_expect_eq(lm_shape_bind(k, 32768, 65536, NULL, &s, &err), LM_OK, "%s",
               err.msg);
  lm_kernel_free(k);
}

Test(ir, shape_binds_extra_symbols_by_name) {
  lm_kernel *k = parse("kernel k(x: f32[R, C], w: f32[K]) -> (y: f32[R, C]) {\n"
                       "  y[r, :] = x[r, :]\n}\n");
  lm_shape s;
  lm_error err = {0};
  cr_expect_eq(lm_shape_bind(k, 4, 8, NULL, &s, &err), LM_EINPUT);
  cr_expect_str_eq(err.msg, "dim K of kernel k is not bound: give it as K=N");
  cr_assert_eq(lm_shape_bind(k, 4, 8, "K=3", &s, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(s.dims[2], 3);
  cr_expect_eq(lm_param_count(k, 1, &s), 3);
  cr_expect_eq(lm_shape_bind(k, 4, 8, "Q=3", &s, &err), LM_EINPUT);
  cr_expect_str_eq(err.msg, "unknown dim 'Q' in 'Q=3' (kernel k has R, C, K)");
  cr_expect_eq(lm_shape_bind(k, 4, 8, "C=9", &s, &err), LM_EINPUT);
  cr_expect_str_eq(err.msg, "dim C=9 conflicts with C=8 from the shape");
  cr_expect_eq(lm_shape_bind(k, 4, 8, "K=0", &s, &err), LM_EINPUT);
  cr_expect_str_eq(err.msg, "dim K=0 must be positive");
  lm_kernel_free(k);
}

Test(ir, shape_with_constant_dim_must_match_c) {
  lm_kernel *k = parse("kernel k(x: f32[R, 64]) -> (y: f32[R, 64]) {\n"
                       "  y[r, :] = x[r, :]\n}\n");
  lm_shape s;
  lm_error err = {0};
  cr_expect_eq(k->col_sym, -1);
  cr_expect_eq(lm_shape_bind(k, 2, 64, NULL, &s, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(lm_shape_bind(k, 2, 65, NULL, &s, &err), LM_EINPUT);
  cr_expect_str_eq(err.msg, "C=65 does not match the constant dim 64 of x");
  lm_kernel_free(k);
}

Test(ir, shape_parse_accepts_comma_and_x_forms) {
  lm_kernel *k = load("rope.lk");
  lm_shape s;
  lm_error err = {0};
  cr_assert_eq(lm_shape_parse(k, "17x66", &s, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(s.dims[0], 17);
  cr_expect_eq(s.dims[1], 33);
  cr_assert_eq(lm_shape_parse(k, "64,128", &s, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(s.dims[1], 64);
  cr_assert_eq(lm_shape_parse(k, " 2 X 4 ,H=2", &s, &err), LM_OK, "%s",
               err.msg);
  cr_expect_eq(s.dims[1], 2);
  lm_kernel_free(k);
}

Test(ir, shape_parse_rejects_malformed_text) {
  lm_kernel *k = load("rmsnorm.lk");
  lm_shape s;
  lm_error err = {0};
  const char *bad[] = {"",       "17",      "17x",     "x65",
                       "-1x65",  "17x-65",  "0x65",    "17x0",
                       "abc",    "17x65x3", "17.5x65", "99999999999999999999x1",
                       "17x65,", "17x65,C"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err.msg[0] = 0;
    cr_expect_eq(lm_shape_parse(k, bad[i], &s, &err), LM_EINPUT, "'%s'",
                 bad[i]);
    cr_expect_neq(err.msg[0], 0, "'%s' gave no message", bad[i]);
  }
  cr_expect_eq(lm_shape_parse(k, "-1x65", &s, &err), LM_EINPUT);
  cr_expect_str_eq(err.msg, "bad shape '-1x65': R must be positive");
  cr_expect_eq(lm_shape_parse(k, "99999999999999999999x1", &s, &err),
               LM_EINPUT);
  cr_expect_str_eq(err.msg,
                   "bad shape '99999999999999999999x1': R is too large");
  lm_kernel_free(k);
}

Test(ir, dtype_sizes_and_names) {
  cr_expect_eq(lm_dtype_size(LM_F32), 4);
  cr_expect_eq(lm_dtype_size(LM_F64), 8);
  cr_expect_eq(lm_dtype_size(LM_I32), 4);
  cr_expect_str_eq(lm_dtype_name(LM_F64), "f64");
  cr_expect_str_eq(lm_op_name(LM_OP_LOAD_ROW), "load_row");
  cr_expect_str_eq(lm_op_name(LM_OP_RSUM), "rsum");
  for (int op = 0; op < LM_OP__COUNT; op++)
    cr_expect_str_neq(lm_op_name((lm_op)op), "?", "op %d has no name", op);
}

/* ---- value ranges (docs/language.md, "Value ranges") ---- */

/* Source of a one-output f32 kernel: inputs `params`, body `y[r, :] = expr`
 * (or a per-row `s[r] = expr` when rowout). */
static const char *range_src(const char *params, const char *expr, int rowout) {
  static char src[1024];
  snprintf(src, sizeof src, "kernel k(%s) -> (%s) {\n  %s = %s\n}\n", params,
           rowout ? "s: f32[R]" : "y: f32[R, C]", rowout ? "s[r]" : "y[r, :]",
           expr);
  return src;
}

static void range_ok(const char *params, const char *expr, int rowout) {
  const char *src = range_src(params, expr, rowout);
  lm_kernel *k = NULL;
  lm_error err = {0};
  cr_expect_eq(lm_kernel_parse("test.lk", src, strlen(src), &k, &err), LM_OK,
               "%s: %s", expr, err.msg);
  lm_kernel_free(k);
}

Test(ir, range_every_kernel_in_the_tree_passes) {
  static const char *dirs[] = {"/kernels/", "/heldout/kernels/", "/heldout/set2/kernels/",
                               "/tests/kernels/", "/tests/difftest/regress/"};
  int n = 0;
  for (size_t d = 0; d < sizeof dirs / sizeof *dirs; d++) {
    char pat[512];
    snprintf(pat, sizeof pat, LANEMAP_SOURCE_DIR "%s*.lk", dirs[d]);
    glob_t g;
    if (glob(pat, 0, NULL, &g) != 0)
      continue;
    for (size_t i = 0; i < g.gl_pathc; i++, n++) {
      lm_kernel *k = NULL;
      lm_error err = {0};
      cr_expect_eq(lm_kernel_load(g.gl_pathv[i], &k, &err), LM_OK, "%s",
                   err.msg);
      lm_kernel_free(k);
    }
    globfree(&g);
  }
  cr_expect_geq(n, 20, "only %d kernels found", n);
}

Test(ir, range_refuses_a_product_past_f32_max_naming_node_and_bound) {
  cr_expect_str_eq(
      parse_error(range_src("x: f32[R, C] in(10, 100)", "x[r, :] * 1e38", 0)),
      "test.lk:2:21: error: value may overflow f32: x[r, :] * 1e+38 is in "
      "[1e+39, 1e+40] for the declared inputs (f32 max 3.4e+38)");
}

Test(ir, range_refuses_exp_that_overflows_even_when_multiplied_by_zero) {
  const char *m = parse_error(
      range_src("x: f32[R, C] in(-100, 100)", "exp(x[r, :]) * 0", 0));
  cr_expect(strstr(m, "2:13: error: value may overflow f32: exp(x[r, :]) is "
                      "in [3.7e-44, 2.7e+43]"),
            "%s", m);
}

Test(ir, range_refuses_the_reciprocal_of_subnormal_inputs) {
  const char *m =
      parse_error(range_src("x: f32[R, C] in(1e-42, 1e-39)", "1 / x[r, :]", 0));
  cr_expect(strstr(m, "value may overflow f32: 1 / x[r, :]"), "%s", m);
}

Test(ir, range_bounds_a_sum_at_two_to_the_31_columns) {
  range_ok("x: f32[R, C] in(-1e29, 1e29)", "sum(x[r, :])", 1);
  const char *m =
      parse_error(range_src("x: f32[R, C] in(-1e30, 1e30)", "sum(x[r, :])", 1));
  cr_expect(strstr(m, "sum(x[r, :]) is in [-2.1e+39, 2.1e+39]"), "%s", m);
  m = parse_error(range_src("x: f32[R, C] in(-3e38, 3e38)", "sum(x[r, :])", 1));
  cr_expect(strstr(m, "value may overflow f32: sum(x[r, :])"), "%s", m);
}

Test(ir, range_accepts_values_that_stay_inside_f32) {
  range_ok("x: f32[R, C]", "x[r, :] * 1e38", 0);           /* [-1, 1] */
  range_ok("x: f32[R, C] in(-80, 80)", "exp(x[r, :])", 0); /* e^80 */
  range_ok("x: f32[R, C] in(-1e4, 1e4)", "sum(x[r, :] * x[r, :])", 1);
  range_ok("x: f32[R, C], t: f32 = 0.5", "tanh(x[r, :] / t) * 1e30", 0);
}

Test(ir, range_keeps_z_minus_max_z_at_most_zero) {
  /* exp(z - max(z)) <= 1 whatever z's range; plain intervals say e^400 */
  range_ok("x: f32[R, C] in(-200, 200)", "exp(x[r, :] - max(x[r, :]))", 0);
  const char *m = parse_error(range_src("x: f32[R, C] in(-200, 200)",
                                        "exp(x[r, :] - min(x[r, :]))", 0));
  cr_expect(strstr(m, "value may overflow f32: exp(x[r, :] - min(x[r, :]))"),
            "%s", m);
}

Test(ir, range_bounds_a_mean_and_an_index_over_its_dim) {
  range_ok("x: f32[R, C] in(-80, 80)", "exp(sum(x[r, :]) / C) + x[r, :]", 0);
  range_ok("x: f32[R, C]", "exp(f32(c) / C * 80) + x[r, :]", 0);
  range_ok("x: f32[R, C]", "exp(f32(r) / R * 80) + x[r, :]", 0);
  /* c itself reaches 2^31 - 1, and e^(2^31) overflows */
  const char *m =
      parse_error(range_src("x: f32[R, C]", "exp(f32(c)) + x[r, :]", 0));
  cr_expect(strstr(m, "value may overflow f32: exp(f32(c))"), "%s", m);
}

Test(ir, range_leaves_a_quotient_by_a_range_through_zero_unbounded) {
  range_ok("x: f32[R, C]", "1 / x[r, :]", 0);
  range_ok("x: f32[R, C]", "1e38 / x[r, :] * 1e38", 0);
  range_ok("x: f32[R, C] in(0, 1)", "rsqrt(x[r, :]) + pow(x[r, :], -3)", 0);
  range_ok("x: f32[R, C] in(0, 1)", "log(x[r, :]) * 1e30", 0);
}

Test(ir, range_accepts_infinities_the_kernel_means) {
  range_ok("x: f32[R, C] in(-4, 4), m: i32[R, C] mask",
           "exp(where(m[r, :] != 0, x[r, :], -inf) * 1e38)", 0);
  range_ok("x: f32[R, C], n: i32[R] rowlen", "max(x[r, :]) * 1e38", 1);
  range_ok("x: f32[R, C]", "x[r, :] * inf", 0);
}

Test(ir, range_does_not_check_f64_or_i32_values) {
  const char *src = "kernel k(x: f64[R, C] in(10, 100), n: i32[R, C]) -> "
                    "(y: f64[R, C], z: i32[R, C]) {\n"
                    "  y[r, :] = x[r, :] * 1e300\n"
                    "  z[r, :] = n[r, :] * 2147483647\n}\n";
  lm_kernel *k = NULL;
  lm_error err = {0};
  cr_expect_eq(lm_kernel_parse("test.lk", src, strlen(src), &k, &err), LM_OK,
               "%s", err.msg);
  lm_kernel_free(k);
}

Test(ir, range_refuses_an_f32_literal_past_f32_max) {
  const char *m = parse_error(range_src("x: f32[R, C]", "x[r, :] + 1e39", 0));
  cr_expect(strstr(m, "value may overflow f32: 1e+39 is in [1e+39, 1e+39]"),
            "%s", m);
}

/* ---- limits the backend imposes ---- */

Test(ir, a_kernel_at_every_limit_checks) {
  /* 64 buffers (48 inputs, 16 outputs), each output stored through its 16
   * views of step 16: 256 stores. */
  static char src[32768];
  size_t n = 0;
  n += (size_t)snprintf(src + n, sizeof src - n, "kernel lim(");
  for (int i = 0; i < 47; i++)
    n += (size_t)snprintf(src + n, sizeof src - n, "x%d: f32[R, H], ", i);
  n += (size_t)snprintf(src + n, sizeof src - n, "w: f32[R, 16*H]) -> (");
  for (int i = 0; i < 16; i++)
    n += (size_t)snprintf(src + n, sizeof src - n, "%sy%d: f32[R, 16*H]",
                          i ? ", " : "", i);
  n += (size_t)snprintf(src + n, sizeof src - n,
                        ") {\n  t = x0[r, :] + w[r, 15::16]\n");
  for (int i = 0; i < 16; i++)
    for (int s = 0; s < 16; s++)
      n += (size_t)snprintf(src + n, sizeof src - n, "  y%d[r, %d::16] = t\n",
                            i, s);
  snprintf(src + n, sizeof src - n, "}\n");
  lm_kernel *k = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_parse("lim.lk", src, strlen(src), &k, &err), LM_OK,
               "%s", err.msg);
  cr_expect_eq(k->nstores, LM_MAX_STORES);
  cr_expect_eq(k->nparams, LM_MAX_BUFFERS);
  lm_kernel_free(k);
}
