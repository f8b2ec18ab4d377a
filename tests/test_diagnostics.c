/* Claims about the kernel language's diagnostics: every malformed input in
 * tests/golden/diag/NAME.lk is rejected with LM_EINPUT, no kernel, and
 * exactly the message line in NAME.err ("FILE:LINE:COL: error: ...", with
 * the file named relative to the source tree).  Inputs too large to commit
 * (a 1 MB line, deep nesting) are generated here. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lanemap/ir.h"

#define DIAG_DIR "tests/golden/diag"

typedef struct diag_case {
  char name[96];
} diag_case;

static int list_cases(diag_case *out, int max) {
  glob_t g;
  int n = 0;
  if (glob(LANEMAP_SOURCE_DIR "/" DIAG_DIR "/*.lk", 0, NULL, &g) != 0)
    return 0;
  for (size_t i = 0; i < g.gl_pathc && n < max; i++) {
    const char *base = strrchr(g.gl_pathv[i], '/') + 1;
    snprintf(out[n].name, sizeof out[n].name, "%.*s", (int)(strlen(base) - 3),
             base);
    n++;
  }
  globfree(&g);
  return n;
}

ParameterizedTestParameters(diagnostics, golden_message_is_exact) {
  static diag_case cases[256];
  int n = list_cases(cases, 256);
  return cr_make_param_array(diag_case, cases, (size_t)n);
}

/* The first line of a file, without its newline (malloc'ed). */
static char *first_line(const char *path) {
  char *text;
  lm_error err;
  if (lm_file_read(path, &text, NULL, &err) != LM_OK)
    return NULL;
  text[strcspn(text, "\n")] = 0;
  return text;
}

ParameterizedTest(diag_case *c, diagnostics, golden_message_is_exact) {
  char rel[256], abs[512];
  snprintf(rel, sizeof rel, DIAG_DIR "/%s.lk", c->name);
  snprintf(abs, sizeof abs, LANEMAP_SOURCE_DIR "/%s", rel);
  char *src;
  size_t n;
  lm_error err = {0};
  cr_assert_eq(lm_file_read(abs, &src, &n, &err), LM_OK, "%s", err.msg);
  snprintf(abs, sizeof abs, LANEMAP_SOURCE_DIR "/" DIAG_DIR "/%s.err", c->name);
  char *want = first_line(abs);
  cr_assert_not_null(want, "missing %s", abs);
  lm_kernel *k = (lm_kernel *)&err; /* must be reset to NULL */
  lm_status s = lm_kernel_parse(rel, src, n, &k, &err);
  cr_expect_eq(s, LM_EINPUT, "%s: status %d", c->name, s);
  cr_expect_null(k, "%s: a kernel was returned", c->name);
  cr_expect_str_eq(err.msg, want, "%s:\n got: %s\nwant: %s", c->name, err.msg,
                   want);
  free(want);
  free(src);
}

Test(diagnostics, golden_set_covers_at_least_25_inputs_each_with_an_err) {
  static diag_case cases[256];
  int n = list_cases(cases, 256);
  cr_expect_geq(n, 25, "only %d diagnostic goldens", n);
  for (int i = 0; i < n; i++) {
    char path[512];
    snprintf(path, sizeof path, LANEMAP_SOURCE_DIR "/" DIAG_DIR "/%s.err",
             cases[i].name);
    cr_expect_eq(access(path, R_OK), 0, "no %s", path);
  }
}

/* Parse src under the name "gen.lk" and return the message. */
static void expect_error(const char *src, size_t len, const char *want) {
  lm_error err = {0};
  lm_kernel *k = NULL;
  cr_assert_eq(lm_kernel_parse("gen.lk", src, len, &k, &err), LM_EINPUT);
  cr_expect_null(k);
  cr_expect_str_eq(err.msg, want);
}

static const char *HEAD = "kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n";

Test(diagnostics, one_megabyte_line_is_too_long_and_read_from_a_file) {
  char path[] = "/tmp/lanemap_diag_longline.XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *f = fdopen(fd, "w");
  fputs(HEAD, f);
  fputs("  y[r, :] = x[r, :]", f);
  for (int i = 0; i < (1 << 20) / 4; i++)
    fputs(" + 1", f);
  fputs("\n}\n", f);
  fclose(f);
  lm_error err = {0};
  lm_kernel *k = NULL;
  lm_status s = lm_kernel_load(path, &k, &err);
  unlink(path);
  cr_expect_eq(s, LM_EINPUT);
  cr_expect_null(k);
  char want[512];
  snprintf(want, sizeof want,
           "%s:2:65537: error: line too long (more than 65536 bytes)", path);
  cr_expect_str_eq(err.msg, want);
}

Test(diagnostics, line_of_exactly_65536_bytes_is_accepted_by_the_lexer) {
  /* A 65536-byte comment line is within the limit; the kernel after it
   * parses. */
  size_t n = 65536;
  char *src = malloc(n + 200);
  memset(src, ' ', n);
  src[0] = '#';
  src[n] = '\n';
  strcpy(src + n + 1, "kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                      "  y[r, :] = x[r, :]\n}\n");
  lm_error err = {0};
  lm_kernel *k = NULL;
  cr_expect_eq(lm_kernel_parse("gen.lk", src, strlen(src), &k, &err), LM_OK,
               "%s", err.msg);
  lm_kernel_free(k);
  free(src);
}

