/* Bad-input claims, at the command line: every class of bad input in
 * docs/bad_input.md gets exit code 2 (3 for a path that cannot be written)
 * and one clear message naming the file, field or flag, and nothing on
 * stdout.  The library-level checks of each class live with their module
 * (test_diagnostics, test_ir, test_backend, test_profile, test_workload,
 * test_plan); this file checks what the user actually sees, for the
 * classes the table lists.  The CLI runs with the source tree as its
 * working directory, so golden messages with relative paths match. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "lanemap/core.h"

typedef struct Run {
  int code; /* exit code, or 128 + signal */
  char *out, *err;
} Run;

static char *slurp_fd(int fd) {
  size_t cap = 4096, n = 0;
  char *b = malloc(cap);
  lseek(fd, 0, SEEK_SET);
  for (;;) {
    ssize_t r = read(fd, b + n, cap - n - 1);
    if (r <= 0)
      break;
    n += (size_t)r;
    if (cap - n - 1 == 0)
      b = realloc(b, cap *= 2);
  }
  b[n] = 0;
  return b;
}

/* Run the CLI with argv (NULL-terminated, without the program) in the
 * source tree. */
static Run run_argv(const char *const *args) {
  const char *argv[64] = {LANEMAP_CLI};
  int n = 1;
  for (; args[n - 1] && n < 63; n++)
    argv[n] = args[n - 1];
  argv[n] = NULL;
  char fo[] = "/tmp/lanemap-bad-out-XXXXXX", fe[] = "/tmp/lanemap-bad-err-XXXXXX";
  int o = mkstemp(fo), e = mkstemp(fe);
  cr_assert(o >= 0 && e >= 0);
  unlink(fo), unlink(fe);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    dup2(o, 1), dup2(e, 2);
    if (chdir(LANEMAP_SOURCE_DIR) != 0)
      _exit(125);
    execv(LANEMAP_CLI, (char *const *)argv);
    _exit(126);
  }
  int st = 0;
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
    ;
  Run r;
  r.code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  r.out = slurp_fd(o), r.err = slurp_fd(e);
  close(o), close(e);
  return r;
}
#define RUN(...) run_argv((const char *const[]){__VA_ARGS__, NULL})

static void run_free(Run *r) {
  free(r->out);
  free(r->err);
}

/* Exit `code`, `want` in stderr, stdout empty. */
static void expect_refused(Run r, int code, const char *want, const char *what) {
  cr_expect_eq(r.code, code, "%s: exit %d, stderr: %s", what, r.code, r.err);
  cr_expect(strstr(r.err, want) != NULL, "%s: want \"%s\" in stderr: %s", what, want,
            r.err);
  cr_expect_eq(r.out[0], 0, "%s: stdout not empty: %s", what, r.out);
}

static char *trimmed(char *s) {
  size_t n = strlen(s);
  while (n && (s[n - 1] == '\n' || s[n - 1] == '\r'))
    s[--n] = 0;
  return s;
}

#define RMS "kernels/rmsnorm.lk"
#define REREAD "x86-64-v2/w4/l4/phase=reread/t1"

/* ---- kernel sources ------------------------------------------------------ */

Test(bad_input, every_golden_kernel_diagnostic_is_what_check_prints_with_exit_2) {
  glob_t g;
  cr_assert_eq(glob(LANEMAP_SOURCE_DIR "/tests/golden/diag/*.lk", 0, NULL, &g), 0);
  cr_assert_geq(g.gl_pathc, 25);
  for (size_t i = 0; i < g.gl_pathc; i++) {
    const char *rel = g.gl_pathv[i] + strlen(LANEMAP_SOURCE_DIR) + 1;
    char errf[2048];
    snprintf(errf, sizeof errf, "%.*s.err", (int)(strlen(g.gl_pathv[i]) - 3), g.gl_pathv[i]);
    char *want = NULL;
    lm_error e;
    cr_assert_eq(lm_file_read(errf, &want, NULL, &e), LM_OK, "%s", e.msg);
    Run r = RUN("check", rel);
    cr_expect_eq(r.code, 2, "%s: exit %d", rel, r.code);
    cr_expect_str_eq(trimmed(r.err), trimmed(want), "%s", rel);
    cr_expect_eq(r.out[0], 0, "%s: stdout: %s", rel, r.out);
    run_free(&r);
    free(want);
  }
  globfree(&g);
}

