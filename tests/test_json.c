/* The JSON layer (include/lanemap/json.h) and the loaders built on it:
 *
 * - parse errors name file:line:col, or say that the text was cut off;
 * - a key given twice, text after the value, nesting past the limit and a
 *   file past the size limit are refused, each with its own message;
 * - typed reads name the field by its JSON path and say what it holds;
 * - doubles are written as the shortest text that reads back exactly;
 * - every malformed file in tests/golden/{plan,workload,cases,records}
 *   gives the message in its NAME.err, from the library and from the CLI
 *   (exit code 2). */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <float.h>
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lanemap/cases.h"
#include "lanemap/json.h"
#include "lanemap/plan.h"
#include "lanemap/records.h"
#include "lanemap/workload.h"
#include "tests/support/run.h"

TestSuite(json, .init = run_tmp_make, .fini = run_tmp_remove);

/* lm_json_parse of text; the message if it fails, "" if not. */
static const char *parse_msg(const char *text) {
  static lm_error err;
  memset(&err, 0, sizeof err);
  cJSON *j = NULL;
  if (lm_json_parse("f.json", text, strlen(text), &j, &err) == LM_OK) {
    cJSON_Delete(j);
    return "";
  }
  cr_expect_eq(err.status, LM_EINPUT, "%s", err.msg);
  return err.msg;
}

Test(json, syntax_errors_name_line_and_column) {
  cr_expect_str_eq(parse_msg("{\n  \"a\": 1,\n  \"b\": tru\n}"),
                   "f.json:3:8: invalid JSON");
  cr_expect_str_eq(parse_msg("{\"a\": NaN}"), "f.json:1:7: invalid JSON");
}

Test(json, text_after_the_value_is_refused_where_it_starts) {
  cr_expect_str_eq(parse_msg("{}\n\n  {}\n"),
                   "f.json:3:3: unexpected text after the JSON value");
  cr_expect_str_eq(parse_msg("{} \n"), "");
}

Test(json, a_text_cut_off_says_so) {
  cr_expect_str_eq(parse_msg("{\"a\": [1, 2"),
                   "f.json: truncated JSON: the text ends inside an object, "
                   "an array or a string");
  cr_expect_str_eq(parse_msg("{\"a\": \"xy"),
                   "f.json: truncated JSON: the text ends inside an object, "
                   "an array or a string");
}

Test(json, empty_and_blank_texts_are_refused) {
  cr_expect_str_eq(parse_msg(""), "f.json: empty file, expected a JSON value");
  cr_expect_str_eq(parse_msg(" \n\t\n"),
                   "f.json: empty file, expected a JSON value");
}

Test(json, a_nul_byte_is_refused_at_its_position) {
  lm_error err = {0};
  cJSON *j = NULL;
  cr_expect_eq(lm_json_parse("f.json", "{\n \0}", 4, &j, &err), LM_EINPUT);
  cr_expect_str_eq(err.msg, "f.json:2:2: a NUL byte: not JSON text");
}

Test(json, a_key_given_twice_is_refused_with_its_path) {
  cr_expect_str_eq(parse_msg("{\"a\": 1, \"a\": 2}"),
                   "f.json: $.a: given twice");
  cr_expect_str_eq(parse_msg("{\"k\": [{}, {\"x\": {\"y\": 1, \"z\": 2, "
                             "\"y\": 3}}]}"),
                   "f.json: $.k[1].x.y: given twice");
  /* an object of many keys is sorted, not compared pairwise */
  char *big = malloc(20 * 100000 + 16);
  size_t n = (size_t)sprintf(big, "{");
  for (int i = 0; i < 100000; i++)
    n += (size_t)sprintf(big + n, "%s\"k%d\": 1", i ? ", " : "", i);
  n += (size_t)sprintf(big + n, ", \"k77\": 2}");
  cr_expect_str_eq(parse_msg(big), "f.json: $.k77: given twice");
  free(big);
}

