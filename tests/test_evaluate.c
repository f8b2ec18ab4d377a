/* Claims about `lanemap evaluate`, the main job, on a tiny case list with the
 * uncalibrated default profile (so no test calibrates): it writes a report,
 * plots and records; it resumes from its records, re-measuring only cases
 * whose records are incomplete; sharded runs merge into the unsharded set;
 * and bad options exit 2 with a message. */
#include "tests/support/run.h"

#include <cjson/cJSON.h>

#include <limits.h>
#include <math.h>
#include <stdlib.h>

#include "lanemap/calibrate.h"
#include "lanemap/heldout.h"
#include "lanemap/plan.h"
#include "lanemap/runtime.h"
#include "lanemap/profile.h"
#include "lanemap/workload.h"

#define CASES LANEMAP_SOURCE_DIR "/tests/fixtures/eval/cases.json"

TestSuite(evaluate, .init = run_tmp_make, .fini = run_tmp_remove,
          .timeout = 900);

/* The default profile of the host target, saved as a file. */
static const char *default_profile(void) {
  static char path[700];
  lm_profile *p = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_profile_default(LM_ISA_HOST, &p, &err), LM_OK, "%s", err.msg);
  snprintf(path, sizeof path, "%s", run_tmp("profile.json"));
  cr_assert_eq(lm_profile_save(p, path, &err), LM_OK, "%s", err.msg);
  lm_profile_free(p);
  return path;
}

static run_result evaluate(const char *out, const char *extra) {
  const char *prof = default_profile();
  if (extra)
    return RUN("evaluate", "--quick", "--cases", CASES, "--isa", "host",
               "--profile", prof, "--out", out, extra);
  return RUN("evaluate", "--quick", "--cases", CASES, "--isa", "host",
             "--profile", prof, "--out", out);
}

/* The same with two extra arguments (an option and its value). */
static run_result evaluate2(const char *out, const char *opt, const char *val) {
  const char *prof = default_profile();
  return RUN("evaluate", "--quick", "--cases", CASES, "--isa", "host",
             "--profile", prof, "--out", out, opt, val);
}

static int strcmp_ptr(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The (case, variant) keys of a records file, sorted, one per line. */
static char *record_keys(const char *path) {
  char *text = run_slurp(path);
  char **keys = NULL;
  int n = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    cJSON *j = cJSON_Parse(line);
    cr_assert_not_null(j, "%s: bad line %s", path, line);
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(j, "case"));
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItem(j, "variant"));
    cr_assert(id && v, "%s: %s", path, line);
    keys = realloc(keys, sizeof *keys * (size_t)(n + 1));
    keys[n] = malloc(strlen(id) + strlen(v) + 2);
    sprintf(keys[n++], "%s %s", id, v);
    cJSON_Delete(j);
  }
  qsort(keys, (size_t)n, sizeof *keys, strcmp_ptr);
  size_t len = 1;
  for (int i = 0; i < n; i++)
    len += strlen(keys[i]) + 1;
  char *all = calloc(1, len);
  for (int i = 0; i < n; i++)
    if (i == 0 || strcmp(keys[i], keys[i - 1]) != 0)
      strcat(strcat(all, keys[i]), "\n");
  for (int i = 0; i < n; i++)
    free(keys[i]);
  free(keys);
  free(text);
  return all;
}

Test(evaluate, writes_the_report_records_and_summary) {
  char out[600];
  snprintf(out, sizeof out, "%s", run_tmp("out"));
  run_result r = evaluate(out, NULL);
  cr_assert_eq(r.code, 0, "stdout: %s\nstderr: %s", r.out, r.err);
  cr_expect(strstr(r.out, "evaluate  host") != NULL, "%s", r.out);
  cr_expect(strstr(r.out, "plan") && strstr(r.out, "always-program") &&
                strstr(r.out, "inductor-like"),
            "%s", r.out);
  cr_expect(strstr(r.out, "plan 95% intervals (bootstrap over timing rounds)"),
            "%s", r.out);
  cr_expect(strstr(r.out, "verdicts: "), "%s", r.out);
  /* the last line says whether the run was quiet (which it cannot
   * control, so either) */
  size_t len = strlen(r.out);
  cr_assert_gt(len, 1);
  const char *last = r.out + len - 1;
  while (last > r.out && last[-1] != '\n')
    last--;
  cr_expect(strncmp(last, "quiet: ", 7) == 0 ||
                strncmp(last, "noisy: ", 7) == 0,
            "last line: %s", last);
  char path[700];
  snprintf(path, sizeof path, "%s/report.md", out);
  cr_expect(run_exists(path), "%s missing", path);
  /* the participants' skew before and after measuring, on the terminal
   * and in the report, wherever the shared pool has a thread */
  const char *cores = strstr(r.out, "cores     participants' skew ");
  char *summary = run_slurp(path);
  cr_assert_not_null(summary);
  if (lm_pool_threads(lm_pool_shared()) > 0) {
    double before = -1, after = -1;
    cr_assert_not_null(cores, "%s", r.out);
    cr_expect_eq(sscanf(cores, "cores     participants' skew %lf before measuring, %lf after",
                        &before, &after),
                 2, "%s", cores);
    cr_expect(before >= 0 && after >= 0, "skew %g, %g", before, after);
    cr_expect(strstr(summary, "The participants' skew"), "%s", summary);
  }
  free(summary);
  snprintf(path, sizeof path, "%s/host/report.md", out);
  cr_expect(run_exists(path), "%s missing", path);
  snprintf(path, sizeof path, "%s/host/records.jsonl", out);
  char *keys = record_keys(path);
  /* 3 cases, every legal variant of each */
  int lines = run_count_lines(keys, " x86-64") + run_count_lines(keys, " host");
  cr_expect_gt(lines, 3 * 4, "%s", keys);
  /* geglu calls erf, which three providers have (sleef-u10, mvec, ir);
   * sqrelu_scale calls no vector math */
  cr_expect_eq(run_count_lines(keys, "geglu-3x11 "),
               3 * run_count_lines(keys, "sqrelu_scale-1x17 "), "%s", keys);
  cr_expect_eq(run_count_lines(keys, "math=ir/"),
               run_count_lines(keys, "sqrelu_scale-1x17 "), "%s", keys);
  free(keys);
  run_free(&r);
}

