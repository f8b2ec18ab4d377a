/* End-to-end claims about `lanemap solve`, `lanemap compile --plan` and
 * `lanemap run --plan --workload --verify` on solver/examples/tiny.json,
 * with the default profile so the result does not depend on a cache:
 * exit codes, the report's fields, the plan file, the AOT object and
 * header (compiled and run against the oracle's verdict through the JIT
 * run), and the error paths (bad workload, infeasible budget, time limit,
 * no profile, another machine's plan).  Nothing is timed. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lanemap/calibrate.h"
#include "lanemap/core.h"
#include "lanemap/plan.h"
#include "support/profiles.h"

#define SRC LANEMAP_SOURCE_DIR
#define TINY SRC "/solver/examples/tiny.json"

static char dir[256];

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/lanemap_solve_cli_XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  cr_assert_eq(system(cmd), 0);
}

/* Run `lanemap ARGS` with stdout in *out and stderr in *errs (malloc'ed);
 * returns the exit code. */
static int run(char **out, char **errs, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int run(char **out, char **errs, const char *fmt, ...) {
  char args[2048], cmd[4096], o[512], e[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(o, sizeof o, "%s/stdout", dir);
  snprintf(e, sizeof e, "%s/stderr", dir);
  snprintf(cmd, sizeof cmd, "%s %s >'%s' 2>'%s'", LANEMAP_CLI, args, o, e);
  int st = system(cmd);
  cr_assert(WIFEXITED(st), "%s did not exit", cmd);
  size_t n;
  lm_error err = {0};
  cr_assert_eq(lm_file_read(o, out, &n, &err), LM_OK);
  cr_assert_eq(lm_file_read(e, errs, &n, &err), LM_OK);
  return WEXITSTATUS(st);
}

static void write_file(const char *path, const char *text) {
  lm_error e = {0};
  cr_assert_eq(lm_file_write_atomic(path, text, strlen(text), &e), LM_OK, "%s", e.msg);
}

TestSuite(solve_cli, .init = setup, .fini = teardown);

Test(solve_cli, solve_then_run_verified_and_compile) {
  char *out, *err, plan[512];
  snprintf(plan, sizeof plan, "%s/plan.json", dir);
  int rc = run(&out, &err, "solve %s --default-profile -o %s --json", TINY, plan);
  cr_assert_eq(rc, 0, "%s", err);
  cJSON *j = cJSON_Parse(out);
  cr_assert_not_null(j, "%s", out);
  cr_assert_str_eq(cJSON_GetObjectItem(j, "status")->valuestring, "optimal");
  cr_assert_eq(cJSON_GetObjectItem(j, "buckets")->valueint, 5);
  cr_assert_leq(cJSON_GetObjectItem(j, "compiled")->valueint, 4); /* cap 2 per kernel */
  cr_assert_geq(cJSON_GetObjectItem(j, "greedy_objective_ns")->valuedouble,
                cJSON_GetObjectItem(j, "objective_ns")->valuedouble * (1 - 1e-12));
  cJSON_Delete(j);
  cr_assert(strstr(err, "uncalibrated defaults"), "%s", err);
  free(out);
  free(err);

  rc = run(&out, &err, "run --plan %s --workload %s --verify", plan, TINY);
  cr_assert_eq(rc, 0, "%s%s", out, err);
  cr_assert(strstr(out, "5 buckets: 5 ok and verified, 0 failed"), "%s", out);
  int lines = 0;
  for (const char *p = out; (p = strstr(p, "ok, verified")); p++)
    lines++;
  cr_assert_eq(lines, 5, "%s", out);
  cr_assert_null(strstr(err, "warning"), "%s", err);
  free(out);
  free(err);

  rc = run(&out, &err, "compile --plan %s --json", plan);
  cr_assert_eq(rc, 0, "%s", err);
  j = cJSON_Parse(out);
  cr_assert_not_null(j, "%s", out);
  cr_assert_geq(cJSON_GetObjectItem(j, "variants")->valueint, 2);
  cJSON_Delete(j);
  free(out);
  free(err);

  rc = run(&out, &err, "compile --plan %s --aot %s/aot --prefix tinyplan", plan, dir);
  cr_assert_eq(rc, 0, "%s", err);
  char obj[512], hdr[512];
  snprintf(obj, sizeof obj, "%s/aot/tinyplan.o", dir);
  snprintf(hdr, sizeof hdr, "%s/aot/tinyplan.h", dir);
  cr_assert_eq(access(obj, R_OK), 0);
  cr_assert_eq(access(hdr, R_OK), 0);
  free(out);
  free(err);

  /* the AOT header compiles, and its dispatch matches the JIT lookup:
   * a driver prints the match of three shapes */
  char drv[512], exe[512], cmd[4096];
  snprintf(drv, sizeof drv, "%s/drv.c", dir);
  snprintf(exe, sizeof exe, "%s/drv", dir);
  write_file(drv, "#include <stdio.h>\n#include \"tinyplan.h\"\n"
                  "int main(void) {\n  int m[3];\n"
                  "  tinyplan_entry a = tinyplan_rmsnorm_dispatch(8, 256, &m[0]);\n"
                  "  tinyplan_entry b = tinyplan_rmsnorm_dispatch(30, 256, &m[1]);\n"
                  "  tinyplan_entry c = tinyplan_swiglu_dispatch(5, 7, &m[2]);\n"
                  "  printf(\"%d %d %d %d\\n\", m[0], m[1], m[2], a && b && c);\n"
                  "  return 0;\n}\n");
  snprintf(cmd, sizeof cmd,
           "%s -I%s/aot %s %s -o %s -L%s -llanemap -lsleef -Wl,-rpath,%s -lm && %s > %s/drv.out",
           LANEMAP_CC, dir, drv, obj, exe, LANEMAP_LIBDIR, LANEMAP_LIBDIR, exe, dir);
  cr_assert_eq(system(cmd), 0, "%s", cmd);
  char p[512];
  size_t n;
  lm_error e = {0};
  snprintf(p, sizeof p, "%s/drv.out", dir);
  cr_assert_eq(lm_file_read(p, &out, &n, &e), LM_OK);
  cr_assert_str_eq(out, "0 1 2 1\n");
  free(out);
}

Test(solve_cli, another_machines_plan_warns_but_runs) {
  char *out, *err, plan[512];
  snprintf(plan, sizeof plan, "%s/plan.json", dir);
  cr_assert_eq(run(&out, &err, "solve %s --default-profile -o %s", TINY, plan), 0, "%s", err);
  free(out);
  free(err);
  char *text;
  size_t n;
  lm_error e = {0};
  cr_assert_eq(lm_file_read(plan, &text, &n, &e), LM_OK);
  cJSON *j = cJSON_Parse(text);
  free(text);
  cJSON *p0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "profiles"), 0);
  cJSON_ReplaceItemInObject(p0, "fingerprint", cJSON_CreateString("00000000deadbeef"));
  text = cJSON_Print(j);
  cJSON_Delete(j);
  write_file(plan, text);
  free(text);
  cr_assert_eq(run(&out, &err, "run --plan %s --workload %s", plan, TINY), 0, "%s", err);
  cr_assert(strstr(err, "warning") && strstr(err, "00000000deadbeef"), "%s", err);
  cr_assert(strstr(out, "5 buckets: 5 ok"), "%s", out);
  free(out);
  free(err);
}

