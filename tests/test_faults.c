/* Fault claims: no fault loses data or leaves half a file behind.
 *   - a command interrupted by SIGINT or SIGTERM at a random point leaves
 *     its output either absent (or the previous complete file) or complete
 *     and loadable, and no temp file beside it;
 *   - an unwritable output path and a full disk (RLIMIT_FSIZE) give a clear
 *     error naming the path and exit 3, with nothing written;
 *   - lm_file_write_atomic removes its temp file when a fatal signal
 *     arrives in the middle of the write, and turns SIGXFSZ into an error.
 *
 * The CLI tests are driven by one table: a command that writes a file is
 * one row (its arguments, the flag that names the output, and the check
 * that an output file is complete).  The random kill points come from a
 * seed printed on failure; LANEMAP_FAULT_SEED=N replays one. */
#include <criterion/criterion.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lanemap/calibrate.h"
#include "lanemap/plan.h"
#include "lanemap/profile.h"

/* ---- the table ------------------------------------------------------------ */

typedef struct FaultCmd {
  const char *name;
  const char *args[8];  /* argv after the program, before OUT_FLAG FILE */
  const char *out_flag; /* the flag naming the output file */
  /* 1 when the file at path is a complete output; else 0 and why */
  int (*complete)(const char *path, char *why, size_t n);
} FaultCmd;

static int profile_complete(const char *path, char *why, size_t n) {
  lm_profile *p = NULL;
  lm_error err = {0};
  if (lm_profile_load(path, &p, NULL, &err) != LM_OK) {
    snprintf(why, n, "%s", err.msg);
    return 0;
  }
  int ok = lm_profile_nterms(p) > 0;
  if (!ok)
    snprintf(why, n, "%s: no terms", path);
  /* a fitted profile records the model error its rows were weighted by */
  cJSON *extra = cJSON_Parse(lm_profile_get_extra(p));
  const cJSON *merr = cJSON_GetObjectItem(extra, "model_error");
  if (ok && !(cJSON_IsNumber(merr) && merr->valuedouble >= LM_CALIB_SPREAD_FLOOR &&
              merr->valuedouble < 10)) {
    snprintf(why, n, "%s: no plausible model_error in the diagnostics", path);
    ok = 0;
  }
  cJSON_Delete(extra);
  lm_profile_free(p);
  return ok;
}

static int plan_complete(const char *path, char *why, size_t n) {
  lm_plan *p = NULL;
  lm_error err = {0};
  if (lm_plan_load(path, &p, NULL, &err) != LM_OK) {
    snprintf(why, n, "%s", err.msg);
    return 0;
  }
  lm_plan_free(p);
  return 1;
}

static const FaultCmd cmds[] = {
    {"calibrate", {"calibrate", "--quick", "--json", NULL}, "--out", profile_complete},
    {"solve",
     {"solve", LANEMAP_SOURCE_DIR "/solver/examples/transformer.json", "--default-profile",
      "--json", NULL},
     "-o",
     plan_complete},
};
#define NCMDS ((int)(sizeof cmds / sizeof cmds[0]))

/* ---- running the CLI ---------------------------------------------------- */

typedef struct Child {
  pid_t pid;
  char err_path[1200]; /* the child's stderr */
} Child;

/* Start the command writing to `out`, with stdout and stderr in files in
 * logdir.  fsize > 0 sets RLIMIT_FSIZE in the child (with SIGXFSZ ignored
 * when ignore_xfsz). */
