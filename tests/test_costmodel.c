/* Cost-model claims: dynamic counts equal hand-derived counts on small
 * shapes, the shipped calibration families give a full-rank design, the
 * fit recovers known coefficients on that design, and predictions are
 * consistent with their breakdown. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/backend.h"
#include "lanemap/calibrate.h"
#include "lanemap/fit.h"

static lm_kernel *load(const char *rel) {
  char p[1024];
  snprintf(p, sizeof p, "%s/%s", LANEMAP_SOURCE_DIR, rel);
  lm_kernel *k = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_load(p, &k, &err), LM_OK, "%s", err.msg);
  return k;
}

static lm_features count(lm_kernel *k, const char *variant, int64_t R, int64_t C) {
  lm_variant v;
  lm_shape s;
  lm_features f;
  lm_error err = {0};
  cr_assert_eq(lm_variant_parse(variant, &v, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_shape_bind(k, R, C, NULL, &s, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_cost_features(k, &v, &s, NULL, NULL, &f, &err), LM_OK, "%s", err.msg);
  return f;
}

Test(counts, packet_local_swiglu_matches_hand_counts) {
  /* 2 rows x 64 columns, W = L = 16: 4 unmasked steps per row (one main
   * iteration of 4 accumulator steps), per step 2 loads (a, b), 1 store, one
   * sigmoid (exp + div + 2 ops) and 2 multiplies. */
  lm_kernel *k = load("kernels/swiglu.lk");
  lm_features f = count(k, "x86-64-v4/w16/l16/t1", 2, 64);
  cr_expect_eq(f.n[LM_T_VLOAD], 16);
  cr_expect_eq(f.n[LM_T_VSTORE], 8);
  cr_expect_eq(f.n[LM_T_VEXPW], 8, "16-lane calls: the wide twin");
  cr_expect_eq(f.n[LM_T_VDIV], 8 * 16, "division counts lanes");
  cr_expect_eq(f.n[LM_T_VOP], 8 * 4);
  cr_expect_eq(f.n[LM_T_STEP], 8);
  cr_expect_eq(f.n[LM_T_MSTEP], 0);
  cr_expect_eq(f.n[LM_T_PACKET], 2);
  cr_expect_eq(f.n[LM_T_CALL], 1);
  cr_expect_eq(f.n[LM_T_GATHER], 0);
  lm_kernel_free(k);
}

Test(counts, a_row_tail_becomes_masked_steps) {
  /* 1 row x 70 columns: 70/16 -> 4 full steps (one unrolled iteration) and
   * one masked step of 6 lanes, with masked loads and a masked store. */
  lm_kernel *k = load("kernels/swiglu.lk");
  lm_features f = count(k, "x86-64-v4/w16/l16/t1", 1, 70);
  cr_expect_eq(f.n[LM_T_STEP], 4);
  cr_expect_eq(f.n[LM_T_MSTEP], 1);
  cr_expect_eq(f.n[LM_T_MASKLOAD], 2);
  cr_expect_eq(f.n[LM_T_MASKSTORE], 1);
  cr_expect_eq(f.n[LM_T_VLOAD], 8);
  lm_kernel_free(k);
}

Test(counts, program_mapping_with_gathers_rereads_each_loop) {
  /* rmsnorm, 16 rows x 3 columns, W = 16, L = 1, reread: one packet, two
   * loops of 3 steps; x is gathered in both loops, g is one broadcast load
   * per step in loop 1, y scattered in loop 1. */
  lm_kernel *k = load("kernels/rmsnorm.lk");
  lm_features f = count(k, "x86-64-v4/w16/l1/glob=gather/phase=reread/t1", 16, 3);
  cr_expect_eq(f.n[LM_T_GATHER], 2 * 3 * 16);
  cr_expect_eq(f.n[LM_T_SCATTER], 3 * 16);
  cr_expect_eq(f.n[LM_T_STEP], 6);
  cr_expect_eq(f.n[LM_T_HRED], 0, "L = 1 reduces vertically");
  lm_kernel_free(k);
}

Test(counts, snapshots_read_slots_instead_of_rereading) {
  lm_kernel *k = load("kernels/rmsnorm.lk");
  lm_features snap = count(k, "x86-64-v4/w16/l1/priv=slot/glob=gather/phase=snapshot/t1", 16, 3);
  lm_features gat = count(k, "x86-64-v4/w16/l1/priv=gather/glob=gather/phase=snapshot/t1", 16, 3);
  /* slot: x gathered once (loop 0), written to slots, read back in loop 1 */
  cr_expect_eq(snap.n[LM_T_GATHER], 3 * 16);
  cr_expect_eq(snap.n[LM_T_VSTORE], 3, "one full slot write per step");
  cr_expect_eq(snap.n[LM_T_VLOAD], 3, "one full slot read per step");
  /* gather realization: the slots themselves are gathered and scattered */
  cr_expect_eq(gat.n[LM_T_GATHER], 2 * 3 * 16);
  cr_expect_eq(gat.n[LM_T_SCATTER], 2 * 3 * 16);
  lm_kernel_free(k);
}

Test(counts, partial_packets_reduce_in_log2_l_steps_per_packet) {
  lm_kernel *k = load("kernels/rmsnorm.lk");
  lm_features f = count(k, "x86-64-v4/w16/l4/glob=transpose/phase=reread/t1", 8, 16);
  /* 8 rows / 4 per packet = 2 packets, one reduction, log2(4) = 2 steps */
  cr_expect_eq(f.n[LM_T_PACKET], 2);
  cr_expect_eq(f.n[LM_T_HRED], 4);
  cr_expect_gt(f.n[LM_T_SEGLOAD], 0);
  lm_kernel_free(k);
}

