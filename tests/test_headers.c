/* Every public header stands alone: included first and alone in a C11
 * translation unit, and in a C++17 one, it compiles with -Wall -Wextra
 * -Wpedantic -Werror; every header that declares functions wraps them in
 * extern "C"; the umbrella lanemap.h includes every header of
 * include/lanemap/; and a C++ program that includes the umbrella links
 * against liblanemap and calls it (which fails if a declaration lost its C
 * linkage). */
#include <criterion/criterion.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Not every helper of run.h is used here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "tests/support/run.h"

#define INCDIR LANEMAP_SOURCE_DIR "/include"

TestSuite(headers, .init = run_tmp_make, .fini = run_tmp_remove);

/* The sorted names of include/lanemap/\*.h. */
static int list_headers(char names[][64], int max) {
  DIR *d = opendir(INCDIR "/lanemap");
  cr_assert_not_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len > 2 && len < 64 && strcmp(e->d_name + len - 2, ".h") == 0 &&
        n < max)
      memcpy(names[n++], e->d_name, len + 1);
  }
  closedir(d);
  qsort(names, n, 64, (int (*)(const void *, const void *))strcmp);
  return n;
}

static int sh(const char *cmd) {
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static const char *cxx(void) {
  return sh("command -v g++ >/dev/null 2>&1") == 0 ? "g++" : NULL;
}

/* Compile `#include "lanemap/NAME"` alone; cmd is the compiler and flags. */
static void compile_alone(const char *compiler, const char *flags,
                          const char *ext, const char *name) {
  char *src = run_tmp(ext);
  char text[256], cmd[2048];
  snprintf(text, sizeof text, "#include \"lanemap/%s\"\nint lm_probe_;\n",
           name);
  run_write(src, text);
  snprintf(cmd, sizeof cmd,
           "%s %s -I'%s' -fsyntax-only '%s' > '%s' 2>&1", compiler, flags,
           INCDIR, src, run_tmp("cc.log"));
  int rc = sh(cmd);
  if (rc != 0) {
    char *log = run_slurp(run_tmp("cc.log"));
    cr_expect_eq(rc, 0, "%s alone does not compile (%s):\n%s", name,
                 compiler, log);
    free(log);
  }
}

Test(headers, each_compiles_alone_as_c11) {
  char names[64][64];
  int n = list_headers(names, 64);
  cr_assert_geq(n, 10, "only %d headers found in %s", n, INCDIR);
  for (int i = 0; i < n; i++)
    compile_alone(LANEMAP_CC, "-std=c11 -Wall -Wextra -Wpedantic -Werror",
                  "alone.c", names[i]);
}

Test(headers, each_compiles_alone_as_cxx) {
  const char *cc = cxx();
  if (!cc)
    cr_skip_test("g++ not found: the C++ check needs apt-get install g++");
  char names[64][64];
  int n = list_headers(names, 64);
  for (int i = 0; i < n; i++)
    compile_alone(cc, "-std=c++17 -Wall -Wextra -Wpedantic -Werror",
                  "alone.cc", names[i]);
}

Test(headers, each_declaring_functions_has_extern_c) {
  char names[64][64];
  int n = list_headers(names, 64);
  for (int i = 0; i < n; i++) {
    char path[sizeof INCDIR + 80];
    snprintf(path, sizeof path, "%s/lanemap/%.63s", INCDIR, names[i]);
    char *text = run_slurp(path);
    int has_fn = strstr(text, ");\n") != NULL;
    if (has_fn) {
      cr_expect(strstr(text, "#ifdef __cplusplus\nextern \"C\" {") != NULL,
                "%s declares functions without an extern \"C\" guard",
                names[i]);
      cr_expect(strstr(text, "#ifdef __cplusplus\n}") != NULL,
                "%s opens extern \"C\" but does not close it", names[i]);
    }
    free(text);
  }
}

Test(headers, umbrella_includes_every_header) {
  char names[64][64];
  int n = list_headers(names, 64);
  char *text = run_slurp(INCDIR "/lanemap/lanemap.h");
  for (int i = 0; i < n; i++) {
    if (strcmp(names[i], "lanemap.h") == 0)
      continue;
    char inc[96];
    snprintf(inc, sizeof inc, "#include \"lanemap/%.63s\"", names[i]);
    cr_expect(strstr(text, inc) != NULL, "lanemap.h does not include %s",
              names[i]);
  }
  free(text);
}

Test(headers, cxx_program_links_and_runs) {
  const char *cc = cxx();
  if (!cc)
    cr_skip_test("g++ not found: the C++ check needs apt-get install g++");
  char *src = run_tmp("use.cc"), *exe = run_tmp("use");
  run_write(src,
            "#include \"lanemap/lanemap.h\"\n"
            "#include <cstdio>\n#include <cstring>\n"
            "int main() {\n"
            "  lm_error err = {};\n"
            "  lm_kernel *k = nullptr;\n"
            "  const char *src = \"kernel k\";\n"
            "  if (lm_kernel_parse(\"x.lk\", src, std::strlen(src), &k, &err)"
            " == LM_OK) return 1;\n"
            "  lm_record r;\n  lm_record_init(&r);\n  lm_record_free(&r);\n"
            "  lm_solve_opts so;\n  lm_solve_defaults(&so);\n"
            "  std::printf(\"%s %u %d\\n\", lm_version(), lm_version_number(),"
            " lm_version_compatible(LANEMAP_VERSION_NUMBER));\n"
            "  return err.status == LM_EINPUT ? 0 : 2;\n}\n");
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "%s %s -std=c++17 -Wall -Wextra -Werror -I'%s' '%s' -o '%s' "
           "-L'%s' -llanemap -Wl,-rpath,'%s' > '%s' 2>&1 && '%s' > '%s'",
           cc, LANEMAP_CFLAGS, INCDIR, src, exe, LANEMAP_LIBDIR, LANEMAP_LIBDIR,
           run_tmp("cc.log"), exe, run_tmp("out"));
  int rc = sh(cmd);
  char *log = run_slurp(run_tmp("cc.log"));
  cr_assert_eq(rc, 0, "C++ consumer failed:\n%s", log);
  free(log);
  char *out = run_slurp(run_tmp("out"));
  char want[64];
  snprintf(want, sizeof want, "%s %u 1\n", LANEMAP_VERSION_STRING,
           (unsigned)LANEMAP_VERSION_NUMBER);
  cr_expect_str_eq(out, want);
  free(out);
}

Test(headers, version_rule) {
  unsigned v = LANEMAP_VERSION_NUMBER;
  cr_expect_eq(lm_version_number(), v);
  cr_expect_str_eq(lm_version(), LANEMAP_VERSION_STRING);
  cr_expect(lm_version_compatible(v));
  cr_expect(!lm_version_compatible(v + 10000), "another major must fail");
  cr_expect(!lm_version_compatible(v + 1), "a newer header needs a newer "
                                           "library");
  if (LANEMAP_VERSION_MAJOR == 0)
    cr_expect(!lm_version_compatible(v + 100), "0.x needs the same minor");
}
