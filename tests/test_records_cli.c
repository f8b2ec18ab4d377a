/* `lanemap records import` and `lanemap records best` on the fixtures of
 * tests/fixtures/records/: hyperfine --export-json files and TVM-style
 * JSON Lines logs that map onto the bundled rmsnorm kernel, and files that
 * cannot be mapped, each of which must fail with exit 2, a message naming
 * the file, the entry and the reason, and no output written. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/records.h"
/* Not every helper of run.h is used here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "tests/support/run.h"

#define FIX LANEMAP_SOURCE_DIR "/tests/fixtures/records/"
#define RMSNORM LANEMAP_SOURCE_DIR "/kernels/rmsnorm.lk"
#define V1 "x86-64-v3/w8/l8/phase=reread/t1"
#define V2 "x86-64-v3/w8/l1/priv=slot/glob=transpose/phase=snapshot/t1"

TestSuite(records_cli, .init = run_tmp_make, .fini = run_tmp_remove);

static lm_records read_ok(const char *path) {
  lm_records rs = {0};
  lm_error err = {0};
  cr_assert_eq(lm_records_read(path, &rs, &err), LM_OK, "%s", err.msg);
  return rs;
}

static const char *extra_str(const lm_record *r, const char *name) {
  const cJSON *j = r->extra ? cJSON_GetObjectItemCaseSensitive(r->extra, name)
                            : NULL;
  return cJSON_IsString(j) ? j->valuestring : "";
}

Test(records_cli, import_hyperfine_and_tvm) {
  char *out = run_tmp("r.jsonl");
  run_result r = RUN("records", "import", FIX "hyperfine.json", FIX "tvm.jsonl",
                     "--kernel", RMSNORM, "-o", out);
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "5 records from 2 files") != NULL, "%s", r.out);
  cr_expect(strstr(r.out, "1 failed measurements skipped") != NULL, "%s",
            r.out);
  run_free(&r);
  lm_records rs = read_ok(out);
  cr_assert_eq(rs.n, 5);
  /* hyperfine: its numbers as they are, seconds per run of the command */
  const lm_record *h = &rs.r[0];
  cr_expect_str_eq(h->variant, V1);
  cr_expect_str_eq(h->isa, "x86-64-v3");
  cr_expect_eq(h->R, 8);
  cr_expect_eq(h->C, 512);
  cr_expect_eq(h->mean, 0.0125);
  cr_expect_eq(h->stddev, 0.0005);
  cr_expect_eq(h->median, 0.0124);
  cr_expect_eq(h->min, 0.0119);
  cr_expect_eq(h->max, 0.0131);
  cr_assert_eq(h->ntimes, 3);
  cr_expect_eq(h->times[2], 0.0131);
  cr_expect_str_eq(extra_str(h, "source"), "hyperfine");
  cr_expect(strstr(extra_str(h, "command"), "--shape 8,512") != NULL);
  cr_expect_eq(strlen(h->kernel_hash), 16);
  cr_expect_str_eq(rs.r[1].variant, V2, "--variant=V form");
  /* the same kernel through hyperfine's path and TVM's task name */
  cr_expect_str_eq(rs.r[2].kernel_hash, h->kernel_hash);
  /* TVM: costs in seconds -> samples; error_no 4 skipped */
  const lm_record *t = &rs.r[2];
  cr_expect_str_eq(t->variant, V1);
  cr_expect_eq(t->ntimes, 3);
  cr_expect(fabs(t->median - 2.1e-6) < 1e-15, "median %g", t->median);
  cr_expect(fabs(t->min - 2.0e-6) < 1e-15, "min %g", t->min);
  cr_expect(fabs(t->max - 2.2e-6) < 1e-15, "max %g", t->max);
  cr_expect_str_eq(t->timestamp, "2025-12-02T12:00:00Z");
  cr_expect_str_eq(extra_str(t, "source"), "tvm");
  cr_expect_str_eq(extra_str(t, "task"), "rmsnorm");
  cr_expect_str_eq(extra_str(t, "target"), "llvm -mcpu=haswell");
  cr_expect_str_eq(rs.r[3].variant, V2);
  /* a task given as a .lk path, config.variant, another shape */
  cr_expect_eq(rs.r[4].R, 64);
  cr_expect_eq(rs.r[4].C, 128);
  cr_expect_str_eq(rs.r[4].kernel_hash, h->kernel_hash);
  lm_records_free(&rs);
}