static Child start(const FaultCmd *c, const char *out, const char *logdir,
                   rlim_t fsize, int ignore_xfsz) {
  static int serial;
  Child ch = {0};
  char out_path[1200];
  snprintf(out_path, sizeof out_path, "%s/out.%d", logdir, serial);
  snprintf(ch.err_path, sizeof ch.err_path, "%s/err.%d", logdir, serial++);
  const char *argv[16] = {LANEMAP_CLI};
  int n = 1;
  for (int i = 0; c->args[i]; i++)
    argv[n++] = c->args[i];
  argv[n++] = c->out_flag;
  argv[n++] = out;
  argv[n] = NULL;
  ch.pid = fork();
  cr_assert_geq(ch.pid, 0, "fork: %s", strerror(errno));
  if (ch.pid == 0) {
    int fo = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int fe = open(ch.err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fo < 0 || fe < 0)
      _exit(120);
    dup2(fo, 1), dup2(fe, 2);
    setenv("LANEMAP_CACHE_DIR", logdir, 1);
    if (ignore_xfsz)
      signal(SIGXFSZ, SIG_IGN);
    if (fsize > 0) {
      struct rlimit rl = {fsize, fsize};
      if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
        _exit(121);
    }
    execv(LANEMAP_CLI, (char *const *)argv);
    _exit(122);
  }
  return ch;
}

static int finish(Child *ch) {
  int st = 0;
  while (waitpid(ch->pid, &st, 0) < 0 && errno == EINTR)
    ;
  return st;
}

static char *slurp(const char *path) {
  char *t = NULL;
  lm_error err;
  if (lm_file_read(path, &t, NULL, &err) != LM_OK)
    return strdup("");
  return t;
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void make_dir(char *tmpl) { cr_assert(mkdtemp(tmpl), "mkdtemp: %s", strerror(errno)); }

static void remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (!d)
    return;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    char p[2048];
    snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
    struct stat st;
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
      remove_tree(p);
    else
      unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

/* The output directory holds nothing but `name` (no temp file), and `name`,
 * if present (or if must_exist), is complete. */
static void expect_clean(const FaultCmd *c, const char *dir, const char *name,
                         int must_exist, const char *what) {
  DIR *d = opendir(dir);
  cr_assert(d);
  struct dirent *e;
  int found = 0;
  while ((e = readdir(d))) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    if (strcmp(e->d_name, name) == 0) {
      found = 1;
      continue;
    }
    cr_expect(0, "%s %s: stray file '%s' left in the output directory", c->name,
              what, e->d_name);
  }
  closedir(d);
  if (must_exist)
    cr_expect(found, "%s %s: no output", c->name, what);
  if (found) {
    char p[2048], why[2048] = "";
    snprintf(p, sizeof p, "%s/%s", dir, name);
    cr_expect(c->complete(p, why, sizeof why), "%s %s: incomplete output: %s",
              c->name, what, why);
  }
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    n += e->d_name[0] != '.';
  if (d)
    closedir(d);
  return n;
}

static uint64_t fault_seed(void) {
  const char *s = getenv("LANEMAP_FAULT_SEED");
  return s ? strtoull(s, NULL, 10) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 16;
}

static double uniform(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return (double)(*s >> 11) * 0x1p-53;
}

/* ---- interrupts ----------------------------------------------------------- */

