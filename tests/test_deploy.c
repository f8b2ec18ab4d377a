/* The deployment evaluation (heldout/deploy.c): spec loading and its bad
 * inputs, planning buckets and held-out shapes, lm_plan_lookup against the
 * compiled dispatch, and a small run end to end (two kernels, the named
 * default profile, quick protocol) whose figures must be consistent: the
 * calibrated plan never beats the budget oracle on the workload, the
 * oracle only gains from a larger budget, and every dispatched launch
 * passes the oracle check. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lanemap/calibrate.h"
#include "lanemap/dispatch.h"
#include "lanemap/heldout.h"
#include "tests/support/run.h"

#define SRC LANEMAP_SOURCE_DIR

TestSuite(deploy, .init = run_tmp_make, .fini = run_tmp_remove, .timeout = 600);

static char *spec_text(const char *kernels) {
  size_t n = strlen(kernels) + 256;
  char *s = malloc(n);
  cr_assert_not_null(s);
  snprintf(s, n,
           "{\"schema\": \"lanemap.deploy/1\", \"seed\": 3, \"shapes\": 3, "
           "\"quick_shapes\": 3, \"buckets\": 3, \"quick_max_elements\": "
           "262144, \"kernels\": [%s]}",
           kernels);
  return s;
}

static const char *const TWO =
    "{\"kernel\": \"" SRC "/kernels/rmsnorm.lk\", \"C\": [256], \"R\": [1, "
    "4096]}, {\"kernel\": \"" SRC
    "/heldout/kernels/ragged_softmax.lk\", \"C\": [64, 100], \"R\": [1, "
    "2048], \"weight\": 2}";

Test(deploy, the_bundled_spec_loads_within_its_caps) {
  lm_deploy_spec s;
  lm_error err = {0};
  for (int quick = 0; quick < 2; quick++) {
    cr_assert_eq(
        lm_deploy_spec_load(SRC "/heldout/deploy.json", quick, &s, &err), LM_OK,
        "%s", err.msg);
    cr_expect_eq(s.nkernels, 17);
    cr_expect_eq(s.shapes, quick ? 4 : 8);
    cr_expect_eq(s.max_elements, quick ? 1 << 22 : 1 << 24);
    for (int k = 0; k < s.nkernels; k++)
      for (int c = 0; c < s.k[k].nC; c++) {
        cr_expect(s.k[k].rmax[c] >= s.k[k].from && s.k[k].rmax[c] <= 16384);
        cr_expect(s.k[k].rmax[c] * s.k[k].C[c] <= s.max_elements, "%s",
                  s.k[k].k->name);
      }
    lm_deploy_spec_free(&s);
  }
}

/* A spec named by a relative path gives absolute kernel paths: the case
 * list the measurement reads lives in the output folder. */
Test(deploy, kernel_paths_are_absolute) {
  cr_assert_eq(chdir(SRC), 0);
  lm_deploy_spec s;
  lm_error err = {0};
  cr_assert_eq(lm_deploy_spec_load("heldout/deploy.json", 1, &s, &err), LM_OK,
               "%s", err.msg);
  for (int k = 0; k < s.nkernels; k++)
    cr_expect_eq(s.k[k].path[0], '/', "%s", s.k[k].path);
  lm_deploy_spec_free(&s);
}

