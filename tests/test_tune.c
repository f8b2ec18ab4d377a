/* Claims about lm_tune and `lanemap tune` (docs/tune.md), on a small
 * workload with the uncalibrated default profile (no test calibrates):
 * - measuring every variant, each bucket runs its measured fastest
 *   verified variant, and every measurement is one record;
 * - a second run with the records measures nothing and plans the same;
 * - a variant whose record says it failed the oracle check is never
 *   chosen;
 * - a spent time budget measures nothing and plans on the predictions,
 *   as `lanemap solve --point` does;
 * - the near ties beyond the top K are measured too;
 * - bad options exit 2 naming the option. */
#include "tests/support/profiles.h"
#include "tests/support/run.h"

#include <math.h>

#include <cjson/cJSON.h>

#include "lanemap/records.h"
#include "lanemap/tune.h"

TestSuite(tune, .init = run_tmp_make, .fini = run_tmp_remove, .timeout = 600);

/* Two kernels, four buckets, no caps: the plan is a per-bucket argmin. */
static const char *workload(void) {
  static char path[600];
  snprintf(path, sizeof path, "%s", run_tmp("w.json"));
  char text[2048];
  snprintf(text, sizeof text,
           "{\"schema\": \"lanemap.workload/1\", \"isa\": [\"host\"], "
           "\"workers\": [1], \"kernels\": ["
           "{\"kernel\": \"%s/kernels/rmsnorm.lk\", \"buckets\": "
           "[{\"C\": 256, \"R\": [1, 64], \"weights\": [4, 1]}]},"
           "{\"kernel\": \"%s/kernels/swiglu.lk\", \"buckets\": "
           "[{\"R\": 17, \"C\": 65, \"weight\": 3}, "
           "{\"R\": 256, \"C\": 65, \"weight\": 1}]}]}",
           LANEMAP_SOURCE_DIR, LANEMAP_SOURCE_DIR);
  run_write(path, text);
  return path;
}

typedef struct tuned {
  lm_workload *w;
  lm_profile *p;
  lm_tune_result r;
} tuned;

/* Tune the workload with profile p (taken), or the defaults when NULL. */
static void tune_with(tuned *t, const lm_tune_opts *o, lm_profile *p) {
  lm_error err = {0};
  memset(t, 0, sizeof *t);
  cr_assert_eq(lm_workload_load(workload(), &t->w, &err), LM_OK, "%s", err.msg);
  if (!p)
    cr_assert_eq(lm_profile_default(LM_ISA_HOST, &p, &err), LM_OK, "%s",
                 err.msg);
  t->p = p;
  const lm_profile *ps[1] = {t->p};
  cr_assert_eq(lm_tune(t->w, ps, o, &t->r, &err), LM_OK, "%s", err.msg);
}

static void tune(tuned *t, const lm_tune_opts *o) { tune_with(t, o, NULL); }

static void tuned_free(tuned *t) {
  lm_tune_result_free(&t->r);
  lm_profile_free(t->p);
  lm_workload_free(t->w);
}

/* Fast timing: the claims are about choices among what was measured. */
static void quick_opts(lm_tune_opts *o, const char *records) {
  lm_tune_defaults(o);
  o->timing.samples = 3;
  o->timing.sample_ms = 1;
  o->timing.warmup_ms = 1;
  o->records = records;
}

/* The median of the record of (R, C, variant), NAN when absent. */
static double record_median(const lm_records *rs, int64_t R, int64_t C,
                            const char *variant) {
  for (int i = 0; i < rs->n; i++)
    if (rs->r[i].R == R && rs->r[i].C == C &&
        strcmp(rs->r[i].variant, variant) == 0)
      return rs->r[i].median;
  return NAN;
}