Test(evaluate, resumes_finished_cases_and_remeasures_incomplete_ones) {
  char out[600];
  snprintf(out, sizeof out, "%s", run_tmp("out"));
  run_result r = evaluate(out, NULL);
  cr_assert_eq(r.code, 0, "%s", r.err);
  run_free(&r);
  char records[700];
  snprintf(records, sizeof records, "%s/host/records.jsonl", out);
  char *before = record_keys(records);

  r = evaluate(out, NULL);
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "resume    host       3 of 3 cases") != NULL, "%s",
            r.out);
  cr_expect(strstr(r.out, "0 measured now") != NULL, "%s", r.out);
  run_free(&r);

  /* Cut the file inside the last case, mid-line, as a kill would. */
  char *text = run_slurp(records);
  size_t len = strlen(text);
  char *cut = text + len - 1;
  for (int nl = 0; cut > text && nl < 3; cut--)
    nl += *cut == '\n';
  cut[12] = 0; /* keep 10 bytes of a line, no newline */
  FILE *f = fopen(records, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
  free(text);

  r = evaluate(out, NULL);
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "resume    host       2 of 3 cases") != NULL, "%s",
            r.out);
  cr_expect(strstr(r.out, "1 measured now") != NULL, "%s", r.out);
  run_free(&r);
  char *after = record_keys(records);
  cr_expect_str_eq(after, before);
  /* the re-measured case replaced its partial records: no key twice */
  char *text2 = run_slurp(records);
  cr_expect_eq(run_count_lines(text2, "\"schema\""),
               run_count_lines(after, " "), "%s", text2);
  free(text2);
  free(before);
  free(after);

  /* another seed is another measurement: nothing is reused */
  r = evaluate(out, "--seed=7");
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "3 measured now") != NULL, "%s", r.out);
  run_free(&r);

  r = evaluate(out, "--fresh");
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "3 measured now") != NULL, "%s", r.out);
  run_free(&r);
}

Test(evaluate, sharded_runs_merge_into_the_unsharded_records) {
  char all[600], s0[600], s1[600], merged[600];
  snprintf(all, sizeof all, "%s", run_tmp("all"));
  snprintf(s0, sizeof s0, "%s", run_tmp("s0"));
  snprintf(s1, sizeof s1, "%s", run_tmp("s1"));
  snprintf(merged, sizeof merged, "%s", run_tmp("merged"));
  run_result r = evaluate(all, NULL);
  cr_assert_eq(r.code, 0, "%s", r.err);
  run_free(&r);
  r = evaluate(s0, "--shard=0/2");
  cr_assert_eq(r.code, 0, "%s", r.err);
  run_free(&r);
  r = evaluate(s1, "--shard=1/2");
  cr_assert_eq(r.code, 0, "%s", r.err);
  run_free(&r);
  char d0[700], d1[700], p[700];
  snprintf(d0, sizeof d0, "%s/host", s0);
  snprintf(d1, sizeof d1, "%s/host", s1);
  r = RUN("merge", "-o", merged, d0, d1);
  cr_assert_eq(r.code, 0, "%s", r.err);
  run_free(&r);
  snprintf(p, sizeof p, "%s/host/records.jsonl", all);
  char *want = record_keys(p);
  snprintf(p, sizeof p, "%s/records.jsonl", merged);
  char *got = record_keys(p);
  cr_expect_str_eq(got, want);
  free(want);
  free(got);
}

/* Replace every occurrence of from by to in the file (same length or not). */
static void rewrite(const char *path, const char *from, const char *to) {
  char *text = run_slurp(path);
  size_t nf = strlen(from), nt = strlen(to), n = 0;
  for (const char *p = text; (p = strstr(p, from)); p += nf)
    n++;
  char *out = malloc(strlen(text) + n * (nt > nf ? nt - nf : 0) + 1), *w = out;
  for (const char *p = text, *q;; p = q + nf) {
    q = strstr(p, from);
    size_t len = q ? (size_t)(q - p) : strlen(p);
    memcpy(w, p, len);
    w += len;
    if (!q)
      break;
    memcpy(w, to, nt);
    w += nt;
  }
  *w = 0;
  run_write(path, out);
  free(out);
  free(text);
}

/* One node cannot produce two fingerprints, so the second machine type is
 * shard 1's records rewritten to another fingerprint and node, with its
 * bundled profile renamed to match. */
#define OTHER_FP "00000000000000aa"