Test(records_cli, import_adds_to_existing_records) {
  char *out = run_tmp("r.jsonl");
  for (int i = 0; i < 2; i++) {
    run_result r = RUN("records", "import", FIX "hyperfine.json", "-o", out);
    cr_assert_eq(r.code, 0, "%s", r.err);
    run_free(&r);
  }
  lm_records rs = read_ok(out);
  cr_expect_eq(rs.n, 4);
  lm_records_free(&rs);
}

Test(records_cli, import_defaults_fill_the_command) {
  char *out = run_tmp("r.jsonl");
  run_result r = RUN("records", "import", FIX "hyperfine_plain.json",
                     "--kernel", RMSNORM, "--shape", "8,512", "--variant", V2,
                     "-o", out);
  cr_assert_eq(r.code, 0, "%s", r.err);
  run_free(&r);
  lm_records rs = read_ok(out);
  cr_assert_eq(rs.n, 1);
  cr_expect_str_eq(rs.r[0].variant, V2);
  cr_expect(isnan(rs.r[0].stddev), "stddev null -> absent");
  cr_expect_eq(rs.r[0].ntimes, 1);
  lm_records_free(&rs);
}

/* An import that must fail with exit 2 and `want` in the message, and
 * leave no output file. */
static void import_fails(const char *file, const char *want, int with_kernel) {
  char *out = run_tmp("bad.jsonl");
  run_result r = with_kernel ? RUN("records", "import", file, "--kernel",
                                   RMSNORM, "-o", out)
                             : RUN("records", "import", file, "-o", out);
  cr_expect_eq(r.code, 2, "%s: exit %d\n%s", file, r.code, r.err);
  cr_expect(strstr(r.err, want) != NULL, "%s: expected '%s' in:\n%s", file,
            want, r.err);
  cr_expect(!run_exists(out), "%s: output written after an error", file);
  run_free(&r);
}

Test(records_cli, hyperfine_unmappable_is_an_error) {
  import_fails(FIX "hyperfine_plain.json",
               "hyperfine_plain.json: $.results[0].command: cannot map "
               "'./my_pipeline_step 8 512' onto a lanemap measurement: it "
               "names no kernel",
               0);
  import_fails(FIX "hyperfine_no_variant.json",
               "results[0].command: cannot map", 0);
  import_fails(FIX "hyperfine_no_variant.json", "names no variant", 0);
}

Test(records_cli, hyperfine_bad_fields) {
  import_fails(FIX "hyperfine_bad_mean.json",
               "hyperfine_bad_mean.json: $.results[0].mean: expected a finite "
               "number >= 0, got -1",
               0);
  import_fails(FIX "hyperfine_bad_variant.json",
               "$.results[0]: variant 'x86-64-v3/w8/l3/t1'", 0);
}

Test(records_cli, tvm_unmappable_is_an_error) {
  import_fails(FIX "tvm_unmapped.jsonl",
               "tvm_unmapped.jsonl:1: $.input[1]: task 'conv2d_nchw.x86' names "
               "no lanemap kernel",
               1);
  import_fails(FIX "tvm_no_variant.jsonl",
               "tvm_no_variant.jsonl:1: $.config: names no lanemap variant", 1);
  /* without --kernel the task name "rmsnorm" maps onto nothing */
  import_fails(FIX "tvm.jsonl", "tvm.jsonl:1: $.input[1]: task 'rmsnorm'", 0);
}

