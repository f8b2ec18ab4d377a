/* Claims about measurement records (core/records.c): every field survives a
 * round trip, appends are whole lines, an interrupted last line is skipped
 * and counted, every other bad line is an error naming path:line and the
 * field, pick-best keeps the least median per (kernel, shape), and files
 * are written atomically. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lanemap/records.h"

static char tmpdir[256];

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/lanemap_test_records.XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir));
}

static void remove_tmpdir(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  cr_expect_eq(system(cmd), 0);
}

TestSuite(records, .init = make_tmpdir, .fini = remove_tmpdir);

static char *tmp_path(const char *name) {
  static char buf[4][512];
  static int next;
  char *p = buf[next++ % 4];
  snprintf(p, 512, "%s/%s", tmpdir, name);
  return p;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  fputs(text, f);
  fclose(f);
}

/* A record with every field set. */
static void full_record(lm_record *r, const char *variant, double median) {
  lm_record_init(r);
  r->kernel = strdup("kernels/softmax.lk");
  r->kernel_hash = strdup("0123456789abcdef");
  r->R = 4096;
  r->C = 33;
  r->extra_syms = strdup("H=33");
  r->variant = strdup(variant);
  r->isa = strdup("avx2");
  r->fingerprint = strdup("fedcba9876543210");
  r->predicted = 1.5e-6;
  double ns[] = {median * 1e9, median * 1e9 * 1.1, median * 1e9 * 0.9};
  lm_error err = {0};
  cr_assert_eq(lm_record_set_samples(r, ns, 3, &err), LM_OK, "%s", err.msg);
  r->verified = 1;
  cr_assert_eq(lm_record_stamp(r, &err), LM_OK);
  r->extra = cJSON_Parse("{\"case\":\"c1\",\"nested\":{\"a\":[1,2]},\"n\":3}");
  cr_assert_not_null(r->extra);
}

static void expect_same(const lm_record *a, const lm_record *b) {
  cr_expect_str_eq(a->kernel, b->kernel);
  cr_expect_str_eq(a->kernel_hash, b->kernel_hash);
  cr_expect_eq(a->R, b->R);
  cr_expect_eq(a->C, b->C);
  cr_expect_str_eq(a->extra_syms, b->extra_syms);
  cr_expect_str_eq(a->variant, b->variant);
  cr_expect_str_eq(a->isa, b->isa);
  cr_expect_str_eq(a->fingerprint, b->fingerprint);
  cr_expect_eq(a->predicted, b->predicted);
  cr_expect_eq(a->mean, b->mean);
  cr_expect_eq(a->stddev, b->stddev);
  cr_expect_eq(a->median, b->median);
  cr_expect_eq(a->min, b->min);
  cr_expect_eq(a->max, b->max);
  cr_assert_eq(a->ntimes, b->ntimes);
  for (int i = 0; i < a->ntimes; i++)
    cr_expect_eq(a->times[i], b->times[i], "times[%d]", i);
  cr_expect_eq(a->verified, b->verified);
  cr_expect_str_eq(a->timestamp, b->timestamp);
  cr_expect(cJSON_Compare(a->extra, b->extra, 1), "extra differs");
}

Test(records, every_field_survives_a_json_round_trip) {
  lm_record r, back;
  full_record(&r, "avx2/w8/l1/slot/gather/snap/inline/1", 2e-6);
  lm_error err = {0};
  cJSON *j = NULL;
  cr_assert_eq(lm_record_to_json(&r, &j, &err), LM_OK, "%s", err.msg);
  /* hyperfine's names, in seconds, and the caller's fields at top level */
  cr_expect(cJSON_IsNumber(cJSON_GetObjectItem(j, "median")));
  cr_expect(cJSON_IsArray(cJSON_GetObjectItem(j, "times")));
  cr_expect_str_eq(cJSON_GetObjectItem(j, "schema")->valuestring,
                   LM_RECORD_SCHEMA);
  cr_expect_str_eq(cJSON_GetObjectItem(j, "case")->valuestring, "c1");
  cr_assert_eq(lm_record_from_json(j, "t", &back, &err), LM_OK, "%s", err.msg);
  expect_same(&r, &back);
  cJSON_Delete(j);
  lm_record_free(&r);
  lm_record_free(&back);
}