static void shards_of_two_machine_types(char s0[600], char s1[600]) {
  snprintf(s0, 600, "%s", run_tmp("s0"));
  snprintf(s1, 600, "%s", run_tmp("s1"));
  run_result r = evaluate(s0, "--shard=0/2");
  cr_assert_eq(r.code, 0, "%s", r.err);
  run_free(&r);
  r = evaluate(s1, "--shard=1/2");
  cr_assert_eq(r.code, 0, "%s", r.err);
  run_free(&r);
  lm_fingerprint fp;
  lm_error err = {0};
  cr_assert_eq(lm_fingerprint_host(&fp, &err), LM_OK, "%s", err.msg);
  char node[256] = "";
  gethostname(node, sizeof node - 1);
  char path[700], from[300], to[64], bundle[700], moved[700];
  snprintf(path, sizeof path, "%s/host/records.jsonl", s1);
  snprintf(from, sizeof from, "\"fingerprint\":\"%s\"", fp.hash);
  char *text = run_slurp(path);
  cr_assert(strstr(text, from), "records lack %s", from);
  free(text);
  rewrite(path, from, "\"fingerprint\":\"" OTHER_FP "\"");
  snprintf(from, sizeof from, "\"node\":\"%s\"", node);
  snprintf(to, sizeof to, "\"node\":\"other-node\"");
  rewrite(path, from, to);
  snprintf(bundle, sizeof bundle, "%s/host/profile-%s-quick.json", s1, fp.hash);
  snprintf(moved, sizeof moved, "%s/host/profile-" OTHER_FP "-quick.json", s1);
  cr_assert(run_exists(bundle), "%s missing", bundle);
  cr_assert_eq(rename(bundle, moved), 0);
}

Test(evaluate, merging_two_machine_types_is_refused_without_allow_mixed) {
  char s0[600], s1[600], d0[700], d1[700], m[700], p[760];
  shards_of_two_machine_types(s0, s1);
  snprintf(d0, sizeof d0, "%s/host", s0);
  snprintf(d1, sizeof d1, "%s/host", s1);
  snprintf(m, sizeof m, "%s", run_tmp("merged"));
  run_result r = RUN("merge", "-o", m, d0, d1);
  cr_expect_eq(r.code, 2, "%s", r.out);
  cr_expect(strstr(r.err, "records of 2 machine types") &&
                strstr(r.err, OTHER_FP) && strstr(r.err, "other-node") &&
                strstr(r.err, "--allow-mixed"),
            "%s", r.err);
  run_free(&r);
  snprintf(p, sizeof p, "%s/records.jsonl", m);
  cr_expect(!run_exists(p), "a refused merge wrote %s", p);
}

Test(evaluate, mixed_machine_types_are_reported_apart_with_their_profiles) {
  char s0[600], s1[600], d0[700], d1[700], m[700], p[760];
  shards_of_two_machine_types(s0, s1);
  snprintf(d0, sizeof d0, "%s/host", s0);
  snprintf(d1, sizeof d1, "%s/host", s1);
  snprintf(m, sizeof m, "%s", run_tmp("merged"));
  snprintf(p, sizeof p, "%s/host", m);
  run_result r = RUN("merge", "--allow-mixed", "-o", p, d0, d1);
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "machine type " OTHER_FP ":") &&
                strstr(r.out, "records, nodes other-node"),
            "%s", r.out);
  run_free(&r);
  snprintf(p, sizeof p, "%s/host/profile-" OTHER_FP "-quick.json", m);
  cr_assert(run_exists(p), "merge did not copy %s", p);

  /* each type is planned with its own profile and measured nowhere */
  r = evaluate(m, NULL);
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "measured on machine type " OTHER_FP), "%s", r.out);
  cr_expect_eq(run_count_lines(r.out, "0 measured now"), 2, "%s", r.out);
  cr_expect(strstr(r.out, "host, machine type " OTHER_FP " (other-node)"), "%s",
            r.out);
  run_free(&r);
  snprintf(p, sizeof p, "%s/host/machine-" OTHER_FP "/report.md", m);
  cr_expect(run_exists(p), "%s missing", p);
  snprintf(p, sizeof p, "%s/report.md", m);
  char *summary = run_slurp(p);
  cr_expect(strstr(summary, "| host | " OTHER_FP " (other-node) |") &&
                strstr(summary, "(here: "),
            "%s", summary);
  free(summary);

  /* without that type's profile its cases are not planned */
  snprintf(p, sizeof p, "%s/host/profile-" OTHER_FP "-quick.json", m);
  cr_assert_eq(unlink(p), 0);
  r = evaluate(m, NULL);
  cr_expect_eq(r.code, 2, "%s", r.out);
  cr_expect(strstr(r.err, "measured on machine type " OTHER_FP) &&
                strstr(r.err, "is missing"),
            "%s", r.err);
  run_free(&r);
}

Test(evaluate, another_machine_types_folder_reports_without_calibrating) {
  char s0[600], s1[600], cache[700];
  shards_of_two_machine_types(s0, s1);
  snprintf(cache, sizeof cache, "%s", run_tmp("empty-cache"));
  /* no --profile and an empty cache: calibrating would show */
  run_result r = RUN("evaluate", "--quick", "--cases", CASES, "--isa", "host",
                     "--shard", "1/2", "--cache-dir", cache, "--out", s1);
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "measured on machine type " OTHER_FP) &&
                strstr(r.out, "cases, 0 measured now"),
            "%s", r.out);
  cr_expect(!strstr(r.out, "calibrate "), "%s", r.out);
  cr_expect(!run_exists(cache), "the cache was made: %s", cache);
  run_free(&r);
}