Test(records_cli, tvm_bad_line_names_line_and_field) {
  import_fails(FIX "tvm_bad_line.jsonl",
               "tvm_bad_line.jsonl:2: $.result[0][0]: expected a finite number >= "
               "0, got \"fast\"", 1);
}

Test(records_cli, not_a_log) {
  import_fails(FIX "not_a_log.txt",
               "not_a_log.txt: neither a hyperfine --export-json file nor a "
               "TVM-style JSON Lines log",
               0);
  import_fails(FIX "missing.json", "missing.json", 0);
  char *out = run_tmp("bad.jsonl");
  run_result r = RUN("records", "import", FIX "hyperfine.json", "--kernel",
                     FIX "no_such.lk", "-o", out);
  cr_expect_eq(r.code, 2, "%s", r.err);
  cr_expect(strstr(r.err, "--kernel") != NULL, "%s", r.err);
  run_free(&r);
}

Test(records_cli, usage_errors) {
  run_result r = RUN("records", "import", FIX "hyperfine.json");
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, "-o OUT.jsonl is required") != NULL, "%s", r.err);
  run_free(&r);
  r = RUN("records", "frobnicate");
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, "unknown action 'frobnicate'") != NULL, "%s", r.err);
  run_free(&r);
  r = RUN("records", "best", "-o", run_tmp("x.jsonl"));
  cr_expect_eq(r.code, 2);
  run_free(&r);
  r = RUN("records", "--help");
  cr_expect_eq(r.code, 0);
  cr_expect(strstr(r.out, "records import") != NULL);
  run_free(&r);
}

Test(records_cli, best_per_kernel_and_shape) {
  char *all = run_tmp("all.jsonl"), *best = run_tmp("best.jsonl");
  run_result r = RUN("records", "import", FIX "hyperfine.json", FIX "tvm.jsonl",
                     "--kernel", RMSNORM, "-o", all);
  cr_assert_eq(r.code, 0, "%s", r.err);
  run_free(&r);
  r = RUN("records", "best", all, "-o", best);
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "5 records -> 2 best") != NULL, "%s", r.out);
  run_free(&r);
  lm_records rs = read_ok(best);
  cr_assert_eq(rs.n, 2);
  /* 8x512: medians 0.0124, 0.0151 (hyperfine), 2.1e-6, 3.3e-6 (TVM) */
  cr_expect_eq(rs.r[0].R, 8);
  cr_expect_str_eq(rs.r[0].variant, V1);
  cr_expect(fabs(rs.r[0].median - 2.1e-6) < 1e-15);
  cr_expect_str_eq(extra_str(&rs.r[0], "source"), "tvm");
  cr_expect_eq(rs.r[1].R, 64);
  lm_records_free(&rs);
  r = RUN("records", "best", FIX "missing.jsonl", "-o", best);
  cr_expect_eq(r.code, 2, "%s", r.err);
  run_free(&r);
}

Test(records_cli, a_truncated_hyperfine_file_says_so) {
  import_fails(FIX "hyperfine_truncated.json",
               "hyperfine_truncated.json: truncated JSON: the text ends "
               "inside an object, an array or a string",
               0);
}

Test(records_cli, a_key_given_twice_is_an_error) {
  import_fails(FIX "hyperfine_duplicate_key.json",
               "hyperfine_duplicate_key.json: $.results[0].mean: given twice",
               0);
}

Test(records_cli, a_tvm_shape_that_is_not_an_integer_is_refused) {
  import_fails(FIX "tvm_fractional_shape.jsonl",
               "tvm_fractional_shape.jsonl:1: $.input[2][0]: expected a "
               "positive integer, got 8.5",
               1);
}

Test(records_cli, a_tvm_variant_that_is_not_a_string_is_refused) {
  import_fails(FIX "tvm_variant_not_a_string.jsonl",
               "tvm_variant_not_a_string.jsonl:1: $.config.variant: expected a "
               "non-empty string, got 7",
               1);
}