Test(tune, measuring_everything_picks_each_buckets_measured_fastest) {
  lm_tune_opts o;
  quick_opts(&o, run_tmp("r.jsonl"));
  o.measure = 1000; /* every variant */
  tuned t;
  tune(&t, &o);
  cr_expect_eq(t.r.buckets, 4);
  cr_expect_eq(t.r.measured_buckets, 4);
  cr_expect_eq(t.r.failed, 0);
  cr_expect_eq(t.r.measured, t.r.candidates);
  lm_records rs;
  lm_error err = {0};
  cr_assert_eq(lm_records_read(o.records, &rs, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(rs.n, t.r.candidates, "one record per measurement");
  for (int i = 0; i < rs.n; i++) {
    cr_expect_eq(rs.r[i].verified, 1);
    cr_expect(rs.r[i].fingerprint != NULL);
  }
  const lm_plan *p = t.r.plan;
  for (int k = 0; k < p->nkernels; k++)
    for (int b = 0; b < p->kernels[k].nbuckets; b++) {
      const lm_plan_bucket *pb = &p->kernels[k].buckets[b];
      const char *chosen = p->kernels[k].variants[pb->variant];
      double mine = record_median(&rs, pb->R, pb->C, chosen), best = INFINITY;
      for (int i = 0; i < rs.n; i++) /* (R, C) tells the buckets apart */
        if (rs.r[i].R == pb->R && rs.r[i].C == pb->C)
          best = fmin(best, rs.r[i].median);
      cr_expect(mine == best, "%s %lldx%lld: chose %s at %g s, fastest %g s",
                p->kernels[k].name, (long long)pb->R, (long long)pb->C, chosen,
                mine, best);
      cr_expect(fabs(pb->predicted_ns - mine * 1e9) <= 1e-6 * mine * 1e9,
                "the plan prices the bucket at its measured time");
    }
  lm_records_free(&rs);
  tuned_free(&t);
}

Test(tune, a_second_run_resumes_from_the_records_and_plans_the_same) {
  lm_tune_opts o;
  quick_opts(&o, run_tmp("r.jsonl"));
  tuned a, b;
  tune(&a, &o);
  cr_assert_gt(a.r.measured, 0);
  tune(&b, &o);
  cr_expect_eq(b.r.measured, 0, "nothing is measured twice");
  cr_expect_eq(b.r.resumed_buckets, b.r.buckets);
  cr_expect_eq(b.r.resumed, a.r.measured);
  for (int k = 0; k < a.r.plan->nkernels; k++) {
    const lm_plan_kernel *x = &a.r.plan->kernels[k], *y = &b.r.plan->kernels[k];
    cr_assert_eq(x->nbuckets, y->nbuckets);
    for (int i = 0; i < x->nbuckets; i++)
      cr_expect_str_eq(x->variants[x->buckets[i].variant],
                       y->variants[y->buckets[i].variant]);
  }
  char *text = run_slurp(o.records);
  cr_expect_eq(run_count_lines(text, "\"schema\""), a.r.measured,
               "the second run appended nothing");
  free(text);
  /* without a cap, every bucket runs a variant that was measured there: a
   * prediction never beats a measurement in its own bucket */
  lm_records rs;
  lm_error err = {0};
  cr_assert_eq(lm_records_read(o.records, &rs, &err), LM_OK, "%s", err.msg);
  for (int k = 0; k < b.r.plan->nkernels; k++) {
    const lm_plan_kernel *pk = &b.r.plan->kernels[k];
    for (int i = 0; i < pk->nbuckets; i++) {
      const char *v = pk->variants[pk->buckets[i].variant];
      cr_expect(
          isfinite(record_median(&rs, pk->buckets[i].R, pk->buckets[i].C, v)),
          "%s %lldx%lld runs %s, which was not measured", pk->name,
          (long long)pk->buckets[i].R, (long long)pk->buckets[i].C, v);
    }
  }
  lm_records_free(&rs);
  tuned_free(&a);
  tuned_free(&b);
}

Test(tune, a_variant_recorded_as_failing_is_never_chosen) {
  lm_tune_opts o;
  quick_opts(&o, run_tmp("r.jsonl"));
  tuned a;
  tune(&a, &o);
  /* the variant the first kernel's first bucket runs failed, says the
   * record now */
  const lm_plan_kernel *pk = &a.r.plan->kernels[0];
  char *bad = strdup(pk->variants[pk->buckets[0].variant]);
  lm_records rs;
  lm_error err = {0};
  cr_assert_eq(lm_records_read(o.records, &rs, &err), LM_OK, "%s", err.msg);
  int hit = 0;
  for (int i = 0; i < rs.n; i++)
    if (strcmp(rs.r[i].variant, bad) == 0 && rs.r[i].R == pk->buckets[0].R &&
        rs.r[i].C == pk->buckets[0].C) {
      rs.r[i].verified = 0;
      rs.r[i].median = rs.r[i].mean = rs.r[i].min = rs.r[i].max = NAN;
      rs.r[i].stddev = NAN;
      free(rs.r[i].times);
      rs.r[i].times = NULL;
      rs.r[i].ntimes = 0;
      hit++;
    }
  cr_assert_eq(hit, 1, "%s", bad);
  cr_assert_eq(lm_records_write(o.records, &rs, &err), LM_OK, "%s", err.msg);
  lm_records_free(&rs);
  tuned b;
  tune(&b, &o);
  cr_expect_eq(b.r.measured, 0);
  cr_expect_eq(b.r.failed, 1);
  const lm_plan_kernel *qk = &b.r.plan->kernels[0];
  for (int v = 0; v < qk->nvariants; v++)
    cr_expect_str_neq(qk->variants[v], bad, "a failed variant was planned");
  free(bad);
  tuned_free(&a);
  tuned_free(&b);
}

Test(tune, a_spent_budget_plans_on_the_predictions_like_solve_point) {
  lm_tune_opts o;
  quick_opts(&o, NULL);
  o.time_budget_s = 1e-9;
  tuned t;
  tune(&t, &o);
  cr_expect_eq(t.r.measured, 0);
  cr_expect_eq(t.r.skipped_buckets, t.r.buckets);
  cr_assert_not_null(t.r.plan);
  char plan[600];
  snprintf(plan, sizeof plan, "%s", run_tmp("point.json"));
  run_result r =
      RUN("solve", workload(), "--default-profile", "--point", "-o", plan);
  cr_assert_eq(r.code, 0, "%s", r.err);
  run_free(&r);
  lm_plan *q = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_plan_load(plan, &q, NULL, &err), LM_OK, "%s", err.msg);
  for (int k = 0; k < q->nkernels; k++)
    for (int b = 0; b < q->kernels[k].nbuckets; b++) {
      const lm_plan_kernel *x = &t.r.plan->kernels[k], *y = &q->kernels[k];
      cr_expect_str_eq(x->variants[x->buckets[b].variant],
                       y->variants[y->buckets[b].variant]);
    }
  lm_plan_free(q);
  tuned_free(&t);
}

/* Resamples that move every coefficient by up to e^±1.5, differently per
 * term: wide enough that the model is unsure between some variants. */
static double wide(int b, int t) { return exp(1.5 * sin(7.3 * b + 1.7 * t)); }

Test(tune, near_ties_beyond_the_top_k_are_measured) {
  lm_tune_opts o;
  quick_opts(&o, run_tmp("r.jsonl"));
  o.measure = 1;
  tuned t;
  tune_with(&t, &o, support_defaults_with_bootstrap(40, wide));
  const lm_tune_result r = t.r;
  lm_error err = {0};
  cr_expect_gt(r.unsure, 0, "no near tie under resamples this wide");
  cr_expect_eq(r.candidates, r.buckets + r.unsure);
  cr_expect_eq(r.measured + r.failed, r.candidates);
  lm_records rs;
  cr_assert_eq(lm_records_read(o.records, &rs, &err), LM_OK, "%s", err.msg);
  int unsure = 0, top = 0;
  for (int i = 0; i < rs.n; i++) {
    const cJSON *u = cJSON_GetObjectItem(rs.r[i].extra, "unsure");
    const cJSON *k = cJSON_GetObjectItem(rs.r[i].extra, "model_rank");
    unsure += cJSON_IsTrue(u);
    top += cJSON_IsNumber(k) && k->valueint == 1;
    cr_expect(cJSON_IsTrue(u) == (k->valueint > 1), "rank %d", k->valueint);
  }
  cr_expect_eq(unsure, r.unsure);
  cr_expect_eq(top, r.buckets);
  lm_records_free(&rs);
  tuned_free(&t);
}

/* K = 0 measures only the unsure buckets, and in each exactly the near
 * ties the plan of `lanemap solve` lists as its unsure candidates. */
Test(tune, measure_0_takes_the_unsure_buckets_the_plan_lists) {
  lm_tune_opts o;
  quick_opts(&o, run_tmp("r.jsonl"));
  o.measure = 0;
  tuned t;
  tune_with(&t, &o, support_defaults_with_bootstrap(40, wide));
  const lm_tune_result r = t.r;
  const lm_workload *w = t.w;
  const lm_profile *ps[1] = {t.p};
  lm_error err = {0};
  cr_expect_eq(r.candidates, r.unsure);
  cr_expect_eq(r.sure_buckets + r.measured_buckets, r.buckets);
  /* the plan solve makes from the same predictions */
  lm_plan_build_opts bo = {0, 1};
  lm_plan_problem pp;
  cr_assert_eq(lm_plan_problem_build(w, ps, &bo, &pp, &err), LM_OK, "%s",
               err.msg);
  cr_assert_eq(lm_plan_problem_settle(&pp, LM_SETTLE_ALPHA, &err), LM_OK);
  lm_solve_result sr;
  cr_assert_eq(lm_solve(&pp.p, &o.solve, &sr, &err), LM_OK, "%s", err.msg);
  lm_plan *plan = NULL;
  cr_assert_eq(lm_plan_from_result(w, ps, &pp, &o.solve, &sr, &plan, &err),
               LM_OK);
  lm_records rs;
  cr_assert_eq(lm_records_read(o.records, &rs, &err), LM_OK, "%s", err.msg);
  int listed = 0;
  for (int k = 0; k < plan->nkernels; k++)
    for (int b = 0; b < plan->kernels[k].nbuckets; b++) {
      const lm_plan_bucket *pb = &plan->kernels[k].buckets[b];
      int here = 0;
      for (int i = 0; i < rs.n; i++)
        here += rs.r[i].R == pb->R && rs.r[i].C == pb->C;
      cr_expect_eq(here, pb->nunsure, "%lldx%lld", (long long)pb->R,
                   (long long)pb->C);
      for (int u = 0; u < pb->nunsure; u++)
        cr_expect(!isnan(record_median(&rs, pb->R, pb->C, pb->unsure[u])) ||
                      r.failed > 0,
                  "%s at %lldx%lld was not measured", pb->unsure[u],
                  (long long)pb->R, (long long)pb->C);
      listed += pb->nunsure;
    }
  cr_expect_eq(listed, r.candidates);
  lm_records_free(&rs);
  lm_plan_free(plan);
  lm_solve_result_free(&sr);
  lm_plan_problem_free(&pp);
  tuned_free(&t);
}

/* The defaults alone have no resamples: only the top K is measured. */
Test(tune, without_resamples_only_the_top_k_is_measured) {
  lm_tune_opts o;
  quick_opts(&o, NULL);
  o.measure = 2;
  tuned t;
  tune(&t, &o);
  cr_expect_eq(t.r.unsure, 0);
  cr_expect_eq(t.r.candidates, 2 * t.r.buckets);
  tuned_free(&t);
}

Test(tune, the_command_writes_the_plan_and_reports_its_stages) {
  char plan[600], rec[600]; /* run_tmp's buffers rotate: keep copies */
  snprintf(plan, sizeof plan, "%s", run_tmp("plan.json"));
  snprintf(rec, sizeof rec, "%s", run_tmp("r.jsonl"));
  run_result r = RUN("tune", workload(), "--default-profile", "-o", plan,
                     "--records", rec, "--samples", "3", "--sample-ms", "1");
  cr_expect(r.code == 0 || r.code == 1, "%s", r.err); /* 1: noisy machine */
  cr_expect(strstr(r.out, "4 buckets: 4 measured, 0 from the records") &&
                strstr(r.out, "time: predict ") &&
                strstr(r.out, "oracle and verify") && strstr(r.out, "wrote "),
            "%s", r.out);
  cr_expect(run_exists(plan));
  run_free(&r);
  r = RUN("tune", workload(), "--default-profile", "-o", plan, "--records", rec,
          "--samples", "3", "--sample-ms", "1");
  cr_expect_eq(r.code, 0, "%s", r.err); /* nothing timed: nothing noisy */
  cr_expect(strstr(r.out, "0 measured, 4 from the records"), "%s", r.out);
  run_free(&r);
  /* --json: one object on stdout, for pipelines */
  r = RUN("tune", workload(), "--default-profile", "-o", plan, "--records", rec,
          "--samples", "3", "--sample-ms", "1", "--json");
  cr_expect_eq(r.code, 0, "%s", r.err);
  cJSON *j = cJSON_Parse(r.out);
  cr_assert_not_null(j, "not one JSON object: %s", r.out);
  cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "schema")),
                   "lanemap.tune/1");
  const cJSON *b = cJSON_GetObjectItem(j, "buckets");
  cr_expect_eq(cJSON_GetObjectItem(b, "total")->valueint, 4);
  cr_expect_eq(cJSON_GetObjectItem(b, "resumed")->valueint, 4);
  cr_expect(cJSON_IsObject(cJSON_GetObjectItem(j, "time_s")));
  cJSON_Delete(j);
  run_free(&r);
}