Test(records, set_samples_computes_hyperfine_statistics_in_seconds) {
  lm_record r;
  lm_record_init(&r);
  double ns[] = {3, 1, 2, 4};
  lm_error err = {0};
  cr_assert_eq(lm_record_set_samples(&r, ns, 4, &err), LM_OK);
  cr_expect_float_eq(r.mean, 2.5e-9, 1e-24);
  cr_expect_float_eq(r.median, 2.5e-9, 1e-24);
  cr_expect_float_eq(r.min, 1e-9, 1e-24);
  cr_expect_float_eq(r.max, 4e-9, 1e-24);
  cr_expect_float_eq(r.stddev, sqrt(5.0 / 3.0) * 1e-9, 1e-24,
                     "sample stddev (n - 1)");
  cr_expect_eq(r.ntimes, 4);
  cr_expect_float_eq(r.times[0], 3e-9, 1e-24, "samples keep their order");
  double one[] = {7};
  cr_assert_eq(lm_record_set_samples(&r, one, 1, &err), LM_OK);
  cr_expect(isnan(r.stddev), "one sample has no stddev");
  cr_expect_float_eq(r.median, 7e-9, 1e-24);
  lm_record_free(&r);
}

Test(records, set_samples_rejects_bad_samples) {
  lm_record r;
  lm_record_init(&r);
  lm_error err = {0};
  cr_expect_eq(lm_record_set_samples(&r, NULL, 0, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "times"), "%s", err.msg);
  double bad[] = {1, -2};
  cr_expect_eq(lm_record_set_samples(&r, bad, 2, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "times[1]"), "%s", err.msg);
  double nan[] = {NAN};
  cr_expect_eq(lm_record_set_samples(&r, nan, 1, &err), LM_EINPUT);
  lm_record_free(&r);
}

Test(records, timestamp_is_iso8601_utc) {
  lm_record r;
  lm_record_init(&r);
  lm_error err = {0};
  cr_assert_eq(lm_record_stamp(&r, &err), LM_OK);
  cr_assert_eq(strlen(r.timestamp), 20, "%s", r.timestamp);
  cr_expect_eq(r.timestamp[4], '-');
  cr_expect_eq(r.timestamp[10], 'T');
  cr_expect_eq(r.timestamp[19], 'Z');
  lm_record_free(&r);
}

Test(records, untimed_fields_are_absent_and_read_back_as_nan) {
  lm_record r, back;
  lm_record_init(&r);
  r.kernel = strdup("k.lk");
  r.kernel_hash = strdup("00000000000000ff");
  r.R = r.C = 1;
  r.variant = strdup("v");
  r.isa = strdup("sse4.2");
  lm_error err = {0};
  cJSON *j = NULL;
  cr_assert_eq(lm_record_to_json(&r, &j, &err), LM_OK);
  cr_expect_null(cJSON_GetObjectItem(j, "median"));
  cr_expect_null(cJSON_GetObjectItem(j, "verified"));
  cr_assert_eq(lm_record_from_json(j, "t", &back, &err), LM_OK, "%s", err.msg);
  cr_expect(isnan(back.median) && isnan(back.predicted) && isnan(back.mean));
  cr_expect_eq(back.verified, -1);
  cr_expect_null(back.extra);
  cr_expect_null(back.fingerprint);
  cJSON_Delete(j);
  lm_record_free(&r);
  lm_record_free(&back);
}

Test(records, extra_may_not_shadow_a_standard_field) {
  lm_record r;
  full_record(&r, "v", 1e-6);
  cJSON_AddNumberToObject(r.extra, "median", 1);
  cJSON *j = NULL;
  lm_error err = {0};
  cr_expect_eq(lm_record_to_json(&r, &j, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "extra.median"), "%s", err.msg);
  cr_expect_null(j);
  lm_record_free(&r);
  lm_record_init(&r);
  cr_expect_eq(lm_record_to_json(&r, &j, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "kernel"), "%s", err.msg);
}

/* Through a file, every double reads back bit for bit (the appends and
 * the atomic write below compare with ==). */