Test(bad_input, unreadable_kernel_files_exit_2_naming_the_file) {
  Run r = RUN("check", "no/such/kernel.lk");
  expect_refused(r, 2, "no/such/kernel.lk: cannot open: No such file or directory",
                 "missing file");
  run_free(&r);
  r = RUN("check", "kernels");
  expect_refused(r, 2, "kernels: cannot read: Is a directory", "a directory");
  run_free(&r);
  r = RUN("oracle", "no/such/kernel.lk", "--shape", "4,8");
  expect_refused(r, 2, "no/such/kernel.lk: cannot open", "oracle of a missing file");
  run_free(&r);
}

/* An input past LM_FILE_MAX_BYTES (a sparse file here; /dev/zero or a
 * FIFO that never ends alike) is refused naming the limit, not read until
 * memory runs out. */
Test(bad_input, a_kernel_file_past_the_size_limit_exits_2_naming_the_limit) {
  char dir[] = "/tmp/lanemap-big-XXXXXX", path[64];
  cr_assert_not_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/big.lk", dir);
  FILE *f = fopen(path, "w");
  cr_assert_not_null(f);
  cr_assert_eq(ftruncate(fileno(f), (off_t)LM_FILE_MAX_BYTES + 1), 0);
  fclose(f);
  Run r = RUN("check", path);
  expect_refused(r, 2, "big.lk: more than 256 MiB, the most a file may hold", "a huge kernel");
  run_free(&r);
  unlink(path);
  rmdir(dir);
}

/* ---- shapes -------------------------------------------------------------- */

static const struct {
  const char *kernel, *shape, *want;
} bad_shapes[] = {
    {RMS, "-1,8", "bad shape '-1,8': R must be positive"},
    {RMS, "0,8", "bad shape '0,8': R must be positive"},
    {RMS, "4,0", "bad shape '4,0': C must be positive"},
    {RMS, "4,-3", "bad shape '4,-3': C must be positive"},
    {RMS, "65536,65537", "shape too large: x would have 4295032832 elements (at most 2^31)"},
    {RMS, "3037000500,3037000500", "shape too large: the element count of x overflows 64 bits"},
    {RMS, "99999999999999999999,1", "bad shape '99999999999999999999,1': R is too large"},
    {RMS, "4", "bad shape '4': expected R,C or RxC (e.g. 17x65)"},
    {RMS, "abc", "bad shape 'abc': expected R,C or RxC (e.g. 17x65)"},
    {RMS, "4x8x3", "bad shape '4x8x3': unexpected 'x' after R and C"},
    {RMS, "4,8,Q=3", "unknown dim 'Q' in 'Q=3' (kernel rmsnorm has R, C)"},
    {RMS, "4,8,C=9", "dim C=9 conflicts with C=8 from the shape"},
    {"kernels/rope.lk", "17,65", "C=65 is not a multiple of 2 (dim 2*H of x)"},
};

Test(bad_input, bad_shapes_exit_2_with_the_reason_in_oracle_run_and_predict) {
  for (size_t i = 0; i < sizeof bad_shapes / sizeof bad_shapes[0]; i++) {
    const char *k = bad_shapes[i].kernel, *s = bad_shapes[i].shape;
    char what[128];
    snprintf(what, sizeof what, "oracle --shape %s", s);
    Run r = RUN("oracle", k, "--shape", s);
    expect_refused(r, 2, bad_shapes[i].want, what);
    run_free(&r);
    snprintf(what, sizeof what, "run --shape %s", s);
    r = RUN("run", k, "--shape", s, "--all-variants", "--isa", "sse4.2");
    expect_refused(r, 2, bad_shapes[i].want, what);
    run_free(&r);
    snprintf(what, sizeof what, "predict --shape %s", s);
    r = RUN("predict", k, "--shape", s, "--default-profile", "--isa", "sse4.2");
    expect_refused(r, 2, bad_shapes[i].want, what);
    run_free(&r);
  }
}

/* ---- variant strings ------------------------------------------------------ */