Test(evaluate, bad_options_exit_2_naming_the_option) {
  const char *prof = default_profile();
  struct {
    const char *args[6];
    const char *msg;
  } bad[] = {
      {{"--shard", "2/2"}, "--shard"},
      {{"--shard", "x"}, "--shard"},
      {{"--shard", "4294967296/4294967297"},
       "out of range (at most 2147483647)"},
      {{"--shard", "-1/2"}, "not a non-negative integer"},
      {{"--isa", "vax"}, "vax"},
      {{"--isa", "host,host"}, "twice"},
      {{"--isa", "avx2,host", "--profile", prof}, "--profile"},
      {{"--cases", "/nonexistent/cases.json"}, "/nonexistent/cases.json"},
      {{"--bogus"}, "--bogus"},
      {{"--cache-dir", ""}, "--cache-dir: expected a folder"},
      {{"--cache-dir"}, "--cache-dir needs a value"},
      {{"--isa", "avx2", "--cross", "none", "--profile", prof},
       "not x86-64-v3"},
      {{"--learned", "/nonexistent/learned.json"}, "/nonexistent/learned.json"},
      {{"--learned"}, "--learned needs a value"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char o[600];
    snprintf(o, sizeof o, "%s", run_tmp("o"));
    const char *argv[12] = {"evaluate", "--out", o};
    int n = 3;
    for (int j = 0; j < 6 && bad[i].args[j]; j++)
      argv[n++] = bad[i].args[j];
    argv[n] = NULL;
    run_result r = run_cli(argv);
    cr_expect_eq(r.code, 2, "case %zu: %s", i, r.err);
    cr_expect(strstr(r.err, bad[i].msg) != NULL, "case %zu: %s", i, r.err);
    run_free(&r);
  }
}

/* A learned correction that halves every prediction: plan-learned is
 * reported beside the plan, with its own plan file and its predictions in
 * the records. */
Test(evaluate, a_learned_correction_is_reported_as_its_own_policy) {
  enum { M = 64 };
  static double x[M * LM_LEARNED_NFEAT], y[M];
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < LM_LEARNED_NFEAT; j++)
      x[i * LM_LEARNED_NFEAT + j] = (i * 31 + j * 7) % 13;
    y[i] = log(0.5);
  }
  lm_learned *l = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_learned_train(NULL, x, M, LM_LEARNED_NFEAT, y, NULL,
                                lm_learned_row_names(), &l, &err),
               LM_OK, "%s", err.msg);
  char model[600], out[600], path[700];
  snprintf(model, sizeof model, "%s", run_tmp("learned.json"));
  snprintf(out, sizeof out, "%s", run_tmp("out"));
  cr_assert_eq(lm_learned_save(l, model, &err), LM_OK, "%s", err.msg);
  lm_learned_free(l);
  run_result r = evaluate2(out, "--learned", model);
  cr_assert_eq(r.code, 0, "stdout: %s\nstderr: %s", r.out, r.err);
  cr_expect(strstr(r.out, "plan-learned"), "%s", r.out);
  snprintf(path, sizeof path, "%s/host/plan-plan-learned.json", out);
  cr_expect(run_exists(path), "%s missing", path);
  snprintf(path, sizeof path, "%s/host/report.md", out);
  char *md = run_slurp(path);
  cr_expect(strstr(md, "| plan-learned |"), "%s", md);
  free(md);
  /* every record carries the corrected prediction: half the analytic one */
  snprintf(path, sizeof path, "%s/host/records.jsonl", out);
  char *text = run_slurp(path);
  int n = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"), n++) {
    cJSON *j = cJSON_Parse(line);
    double p = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "predicted"));
    double q = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "pred_learned"));
    cr_expect(fabs(q / p - 0.5) < 0.01, "record %d: %g against %g", n, q, p);
    cJSON_Delete(j);
  }
  cr_expect_gt(n, 0);
  free(text);
  run_free(&r);
  /* a file that is not a learned model is refused before anything runs */
  run_write(model, "{\"schema\": \"lanemap.profile/1\"}");
  r = evaluate2(out, "--learned", model);
  cr_expect_eq(r.code, 2, "%s", r.err);
  cr_expect(strstr(r.err, model), "%s", r.err);
  run_free(&r);
}

Test(evaluate, an_unwritable_output_folder_exits_3) {
  char file[600];
  snprintf(file, sizeof file, "%s", run_tmp("plain-file"));
  run_write(file, "x");
  char out[700];
  snprintf(out, sizeof out, "%s/sub", file);
  run_result r = evaluate(out, NULL);
  cr_expect_eq(r.code, 3, "%s", r.err);
  cr_expect(strstr(r.err, "cannot create") != NULL, "%s", r.err);
  run_free(&r);
}

/* ---- the C API: lm_evaluate ------------------------------------------------
 */

/* What the callbacks saw. */
typedef struct Seen {
  int notes, warnings, resumed;
  int measure_steps, measure_end, calibrate_steps;
  int last_done, last_total;
} Seen;

