/* Claims about the noise verdict in profiles (include/lanemap/profile.h,
 * calibrate.h):
 * - a profile with a noisy verdict and noisy families survives save and
 *   load, and is written as lanemap.profile/1.1;
 * - a profile without a verdict (an older build's) loads as quiet, with no
 *   verdict recorded, and is still written as lanemap.profile/1;
 * - the description names the global measures once and each noisy family
 *   with its own measure;
 * - a lookup refuses a noisy profile, from a file or the cache, with
 *   LM_EFAIL naming the file, the verdict and --accept-noisy, and takes it
 *   with accept_noisy or LANEMAP_ACCEPT_NOISY=1;
 * - a noisy calibration is not cached: it is kept beside the cache entry
 *   as NAME.noisy.json, and the message says so; accepted, it is cached
 *   with its verdict; a quiet one is cached;
 * - the CLI: predict and solve exit 1 on a noisy profile and take it with
 *   --accept-noisy; a malformed verdict is exit 2 naming the key.
 *
 * This executable runs without LANEMAP_ACCEPT_NOISY (tests/CMakeLists.txt):
 * the refusals are what it checks. */
#define _GNU_SOURCE
#include <criterion/criterion.h>

#include <ftw.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lanemap/calibrate.h"
#include "lanemap/profile.h"

#define SRC LANEMAP_SOURCE_DIR
#define EXAMPLE SRC "/tests/golden/profile/ok/example.json"
#define RMS SRC "/kernels/rmsnorm.lk"
#define TINY SRC "/solver/examples/tiny.json"

static char dir[64];

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  return remove(path);
}

static void setup(void) {
  strcpy(dir, "/tmp/lanemap-noise-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
  unsetenv("LANEMAP_ACCEPT_NOISY");
  setenv("LANEMAP_CACHE_DIR", dir, 1);
}

static void teardown(void) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

TestSuite(profile_noise, .init = setup, .fini = teardown);

static char *slurp(const char *path) {
  char *text;
  lm_error err = {0};
  cr_assert_eq(lm_file_read(path, &text, NULL, &err), LM_OK, "%s", err.msg);
  return text;
}

/* A verdict that other processes and a drifting canary made noisy, with
 * the pool's workers joining late. */
static lm_noise noisy_verdict(void) {
  lm_noise n;
  lm_noise_clear(&n);
  n.spread = 0.04;
  n.canary = 0.3;
  n.other_cpus = 0.97;
  n.busiest_cpu = 1;
  n.steal = 0;
  n.load_start = 2.5, n.load_end = 3.25;
  n.running_start = 3, n.running_end = 4;
  n.wanted = 40, n.missed = 30, n.late_ns = 2e6;
  n.wall_s = 1.5;
  n.ncpu = 2;
  lm_noise_judge(&n, NULL);
  cr_assert(n.noisy, "the hand-made verdict is not noisy");
  return n;
}

static lm_noise quiet_verdict(void) {
  lm_noise n;
  lm_noise_clear(&n);
  n.spread = 0.01;
  n.canary = 0.005;
  n.other_cpus = 0.01;
  n.busiest_cpu = 0.6;
  n.steal = 0;
  n.load_start = 0.25, n.load_end = 0.5;
  n.running_start = 1, n.running_end = 1;
  n.wall_s = 1.5;
  n.ncpu = 2;
  lm_noise_judge(&n, NULL);
  cr_assert(!n.noisy, "the hand-made quiet verdict is noisy");
  return n;
}

/* The defaults of sse4.2 on this machine, with one sample of the forkjoin
 * and the math family, and the verdict v (NULL: none). */
static lm_profile *profile_with(const lm_noise *v, int families) {
  lm_profile *p = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_profile_default(LM_ISA_SSE42, &p, &err), LM_OK, "%s",
               err.msg);
  cr_assert_eq(lm_profile_set_mode(p, LM_PROFILE_QUICK, &err), LM_OK);
  int nt = lm_profile_nterms(p);
  double *f = calloc((size_t)nt, sizeof *f);
  f[0] = 1;
  lm_profile_sample s[2] = {{"fork_tiny_t2", "forkjoin", f, 900, 800, 0.4, 3},
                            {"exp_f32", "math", f, 50, 45, 0.2, 100}};
  for (int i = 0; i < 2; i++)
    cr_assert_eq(lm_profile_add_sample(p, &s[i], &err), LM_OK, "%s", err.msg);
  free(f);
  if (v)
    cr_assert_eq(lm_profile_set_noise(p, v, &err), LM_OK, "%s", err.msg);
  if (v && families) {
    lm_profile_noisy_family fj = {"forkjoin",
                                  LM_NOISE_SPREAD | LM_NOISE_WORKERS, 0.4};
    lm_profile_noisy_family m = {"math", LM_NOISE_SPREAD, 0.2};
    cr_assert_eq(lm_profile_add_noisy_family(p, &fj, &err), LM_OK, "%s",
                 err.msg);
    cr_assert_eq(lm_profile_add_noisy_family(p, &m, &err), LM_OK, "%s",
                 err.msg);
  }
  return p;
}