static const struct {
  const char *kernel, *variant, *want;
} bad_variants[] = {
    {RMS, "x86-64-v9/w4/l4/phase=reread/t1", "unknown ISA target 'x86-64-v9'"},
    {RMS, "x86-64-v3/w7/l1/glob=gather/phase=reread/t1",
     "w7 is not a vector width of x86-64-v3 for f32 data"},
    {RMS, "x86-64-v3/w8/l1/phase=reread/t1", "L=1 < W=8 needs glob=gather or glob=transpose"},
    {RMS, "x86-64-v3/w8/l8/phase=later/t1", "'phase=later': phase must be snapshot or reread"},
    {RMS, "x86-64-v3/w8/l8/phase=reread/t1/g3", "a split (static, dynK or gG) applies only with t > 1"},
    {RMS, "x86-64-v3/w8/l8/phase=reread/t1/static", "a split (static, dynK or gG) applies only with t > 1"},
    {RMS, "x86-64-v3/w8/l8/phase=reread/t2", "t2 needs a split: static, dynK"},
    {RMS, "x86-64-v3/w8/l8/phase=reread/t2/dyn0", "unexpected field 'dyn0'"},
    {RMS, "x86-64-v3/w8/l8/phase=reread/t2/dyn", "unexpected field 'dyn'"},
    {RMS, "x86-64-v3/w8/l8/phase=reread/t2/dyn2048", "unexpected field 'dyn2048'"},
    {RMS, "x86-64-v3/w8/l8/phase=reread/t2/static/dyn4", "unexpected field 'dyn4'"},
    {RMS, "x86-64-v3/w8/l8/phase=reread/t2/guided", "unexpected field 'guided'"},
    {RMS, "x86-64-v3/w8/l8/phase=reread/t1/junk", "unexpected field 'junk'"},
    {RMS, "x86-64-v3/w8/l8/phase=reread", "needs ISA, wW, lL and tT fields"},
    {RMS, "x86-64-v3/w8/l8/t1",
     "kernel rmsnorm reuses a tile after a reduction: the variant needs phase=snapshot or "
     "phase=reread"},
    {"kernels/swiglu.lk", "x86-64-v3/w8/l8/phase=reread/t1",
     "kernel swiglu reuses no tile after a reduction: phase does not apply"},
    /* the math provider */
    {"kernels/swiglu.lk", "x86-64-v3/w8/l8/math=fast/t1",
     "'math=fast': math must be sleef-u10, sleef-u35, mvec or ir"},
    {"kernels/swiglu.lk", "x86-64-v3/w8/l8/t1/math=mvec", "unexpected field 'math=mvec'"},
    {"kernels/swiglu.lk", "x86-64-v3/w8/l8/math=mvec/math=ir/t1", "unexpected field 'math=ir'"},
    {"kernels/swiglu.lk", "x86-64-v3/w8/l8/math=sleef-u35/t1",
     "math=sleef-u35 has no f32 exp routine"},
    {RMS, "x86-64-v3/w8/l8/phase=reread/math=mvec/t1",
     "kernel rmsnorm calls no vector math: math does not apply"},
    {"kernels/masked_softmax.lk", "x86-64-v3/w8/l8/phase=reread/math=mvec/t1",
     "outside [-87.3, 88.7] where the routine stays on its vector path"},
    /* the floating-point mode */
    {RMS, "x86-64-v3/w8/l8/phase=reread/fp=fast/t1", "'fp=fast': fp must be strict or relaxed"},
    {RMS, "x86-64-v3/w8/l8/phase=reread/t1/fp=relaxed", "unexpected field 'fp=relaxed'"},
    {"kernels/masked_softmax.lk", "x86-64-v3/w8/l8/phase=reread/fp=relaxed/math=ir/t1",
     "unexpected field 'math=ir'"},
    {"kernels/swiglu.lk", "x86-64-v3/w8/l8/fp=relaxed/t1",
     "kernel swiglu: fp=relaxed changes nothing"},
    {"kernels/rope.lk", "x86-64-v2/w4/l4/fp=relaxed/t1",
     "kernel rope: fp=relaxed changes nothing on x86-64-v2, which has no FMA"},
};