Test(faults, an_interrupted_command_leaves_no_partial_output_and_no_temp_file,
     .timeout = 600) {
  uint64_t seed = fault_seed(), rng = seed | 1;
  for (int ci = 0; ci < NCMDS; ci++) {
    const FaultCmd *c = &cmds[ci];
    char logs[] = "/tmp/lanemap-faults-log-XXXXXX", dir[] = "/tmp/lanemap-faults-XXXXXX";
    make_dir(logs), make_dir(dir);
    char out[1200];
    snprintf(out, sizeof out, "%s/result.json", dir);
    /* one complete run: how long a run takes, and the previous file that an
     * interrupted run must not damage */
    double t0 = now_s();
    Child ch = start(c, out, logs, 0, 0);
    int st = finish(&ch);
    double T = now_s() - t0;
    char *err = slurp(ch.err_path);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: status %d: %s", c->name, st, err);
    free(err);
    expect_clean(c, dir, "result.json", 1, "complete run");
    const int sigs[] = {SIGINT, SIGTERM, SIGTERM, SIGINT};
    for (int k = 0; k < 4; k++) {
      if (k == 1)
        unlink(out); /* runs 1 and 2 may start without an output */
      struct stat sb;
      int existed = stat(out, &sb) == 0;
      /* kill points spread over the run, the last one near its end */
      double at = k == 3 ? T * (0.85 + 0.2 * uniform(&rng)) : T * 1.05 * uniform(&rng);
      char what[128];
      snprintf(what, sizeof what, "%s at %.2f s of %.2f (seed %llu)",
               strsignal(sigs[k]), at, T, (unsigned long long)seed);
      ch = start(c, out, logs, 0, 0);
      struct timespec ts = {(time_t)at, (long)((at - (double)(time_t)at) * 1e9)};
      while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
      kill(ch.pid, sigs[k]);
      st = finish(&ch);
      cr_expect((WIFSIGNALED(st) && WTERMSIG(st) == sigs[k]) ||
                    (WIFEXITED(st) && WEXITSTATUS(st) == 0),
                "%s %s: status %d", c->name, what, st);
      expect_clean(c, dir, "result.json", existed, what);
    }
    remove_tree(dir);
    remove_tree(logs);
  }
}

/* ---- unwritable paths and a full disk ------------------------------------ */

Test(faults, an_unwritable_output_path_exits_3_with_an_error_naming_it) {
  for (int ci = 0; ci < NCMDS; ci++) {
    const FaultCmd *c = &cmds[ci];
    char logs[] = "/tmp/lanemap-faults-log-XXXXXX", dir[] = "/tmp/lanemap-faults-XXXXXX";
    make_dir(logs), make_dir(dir);
    char file[1200], bad[3][1300];
    snprintf(file, sizeof file, "%s/plain", dir);
    FILE *f = fopen(file, "w");
    cr_assert(f);
    fputs("not a directory\n", f);
    fclose(f);
    snprintf(bad[0], sizeof bad[0], "%s/missing/out.json", dir);
    snprintf(bad[1], sizeof bad[1], "%s/out.json", file); /* below a file */
    snprintf(bad[2], sizeof bad[2], "%s", dir);          /* a directory */
    const char *reason[3] = {"No such file or directory", "Not a directory",
                             "Is a directory"};
    for (int i = 0; i < 3; i++) {
      Child ch = start(c, bad[i], logs, 0, 0);
      int st = finish(&ch);
      char *err = slurp(ch.err_path);
      cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 3, "%s %s: status %d: %s", c->name,
                bad[i], st, err);
      cr_expect(strstr(err, bad[i]) && strstr(err, "cannot write") &&
                    strstr(err, reason[i]),
                "%s %s: stderr: %s", c->name, bad[i], err);
      free(err);
    }
    cr_expect_eq(count_entries(dir), 1, "%s: files written beside 'plain'", c->name);
    remove_tree(dir);
    remove_tree(logs);
  }
}

Test(faults, a_full_disk_exits_3_with_a_clear_error_and_writes_nothing,
     .timeout = 600) {
  for (int ci = 0; ci < NCMDS; ci++) {
    const FaultCmd *c = &cmds[ci];
    char logs[] = "/tmp/lanemap-faults-log-XXXXXX", dir[] = "/tmp/lanemap-faults-XXXXXX";
    make_dir(logs), make_dir(dir);
    char out[1200];
    snprintf(out, sizeof out, "%s/result.json", dir);
    /* 512 bytes: room for the error message in the log, not for the output */
    Child ch = start(c, out, logs, 512, 1);
    int st = finish(&ch);
    char *err = slurp(ch.err_path);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 3, "%s: status %d: %s", c->name, st,
              err);
    cr_expect(strstr(err, out) && strstr(err, "File too large"), "%s: stderr: %s",
              c->name, err);
    free(err);
    expect_clean(c, dir, "result.json", 0, "full disk");
    struct stat sb;
    cr_expect_neq(stat(out, &sb), 0, "%s: an output was written on a full disk", c->name);
    remove_tree(dir);
    remove_tree(logs);
  }
}

