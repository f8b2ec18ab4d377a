/* Claims about workload files and the builder: the examples load and bind,
 * the three bucket forms expand as documented, the JSON written parses
 * back to an equal workload, and every malformed field is LM_EINPUT with
 * the field's JSON path in the message. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/workload.h"

#define SRC LANEMAP_SOURCE_DIR

static lm_status parse(const char *text, lm_workload **w, lm_error *e) {
  return lm_workload_from_json_text("t.json", SRC "/kernels", text, strlen(text), w, e);
}

Test(workload, examples_load_and_bind) {
  const char *files[] = {SRC "/solver/examples/tiny.json",
                         SRC "/solver/examples/transformer.json"};
  int nk[] = {2, 6}, nb[] = {5, 96};
  for (int i = 0; i < 2; i++) {
    lm_workload *w = NULL;
    lm_error e = {0};
    cr_assert_eq(lm_workload_load(files[i], &w, &e), LM_OK, "%s", e.msg);
    cr_assert_eq(w->nkernels, nk[i]);
    int n = 0;
    for (int k = 0; k < w->nkernels; k++) {
      cr_assert_not_null(w->kernels[k].k);
      n += w->kernels[k].nbuckets;
    }
    cr_assert_eq(n, nb[i]);
    lm_workload_free(w);
  }
}

Test(workload, bucket_forms_expand) {
  const char *t =
      "{\"schema\":\"lanemap.workload/1\",\"isa\":[\"avx2\",\"host\"],\"workers\":[1,2],"
      "\"fp\":\"relaxed\",\"max_variants_per_kernel\":2,\"compile_budget_variants\":5,"
      "\"kernels\":[{\"kernel\":\"rmsnorm.lk\",\"compile_ms\":12.5,\"max_variants\":1,"
      "\"buckets\":[{\"R\":3,\"C\":64,\"weight\":2},"
      "{\"C\":128,\"R\":[1,5],\"weights\":[7,8]},"
      "{\"C\":256,\"R\":{\"from\":1,\"to\":64,\"geometric\":4},\"weights\":0.5}]}]}";
  lm_workload *w = NULL;
  lm_error e = {0};
  cr_assert_eq(parse(t, &w, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(w->nisa, 2);
  cr_assert_eq(w->isa[0], LM_ISA_AVX2);
  cr_assert_eq(w->nworkers, 2);
  cr_assert_eq(w->fp, LM_FP_RELAXED);
  cr_assert_eq(w->compile_budget_variants, 5);
  cr_assert(w->compile_budget_ms < 0);
  const lm_workload_kernel *k = &w->kernels[0];
  cr_assert_eq(k->nbuckets, 7);
  cr_assert_eq(k->max_variants, 1);
  cr_assert_float_eq(k->compile_ms, 12.5, 0);
  int64_t R[] = {3, 1, 5, 1, 4, 16, 64}, C[] = {64, 128, 128, 256, 256, 256, 256};
  double W[] = {2, 7, 8, 0.5, 0.5, 0.5, 0.5};
  for (int b = 0; b < 7; b++) {
    cr_assert_eq(k->buckets[b].R, R[b], "bucket %d R %lld", b, (long long)k->buckets[b].R);
    cr_assert_eq(k->buckets[b].C, C[b]);
    cr_assert_float_eq(k->buckets[b].weight, W[b], 0);
  }
  /* written JSON parses to an equal workload */
  char *text = NULL;
  cr_assert_eq(lm_workload_to_json_text(w, &text, &e), LM_OK);
  lm_workload *again = NULL;
  cr_assert_eq(parse(text, &again, &e), LM_OK, "%s\n%s", e.msg, text);
  cr_assert(lm_workload_equal(w, again));
  cr_assert_eq(lm_workload_bind(again, &e), LM_OK, "%s", e.msg);
  free(text);
  lm_workload_free(again);
  lm_workload_free(w);
}