Test(counts, workers_add_tasks_and_one_fork) {
  lm_kernel *k = load("kernels/swiglu.lk");
  /* 25 entry calls and the pool's launch path */
  lm_features f = count(k, "x86-64-v4/w16/l16/t2/g4", 100, 64);
  cr_expect_eq(f.n[LM_T_CALL], 26);
  cr_expect_eq(f.n[LM_T_TASK], 25);
  cr_expect_eq(f.n[LM_T_FORK], 1);
  /* one task runs inline: no pool task, no fork-join round, but the launch
   * still goes through the pool's path, one call level more than t1 */
  lm_features g = count(k, "x86-64-v4/w16/l16/t2/g4", 3, 64);
  cr_expect_eq(g.n[LM_T_CALL], 2);
  cr_expect_eq(count(k, "x86-64-v4/w16/l16/t1", 3, 64).n[LM_T_CALL], 1);
  cr_expect_eq(g.n[LM_T_TASK], 0);
  cr_expect_eq(g.n[LM_T_FORK], 0);
  lm_kernel_free(k);
}

Test(counts, gathers_over_rows_that_share_an_l1_set_count_as_aliased) {
  /* W = 16 rows 4096 bytes apart (C = 1024 f32): every row of a gather in
   * one set of the default 48 KiB (12-way) L1.  Per step 2 gathers (a, b)
   * and 1 scatter (y) of 16 elements; 1024 steps, one packet. */
  lm_kernel *k = load("kernels/swiglu.lk");
  lm_features f = count(k, "x86-64-v4/w16/l1/glob=gather/t1", 16, 1024);
  cr_expect_eq(f.n[LM_T_GALIAS], 3 * 16 * 1024);
  cr_expect_eq(f.n[LM_T_GATHER], 2 * 16 * 1024);
  /* 4000-byte rows spread over the sets; 8 rows fit the 12 ways */
  cr_expect_eq(count(k, "x86-64-v4/w16/l1/glob=gather/t1", 16, 1000).n[LM_T_GALIAS], 0);
  cr_expect_eq(count(k, "x86-64-v4/w8/l1/glob=gather/t1", 16, 1024).n[LM_T_GALIAS], 0);
  /* a partial packet gathers from the rows that exist: 5 rows fit the ways */
  cr_expect_eq(count(k, "x86-64-v4/w16/l1/glob=gather/t1", 5, 1024).n[LM_T_GALIAS], 0);
  cr_expect_eq(count(k, "x86-64-v4/w16/l1/glob=gather/t1", 21, 1024).n[LM_T_GALIAS],
               3 * 16 * 1024, "the full packet aliases, the 5-row one does not");
  /* rows closer than a cache line share lines: 16 rows of 1 column are one line */
  cr_expect_eq(count(k, "x86-64-v4/w16/l1/glob=gather/t1", 16, 1).n[LM_T_GALIAS], 0);
  /* contiguous loads never alias */
  cr_expect_eq(count(k, "x86-64-v4/w16/l16/t1", 16, 1024).n[LM_T_GALIAS], 0);
  lm_kernel_free(k);
}

Test(counts, butterfly_stages_crossing_128_bits_are_counted_apart) {
  /* f32, L = 16: stages 8, 4, 2, 1 lanes apart; 8 and 4 cross 16 bytes.
   * One reduction per packet, 3 packets. */
  lm_kernel *k = load("kernels/rmsnorm.lk");
  lm_features f = count(k, "x86-64-v4/w16/l16/phase=reread/t1", 3, 64);
  cr_expect_eq(f.n[LM_T_HRED], 3 * 4);
  cr_expect_eq(f.n[LM_T_HREDX], 3 * 2);
  lm_features g = count(k, "x86-64-v4/w16/l4/glob=transpose/phase=reread/t1", 12, 64);
  cr_expect_eq(g.n[LM_T_HRED], 3 * 2, "4 instances per packet, 2 stages");
  cr_expect_eq(g.n[LM_T_HREDX], 0);
  lm_kernel_free(k);
}

Test(counts, wide512_counts_the_instructions_of_zmm_code_only) {
  lm_kernel *k = load("kernels/swiglu.lk");
  lm_features f = count(k, "x86-64-v4/w16/l16/t1", 2, 64);
  double ins = f.n[LM_T_VOP] + f.n[LM_T_VLOAD] + f.n[LM_T_VSTORE] + f.n[LM_T_MASKLOAD] +
               f.n[LM_T_MASKSTORE] + f.n[LM_T_SHUFFLE] + f.n[LM_T_HRED];
  cr_expect_eq(f.n[LM_T_WIDE], ins);
  cr_expect_eq(f.n[LM_T_WIDE], 16 + 8 + 32, "2 loads, 1 store and 4 ops in 8 steps");
  cr_expect_eq(f.n[LM_T_VEXPW], 8, "one wide exp per step");
  cr_expect_eq(f.n[LM_T_VEXP], 0, "no narrow call in zmm code");
  lm_features g = count(k, "x86-64-v4/w8/l8/t1", 2, 64);
  cr_expect_eq(g.n[LM_T_WIDE], 0);
  cr_expect_eq(g.n[LM_T_VEXPW], 0);
  cr_expect_eq(g.n[LM_T_VEXP], 16);
  lm_features h = count(k, "x86-64-v4/w16/l16/math=mvec/t1", 2, 64);
  cr_expect_eq(h.n[LM_T_VEXPMVW], 8, "each provider's routine has its own wide twin");
  cr_expect_eq(h.n[LM_T_VEXPW] + h.n[LM_T_VEXPMV], 0);
  lm_kernel_free(k);
}

