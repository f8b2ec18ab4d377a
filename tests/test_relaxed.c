/* The relaxed floating-point mode (fp=relaxed): the rewritten kernel, the
 * variant field, its legality and enumeration, what the lowering emits and
 * what the cost model counts.  That every relaxed variant of every kernel
 * matches the FP64 oracle is test_backend's check_all (both modes). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "costmodel/counts.h"
#include "lanemap/backend.h"
#include "lanemap/costmodel.h"
#include "lanemap/oracle.h"
#include "lanemap/verify.h"

static lm_kernel *load(const char *rel) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", LANEMAP_SOURCE_DIR, rel);
  lm_kernel *k = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_load(path, &k, &err), LM_OK, "%s: %s", rel, err.msg);
  return k;
}

static lm_kernel *parse(const char *src) {
  lm_kernel *k = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_parse("t.lk", src, strlen(src), &k, &err), LM_OK, "%s",
               err.msg);
  return k;
}

static const char *isr_src = /* x / sqrt(u), u per element */
    "kernel isr(x: f32[R, C]) -> (y: f32[R, C]) {\n"
    "  y[r, :] = x[r, :] / sqrt(x[r, :] * x[r, :] + 1)\n"
    "}\n";
static const char *relu_src = /* nothing for relaxed mode to change */
    "kernel relu(x: f32[R, C]) -> (y: f32[R, C]) {\n"
    "  y[r, :] = max(x[r, :], 0)\n"
    "}\n";

static int count_ops(const lm_kernel *k, lm_op op, int tile) {
  int n = 0;
  for (int i = 0; i < k->nnodes; i++)
    n += k->nodes[i].op == op && k->nodes[i].tile == tile;
  return n;
}

static lm_variant variant(const char *s) {
  lm_variant v;
  lm_error err = {0};
  cr_assert_eq(lm_variant_parse(s, &v, &err), LM_OK, "%s: %s", s, err.msg);
  return v;
}

static lm_counts counts_of(const lm_kernel *k, const char *vs) {
  lm_variant v = variant(vs);
  lm_compiled *c;
  lm_compile_opts o;
  lm_compile_defaults(&o);
  o.want_asm = 1;
  lm_error err = {0};
  cr_assert_eq(lm_compile(k, &v, &o, &c, &err), LM_OK, "%s: %s", vs, err.msg);
  lm_counts n = *lm_compiled_counts(c);
  lm_compiled_free(c);
  return n;
}

static int steps_div(const lm_counts *n) {
  return n->part[LM_PART_MAIN].div_lanes + n->part[LM_PART_REST].div_lanes +
         n->part[LM_PART_TAIL].div_lanes;
}

Test(relaxed, row_uniform_divisors_become_reciprocals_taken_once_per_row) {
  const char *files[] = {"kernels/rmsnorm.lk", "kernels/layernorm.lk",
                         "kernels/masked_softmax.lk"};
  for (int f = 0; f < 3; f++) {
    lm_kernel *k = load(files[f]);
    const lm_kernel *r = lm_kernel_relaxed(k);
    cr_assert_neq(r, k, "%s has a relaxed form", files[f]);
    cr_expect_eq(k->relax_rewrites, 1, "%s", files[f]);
    cr_expect_gt(count_ops(k, LM_OP_DIV, 1), 0, "%s divides per element", files[f]);
    cr_expect_eq(count_ops(r, LM_OP_DIV, 1), 0, "%s relaxed: no tile division",
                 files[f]);
    /* the reciprocal is a uniform: rsqrt for the norms, 1/sum for softmax */
    cr_expect_eq(count_ops(r, LM_OP_RSQRT, 1), 0, "%s", files[f]);
    cr_expect_eq(count_ops(r, LM_OP_RSQRT, 0) + count_ops(r, LM_OP_DIV, 0),
                 count_ops(k, LM_OP_DIV, 0) + 1, "%s", files[f]);
    lm_kernel_free(k);
  }
}