Test(workload, builder_matches_the_file_form) {
  lm_error e = {0};
  lm_workload *w = lm_workload_new(NULL, SRC "/kernels", &e);
  cr_assert_not_null(w);
  int ki = -1;
  cr_assert_eq(lm_workload_add_kernel(w, "rope.lk", "H=8", &ki, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(ki, 0);
  cr_assert_eq(lm_workload_add_bucket(w, 0, 4, 16, 1.5, &e), LM_OK);
  double ws[3] = {3, 2, 1};
  cr_assert_eq(lm_workload_add_geometric(w, 0, 16, 8, 128, 3, ws, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(w->kernels[0].nbuckets, 4);
  cr_assert_eq(w->kernels[0].buckets[2].R, 32);
  cr_assert_eq(lm_workload_set_budgets(w, 2, 100, -1, &e), LM_OK);
  /* the builder's checks */
  cr_assert_eq(lm_workload_add_bucket(w, 0, 4, 16, 1, &e), LM_EINPUT);
  cr_assert(strstr(e.msg, "repeats bucket 0"), "%s", e.msg);
  cr_assert_eq(lm_workload_add_bucket(w, 1, 4, 16, 1, &e), LM_EINPUT);
  cr_assert_eq(lm_workload_add_bucket(w, 0, 0, 16, 1, &e), LM_EINPUT);
  cr_assert_eq(lm_workload_add_bucket(w, 0, 5, 16, -1, &e), LM_EINPUT);
  cr_assert_eq(lm_workload_add_bucket(w, 0, 5, 16, NAN, &e), LM_EINPUT);
  cr_assert_eq(lm_workload_add_geometric(w, 0, 16, 1, 4, 8, NULL, &e), LM_EINPUT);
  cr_assert(strstr(e.msg, "repeat R="), "%s", e.msg);
  cr_assert_eq(lm_workload_set_budgets(w, 0, 10, 3, &e), LM_EINPUT);
  int wk[2] = {2, 2};
  cr_assert_eq(lm_workload_set_workers(w, wk, 2, &e), LM_EINPUT);
  lm_isa is[2] = {LM_ISA_HOST, LM_ISA_HOST};
  cr_assert_eq(lm_workload_set_isas(w, is, 2, &e), LM_EINPUT);
  cr_assert_eq(lm_workload_add_kernel(w, "x.lk", "H=", NULL, &e), LM_EINPUT);
  cr_assert_eq(lm_workload_bind(w, &e), LM_OK, "%s", e.msg);
  lm_shape sh;
  cr_assert_eq(lm_workload_shape(w, 0, 0, &sh, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(sh.dims[0], 4);
  lm_workload_free(w);
}

/* One malformed field per case, and the path the message must name. */
static const struct {
  const char *json, *want;
} bad[] = {
    {"[]", "expected a JSON object"},
    {"{\"schema\":\"lanemap.workload/1\"", "truncated JSON"},
    {"{\"kernels\":[]}", "schema: missing field, expected"},
    {"{\"schema\":\"lanemap.workload/2\",\"kernels\":[]}", "schema: expected"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[],\"budget\":1}", "unknown field \"budget\""},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[]}", "$.kernels: expected a non-empty array, got an array of 0 elements"},
    {"{\"schema\":\"lanemap.workload/1\",\"isa\":\"host\",\"kernels\":[]}", "$.isa: expected an array of 1 to 8 elements, got \"host\""},
    {"{\"schema\":\"lanemap.workload/1\",\"isa\":[\"z80\"],\"kernels\":[]}", "isa[0]:"},
    {"{\"schema\":\"lanemap.workload/1\",\"isa\":[\"host\",\"host\"],\"kernels\":[]}", "isa[1]: host repeats"},
    {"{\"schema\":\"lanemap.workload/1\",\"isa\":[3],\"kernels\":[]}", "isa[0]: expected a target"},
    {"{\"schema\":\"lanemap.workload/1\",\"fp\":\"fast\",\"kernels\":[]}", "$.fp: expected \"strict\" or \"relaxed\", got \"fast\""},
    {"{\"schema\":\"lanemap.workload/1\",\"fp\":1,\"kernels\":[]}", "$.fp: expected a non-empty string"},
    {"{\"schema\":\"lanemap.workload/1\",\"workers\":[0],\"kernels\":[]}", "workers[0]: expected an integer"},
    {"{\"schema\":\"lanemap.workload/1\",\"workers\":[1,1.5],\"kernels\":[]}", "workers[1]: expected an integer"},
    {"{\"schema\":\"lanemap.workload/1\",\"workers\":[],\"kernels\":[]}", "$.workers: expected an array of 1 to 8 elements"},
    {"{\"schema\":\"lanemap.workload/1\",\"max_variants_per_kernel\":-1,\"kernels\":[]}", "max_variants_per_kernel: expected"},
    {"{\"schema\":\"lanemap.workload/1\",\"compile_budget_ms\":-5,\"kernels\":[]}", "compile_budget_ms: expected"},
    {"{\"schema\":\"lanemap.workload/1\",\"compile_budget_variants\":2.5,\"kernels\":[]}", "compile_budget_variants: expected"},
    {"{\"schema\":\"lanemap.workload/1\",\"compile_budget_ms\":5,\"compile_budget_variants\":2,\"kernels\":[]}", "not both"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[3]}", "kernels[0]: expected an object"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"buckets\":[]}]}", "$.kernels[0].kernel: missing field, expected a non-empty string"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"bukets\":[]}]}", "kernels[0]: unknown field \"bukets\""},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"extra\":4,\"buckets\":[]}]}", "$.kernels[0].extra: expected a non-empty string, got 4"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"extra\":\"H\",\"buckets\":[]}]}", "kernels[0]: extra: expected symbols"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"max_variants\":\"2\",\"buckets\":[]}]}", "kernels[0].max_variants: expected"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"compile_ms\":-1,\"buckets\":[]}]}", "kernels[0].compile_ms: expected"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[]}]}", "$.kernels[0].buckets: expected a non-empty array"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[1]}]}", "kernels[0].buckets[0]: expected an object"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":1,\"C\":2,\"weight\":1,\"w\":1}]}]}", "kernels[0].buckets[0]: unknown field \"w\""},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":1,\"weight\":1}]}]}", "$.kernels[0].buckets[0].C: missing field, expected an integer from 1 to 2^40"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"C\":2,\"weight\":1}]}]}", "kernels[0].buckets[0].R: missing"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":0,\"C\":2,\"weight\":1}]}]}", "kernels[0].buckets[0].R: expected an integer"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":\"8\",\"C\":2,\"weights\":1}]}]}", "kernels[0].buckets[0].R: expected an integer, a list"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":1,\"C\":2}]}]}", "$.kernels[0].buckets[0].weight: missing field, expected a finite number >= 0"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":1,\"C\":2,\"weight\":-1}]}]}", "kernels[0].buckets[0].weight: expected a finite number >= 0"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":1,\"C\":2,\"weights\":[1]}]}]}", "kernels[0].buckets[0].weights: a single-R bucket"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":1,\"C\":2,\"weight\":1},{\"R\":1,\"C\":2,\"weight\":2}]}]}", "kernels[0].buckets[1]: shape (R=1, C=2) repeats bucket 0"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":[1,2],\"C\":2,\"weight\":1}]}]}", "kernels[0].buckets[0].weight: a bucket group takes"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":[1,2],\"C\":2}]}]}", "kernels[0].buckets[0].weights: missing"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":[1,2],\"C\":2,\"weights\":[1]}]}]}", "kernels[0].buckets[0].weights: expected a list of 2"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":[1,2],\"C\":2,\"weights\":[1,null]}]}]}", "kernels[0].buckets[0].weights[1]: expected a finite"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":[1,2],\"C\":2,\"weights\":-1}]}]}", "kernels[0].buckets[0].weights: expected a finite"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":[1,-2],\"C\":2,\"weights\":1}]}]}", "kernels[0].buckets[0].R[1]: expected an integer"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":[],\"C\":2,\"weights\":1}]}]}", "$.kernels[0].buckets[0].R: expected an array of 1 to 4096 elements, got an array of 0 elements"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":[4,4],\"C\":2,\"weights\":1}]}]}", "kernels[0].buckets[0].R[1]: shape (R=4, C=2) repeats"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":{\"from\":1,\"to\":8},\"C\":2,\"weights\":1}]}]}", "$.kernels[0].buckets[0].R.geometric: missing field, expected an integer from 2 to 4096"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":{\"from\":0,\"to\":8,\"geometric\":2},\"C\":2,\"weights\":1}]}]}", "kernels[0].buckets[0].R.from: expected"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":{\"from\":9,\"to\":8,\"geometric\":2},\"C\":2,\"weights\":1}]}]}", "kernels[0].buckets[0].R.to: expected"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":{\"from\":1,\"to\":8,\"geometric\":2,\"step\":2},\"C\":2,\"weights\":1}]}]}", "kernels[0].buckets[0].R: unknown field \"step\""},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":{\"from\":1,\"to\":3,\"geometric\":9},\"C\":2,\"weights\":1}]}]}", "kernels[0].buckets[0]: R: 9 geometric steps from 1 to 3 repeat"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":{\"from\":1,\"to\":8,\"geometric\":2},\"C\":2,\"weights\":[1,2,3]}]}]}", "kernels[0].buckets[0].weights: expected a list of 2"},
    {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"a.lk\",\"buckets\":[{\"R\":1,\"C\":2,\"weight\":1}]},"
     "{\"kernel\":\"b.lk\",\"buckets\":[{\"R\":1,\"C\":1e300,\"weight\":1}]}]}", "kernels[1].buckets[0].C: expected an integer"},
};