Test(records, appends_read_back_in_order) {
  const char *path = tmp_path("a.jsonl");
  lm_error err = {0};
  lm_record r[3];
  for (int i = 0; i < 3; i++) {
    char v[16];
    snprintf(v, sizeof v, "v%d", i);
    full_record(&r[i], v, 1e-6 * (i + 1));
    cr_assert_eq(lm_records_append(path, &r[i], &err), LM_OK, "%s", err.msg);
  }
  lm_records rs;
  cr_assert_eq(lm_records_read(path, &rs, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(rs.n, 3);
  cr_expect_eq(rs.truncated, 0);
  for (int i = 0; i < 3; i++) {
    expect_same(&r[i], &rs.r[i]);
    lm_record_free(&r[i]);
  }
  lm_records_free(&rs);
}

/* The text of a file is NUL-terminated at its length, as the header says:
 * bindings read it as a C string. */
Test(records, to_text_is_terminated_and_reads_back) {
  const char *path = tmp_path("t.jsonl");
  lm_error err = {0};
  lm_record r[2];
  for (int i = 0; i < 2; i++) {
    full_record(&r[i], i ? "v1" : "v0", 1e-6 * (i + 1));
    cr_assert_eq(lm_records_append(path, &r[i], &err), LM_OK, "%s", err.msg);
  }
  lm_records rs;
  cr_assert_eq(lm_records_read(path, &rs, &err), LM_OK, "%s", err.msg);
  char *text = NULL;
  size_t n = 0;
  cr_assert_eq(lm_records_to_text(&rs, &text, &n, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(strlen(text), n);
  cr_expect_eq(text[n - 1], '\n');
  lm_records back;
  cr_assert_eq(lm_records_from_text("t", text, strlen(text), &back, &err), LM_OK,
               "%s", err.msg);
  cr_assert_eq(back.n, 2);
  for (int i = 0; i < 2; i++) {
    expect_same(&r[i], &back.r[i]);
    lm_record_free(&r[i]);
  }
  free(text);
  lm_records_free(&back);
  lm_records_free(&rs);
}

Test(records, concurrent_appends_from_processes_interleave_whole_lines) {
  const char *path = tmp_path("c.jsonl");
  enum { PROCS = 4, EACH = 50 };
  for (int p = 0; p < PROCS; p++) {
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
      lm_record r;
      char v[16];
      snprintf(v, sizeof v, "p%d", p);
      full_record(&r, v, 1e-6);
      lm_error err = {0};
      for (int i = 0; i < EACH; i++)
        if (lm_records_append(path, &r, &err) != LM_OK)
          _exit(1);
      _exit(0);
    }
  }
  for (int p = 0; p < PROCS; p++) {
    int status;
    cr_assert_gt(wait(&status), 0);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  lm_records rs;
  lm_error err = {0};
  cr_assert_eq(lm_records_read(path, &rs, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(rs.n, PROCS * EACH);
  cr_expect_eq(rs.truncated, 0);
  lm_records_free(&rs);
}

Test(records, an_unterminated_last_line_is_skipped_and_counted) {
  const char *path = tmp_path("t.jsonl");
  lm_error err = {0};
  lm_record r;
  full_record(&r, "v", 1e-6);
  cr_assert_eq(lm_records_append(path, &r, &err), LM_OK);
  cr_assert_eq(lm_records_append(path, &r, &err), LM_OK);
  FILE *f = fopen(path, "a");
  fputs("{\"schema\":\"lanemap.record/1\",\"kern", f);
  fclose(f);
  lm_records rs;
  cr_assert_eq(lm_records_read(path, &rs, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(rs.n, 2);
  cr_expect_eq(rs.truncated, 1);
  lm_records_free(&rs);
  lm_record_free(&r);
}

Test(records, blank_lines_are_not_records) {
  const char *path = tmp_path("b.jsonl");
  lm_error err = {0};
  lm_record r;
  full_record(&r, "v", 1e-6);
  cr_assert_eq(lm_records_append(path, &r, &err), LM_OK);
  FILE *f = fopen(path, "a");
  fputs("\n  \r\n", f);
  fclose(f);
  cr_assert_eq(lm_records_append(path, &r, &err), LM_OK);
  lm_records rs;
  cr_assert_eq(lm_records_read(path, &rs, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(rs.n, 2);
  lm_records_free(&rs);
  lm_record_free(&r);
}

/* A valid line with one field replaced (or added) by `field: value`. */
static const char good[] =
    "{\"schema\":\"lanemap.record/1\",\"kernel\":\"k.lk\","
    "\"kernel_hash\":\"0123456789abcdef\",\"shape\":[2,3],\"variant\":\"v\","
    "\"isa\":\"avx2\",\"median\":1e-6}";

/* Read a two-line file whose second line is `line`; expect an error whose
 * message holds path:2: and `want`. */
static void expect_bad_line(const char *line, const char *want) {
  const char *path = tmp_path("bad.jsonl");
  char text[2048];
  snprintf(text, sizeof text, "%s\n%s\n", good, line);
  write_text(path, text);
  lm_records rs;
  lm_error err = {0};
  cr_expect_eq(lm_records_read(path, &rs, &err), LM_EINPUT, "line %s", line);
  char where[600];
  snprintf(where, sizeof where, "%s:2:", path);
  cr_expect(strstr(err.msg, where), "no %s in: %s", where, err.msg);
  cr_expect(strstr(err.msg, want), "no '%s' in: %s", want, err.msg);
}

Test(records, bad_lines_name_path_line_and_field) {
  expect_bad_line("{\"schema\":\"lanemap.record/1\",", "truncated JSON");
  expect_bad_line("[1, 2]", "expected a JSON object");
  expect_bad_line("{\"kernel\":\"k\"}", "schema: missing");
  expect_bad_line("{\"schema\":\"lanemap.record/2\",\"kernel\":\"k\"}",
                  "schema: \"lanemap.record/2\" is not readable");
  expect_bad_line("{\"schema\":\"other/1\"}", "schema: expected");
  expect_bad_line("{\"schema\":\"lanemap.record/x\"}", "$.schema: expected \"lanemap.record/1\", got \"lanemap.record/x\"");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"kernel_hash\":"
                  "\"0123456789abcdef\"}",
                  "kernel: missing");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"kernel\":\"k\","
                  "\"kernel_hash\":\"XYZ\"}",
                  "kernel_hash: expected 16");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"kernel\":7}",
                  "$.kernel: expected a non-empty string, got 7");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"kernel\":\"k.lk\","
                  "\"kernel_hash\":\"0123456789abcdef\",\"shape\":[2],"
                  "\"variant\":\"v\",\"isa\":\"avx2\"}",
                  "shape: expected [R, C]");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"kernel\":\"k.lk\","
                  "\"kernel_hash\":\"0123456789abcdef\",\"shape\":[2, 0.5],"
                  "\"variant\":\"v\",\"isa\":\"avx2\"}",
                  "$.shape[1]: expected a positive integer, got 0.5");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"kernel\":\"k.lk\","
                  "\"kernel_hash\":\"0123456789abcdef\",\"shape\":[2,3],"
                  "\"isa\":\"avx2\"}",
                  "variant: missing");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"kernel\":\"k.lk\","
                  "\"kernel_hash\":\"0123456789abcdef\",\"shape\":[2,3],"
                  "\"variant\":\"v\"}",
                  "isa: missing");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"kernel\":\"k.lk\","
                  "\"kernel_hash\":\"0123456789abcdef\",\"shape\":[2,3],"
                  "\"variant\":\"v\",\"isa\":\"avx2\",\"median\":-1}",
                  "$.median: expected a finite number >= 0, or null, got -1");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"kernel\":\"k.lk\","
                  "\"kernel_hash\":\"0123456789abcdef\",\"shape\":[2,3],"
                  "\"variant\":\"v\",\"isa\":\"avx2\",\"predicted\":\"1\"}",
                  "$.predicted: expected a finite number >= 0, or null, got \"1\"");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"kernel\":\"k.lk\","
                  "\"kernel_hash\":\"0123456789abcdef\",\"shape\":[2,3],"
                  "\"variant\":\"v\",\"isa\":\"avx2\",\"times\":3}",
                  "times: expected an array");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"kernel\":\"k.lk\","
                  "\"kernel_hash\":\"0123456789abcdef\",\"shape\":[2,3],"
                  "\"variant\":\"v\",\"isa\":\"avx2\",\"times\":[1,-1]}",
                  "$.times[1]: expected a finite number >= 0, got -1");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"kernel\":\"k.lk\","
                  "\"kernel_hash\":\"0123456789abcdef\",\"shape\":[2,3],"
                  "\"variant\":\"v\",\"isa\":\"avx2\",\"verified\":1}",
                  "$.verified: expected true or false, or null, got 1");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"kernel\":\"k.lk\","
                  "\"kernel_hash\":\"0123456789abcdef\",\"shape\":[2,3],"
                  "\"variant\":\"v\",\"isa\":\"avx2\",\"timestamp\":5}",
                  "$.timestamp: expected a string, or null, got 5");
  expect_bad_line("{\"schema\":\"lanemap.record/1\"} {}", "bad.jsonl:2:31: unexpected text after the JSON value");
  expect_bad_line("{\"schema\":\"lanemap.record/1\",\"schema\":\"lanemap.record/1\"}",
                  "bad.jsonl:2: $.schema: given twice");
}

