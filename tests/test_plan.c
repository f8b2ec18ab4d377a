/* Claims about problem building, plans and dispatch, on small workloads
 * built in code over the suite kernels and priced with the default
 * profile: the unbudgeted plan is the per-bucket argmin of the real
 * predictions, plans survive JSON unchanged, malformed plans name the
 * field, another machine's fingerprint warns, dispatch runs the planned
 * variant of each bucket and reports fallbacks, and concurrent launches
 * give oracle-correct outputs.  Nothing is timed. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lanemap/calibrate.h"
#include "lanemap/dispatch.h"
#include "lanemap/plan.h"
#include "lanemap/verify.h"
#include "support/profiles.h"

#define SRC LANEMAP_SOURCE_DIR

static lm_profile *prof;

static void setup(void) {
  lm_error e = {0};
  cr_assert_eq(lm_profile_default(LM_ISA_HOST, &prof, &e), LM_OK, "%s", e.msg);
}
static void teardown(void) { lm_profile_free(prof); }

/* rmsnorm at C=64 over R = 1, 4, 16, 64 and C=32 at R=8; swiglu at C=65
 * over R = 1, 17, 256.  cap 0 = none, budget < 0 = none. */
static lm_workload *small(int cap, double budget) {
  lm_error e = {0};
  lm_workload *w = lm_workload_new(NULL, SRC "/kernels", &e);
  cr_assert_not_null(w, "%s", e.msg);
  double w1[4] = {8, 4, 2, 1};
  cr_assert_eq(lm_workload_add_kernel(w, "rmsnorm.lk", NULL, NULL, &e), LM_OK);
  cr_assert_eq(lm_workload_add_geometric(w, 0, 64, 1, 64, 4, w1, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(lm_workload_add_bucket(w, 0, 8, 32, 1, &e), LM_OK);
  cr_assert_eq(lm_workload_add_kernel(w, "swiglu.lk", NULL, NULL, &e), LM_OK);
  cr_assert_eq(lm_workload_add_bucket(w, 1, 1, 65, 5, &e), LM_OK);
  cr_assert_eq(lm_workload_add_bucket(w, 1, 17, 65, 2, &e), LM_OK);
  cr_assert_eq(lm_workload_add_bucket(w, 1, 256, 65, 1, &e), LM_OK);
  cr_assert_eq(lm_workload_set_budgets(w, cap, budget, -1, &e), LM_OK);
  cr_assert_eq(lm_workload_bind(w, &e), LM_OK, "%s", e.msg);
  return w;
}

static lm_plan *make_plan(lm_workload *w, int threshold, lm_plan_problem *pp_out) {
  lm_error e = {0};
  const lm_profile *ps[1] = {prof};
  lm_plan_problem pp;
  lm_plan_build_opts bo = {0};
  cr_assert_eq(lm_plan_problem_build(w, ps, &bo, &pp, &e), LM_OK, "%s", e.msg);
  lm_solve_opts o;
  lm_solve_defaults(&o);
  o.threshold = threshold;
  lm_solve_result r;
  cr_assert_eq(lm_solve(&pp.p, &o, &r, &e), LM_OK, "%s", e.msg);
  lm_plan *p = NULL;
  cr_assert_eq(lm_plan_from_result(w, ps, &pp, &o, &r, &p, &e), LM_OK, "%s", e.msg);
  lm_solve_result_free(&r);
  if (pp_out)
    *pp_out = pp;
  else
    lm_plan_problem_free(&pp);
  return p;
}

TestSuite(plan, .init = setup, .fini = teardown);

Test(plan, unbudgeted_plan_is_the_per_bucket_argmin_of_real_predictions) {
  lm_workload *w = small(0, -1);
  lm_plan_problem pp;
  lm_plan *p = make_plan(w, 0, &pp);
  for (int k = 0; k < w->nkernels; k++) {
    const lm_plan_pkernel *pk = &pp.pk[k];
    cr_assert_gt(pk->nvariants, 1);
    for (int s = 0; s < pp.k[k].nbuckets; s++) {
      double best = INFINITY;
      for (int v = 0; v < pk->nvariants; v++)
        best = fmin(best, pk->cost[(size_t)s * pk->nvariants + v]);
      const lm_plan_bucket *b = &p->kernels[k].buckets[pk->order[s]];
      cr_assert(isfinite(best));
      cr_assert_float_eq(b->predicted_ns, best, 1e-9 * best,
                         "kernel %d bucket %d: %g, argmin %g", k, s, b->predicted_ns, best);
      /* the predicted cost is lm_cost_predict's for that variant */
      lm_variant v;
      lm_error e = {0};
      cr_assert_eq(lm_variant_parse(p->kernels[k].variants[b->variant], &v, &e), LM_OK);
      lm_shape sh;
      cr_assert_eq(lm_workload_shape(w, k, pk->order[s], &sh, &e), LM_OK);
      lm_prediction pr;
      cr_assert_eq(lm_cost_predict(prof, w->kernels[k].k, &v, &sh, &pr, &e), LM_OK);
      cr_assert_float_eq(pr.ns, b->predicted_ns, 1e-9 * pr.ns);
    }
  }
  cr_assert_str_eq(p->status, "optimal");
  lm_plan_free(p);
  lm_plan_problem_free(&pp);
  lm_workload_free(w);
}

Test(plan, caps_and_budget_in_variants_hold) {
  lm_error e = {0};
  lm_workload *w = small(1, -1);
  lm_plan *p = make_plan(w, 0, NULL);
  for (int k = 0; k < p->nkernels; k++)
    cr_assert_eq(p->kernels[k].nvariants, 1);
  lm_plan_free(p);
  cr_assert_eq(lm_workload_set_budgets(w, 0, -1, 3, &e), LM_OK);
  p = make_plan(w, 0, NULL);
  cr_assert_leq(p->kernels[0].nvariants + p->kernels[1].nvariants, 3);
  cr_assert_float_eq(p->compile_total_ms, p->kernels[0].nvariants + p->kernels[1].nvariants,
                     0);
  lm_plan_free(p);
  lm_workload_free(w);
}

static double grow_by_half(int b, int t) {
  (void)t;
  return 1 + 0.5 * b;
}

Test(plan, robust_scenarios_come_from_the_bootstrap) {
  lm_error e = {0};
  lm_workload *w = small(2, -1);
  lm_profile *bp = support_defaults_with_bootstrap(3, grow_by_half);
  const lm_profile *ps[1] = {bp};
  lm_plan_build_opts bo = {1, 0};
  lm_plan_problem pp;
  cr_assert_eq(lm_plan_problem_build(w, ps, &bo, &pp, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(pp.p.nscenarios, 4);
  const lm_solve_kernel *k = &pp.k[0];
  size_t cell = (size_t)k->nbuckets * k->nvariants;
  cr_assert_float_eq(k->cost[cell], k->cost[0], 1e-9 * k->cost[0]); /* resample 0 = point */
  cr_assert_gt(k->cost[3 * cell], k->cost[cell] * 1.5);
  lm_solve_opts o;
  lm_solve_defaults(&o);
  o.robust = 1;
  lm_solve_result r;
  cr_assert_eq(lm_solve(&pp.p, &o, &r, &e), LM_OK, "%s", e.msg);
  lm_plan *p = NULL;
  cr_assert_eq(lm_plan_from_result(w, ps, &pp, &o, &r, &p, &e), LM_OK, "%s", e.msg);
  cr_assert(p->robust);
  cr_assert_eq(p->scenarios, 4);
  lm_plan_free(p);
  lm_solve_result_free(&r);
  lm_plan_problem_free(&pp);
  /* no bootstrap vectors: robust mode is bad input */
  ps[0] = prof;
  cr_assert_eq(lm_plan_problem_build(w, ps, &bo, &pp, &e), LM_EINPUT);
  cr_assert(strstr(e.msg, "bootstrap"), "%s", e.msg);
  lm_profile_free(bp);
  lm_workload_free(w);
}

Test(plan, round_trip_through_json_and_a_file) {
  lm_error e = {0};
  lm_workload *w = small(2, 100);
  for (int th = 0; th < 2; th++) {
    lm_plan *p = make_plan(w, th, NULL), *q = NULL, *f = NULL;
    cr_assert_eq(p->threshold, th);
    if (th)
      for (int k = 0; k < p->nkernels; k++)
        cr_assert_gt(p->kernels[k].nthresholds, 0);
    char *text = NULL;
    cr_assert_eq(lm_plan_to_json_text(p, &text, &e), LM_OK);
    cr_assert_eq(lm_plan_from_json_text("p.json", text, strlen(text), &q, &e), LM_OK,
                 "%s\n%s", e.msg, text);
    cr_assert(lm_plan_equal(p, q));
    char path[] = "/tmp/lanemap_test_plan_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(lm_plan_save(p, path, &e), LM_OK, "%s", e.msg);
    lm_plan_load_info info;
    cr_assert_eq(lm_plan_load(path, &f, &info, &e), LM_OK, "%s", e.msg);
    cr_assert(lm_plan_equal(p, f));
    /* the default profile carries this machine's fingerprint */
    if (info.fingerprint_checked)
      cr_assert_eq(info.fingerprint_differs, 0, "%s", info.warning);
    unlink(path);
    free(text);
    lm_plan_free(f);
    lm_plan_free(q);
    lm_plan_free(p);
  }
  lm_workload_free(w);
}

Test(plan, another_fingerprint_warns) {
  lm_workload *w = small(0, -1);
  lm_plan *p = make_plan(w, 0, NULL);
  lm_plan_load_info info;
  snprintf(p->profiles[0].fingerprint, sizeof p->profiles[0].fingerprint,
           "0123456789abcdef");
  lm_plan_check_fingerprint(p, &info);
  cr_assert(info.fingerprint_checked);
  cr_assert(info.fingerprint_differs);
  cr_assert(strstr(info.warning, "0123456789abcdef"), "%s", info.warning);
  lm_plan_free(p);
  lm_workload_free(w);
}

/* Each case edits the good plan's JSON and names the field the reader
 * must report. */
typedef void (*edit_fn)(cJSON *root);
static cJSON *kern(cJSON *r, int i) {
  return cJSON_GetArrayItem(cJSON_GetObjectItem(r, "kernels"), i);
}
static cJSON *bucket(cJSON *r, int k, int b) {
  return cJSON_GetArrayItem(cJSON_GetObjectItem(kern(r, k), "buckets"), b);
}
static void e_schema(cJSON *r) { cJSON_ReplaceItemInObject(r, "schema", cJSON_CreateString("lanemap.plan/9")); }
static void e_noworkload(cJSON *r) { cJSON_DeleteItemFromObject(r, "workload"); }
static void e_profiles(cJSON *r) { cJSON_ReplaceItemInObject(r, "profiles", cJSON_CreateArray()); }
static void e_fp(cJSON *r) {
  cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "profiles"), 0),
                            "fingerprint", cJSON_CreateString("xyz"));
}
static void e_isa(cJSON *r) {
  cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "profiles"), 0),
                            "isa", cJSON_CreateString("mips"));
}
static void e_pmode(cJSON *r) {
  cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(r, "profiles"), 0),
                            "mode", cJSON_CreateString("slow"));
}
static void e_thr(cJSON *r) { cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "mode"), "threshold", cJSON_CreateNumber(1)); }
static void e_thr_true(cJSON *r) { cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "mode"), "threshold", cJSON_CreateTrue()); }
static void e_scen(cJSON *r) { cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "mode"), "scenarios", cJSON_CreateNumber(0)); }
static void e_status(cJSON *r) { cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "solver"), "status", cJSON_CreateString("great")); }
static void e_obj(cJSON *r) { cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "solver"), "objective_ns", cJSON_CreateNumber(-1)); }
static void e_nodes(cJSON *r) { cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "solver"), "nodes", cJSON_CreateNumber(1.5)); }
static void e_kernels(cJSON *r) { cJSON_ReplaceItemInObject(r, "kernels", cJSON_CreateObject()); }
static void e_hash(cJSON *r) { cJSON_ReplaceItemInObject(kern(r, 1), "hash", cJSON_CreateString("12")); }
static void e_path(cJSON *r) { cJSON_ReplaceItemInObject(kern(r, 0), "path", cJSON_CreateString("")); }
static void e_variant(cJSON *r) {
  cJSON_ReplaceItemInArray(cJSON_GetObjectItem(kern(r, 1), "variants"), 0,
                           cJSON_CreateString("host/w3/l1/t1"));
}
static void e_bvar(cJSON *r) { cJSON_ReplaceItemInObject(bucket(r, 1, 2), "variant", cJSON_CreateNumber(99)); }
static void e_bR(cJSON *r) { cJSON_ReplaceItemInObject(bucket(r, 0, 4), "R", cJSON_CreateNumber(0)); }
static void e_bw(cJSON *r) { cJSON_ReplaceItemInObject(bucket(r, 0, 1), "weight", cJSON_CreateString("1")); }
static void e_bdup(cJSON *r) {
  cJSON_ReplaceItemInObject(bucket(r, 0, 1), "R", cJSON_CreateNumber(1));
}
static void e_kdup(cJSON *r) { cJSON_ReplaceItemInObject(kern(r, 1), "name", cJSON_CreateString("rmsnorm")); }
static void e_bpred(cJSON *r) { cJSON_ReplaceItemInObject(bucket(r, 1, 0), "predicted_ns", cJSON_CreateNumber(-3)); }

