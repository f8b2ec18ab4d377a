/* `cmake --install` into a temp prefix, then use what it installed the way
 * a pipeline would: an out-of-tree program (tests/consumer/consumer.c)
 * built with pkg-config, with find_package(lanemap CONFIG) against the
 * shared library, and against the static one; the installed CLI run from
 * the prefix, finding its bundled kernels there.  Each test installs into
 * its own prefix from this build tree (LANEMAP_LIBDIR, where liblanemap.so
 * is built).  Consumers are compiled with the build's own C flags, so that
 * a sanitizer build links its runtime into them too. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Not every helper of run.h is used here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "lanemap/heldout.h"
#include "tests/support/run.h"

#define CONSUMER LANEMAP_SOURCE_DIR "/tests/consumer"

static char prefix[600];

static int sh(const char *cmd) {
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Run cmd with stdout and stderr into the temp folder's `log`; on failure
 * the assertion shows the log. */
static void sh_ok(const char *what, const char *cmd) {
  char full[4096];
  snprintf(full, sizeof full, "(%s) > '%s' 2>&1", cmd, run_tmp("log"));
  int rc = sh(full);
  if (rc != 0) {
    char *log = run_slurp(run_tmp("log"));
    cr_assert_fail("%s failed (exit %d):\n$ %s\n%s", what, rc, cmd, log);
  }
}

static void install_setup(void) {
  run_tmp_make();
  snprintf(prefix, sizeof prefix, "%s/prefix", run_tmpdir);
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "cmake --install '%s' --prefix '%s'",
           LANEMAP_LIBDIR, prefix);
  sh_ok("cmake --install", cmd);
}

TestSuite(install, .init = install_setup, .fini = run_tmp_remove,
          .timeout = 300);

static char *at(const char *rel) {
  static char buf[4][800];
  static int next;
  char *p = buf[next++ % 4];
  snprintf(p, 800, "%s/%s", prefix, rel);
  return p;
}

/* Run the consumer binary on a bundled kernel and check its report. */
static void check_consumer(const char *exe) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' '%s' 8 64 > '%s'", exe,
           at("share/lanemap/kernels/rmsnorm.lk"), run_tmp("out"));
  sh_ok("consumer", cmd);
  char *out = run_slurp(run_tmp("out"));
  char want[64];
  snprintf(want, sizeof want, "version %s\n", LANEMAP_VERSION_STRING);
  cr_expect(strncmp(out, want, strlen(want)) == 0, "output:\n%s", out);
  cr_expect_eq(run_count_lines(out, "variants "), 1, "output:\n%s", out);
  cr_expect_eq(run_count_lines(out, "compiled "), 1, "output:\n%s",
               out);
  cr_expect_eq(run_count_lines(out, "verified ok"), 1, "output:\n%s", out);
  int nv = 0;
  const char *p = strstr(out, "variants ");
  cr_assert(p && sscanf(p, "variants %d", &nv) == 1 && nv > 1,
            "expected several legal variants:\n%s", out);
  free(out);
}

Test(install, layout) {
  const char *files[] = {
      "include/lanemap/lanemap.h",     "include/lanemap/core.h",
      "include/lanemap/records.h",     "lib/liblanemap.a",
      "lib/liblanemap.so",             "bin/lanemap",
      "lib/pkgconfig/lanemap.pc",      "lib/cmake/lanemap/lanemapConfig.cmake",
      "lib/cmake/lanemap/lanemapConfigVersion.cmake",
      "share/lanemap/kernels/rmsnorm.lk", "share/lanemap/heldout/cases.json",
      "share/lanemap/heldout/deploy.json", "share/man/man1/lanemap.1"};
  for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
    cr_expect(run_exists(at(files[i])), "not installed: %s", files[i]);
  char so[64];
  snprintf(so, sizeof so, "lib/liblanemap.so.%d", LANEMAP_VERSION_MAJOR);
  cr_expect(run_exists(at(so)), "no %s", so);
  char cmd[2048];
  snprintf(cmd, sizeof cmd,
           "readelf -d '%s' | grep -q 'Library soname: \\[liblanemap.so.%d\\]'",
           at("lib/liblanemap.so"), LANEMAP_VERSION_MAJOR);
  sh_ok("SONAME check", cmd);
}

Test(install, cli_runs_from_prefix) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' --version > '%s'", at("bin/lanemap"),
           run_tmp("out"));
  sh_ok("installed lanemap --version", cmd);
  char *out = run_slurp(run_tmp("out"));
  char want[64];
  snprintf(want, sizeof want, "lanemap %s (LLVM", LANEMAP_VERSION_STRING);
  cr_expect(strncmp(out, want, strlen(want)) == 0, "%s", out);
  free(out);
  snprintf(cmd, sizeof cmd, "'%s' check '%s'", at("bin/lanemap"),
           at("share/lanemap/kernels/layernorm.lk"));
  sh_ok("installed lanemap check", cmd);
}