Test(bad_input, bad_variant_strings_exit_2_naming_the_variant_and_field_once) {
  for (size_t i = 0; i < sizeof bad_variants / sizeof bad_variants[0]; i++) {
    const char *v = bad_variants[i].variant;
    char prefix[256];
    snprintf(prefix, sizeof prefix, "variant '%s': ", v);
    Run r = RUN("run", bad_variants[i].kernel, "--shape", "4,8", "--variant", v);
    expect_refused(r, 2, bad_variants[i].want, v);
    const char *at = strstr(r.err, prefix);
    cr_expect(at != NULL, "%s: stderr does not name it: %s", v, r.err);
    if (at)
      cr_expect_null(strstr(at + 1, prefix), "%s: named twice: %s", v, r.err);
    run_free(&r);
    r = RUN("emit", bad_variants[i].kernel, "--variant", v);
    cr_expect_eq(r.code, 2, "emit %s: exit %d: %s", v, r.code, r.err);
    cr_expect(strstr(r.err, bad_variants[i].want), "emit %s: %s", v, r.err);
    run_free(&r);
  }
  Run r = RUN("run", RMS, "--shape", "4,8", "--variant", "");
  expect_refused(r, 2, "no variant given (--variant V or --all-variants)", "empty variant");
  run_free(&r);
}

/* A profile whose terms were not tried is never the machine's. */
Test(bad_input, untried_terms_need_an_explicit_file) {
  Run r = RUN("calibrate", "--quick", "--keep-terms");
  expect_refused(r, 2, "--keep-terms needs --out F.json", "keep-terms to the cache");
  run_free(&r);
}

/* AArch64 targets: code is compiled here, never run or timed here. */
Test(bad_input, aarch64_targets_are_compiled_here_but_never_run_or_calibrated) {
  Run r = RUN("run", RMS, "--shape", "4,8", "--variant",
              "aarch64-neon/w4/l4/phase=reread/t1", "--verify");
  expect_refused(r, 2, "this machine cannot run aarch64-neon code", "run aarch64");
  run_free(&r);
  r = RUN("bench", RMS, "--shape", "4,8", "--all-variants", "--isa", "aarch64-sve256");
  expect_refused(r, 2, "this machine cannot run aarch64-sve256 code", "bench aarch64");
  run_free(&r);
  r = RUN("calibrate", "--isa", "aarch64-sve512", "--quick");
  expect_refused(r, 2, "build lanemap on an AArch64 machine and calibrate there",
                 "calibrate aarch64");
  run_free(&r);
  r = RUN("evaluate", "--isa", "aarch64-neon", "--quick");
  expect_refused(r, 2, "aarch64-neon cannot run on this machine", "evaluate aarch64");
  run_free(&r);
  r = RUN("emit", "kernels/gelu_residual.lk", "--variant", "aarch64-neon/w4/l4/t1");
  expect_refused(r, 2, "on aarch64-neon only math=ir", "emit without math=ir");
  run_free(&r);
  r = RUN("emit", "tests/kernels/math_all.lk", "--variant", "aarch64-neon/w4/l4/math=ir/t1");
  expect_refused(r, 2, "math=ir has no f32 sin routine", "emit sin on aarch64");
  run_free(&r);
  r = RUN("emit", RMS, "--variant", "aarch64-sve256/w4/l4/phase=reread/t1");
  expect_refused(r, 2, "w4 is not a vector width of aarch64-sve256", "sve256 w4");
  run_free(&r);
  /* tune measures here: an AArch64 workload goes to solve instead */
  char wl[] = "/tmp/lanemap-a64-wl-XXXXXX";
  int fd = mkstemp(wl);
  cr_assert_geq(fd, 0);
  close(fd);
  const char *json = "{\"schema\":\"lanemap.workload/1\",\"isa\":[\"aarch64-neon\"],"
                     "\"kernels\":[{\"kernel\":\"" LANEMAP_SOURCE_DIR "/" RMS "\","
                     "\"buckets\":[{\"R\":64,\"C\":256,\"weight\":1}]}]}";
  lm_error e;
  cr_assert_eq(lm_file_write_atomic(wl, json, strlen(json), &e), LM_OK);
  r = RUN("tune", wl, "--default-profile", "-o", "/tmp/lanemap-never-a64.json");
  expect_refused(r, 2, "tune measures on this machine, which cannot run aarch64-neon code",
                 "tune aarch64");
  cr_expect_neq(access("/tmp/lanemap-never-a64.json", F_OK), 0, "tune wrote a plan");
  run_free(&r);
  r = RUN("solve", wl, "--default-profile", "-o", "/dev/null");
  cr_expect_eq(r.code, 0, "solve aarch64: exit %d: %s", r.code, r.err);
  run_free(&r);
  remove(wl);
  /* an AArch64 variant is priced by its own target's profile */
  r = RUN("predict", RMS, "--shape", "64,256", "--variant",
          "aarch64-neon/w4/l4/phase=reread/t1", "--default-profile");
  expect_refused(r, 2, "targets aarch64-neon, the profile host: give --isa aarch64-neon",
                 "predict aarch64 with the host profile");
  run_free(&r);
  /* what does work here: counts and predictions */
  r = RUN("emit", RMS, "--variant", "aarch64-sve256/w8/l8/priv=masked/phase=snapshot/t1");
  cr_expect_eq(r.code, 0, "emit sve256: exit %d: %s", r.code, r.err);
  const char *mm = strstr(r.out, "asm_maskmov");
  cr_expect(mm && atoi(mm + strlen("asm_maskmov")) > 0, "emit sve256: %s", r.out);
  run_free(&r);
  r = RUN("predict", RMS, "--shape", "64,256", "--isa", "aarch64-neon", "--all",
          "--default-profile");
  cr_expect_eq(r.code, 0, "predict neon: exit %d: %s", r.code, r.err);
  cr_expect(strstr(r.out, "aarch64-neon/w8/l1/"), "predict neon: %s", r.out);
  run_free(&r);
}