static void seen_progress(void *ctx, lm_evaluate_stage stage, const char *isa,
                          int done, int total, const char *what) {
  Seen *s = ctx;
  cr_expect_str_eq(isa, "host");
  cr_expect(done >= 0 && done <= total, "%d of %d", done, total);
  if (stage == LM_EVALUATE_CALIBRATE)
    s->calibrate_steps++;
  else if (!what)
    s->measure_end++;
  else
    s->measure_steps++;
  s->last_done = done;
  s->last_total = total;
}

static void seen_note(void *ctx, int warning, const char *line) {
  Seen *s = ctx;
  s->notes++;
  s->warnings += warning;
  s->resumed += strncmp(line, "resume", 6) == 0;
}

/* A short protocol, for the tests only. */
static const lm_timing_opts *short_timing(void) {
  static lm_timing_opts t;
  lm_timing_defaults(&t);
  t.samples = 3;
  t.sample_ms = 0.5;
  t.warmup_ms = 2;
  return &t;
}

static lm_evaluate_options api_options(const char *out, Seen *seen) {
  lm_evaluate_options o;
  lm_evaluate_options_defaults(&o);
  o.cases = CASES;
  o.out = out;
  o.isa[0] = LM_ISA_HOST;
  o.nisa = 1;
  o.cross = 0;
  o.profile = default_profile();
  o.quick = 1;
  o.timing = short_timing();
  o.progress = seen_progress;
  o.note = seen_note;
  o.ctx = seen;
  return o;
}