Test(json, nesting_past_the_limit_is_reported_as_itself) {
  char deep[2 * LM_JSON_MAX_DEPTH + 8];
  int d = LM_JSON_MAX_DEPTH;
  memset(deep, '[', (size_t)d);
  memset(deep + d, ']', (size_t)d);
  deep[2 * d] = 0;
  cr_expect_str_eq(parse_msg(deep), "");
  memset(deep, '[', (size_t)d + 1);
  memset(deep + d + 1, ']', (size_t)d + 1);
  deep[2 * d + 2] = 0;
  char want[128];
  snprintf(want, sizeof want,
           "f.json:1:%d: nested deeper than %d objects and arrays", d + 1, d);
  cr_expect_str_eq(parse_msg(deep), want);
  /* brackets inside strings do not count */
  char s[2 * LM_JSON_MAX_DEPTH + 16] = "[\"";
  memset(s + 2, '[', 2 * LM_JSON_MAX_DEPTH);
  strcpy(s + 2 + 2 * LM_JSON_MAX_DEPTH, "\"]");
  cr_expect_str_eq(parse_msg(s), "");
}

Test(json, a_text_past_the_size_limit_is_refused_before_parsing) {
  lm_error err = {0};
  cJSON *j = NULL;
  /* the length alone decides: the text is never read */
  cr_expect_eq(lm_json_parse("f.json", "{}", LM_JSON_MAX_BYTES + 1, &j, &err),
               LM_EINPUT);
  char want[160];
  snprintf(want, sizeof want,
           "f.json: %zu bytes, more than the %zu MiB a JSON file may hold",
           LM_JSON_MAX_BYTES + 1, LM_JSON_MAX_BYTES >> 20);
  cr_expect_str_eq(err.msg, want);
}

Test(json, a_file_past_the_size_limit_is_refused_after_a_bounded_read) {
  char *path = run_tmp("big.json");
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  cr_assert_eq(ftruncate(fileno(f), (off_t)LM_JSON_MAX_BYTES + 4096), 0);
  fclose(f);
  char *text = NULL;
  lm_error err = {0};
  cr_expect_eq(lm_json_read_file(path, &text, NULL, &err), LM_EINPUT);
  cr_expect_null(text);
  cr_expect(strstr(err.msg, "the most a JSON file may hold") != NULL, "%s",
            err.msg);
  cr_expect_eq(lm_json_read_file(run_tmpdir, &text, NULL, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "cannot read: Is a directory") != NULL, "%s", err.msg);
  path = run_tmp("small.json");
  run_write(path, "{\"a\": [1]}\n");
  cJSON *j = NULL;
  cr_expect_eq(lm_json_load(path, &j, &err), LM_OK, "%s", err.msg);
  cJSON_Delete(j);
}

Test(json, a_json_lines_document_names_its_line) {
  lm_error err = {0};
  cJSON *j = NULL;
  const char *line = "{\"a\": 1, \"b\": }";
  cr_expect_eq(lm_json_parse_at("r.jsonl", 7, line, strlen(line), &j, &err),
               LM_EINPUT);
  cr_expect_str_eq(err.msg, "r.jsonl:7:15: invalid JSON");
  line = "{\"a\": 1, \"a\": 2}";
  cr_expect_eq(lm_json_parse_at("r.jsonl", 7, line, strlen(line), &j, &err),
               LM_EINPUT);
  cr_expect_str_eq(err.msg, "r.jsonl:7: $.a: given twice");
}

/* ---- typed reads --------------------------------------------------------- */

static cJSON *parse_ok(const char *text) {
  cJSON *j = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_json_parse("p.json", text, strlen(text), &j, &err), LM_OK,
               "%s", err.msg);
  return j;
}

