/* Hostile and careless inputs: files far larger than real ones, names
 * given many times over, commands and paths longer than any buffer.  Each
 * must either load in time linear in its size or be refused naming the
 * real cause, with exit 2 and nothing written.  The tests assert results,
 * never times: a loader that is quadratic again shows up as a test run
 * that takes minutes instead of seconds, not as a flaky failure.  The big
 * inputs are generated here, into the test's temp folder. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/cases.h"
#include "lanemap/heldout.h"
#include "lanemap/plan.h"
#include "lanemap/records.h"
#include "lanemap/workload.h"
/* Not every helper of run.h is used here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "tests/support/run.h"

#define RMSNORM LANEMAP_SOURCE_DIR "/kernels/rmsnorm.lk"
#define V1 "x86-64-v3/w8/l8/phase=reread/t1"
#define V2 "x86-64-v3/w8/l1/priv=slot/glob=transpose/phase=snapshot/t1"
#define BIG 100000

TestSuite(hostile, .init = run_tmp_make, .fini = run_tmp_remove);

static FILE *open_w(const char *path) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f, "cannot write %s", path);
  return f;
}

/* A case list of n cases of rmsnorm, ids c0, c1, ...; with dup >= 0 the
 * last case takes the id of case dup. */
static char *write_cases(int n, int dup) {
  char *path = run_tmp("cases.json");
  FILE *f = open_w(path);
  fprintf(f, "{\"schema\": \"lanemap.suite/1\", \"cases\": [\n");
  for (int i = 0; i < n; i++)
    fprintf(f, "%s{\"id\": \"c%d\", \"kernel\": \"%s\", \"shape\": [%d, 64]}\n",
            i ? "," : "", i == n - 1 && dup >= 0 ? dup : i, RMSNORM,
            1 + i % 1000);
  fprintf(f, "]}\n");
  fclose(f);
  return path;
}

Test(hostile, a_case_list_of_100000_cases_lists_every_case) {
  char *path = write_cases(BIG, -1);
  run_result r = RUN("evaluate", "--cases", path, "--list");
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect_eq(run_count_lines(r.out, "rmsnorm.lk"), BIG);
  cr_expect(strstr(r.out, "c99999 1000x64") != NULL);
  run_free(&r);
}

Test(hostile, an_id_given_twice_among_100000_cases_is_refused_naming_both) {
  char *path = write_cases(BIG, 7);
  run_result r = RUN("evaluate", "--cases", path, "--list");
  cr_expect_eq(r.code, 2, "%s", r.err);
  cr_expect(strstr(r.err, "$.cases[99999].id: \"c7\" is also the id of "
                          "cases[7]") != NULL,
            "%s", r.err);
  cr_expect_eq(r.out[0], 0, "%s", r.out);
  run_free(&r);
}

/* A plan of one kernel (rmsnorm, of the right hash) whose variants are
 * the n texts of variant(i), and one bucket. */
static char *write_plan(int n, const char *(*variant)(int)) {
  char hash[17], *path = run_tmp("plan.json");
  lm_error err = {0};
  cr_assert_eq(lm_file_hash(RMSNORM, hash, &err), LM_OK, "%s", err.msg);
  FILE *f = open_w(path);
  fprintf(f,
          "{\"schema\": \"lanemap.plan/1\", \"workload\": \"w.json\",\n"
          " \"profiles\": [{\"isa\": \"x86-64-v3\", \"fingerprint\": "
          "\"0123456789abcdef\", \"mode\": \"quick\"}],\n"
          " \"mode\": {\"threshold\": false, \"robust\": false, "
          "\"scenarios\": 1},\n"
          " \"solver\": {\"status\": \"optimal\", \"objective_ns\": 1, "
          "\"greedy_objective_ns\": 1, \"bound_ns\": 1, \"gap\": 0, "
          "\"time_s\": 0, \"compile_total_ms\": 1, \"nodes\": 0, "
          "\"mip_solves\": 1, \"pruned\": 0},\n"
          " \"kernels\": [{\"name\": \"rmsnorm\", \"path\": \"%s\", "
          "\"hash\": \"%s\", \"variants\": [\n",
          RMSNORM, hash);
  for (int i = 0; i < n; i++)
    fprintf(f, "%s\"%s\"\n", i ? "," : "", variant(i));
  fprintf(f, "], \"buckets\": [{\"R\": 8, \"C\": 512, \"weight\": 1, "
             "\"variant\": 0, \"predicted_ns\": 1}]}]}\n");
  fclose(f);
  return path;
}