static void save(const lm_profile *p, const char *path) {
  lm_error err = {0};
  cr_assert_eq(lm_profile_save(p, path, &err), LM_OK, "%s", err.msg);
}

/* ---- the file ------------------------------------------------------------ */

Test(profile_noise, a_noisy_verdict_and_its_families_survive_save_and_load) {
  lm_noise v = noisy_verdict();
  lm_profile *p = profile_with(&v, 1);
  char path[128];
  snprintf(path, sizeof path, "%s/p.json", dir);
  save(p, path);
  lm_profile *q = NULL;
  lm_profile_load_info info;
  lm_error err = {0};
  cr_assert_eq(lm_profile_load(path, &q, &info, &err), LM_OK, "%s", err.msg);
  cr_expect_str_eq(info.schema, LM_PROFILE_SCHEMA_NOISE);
  cr_expect(lm_profile_equal(p, q), "the profile changed through the file");
  const lm_noise *n = lm_profile_get_noise(q);
  cr_assert_not_null(n);
  cr_expect(n->noisy);
  cr_expect(n->reasons & LM_NOISE_CANARY);
  cr_expect_eq(n->load_start, 2.5);
  cr_expect_eq(n->load_end, 3.25);
  cr_expect_eq(n->other_cpus, 0.97);
  cr_expect(lm_profile_noisy(q));
  cr_assert_eq(lm_profile_nnoisy_families(q), 2);
  cr_expect_str_eq(lm_profile_noisy_family_at(q, 0)->family, "forkjoin");
  cr_expect_eq(lm_profile_noisy_family_at(q, 0)->reasons,
               LM_NOISE_SPREAD | LM_NOISE_WORKERS);
  cr_expect_str_eq(lm_profile_noisy_family_at(q, 1)->family, "math");
  cr_expect_eq(lm_profile_noisy_family_at(q, 1)->spread, 0.2);
  char *text = slurp(path);
  cr_expect(strstr(text, "\"noisy_families\""), "%s", text);
  cr_expect(strstr(text, "\"workers\""), "%s", text);
  free(text);
  lm_profile_free(q);
  lm_profile_free(p);
}

Test(profile_noise, a_quiet_verdict_survives_save_and_load_and_is_not_noisy) {
  lm_noise v = quiet_verdict();
  lm_profile *p = profile_with(&v, 0);
  char path[128];
  snprintf(path, sizeof path, "%s/p.json", dir);
  save(p, path);
  lm_profile *q = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_profile_load(path, &q, NULL, &err), LM_OK, "%s", err.msg);
  cr_expect(lm_profile_equal(p, q));
  cr_assert_not_null(lm_profile_get_noise(q));
  cr_expect(!lm_profile_noisy(q));
  char why[512];
  cr_expect_str_eq(lm_profile_describe_noise(q, why, sizeof why), "quiet");
  lm_profile_free(q);
  lm_profile_free(p);
}