Test(json, a_wrong_type_is_named_by_its_path_and_value) {
  cJSON *root =
      parse_ok("{\"kernels\": [{}, {}, {\"buckets\": [{\"R\": true}]}]}");
  lm_error err = {0};
  lm_json_rd r = {"plan.json", root, &err};
  const cJSON *b =
      lm_json_get(lm_json_get(root, "kernels")->child->next->next, "buckets")
          ->child;
  int64_t R = 0;
  cr_expect_eq(lm_json_int(&r, b, "R", 0, 1, INT64_C(1) << 53, &R), LM_EINPUT);
  cr_expect_str_eq(err.msg, "plan.json: $.kernels[2].buckets[0].R: expected a "
                            "positive integer, got true");
  cr_expect_eq(lm_json_int(&r, b, "C", 0, 1, INT64_C(1) << 40, &R), LM_EINPUT);
  cr_expect_str_eq(err.msg, "plan.json: $.kernels[2].buckets[0].C: missing "
                            "field, expected an integer from 1 to 2^40");
  cr_expect_eq(lm_json_int(&r, b, "C", LM_JSON_OPTIONAL, 1, 8, &R), LM_OK);
  cJSON_Delete(root);
}

Test(json, values_are_described_as_they_are) {
  cJSON *root = parse_ok("{\"n\": -0.5, \"s\": \"abc\", \"a\": [1, 2, 3], "
                         "\"o\": {}, \"z\": null, \"big\": 1e999}");
  lm_error err = {0};
  lm_json_rd r = {"f", root, &err};
  const char *s;
  double x;
  const cJSON *o;
  cr_expect_eq(lm_json_string(&r, root, "n", 0, 0, &s), LM_EINPUT);
  cr_expect_str_eq(err.msg, "f: $.n: expected a non-empty string, got -0.5");
  cr_expect_eq(lm_json_number(&r, root, "s", 0, 0, DBL_MAX, &x), LM_EINPUT);
  cr_expect_str_eq(err.msg, "f: $.s: expected a finite number >= 0, got "
                            "\"abc\"");
  cr_expect_eq(lm_json_object(&r, root, "a", 0, &o), LM_EINPUT);
  cr_expect_str_eq(err.msg, "f: $.a: expected an object, got an array of 3 "
                            "elements");
  cr_expect_eq(lm_json_array(&r, root, "o", 0, 1, 4, &o), LM_EINPUT);
  cr_expect_str_eq(err.msg, "f: $.o: expected an array of 1 to 4 elements, "
                            "got an object");
  cr_expect_eq(lm_json_number(&r, root, "z", 0, -DBL_MAX, DBL_MAX, &x),
               LM_EINPUT);
  cr_expect_str_eq(err.msg, "f: $.z: expected a finite number, got null");
  x = 7;
  cr_expect_eq(lm_json_number(&r, root, "z", LM_JSON_NULL_OK, 0, 1, &x), LM_OK);
  cr_expect_eq(x, 7, "null leaves the value as it was");
  cr_expect_eq(lm_json_number(&r, root, "big", 0, 0, DBL_MAX, &x), LM_EINPUT);
  cr_expect_str_eq(err.msg, "f: $.big: expected a finite number >= 0, got inf "
                            "(out of the range of a double)");
  cJSON_Delete(root);
}

Test(json, a_long_string_is_described_by_its_length) {
  char *text = malloc(7000);
  strcpy(text, "{\"path\": \"");
  memset(text + 10, 'x', 6000);
  strcpy(text + 6010, "\"}");
  cJSON *root = parse_ok(text);
  lm_error err = {0};
  lm_json_rd r = {"f", root, &err};
  const char *s;
  cr_expect_eq(lm_json_string(&r, root, "path", 0, 4000, &s), LM_EINPUT);
  cr_expect_str_eq(err.msg, "f: $.path: expected a non-empty string of at "
                            "most 4000 bytes, got a string of 6000 bytes");
  cJSON_Delete(root);
  free(text);
}

Test(json, unknown_fields_are_named) {
  cJSON *root = parse_ok("{\"a\": {\"known\": 1, \"knwon\": 2}}");
  lm_error err = {0};
  lm_json_rd r = {"f", root, &err};
  static const char *const known[] = {"known", NULL};
  cr_expect_eq(lm_json_fields(&r, lm_json_get(root, "a"), known), LM_EINPUT);
  cr_expect_str_eq(err.msg, "f: $.a: unknown field \"knwon\"");
  cJSON_Delete(root);
}