Test(solve_cli, bad_input_exits_2_naming_the_field) {
  char *out, *err, wl[512], plan[512];
  snprintf(wl, sizeof wl, "%s/w.json", dir);
  snprintf(plan, sizeof plan, "%s/plan.json", dir);
  write_file(wl, "{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\""
                 SRC "/kernels/rmsnorm.lk\",\"buckets\":[{\"R\":1,\"C\":8,\"weight\":1},"
                 "{\"R\":2,\"C\":8,\"weight\":-2}]}]}");
  cr_assert_eq(run(&out, &err, "solve %s --default-profile -o %s", wl, plan), 2);
  cr_assert(strstr(err, "kernels[0].buckets[1].weight: expected a finite number >= 0"),
            "%s", err);
  cr_assert_neq(access(plan, F_OK), 0);
  free(out);
  free(err);
  /* a finite weight whose weighted cost overflows: exit 2 with every
   * method, no plan (it aborted in a double free) */
  write_file(wl, "{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\""
                 SRC "/kernels/rmsnorm.lk\",\"buckets\":[{\"R\":1,\"C\":8,\"weight\":1e308},"
                 "{\"R\":2,\"C\":8,\"weight\":1}]}]}");
  const char *methods[] = {"", "--no-prune", "--method joint", "--threshold"};
  for (int m = 0; m < 4; m++) {
    cr_assert_eq(run(&out, &err, "solve %s --default-profile -o %s %s", wl, plan, methods[m]), 2,
                 "%s: %s", methods[m], err);
    cr_assert(strstr(err, "scale the weights down"), "%s", err);
    cr_assert_neq(access(plan, F_OK), 0);
    free(out);
    free(err);
  }
  /* infeasible budget: exit 2 naming the global budget */
  write_file(wl, "{\"schema\":\"lanemap.workload/1\",\"compile_budget_ms\":10,"
                 "\"kernels\":[{\"kernel\":\"" SRC "/kernels/rmsnorm.lk\","
                 "\"buckets\":[{\"R\":1,\"C\":8,\"weight\":1}]}]}");
  cr_assert_eq(run(&out, &err, "solve %s --default-profile -o %s", wl, plan), 2);
  cr_assert(strstr(err, "global budget 10 ms is below"), "%s", err);
  cr_assert(strstr(err, "0 = rmsnorm"), "%s", err);
  free(out);
  free(err);
  /* a malformed plan */
  write_file(plan, "{\"schema\":\"lanemap.plan/1\",\"workload\":\"\",\"profiles\":[]}");
  cr_assert_eq(run(&out, &err, "compile --plan %s", plan), 2);
  cr_assert(strstr(err, "profiles: expected"), "%s", err);
  free(out);
  free(err);
  cr_assert_eq(run(&out, &err, "run --plan %s --workload %s --verify", plan, TINY), 2);
  free(out);
  free(err);
  /* usage errors */
  cr_assert_eq(run(&out, &err, "solve %s --default-profile", TINY), 2);
  cr_assert(strstr(err, "-o PLAN"), "%s", err);
  free(out);
  free(err);
  cr_assert_eq(run(&out, &err, "solve %s -o %s --default-profile --time-limit -1", TINY, plan), 2);
  free(out);
  free(err);
  cr_assert_eq(run(&out, &err, "run --plan %s", plan), 2);
  free(out);
  free(err);
  /* no profile in the cache and none given */
  char cache[512];
  snprintf(cache, sizeof cache, "%s/cache", dir);
  setenv("LANEMAP_CACHE_DIR", cache, 1);
  cr_assert_eq(run(&out, &err, "solve %s -o %s/p2.json", TINY, dir), 2, "%s", err);
  cr_assert(strstr(err, "no cached profile"), "%s", err);
  unsetenv("LANEMAP_CACHE_DIR");
  free(out);
  free(err);
}

