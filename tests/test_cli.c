/* Claims about the lanemap command: its exit codes (0 ok, 1 a checked
 * property failed, 2 bad input or usage), its diagnostics, and the files it
 * writes.  Each test runs the built CLI (LANEMAP_CLI) as a child process
 * with stdout and stderr captured to files in a fresh temp folder. */
#include "tests/support/run.h"

#include <glob.h>

#include <cjson/cJSON.h>

#define KERNELS LANEMAP_SOURCE_DIR "/kernels"

TestSuite(cli, .init = run_tmp_make, .fini = run_tmp_remove, .timeout = 600);

/* Parse JSON Lines text into an array of records; every line must parse. */
static cJSON *parse_jsonl(const char *text) {
  cJSON *all = cJSON_CreateArray();
  for (const char *line = text; *line;) {
    const char *end = strchr(line, '\n');
    cr_assert_not_null(end, "the last record ends with a newline");
    cJSON *rec = cJSON_ParseWithLength(line, (size_t)(end - line));
    cr_assert_not_null(rec, "line is valid JSON: %.80s", line);
    cJSON_AddItemToArray(all, rec);
    line = end + 1;
  }
  return all;
}

static const char *str_field(const cJSON *o, const char *name) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
  cr_assert(cJSON_IsString(v), "field %s is a string", name);
  return v->valuestring;
}

/* ---- the command ---- */

Test(cli, version_prints_the_library_version_and_exits_0) {
  run_result r = RUN("--version");
  cr_expect_eq(r.code, 0);
  cr_expect(strncmp(r.out, "lanemap " LANEMAP_VERSION_STRING,
                    strlen("lanemap " LANEMAP_VERSION_STRING)) == 0,
            "stdout: %s", r.out);
  run_free(&r);
}

Test(cli, help_lists_every_subcommand_and_exits_0) {
  const char *forms[] = {"--help", "-h", "help"};
  for (int i = 0; i < 3; i++) {
    run_result r = RUN(forms[i]);
    cr_expect_eq(r.code, 0, "%s", forms[i]);
    cr_expect(strstr(r.out, "check") && strstr(r.out, "oracle") &&
                  strstr(r.out, "evaluate"),
              "%s: %s", forms[i], r.out);
    run_free(&r);
  }
}

Test(cli, every_subcommand_has_help_that_exits_0) {
  const char *cmds[] = {"check", "oracle", "evaluate"};
  for (int i = 0; i < 3; i++) {
    run_result r = RUN(cmds[i], "--help");
    cr_expect_eq(r.code, 0, "%s --help", cmds[i]);
    cr_expect(strstr(r.out, "usage: lanemap ") != NULL, "%s: %s", cmds[i],
              r.out);
    run_free(&r);
  }
}

Test(cli, unknown_subcommand_exits_2_with_usage_on_stderr) {
  run_result r = RUN("frobnicate");
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, "unknown command 'frobnicate'") != NULL, "%s", r.err);
  cr_expect(strstr(r.err, "usage:") != NULL);
  cr_expect_eq(r.out[0], 0, "nothing on stdout");
  run_free(&r);
}

Test(cli, no_subcommand_exits_2) {
  run_result r = run_cli((const char *const[]){NULL});
  cr_expect_eq(r.code, 2);
  run_free(&r);
}

/* ---- check ---- */

Test(cli, check_accepts_every_bundled_kernel) {
  glob_t g;
  cr_assert_eq(glob(KERNELS "/*.lk", 0, NULL, &g), 0);
  cr_assert_geq(g.gl_pathc, 6);
  const char *args[64] = {"check"};
  size_t n = 1;
  for (size_t i = 0; i < g.gl_pathc && n < 62; i++)
    args[n++] = g.gl_pathv[i];
  args[n] = NULL;
  run_result r = run_cli(args);
  cr_expect_eq(r.code, 0, "stderr: %s", r.err);
  cr_expect_eq(run_count_lines(r.out, ": ok (kernel "), (int)g.gl_pathc, "%s",
               r.out);
  run_free(&r);
  globfree(&g);
}