Test(relaxed, the_lowering_divides_once_per_packet_not_per_step) {
  lm_kernel *k = load("kernels/rmsnorm.lk");
  lm_counts s = counts_of(k, "x86-64-v3/w8/l8/phase=reread/t1");
  lm_counts r = counts_of(k, "x86-64-v3/w8/l8/phase=reread/fp=relaxed/t1");
  cr_expect_gt(steps_div(&s), 0, "strict divides in the column loops");
  cr_expect_eq(steps_div(&r), 0, "relaxed divides outside them");
  cr_expect_eq(r.part[LM_PART_PACKET].div_lanes,
               s.part[LM_PART_PACKET].div_lanes - 16,
               "per packet: the square root (8 lanes) becomes an f32 rsqrt "
               "estimate, and the mean square's division by C (8 lanes) a "
               "multiply by 1/C, taken once per launch");
  cr_expect_lt(r.ir_fdiv, s.ir_fdiv);
  lm_kernel_free(k);
}

/* Divisors the same for every row of a launch: s * C, and s / C whole. */
static const char *fixed_src =
    "kernel fx(x: f32[R, C], s: f32 = 3) -> (y: f32[R, C]) {\n"
    "  m = sum(x[r, :]) / (s * C)\n"
    "  y[r, :] = x[r, :] * m + s / C\n"
    "}\n";