static const struct {
  edit_fn edit;
  const char *want;
} bad[] = {
    {e_schema, "p.json: $.schema: expected \"lanemap.plan/1\""},
    {e_noworkload, "p.json: $.workload: missing field, expected a string"},
    {e_profiles, "p.json: $.profiles: expected"},
    {e_fp, "p.json: $.profiles[0].fingerprint: expected 16"},
    {e_isa, "p.json: $.profiles[0].isa: expected an ISA"},
    {e_pmode, "p.json: $.profiles[0].mode: expected"},
    {e_thr, "p.json: $.mode.threshold: expected true or false"},
    {e_thr_true, "p.json: $.kernels[0]: has no thresholds, but $.mode.threshold is true"},
    {e_scen, "p.json: $.mode.scenarios: expected an integer"},
    {e_status, "p.json: $.solver.status: expected"},
    {e_obj, "p.json: $.solver.objective_ns: expected a finite number >= 0"},
    {e_nodes, "p.json: $.solver.nodes: expected an integer"},
    {e_kernels, "p.json: $.kernels: expected an array of 1 to 100000 elements, got an object"},
    {e_hash, "p.json: $.kernels[1].hash: expected"},
    {e_path, "p.json: $.kernels[0].path: expected a non-empty string"},
    {e_variant, "p.json: $.kernels[1].variants[0]: "},
    {e_bvar, "p.json: $.kernels[1].buckets[2].variant: expected an integer from 0 to "},
    {e_bR, "p.json: $.kernels[0].buckets[4].R: expected an integer"},
    {e_bw, "p.json: $.kernels[0].buckets[1].weight: expected a finite number >= 0"},
    {e_bdup, "p.json: $.kernels[0].buckets[1]: shape (R=1, C=64) is also the shape of buckets[0]"},
    {e_bpred, "p.json: $.kernels[1].buckets[0].predicted_ns: expected"},
    {e_kdup, "p.json: $.kernels[1].name: \"rmsnorm\" is also kernels[0].name"},
};