/* ---- writing ------------------------------------------------------------- */

Test(json, doubles_are_written_shortest_and_read_back_exactly) {
  const double v[] = {0.1 + 0.2, 1e-7,   5e-324, DBL_MAX, -0.0,  1.0 / 3,
                      1.2e17,    2.5e-9, 1,      1500,    1234.5};
  const char *want[] = {"0.30000000000000004",
                        "1e-07",
                        "5e-324",
                        "1.7976931348623157e+308",
                        "-0",
                        "0.3333333333333333",
                        "1.2e+17",
                        "2.5e-09",
                        "1",
                        "1500",
                        "1234.5"};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    char buf[LM_JSON_NUM_LEN];
    lm_json_fmt_double(v[i], buf);
    cr_expect_str_eq(buf, want[i]);
    cr_expect(strtod(buf, NULL) == v[i], "%s does not read back", buf);
  }
}

Test(json, an_exact_tree_prints_every_number_exactly_and_nonfinite_as_null) {
  cJSON *root = cJSON_CreateObject();
  cJSON_AddNumberToObject(root, "a", 0.1 + 0.2);
  cJSON_AddNumberToObject(root, "b", INFINITY);
  cJSON *arr = cJSON_AddArrayToObject(root, "c");
  cJSON_AddItemToArray(arr, cJSON_CreateNumber(1.0 / 3));
  lm_error err = {0};
  cr_assert_eq(lm_json_exact(root, &err), LM_OK);
  char *text = NULL;
  size_t n = 0;
  cr_assert_eq(lm_json_print(root, false, &text, &n, &err), LM_OK);
  cr_expect_str_eq(text, "{\"a\":0.30000000000000004,\"b\":null,"
                         "\"c\":[0.3333333333333333]}\n");
  cr_expect_eq(n, strlen(text));
  free(text);
  cJSON_Delete(root);
}

/* ---- golden files of the loaders -------------------------------------- */

typedef enum Loader { PLAN, WORKLOAD, CASES, RECORDS } Loader;

static const char *const dirs[] = {"plan", "workload", "cases", "records"};

static lm_status load(Loader l, const char *path, lm_error *err) {
  lm_status s;
  switch (l) {
  case PLAN: {
    lm_plan *p = NULL;
    s = lm_plan_load(path, &p, NULL, err);
    cr_expect(s == LM_OK || p == NULL);
    lm_plan_free(p);
    return s;
  }
  case WORKLOAD: {
    lm_workload *w = NULL;
    s = lm_workload_load(path, &w, err);
    cr_expect(s == LM_OK || w == NULL);
    lm_workload_free(w);
    return s;
  }
  case CASES: {
    lm_cases cs;
    s = lm_cases_load(path, &cs, err);
    if (s == LM_OK)
      lm_cases_free(&cs);
    return s;
  }
  case RECORDS: {
    lm_records rs;
    s = lm_records_read(path, &rs, err);
    if (s == LM_OK)
      lm_records_free(&rs);
    return s;
  }
  }
  abort();
}

/* The golden inputs of loader l, as paths relative to the source tree
 * (messages name the file as given); the count. */
static int goldens(Loader l, glob_t *g) {
  char pat[256];
  snprintf(pat, sizeof pat, "tests/golden/%s/*.json%s", dirs[l],
           l == RECORDS ? "l" : "");
  cr_assert_eq(chdir(LANEMAP_SOURCE_DIR), 0);
  if (glob(pat, 0, NULL, g) != 0)
    return 0;
  return (int)g->gl_pathc;
}

/* The first line of NAME.err beside NAME.json[l]. */
static char *want_of(const char *path) {
  char errpath[512];
  snprintf(errpath, sizeof errpath, "%.*s.err",
           (int)(strrchr(path, '.') - path), path);
  char *want = NULL;
  lm_error e = {0};
  cr_assert_eq(lm_file_read(errpath, &want, NULL, &e), LM_OK, "%s", e.msg);
  want[strcspn(want, "\n")] = 0;
  return want;
}