Test(relaxed, a_divisor_fixed_for_the_launch_is_a_reciprocal_taken_once) {
  lm_kernel *k = parse(fixed_src);
  const char *vs[] = {"x86-64-v3/w8/l8/t1", "x86-64-v3/w8/l8/fp=relaxed/t1"};
  /* strict divides the row's sum in every packet (8 lanes); s / C, the
   * same everywhere, is hoisted by LLVM in both modes and counted in
   * neither; relaxed multiplies the sum by 1/(s*C), taken once */
  int want[] = {8, 0};
  lm_shape sh;
  lm_error err = {0};
  cr_assert_eq(lm_shape_bind(k, 37, 29, NULL, &sh, &err), LM_OK, "%s", err.msg);
  lm_data *d;
  lm_oracle *o;
  cr_assert_eq(lm_data_gen(k, &sh, 5, &d, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_oracle_run(k, d, &o, &err), LM_OK, "%s", err.msg);
  for (int i = 0; i < 2; i++) {
    lm_counts n = counts_of(k, vs[i]);
    cr_expect_eq(n.part[LM_PART_PACKET].div_lanes + steps_div(&n), want[i],
                 "%s: %d division lanes", vs[i],
                 n.part[LM_PART_PACKET].div_lanes + steps_div(&n));
    lm_cost_counts cc;
    lm_variant v = variant(vs[i]);
    cr_assert_eq(lm_cost_counts_build(k, &v, &cc, &err), LM_OK, "%s", err.msg);
    cr_expect_eq(cc.packet[LM_T_VDIV], want[i], "%s: the model counts %g",
                 vs[i], cc.packet[LM_T_VDIV]);
    if (!lm_isa_runnable(v.isa))
      continue;
    lm_compiled *c;
    cr_assert_eq(lm_compile(k, &v, NULL, &c, &err), LM_OK, "%s", err.msg);
    lm_verify_result res;
    cr_expect_eq(lm_verify(k, c, d, o, NULL, &res, &err), LM_OK, "%s: %s",
                 vs[i], err.msg);
    lm_compiled_free(c);
  }
  lm_oracle_free(o);
  lm_data_free(d);
  lm_kernel_free(k);
}

/* A row mean: its only change in relaxed mode is the reciprocal of C,
 * hoisted out of the row loop (no tile division, no product to fuse). */
static const char *mean_src =
    "kernel rowmean(x: f32[R, C]) -> (y: f32[R]) {\n"
    "  y[r] = sum(x[r, :]) / C\n"
    "}\n";

Test(relaxed, a_per_row_division_by_a_launch_fixed_value_alone_admits_relaxed_mode) {
  lm_kernel *k = parse(mean_src);
  cr_expect_eq(k->relax_rewrites + k->relax_contractions, 0);
  cr_expect_eq(k->relax_hoists, 1);
  lm_error err = {0};
  /* accepted on every x86 level, FMA or not: the change is the hoist */
  const char *vs[] = {"x86-64-v2/w4/l4/fp=relaxed/t1", "x86-64-v3/w8/l8/fp=relaxed/t1"};
  for (int i = 0; i < 2; i++) {
    lm_variant v = variant(vs[i]);
    cr_expect_eq(lm_variant_check(k, &v, &err), LM_OK, "%s: %s", vs[i], err.msg);
  }
  lm_variant s3 = variant("x86-64-v3/w8/l8/t1"), r3 = variant("x86-64-v3/w8/l8/fp=relaxed/t1");
  lm_cost_counts cs, cr;
  cr_assert_eq(lm_cost_counts_build(k, &s3, &cs, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_cost_counts_build(k, &r3, &cr, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(cs.packet[LM_T_VDIV], 8, "strict divides each packet's 8 sums");
  cr_expect_eq(cr.packet[LM_T_VDIV], 0, "relaxed multiplies by 1/C, taken once");
  lm_kernel_free(k);
  /* a division by a per-row value is no hoist */
  lm_kernel *u = parse("kernel u(x: f32[R, C], s: f32[R]) -> (y: f32[R]) {\n"
                       "  y[r] = sum(x[r, :]) / s[r]\n"
                       "}\n");
  cr_expect_eq(u->relax_hoists, 0);
  lm_variant v = variant("x86-64-v3/w8/l8/fp=relaxed/t1");
  cr_expect_eq(lm_variant_check(u, &v, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "changes nothing"), "%s", err.msg);
  lm_kernel_free(u);
}

Test(relaxed, a_per_element_square_root_divisor_becomes_an_estimated_rsqrt) {
  lm_kernel *k = parse(isr_src);
  const lm_kernel *r = lm_kernel_relaxed(k);
  cr_assert_eq(k->relax_rewrites, 1);
  cr_expect_eq(count_ops(r, LM_OP_RSQRT, 1), 1);
  cr_expect_eq(count_ops(r, LM_OP_DIV, 1), 0);
  lm_counts s = counts_of(k, "x86-64-v2/w4/l4/t1");
  lm_counts x = counts_of(k, "x86-64-v2/w4/l4/fp=relaxed/t1");
  cr_expect_gt(s.asm_div_sqrt, 0);
  cr_expect_eq(x.asm_div_sqrt, 0, "f32: an estimate and a Newton step");
  cr_expect_eq(steps_div(&x), 0, "and the lowering counts no divider lanes");
  lm_kernel_free(k);
  /* x86 has no f64 estimate: the division stays, and is counted */
  char src64[512];
  snprintf(src64, sizeof src64, "%s", isr_src);
  for (char *p = src64; (p = strstr(p, "f32")); p += 3)
    memcpy(p, "f64", 3);
  k = parse(src64);
  x = counts_of(k, "x86-64-v2/w2/l2/fp=relaxed/t1");
  cr_expect_gt(x.asm_div_sqrt, 0);
  cr_expect_gt(steps_div(&x), 0);
  lm_kernel_free(k);
}

Test(relaxed, multiplies_feeding_adds_fuse_only_in_relaxed_mode) {
  if (!lm_isa_runnable(LM_ISA_AVX2))
    cr_skip_test("this machine cannot run x86-64-v3 code");
  lm_kernel *k = load("kernels/layernorm.lk");
  cr_expect_gt(k->relax_contractions, 0);
  const char *strict = "x86-64-v3/w8/l8/phase=reread/t1";
  const char *relaxed = "x86-64-v3/w8/l8/phase=reread/fp=relaxed/t1";
  lm_error err = {0};
  int fmas[2];
  for (int i = 0; i < 2; i++) {
    lm_variant v = variant(i ? relaxed : strict);
    lm_compile_opts o;
    lm_compile_defaults(&o);
    o.want_asm = 1;
    lm_compiled *c;
    cr_assert_eq(lm_compile(k, &v, &o, &c, &err), LM_OK, "%s", err.msg);
    fmas[i] = 0;
    for (const char *p = lm_compiled_asm(c); (p = strstr(p, "vfmadd")); p++)
      fmas[i]++;
    lm_compiled_free(c);
  }
  cr_expect_eq(fmas[0], 0, "strict rounds every multiply and add");
  cr_expect_gt(fmas[1], 0, "relaxed contracts them");
  /* the cost model counts one operation less per fused pair */
  lm_cost_counts cs, cr;
  lm_variant vs = variant(strict), vr = variant(relaxed);
  cr_assert_eq(lm_cost_counts_build(k, &vs, &cs, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_cost_counts_build(k, &vr, &cr, &err), LM_OK, "%s", err.msg);
  cr_expect_lt(cr.step_main[LM_T_VOP], cs.step_main[LM_T_VOP]);
  cr_expect_eq(cr.step_main[LM_T_VDIV], 0);
  cr_expect_gt(cs.step_main[LM_T_VDIV], 0);
  lm_kernel_free(k);
}

Test(relaxed, the_field_parses_formats_and_is_refused_where_it_changes_nothing) {
  lm_variant v = variant("x86-64-v4/w16/l16/phase=reread/fp=relaxed/t2/static");
  cr_expect_eq(v.fp, LM_FP_RELAXED);
  char buf[128];
  cr_expect_str_eq(lm_variant_format(&v, buf, sizeof buf),
                   "x86-64-v4/w16/l16/phase=reread/fp=relaxed/t2/static");
  lm_variant s = variant("x86-64-v4/w16/l16/phase=reread/fp=strict/t1");
  cr_expect_eq(s.fp, LM_FP_STRICT);
  cr_expect_str_eq(lm_variant_format(&s, buf, sizeof buf),
                   "x86-64-v4/w16/l16/phase=reread/t1", "strict is not written");
  v.workers = 1, v.split = 0;
  cr_expect_not(lm_variant_same_code(&v, &s));

  lm_error err = {0};
  lm_variant bad;
  cr_expect_eq(lm_variant_parse("x86-64-v4/w16/l16/fp=fast/t1", &bad, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "strict or relaxed"), "%s", err.msg);
  cr_expect_eq(lm_variant_parse("x86-64-v4/w16/l16/fp=relaxed/math=mvec/t1", &bad, &err),
               LM_EINPUT, "fp comes after math");
  cr_expect_eq(lm_variant_parse("x86-64-v4/w16/l16/fp=relaxed/fp=relaxed/t1", &bad, &err),
               LM_EINPUT, "once");

  lm_kernel *k = parse(relu_src);
  cr_expect_eq(k->relax_rewrites + k->relax_contractions, 0);
  lm_variant r = variant("x86-64-v2/w4/l4/fp=relaxed/t1");
  cr_expect_eq(lm_variant_check(k, &r, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "changes nothing"), "%s", err.msg);
  lm_kernel_free(k);
}

Test(relaxed, contraction_needs_fma_and_fuses_one_product_per_add) {
  lm_kernel *k = load("kernels/rope.lk"); /* a*cs - b*sn, a*sn + b*cs */
  cr_expect_eq(k->relax_rewrites, 0);
  cr_expect_eq(k->relax_contractions, 2, "one product per add or subtract");
  lm_error err = {0};
  lm_variant v2 = variant("x86-64-v2/w4/l4/fp=relaxed/t1");
  cr_expect_eq(lm_variant_check(k, &v2, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "which has no FMA"), "%s", err.msg);
  lm_enum_opts eo;
  lm_enum_defaults(&eo);
  eo.isa = LM_ISA_SSE42;
  eo.fps = 1u << LM_FP_RELAXED;
  lm_variant *vs;
  int n = lm_variant_enumerate(k, &eo, &vs, &err);
  cr_expect_gt(n, 0);
  for (int i = 0; i < n; i++)
    cr_expect_eq(vs[i].fp, LM_FP_STRICT, "x86-64-v2 keeps strict rope");
  free(vs);
  lm_variant s3 = variant("x86-64-v3/w8/l8/t1"), r3 = variant("x86-64-v3/w8/l8/fp=relaxed/t1");
  lm_cost_counts cs, cr;
  cr_assert_eq(lm_cost_counts_build(k, &s3, &cs, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_cost_counts_build(k, &r3, &cr, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(cs.step_main[LM_T_VOP] - cr.step_main[LM_T_VOP], 2,
               "a main step fuses two products: %g against %g",
               cr.step_main[LM_T_VOP], cs.step_main[LM_T_VOP]);
  lm_kernel_free(k);
  /* a per-row product feeding a per-element add is computed once per
   * packet and does not fuse */
  lm_kernel *u = parse("kernel u(x: f32[R, C], s: f32[R]) -> (y: f32[R, C]) {\n"
                       "  y[r, :] = x[r, :] + s[r] * 2\n"
                       "}\n");
  cr_expect_eq(u->relax_contractions, 0);
  lm_kernel_free(u);
}

Test(relaxed, enumeration_offers_relaxed_variants_only_when_asked) {
  lm_kernel *k = load("kernels/rmsnorm.lk"), *relu = parse(relu_src);
  lm_enum_opts eo;
  lm_enum_defaults(&eo);
  eo.isa = LM_ISA_AVX2;
  lm_variant *vs;
  lm_error err = {0};
  int n = lm_variant_enumerate(k, &eo, &vs, &err), relaxed = 0;
  for (int i = 0; i < n; i++)
    relaxed += vs[i].fp == LM_FP_RELAXED;
  free(vs);
  cr_expect_eq(relaxed, 0, "strict is the default");
  eo.fps = 1u << LM_FP_RELAXED;
  int m = lm_variant_enumerate(k, &eo, &vs, &err);
  cr_expect_eq(m, n);
  for (int i = 0; i < m; i++)
    relaxed += vs[i].fp == LM_FP_RELAXED;
  free(vs);
  cr_expect_eq(relaxed, m, "every mapping, relaxed");
  eo.fps = 1u << LM_FP_STRICT | 1u << LM_FP_RELAXED;
  cr_expect_eq(lm_variant_enumerate(k, &eo, &vs, &err), 2 * n);
  free(vs);
  /* a kernel relaxed mode does not change keeps its strict variants */
  eo.fps = 1u << LM_FP_RELAXED;
  m = lm_variant_enumerate(relu, &eo, &vs, &err);
  cr_expect_gt(m, 0);
  for (int i = 0; i < m; i++)
    cr_expect_eq(vs[i].fp, LM_FP_STRICT);
  free(vs);
  lm_kernel_free(k);
  lm_kernel_free(relu);
}

Test(relaxed, every_bundled_kernel_has_a_relaxed_form_or_none_without_error) {
  const char *files[] = {
      "kernels/rmsnorm.lk", "kernels/layernorm.lk", "kernels/masked_softmax.lk",
      "kernels/swiglu.lk", "kernels/gelu_residual.lk", "kernels/rope.lk",
      "heldout/kernels/absmax_quant.lk", "heldout/kernels/causal_softmax.lk",
      "heldout/kernels/cross_entropy.lk", "heldout/kernels/geglu.lk",
      "heldout/kernels/l2_normalize.lk", "heldout/kernels/log_softmax.lk",
      "heldout/kernels/ragged_softmax.lk", "heldout/kernels/rmsnorm_residual.lk",
      "heldout/kernels/softmax_lse.lk", "heldout/kernels/softmax_temp.lk",
      "heldout/kernels/sqrelu_scale.lk"};
  for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
    lm_kernel *k = load(files[f]);
    cr_expect_null(k->relax_why, "%s: %s", files[f], k->relax_why);
    const lm_kernel *r = lm_kernel_relaxed(k);
    cr_expect_eq(r->nparams, k->nparams, "%s: the same signature", files[f]);
    cr_expect_eq(r->nloops, k->nloops, "%s: the same column loops", files[f]);
    lm_kernel_free(k);
  }
}