Test(deploy, buckets_and_held_out_shapes) {
  char *text = spec_text(TWO);
  run_write(run_tmp("spec.json"), text);
  free(text);
  lm_deploy_spec s;
  lm_error err = {0};
  cr_assert_eq(lm_deploy_spec_load(run_tmp("spec.json"), 1, &s, &err), LM_OK,
               "%s", err.msg);
  /* rmsnorm at C 256: R up to 262144 / 256 = 1024 */
  cr_expect_eq(s.k[0].rmax[0], 1024);
  int64_t B[3];
  cr_assert_eq(lm_deploy_buckets(&s.k[0], 0, 3, B), 3);
  cr_expect(B[0] == 1 && B[1] == 32 && B[2] == 1024, "%lld %lld %lld",
            (long long)B[0], (long long)B[1], (long long)B[2]);
  for (int k = 0; k < s.nkernels; k++) {
    int64_t R[3], C[3], R2[3], C2[3];
    int n = lm_deploy_shapes(&s, k, 3, R, C);
    cr_expect_eq(n, 3);
    cr_expect_eq(lm_deploy_shapes(&s, k, 3, R2, C2), n, "deterministic");
    for (int i = 0; i < n; i++) {
      cr_expect(R[i] == R2[i] && C[i] == C2[i]);
      int c = C[i] == s.k[k].C[0] ? 0 : 1;
      cr_expect_eq(C[i], s.k[k].C[c]);
      cr_expect(R[i] >= s.k[k].from && R[i] <= s.k[k].rmax[c]);
      int64_t b[8];
      int nb = lm_deploy_buckets(&s.k[k], c, 3, b);
      for (int j = 0; j < nb; j++)
        cr_expect_neq(R[i], b[j], "a held-out shape is a bucket's R");
      for (int j = 0; j < i; j++)
        cr_expect(R[j] != R[i] || C[j] != C[i], "a shape drawn twice");
    }
  }
  lm_deploy_spec_free(&s);
}