Test(records, a_missing_file_is_bad_input) {
  lm_records rs;
  lm_error err = {0};
  cr_expect_eq(lm_records_read(tmp_path("none.jsonl"), &rs, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "none.jsonl"), "%s", err.msg);
}

Test(records, same_major_loads_and_unknown_fields_are_kept_in_extra) {
  const char *path = tmp_path("minor.jsonl");
  write_text(path, "{\"schema\":\"lanemap.record/1.7\",\"kernel\":\"k.lk\","
                   "\"kernel_hash\":\"0123456789abcdef\",\"shape\":[2,3],"
                   "\"variant\":\"v\",\"isa\":\"avx2\",\"user\":0.5,"
                   "\"newer\":{\"x\":1}}\n");
  lm_records rs;
  lm_error err = {0};
  cr_assert_eq(lm_records_read(path, &rs, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(rs.n, 1);
  cr_expect(cJSON_IsNumber(cJSON_GetObjectItem(rs.r[0].extra, "user")));
  cr_expect(cJSON_IsObject(cJSON_GetObjectItem(rs.r[0].extra, "newer")));
  lm_records_free(&rs);
}

Test(records, best_keeps_the_least_median_per_kernel_and_shape) {
  lm_records in = {0};
  in.n = 6;
  in.r = calloc(6, sizeof *in.r);
  /* key A (shape 4096x33, H=33): 3e-6, 1e-6 (unverified), 2e-6 -> 2e-6 */
  full_record(&in.r[0], "a0", 3e-6);
  full_record(&in.r[1], "a1", 1e-6);
  in.r[1].verified = 0;
  full_record(&in.r[2], "a2", 2e-6);
  /* key B: another shape */
  full_record(&in.r[3], "b0", 5e-6);
  in.r[3].R = 1;
  /* key C: other extra symbols; no median: never best */
  full_record(&in.r[4], "c0", 1e-6);
  free(in.r[4].extra_syms);
  in.r[4].extra_syms = NULL;
  in.r[4].median = NAN;
  /* key A again, not better */
  full_record(&in.r[5], "a3", 2.5e-6);
  lm_records best;
  lm_error err = {0};
  cr_assert_eq(lm_records_best(&in, &best, &err), LM_OK);
  cr_assert_eq(best.n, 2);
  cr_expect_str_eq(best.r[0].variant, "a2", "order of first appearance");
  cr_expect_str_eq(best.r[1].variant, "b0");
  expect_same(&best.r[0], &in.r[2]);
  lm_records_free(&best);
  lm_records_free(&in);
}

Test(records, write_is_atomic_and_reads_back) {
  const char *path = tmp_path("w.jsonl");
  lm_records rs = {0};
  rs.n = 2;
  rs.r = calloc(2, sizeof *rs.r);
  full_record(&rs.r[0], "x", 1e-6);
  full_record(&rs.r[1], "y", 2e-6);
  lm_error err = {0};
  cr_assert_eq(lm_records_write(path, &rs, &err), LM_OK, "%s", err.msg);
  lm_records back;
  cr_assert_eq(lm_records_read(path, &back, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(back.n, 2);
  expect_same(&rs.r[1], &back.r[1]);
  lm_records_free(&back);
  /* an unwritable folder is a system error and creates nothing */
  cr_expect_eq(lm_records_write(tmp_path("no/such/dir.jsonl"), &rs, &err),
               LM_ESYS);
  struct stat sb;
  cr_expect_neq(stat(tmp_path("no"), &sb), 0);
  /* a record that cannot be written leaves the old file whole */
  free(rs.r[1].variant);
  rs.r[1].variant = NULL;
  cr_expect_eq(lm_records_write(path, &rs, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "record 1") && strstr(err.msg, "variant"), "%s",
            err.msg);
  cr_assert_eq(lm_records_read(path, &back, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(back.n, 2);
  lm_records_free(&back);
  lm_records_free(&rs);
}