Test(plan, malformed_plans_name_the_field) {
  lm_workload *w = small(2, -1);
  lm_plan *p = make_plan(w, 0, NULL);
  lm_error e = {0};
  char *good = NULL;
  cr_assert_eq(lm_plan_to_json_text(p, &good, &e), LM_OK);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cJSON *root = cJSON_Parse(good);
    bad[i].edit(root);
    char *t = cJSON_Print(root);
    lm_plan *q = NULL;
    cr_expect_eq(lm_plan_from_json_text("p.json", t, strlen(t), &q, &e), LM_EINPUT,
                 "case %zu accepted", i);
    cr_expect_null(q);
    cr_expect(strstr(e.msg, bad[i].want) != NULL, "case %zu: want \"%s\" in \"%s\"", i,
              bad[i].want, e.msg);
    lm_plan_free(q);
    free(t);
    cJSON_Delete(root);
  }
  lm_plan *q = NULL;
  cr_expect_eq(lm_plan_from_json_text("p.json", "{", 1, &q, &e), LM_EINPUT);
  cr_expect_str_eq(e.msg, "p.json: truncated JSON: the text ends inside an "
                          "object, an array or a string");
  cr_expect_eq(lm_plan_from_json_text("p.json", "{}\n}", 4, &q, &e), LM_EINPUT);
  cr_expect_str_eq(e.msg, "p.json:2:1: unexpected text after the JSON value");
  free(good);
  lm_plan_free(p);
  lm_workload_free(w);
}