static const char *same_variant(int i) {
  (void)i;
  return V1;
}

Test(hostile, a_plan_with_100000_copies_of_one_variant_is_refused_naming_both) {
  char *path = write_plan(BIG, same_variant);
  run_result r = RUN("compile", "--plan", path);
  cr_expect_eq(r.code, 2, "%s", r.err);
  cr_expect(strstr(r.err, "$.kernels[0].variants[1]: duplicate variant '" V1
                          "' (also at $.kernels[0].variants[0])") != NULL,
            "%s", r.err);
  cr_expect_eq(r.out[0], 0, "%s", r.out);
  run_free(&r);
}

static const char *alias_last(int i) {
  return i == 0 ? V1 : i == 1 ? V2 : "avx2/w8/l8/phase=reread/t1";
}

Test(hostile, a_variant_spelt_another_way_is_the_same_variant_in_a_plan) {
  lm_plan *p = NULL;
  lm_error err = {0};
  char *path = write_plan(3, alias_last);
  cr_expect_eq(lm_plan_load(path, &p, NULL, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "$.kernels[0].variants[2]: duplicate variant "
                            "'avx2/w8/l8/phase=reread/t1' (also at "
                            "$.kernels[0].variants[0])") != NULL,
            "%s", err.msg);
  lm_plan_free(p);
}

/* ---- messages longer than the error record -------------------------- */

Test(hostile, a_message_longer_than_the_record_keeps_its_end) {
  enum { LONG = 6000 };
  char *path = malloc(LONG + 1);
  memset(path, 'p', LONG);
  path[LONG] = 0;
  lm_error err = {0};
  lm_error_set(&err, LM_EINPUT, "%s: cannot open: No such file or directory",
               path);
  size_t len = strlen(err.msg), full = LONG + strlen(": cannot open: No such "
                                                     "file or directory");
  cr_expect_eq(len, sizeof err.msg - 1);
  cr_expect_eq(err.status, LM_EINPUT);
  const char *end = ": cannot open: No such file or directory";
  cr_expect_str_eq(err.msg + len - strlen(end), end);
  cr_expect_eq(strncmp(err.msg, "pppp", 4), 0);
  size_t cut = 0;
  const char *mark = strstr(err.msg, "...[");
  cr_assert_not_null(mark, "%s", err.msg);
  cr_assert_eq(sscanf(mark, "...[%zu bytes cut]...", &cut), 1);
  char text[64];
  int m = snprintf(text, sizeof text, "...[%zu bytes cut]...", cut);
  cr_expect_eq(full - cut + (size_t)m, len,
               "the kept bytes and the cut add up");
  /* a message that fits is kept whole, also when it quotes the record */
  lm_error_set(&err, LM_EFAIL, "short");
  lm_error_set(&err, LM_EINPUT, "again: %s", err.msg);
  cr_expect_str_eq(err.msg, "again: short");
  free(path);
}

Test(hostile, a_plan_path_of_6000_characters_is_refused_with_the_reason) {
  enum { LONG = 6000 };
  char *path = malloc(LONG + 1);
  size_t n = (size_t)snprintf(path, LONG + 1, "%s/", run_tmpdir);
  for (; n < LONG; n++)
    path[n] = n % 100 == 0 ? '/' : 'd';
  path[LONG] = 0;
  run_result r = RUN("compile", "--plan", path);
  cr_expect_eq(r.code, 2, "%s", r.err);
  cr_expect(strstr(r.err, "bytes cut]") != NULL, "%s", r.err);
  cr_expect(strstr(r.err, ": cannot open: File name too long\n") != NULL ||
                strstr(r.err, ": cannot open: No such file or directory\n") !=
                    NULL,
            "the reason survives: %s", r.err);
  run_free(&r);
  free(path);
}

/* ---- records import --------------------------------------------------- */

/* A hyperfine export of one result whose command is `lanemap bench
 * RMSNORM --shape 8,512`, then `words` filler words, then tail. */
static char *write_hyperfine(int words, const char *tail) {
  char *path = run_tmp("hf.json");
  FILE *f = open_w(path);
  fprintf(f, "{\"results\": [{\"command\": \"lanemap bench %s --shape 8,512",
          RMSNORM);
  for (int i = 0; i < words; i++)
    fprintf(f, " --quiet-option-%d=1", i);
  fprintf(f, " %s\", \"mean\": 0.01, \"times\": [0.01]}]}\n", tail);
  fclose(f);
  return path;
}