static void check_goldens(Loader l, int at_least) {
  glob_t g;
  int n = goldens(l, &g);
  cr_expect_geq(n, at_least, "only %d malformed %s files", n, dirs[l]);
  for (int i = 0; i < n; i++) {
    const char *path = g.gl_pathv[i];
    char *want = want_of(path);
    lm_error err = {0};
    cr_expect_eq(load(l, path, &err), LM_EINPUT, "%s: accepted", path);
    cr_expect_str_eq(err.msg, want, "%s:\n got: %s\nwant: %s", path, err.msg,
                     want);
    free(want);
  }
  if (n)
    globfree(&g);
}

Test(json, malformed_plans_give_the_golden_message) { check_goldens(PLAN, 12); }
Test(json, malformed_workloads_give_the_golden_message) {
  check_goldens(WORKLOAD, 10);
}
Test(json, malformed_case_lists_give_the_golden_message) {
  check_goldens(CASES, 10);
}
Test(json, malformed_records_give_the_golden_message) {
  check_goldens(RECORDS, 10);
}

Test(json, the_golden_good_files_load) {
  cr_assert_eq(chdir(LANEMAP_SOURCE_DIR), 0);
  lm_error err = {0};
  cr_expect_eq(load(PLAN, "tests/golden/plan/ok/plan.json", &err), LM_OK, "%s",
               err.msg);
  cr_expect_eq(load(WORKLOAD, "tests/golden/workload/ok/workload.json", &err),
               LM_OK, "%s", err.msg);
}

/* The same files through the CLI: exit 2 and the golden message. */
static void check_cli(Loader l) {
  glob_t g;
  int n = goldens(l, &g);
  char out[512]; /* run_tmp's buffers rotate */
  snprintf(out, sizeof out, "%s", run_tmp("out.json"));
  for (int i = 0; i < n; i++) {
    const char *path = g.gl_pathv[i];
    char *want = want_of(path);
    run_result r;
    switch (l) {
    case PLAN:
      r = RUN("compile", "--plan", path);
      break;
    case WORKLOAD:
      r = RUN("solve", path, "-o", out, "--default-profile");
      break;
    case CASES:
      r = RUN("oracle", "--suite", path, "--out", out);
      break;
    case RECORDS:
      r = RUN("records", "best", path, "-o", out);
      break;
    }
    cr_expect_eq(r.code, 2, "%s: exit %d\n%s", path, r.code, r.err);
    cr_expect_eq(run_count_lines(r.err, want), 1, "%s: no '%s' (once) in:\n%s",
                 path, want, r.err);
    cr_expect(!run_exists(out), "%s: an output was written", path);
    run_free(&r);
    free(want);
  }
  if (n)
    globfree(&g);
}

Test(json, the_cli_refuses_malformed_plans_with_exit_2) { check_cli(PLAN); }
Test(json, the_cli_refuses_malformed_workloads_with_exit_2) {
  check_cli(WORKLOAD);
}
Test(json, the_cli_refuses_malformed_case_lists_with_exit_2) {
  check_cli(CASES);
}
Test(json, the_cli_refuses_malformed_records_with_exit_2) {
  check_cli(RECORDS);
}

Test(json, the_cli_refuses_a_file_past_the_size_limit_with_exit_2) {
  char big[512], out[512];
  snprintf(big, sizeof big, "%s", run_tmp("big.jsonl"));
  snprintf(out, sizeof out, "%s", run_tmp("out.jsonl"));
  FILE *f = fopen(big, "w");
  cr_assert_not_null(f);
  cr_assert_eq(ftruncate(fileno(f), (off_t)LM_JSON_MAX_BYTES + 1), 0);
  fclose(f);
  run_result r = RUN("records", "best", big, "-o", out);
  cr_expect_eq(r.code, 2, "exit %d\n%s", r.code, r.err);
  cr_expect(strstr(r.err, "big.jsonl: more than 256 MiB, the most a JSON "
                          "file may hold") != NULL,
            "%s", r.err);
  cr_expect(!run_exists(out));
  run_free(&r);
}