Test(deploy, bad_specs_name_the_field) {
  const struct {
    const char *text, *want;
  } cases[] = {
      {"{\"schema\": \"lanemap.deploy/2\", \"kernels\": []}", "$.schema"},
      {"{\"schema\": \"lanemap.deploy/1\", \"kernels\": [], \"x\": 1}",
       "unknown field"},
      {"{\"schema\": \"lanemap.deploy/1\", \"kernels\": []}", "$.kernels"},
      {"{\"schema\": \"lanemap.deploy/1\", \"kernels\": [{\"kernel\": "
       "\"nope.lk\", \"C\": [4], \"R\": [1, 2]}]}",
       "nope.lk"},
      {"{\"schema\": \"lanemap.deploy/1\", \"kernels\": [{\"kernel\": \"" SRC
       "/kernels/rmsnorm.lk\", \"C\": [0], \"R\": [1, 2]}]}",
       "$.kernels[0].C[0]"},
      {"{\"schema\": \"lanemap.deploy/1\", \"kernels\": [{\"kernel\": \"" SRC
       "/kernels/rmsnorm.lk\", \"C\": [8, 8], \"R\": [1, 2]}]}",
       "given twice"},
      {"{\"schema\": \"lanemap.deploy/1\", \"kernels\": [{\"kernel\": \"" SRC
       "/kernels/rmsnorm.lk\", \"C\": [8], \"R\": [9, 2]}]}",
       "$.kernels[0].R[1]"},
      {"{\"schema\": \"lanemap.deploy/1\", \"max_elements\": 100, "
       "\"kernels\": [{\"kernel\": \"" SRC
       "/kernels/rmsnorm.lk\", \"C\": [4096], \"R\": [1, 2]}]}",
       "leaves no R"},
      {"{\"schema\": \"lanemap.deploy/1\", \"shapes\": 0, \"kernels\": []}",
       "$.shapes"},
      {"[1, 2]", "expected"},
      {"{\"schema\": \"lanemap.deploy/1\", \"kernels\": [{\"kernel\": \"" SRC
       "/kernels/rmsnorm.lk\", \"C\": [8], \"R\": [1, 9], \"weight\": 0}]}",
       "$.kernels[0].weight"},
      {"{\"schema\": \"lanemap.deploy/1\", \"buckets\": 3, \"kernels\": "
       "[{\"kernel\": \"" SRC "/kernels/rmsnorm.lk\", \"C\": [8], \"R\": "
       "[5, 7]}]}",
       "leaves no R outside"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_write(run_tmp("bad.json"), cases[i].text);
    lm_deploy_spec s;
    lm_error err = {0};
    cr_expect_eq(lm_deploy_spec_load(run_tmp("bad.json"), 0, &s, &err),
                 LM_EINPUT, "case %zu", i);
    cr_expect(strstr(err.msg, cases[i].want) != NULL, "case %zu: %s", i,
              err.msg);
    cr_expect(strstr(err.msg, "bad.json") != NULL, "case %zu: %s", i, err.msg);
  }
}

Test(deploy, bad_options_and_flags_exit_2) {
  lm_deploy_options o;
  lm_deploy_options_defaults(&o);
  lm_deploy_result *r = calloc(1, sizeof *r);
  lm_error err = {0};
  cr_expect_eq(lm_deploy(&o, r, &err), LM_EINPUT);
  o.spec = SRC "/heldout/deploy.json";
  o.out = run_tmp("out");
  o.nbudgets = 2;
  o.budgets[0] = o.budgets[1] = 2;
  cr_expect_eq(lm_deploy(&o, r, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "twice") != NULL, "%s", err.msg);
  free(r);
  const struct {
    const char *args[8], *want;
  } cases[] = {
      {{"evaluate", "--deploy", "--budgets", "1,x", NULL},
       "--budgets: 'x' is not a non-negative integer"},
      {{"evaluate", "--deploy", "--budgets", "2,2", NULL}, "given twice"},
      {{"evaluate", "--deploy", "--budgets", "1,,2", NULL}, "expected K[,K...]"},
      {{"evaluate", "--budgets", "2", NULL}, "go with --deploy"},
      {{"evaluate", "--deploy", "--cases", "x.json", NULL}, "--deploy takes"},
      {{"evaluate", "--deploy", "--shapes", "0", NULL}, "--shapes"},
      {{"evaluate", "--deploy", "--spec", "/nonexistent/d.json", "--out",
        "/tmp/lanemap-never", NULL},
       "/nonexistent/d.json"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_result res = run_cli(cases[i].args);
    cr_expect_eq(res.code, 2, "case %zu: exit %d: %s", i, res.code, res.err);
    cr_expect(strstr(res.err, cases[i].want) != NULL, "case %zu: %s", i,
              res.err);
    run_free(&res);
  }
}

/* A deployment of two kernels, measured for real (quick protocol). */
Test(deploy, a_small_run_is_consistent) {
  char *text = spec_text(TWO);
  run_write(run_tmp("spec.json"), text);
  free(text);
  char spec[512], out[512], prof[512];
  snprintf(spec, sizeof spec, "%s", run_tmp("spec.json"));
  snprintf(out, sizeof out, "%s", run_tmp("out"));
  snprintf(prof, sizeof prof, "%s", run_tmp("p.json"));
  lm_profile *p = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_profile_default(LM_ISA_AVX2, &p, &err), LM_OK);
  cr_assert_eq(lm_profile_save(p, prof, &err), LM_OK);
  lm_profile_free(p);
  lm_deploy_options o;
  lm_deploy_options_defaults(&o);
  o.spec = spec, o.out = out, o.profile = prof;
  o.isa = LM_ISA_AVX2, o.quick = 1, o.accept_noisy = 1;
  o.nbudgets = 2, o.budgets[0] = 1, o.budgets[1] = 0;
  lm_deploy_result *r = calloc(1, sizeof *r);
  cr_assert_eq(lm_deploy(&o, r, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(r->kernels, 2);
  cr_expect_eq(r->shapes, 6);
  cr_expect_eq(r->measured, 6);
  cr_expect_eq(r->failures, 0);
  cr_expect_eq(r->dispatched, 6 * 2);
  const lm_deploy_row *plan[2], *oracle[2];
  int made = 0;
  for (int i = 0; i < r->nrows; i++) {
    const lm_deploy_row *w = &r->row[i];
    int b = w->budget == 1 ? 0 : 1;
    if (w->policy == LM_DEPLOY_PLAN)
      plan[b] = w;
    if (w->policy == LM_DEPLOY_ORACLE)
      oracle[b] = w;
    made += w->made;
    if (w->made) /* a pick timed contended counts neither way */
      cr_expect_eq(w->best.n + w->left_out, 6, "%s",
                   lm_deploy_policy_name(w->policy));
    /* the default profile has no resamples: no robust plan */
    cr_expect(w->policy != LM_DEPLOY_ROBUST || !w->made);
    /* the oracle timed every pick of every plan (cases.json's "time"),
     * though it prunes splits (a pick timed contended has no time: with
     * none left there is nothing to check) */
    if (w->made && w->best.n > 0)
      cr_expect(isfinite(w->best.max), "%s K=%d: a pick untimed",
                lm_deploy_policy_name(w->policy), w->budget);
  }
  for (int b = 0; b < 2; b++) {
    /* the oracle bounds the plan over the same shapes: only when no pick
     * of the plan was timed contended (on a busy machine some are, and the
     * shapes left out differ) */
    if (plan[b]->left_out == 0)
      cr_expect(plan[b]->workload_oracle >= -1e-9, "K slot %d: %g", b,
                plan[b]->workload_oracle);
    cr_expect_eq(oracle[b]->left_out, 0);
    cr_expect(fabs(oracle[b]->workload_oracle) < 1e-12);
  }
  cr_expect_leq(plan[0]->variants, 2, "K=1: one variant per kernel");
  /* the oracle only gains from a larger budget */
  cr_expect(oracle[1]->workload_best <= oracle[0]->workload_best + 1e-12);
  /* files */
  char *md = run_slurp(run_tmp("out/deploy.md"));
  cr_expect(strstr(md, "## What the ILP buys over greedy") != NULL);
  cr_expect(strstr(md, "## The plan's dispatch at K=1") != NULL, "%s", md);
  free(md);
  char *jl = run_slurp(run_tmp("out/deploy.jsonl"));
  cr_expect_eq(run_count_lines(jl, "\"schema\":\"lanemap.deploy-record/1\""),
               made * 6);
  free(jl);
  /* each case lists the variants the plans run on its kernel */
  lm_cases cs;
  cr_assert_eq(lm_cases_load(run_tmp("out/cases.json"), &cs, &err), LM_OK,
               "%s", err.msg);
  cr_expect_eq(cs.n, 6);
  for (int i = 0; i < cs.n; i++)
    cr_expect(cs.c[i].ntime >= 1,
              "%s: %d listed", cs.c[i].id, cs.c[i].ntime);
  lm_cases_free(&cs);
  cr_expect_eq(access(run_tmp("out/plans/plan-K1.json"), R_OK), 0);
  cr_expect_eq(access(run_tmp("out/measure/x86-64-v3/records.jsonl"), R_OK), 0);
  /* the plan's lookup is the compiled dispatch's */
  lm_plan *plan1 = NULL;
  lm_dispatch *d = NULL;
  cr_assert_eq(
      lm_plan_load(run_tmp("out/plans/plan-K0.json"), &plan1, NULL, &err),
      LM_OK, "%s", err.msg);
  cr_assert_eq(lm_dispatch_new(plan1, NULL, &d, &err), LM_OK, "%s", err.msg);
  for (int k = 0; k < plan1->nkernels; k++)
    for (int64_t R = 1; R < 3000; R = R * 3 + 1)
      for (int64_t C = 60; C <= 300; C += 40) {
        lm_dispatch_info a, b;
        cr_assert_eq(lm_plan_lookup(plan1, k, R, C, &a, &err), LM_OK);
        cr_assert_eq(lm_dispatch_lookup(d, k, R, C, &b, &err), LM_OK);
        cr_expect(a.bucket == b.bucket && a.match == b.match &&
                  strcmp(a.variant_name, b.variant_name) == 0);
      }
  lm_dispatch_info bad;
  cr_expect_eq(lm_plan_lookup(plan1, 7, 1, 1, &bad, &err), LM_EINPUT);
  cr_expect_eq(lm_plan_lookup(plan1, 0, 0, 1, &bad, &err), LM_EINPUT);
  lm_dispatch_free(d);
  lm_plan_free(plan1);
  /* a second run resumes every shape from the records */
  o.nbudgets = 1, o.budgets[0] = 2;
  cr_assert_eq(lm_deploy(&o, r, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(r->shapes, 6);
  cr_expect_eq(r->measured, 0);
  free(r);
}