Test(plan, dispatch_picks_the_planned_variant_and_reports_fallbacks) {
  lm_workload *w = small(2, -1);
  lm_plan *p = make_plan(w, 0, NULL);
  lm_dispatch *d = NULL;
  lm_error e = {0};
  cr_assert_eq(lm_dispatch_new(p, NULL, &d, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(lm_dispatch_find(d, "swiglu"), 1);
  cr_assert_eq(lm_dispatch_find(d, "nope"), -1);
  for (int k = 0; k < p->nkernels; k++)
    for (int b = 0; b < p->kernels[k].nbuckets; b++) {
      const lm_plan_bucket *pb = &p->kernels[k].buckets[b];
      lm_dispatch_info info;
      cr_assert_eq(lm_dispatch_lookup(d, k, pb->R, pb->C, &info, &e), LM_OK);
      cr_assert_eq(info.match, LM_DISPATCH_EXACT);
      cr_assert_eq(info.bucket, b);
      cr_assert_eq(info.variant, pb->variant);
      char name[128];
      lm_variant_format(lm_compiled_variant(lm_dispatch_compiled(d, k, info.variant)), name,
                        sizeof name);
      cr_assert_str_eq(name, p->kernels[k].variants[pb->variant]);
    }
  lm_dispatch_info info;
  /* rmsnorm C=64 buckets R = 1, 4, 16, 64 (indices 0..3); C=32 R=8 (4) */
  cr_assert_eq(lm_dispatch_lookup(d, 0, 5, 64, &info, &e), LM_OK);
  cr_assert_eq(info.match, LM_DISPATCH_BETWEEN);
  cr_assert_eq(info.bucket, 1); /* log 5 is nearer log 4 than log 16 */
  cr_assert_eq(lm_dispatch_lookup(d, 0, 10, 64, &info, &e), LM_OK);
  cr_assert_eq(info.bucket, 2); /* log 10 nearer log 16 */
  cr_assert_eq(lm_dispatch_lookup(d, 0, 5000, 64, &info, &e), LM_OK);
  cr_assert_eq(info.match, LM_DISPATCH_FALLBACK);
  cr_assert_eq(info.bucket, 3);
  cr_assert_eq(info.bucket_R, 64);
  cr_assert_eq(lm_dispatch_lookup(d, 0, 3, 40, &info, &e), LM_OK); /* C 40 nearest 32 */
  cr_assert_eq(info.match, LM_DISPATCH_FALLBACK);
  cr_assert_eq(info.bucket, 4);
  cr_assert_eq(info.bucket_C, 32);
  cr_assert_eq(lm_dispatch_lookup(d, 0, 3, 100, &info, &e), LM_OK); /* C 100 nearest 64 */
  cr_assert_eq(info.bucket_C, 64);
  cr_assert_eq(info.bucket, 1);
  cr_assert_eq(lm_dispatch_lookup(d, 2, 3, 64, &info, &e), LM_EINPUT);
  cr_assert_eq(lm_dispatch_lookup(d, 0, 0, 64, &info, &e), LM_EINPUT);
  lm_dispatch_free(d);
  /* a kernel file that does not match the plan's hash is refused */
  snprintf(p->kernels[1].hash, 17, "%s", "0000000000000000");
  cr_assert_eq(lm_dispatch_new(p, NULL, &d, &e), LM_EINPUT);
  cr_assert(strstr(e.msg, "changed since the plan was made"), "%s", e.msg);
  lm_plan_free(p);
  lm_workload_free(w);
}

Test(plan, threshold_dispatch_uses_the_run_below) {
  lm_workload *w = small(2, -1);
  lm_plan *p = make_plan(w, 1, NULL);
  const lm_plan_kernel *k = &p->kernels[0];
  /* thresholds describe the buckets: per C, the variant of each bucket is
   * the one of the last run starting at or below its R */
  for (int b = 0; b < k->nbuckets; b++) {
    const lm_plan_threshold *t = NULL;
    for (int i = 0; i < k->nthresholds; i++)
      if (k->thresholds[i].C == k->buckets[b].C)
        t = &k->thresholds[i];
    cr_assert_not_null(t);
    int v = -1;
    for (int r = 0; r < t->nruns; r++)
      if (t->from_R[r] <= k->buckets[b].R)
        v = t->variant[r];
    cr_assert_eq(v, k->buckets[b].variant);
  }
  lm_dispatch *d = NULL;
  lm_error e = {0};
  cr_assert_eq(lm_dispatch_new(p, NULL, &d, &e), LM_OK, "%s", e.msg);
  lm_dispatch_info info;
  cr_assert_eq(lm_dispatch_lookup(d, 0, 15, 64, &info, &e), LM_OK);
  cr_assert_eq(info.match, LM_DISPATCH_BETWEEN);
  cr_assert_eq(info.bucket, 1); /* R 15: the run holding R=4 */
  lm_dispatch_free(d);
  lm_plan_free(p);
  lm_workload_free(w);
}

/* Concurrent launches: each thread runs its own shape (one a fallback)
 * several times and checks the outputs against the oracle. */
typedef struct job {
  const lm_dispatch *d;
  int kernel;
  int64_t R, C;
  int failures;
  char msg[2048];
} job;

static void *run_job(void *arg) {
  job *j = arg;
  lm_error e = {0};
  const lm_kernel *k = lm_dispatch_kernel(j->d, j->kernel);
  lm_shape sh;
  lm_data *data = NULL;
  lm_oracle *orc = NULL;
  if (lm_shape_bind(k, j->R, j->C, NULL, &sh, &e) != LM_OK ||
      lm_data_gen(k, &sh, 7, &data, &e) != LM_OK || lm_oracle_run(k, data, &orc, &e) != LM_OK) {
    j->failures++;
    snprintf(j->msg, sizeof j->msg, "%s", e.msg);
    goto done;
  }
  uint64_t *args = lm_args_pack(k, data);
  for (int it = 0; it < 20; it++) {
    lm_data_reset_outputs(data);
    lm_dispatch_info info;
    if (lm_dispatch_launch(j->d, j->kernel, j->R, j->C, args, &info, &e) != LM_OK) {
      j->failures++;
      snprintf(j->msg, sizeof j->msg, "%s", e.msg);
      continue;
    }
    lm_compare_result cmp;
    if (lm_oracle_compare(k, orc, data, &cmp) != 0) {
      j->failures++;
      snprintf(j->msg, sizeof j->msg, "%lld mismatches", (long long)cmp.mismatches);
    }
  }
  free(args);
done:
  lm_oracle_free(orc);
  lm_data_free(data);
  return NULL;
}

Test(plan, concurrent_launches_are_correct) {
  lm_workload *w = small(2, -1);
  lm_plan *p = make_plan(w, 0, NULL);
  lm_dispatch *d = NULL;
  lm_error e = {0};
  cr_assert_eq(lm_dispatch_new(p, NULL, &d, &e), LM_OK, "%s", e.msg);
  job jobs[6] = {
      {d, 0, 1, 64, 0, ""},  {d, 0, 64, 64, 0, ""}, {d, 0, 300, 64, 0, ""},
      {d, 1, 17, 65, 0, ""}, {d, 1, 256, 65, 0, ""}, {d, 0, 8, 32, 0, ""},
  };
  pthread_t th[6];
  for (int i = 0; i < 6; i++)
    cr_assert_eq(pthread_create(&th[i], NULL, run_job, &jobs[i]), 0);
  for (int i = 0; i < 6; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < 6; i++)
    cr_expect_eq(jobs[i].failures, 0, "job %d: %s", i, jobs[i].msg);
  lm_dispatch_free(d);
  lm_plan_free(p);
  lm_workload_free(w);
}

Test(plan, several_isas_and_worker_counts_are_candidates) {
  lm_error e = {0};
  lm_workload *w = small(0, -1);
  lm_isa isas[2] = {LM_ISA_AVX2, LM_ISA_HOST};
  int workers[2] = {1, 2};
  cr_assert_eq(lm_workload_set_isas(w, isas, 2, &e), LM_OK);
  cr_assert_eq(lm_workload_set_workers(w, workers, 2, &e), LM_OK);
  lm_profile *p2 = NULL;
  cr_assert_eq(lm_profile_default(LM_ISA_AVX2, &p2, &e), LM_OK, "%s", e.msg);
  const lm_profile *ps[2] = {p2, prof};
  lm_plan_problem pp;
  lm_plan_build_opts bo = {0};
  cr_assert_eq(lm_plan_problem_build(w, ps, &bo, &pp, &e), LM_OK, "%s", e.msg);
  int v3 = 0, host = 0, multi = 0;
  for (int v = 0; v < pp.pk[0].nvariants; v++) {
    v3 += pp.pk[0].variants[v].isa == LM_ISA_AVX2;
    host += pp.pk[0].variants[v].isa == LM_ISA_HOST;
    multi += pp.pk[0].variants[v].workers == 2;
  }
  cr_assert_gt(v3, 0);
  cr_assert_gt(host, 0);
  cr_assert_gt(multi, 0);
  lm_solve_opts o;
  lm_solve_defaults(&o);
  lm_solve_result r;
  cr_assert_eq(lm_solve(&pp.p, &o, &r, &e), LM_OK, "%s", e.msg);
  lm_plan *p = NULL;
  cr_assert_eq(lm_plan_from_result(w, ps, &pp, &o, &r, &p, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(p->nprofiles, 2);
  cr_assert_str_eq(p->profiles[0].isa, "x86-64-v3");
  lm_plan_free(p);
  lm_solve_result_free(&r);
  lm_plan_problem_free(&pp);
  lm_profile_free(p2);
  lm_workload_free(w);
}

/* ---- settling near ties -------------------------------------------------- */

/* One kernel, 3 buckets, 3 variants (t1, t1, t2), 1 + 10 scenarios, built
 * by hand so that each bucket's share of resamples is known:
 *   bucket 0: the t2 variant is the point best (80), the first t1 variant
 *             (100) is as fast in 3 of 10 resamples, the second in none;
 *   bucket 1: the t2 variant wins every resample by far;
 *   bucket 2: the first t1 variant is the point best (100), the second
 *             (101) as fast in 5 of 10; the t2 variant never.
 * The defaults' predictions rank the second t1 variant first, then the t2
 * variant (static) in bucket 0 and the first t1 variant elsewhere. */
#define NB 3
#define NV 3
#define NSC 11
static void hand_problem(lm_plan_problem *pp, int settle) {
  memset(pp, 0, sizeof *pp);
  pp->p.nkernels = 1;
  pp->p.nscenarios = NSC;
  pp->p.budget = -1;
  pp->settle = settle;
  pp->k = calloc(1, sizeof *pp->k);
  pp->pk = calloc(1, sizeof *pp->pk);
  lm_plan_pkernel *pk = pp->pk;
  pk->nvariants = NV;
  pk->variants = calloc(NV, sizeof *pk->variants);
  for (int v = 0; v < NV; v++)
    pk->variants[v].workers = v == 2 ? 2 : 1;
  pk->variants[2].split = LM_SPLIT_STATIC;
  pk->order = calloc(NB, sizeof *pk->order);
  pk->weight = calloc(NB, sizeof *pk->weight);
  pk->compile_cost = calloc(NV, sizeof *pk->compile_cost);
  pk->cost = calloc((size_t)NSC * NB * NV, sizeof *pk->cost);
  pk->prior = calloc((size_t)NB * NV, sizeof *pk->prior);
  for (int b = 0; b < NB; b++) {
    pk->order[b] = b;
    pk->weight[b] = 1;
    double prior[NV] = {100, 90, b == 0 ? 95 : 120};
    memcpy(pk->prior + b * NV, prior, sizeof prior);
  }
  const double point[NB][NV] = {{100, 101, 80}, {100, 101, 20}, {100, 101, 200}};
  for (int j = 0; j < NSC; j++)
    for (int b = 0; b < NB; b++) {
      double *c = pk->cost + ((size_t)j * NB + b) * NV;
      memcpy(c, point[b], sizeof point[b]);
      if (j == 0)
        continue;
      if (b == 0 && j <= 3)
        c[0] = 70; /* as fast as the t2 variant (80) */
      if (b == 2 && j <= 5)
        c[1] = 99; /* faster than the first t1 variant (100) */
    }
  pp->k[0] = (lm_solve_kernel){NB, NV, pk->weight, pk->cost, pk->compile_cost, 0};
  pp->p.kernel = pp->k;
}

static void solve_choices(lm_plan_problem *pp, int *choice) {
  lm_error e = {0};
  lm_solve_opts o;
  lm_solve_defaults(&o);
  lm_solve_result r;
  cr_assert_eq(lm_solve(&pp->p, &o, &r, &e), LM_OK, "%s", e.msg);
  for (int b = 0; b < NB; b++)
    choice[b] = r.choice[b];
  lm_solve_result_free(&r);
}

Test(plan, settling_prefers_the_defaults_pick_within_the_bootstrap) {
  lm_error e = {0};
  lm_plan_problem pp;
  hand_problem(&pp, 1);
  int point_choice[NB];
  solve_choices(&pp, point_choice);
  cr_assert_eq(point_choice[0], 2);
  cr_assert_eq(point_choice[2], 0);
  cr_assert_eq(lm_plan_problem_settle(&pp, LM_SETTLE_ALPHA, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(pp.p.nscenarios, 1);
  cr_assert_eq(pp.ties, 2);
  cr_assert_eq(pp.settled, 1);
  int choice[NB];
  solve_choices(&pp, choice);
  cr_assert_eq(choice[0], 2, "the defaults' pick among the near ties stands, t2 or not");
  cr_assert_eq(choice[1], 2, "a win in every resample stands");
  cr_assert_eq(choice[2], 1, "a near tie goes to the defaults' pick");
  /* the solver sees the preferred variant at the point best's cost, the
   * next near tie one step above; the point predictions are kept */
  cr_assert_float_eq(pp.pk[0].cost[2 * NV + 1], 100, 1e-9);
  cr_assert_float_eq(pp.pk[0].cost[2 * NV + 0], 100 * (1 + LM_SETTLE_STEP), 1e-9);
  cr_assert_float_eq(pp.pk[0].point[2 * NV + 1], 101, 1e-9);
  cr_assert_float_eq(pp.pk[0].cost[1 * NV + 2], 20, 1e-9);
  /* settling again changes nothing */
  cr_assert_eq(lm_plan_problem_settle(&pp, 0.9, &e), LM_OK, "%s", e.msg);
  cr_assert_float_eq(pp.pk[0].point[2 * NV + 1], 101, 1e-9);
  cr_assert_float_eq(pp.pk[0].cost[2 * NV + 1], 100, 1e-9);
  /* a t1 near tie the defaults prefer wins over a t2 point best */
  lm_plan_problem_free(&pp);
  hand_problem(&pp, 1);
  pp.pk[0].prior[0 * NV + 2] = 200;
  cr_assert_eq(lm_plan_problem_settle(&pp, LM_SETTLE_ALPHA, &e), LM_OK, "%s", e.msg);
  solve_choices(&pp, choice);
  cr_assert_eq(choice[0], 0, "a t2 win in 7 of 10 resamples is not clear");
  cr_assert_float_eq(pp.pk[0].cost[0 * NV + 0], 80, 1e-9);
  cr_assert_float_eq(pp.pk[0].point[0 * NV + 0], 100, 1e-9);
  /* a stricter share keeps the point best where the resamples agree
   * less often than it asks */
  lm_plan_problem_free(&pp);
  hand_problem(&pp, 1);
  pp.pk[0].prior[0 * NV + 2] = 200;
  cr_assert_eq(lm_plan_problem_settle(&pp, 0.4, &e), LM_OK, "%s", e.msg);
  solve_choices(&pp, choice);
  cr_assert_eq(choice[0], 2, "3 of 10 resamples are below a share of 0.4");
  cr_assert_eq(choice[2], 1, "5 of 10 are not");
  lm_plan_problem_free(&pp);
}

/* The hand problem with its variants' launches (workers, split, K) set to
 * launch[v], settled at the default share and solved. */
static void settle_launches(const lm_variant launch[NV], int *choice) {
  lm_error e = {0};
  lm_plan_problem pp;
  hand_problem(&pp, 1);
  for (int v = 0; v < NV; v++) {
    lm_variant *x = &pp.pk[0].variants[v];
    x->workers = launch[v].workers;
    x->split = launch[v].split;
    x->per_worker = launch[v].per_worker;
  }
  cr_assert_eq(lm_plan_problem_settle(&pp, LM_SETTLE_ALPHA, &e), LM_OK, "%s", e.msg);
  solve_choices(&pp, choice);
  lm_plan_problem_free(&pp);
}

/* A finer schedule must win clearly: near ties go to the fewest chunks per
 * worker before the defaults' pick (bucket 2: variant 0 the point best,
 * variant 1 the near tie the defaults prefer). */
Test(plan, settling_ranks_launches_by_chunks_per_worker) {
  const lm_variant t1 = {.workers = 1},
                   st = {.workers = 2, .split = LM_SPLIT_STATIC},
                   dyn2 = {.workers = 2, .split = LM_SPLIT_DYNAMIC, .per_worker = 2},
                   dyn4 = {.workers = 2, .split = LM_SPLIT_DYNAMIC, .per_worker = 4};
  int choice[NB];
  settle_launches((lm_variant[NV]){st, dyn4, st}, choice);
  cr_assert_eq(choice[2], 0, "static before dyn4, though the defaults prefer dyn4");
  settle_launches((lm_variant[NV]){dyn2, dyn4, st}, choice);
  cr_assert_eq(choice[2], 0, "dyn2 before dyn4, though the defaults prefer dyn4");
  settle_launches((lm_variant[NV]){dyn4, dyn2, st}, choice);
  cr_assert_eq(choice[2], 1, "dyn2 before dyn4, the point best");
  settle_launches((lm_variant[NV]){t1, t1, dyn2}, choice);
  cr_assert_eq(choice[0], 0, "one worker before a dyn2 win in 7 of 10 resamples");
  cr_assert_eq(choice[1], 2, "a dyn2 win in every resample stands");
  cr_assert_eq(choice[2], 1, "between two one-worker near ties, the defaults' pick");
}

Test(plan, settling_is_off_unless_built_for_and_refuses_a_bad_share) {
  lm_error e = {0};
  lm_plan_problem pp;
  hand_problem(&pp, 0);
  cr_assert_eq(lm_plan_problem_settle(&pp, LM_SETTLE_ALPHA, &e), LM_OK);
  cr_assert_eq(pp.p.nscenarios, NSC);
  cr_assert_null(pp.pk[0].point);
  int choice[NB];
  solve_choices(&pp, choice);
  cr_assert_eq(choice[0], 2);
  lm_plan_problem_free(&pp);
  hand_problem(&pp, 1);
  cr_assert_eq(lm_plan_problem_settle(&pp, 0, &e), LM_EINPUT);
  cr_assert(strstr(e.msg, "alpha"), "%s", e.msg);
  cr_assert_eq(lm_plan_problem_settle(&pp, 1.5, &e), LM_EINPUT);
  cr_assert_eq(lm_plan_problem_settle(&pp, NAN, &e), LM_EINPUT);
  lm_plan_problem_free(&pp);
}

static double around_point(int b, int t) {
  (void)t;
  return 0.8 + 0.1 * b;
}

Test(plan, a_settled_plan_keeps_point_predictions_and_says_so) {
  /* the real pipeline: a profile with bootstrap vectors, built for
   * settling, solved, and written as a plan */
  lm_error e = {0};
  lm_workload *w = small(0, -1);
  lm_profile *bp = support_defaults_with_bootstrap(4, around_point);
  const lm_profile *ps[1] = {bp};
  lm_plan_build_opts bo = {0, 1};
  lm_plan_problem pp;
  cr_assert_eq(lm_plan_problem_build(w, ps, &bo, &pp, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(pp.p.nscenarios, 5);
  cr_assert_not_null(pp.pk[0].prior);
  cr_assert_eq(lm_plan_problem_settle(&pp, LM_SETTLE_ALPHA, &e), LM_OK, "%s", e.msg);
  lm_solve_opts o;
  lm_solve_defaults(&o);
  lm_solve_result r;
  cr_assert_eq(lm_solve(&pp.p, &o, &r, &e), LM_OK, "%s", e.msg);
  lm_plan *p = NULL;
  cr_assert_eq(lm_plan_from_result(w, ps, &pp, &o, &r, &p, &e), LM_OK, "%s", e.msg);
  cr_assert(p->settle);
  for (int ki = 0; ki < p->nkernels; ki++)
    for (int b = 0; b < p->kernels[ki].nbuckets; b++) {
      const lm_plan_bucket *pb = &p->kernels[ki].buckets[b];
      int s = 0, nv = pp.pk[ki].nvariants;
      while (pp.pk[ki].order[s] != b)
        s++;
      int v = r.choice[r.bucket_start[ki] + s];
      cr_assert_float_eq(pb->predicted_ns, pp.pk[ki].point[(size_t)s * nv + v],
                         1e-9 * pb->predicted_ns);
    }
  char *text = NULL;
  cr_assert_eq(lm_plan_to_json_text(p, &text, &e), LM_OK);
  cJSON *doc = cJSON_Parse(text);
  cr_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "mode"), "settle")),
            "%s", text);
  cJSON_Delete(doc);
  free(text);
  lm_plan_free(p);
  lm_solve_result_free(&r);
  lm_plan_problem_free(&pp);
  lm_profile_free(bp);
  lm_workload_free(w);
}

/* Knowing when it does not know: a bucket with more than one near tie is
 * unsure and lists them, the preferred first; a sure bucket lists none.
 * The lists survive the JSON round trip, and malformed ones are refused. */
Test(plan, unsure_buckets_list_their_near_ties) {
  lm_error e = {0};
  lm_workload *w = small(0, -1);
  lm_profile *bp = support_defaults_with_bootstrap(4, around_point);
  const lm_profile *ps[1] = {bp};
  lm_plan_build_opts bo = {0, 1};
  lm_plan_problem pp;
  cr_assert_eq(lm_plan_problem_build(w, ps, &bo, &pp, &e), LM_OK, "%s", e.msg);
  /* the rule before settling, to compare with the lists after */
  int nk = pp.p.nkernels, unsure = 0;
  int *ties[8] = {0};
  cr_assert_leq(nk, 8);
  for (int ki = 0; ki < nk; ki++) {
    int nb = pp.k[ki].nbuckets, nv = pp.pk[ki].nvariants;
    ties[ki] = calloc((size_t)nb, sizeof *ties[ki]);
    for (int s = 0; s < nb; s++)
      for (int v = 0; v < nv; v++)
        ties[ki][s] += lm_plan_problem_near_tie(&pp, ki, s, v, LM_SETTLE_ALPHA);
  }
  cr_assert_eq(lm_plan_problem_settle(&pp, LM_SETTLE_ALPHA, &e), LM_OK, "%s", e.msg);
  lm_solve_opts o;
  lm_solve_defaults(&o);
  lm_solve_result r;
  cr_assert_eq(lm_solve(&pp.p, &o, &r, &e), LM_OK, "%s", e.msg);
  lm_plan *p = NULL;
  cr_assert_eq(lm_plan_from_result(w, ps, &pp, &o, &r, &p, &e), LM_OK, "%s", e.msg);
  for (int ki = 0; ki < nk; ki++)
    for (int b = 0; b < p->kernels[ki].nbuckets; b++) {
      const lm_plan_bucket *pb = &p->kernels[ki].buckets[b];
      int s = 0;
      while (pp.pk[ki].order[s] != b)
        s++;
      int n = ties[ki][s];
      cr_expect_eq(pb->nunsure, n > 1 ? n : 0, "kernel %d bucket %d", ki, b);
      if (pb->nunsure > 0) {
        unsure++;
        /* without a cap the bucket runs the preferred one */
        cr_expect_str_eq(pb->unsure[0], p->kernels[ki].variants[pb->variant]);
      }
    }
  cr_expect_gt(unsure, 0, "resamples this wide leave some bucket unsure");
  char *text = NULL;
  cr_assert_eq(lm_plan_to_json_text(p, &text, &e), LM_OK);
  lm_plan *back = NULL;
  cr_assert_eq(lm_plan_from_json_text("p.json", text, strlen(text), &back, &e), LM_OK, "%s",
               e.msg);
  cr_expect(lm_plan_equal(p, back), "the unsure lists round-trip");
  lm_plan_free(back);
  /* malformed lists: one entry, a repeat, not a variant */
  cJSON *doc = cJSON_Parse(text);
  cJSON *bk = cJSON_GetArrayItem(
      cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "kernels"), 0), "buckets"),
      0);
  const char *bad[][3] = {{"x86-64-v4/w16/l16/t1", NULL, NULL},
                          {"host/w16/l16/t1", "host/w16/l16/t1", NULL},
                          {"host/w16/l16/t1", "frobnicate", NULL}};
  const char *why[] = {"unsure", "listed twice", "unsure[1]"};
  for (int i = 0; i < 3; i++) {
    cJSON_DeleteItemFromObject(bk, "unsure");
    cJSON *arr = cJSON_AddArrayToObject(bk, "unsure");
    for (int j = 0; j < 3 && bad[i][j]; j++)
      cJSON_AddItemToArray(arr, cJSON_CreateString(bad[i][j]));
    char *t2 = cJSON_PrintUnformatted(doc);
    lm_plan *q = NULL;
    cr_expect_eq(lm_plan_from_json_text("p.json", t2, strlen(t2), &q, &e), LM_EINPUT,
                 "case %d", i);
    cr_expect(strstr(e.msg, why[i]) != NULL, "case %d: %s", i, e.msg);
    lm_plan_free(q);
    free(t2);
  }
  cJSON_Delete(doc);
  free(text);
  for (int ki = 0; ki < nk; ki++)
    free(ties[ki]);
  lm_plan_free(p);
  lm_solve_result_free(&r);
  lm_plan_problem_free(&pp);
  lm_profile_free(bp);
  lm_workload_free(w);
}