Test(workload, every_bad_field_is_named) {
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    lm_workload *w = NULL;
    lm_error e = {0};
    cr_expect_eq(parse(bad[i].json, &w, &e), LM_EINPUT, "case %zu accepted: %s", i,
                 bad[i].json);
    cr_expect_null(w);
    cr_expect(strstr(e.msg, bad[i].want) != NULL, "case %zu: want \"%s\" in \"%s\"", i,
              bad[i].want, e.msg);
    cr_expect(strncmp(e.msg, "t.json: ", 8) == 0, "case %zu: no file name: %s", i, e.msg);
  }
}

/* Kernel files and shapes are checked when the workload binds. */
Test(workload, bind_names_missing_kernels_and_bad_shapes) {
  const char *cases[][2] = {
      {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"rmsnorm.lk\","
       "\"buckets\":[{\"R\":1,\"C\":8,\"weight\":1}]},{\"kernel\":\"nope.lk\","
       "\"buckets\":[{\"R\":1,\"C\":8,\"weight\":1}]}]}",
       "t.json: $.kernels[1].kernel: "},
      {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"rope.lk\","
       "\"extra\":\"H=4\",\"buckets\":[{\"R\":1,\"C\":8,\"weight\":1},"
       "{\"R\":2,\"C\":9,\"weight\":1}]}]}",
       "t.json: $.kernels[0].buckets[1]: "},
      {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"rmsnorm.lk\","
       "\"extra\":\"Q=3\",\"buckets\":[{\"R\":1,\"C\":8,\"weight\":1}]}]}",
       "t.json: $.kernels[0].buckets[0]: "},
      /* the same kernel twice: its compiled entries would clash by name */
      {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"rmsnorm.lk\","
       "\"buckets\":[{\"R\":1,\"C\":8,\"weight\":1}]},{\"kernel\":\"./rmsnorm.lk\","
       "\"buckets\":[{\"R\":4,\"C\":8,\"weight\":1}]}]}",
       "t.json: $.kernels[1].kernel: ./rmsnorm.lk holds kernel rmsnorm, as kernels[0]"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lm_workload *w = NULL;
    lm_error e = {0};
    cr_assert_eq(parse(cases[i][0], &w, &e), LM_OK, "%s", e.msg);
    cr_expect_neq(lm_workload_bind(w, &e), LM_OK, "case %zu bound", i);
    cr_expect(strstr(e.msg, cases[i][1]) != NULL, "case %zu: %s", i, e.msg);
    lm_workload_free(w);
  }
  lm_workload *w = NULL;
  lm_error e = {0};
  cr_expect_neq(lm_workload_load(SRC "/solver/examples/missing.json", &w, &e), LM_OK);
  cr_expect_null(w);
}