Test(cli, check_refuses_a_kernel_whose_f32_value_may_overflow_with_exit_2) {
  char *big = run_tmp("big.lk");
  run_write(big, "kernel big(x: f32[R, C] in(10, 100)) -> (y: f32[R, C]) {\n"
                 "  y[r, :] = x[r, :] * 1e38\n"
                 "}\n");
  /* check, and run: refused before any variant is built, instead of every
   * variant failing verification with exit 1 */
  const char *argv[][8] = {{"check", big, NULL},
                           {"run", big, "--shape", "4,8", "--variant",
                            "x86-64-v2/w4/l4/t1", "--verify", NULL}};
  for (int i = 0; i < 2; i++) {
    run_result r = run_cli(argv[i]);
    cr_expect_eq(r.code, 2, "%s: exit %d", argv[i][0], r.code);
    cr_expect(strstr(r.err, "big.lk:2:21: error: value may overflow f32: "
                            "x[r, :] * 1e+38 is in [1e+39, 1e+40] for the "
                            "declared inputs (f32 max 3.4e+38)"),
              "%s", r.err);
    cr_expect_eq(r.out[0], 0, "%s: nothing on stdout: %s", argv[i][0], r.out);
    run_free(&r);
  }
}

Test(cli, run_verifies_a_kernel_with_a_view_step_of_16) {
  /* the largest step; a step of 64 used to overflow the compiler's stack */
  char *k = run_tmp("step16.lk");
  run_write(k, "kernel s16(x: f32[R, 16*H]) -> (y: f32[R, 16*H]) {\n"
               "  y[r, 15::16] = x[r, 3::16] * 2\n"
               "}\n");
  run_result r =
      RUN("run", k, "--shape", "5,48", "--variant",
          "x86-64-v2/w4/l4/t1,x86-64-v2/w4/l1/glob=transpose/t1", "--verify");
  cr_expect_eq(r.code, 0, "stdout: %s\nstderr: %s", r.out, r.err);
  cr_expect_eq(run_count_lines(r.out, "ok, verified"), 2, "%s", r.out);
  run_free(&r);
}

Test(cli, check_reports_file_line_col_and_exits_2_on_a_malformed_kernel) {
  char *bad = run_tmp("bad.lk");
  run_write(bad, "kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                  "  y[r, :] = xz[r, :]\n"
                  "}\n");
  /* A good file after the bad one is still checked. */
  run_result r = RUN("check", bad, KERNELS "/rmsnorm.lk");
  cr_expect_eq(r.code, 2);
  char prefix[600];
  snprintf(prefix, sizeof prefix, "%s:2:", bad);
  cr_expect(strncmp(r.err, prefix, strlen(prefix)) == 0, "stderr: %s", r.err);
  const char *rest = r.err + strlen(prefix);
  while (*rest >= '0' && *rest <= '9')
    rest++;
  cr_expect(strncmp(rest, ": error: ", 9) == 0, "stderr: %s", r.err);
  cr_expect_eq(run_count_lines(r.out, "rmsnorm.lk: ok (kernel rmsnorm"), 1, "%s",
               r.out);
  run_free(&r);
}

Test(cli, check_of_a_missing_file_exits_2) {
  run_result r = RUN("check", "/nonexistent/k.lk");
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, "/nonexistent/k.lk") != NULL, "%s", r.err);
  run_free(&r);
}

Test(cli, check_print_emits_source_that_checks_again) {
  run_result r = RUN("check", "--print", KERNELS "/layernorm.lk");
  cr_assert_eq(r.code, 0, "%s", r.err);
  const char *src = strstr(r.out, "\nkernel layernorm(");
  cr_assert_not_null(src, "%s", r.out);
  src++;
  char *printed = run_tmp("printed.lk");
  run_write(printed, src);
  run_result again = RUN("check", printed);
  cr_expect_eq(again.code, 0, "%s", again.err);
  run_free(&again);
  run_free(&r);
}

Test(cli, check_print_ir_lists_at_least_one_line_per_node) {
  run_result plain = RUN("check", KERNELS "/rmsnorm.lk");
  run_result ir = RUN("check", "--print-ir", KERNELS "/rmsnorm.lk");
  cr_assert_eq(plain.code, 0, "%s", plain.err);
  cr_expect_eq(ir.code, 0, "%s", ir.err);
  const char *nodes = strstr(plain.out, ", ");
  cr_assert_not_null(nodes, "%s", plain.out);
  int nnodes = atoi(nodes + 2);
  cr_expect_gt(nnodes, 0, "%s", plain.out);
  cr_expect_geq(run_count_lines(ir.out, ""), 1 + nnodes, "%s", ir.out);
  run_free(&plain);
  run_free(&ir);
}