Test(tune, bad_options_exit_2_naming_the_option) {
  char w[600], plan[600]; /* run_tmp's buffers rotate: keep copies */
  snprintf(w, sizeof w, "%s", workload());
  snprintf(plan, sizeof plan, "%s", run_tmp("plan.json"));
  struct {
    const char *args[4];
    const char *msg;
  } bad[] = {
      {{"--measure", "-1"}, "--measure"},
      {{"--measure", "x"}, "--measure"},
      {{"--time-budget", "-1"}, "--time-budget"},
      {{"--samples", "0"}, "samples"},
      {{"--sample-ms", "nan"}, "--sample-ms"},
      {{"--bogus"}, "--bogus"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *argv[12] = {"tune", w, "--default-profile", "-o", plan};
    int n = 5;
    for (int j = 0; j < 4 && bad[i].args[j]; j++)
      argv[n++] = bad[i].args[j];
    argv[n] = NULL;
    run_result r = run_cli(argv);
    cr_expect_eq(r.code, 2, "case %zu: %s", i, r.err);
    cr_expect(strstr(r.err, bad[i].msg) != NULL, "case %zu: %s", i, r.err);
    run_free(&r);
  }
  run_result r = RUN("tune", w, "--default-profile");
  cr_expect_eq(r.code, 2, "%s", r.err);
  cr_expect(strstr(r.err, "-o PLAN is required"), "%s", r.err);
  run_free(&r);
  r = RUN("tune", run_tmp("missing.json"), "--default-profile", "-o", plan);
  cr_expect_eq(r.code, 2, "%s", r.err);
  run_free(&r);
}