/* ---- profiles -------------------------------------------------------------- */

Test(bad_input, every_golden_bad_profile_is_refused_by_predict_with_exit_2) {
  glob_t g;
  cr_assert_eq(glob(LANEMAP_SOURCE_DIR "/tests/golden/profile/*.json", 0, NULL, &g), 0);
  int n = 0;
  for (size_t i = 0; i < g.gl_pathc; i++) {
    const char *rel = g.gl_pathv[i] + strlen(LANEMAP_SOURCE_DIR) + 1;
    char errf[2048];
    snprintf(errf, sizeof errf, "%.*s.err", (int)(strlen(g.gl_pathv[i]) - 5), g.gl_pathv[i]);
    char *want = NULL;
    lm_error e;
    if (lm_file_read(errf, &want, NULL, &e) != LM_OK)
      continue;
    Run r = RUN("predict", RMS, "--shape", "4,8", "--isa", "x86-64-v4", "--profile", rel);
    expect_refused(r, 2, trimmed(want), rel);
    run_free(&r);
    free(want);
    n++;
  }
  globfree(&g);
  cr_expect_geq(n, 12);
  Run r = RUN("predict", RMS, "--shape", "4,8", "--profile", "no/such/profile.json");
  expect_refused(r, 2, "no/such/profile.json: cannot open: No such file or directory",
                 "missing profile");
  run_free(&r);
}

/* ---- workloads --------------------------------------------------------------- */

Test(bad_input, workloads_with_a_non_finite_weight_or_bad_json_exit_2) {
  char dir[] = "/tmp/lanemap-bad-XXXXXX";
  cr_assert(mkdtemp(dir));
  char wl[1200], plan[1200];
  snprintf(wl, sizeof wl, "%s/w.json", dir);
  snprintf(plan, sizeof plan, "%s/plan.json", dir);
  const struct {
    const char *json, *want;
  } cases[] = {
      {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"" LANEMAP_SOURCE_DIR
       "/" RMS "\",\"buckets\":[{\"R\":1,\"C\":8,\"weight\":1e999}]}]}",
       "kernels[0].buckets[0].weight: expected a finite number >= 0"},
      {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"" LANEMAP_SOURCE_DIR
       "/" RMS "\",\"buckets\":[{\"R\":1,\"C\":8,\"weight\":NaN}]}]}",
       ": invalid JSON"},
      {"{\"schema\":\"lanemap.workload/1\",\"kernels\":[{\"kernel\":\"" LANEMAP_SOURCE_DIR
       "/" RMS "\",\"buckets\":[{\"R\":65536,\"C\":65537,\"weight\":1}]}]}",
       "kernels[0].buckets[0]: shape too large"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lm_error e;
    cr_assert_eq(lm_file_write_atomic(wl, cases[i].json, strlen(cases[i].json), &e), LM_OK);
    Run r = RUN("solve", wl, "-o", plan, "--default-profile");
    cr_expect_eq(r.code, 2, "case %zu: exit %d: %s", i, r.code, r.err);
    cr_expect(strstr(r.err, cases[i].want), "case %zu: want \"%s\" in %s", i, cases[i].want,
              r.err);
    cr_expect_neq(access(plan, F_OK), 0, "case %zu wrote a plan", i);
    run_free(&r);
  }
  unlink(wl);
  rmdir(dir);
}

/* ---- command-line flags ------------------------------------------------------ */

Test(bad_input, every_command_rejects_an_unknown_option_with_exit_2_and_its_usage) {
  const char *cmds[] = {"check", "oracle", "run",   "emit",  "bench",   "predict",
                        "calibrate", "solve", "tune", "compile", "merge", "evaluate"};
  for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
    Run r = RUN(cmds[i], "--frobnicate");
    cr_expect_eq(r.code, 2, "%s: exit %d", cmds[i], r.code);
    cr_expect(strstr(r.err, "'--frobnicate'"), "%s: %s", cmds[i], r.err);
    cr_expect(strstr(r.err, "usage: lanemap "), "%s: no usage: %s", cmds[i], r.err);
    cr_expect_eq(r.out[0], 0, "%s: stdout: %s", cmds[i], r.out);
    run_free(&r);
  }
  Run r = RUN("frobnicate");
  expect_refused(r, 2, "unknown command 'frobnicate'", "unknown command");
  run_free(&r);
}