Test(cli, check_without_files_or_with_an_unknown_option_exits_2) {
  run_result r = RUN("check");
  cr_expect_eq(r.code, 2);
  run_free(&r);
  r = RUN("check", "--frob", KERNELS "/rmsnorm.lk");
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, "--frob") != NULL, "%s", r.err);
  run_free(&r);
}

/* ---- oracle ---- */

Test(cli, oracle_rejects_bad_shapes_with_exit_2) {
  const char *shapes[] = {"0,4", "-1,4", "a,b", "99999999999,99999999999",
                          "17",  ""};
  for (int i = 0; i < 6; i++) {
    char *out = run_tmp("bad_shape.jsonl");
    run_result r = RUN("oracle", KERNELS "/rmsnorm.lk", "--shape", shapes[i],
                       "--out", out);
    cr_expect_eq(r.code, 2, "shape '%s'", shapes[i]);
    cr_expect_neq(r.err[0], 0, "shape '%s' explains itself", shapes[i]);
    cr_expect_not(run_exists(out), "shape '%s' writes nothing", shapes[i]);
    run_free(&r);
  }
}

Test(cli, oracle_rejects_a_shape_the_kernel_cannot_take) {
  /* rope's row is 2*H columns wide, so C must be even. */
  run_result r = RUN("oracle", KERNELS "/rope.lk", "--shape", "17,65");
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, "rope.lk") != NULL, "%s", r.err);
  cr_expect_eq(r.out[0], 0);
  run_free(&r);
}

Test(cli, oracle_out_on_a_malformed_kernel_exits_2_and_creates_no_file) {
  char *bad = run_tmp("bad.lk");
  run_write(bad, "kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                  "  y[r, :] = sum(1.0)\n"
                  "}\n");
  char *out = run_tmp("never.jsonl");
  run_result r = RUN("oracle", bad, "--shape", "4,8", "--out", out);
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, ": error: ") != NULL, "%s", r.err);
  cr_expect_not(run_exists(out));
  run_free(&r);
}

Test(cli, oracle_out_writes_one_valid_jsonl_record) {
  char *out = run_tmp("rms.jsonl");
  run_result r = RUN("oracle", KERNELS "/rmsnorm.lk", "--shape", "17,65",
                     "--seed", "7", "--out", out);
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect_eq(r.out[0], 0, "with --out nothing goes to stdout");
  char *text = run_slurp(out);
  cJSON *recs = parse_jsonl(text);
  cr_assert_eq(cJSON_GetArraySize(recs), 1);
  cJSON *rec = cJSON_GetArrayItem(recs, 0);
  cr_expect_str_eq(str_field(rec, "schema"), "lanemap.oracle/1");
  cr_expect_str_eq(str_field(rec, "kernel"), "rmsnorm");
  cr_expect_null(cJSON_GetObjectItemCaseSensitive(rec, "case"));
  cJSON *shape = cJSON_GetObjectItemCaseSensitive(rec, "shape");
  cr_assert(cJSON_IsArray(shape));
  cr_expect_eq(cJSON_GetNumberValue(cJSON_GetArrayItem(shape, 0)), 17);
  cr_expect_eq(cJSON_GetNumberValue(cJSON_GetArrayItem(shape, 1)), 65);
  cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(rec, "seed")), 7);
  cJSON *summary = cJSON_GetObjectItemCaseSensitive(rec, "summary");
  cJSON *outs = cJSON_GetObjectItemCaseSensitive(summary, "outputs");
  cr_assert_eq(cJSON_GetArraySize(outs), 1);
  cJSON *y = cJSON_GetArrayItem(outs, 0);
  cr_expect_str_eq(str_field(y, "name"), "y");
  cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(y, "count")), 17 * 65);
  cJSON_Delete(recs);
  free(text);
  run_free(&r);
}

Test(cli, oracle_prints_to_stdout_without_out_and_is_deterministic_per_seed) {
  run_result a = RUN("oracle", KERNELS "/swiglu.lk", "--shape", "17x65");
  run_result b = RUN("oracle", KERNELS "/swiglu.lk", "--shape", "17x65");
  run_result c =
      RUN("oracle", KERNELS "/swiglu.lk", "--shape", "17x65", "--seed", "2");
  cr_assert_eq(a.code, 0, "%s", a.err);
  cr_expect_eq(run_count_lines(a.out, "\"schema\":\"lanemap.oracle/1\""), 1);
  cr_expect_str_eq(a.out, b.out, "same seed, same record");
  cr_expect_str_neq(a.out, c.out, "another seed, other inputs");
  run_free(&a);
  run_free(&b);
  run_free(&c);
}