Test(evaluate, lm_evaluate_solves_writes_and_dispatches_the_plan_of_the_cases) {
  char out[600], path[700];
  snprintf(out, sizeof out, "%s", run_tmp("api"));
  Seen seen = {0};
  lm_evaluate_options o = api_options(out, &seen);
  lm_evaluate_result res;
  lm_error err = {0};
  cr_assert_eq(lm_evaluate(&o, &res, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(res.ntargets, 1);
  const lm_evaluate_target *t = &res.target[0];
  cr_expect_eq(t->isa, LM_ISA_HOST);
  cr_expect_eq(t->ncases, 3);
  cr_expect_eq(t->measured, 3);
  cr_expect_eq(res.failures, 0);
  /* every case counts, unless its plan pick was measured contended */
  cr_expect_eq(t->stats[LM_POLICY_PLAN].n + t->contended, 3);
  cr_expect_eq(t->quiet + t->noisy, 3, "every case has a verdict");
  cr_expect_eq(t->unknown, 0);
  cr_expect_eq(t->stats[LM_POLICY_CROSS].n, 0, "no cross target asked for");
  /* every plan pick ran through the dispatch, beside the variants */
  cr_expect_eq(t->dispatched, 3);
  cr_expect(isfinite(t->dispatch_ratio) && t->dispatch_ratio > 0, "%g",
            t->dispatch_ratio);
  /* progress: one step per case and a compile per kernel, then the end */
  cr_expect_geq(seen.measure_steps, 3);
  cr_expect_eq(seen.measure_end, 1);
  cr_expect_eq(seen.last_done, seen.last_total);
  cr_expect_eq(seen.calibrate_steps, 0, "the profile was given");
  cr_expect_eq(seen.warnings, 0);

  /* the workload: two kernels, one bucket per case */
  lm_workload *w = NULL;
  snprintf(path, sizeof path, "%s/host/workload.json", out);
  cr_assert_eq(lm_workload_load(path, &w, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(w->nkernels, 2);
  cr_expect_eq(w->kernels[0].nbuckets + w->kernels[1].nbuckets, 3);
  cr_expect_eq(w->compile_budget_ms < 0 && w->compile_budget_variants < 0 &&
                   w->max_variants_per_kernel == 0,
               1, "no cap, no budget");
  /* the plan: each bucket runs a variant the profile predicts fastest for
   * its case (the records give the predictions; a tie may go either way) */
  lm_plan *plan = NULL;
  snprintf(path, sizeof path, "%s/host/plan.json", out);
  cr_assert_eq(lm_plan_load(path, &plan, NULL, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(plan->nkernels, 2);
  lm_records rs = {0};
  snprintf(path, sizeof path, "%s/host/records.jsonl", out);
  cr_assert_eq(lm_records_read(path, &rs, &err), LM_OK, "%s", err.msg);
  int buckets = 0;
  for (int k = 0; k < plan->nkernels; k++)
    for (int b = 0; b < plan->kernels[k].nbuckets; b++, buckets++) {
      const lm_plan_kernel *pk = &plan->kernels[k];
      const lm_plan_bucket *pb = &pk->buckets[b];
      const char *picked = pk->variants[pb->variant];
      double best_s = INFINITY, picked_s = NAN;
      for (int i = 0; i < rs.n; i++) {
        char abs[PATH_MAX];
        if (!realpath(rs.r[i].kernel, abs) || strcmp(abs, pk->path) != 0 ||
            rs.r[i].R != pb->R || rs.r[i].C != pb->C)
          continue;
        if (rs.r[i].predicted < best_s)
          best_s = rs.r[i].predicted;
        if (strcmp(rs.r[i].variant, picked) == 0)
          picked_s = rs.r[i].predicted;
      }
      cr_assert(isfinite(best_s), "no records of %s %lldx%lld", pk->path,
                (long long)pb->R, (long long)pb->C);
      cr_expect_eq(picked_s, best_s,
                   "%s %lldx%lld: %s predicted %g s, the "
                   "fastest %g s",
                   pk->name, (long long)pb->R, (long long)pb->C, picked,
                   picked_s, best_s);
    }
  cr_expect_eq(buckets, 3);
  lm_records_free(&rs);
  lm_plan_free(plan);
  lm_workload_free(w);
  snprintf(path, sizeof path, "%s/host/plan-default-profile.json", out);
  cr_expect(run_exists(path), "%s missing", path);
  snprintf(path, sizeof path, "%s/report.md", out);
  cr_expect(run_exists(path), "%s missing", path);
}

Test(evaluate, lm_evaluate_resumes_every_finished_case_and_dispatches_none) {
  char out[600];
  snprintf(out, sizeof out, "%s", run_tmp("api"));
  Seen seen = {0};
  lm_evaluate_options o = api_options(out, &seen);
  lm_evaluate_result res;
  lm_error err = {0};
  cr_assert_eq(lm_evaluate(&o, &res, &err), LM_OK, "%s", err.msg);
  memset(&seen, 0, sizeof seen);
  cr_assert_eq(lm_evaluate(&o, &res, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(res.target[0].ncases, 3);
  cr_expect_eq(res.target[0].measured, 0);
  cr_expect_eq(res.target[0].dispatched, 0, "nothing left to launch");
  cr_expect_eq(res.target[0].stats[LM_POLICY_PLAN].n + res.target[0].contended,
               3, "scored from records");
  cr_expect_eq(res.target[0].unknown, 0, "the verdicts were resumed too");
  cr_expect_eq(seen.resumed, 1);
  o.fresh = 1;
  cr_assert_eq(lm_evaluate(&o, &res, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(res.target[0].measured, 3);
  cr_expect_eq(res.target[0].dispatched, 3);
}

Test(evaluate, lm_evaluate_refuses_bad_options_with_einput) {
  char out[600];
  snprintf(out, sizeof out, "%s", run_tmp("api"));
  Seen seen = {0};
  struct {
    lm_evaluate_options o;
    const char *msg;
  } bad[5];
  for (int i = 0; i < 5; i++)
    bad[i].o = api_options(out, &seen);
  bad[0].o.cases = NULL, bad[0].msg = "case list";
  bad[1].o.cases = "/nonexistent/cases.json";
  bad[1].msg = "/nonexistent/cases.json";
  bad[2].o.isa[1] = LM_ISA_HOST, bad[2].o.nisa = 2, bad[2].msg = "twice";
  bad[3].o.shard_i = 2, bad[3].o.shard_n = 2, bad[3].msg = "shard";
  bad[4].o.cross = 1, bad[4].o.cross_isa = LM_ISA_HOST;
  bad[4].msg = "not another runnable target";
  for (int i = 0; i < 5; i++) {
    lm_evaluate_result res;
    lm_error err = {0};
    cr_expect_eq(lm_evaluate(&bad[i].o, &res, &err), LM_EINPUT, "case %d: %s",
                 i, err.msg);
    cr_expect(strstr(err.msg, bad[i].msg) != NULL, "case %d: %s", i, err.msg);
  }
}

Test(evaluate, a_noisy_case_is_measured_again_and_keeps_its_verdict) {
  /* limits no measurement can meet: every verdict is noisy, whatever the
   * machine does, so every case is measured 1 + LM_EVALUATE_REMEASURE
   * times and stays noisy */
  char out[600], path[700];
  snprintf(out, sizeof out, "%s", run_tmp("api"));
  Seen seen = {0};
  lm_evaluate_options o = api_options(out, &seen);
  static lm_noise_limits never;
  lm_noise_limits_defaults(&never);
  never.canary_max = -1;
  static lm_timing_opts t;
  t = *o.timing;
  t.limits = &never;
  o.timing = &t;
  lm_evaluate_result res;
  lm_error err = {0};
  cr_assert_eq(lm_evaluate(&o, &res, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(res.noisy, 3);
  cr_expect_eq(res.target[0].noisy, 3);
  cr_expect_eq(res.target[0].quiet, 0);
  cr_expect_eq(res.cases, 3);
  snprintf(path, sizeof path, "%s/host/records.jsonl", out);
  lm_records rs = {0};
  cr_assert_eq(lm_records_read(path, &rs, &err), LM_OK, "%s", err.msg);
  lm_eval_case *cs = NULL;
  int n = 0;
  cr_assert_eq(lm_eval_cases_from_records(&rs, &cs, &n, NULL, &err), LM_OK,
               "%s", err.msg);
  cr_expect_eq(n, 3);
  for (int i = 0; i < n; i++) {
    cr_expect_eq(cs[i].attempts, 1 + LM_EVALUATE_REMEASURE, "%s", cs[i].id);
    cr_expect_eq(cs[i].noise.noisy, 1, "%s", cs[i].id);
    cr_expect(cs[i].noise.reasons & LM_NOISE_CANARY, "%s", cs[i].id);
    lm_eval_case_free(&cs[i]);
  }
  free(cs);
  lm_records_free(&rs);
  snprintf(path, sizeof path, "%s/host/report.md", out);
  char *md = run_slurp(path);
  cr_expect(strstr(md, "0 cases quiet (0 of them unstable: spread only), 3 "
                       "noisy after re-measuring"),
            "%s", md);
  free(md);
  /* resumed, the verdicts come back from the records */
  cr_assert_eq(lm_evaluate(&o, &res, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(res.target[0].measured, 0);
  cr_expect_eq(res.noisy, 3);
}

/* lm_evaluate of the fixture into run_tmp(sub), as api_options sets it up
 * (all_splits as given); *rs gets the records it wrote. */
static lm_evaluate_options evaluate_api(const char *sub, int all_splits, lm_records *rs) {
  static char out[600];
  char path[700];
  static Seen seen;
  snprintf(out, sizeof out, "%s", run_tmp(sub));
  lm_evaluate_options o = api_options(out, &seen);
  o.all_splits = all_splits;
  lm_evaluate_result res;
  lm_error err = {0};
  cr_assert_eq(lm_evaluate(&o, &res, &err), LM_OK, "%s", err.msg);
  snprintf(path, sizeof path, "%s/host/records.jsonl", out);
  cr_assert_eq(lm_records_read(path, rs, &err), LM_OK, "%s", err.msg);
  return o;
}

Test(evaluate, every_case_is_confirmed_with_twice_the_samples) {
  lm_records rs = {0};
  lm_evaluate_options o = evaluate_api("api", 0, &rs);
  lm_error err = {0};
  lm_eval_case *cs = NULL;
  int n = 0;
  cr_assert_eq(lm_eval_cases_from_records(&rs, &cs, &n, NULL, &err), LM_OK,
               "%s", err.msg);
  for (int i = 0; i < n; i++) {
    int confirmed = 0, verified = 0; /* verified: and uncontended */
    for (int j = 0; j < cs[i].nvariants; j++) {
      const lm_eval_variant *v = &cs[i].v[j];
      verified += v->verified == 1 && !v->contended;
      if (!isfinite(v->confirmed))
        continue;
      confirmed++;
      cr_expect_eq(v->nctimes, LM_EVALUATE_CONFIRM_SAMPLES(o.timing->samples));
      cr_expect_eq(v->ntimes, o.timing->samples);
    }
    int want =
        verified < LM_EVALUATE_CONFIRM_TOP ? verified : LM_EVALUATE_CONFIRM_TOP;
    cr_expect_geq(confirmed, want, "%s: %d confirmed", cs[i].id, confirmed);
    cr_expect_geq(cs[i].attempts, 1, "%s", cs[i].id);
    lm_eval_case_free(&cs[i]);
  }
  free(cs);
  lm_records_free(&rs);
}

/* The split pruning's rule on a hand-made case: the first round takes every
 * one-worker and static variant, the picks, the listed and the model's 20
 * best; the
 * second the dynK splits of the 3 code variants whose parallel variants
 * screened fastest. */
Test(evaluate, split_pruning_keeps_one_worker_static_picks_and_the_top_splits) {
  lm_kernel *k = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_load(LANEMAP_SOURCE_DIR "/kernels/rmsnorm.lk", &k, &err), LM_OK,
               "%s", err.msg);
  lm_enum_opts eo;
  lm_enum_defaults(&eo);
  eo.isa = LM_ISA_AVX512;
  eo.workers[0] = 1, eo.workers[1] = 2, eo.workers[2] = 0;
  lm_variant *vs = NULL;
  int n = lm_variant_enumerate(k, &eo, &vs, &err);
  cr_assert_gt(n, 100, "%d variants", n);
  lm_eval_case c = {0};
  c.nvariants = n;
  c.v = calloc((size_t)n, sizeof *c.v);
  for (int p = 0; p < LM_POLICY__COUNT; p++)
    c.choice[p] = -1;
  int pick = -1, ndyn = 0;
  for (int i = 0; i < n; i++) {
    c.v[i].verified = 1;
    c.v[i].predicted = 1000 + i; /* the model's 20 best: the first 20 */
    c.v[i].measured = NAN;
    if (vs[i].split == LM_SPLIT_DYNAMIC && i >= 20 && pick < 0)
      pick = i;
    ndyn += vs[i].split == LM_SPLIT_DYNAMIC;
  }
  c.choice[LM_POLICY_PLAN] = pick;
  /* a variant the case list names in "time": the next dynK split */
  int listed = -1;
  for (int i = pick + 1; i < n && listed < 0; i++)
    if (vs[i].split == LM_SPLIT_DYNAMIC)
      listed = i;
  cr_assert_gt(listed, 20);
  c.v[listed].listed = 1;
  unsigned char *first = calloc((size_t)n, 1), *second = calloc((size_t)n, 1);
  lm_eval_split_first(&c, vs, 0, first);
  int nfirst = 0;
  for (int i = 0; i < n; i++) {
    int want = vs[i].workers == 1 || vs[i].split == LM_SPLIT_STATIC || i < 20 || i == pick ||
               i == listed;
    cr_expect_eq(first[i], want, "%s: first round %d", c.v[i].variant ? c.v[i].variant : "?",
                 first[i]);
    nfirst += first[i];
  }
  cr_expect_lt(nfirst, n - ndyn / 2, "the first round prunes: %d of %d", nfirst, n);
  /* screening times: parallel static variants get faster with the index,
   * so the last three parallel code variants are the fastest */
  for (int i = 0; i < n; i++)
    if (first[i])
      c.v[i].measured = vs[i].workers > 1 ? 1e6 - i : 2e6;
  int n2 = lm_eval_split_second(&c, vs, first, second);
  int top[3], nt = 0;
  for (int i = n - 1; i >= 0 && nt < 3; i--) {
    int seen = 0;
    for (int j = 0; j < nt; j++)
      seen |= lm_variant_same_code(&vs[i], &vs[top[j]]);
    if (first[i] && vs[i].workers > 1 && !seen)
      top[nt++] = i;
  }
  cr_assert_eq(nt, 3);
  int want2 = 0;
  for (int i = 0; i < n; i++) {
    int in = 0;
    for (int j = 0; j < 3; j++)
      in |= vs[i].workers > 1 && lm_variant_same_code(&vs[i], &vs[top[j]]);
    in &= !first[i];
    want2 += in;
    cr_expect_eq(second[i], in, "variant %d: second round %d", i, second[i]);
  }
  cr_expect_eq(n2, want2);
  cr_expect_gt(n2, 0);
  /* a contended fastest is passed over */
  c.v[top[0]].contended = 1;
  lm_eval_split_second(&c, vs, first, second);
  for (int i = 0; i < n; i++)
    if (lm_variant_same_code(&vs[i], &vs[top[0]]) && vs[i].workers > 1 && !first[i])
      cr_expect_eq(second[i], 0, "variant %d of the contended code variant", i);
  /* all_splits: everything */
  lm_eval_split_first(&c, vs, 1, first);
  for (int i = 0; i < n; i++)
    cr_expect_eq(first[i], 1);
  free(first), free(second), free(c.v), free(vs);
  lm_kernel_free(k);
}

/* An --all-splits run times every verified variant and checks the rule in
 * its report. */
Test(evaluate, all_splits_times_every_variant_and_reports_the_rule_check) {
  lm_records rs = {0};
  lm_evaluate_options o = evaluate_api("all", 1, &rs);
  char path[700];
  for (int i = 0; i < rs.n; i++)
    if (rs.r[i].verified == 1)
      cr_expect(isfinite(rs.r[i].median), "%s untimed", rs.r[i].variant);
  lm_records_free(&rs);
  snprintf(path, sizeof path, "%s/host/report.md", o.out);
  char *text = run_slurp(path);
  cr_expect(strstr(text, "## Split pruning") && strstr(text, "(`--all-splits`)"), "%s", text);
  free(text);
}

/* A case list's "time" makes the oracle time a variant its split pruning
 * left untimed, and a measurement lacking a listed variant's time is not
 * resumed; a listed name of this target that is not a variant of the case
 * is bad input. */
static void write_listed_case(const char *path, const char *variant) {
  char text[1024];
  snprintf(text, sizeof text,
           "{\"schema\": \"lanemap.cases/1\", \"cases\": [{\"id\": \"s-5x40\", "
           "\"kernel\": \"%s/heldout/kernels/sqrelu_scale.lk\", \"shape\": [5, "
           "40]%s%s%s}]}",
           LANEMAP_SOURCE_DIR, variant ? ", \"time\": [\"" : "",
           variant ? variant : "", variant ? "\"]" : "");
  run_write(path, text);
}

static const lm_record *record_of(const lm_records *rs, const char *variant) {
  for (int i = 0; i < rs->n; i++)
    if (strcmp(rs->r[i].variant, variant) == 0)
      return &rs->r[i];
  return NULL;
}

Test(evaluate, a_listed_variant_is_timed_and_a_run_without_its_time_is_not_resumed) {
  char out[600], list[600], path[700], name[128] = "";
  snprintf(out, sizeof out, "%s", run_tmp("listed"));
  snprintf(list, sizeof list, "%s", run_tmp("listed.json"));
  snprintf(path, sizeof path, "%s/host/records.jsonl", out);
  write_listed_case(list, NULL);
  Seen seen = {0};
  lm_evaluate_options o = api_options(out, &seen);
  o.cases = list;
  lm_evaluate_result res;
  lm_error err = {0};
  cr_assert_eq(lm_evaluate(&o, &res, &err), LM_OK, "%s", err.msg);
  lm_records rs = {0};
  cr_assert_eq(lm_records_read(path, &rs, &err), LM_OK, "%s", err.msg);
  for (int i = 0; i < rs.n && !name[0]; i++)
    if (rs.r[i].verified == 1 && !isfinite(rs.r[i].median))
      snprintf(name, sizeof name, "%s", rs.r[i].variant);
  lm_records_free(&rs);
  cr_assert(name[0], "the split pruning timed every variant");
  /* listed: measured again, and timed */
  write_listed_case(list, name);
  cr_assert_eq(lm_evaluate(&o, &res, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(res.target[0].measured, 1, "not resumed without its time");
  cr_assert_eq(lm_records_read(path, &rs, &err), LM_OK, "%s", err.msg);
  const lm_record *r = record_of(&rs, name);
  cr_assert(r != NULL);
  cr_expect(isfinite(r->median), "%s untimed", name);
  lm_records_free(&rs);
  /* the same list again: resumed */
  cr_assert_eq(lm_evaluate(&o, &res, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(res.target[0].measured, 0);
  /* a variant of another target is for that target's run; a variant of
   * this one the case does not have is refused */
  write_listed_case(list, "x86-64-v4/w16/l16/t1");
  cr_expect_eq(lm_evaluate(&o, &res, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(res.target[0].measured, 0);
  char bad[160];
  snprintf(bad, sizeof bad, "%s/w4/l4/t64/static", lm_isa_name(LM_ISA_HOST));
  write_listed_case(list, bad);
  lm_error_clear(&err);
  cr_expect_eq(lm_evaluate(&o, &res, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "case s-5x40: time[0]") &&
                strstr(err.msg, "is not a variant of"),
            "%s", err.msg);
}