Test(solve_cli, time_limit_returns_the_incumbent) {
  char *out, *err, plan[512];
  snprintf(plan, sizeof plan, "%s/plan.json", dir);
  /* the joint MIP over the transformer with thresholds cannot finish in
   * 1 ms: the greedy incumbent is returned with status time-limit */
  int rc = run(&out, &err,
               "solve %s/solver/examples/transformer.json --default-profile -o %s --json "
               "--method joint --threshold --time-limit 0.001",
               SRC, plan);
  cr_assert_eq(rc, 0, "%s", err);
  cJSON *j = cJSON_Parse(out);
  cr_assert_not_null(j, "%s", out);
  cr_assert_str_eq(cJSON_GetObjectItem(j, "status")->valuestring, "time-limit");
  cr_assert_gt(cJSON_GetObjectItem(j, "objective_ns")->valuedouble, 0);
  cJSON_Delete(j);
  cr_assert_eq(access(plan, R_OK), 0);
  free(out);
  free(err);
}

/* --verbose sends GLPK's log to stderr, so --json's stdout stays one JSON
 * document (thresholded dispatch on the transformer workload runs GLPK). */
Test(solve_cli, verbose_log_goes_to_stderr_and_json_stays_clean) {
  char *out, *err, plan[512];
  snprintf(plan, sizeof plan, "%s/plan.json", dir);
  int rc = run(&out, &err,
               "solve '%s' --default-profile --json --verbose --threshold -o '%s'",
               SRC "/solver/examples/transformer.json", plan);
  cr_assert_eq(rc, 0, "%s", err);
  cJSON *j = cJSON_Parse(out);
  cr_expect_not_null(j, "stdout is not one JSON document:\n%s", out);
  cJSON_Delete(j);
  cr_expect(strstr(err, "obj =") != NULL, "no GLPK log on stderr:\n%s", err);
  free(out);
  free(err);
}

/* A workload over two ISA targets: each --profile prices the target it was
 * calibrated for; a profile of a target the workload lacks is exit 2. */