Test(counts, bytes_past_l2_split_between_the_levels_by_what_each_holds) {
  /* 3 buffers of 1024 x 1024 f32: a 12 MiB footprint, touched once.  L2
   * (2 MiB) holds 1/6 of it and L1 48 KiB; L3 (32 MiB) the rest. */
  lm_kernel *k = load("kernels/swiglu.lk");
  lm_features f = count(k, "x86-64-v4/w16/l16/t1", 1024, 1024);
  double fp = 3.0 * 1024 * 1024 * 4;
  cr_expect_eq(f.footprint, fp);
  cr_expect(fabs(f.n[LM_T_B_L2] - (2097152.0 - 49152.0)) < 1e-6 * fp, "%.17g", f.n[LM_T_B_L2]);
  cr_expect(fabs(f.n[LM_T_B_L3] - (fp - 2097152.0)) < 1e-6 * fp, "%.17g", f.n[LM_T_B_L3]);
  cr_expect_eq(f.n[LM_T_B_DRAM], 0);
  /* fits L1: no byte term at all */
  lm_features g = count(k, "x86-64-v4/w16/l16/t1", 4, 256);
  cr_expect_eq(g.n[LM_T_B_L2] + g.n[LM_T_B_L3] + g.n[LM_T_B_DRAM], 0);
  lm_kernel_free(k);
}

/* ---- the calibration design --------------------------------------------- */

static int design(lm_isa isa, double **A) {
  lm_caches c;
  lm_caches_default(&c);
  lm_calib_bench *b;
  int n = lm_calib_benches(isa, 1, &c, &b), m = 0;
  *A = calloc((size_t)n * 2 * LM_T__COUNT, sizeof **A);
  for (int i = 0; i < n; i++) {
    if (b[i].mixed)
      continue;
    lm_kernel *k;
    lm_error err = {0};
    cr_assert_eq(lm_kernel_parse(b[i].name, b[i].source, strlen(b[i].source), &k, &err),
                 LM_OK, "%s: %s", b[i].name, err.msg);
    lm_variant v;
    cr_assert_eq(lm_variant_parse(b[i].variant, &v, &err), LM_OK, "%s", err.msg);
    cr_assert_eq(lm_variant_check(k, &v, &err), LM_OK, "%s: %s", b[i].name, err.msg);
    for (int z = 1; z <= 2; z++) {
      lm_shape s;
      lm_features f;
      cr_assert_eq(lm_shape_bind(k, b[i].R * z, b[i].C, NULL, &s, &err), LM_OK);
      lm_rowstats rs = {0};
      if (b[i].density > 0) {
        rs.mean_len = b[i].density * (double)b[i].C;
        for (int g = 0; g < 7; g++)
          rs.mean_group_max[g] = rs.mean_len;
      }
      cr_assert_eq(lm_cost_features(k, &v, &s, &c, b[i].density > 0 ? &rs : NULL, &f, &err),
                   LM_OK);
      memcpy(*A + (size_t)m * LM_T__COUNT, f.n, sizeof f.n);
      m++;
    }
    lm_kernel_free(k);
  }
  lm_calib_benches_free(b, n);
  return m;
}