Test(profile_noise, a_family_unstable_by_its_spread_alone_is_used_and_cached) {
  /* a quiet verdict and one family whose spread alone passed its limit:
   * the profile is unstable, not noisy, and the gate lets it through */
  lm_noise v = quiet_verdict();
  lm_profile *p = profile_with(&v, 0);
  lm_profile_noisy_family m = {"math", LM_NOISE_SPREAD, 0.2};
  lm_error err = {0};
  cr_assert_eq(lm_profile_add_noisy_family(p, &m, &err), LM_OK, "%s",
               err.msg);
  cr_expect(!lm_profile_noisy(p));
  char why[512];
  lm_profile_describe_noise(p, why, sizeof why);
  cr_expect_str_eq(why, "unstable: math: median spread 20.0% > 10%");
  char cache[1024], side[1100], wrote[1100];
  cr_assert_eq(lm_profile_cache_path(lm_isa_name(LM_ISA_SSE42),
                                     LM_PROFILE_QUICK, cache, sizeof cache,
                                     &err),
               LM_OK, "%s", err.msg);
  cr_assert_eq(lm_profile_noisy_path(cache, side, sizeof side, &err), LM_OK);
  cr_expect_eq(
      lm_profile_save_calibrated(p, cache, 1, 0, wrote, sizeof wrote, &err),
      LM_OK, "%s", err.msg);
  cr_expect_eq(access(cache, F_OK), 0);
  cr_expect_neq(access(side, F_OK), 0);
  cr_expect_eq(lm_profile_check_noisy(p, cache, 0, &err), LM_OK, "%s",
               err.msg);
  /* a family that passed a limit of interference makes it noisy */
  lm_profile_noisy_family fj = {"forkjoin", LM_NOISE_WORKERS, 0.05};
  cr_assert_eq(lm_profile_add_noisy_family(p, &fj, &err), LM_OK, "%s",
               err.msg);
  cr_expect(lm_profile_noisy(p));
  cr_expect_eq(lm_profile_check_noisy(p, cache, 0, &err), LM_EFAIL);
  lm_profile_free(p);
}

Test(profile_noise, a_profile_without_a_verdict_loads_as_quiet_and_unrecorded) {
  lm_profile *p = NULL;
  lm_profile_load_info info;
  lm_error err = {0};
  cr_assert_eq(lm_profile_load(EXAMPLE, &p, &info, &err), LM_OK, "%s", err.msg);
  cr_expect_str_eq(info.schema, LM_PROFILE_SCHEMA);
  cr_expect_null(lm_profile_get_noise(p));
  cr_expect(!lm_profile_noisy(p));
  cr_expect_eq(lm_profile_nnoisy_families(p), 0);
  char why[512];
  cr_expect_str_eq(lm_profile_describe_noise(p, why, sizeof why),
                   "quiet (no verdict recorded)");
  char *text = NULL;
  cr_assert_eq(lm_profile_to_json_text(p, &text, &err), LM_OK, "%s", err.msg);
  cr_expect(strstr(text, "\"lanemap.profile/1\""), "%s", text);
  cr_expect_null(strstr(text, "noise"), "a verdict was invented: %s", text);
  free(text);
  /* and it passes the gate */
  cr_expect_eq(lm_profile_check_noisy(p, EXAMPLE, 0, &err), LM_OK);
  lm_profile_free(p);
}

