/* Cost-model claims: dynamic counts equal hand-derived counts on small
 * shapes, the shipped calibration families give a full-rank design, the
 * fit recovers known coefficients on that design, and predictions are
 * consistent with their breakdown. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  cr_expect_eq(f.n[LM_T_VEXP], 8);
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
  lm_features f = count(k, "x86-64-v4/w16/l16/t2/g4", 100, 64);
  cr_expect_eq(f.n[LM_T_CALL], 25);
  cr_expect_eq(f.n[LM_T_TASK], 25);
  cr_expect_eq(f.n[LM_T_FORK], 1);
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
  double sum = pr.fork_ns;
  for (int t = 0; t < LM_T__COUNT; t++)
    if (t != LM_T_FORK)
      sum += pr.term_ns[t];
  cr_expect(fabs(sum - pr.ns) <= 1e-6 * pr.ns, "terms %g vs total %g", sum, pr.ns);
  cr_expect(pr.p5 <= pr.ns && pr.ns <= pr.p95);
  cr_expect_gt(pr.ns, 0);
  lm_profile_free(p);
  lm_kernel_free(k);
}