/* ---- lm_file_write_atomic itself ----------------------------------------- */

/* The temp file is made a FIFO that this process reads slowly, so the child
 * is certainly inside its write (after the temp file was registered) when
 * the signal arrives. */
static void kill_mid_write(int sig) {
  char dir[] = "/tmp/lanemap-faults-XXXXXX";
  make_dir(dir);
  char out[1200], tmp[1300];
  snprintf(out, sizeof out, "%s/out.json", dir);
  int go[2];
  cr_assert_eq(pipe(go), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    char b;
    close(go[1]);
    if (read(go[0], &b, 1) != 1)
      _exit(120);
    size_t n = 8 << 20;
    char *data = malloc(n);
    memset(data, 'x', n);
    lm_error err;
    lm_file_write_atomic(out, data, n, &err);
    _exit(0);
  }
  close(go[0]);
  snprintf(tmp, sizeof tmp, "%s/.lm-%ld-0.tmp", dir, (long)pid);
  cr_assert_eq(mkfifo(tmp, 0600), 0, "mkfifo: %s", strerror(errno));
  cr_assert_eq(write(go[1], "g", 1), 1);
  /* opening the FIFO waits for the writer; the first bytes mean it is
   * inside its write */
  int rd = open(tmp, O_RDONLY);
  cr_assert_geq(rd, 0);
  char buf[4096];
  ssize_t got = read(rd, buf, sizeof buf);
  cr_assert_gt(got, 0, "no data from the writer");
  kill(pid, sig);
  int st;
  waitpid(pid, &st, 0);
  close(rd);
  close(go[1]);
  cr_expect(WIFSIGNALED(st) && WTERMSIG(st) == sig, "%s: status %d", strsignal(sig), st);
  struct stat sb;
  cr_expect_neq(lstat(tmp, &sb), 0, "%s: temp file left behind", strsignal(sig));
  cr_expect_neq(lstat(out, &sb), 0, "%s: output appeared", strsignal(sig));
  cr_expect_eq(count_entries(dir), 0);
  unlink(tmp);
  rmdir(dir);
}

Test(faults, a_signal_in_the_middle_of_an_atomic_write_removes_the_temp_file) {
  kill_mid_write(SIGINT);
  kill_mid_write(SIGTERM);
  kill_mid_write(SIGHUP);
}

/* Without SIGXFSZ ignored, a write past RLIMIT_FSIZE would kill the process
 * with the temp file half written; the atomic write swallows the signal and
 * fails cleanly instead. */
Test(faults, a_file_size_limit_fails_the_atomic_write_cleanly_even_with_sigxfsz) {
  char dir[] = "/tmp/lanemap-faults-XXXXXX";
  make_dir(dir);
  char out[1200];
  snprintf(out, sizeof out, "%s/out.json", dir);
  int msg[2];
  cr_assert_eq(pipe(msg), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) {
    close(msg[0]);
    signal(SIGXFSZ, SIG_DFL);
    struct rlimit rl = {1000, 1000};
    setrlimit(RLIMIT_FSIZE, &rl);
    char data[100000];
    memset(data, 'x', sizeof data);
    lm_error err = {0};
    lm_status s = lm_file_write_atomic(out, data, sizeof data, &err);
    if (write(msg[1], err.msg, strlen(err.msg)) < 0)
      _exit(121);
    _exit(s);
  }
  close(msg[1]);
  char text[2048] = "";
  ssize_t n = read(msg[0], text, sizeof text - 1);
  text[n > 0 ? n : 0] = 0;
  close(msg[0]);
  int st;
  waitpid(pid, &st, 0);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == LM_ESYS, "status %d", st);
  cr_expect(strstr(text, out) && strstr(text, "File too large"), "message: %s", text);
  cr_expect_eq(count_entries(dir), 0, "files left behind");
  rmdir(dir);
}