/* The installed CLI's default case list is the installed one, and its
 * kernel paths resolve inside the prefix, to files that are there. */
Test(install, evaluate_finds_the_installed_cases) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, "'%s' evaluate --list > '%s'", at("bin/lanemap"),
           run_tmp("out"));
  sh_ok("installed lanemap evaluate --list", cmd);
  char *out = run_slurp(run_tmp("out"));
  int n = 0;
  for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"), n++) {
    char *path = strrchr(line, ' ');
    cr_assert(path, "%s", line);
    path++;
    cr_expect(strncmp(path, prefix, strlen(prefix)) == 0,
              "case kernel outside the prefix: %s", line);
    cr_expect(run_exists(path), "missing: %s", path);
  }
  cr_expect_geq(n, 20, "only %d cases listed", n);
  free(out);
}

/* The installed deployment spec's kernel paths resolve inside the prefix
 * (evaluate --deploy takes it by default). */
Test(install, the_installed_deployment_spec_loads) {
  lm_deploy_spec s;
  lm_error err = {0};
  cr_assert_eq(lm_deploy_spec_load(at("share/lanemap/heldout/deploy.json"), 0,
                                   &s, &err),
               LM_OK, "%s", err.msg);
  for (int k = 0; k < s.nkernels; k++)
    cr_expect(strncmp(s.k[k].path, prefix, strlen(prefix)) == 0, "%s",
              s.k[k].path);
  lm_deploy_spec_free(&s);
}

Test(install, consumer_with_pkg_config) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "PKG_CONFIG_PATH='%s' pkg-config --modversion lanemap > '%s'",
           at("lib/pkgconfig"), run_tmp("ver"));
  sh_ok("pkg-config --modversion", cmd);
  char *ver = run_slurp(run_tmp("ver"));
  char want[32];
  snprintf(want, sizeof want, "%s\n", LANEMAP_VERSION_STRING);
  cr_expect_str_eq(ver, want);
  free(ver);
  snprintf(cmd, sizeof cmd,
           "export PKG_CONFIG_PATH='%s'; %s %s -std=c11 -Wall -Wextra -Werror "
           "'%s/consumer.c' -o '%s' $(pkg-config --cflags --libs lanemap) "
           "-Wl,-rpath,'%s'",
           at("lib/pkgconfig"), LANEMAP_CC, LANEMAP_CFLAGS, CONSUMER, run_tmp("consumer"),
           at("lib"));
  sh_ok("pkg-config build", cmd);
  check_consumer(run_tmp("consumer"));
}

Test(install, consumer_with_pkg_config_static) {
  /* -static-pie is not wanted, only liblanemap.a: name the archive and let
   * pkg-config --static add what it needs. */
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "export PKG_CONFIG_PATH='%s'; %s %s -std=c11 -Wall -Wextra -Werror "
           "'%s/consumer.c' -o '%s' $(pkg-config --cflags lanemap) '%s' "
           "$(pkg-config --static --libs-only-L --libs-only-other lanemap) "
           "$(pkg-config --static --libs-only-l lanemap | sed "
           "'s/-llanemap//')",
           at("lib/pkgconfig"), LANEMAP_CC, LANEMAP_CFLAGS, CONSUMER, run_tmp("consumer_a"),
           at("lib/liblanemap.a"));
  sh_ok("pkg-config --static build", cmd);
  snprintf(cmd, sizeof cmd, "! readelf -d '%s' | grep -q liblanemap",
           run_tmp("consumer_a"));
  sh_ok("no liblanemap.so dependency", cmd);
  check_consumer(run_tmp("consumer_a"));
}

static void cmake_consumer(int is_static) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd,
           "cmake -S '%s' -B '%s' -G Ninja -DCMAKE_PREFIX_PATH='%s' "
           "-DCMAKE_C_COMPILER='%s' -DCMAKE_C_FLAGS='%s' "
           "-DLANEMAP_CONSUMER_STATIC=%s && cmake --build '%s'",
           CONSUMER, run_tmp("cbuild"), prefix, LANEMAP_CC, LANEMAP_CFLAGS,
           is_static ? "ON" : "OFF", run_tmp("cbuild"));
  sh_ok("find_package build", cmd);
  char exe[700];
  snprintf(exe, sizeof exe, "%s/consumer", run_tmp("cbuild"));
  snprintf(cmd, sizeof cmd, "readelf -d '%s' | grep -q liblanemap.so", exe);
  int needs_so = sh(cmd) == 0;
  cr_expect_eq(needs_so, !is_static, "%s",
               is_static ? "the static consumer needs liblanemap.so"
                         : "the shared consumer does not link liblanemap.so");
  check_consumer(exe);
}

Test(install, consumer_with_find_package) { cmake_consumer(0); }
Test(install, consumer_with_find_package_static) { cmake_consumer(1); }