Test(profile_noise, a_noisy_family_must_follow_a_verdict_and_name_a_family) {
  lm_profile *p = profile_with(NULL, 0);
  lm_error err = {0};
  lm_profile_noisy_family f = {"math", LM_NOISE_SPREAD, 0.2};
  cr_expect_eq(lm_profile_add_noisy_family(p, &f, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "verdict"), "%s", err.msg);
  lm_noise v = noisy_verdict();
  cr_assert_eq(lm_profile_set_noise(p, &v, &err), LM_OK, "%s", err.msg);
  lm_profile_noisy_family bad[] = {{"alu", LM_NOISE_SPREAD, 0.2},
                                   {"math", 0, 0.2},
                                   {"math", 1u << 12, 0.2},
                                   {"math", LM_NOISE_SPREAD, -1},
                                   {"", LM_NOISE_SPREAD, 0.2}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    cr_expect_eq(lm_profile_add_noisy_family(p, &bad[i], &err), LM_EINPUT,
                 "case %zu", i);
  cr_expect_eq(lm_profile_add_noisy_family(p, &f, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(lm_profile_add_noisy_family(p, &f, &err), LM_EINPUT,
               "a family named twice");
  cr_expect_eq(lm_profile_nnoisy_families(p), 1);
  lm_profile_free(p);
}

Test(profile_noise,
     the_description_names_global_measures_once_and_each_family) {
  lm_noise v = noisy_verdict();
  lm_profile *p = profile_with(&v, 1);
  char why[1200];
  lm_profile_describe_noise(p, why, sizeof why);
  cr_expect_eq(strncmp(why, "noisy: every family: ", 21), 0, "%s", why);
  cr_expect(strstr(why, "canary"), "%s", why);
  cr_expect(strstr(why, "forkjoin: median spread 40.0%"), "%s", why);
  cr_expect(strstr(why, "math: median spread 20.0%"), "%s", why);
  /* the workers' measure is forkjoin's, not every family's */
  const char *fj = strstr(why, "forkjoin: ");
  cr_assert_not_null(fj);
  char global[1200];
  snprintf(global, sizeof global, "%.*s", (int)(fj - why), why);
  cr_expect_null(strstr(global, "worker"), "named as global: %s", why);
  cr_expect_null(strstr(global, "late"), "named as global: %s", why);
  const char *math = strstr(fj, "math: ");
  cr_assert_not_null(math);
  char own[1200];
  snprintf(own, sizeof own, "%.*s", (int)(math - fj), fj);
  cr_expect(strstr(own, "spread 40.0% > 10%, "), "no workers measure: %s", own);
  lm_profile_free(p);
}

/* ---- the lookup ---------------------------------------------------------- */

static lm_status lookup_file(const char *path, int accept, lm_profile_found *f,
                             lm_error *err) {
  lm_profile_lookup_opts o;
  lm_profile_lookup_defaults(&o);
  o.path = path;
  o.accept_noisy = accept;
  lm_profile *p = NULL;
  lm_status s = lm_profile_lookup(&o, &p, f, err);
  cr_expect_eq(p == NULL, s != LM_OK, "a profile only on success");
  lm_profile_free(p);
  return s;
}

Test(profile_noise, lookup_refuses_a_noisy_profile_file_unless_accepted) {
  lm_noise v = noisy_verdict();
  lm_profile *p = profile_with(&v, 1);
  char path[128];
  snprintf(path, sizeof path, "%s/noisy.json", dir);
  save(p, path);
  lm_profile_free(p);
  lm_profile_found f;
  lm_error err = {0};
  cr_expect_eq(lookup_file(path, 0, &f, &err), LM_EFAIL);
  cr_expect_eq(strncmp(err.msg, path, strlen(path)), 0, "%s", err.msg);
  cr_expect(strstr(err.msg, "noisy: every family: "), "%s", err.msg);
  cr_expect(strstr(err.msg, "forkjoin"), "%s", err.msg);
  cr_expect(strstr(err.msg, "--accept-noisy"), "%s", err.msg);

  cr_expect_eq(lookup_file(path, 1, &f, &err), LM_OK, "%s", err.msg);
  cr_expect(f.noisy, "the lookup did not say the profile is noisy");

  setenv("LANEMAP_ACCEPT_NOISY", "0", 1);
  cr_expect_eq(lookup_file(path, 0, &f, &err), LM_EFAIL, "only 1 accepts");
  setenv("LANEMAP_ACCEPT_NOISY", "1", 1);
  cr_expect_eq(lookup_file(path, 0, &f, &err), LM_OK, "%s", err.msg);
  cr_expect(f.noisy);
  unsetenv("LANEMAP_ACCEPT_NOISY");
}

Test(profile_noise, lookup_takes_a_quiet_profile_file) {
  lm_noise v = quiet_verdict();
  lm_profile *p = profile_with(&v, 0);
  char path[128];
  snprintf(path, sizeof path, "%s/quiet.json", dir);
  save(p, path);
  lm_profile_free(p);
  lm_profile_found f;
  lm_error err = {0};
  cr_expect_eq(lookup_file(path, 0, &f, &err), LM_OK, "%s", err.msg);
  cr_expect(!f.noisy);
}

Test(profile_noise, lookup_refuses_a_noisy_cached_profile_unless_accepted) {
  char cache[1024];
  lm_error err = {0};
  cr_assert_eq(lm_profile_cache_path(lm_isa_name(LM_ISA_SSE42),
                                     LM_PROFILE_QUICK, cache, sizeof cache,
                                     &err),
               LM_OK, "%s", err.msg);
  lm_noise v = noisy_verdict();
  lm_profile *p = profile_with(&v, 0);
  save(p, cache);
  lm_profile_free(p);
  lm_profile_lookup_opts o;
  lm_profile_lookup_defaults(&o);
  o.isa = LM_ISA_SSE42;
  o.missing = LM_PROFILE_MISSING_CALIBRATE; /* the cache has one: no run */
  lm_profile_found f;
  cr_expect_eq(lm_profile_lookup(&o, &p, &f, &err), LM_EFAIL);
  cr_expect_null(p);
  cr_expect(strstr(err.msg, cache), "%s", err.msg);
  cr_expect(strstr(err.msg, "--accept-noisy"), "%s", err.msg);
  o.accept_noisy = 1;
  cr_expect_eq(lm_profile_lookup(&o, &p, &f, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(f.source, LM_PROFILE_SOURCE_CACHE);
  cr_expect(f.noisy);
  lm_profile_free(p);
}

/* ---- keeping a calibration ----------------------------------------------- */

Test(profile_noise, the_noisy_path_replaces_the_json_extension) {
  char buf[256];
  lm_error err = {0};
  cr_expect_eq(lm_profile_noisy_path("a/profile-x.json", buf, sizeof buf, &err),
               LM_OK);
  cr_expect_str_eq(buf, "a/profile-x.noisy.json");
  cr_expect_eq(lm_profile_noisy_path("out", buf, sizeof buf, &err), LM_OK);
  cr_expect_str_eq(buf, "out.noisy.json");
  cr_expect_eq(lm_profile_noisy_path("a/p.json", buf, 8, &err), LM_EINPUT,
               "a buffer too small");
}

Test(profile_noise, a_noisy_calibration_is_not_cached_but_kept_beside_it) {
  char cache[1024], side[1100], wrote[1100];
  lm_error err = {0};
  cr_assert_eq(lm_profile_cache_path(lm_isa_name(LM_ISA_SSE42),
                                     LM_PROFILE_QUICK, cache, sizeof cache,
                                     &err),
               LM_OK, "%s", err.msg);
  cr_assert_eq(lm_profile_noisy_path(cache, side, sizeof side, &err), LM_OK);
  lm_noise v = noisy_verdict();
  lm_profile *p = profile_with(&v, 1);
  cr_expect_eq(
      lm_profile_save_calibrated(p, cache, 1, 0, wrote, sizeof wrote, &err),
      LM_EFAIL);
  cr_expect_neq(access(cache, F_OK), 0, "a noisy calibration was cached");
  cr_expect_str_eq(wrote, side);
  cr_expect(strstr(err.msg, "not cached"), "%s", err.msg);
  cr_expect(strstr(err.msg, side), "%s", err.msg);
  cr_expect(strstr(err.msg, "forkjoin: "), "%s", err.msg);
  cr_expect(strstr(err.msg, "math: median spread"), "%s", err.msg);
  cr_expect(strstr(err.msg, "rerun on a quiet machine, or pass --accept-noisy"),
            "%s", err.msg);
  /* nothing measured is lost */
  lm_profile *q = NULL;
  cr_assert_eq(lm_profile_load(side, &q, NULL, &err), LM_OK, "%s", err.msg);
  cr_expect(lm_profile_equal(p, q));
  lm_profile_free(q);
  /* and a later lookup finds no cached profile */
  lm_profile_lookup_opts o;
  lm_profile_lookup_defaults(&o);
  o.isa = LM_ISA_SSE42;
  lm_profile_found f;
  cr_expect_eq(lm_profile_lookup(&o, &q, &f, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "no cached profile"), "%s", err.msg);
  lm_profile_free(p);
}

Test(profile_noise, a_noisy_calibration_accepted_is_cached_with_its_verdict) {
  char cache[1024], wrote[1100];
  lm_error err = {0};
  cr_assert_eq(lm_profile_cache_path(lm_isa_name(LM_ISA_SSE42),
                                     LM_PROFILE_QUICK, cache, sizeof cache,
                                     &err),
               LM_OK, "%s", err.msg);
  lm_noise v = noisy_verdict();
  lm_profile *p = profile_with(&v, 1);
  cr_expect_eq(
      lm_profile_save_calibrated(p, cache, 1, 1, wrote, sizeof wrote, &err),
      LM_OK, "%s", err.msg);
  cr_expect_str_eq(wrote, cache);
  lm_profile *q = NULL;
  cr_assert_eq(lm_profile_load(cache, &q, NULL, &err), LM_OK, "%s", err.msg);
  cr_expect(lm_profile_noisy(q), "the cached profile lost its flag");
  lm_profile_free(q);
  lm_profile_free(p);
  /* LANEMAP_ACCEPT_NOISY=1 accepts the same way */
  unlink(cache);
  setenv("LANEMAP_ACCEPT_NOISY", "1", 1);
  p = profile_with(&v, 1);
  cr_expect_eq(
      lm_profile_save_calibrated(p, cache, 1, 0, wrote, sizeof wrote, &err),
      LM_OK, "%s", err.msg);
  cr_expect_eq(access(cache, F_OK), 0);
  lm_profile_free(p);
  unsetenv("LANEMAP_ACCEPT_NOISY");
}

Test(profile_noise, a_quiet_calibration_is_cached) {
  char cache[1024], side[1100], wrote[1100];
  lm_error err = {0};
  cr_assert_eq(lm_profile_cache_path(lm_isa_name(LM_ISA_SSE42),
                                     LM_PROFILE_QUICK, cache, sizeof cache,
                                     &err),
               LM_OK, "%s", err.msg);
  cr_assert_eq(lm_profile_noisy_path(cache, side, sizeof side, &err), LM_OK);
  lm_noise v = quiet_verdict();
  lm_profile *p = profile_with(&v, 0);
  cr_expect_eq(
      lm_profile_save_calibrated(p, cache, 1, 0, wrote, sizeof wrote, &err),
      LM_OK, "%s", err.msg);
  cr_expect_eq(access(cache, F_OK), 0);
  cr_expect_neq(access(side, F_OK), 0);
  lm_profile_free(p);
}

/* ---- the command line ------------------------------------------------------
 */

/* Run `lanemap ARGS`; stdout and stderr into *out and *errs (malloc'ed).
 * Returns the exit code. */
static int run(char **out, char **errs, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int run(char **out, char **errs, const char *fmt, ...) {
  char args[2048], cmd[4096], o[128], e[128];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(o, sizeof o, "%s/stdout", dir);
  snprintf(e, sizeof e, "%s/stderr", dir);
  snprintf(cmd, sizeof cmd, "%s %s >'%s' 2>'%s'", LANEMAP_CLI, args, o, e);
  int st = system(cmd);
  cr_assert(WIFEXITED(st), "%s did not exit", cmd);
  *out = slurp(o);
  *errs = slurp(e);
  return WEXITSTATUS(st);
}

Test(profile_noise, predict_and_solve_refuse_a_noisy_profile_with_exit_1) {
  lm_noise v = noisy_verdict();
  lm_profile *p = profile_with(&v, 1);
  char path[128], plan[128];
  snprintf(path, sizeof path, "%s/noisy.json", dir);
  snprintf(plan, sizeof plan, "%s/plan.json", dir);
  save(p, path);
  lm_profile_free(p);
  char *out, *err;
  cr_expect_eq(
      run(&out, &err, "predict %s --shape 4,8 --profile %s", RMS, path), 1,
      "%s", err);
  cr_expect(strstr(err, path) && strstr(err, "--accept-noisy"), "%s", err);
  free(out), free(err);
  cr_expect_eq(run(&out, &err,
                   "predict %s --shape 4,8 --profile %s "
                   "--accept-noisy",
                   RMS, path),
               0, "%s", err);
  cr_expect(strstr(err, "accepted a noisy profile"), "%s", err);
  free(out), free(err);
  cr_expect_eq(run(&out, &err, "solve %s -o %s --profile %s", TINY, plan, path),
               1, "%s", err);
  cr_expect(strstr(err, "--accept-noisy"), "%s", err);
  cr_expect_neq(access(plan, F_OK), 0, "a plan was written");
  free(out), free(err);
  cr_expect_eq(run(&out, &err, "solve %s -o %s --profile %s --accept-noisy",
                   TINY, plan, path),
               0, "%s", err);
  cr_expect_eq(access(plan, F_OK), 0);
  free(out), free(err);
  cr_expect_eq(run(&out, &err, "predict --help"), 0);
  cr_expect(strstr(out, "--accept-noisy"), "%s", out);
  free(out), free(err);
  cr_expect_eq(run(&out, &err, "solve --help"), 0);
  cr_expect(strstr(out, "--accept-noisy"), "%s", out);
  free(out), free(err);
  cr_expect_eq(run(&out, &err, "calibrate --help"), 0);
  cr_expect(strstr(out, "--accept-noisy"), "%s", out);
  free(out), free(err);
}

Test(profile_noise, a_malformed_verdict_is_exit_2_naming_the_key) {
  lm_noise v = noisy_verdict();
  lm_profile *p = profile_with(&v, 1);
  char *text = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_profile_to_json_text(p, &text, &err), LM_OK, "%s", err.msg);
  lm_profile_free(p);
  /* "noise": {...} -> "noise": "loud" */
  char *at = strstr(text, "\"noise\":");
  cr_assert_not_null(at);
  char *end = strstr(at, "\"noisy_families\"");
  cr_assert_not_null(end);
  char bad[1 << 16];
  snprintf(bad, sizeof bad, "%.*s\"noise\": \"loud\",\n\t%s", (int)(at - text),
           text, end);
  free(text);
  char path[128];
  snprintf(path, sizeof path, "%s/bad.json", dir);
  cr_assert_eq(lm_file_write_atomic(path, bad, strlen(bad), &err), LM_OK);
  char *out, *errs;
  cr_expect_eq(
      run(&out, &errs, "predict %s --shape 4,8 --profile %s", RMS, path), 2,
      "%s", errs);
  cr_expect(strstr(errs, "$.noise: expected an object, got \"loud\""), "%s",
            errs);
  free(out), free(errs);
}