Test(calibration, shipped_families_give_a_full_rank_design_and_recover_known_costs) {
  double *A;
  int m = design(LM_ISA_AVX512, &A);
  /* every term but memory bytes past the caches is exercised in quick mode */
  int cols[LM_T__COUNT], nc = 0;
  for (int t = 0; t < LM_T__COUNT; t++) {
    int any = 0;
    for (int i = 0; i < m; i++)
      any |= A[i * LM_T__COUNT + t] != 0;
    if (any)
      cols[nc++] = t;
    else
      cr_expect(t == LM_T_B_DRAM, "term %s is exercised by no benchmark", lm_term_name(t));
  }
  double *Ac = malloc(sizeof *Ac * (size_t)m * (size_t)nc), *b = malloc(sizeof *b * (size_t)m);
  double truth[LM_T__COUNT];
  for (int j = 0; j < nc; j++) {
    double lo, hi;
    const char *u;
    lm_term_default(cols[j], &truth[j], &lo, &hi, &u);
  }
  for (int i = 0; i < m; i++) {
    b[i] = 0;
    for (int j = 0; j < nc; j++) {
      Ac[i * nc + j] = A[i * LM_T__COUNT + cols[j]];
      b[i] += Ac[i * nc + j] * truth[j];
    }
  }
  lm_fit_opts o;
  lm_fit_defaults(&o);
  o.bootstrap = 0;
  o.loo = 0;
  lm_fit_result r = {0};
  lm_error err = {0};
  cr_assert_eq(lm_fit(&o, m, nc, Ac, b, NULL, &r, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(r.rank, nc, "design rank %d of %d columns (cond %g)", r.rank, nc, r.cond);
  for (int j = 0; j < nc; j++)
    cr_expect(fabs(r.theta[j] - truth[j]) <= 1e-3 * truth[j] + 1e-9, "%s: %g vs %g",
              lm_term_name(cols[j]), r.theta[j], truth[j]);
  lm_fit_result_free(&r);
  free(Ac), free(b), free(A);
}

Test(predict, the_breakdown_adds_up_and_the_interval_holds_the_prediction) {
  lm_kernel *k = load("kernels/layernorm.lk");
  lm_profile *p;
  lm_error err = {0};
  cr_assert_eq(lm_profile_default(LM_ISA_AVX512, &p, &err), LM_OK, "%s", err.msg);
  lm_variant v;
  lm_shape s;
  cr_assert_eq(lm_variant_parse("x86-64-v4/w16/l4/priv=slot/glob=transpose/phase=snapshot/t1", &v, &err), LM_OK);
  cr_assert_eq(lm_shape_bind(k, 64, 300, NULL, &s, &err), LM_OK);
  lm_prediction pr;
  cr_assert_eq(lm_cost_predict(p, k, &v, &s, &pr, &err), LM_OK, "%s", err.msg);
  double sum = pr.fork_ns + pr.join_ns;
  for (int t = 0; t < LM_T__COUNT; t++)
    if (t != LM_T_FORK)
      sum += pr.term_ns[t];
  cr_expect(fabs(sum - pr.ns) <= 1e-6 * pr.ns, "terms %g vs total %g", sum, pr.ns);
  cr_expect(pr.p5 <= pr.ns && pr.ns <= pr.p95);
  cr_expect_gt(pr.ns, 0);
  lm_profile_free(p);
  lm_kernel_free(k);
}

/* ---- the compiled predictor --------------------------------------------- */

static void predictor_agrees(const char *kernel, lm_isa isa, int workers) {
  lm_kernel *k = load(kernel);
  lm_profile *p;
  lm_error err = {0};
  cr_assert_eq(lm_profile_default(isa, &p, &err), LM_OK, "%s", err.msg);
  lm_enum_opts eo;
  lm_enum_defaults(&eo);
  eo.isa = isa;
  eo.workers[0] = workers;
  eo.grains[0] = 2;
  lm_variant *vs;
  int nv = lm_variant_enumerate(k, &eo, &vs, &err);
  cr_assert_gt(nv, 0, "%s", err.msg);
  lm_predictor *pr;
  cr_assert_eq(lm_predictor_new(p, k, vs, nv, &pr, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_predictor_count(pr), nv);
  double *ns = calloc((size_t)nv, sizeof *ns);
  int checked = 0;
  /* shapes across tails, partial packets, cache levels and task counts */
  const int64_t Rs[] = {1, 2, 3, 7, 16, 17, 33, 64, 100, 1024, 4099};
  const int64_t Cs[] = {1, 3, 8, 15, 16, 17, 65, 66, 128, 300, 4096, 16384, 70001};
  for (size_t a = 0; a < sizeof Rs / sizeof Rs[0]; a++)
    for (size_t b = 0; b < sizeof Cs / sizeof Cs[0]; b++) {
      lm_shape s;
      if (lm_shape_bind(k, Rs[a], Cs[b], NULL, &s, &err) != LM_OK)
        continue;
      lm_predictor_eval(pr, &s, ns);
      for (int i = 0; i < nv; i++) {
        lm_prediction want;
        cr_assert_eq(lm_cost_predict(p, k, &vs[i], &s, &want, &err), LM_OK, "%s", err.msg);
        cr_assert(fabs(ns[i] - want.ns) <= 1e-12 * want.ns,
                  "%s %lldx%lld variant %d: predictor %.17g, predict %.17g",
                  kernel, (long long)Rs[a], (long long)Cs[b], i, ns[i], want.ns);
        checked++;
      }
    }
  cr_expect_gt(checked, 100 * nv / 2, "only %d comparisons", checked);
  free(ns);
  free(vs);
  lm_predictor_free(pr);
  lm_profile_free(p);
  lm_kernel_free(k);
}

Test(predictor, equals_lm_cost_predict_to_rounding_on_every_suite_kernel) {
  const char *ks[] = {"kernels/rmsnorm.lk", "kernels/layernorm.lk", "kernels/masked_softmax.lk",
                      "kernels/swiglu.lk", "kernels/gelu_residual.lk", "kernels/rope.lk"};
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    predictor_agrees(ks[i], LM_ISA_AVX512, 1);
    predictor_agrees(ks[i], LM_ISA_AVX2, 2);
  }
}

Test(predictor, ragged_rows_agree_with_the_counts) {
  lm_kernel *k = load("kernels/swiglu.lk");
  lm_profile *p;
  lm_error err = {0};
  cr_assert_eq(lm_profile_default(LM_ISA_AVX512, &p, &err), LM_OK, "%s", err.msg);
  lm_variant v[2];
  cr_assert_eq(lm_variant_parse("x86-64-v4/w16/l1/glob=gather/t1", &v[0], &err), LM_OK);
  cr_assert_eq(lm_variant_parse("x86-64-v4/w16/l16/t1", &v[1], &err), LM_OK);
  lm_predictor *pr;
  cr_assert_eq(lm_predictor_new(p, k, v, 2, &pr, &err), LM_OK, "%s", err.msg);
  lm_coefs c;
  cr_assert_eq(lm_coefs_from_profile(p, &c, &err), LM_OK);
  lm_shape s;
  cr_assert_eq(lm_shape_bind(k, 50, 200, NULL, &s, &err), LM_OK);
  lm_rowstats rs = {.mean_len = 70};
  for (int g = 0; g < 7; g++)
    rs.mean_group_max[g] = 70 + 10 * g;
  double ns[2];
  lm_predictor_eval_rows(pr, &s, &rs, ns);
  for (int i = 0; i < 2; i++) {
    lm_features f;
    lm_prediction want;
    cr_assert_eq(lm_cost_features(k, &v[i], &s, &c.caches, &rs, &f, &err), LM_OK);
    lm_cost_eval(&c, &f, &v[i], &want);
    cr_expect(fabs(ns[i] - want.ns) <= 1e-12 * want.ns, "variant %d: %.17g vs %.17g", i, ns[i],
              want.ns);
  }
  lm_predictor_free(pr);
  lm_profile_free(p);
  lm_kernel_free(k);
}

Test(predictor, an_illegal_variant_is_refused_naming_it) {
  lm_kernel *k = load("kernels/swiglu.lk"); /* no private arrays */
  lm_profile *p;
  lm_error err = {0};
  cr_assert_eq(lm_profile_default(LM_ISA_AVX512, &p, &err), LM_OK, "%s", err.msg);
  lm_variant v[2];
  cr_assert_eq(lm_variant_parse("x86-64-v4/w16/l16/t1", &v[0], &err), LM_OK);
  cr_assert_eq(lm_variant_parse("x86-64-v4/w16/l16/priv=slot/phase=snapshot/t1", &v[1], &err),
               LM_OK);
  lm_predictor *pr = (lm_predictor *)&err;
  cr_expect_eq(lm_predictor_new(p, k, v, 2, &pr, &err), LM_EINPUT);
  cr_expect_null(pr);
  cr_expect(strstr(err.msg, "variant 1") != NULL, "%s", err.msg);
  cr_expect_eq(lm_predictor_new(p, k, v, -1, &pr, &err), LM_EINPUT);
  lm_predictor_free(NULL);
  lm_profile_free(p);
  lm_kernel_free(k);
}

Test(calibration, level_benchmarks_fit_their_level_and_width_families_follow_the_isa) {
  lm_caches c;
  lm_caches_default(&c);
  lm_calib_bench *b;
  int n = lm_calib_benches(LM_ISA_AVX512, 1, &c, &b), narrow = 0, l1 = 0;
  for (int i = 0; i < n; i++) {
    int bufs = strstr(b[i].name, "triad") ? 3 : strstr(b[i].name, "copy") ? 2 : 1;
    if (strcmp(b[i].family, "bandwidth") == 0 && strstr(b[i].name, "_l1")) {
      /* the 2N run too: the working set must stay in L1 */
      cr_expect_leq(2 * b[i].R * b[i].C * 4 * bufs, c.l1, "%s: %lld x %lld", b[i].name,
                    (long long)b[i].R, (long long)b[i].C);
      l1++;
    }
    if (strcmp(b[i].family, "width") == 0) {
      cr_expect(strstr(b[i].variant, "/w8/") != NULL, "%s: %s", b[i].name, b[i].variant);
      narrow++;
    }
  }
  cr_expect_eq(l1, 4);
  cr_expect_gt(narrow, 0, "AVX-512 has a narrow f32 width: width benchmarks expected");
  lm_calib_benches_free(b, n);
  n = lm_calib_benches(LM_ISA_AVX2, 1, &c, &b);
  for (int i = 0; i < n; i++)
    cr_expect_neq(strcmp(b[i].family, "width"), 0, "AVX2 has one width: %s", b[i].name);
  lm_calib_benches_free(b, n);
}

/* lm_cost_eval of variant text v on k at R x 64 with coefficients c. */
static lm_prediction eval_at(const lm_kernel *k, const lm_coefs *c, const char *text, int64_t R) {
  lm_variant v;
  lm_shape s;
  lm_features f;
  lm_prediction p;
  lm_error err = {0};
  cr_assert_eq(lm_variant_parse(text, &v, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_shape_bind(k, R, 64, NULL, &s, &err), LM_OK);
  cr_assert_eq(lm_cost_features(k, &v, &s, &c->caches, NULL, &f, &err), LM_OK, "%s", err.msg);
  lm_cost_eval(c, &f, &v, &p);
  return p;
}

Test(predict, workers_divide_the_packets_of_the_busiest_worker) {
  /* one coefficient of 1 ns per packet: the prediction is the busiest
   * worker's packet count */
  lm_kernel *k = load("kernels/swiglu.lk");
  lm_coefs c = {{0}, 1.0, {48 << 10, 2 << 20, 32 << 20}, 0};
  c.theta[LM_T_PACKET] = 1;
  struct {
    const char *v;
    double want;
  } cases[] = {
      {"x86-64-v4/w16/l16/t1", 17},      /* inline */
      {"x86-64-v4/w16/l16/t2/g4", 9},    /* tasks 4 4 4 4 1: worker 0 runs 4 + 4 + 1 */
      {"x86-64-v4/w16/l4/glob=transpose/t2/g16", 4}, /* packets of 4 rows, tasks 4 1 */
      {"x86-64-v4/w16/l16/t2/g32", 17},  /* one task */
      {"x86-64-v4/w16/l16/t4/g4", 5},    /* 4 workers: 4 + 1 on worker 0 */
      {"x86-64-v4/w16/l16/t2/static", 9}, /* blocks of 9 and 8 */
      {"x86-64-v4/w16/l16/t4/static", 5}, /* blocks of 5 5 5 2 */
      {"x86-64-v4/w16/l16/t2/dyn2", 10},  /* chunks 5 5 5 2: worker 0 runs 5 + 5 */
      {"x86-64-v4/w16/l16/t2/dyn16", 9},  /* 17 chunks of 1 */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lm_prediction p = eval_at(k, &c, cases[i].v, 17);
    cr_expect(fabs(p.ns - cases[i].want) < 1e-9, "%s: %g ns, want %g", cases[i].v, p.ns,
              cases[i].want);
  }
  lm_kernel_free(k);
}

/* The workers' late join, by hand: 1 ns per packet, a join of 5 ns, the
 * launch cut into equal claims (costmodel/predict.c, joined): the caller
 * runs alone until 5 ns, then the claims go to whoever is free first; one
 * worker never waits. */
Test(predict, the_late_join_delays_a_pooled_launch_as_its_split_says) {
  lm_kernel *k = load("kernels/swiglu.lk");
  lm_coefs c = {{0}, 1.0, {48 << 10, 2 << 20, 32 << 20}, 5};
  c.theta[LM_T_PACKET] = 1;
  struct {
    const char *v;
    int64_t R;
    double want, join; /* join: what the late join adds to the busiest share */
  } cases[] = {
      {"x86-64-v4/w16/l16/t1", 17, 17, 0},          /* inline */
      {"x86-64-v4/w16/l16/t2/static", 17, 13.5, 4.5}, /* claims of 8.5: the worker's ends at 13.5 */
      {"x86-64-v4/w16/l16/t2/static", 8, 8, 4},     /* min(5 + 4, 8): the caller takes over */
      {"x86-64-v4/w16/l16/t2/dyn16", 17, 11, 2},    /* 5 alone, then 12 shared; share 9 */
      {"x86-64-v4/w16/l16/t2/dyn16", 4, 4, 2},      /* the caller runs all before 5 */
      {"x86-64-v4/w16/l16/t2/dyn2", 17, 12.75, 2.75}, /* claims of 4.25: 2 alone, 1 + 1 */
      {"x86-64-v4/w16/l16/t2/static", 1, 1, 0},     /* one chunk: inline, no join */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lm_prediction p = eval_at(k, &c, cases[i].v, cases[i].R);
    cr_expect(fabs(p.ns - cases[i].want) < 1e-9, "%s R=%lld: %g ns, want %g", cases[i].v,
              (long long)cases[i].R, p.ns, cases[i].want);
    cr_expect(fabs(p.join_ns - cases[i].join) < 1e-9, "%s R=%lld: join %g ns, want %g",
              cases[i].v, (long long)cases[i].R, p.join_ns, cases[i].join);
  }
  lm_kernel_free(k);
}

/* ---- register pressure and masked instructions -------------------------- */

static lm_kernel *parse(const char *src) {
  lm_kernel *k = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_parse("t.lk", src, strlen(src), &k, &err), LM_OK, "%s", err.msg);
  return k;
}

/* Store forwarding (costmodel/counts.h): a masked tail step's private
 * slot (priv=masked) read back by the next loop's tail step stalls, fully
 * with no full step between, fading over LM_COST_FWD_UOPS instructions of
 * the full steps between (3 a step here: the slot load, the multiply, the
 * store), and never for slots written by full stores. */
Test(counts, masked_private_reads_soon_after_their_masked_write_stall) {
  lm_kernel *k = parse("kernel priv(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                       "  xs = x[r, :]\n  s = sum(xs)\n  y[r, :] = xs * s\n}\n");
  struct {
    const char *v;
    int64_t R, C;
    double want;
  } cases[] = {
      {"x86-64-v4/w16/l16/priv=masked/phase=snapshot/t1", 100, 3, 100},     /* no full step */
      {"x86-64-v4/w16/l16/priv=masked/phase=snapshot/t1", 100, 19, 87.5},   /* 1 step: 3 of 24 */
      {"x86-64-v4/w16/l16/priv=masked/phase=snapshot/t1", 100, 67, 50},     /* 4 steps: 12 */
      {"x86-64-v4/w16/l16/priv=masked/phase=snapshot/t1", 100, 259, 0},     /* 16 steps */
      {"x86-64-v4/w16/l16/priv=masked/phase=snapshot/t1", 100, 32, 0},      /* no masked step */
      {"x86-64-v4/w16/l16/priv=slot/phase=snapshot/t1", 100, 3, 0},         /* full stores */
      {"x86-64-v4/w16/l16/phase=reread/t1", 100, 3, 0},                     /* no slot */
      /* program mapping: only the partial packet is masked, and its steps
       * gather 16 elements each, more than the window: no stall */
      {"x86-64-v4/w16/l1/priv=masked/glob=gather/phase=snapshot/t1", 17, 3, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lm_features f = count(k, cases[i].v, cases[i].R, cases[i].C);
    cr_expect(fabs(f.n[LM_T_FWD] - cases[i].want) < 1e-9, "%s %lldx%lld: %g stalls, want %g",
              cases[i].v, (long long)cases[i].R, (long long)cases[i].C, f.n[LM_T_FWD],
              cases[i].want);
  }
  lm_kernel_free(k);
}

Test(counts, a_masked_step_prices_each_of_its_instructions) {
  /* 1 row x 70 columns at W = 16: one masked step with 2 masked loads, a
   * masked store and the sigmoid's and products' 4 ops plus the 2 of the
   * mask itself; full steps add nothing to mask_ins */
  lm_kernel *k = load("kernels/swiglu.lk");
  lm_features f = count(k, "x86-64-v4/w16/l16/t1", 1, 70);
  cr_expect_eq(f.n[LM_T_MASKI], 2 + 1 + 4 + 2, "%g", f.n[LM_T_MASKI]);
  lm_features g = count(k, "x86-64-v4/w16/l16/t1", 1, 64);
  cr_expect_eq(g.n[LM_T_MASKI], 0);
  lm_kernel_free(k);
}

Test(counts, spills_come_from_calls_accumulators_and_the_register_file) {
  lm_kernel *cp = parse("kernel cp(x: f32[R, C]) -> (y: f32[R, C]) {\n  y[r, :] = x[r, :]\n}\n");
  lm_kernel *es = parse("kernel es(x: f32[R, C] in(-4, 4)) -> (s: f32[R]) {\n"
                        "  s[r] = sum(exp(x[r, :]))\n}\n");
  lm_kernel *ex = parse("kernel ex(x: f32[R, C] in(-4, 4)) -> (y: f32[R, C]) {\n"
                        "  y[r, :] = exp(x[r, :])\n}\n");
  cr_expect_eq(count(cp, "x86-64-v4/w16/l16/t1", 4, 256).n[LM_T_SPILL], 0, "a copy");
  cr_expect_eq(count(ex, "x86-64-v4/w16/l16/t1", 4, 256).n[LM_T_SPILL], 0,
               "a call with nothing live across it");
  /* the 4 accumulators of a row sum cross every call: stored and reloaded */
  lm_features f = count(es, "x86-64-v4/w16/l16/t1", 1, 256);
  cr_expect_eq(f.n[LM_T_SPILL], 16 * 4 * 2, "%g", f.n[LM_T_SPILL]);
  cr_expect_eq(count(es, "x86-64-v4/w16/l16/math=ir/t1", 1, 256).n[LM_T_SPILL], 0,
               "an inline routine is not a call");
  lm_kernel_free(cp), lm_kernel_free(es), lm_kernel_free(ex);
  /* 8 sums of 4 accumulators: 32 live values, past AVX2's 16 registers
   * by twice as many as past AVX-512's 32 (where only the temporaries
   * exceed) */
  lm_kernel *mo = parse(
      "kernel mo(x: f32[R, C], b: f32[R, C]) -> (s1: f32[R], s2: f32[R], s3: f32[R],\n"
      "    s4: f32[R], s5: f32[R], s6: f32[R], s7: f32[R], s8: f32[R]) {\n"
      "  xs = x[r, :]\n  bs = b[r, :]\n  s1[r] = sum(xs)\n  s2[r] = sum(bs)\n"
      "  s3[r] = sum(xs * bs)\n  s4[r] = sum(xs * xs)\n  s5[r] = sum(bs * bs)\n"
      "  s6[r] = sum(xs + bs)\n  s7[r] = sum(xs - bs)\n  s8[r] = sum(xs * 0.5 + bs)\n}\n");
  double v3 = count(mo, "x86-64-v3/w8/l8/t1", 1, 256).n[LM_T_SPILL];
  double v4 = count(mo, "x86-64-v4/w8/l8/t1", 1, 256).n[LM_T_SPILL];
  cr_expect(v4 > 0 && v3 > 4 * v4, "16 registers against 32: %g vs %g", v3, v4);
  lm_kernel_free(mo);
}

/* Spearman's rank correlation of x and y (ties take their mean rank). */
static void ranks(const double *x, int n, double *r) {
  for (int i = 0; i < n; i++) {
    double below = 0, same = 0;
    for (int j = 0; j < n; j++)
      below += x[j] < x[i], same += x[j] == x[i];
    r[i] = below + (same - 1) / 2;
  }
}
static double spearman(const double *x, const double *y, int n) {
  double rx[64], ry[64], mx = 0, my = 0, sxy = 0, sxx = 0, syy = 0;
  ranks(x, n, rx), ranks(y, n, ry);
  for (int i = 0; i < n; i++)
    mx += rx[i] / n, my += ry[i] / n;
  for (int i = 0; i < n; i++) {
    sxy += (rx[i] - mx) * (ry[i] - my);
    sxx += (rx[i] - mx) * (rx[i] - mx);
    syy += (ry[i] - my) * (ry[i] - my);
  }
  return sxy / sqrt(sxx * syy);
}

Test(counts, the_spill_estimate_ranks_variants_as_the_assembly_does, .timeout = 300) {
  /* the model's spills and reloads against those of the assembly LLVM
   * emits, over the suite's kernels in the mappings that differ most in
   * pressure (calls, transposed blocks, segments, widths); measured:
   * rank correlation 0.8 over these 40 (docs/costmodel.md, "Register
   * pressure") */
  static const char *kernels[] = {"gelu_residual", "layernorm", "rmsnorm", "swiglu",
                                  "rope", "masked_softmax"};
  static const char *variants[] = {
      "x86-64-v4/w16/l16/t1", "x86-64-v4/w16/l16/phase=reread/t1",
      "x86-64-v4/w16/l1/glob=transpose/t1", "x86-64-v4/w16/l1/glob=transpose/phase=reread/t1",
      "x86-64-v4/w16/l1/glob=gather/phase=reread/t1",
      "x86-64-v4/w16/l4/glob=transpose/phase=reread/t1", "x86-64-v3/w8/l8/t1",
      "x86-64-v3/w8/l8/phase=reread/t1", "x86-64-v3/w8/l1/glob=transpose/t1",
      "x86-64-v3/w8/l1/glob=transpose/phase=reread/t1",
      "x86-64-v3/w8/l2/glob=transpose/phase=reread/t1", "x86-64-v4/w16/l16/math=ir/t1"};
  double model[64], asmc[64];
  int n = 0, false_alarms = 0;
  for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
    char rel[128];
    snprintf(rel, sizeof rel, "kernels/%s.lk", kernels[i]);
    lm_kernel *k = load(rel);
    for (size_t j = 0; j < sizeof variants / sizeof variants[0] && n < 64; j++) {
      lm_variant v;
      lm_error err = {0};
      if (lm_variant_parse(variants[j], &v, &err) != LM_OK ||
          lm_variant_check(k, &v, &err) != LM_OK)
        continue; /* phase fields only where a kernel reuses a tile */
      lm_compile_opts co;
      lm_compile_defaults(&co);
      co.want_asm = 1;
      co.no_entry = 1;
      lm_compiled *c = NULL;
      cr_assert_eq(lm_compile(k, &v, &co, &c, &err), LM_OK, "%s", err.msg);
      const lm_counts *cn = lm_compiled_counts(c);
      asmc[n] = cn->asm_spills + cn->asm_reloads;
      cr_assert_eq(lm_cost_static_spills(k, &v, &model[n], &err), LM_OK, "%s", err.msg);
      false_alarms += model[n] > 0 && asmc[n] == 0;
      n++;
      lm_compiled_free(c);
    }
    lm_kernel_free(k);
  }
  cr_assert_geq(n, 30);
  double rho = spearman(model, asmc, n);
  cr_expect_gt(rho, 0.7, "rank correlation %.2f over %d variants", rho, n);
  cr_expect_eq(false_alarms, 0, "spills estimated where the assembly has none");
}

Test(calibration, the_uncalibrated_defaults_hold_the_terms_on_trial_at_zero) {
  /* an untried term is not part of the uncalibrated model (settling
   * breaks near ties by its predictions); its named default stays the
   * fit's prior */
  lm_profile *p = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_profile_default(LM_ISA_AVX512, &p, &err), LM_OK, "%s", err.msg);
  lm_coefs c;
  cr_assert_eq(lm_coefs_from_profile(p, &c, &err), LM_OK, "%s", err.msg);
  int tried = 0;
  for (int t = 0; t < LM_T__COUNT; t++) {
    double d, lo, hi;
    const char *u;
    lm_term_default(t, &d, &lo, &hi, &u);
    if (lm_term_on_trial(t)) {
      tried++;
      cr_expect_eq(c.theta[t], 0, "%s", lm_term_name(t));
      cr_expect_gt(d, 0, "%s keeps a prior", lm_term_name(t));
    } else {
      cr_expect_eq(c.theta[t], d, "%s", lm_term_name(t));
    }
  }
  cr_expect_eq(tried, 2, "mask_ins and spill");
  lm_profile_free(p);
}

Test(calibration, a_term_on_trial_stays_only_when_the_families_agree_it_helps) {
  /* leave-one-family-out scores of 11 families with and without a term */
  double with[11], without[11], gain, se;
  int k;
  /* every family a little better with it (0.5 points of 28%) */
  for (int f = 0; f < 11; f++)
    with[f] = 0.28 + 0.01 * (f % 3), without[f] = with[f] + 0.005 + 0.0005 * (f % 2);
  cr_expect(lm_term_trial_keeps(with, without, 11, &gain, &se, &k), "a consistent rise");
  cr_expect_eq(k, 11);
  cr_expect_float_eq(gain, 0.005 + 0.0005 * 5 / 11, 1e-12);
  cr_expect_lt(se, 0.0005);
  /* the same mean rise from one family alone: 2.5 points above the 1%
   * margin, but the other families say nothing (the `spill` trial of the
   * quick calibrations kept by the margin alone) */
  for (int f = 0; f < 11; f++)
    without[f] = with[f] + (f == 4 ? 0.055 : 0.0) - (f == 7 ? 0.0025 : 0.0);
  cr_expect_not(lm_term_trial_keeps(with, without, 11, &gain, &se, &k), "gain %.4f +- %.4f",
                gain, se);
  cr_expect_gt(gain, 0.01 * 0.29, "above the margin alone");
  /* a consistent rise below 1% of the score: not worth a term */
  for (int f = 0; f < 11; f++)
    without[f] = with[f] + 0.001;
  cr_expect_not(lm_term_trial_keeps(with, without, 11, &gain, &se, &k));
  /* an unscored family (NAN) is left out of the pairing; one pair is no
   * evidence */
  for (int f = 0; f < 11; f++)
    with[f] = f == 0 ? 0.3 : NAN, without[f] = 0.5;
  cr_expect_not(lm_term_trial_keeps(with, without, 11, &gain, &se, &k));
  cr_expect_eq(k, 1);
  cr_expect(isinf(se));
}

Test(calibration, a_profile_of_the_single_width_term_still_prices_wide_calls) {
  /* model forms up to 8 priced a wide call as its routine's narrow cost
   * plus one shared wide_call; such a profile reads as that */
  lm_error err = {0};
  lm_profile *p = lm_profile_new("x86-64-v4", LM_PROFILE_QUICK, &err);
  cr_assert(p, "%s", err.msg);
  lm_profile_term a = {"vexp", "ns/call", 6, 6, 6, 6, 0, 100, false};
  lm_profile_term b = {"verf_mvec", "ns/call", 5, 5, 5, 5, 0, 100, false};
  lm_profile_term w = {"wide_call", "ns/call", 2, 2, 2, 2, 0, 100, false};
  cr_assert_eq(lm_profile_add_term(p, &a, &err), LM_OK);
  cr_assert_eq(lm_profile_add_term(p, &b, &err), LM_OK);
  cr_assert_eq(lm_profile_add_term(p, &w, &err), LM_OK);
  lm_coefs c;
  cr_assert_eq(lm_coefs_from_profile(p, &c, &err), LM_OK, "%s", err.msg);
  cr_expect_float_eq(c.theta[LM_T_VEXPW], 8, 1e-12);
  cr_expect_float_eq(c.theta[LM_T_VERFMVW], 7, 1e-12);
  cr_expect_float_eq(c.theta[LM_T_VEXP], 6, 1e-12, "the narrow call keeps its cost");
  /* with wide twins of its own, a profile's wide_call is not used */
  lm_profile_term t = {"vexp_wide", "ns/call", 7, 7, 7, 7, 0, 100, false};
  cr_assert_eq(lm_profile_add_term(p, &t, &err), LM_OK);
  cr_assert_eq(lm_coefs_from_profile(p, &c, &err), LM_OK, "%s", err.msg);
  cr_expect_float_eq(c.theta[LM_T_VEXPW], 7, 1e-12);
  cr_expect_float_eq(c.theta[LM_T_VERFMVW], 0, 1e-12);
  lm_profile_free(p);
}