Test(solve_cli, each_profile_prices_its_own_isa_target) {
  if (!lm_isa_runnable(LM_ISA_AVX2) || !lm_isa_runnable(LM_ISA_AVX512))
    cr_skip_test("needs avx2 and avx512");
  char p2[512], p4[512], p1[512], wl[512], plan[512], *out, *err;
  snprintf(p2, sizeof p2, "%s/avx2.json", dir);
  snprintf(p4, sizeof p4, "%s/avx512.json", dir);
  snprintf(p1, sizeof p1, "%s/sse.json", dir);
  snprintf(wl, sizeof wl, "%s/w.json", dir);
  snprintf(plan, sizeof plan, "%s/plan.json", dir);
  const lm_isa isas[3] = {LM_ISA_AVX2, LM_ISA_AVX512, LM_ISA_SSE42};
  const char *paths[3] = {p2, p4, p1};
  for (int i = 0; i < 3; i++) {
    lm_profile *p = NULL;
    lm_error e = {0};
    cr_assert_eq(lm_profile_default(isas[i], &p, &e), LM_OK, "%s", e.msg);
    cr_assert_eq(lm_profile_save(p, paths[i], &e), LM_OK, "%s", e.msg);
    lm_profile_free(p);
  }
  char text[1024];
  snprintf(text, sizeof text,
           "{\"schema\":\"lanemap.workload/1\",\"isa\":[\"avx2\",\"avx512\"],"
           "\"kernels\":[{\"kernel\":\"%s/kernels/rmsnorm.lk\","
           "\"buckets\":[{\"R\":64,\"C\":1024,\"weight\":1}]}]}",
           SRC);
  write_file(wl, text);
  int rc = run(&out, &err, "solve '%s' --profile '%s' --profile '%s' -o '%s'", wl, p4,
               p2, plan);
  cr_assert_eq(rc, 0, "%s", err);
  char want[1024];
  snprintf(want, sizeof want, "profile for x86-64-v3: %s (", p2);
  cr_expect(strstr(err, want) != NULL, "%s", err);
  snprintf(want, sizeof want, "profile for x86-64-v4: %s (", p4);
  cr_expect(strstr(err, want) != NULL, "%s", err);
  free(out);
  free(err);
  rc = run(&out, &err, "solve '%s' --profile '%s' --profile '%s' -o '%s'", wl, p2, p1,
           plan);
  cr_expect_eq(rc, 2, "%s", err);
  cr_expect(strstr(err, "calibrated for x86-64-v2, which is not an ISA target") != NULL,
            "%s", err);
  free(out);
  free(err);
  rc = run(&out, &err, "solve '%s' --profile '%s' --profile '%s' -o '%s'", wl, p4, p4,
           plan);
  cr_expect_eq(rc, 2, "%s", err);
  cr_expect(strstr(err, "a second profile for x86-64-v4") != NULL, "%s", err);
  free(out);
  free(err);
}

/* Resamples that move the terms unevenly, so that some buckets have near
 * ties and some do not. */
static double uneven(int b, int t) { return 0.6 + 0.1 * b * (t % 3); }

/* Settling is the default, says what it did, and --point turns it off;
 * the plan records which. */
Test(solve_cli, settling_is_the_default_and_point_turns_it_off) {
  char prof[512], plan[512], *out, *err;
  snprintf(prof, sizeof prof, "%s/boot.json", dir);
  snprintf(plan, sizeof plan, "%s/plan.json", dir);
  lm_error e = {0};
  lm_profile *p = support_defaults_with_bootstrap(8, uneven);
  cr_assert_eq(lm_profile_save(p, prof, &e), LM_OK, "%s", e.msg);
  lm_profile_free(p);
  const char *modes[2] = {"", "--point"};
  for (int m = 0; m < 2; m++) {
    int rc = run(&out, &err, "solve %s --profile '%s' %s -o '%s' --json", TINY, prof,
                 modes[m], plan);
    cr_assert_eq(rc, 0, "%s", err);
    cJSON *j = cJSON_Parse(out);
    cr_assert_not_null(j, "%s", out);
    cr_assert_eq(cJSON_IsTrue(cJSON_GetObjectItem(j, "settle")), m == 0, "%s", out);
    const cJSON *ties = cJSON_GetObjectItem(j, "near_ties");
    const cJSON *moved = cJSON_GetObjectItem(j, "settled");
    cr_assert(cJSON_IsNumber(ties) && cJSON_IsNumber(moved), "%s", out);
    cr_assert_leq(moved->valueint, ties->valueint, "%s", out);
    cr_assert_leq(ties->valueint, cJSON_GetObjectItem(j, "buckets")->valueint, "%s", out);
    cJSON_Delete(j);
    free(out);
    free(err);
    lm_plan *pl = NULL;
    cr_assert_eq(lm_plan_load(plan, &pl, NULL, &e), LM_OK, "%s", e.msg);
    cr_assert_eq(pl->settle, m == 0);
    lm_plan_free(pl);
  }
  int rc = run(&out, &err, "solve %s --profile '%s' -o '%s'", TINY, prof, plan);
  cr_assert_eq(rc, 0, "%s", err);
  cr_assert(strstr(out, "near ties: "), "%s", out);
  free(out);
  free(err);
}