Test(cli, oracle_out_into_a_missing_folder_fails_with_a_clear_message) {
  run_result r = RUN("oracle", KERNELS "/rmsnorm.lk", "--shape", "4,8", "--out",
                     "/nonexistent/dir/x.jsonl");
  cr_expect_neq(r.code, 0);
  cr_expect(strstr(r.err, "/nonexistent/dir/x.jsonl") != NULL, "%s", r.err);
  cr_expect(strstr(r.err, "cannot write") != NULL, "%s", r.err);
  run_free(&r);
}

Test(cli, oracle_rejects_bad_usage_with_exit_2) {
  const char *const *cases[] = {
      (const char *const[]){"oracle", NULL},
      (const char *const[]){"oracle", KERNELS "/rmsnorm.lk", NULL},
      (const char *const[]){"oracle", KERNELS "/rmsnorm.lk", "--shape", NULL},
      (const char *const[]){"oracle", KERNELS "/rmsnorm.lk", "--shape", "4,8",
                            "--seed", "-3", NULL},
      (const char *const[]){"oracle", KERNELS "/rmsnorm.lk", "--shape", "4,8",
                            "--seed", "9007199254740992", NULL},
      (const char *const[]){"oracle", "--suite", KERNELS "/suite.json",
                            "--shape", "4,8", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    run_result r = run_cli(cases[i]);
    cr_expect_eq(r.code, 2, "case %zu: %s", i, r.err);
    run_free(&r);
  }
}

Test(cli, oracle_suite_writes_one_record_per_case) {
  char *out = run_tmp("suite.jsonl");
  run_result r = RUN("oracle", "--suite", KERNELS "/suite.json", "--out", out);
  cr_assert_eq(r.code, 0, "%s", r.err);
  char *text = run_slurp(out);
  cJSON *recs = parse_jsonl(text);
  cr_assert_eq(cJSON_GetArraySize(recs), 15);
  cJSON *rec;
  int i = 0;
  cJSON_ArrayForEach(rec, recs) {
    cr_expect_str_eq(str_field(rec, "schema"), "lanemap.oracle/1");
    const char *id = str_field(rec, "case");
    cr_expect(strncmp(id, str_field(rec, "kernel"),
                      strlen(str_field(rec, "kernel"))) == 0,
              "case %s names its kernel", id);
    i++;
  }
  cr_expect_str_eq(str_field(cJSON_GetArrayItem(recs, 0), "case"),
                   "rmsnorm-1x4096");
  cr_expect_str_eq(str_field(cJSON_GetArrayItem(recs, 14), "case"),
                   "rope-64x128");
  cJSON_Delete(recs);
  free(text);
  run_free(&r);
}

Test(cli, oracle_suite_names_the_malformed_field_and_writes_nothing) {
  char *suite = run_tmp("suite.json");
  char *out = run_tmp("suite.jsonl");
  run_write(suite, "{\"schema\": \"lanemap.suite/1\", \"cases\": ["
                    "{\"id\": \"a\", \"kernel\": \"" KERNELS "/rmsnorm.lk\","
                    " \"shape\": [4, 8]},"
                    "{\"id\": \"b\", \"kernel\": \"" KERNELS "/rmsnorm.lk\","
                    " \"shape\": [0, 8]}]}");
  run_result r = RUN("oracle", "--suite", suite, "--out", out);
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, "cases[1].shape") != NULL, "%s", r.err);
  cr_expect_not(run_exists(out));
  run_free(&r);

  run_write(suite, "{\"schema\": \"lanemap.suite/1\", \"cases\": [");
  r = RUN("oracle", "--suite", suite);
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, "truncated JSON") != NULL, "%s", r.err);
  run_free(&r);
}

Test(cli, oracle_suite_resolves_kernels_relative_to_the_suite_file) {
  char *suite = run_tmp("suite.json");
  run_write(suite, "{\"schema\": \"lanemap.suite/1\", \"cases\": ["
                    "{\"id\": \"a\", \"kernel\": \"rmsnorm.lk\","
                    " \"shape\": [4, 8]}]}");
  /* rmsnorm.lk is not beside this suite: the error names the resolved path */
  run_result r = RUN("oracle", "--suite", suite);
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, run_tmp("rmsnorm.lk")) != NULL, "%s", r.err);
  run_free(&r);
}

/* evaluate: tests/test_evaluate.c */