Test(bad_input, bad_flag_values_exit_2_naming_the_flag) {
  const struct {
    const char *args[24];
    const char *want;
  } cases[] = {
      {{"oracle", RMS, "--shape", NULL}, "option --shape needs a value"},
      {{"oracle", RMS, "--shape", "4,8", "--seed", "-1", NULL},
       "--seed: '-1' is not a non-negative integer"},
      {{"oracle", RMS, "--shape", "4,8", "--seed", "9007199254740992", NULL},
       "--seed: 9007199254740992 is out of range (at most 9007199254740991)"},
      {{"run", RMS, "--shape", "4,8", "--variant", REREAD, "--seed", "abc", NULL},
       "--seed: 'abc' is not a non-negative integer"},
      {{"bench", RMS, "--shape", "4,8", "--variants", REREAD, "--samples", "-5", NULL},
       "--samples: '-5' is not a non-negative integer"},
      {{"bench", RMS, "--shape", "4,8", "--variants", REREAD, "--sample-ms", "nan", NULL},
       "--sample-ms: 'nan' is not a non-negative integer"},
      {{"predict", RMS, "--shape", "4,8", "--default-profile", "--isa", "z80", NULL},
       "unknown ISA target 'z80'"},
      {{"calibrate", "--isa", "z80", NULL}, "unknown ISA target 'z80'"},
      {{"run", RMS, "--shape", "4,8", "--all-variants", "--fp", "fast", NULL},
       "--fp 'fast': must be strict, both or relaxed"},
      {{"run", RMS, "--shape", "4,8", "--variant", REREAD, "--fp", "relaxed", NULL},
       "--fp goes with --all-variants"},
      {{"run", "--plan", "/tmp/lanemap-never.json", "--workload", "/tmp/lanemap-never.json",
        "--fp", "relaxed", NULL},
       "--plan takes its kernels, shapes and variants from the workload and the plan"},
      {{"evaluate", "--fp", "both", "--out", "/tmp/lanemap-never", NULL},
       "--fp 'both': must be strict or relaxed"},
      {{"evaluate", "--deploy", "--fp", "relaxed", "--out", "/tmp/lanemap-never", NULL},
       "--deploy takes one --isa target and no --cases, --shard, --cross, --list or --fp"},
      {{"solve", "solver/examples/tiny.json", "-o", "/tmp/lanemap-never.json",
        "--default-profile", "--mip-gap", "nan", NULL},
       "--mip-gap: expected a number >= 0, got 'nan'"},
      {{"solve", "solver/examples/tiny.json", "-o", "/tmp/lanemap-never.json",
        "--default-profile", "--time-limit", "inf", NULL},
       "--time-limit: expected a number > 0, got 'inf'"},
      {{"solve", "solver/examples/tiny.json", "-o", "/tmp/lanemap-never.json",
        "--default-profile", "--settle", "0", NULL},
       "--settle: expected a share in (0, 1], got '0'"},
      {{"solve", "solver/examples/tiny.json", "-o", "/tmp/lanemap-never.json",
        "--default-profile", "--settle", "1.5", NULL},
       "--settle: expected a share in (0, 1], got '1.5'"},
      {{"solve", "solver/examples/tiny.json", "-o", "/tmp/lanemap-never.json",
        "--default-profile", "--settle", "some", NULL},
       "--settle: expected a share in (0, 1], got 'some'"},
      {{"emit", RMS, "--variant", REREAD, "--object", "/tmp/lanemap-never.o", "--header",
        "/tmp/lanemap-never.h", "--symbol", "1bad name", NULL},
       "'1bad name' is not a C identifier"},
      {{"run", RMS, "--shape", "4,8", "--variant", REREAD "," REREAD, "--dump",
        "/tmp/lanemap-never", NULL},
       "--dump takes one --variant"},
      {{"run", RMS, "--shape", "4,8", "--all-variants", "--dump", "/tmp/lanemap-never", NULL},
       "--dump takes one --variant"},
      {{"oracle", "--suite", "kernels/suite.json", "--dump", "/tmp/lanemap-never", NULL},
       "--suite takes no kernel file, --shape or --dump"},
      {{"solve", "solver/examples/tiny.json", "--profile", "a", "--profile", "b", "--profile",
        "c", "--profile", "d", "--profile", "e", "--profile", "f", "--profile", "g",
        "--profile", "h", "--profile", "i", NULL},
       "--profile: at most 8, one per ISA target"},
      {{"tune", "solver/examples/tiny.json", "--profile", "a", "--profile", "b", "--profile",
        "c", "--profile", "d", "--profile", "e", "--profile", "f", "--profile", "g",
        "--profile", "h", "--profile", "i", NULL},
       "--profile: at most 8, one per ISA target"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Run r = run_argv(cases[i].args);
    char what[64];
    snprintf(what, sizeof what, "case %zu (%s)", i, cases[i].args[0]);
    expect_refused(r, 2, cases[i].want, what);
    run_free(&r);
  }
  cr_expect_neq(access("/tmp/lanemap-never.json", F_OK), 0);
  cr_expect_neq(access("/tmp/lanemap-never.o", F_OK), 0);
  cr_expect_neq(access("/tmp/lanemap-never", F_OK), 0);
}

/* ---- NaN and Inf in the data ---------------------------------------------------- */

static char *write_kernel(char *dir, const char *name, const char *src) {
  static char path[8][1300];
  static int n;
  char *p = path[n++ % 8];
  snprintf(p, 1300, "%s/%s", dir, name);
  lm_error e;
  cr_assert_eq(lm_file_write_atomic(p, src, strlen(src), &e), LM_OK, "%s", e.msg);
  return p;
}

Test(bad_input, input_ranges_must_be_finite_and_ordered) {
  char dir[] = "/tmp/lanemap-bad-XXXXXX";
  cr_assert(mkdtemp(dir));
  const struct {
    const char *src, *want;
  } cases[] = {
      {"kernel a(x: f32[R, C] in(-inf, inf)) -> (y: f32[R, C]) {\n  y[r, :] = x[r, :]\n}\n",
       ":1:27: error: in(LO, HI) needs finite LO <= HI"},
      {"kernel a(x: f32[R, C] in(1, -1)) -> (y: f32[R, C]) {\n  y[r, :] = x[r, :]\n}\n",
       ":1:26: error: in(LO, HI) needs finite LO <= HI"},
      {"kernel a(x: f32[R, C] in(0, nan)) -> (y: f32[R, C]) {\n  y[r, :] = x[r, :]\n}\n",
       ":1:29: error: expected a number for HI, found 'nan'"},
      {"kernel a(x: f32[R, C], s: f32 = nan) -> (y: f32[R, C]) {\n  y[r, :] = x[r, :] * s\n}\n",
       ":1:33: error: expected a number for the default, found 'nan'"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char name[32];
    snprintf(name, sizeof name, "k%zu.lk", i);
    char *k = write_kernel(dir, name, cases[i].src);
    Run r = RUN("check", k);
    char want[2048];
    snprintf(want, sizeof want, "%s%s", k, cases[i].want);
    expect_refused(r, 2, want, name);
    run_free(&r);
    r = RUN("oracle", k, "--shape", "2,4");
    expect_refused(r, 2, want, name);
    run_free(&r);
    unlink(k);
  }
  rmdir(dir);
}

/* NaN and Inf produced by the kernel (log of negatives, division by zero, an
 * infinite scalar) are data, not errors: the oracle counts them and every
 * variant must reproduce them exactly (NaN for NaN, the same infinity). */
Test(bad_input, nan_and_inf_values_are_counted_by_the_oracle_and_verified_exactly) {
  char dir[] = "/tmp/lanemap-bad-XXXXXX";
  cr_assert(mkdtemp(dir));
  char *k = write_kernel(dir, "naninf.lk",
                         "kernel naninf(x: f32[R, C] in(-1, 1)) -> (y: f32[R, C], s: f32[R]) {\n"
                         "  y[r, :] = log(x[r, :]) + x[r, :] / 0\n"
                         "  s[r] = sum(x[r, :] / 0)\n"
                         "}\n");
  Run r = RUN("oracle", k, "--shape", "3,9");
  cr_expect_eq(r.code, 0, "%s", r.err);
  cJSON *j = cJSON_Parse(r.out);
  cJSON *outs = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "summary"), "outputs");
  cJSON *y = cJSON_GetArrayItem(outs, 0), *sr = cJSON_GetArrayItem(outs, 1);
  cr_assert(y && sr, "%s", r.out);
  double ny = cJSON_GetNumberValue(cJSON_GetObjectItem(y, "nan"));
  double iy = cJSON_GetNumberValue(cJSON_GetObjectItem(y, "inf"));
  cr_expect(ny > 0 && iy > 0 && ny + iy == 27, "y: %g NaN, %g Inf: %s", ny, iy, r.out);
  /* x/0 over a row holds +inf and -inf: their sum is NaN */
  cr_expect_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(sr, "nan")), 3, "%s", r.out);
  cJSON_Delete(j);
  run_free(&r);
  r = RUN("run", k, "--shape", "3,9", "--all-variants", "--isa", "sse4.2", "--verify");
  cr_expect_eq(r.code, 0, "NaN/Inf outputs must verify: %s%s", r.out, r.err);
  cr_expect(strstr(r.out, "0 failed"), "%s", r.out);
  run_free(&r);
  char *k2 = write_kernel(dir, "infscale.lk",
                          "kernel infscale(x: f32[R, C], t: f32 = inf) -> (y: f32[R, C]) {\n"
                          "  y[r, :] = x[r, :] * t\n"
                          "}\n");
  r = RUN("run", k2, "--shape", "5,17", "--all-variants", "--isa", "sse4.2", "--verify");
  cr_expect_eq(r.code, 0, "an infinite scalar must verify: %s%s", r.out, r.err);
  run_free(&r);
  unlink(k), unlink(k2);
  rmdir(dir);
}