/* Imports a hyperfine command of `words` words that ends in `tail`, with
 * --variant V1 on the command line, and expects one record of V2. */
static void expect_import_keeps_v2(int words, const char *tail) {
  char *hf = write_hyperfine(words, tail), *out = run_tmp("r.jsonl");
  run_result r = RUN("records", "import", hf, "--variant", V1, "-o", out);
  cr_assert_eq(r.code, 0, "%s", r.err);
  run_free(&r);
  lm_records rs = {0};
  lm_error err = {0};
  cr_assert_eq(lm_records_read(out, &rs, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(rs.n, 1);
  cr_expect_str_eq(rs.r[0].variant, V2, "the command's variant, not --variant");
  lm_records_free(&rs);
}

Test(hostile, a_hyperfine_command_of_300_words_keeps_its_last_variant) {
  expect_import_keeps_v2(300, "--variant " V2);
}

Test(hostile, a_hyperfine_command_of_100000_words_is_read_whole) {
  expect_import_keeps_v2(BIG, "--variant=" V2);
}

Test(hostile, an_unmappable_long_command_is_refused_with_its_reason) {
  char *hf = write_hyperfine(2000, ""), *out = run_tmp("r.jsonl");
  run_result r = RUN("records", "import", hf, "-o", out);
  cr_expect_eq(r.code, 2, "%s", r.err);
  cr_expect(strstr(r.err, "it names no variant (--variant V)") != NULL, "%s",
            r.err);
  cr_expect(!run_exists(out), "nothing written");
  run_free(&r);
}

/* ---- held-out records and workloads ---------------------------------- */

Test(hostile, records_of_100000_cases_rebuild_100000_cases) {
  lm_records rs = {0};
  rs.r = calloc(BIG, sizeof *rs.r);
  cr_assert_not_null(rs.r);
  for (int i = 0; i < BIG; i++) {
    lm_record *r = &rs.r[i];
    char id[32];
    lm_record_init(r);
    snprintf(id, sizeof id, "c%d", i);
    r->kernel = strdup("rmsnorm.lk");
    r->kernel_hash = strdup("0123456789abcdef");
    r->variant = strdup(V1);
    r->isa = strdup("x86-64-v3");
    r->R = 1 + i % 1000;
    r->C = 64;
    r->median = 1e-6;
    r->extra = cJSON_CreateObject();
    cJSON_AddStringToObject(r->extra, "case", id);
    cJSON_AddNumberToObject(r->extra, "case_variant", 0);
    cJSON_AddNumberToObject(r->extra, "case_variants", 1);
    rs.n++;
  }
  lm_eval_case *cs = NULL;
  int n = 0, incomplete = -1;
  lm_error err = {0};
  cr_assert_eq(lm_eval_cases_from_records(&rs, &cs, &n, &incomplete, &err),
               LM_OK, "%s", err.msg);
  cr_expect_eq(n, BIG);
  cr_expect_eq(incomplete, 0);
  cr_expect_str_eq(cs[BIG - 1].id, "c99999");
  for (int i = 0; i < n; i++)
    lm_eval_case_free(&cs[i]);
  free(cs);
  lm_records_free(&rs);
}

Test(hostile, a_workload_of_100000_kernels_is_built_by_doubling) {
  lm_error err = {0};
  lm_workload *w = lm_workload_new("w.json", ".", &err);
  cr_assert_not_null(w, "%s", err.msg);
  for (int i = 0; i < BIG; i++) {
    int ki = -1;
    cr_assert_eq(lm_workload_add_kernel(w, "k.lk", NULL, &ki, &err), LM_OK,
                 "%s", err.msg);
    cr_assert_eq(ki, i);
    cr_assert_eq(lm_workload_add_bucket(w, ki, 1 + i % 7, 64, 1, &err), LM_OK,
                 "%s", err.msg);
  }
  cr_expect_eq(w->nkernels, BIG);
  cr_expect_eq(w->kernels[BIG - 1].nbuckets, 1);
  for (int b = 0; b < 4095; b++)
    cr_assert_eq(lm_workload_add_bucket(w, 0, 100 + b, 64, 1, &err), LM_OK,
                 "%s", err.msg);
  cr_expect_eq(w->kernels[0].nbuckets, 4096, "the limit of one kernel");
  cr_expect_eq(lm_workload_add_bucket(w, 0, 99999, 64, 1, &err), LM_EINPUT);
  lm_workload_free(w);
}