static char *nested(int depth, const char *open, const char *close) {
  size_t cap =
      strlen(HEAD) + (size_t)depth * (strlen(open) + strlen(close) + 1) + 64;
  char *s = malloc(cap);
  strcpy(s, HEAD);
  strcat(s, "  y[r, :] = ");
  char *p = s + strlen(s);
  /* Newlines inside parentheses are layout; they keep lines short. */
  for (int i = 0; i < depth; i++)
    p += sprintf(p, "%s%s", open, i % 1000 == 999 ? "\n" : "");
  p += sprintf(p, "x[r, :]");
  for (int i = 0; i < depth; i++)
    p += sprintf(p, "%s%s", close, i % 1000 == 999 ? "\n" : "");
  sprintf(p, "\n}\n");
  return s;
}

Test(diagnostics, parentheses_nested_300_deep_are_too_deep) {
  char *s = nested(300, "(", ")");
  /* 12 bytes of "  y[r, :] = " then 256 '(' are fine; the 257th level
   * starts at column 13 + 256. */
  expect_error(s, strlen(s),
               "gen.lk:2:269: error: expression nested too deeply (more than "
               "256 levels)");
  free(s);
}

Test(diagnostics, parentheses_nested_100000_deep_fail_cleanly) {
  char *s = nested(100000, "(", ")");
  lm_error err = {0};
  lm_kernel *k = NULL;
  cr_expect_eq(lm_kernel_parse("gen.lk", s, strlen(s), &k, &err), LM_EINPUT);
  cr_expect_null(k);
  cr_expect(strstr(err.msg, "expression nested too deeply") != NULL, "%s",
            err.msg);
  free(s);
}

Test(diagnostics, calls_nested_300_deep_are_too_deep) {
  char *s = nested(300, "exp(", ")");
  lm_error err = {0};
  lm_kernel *k = NULL;
  cr_expect_eq(lm_kernel_parse("gen.lk", s, strlen(s), &k, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "gen.lk:2:") == err.msg &&
                strstr(err.msg, "error: expression nested too deeply"),
            "%s", err.msg);
  free(s);
}

Test(diagnostics, a_chain_of_300_additions_is_too_deep) {
  char *s = malloc(8192);
  strcpy(s, HEAD);
  strcat(s, "  y[r, :] = x[r, :]");
  for (int i = 0; i < 300; i++)
    strcat(s, " + 1");
  strcat(s, "\n}\n");
  lm_error err = {0};
  lm_kernel *k = NULL;
  cr_expect_eq(lm_kernel_parse("gen.lk", s, strlen(s), &k, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "error: expression nested too deeply") != NULL,
            "%s", err.msg);
  free(s);
}

Test(diagnostics, nesting_of_200_levels_is_accepted) {
  char *s = nested(200, "(", ")");
  lm_error err = {0};
  lm_kernel *k = NULL;
  cr_expect_eq(lm_kernel_parse("gen.lk", s, strlen(s), &k, &err), LM_OK, "%s",
               err.msg);
  lm_kernel_free(k);
  free(s);
}

Test(diagnostics, nul_byte_in_memory_input_is_binary) {
  static const char src[] = "kernel\0k";
  expect_error(src, sizeof src - 1,
               "gen.lk:1:7: error: binary input (NUL byte); expected kernel "
               "source text");
}

Test(diagnostics, truncated_utf8_at_end_of_input_is_invalid) {
  static const char src[] = "# \xe2\x82";
  expect_error(src, sizeof src - 1,
               "gen.lk:1:3: error: invalid UTF-8 (byte 0xE2)");
}

Test(diagnostics, utf8_surrogate_is_invalid) {
  static const char src[] = "# \xed\xa0\x80\n";
  expect_error(src, sizeof src - 1,
               "gen.lk:1:3: error: invalid UTF-8 (byte 0xED)");
}

Test(diagnostics, valid_utf8_in_comments_is_accepted) {
  static const char src[] =
      "# r\xc3\xa9sum\xc3\xa9 \xe2\x88\x91 \xf0\x9f\x99\x82\n"
      "kernel k(x: f32[R, C]) -> (y: f32[R, C]) {\n"
      "  y[r, :] = x[r, :]  # \xce\xbb\n}\n";
  lm_error err = {0};
  lm_kernel *k = NULL;
  cr_expect_eq(lm_kernel_parse("gen.lk", src, sizeof src - 1, &k, &err), LM_OK,
               "%s", err.msg);
  lm_kernel_free(k);
}

Test(diagnostics, missing_file_is_an_input_error) {
  lm_error err = {0};
  lm_kernel *k = NULL;
  cr_expect_eq(lm_kernel_load("/nonexistent/lanemap/none.lk", &k, &err),
               LM_EINPUT);
  cr_expect_null(k);
  cr_expect(strstr(err.msg, "/nonexistent/lanemap/none.lk") != NULL);
}