/* ---- unwritable outputs ------------------------------------------------------- */

Test(bad_input, outputs_that_cannot_be_written_exit_3_naming_the_path) {
  const struct {
    const char *args[14];
    const char *want;
  } cases[] = {
      {{"oracle", RMS, "--shape", "4,8", "--out", "/nonexistent/dir/x.jsonl", NULL},
       "/nonexistent/dir/x.jsonl: cannot write: No such file or directory"},
      {{"solve", "solver/examples/tiny.json", "-o", "/nonexistent/dir/p.json",
        "--default-profile", NULL},
       "/nonexistent/dir/p.json: cannot write: No such file or directory"},
      {{"calibrate", "--out", "/nonexistent/dir/p.json", NULL},
       "/nonexistent/dir/p.json: cannot write: No such file or directory"},
      {{"emit", RMS, "--variant", REREAD, "--object", "/nonexistent/x.o", "--header",
        "/nonexistent/x.h", "--symbol", "f", NULL},
       "/nonexistent/x.o: cannot write: No such file or directory"},
      {{"oracle", RMS, "--shape", "4,8", "--dump", "/etc/passwd/d", NULL},
       "/etc/passwd/d: cannot create the folder: Not a directory"},
      {{"run", RMS, "--shape", "4,8", "--variant", REREAD, "--dump", "/etc/passwd/d", NULL},
       "/etc/passwd/d: cannot create the folder: Not a directory"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    Run r = run_argv(cases[i].args);
    cr_expect_eq(r.code, 3, "%s: exit %d: %s", cases[i].args[0], r.code, r.err);
    cr_expect(strstr(r.err, cases[i].want), "%s: %s", cases[i].args[0], r.err);
    run_free(&r);
  }
}
