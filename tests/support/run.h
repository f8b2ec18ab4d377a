/* Running the lanemap command from a Criterion test: the built CLI
 * (LANEMAP_CLI) as a child process, stdout and stderr captured to files in
 * the test's temp folder, the exit code returned (-1 if a signal ended it).
 * Header-only: each test executable includes it once. */
#ifndef LANEMAP_TESTS_SUPPORT_RUN_H
#define LANEMAP_TESTS_SUPPORT_RUN_H

#include <criterion/criterion.h>

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lanemap/core.h"

extern char **environ;

/* Not every test uses every helper. */
#define RUN_HELPER static __attribute__((unused))

typedef struct run_result {
  int code; /* exit code, or -1 if the child died from a signal */
  char *out, *err;
} run_result;

static char run_tmpdir[256];

/* A fresh temp folder per test (use as .init), removed by run_tmp_remove. */
RUN_HELPER void run_tmp_make(void) {
  snprintf(run_tmpdir, sizeof run_tmpdir, "/tmp/lanemap_test.XXXXXX");
  cr_assert_not_null(mkdtemp(run_tmpdir));
}

RUN_HELPER void run_tmp_remove(void) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", run_tmpdir);
  cr_expect_eq(system(cmd), 0);
}

/* run_tmpdir/name, in one of 8 rotating buffers. */
static char *run_tmp(const char *name) {
  static char buf[8][512];
  static int next;
  char *p = buf[next++ % 8];
  snprintf(p, 512, "%s/%s", run_tmpdir, name);
  return p;
}

static char *run_slurp(const char *path) {
  char *s = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_file_read(path, &s, NULL, &err), LM_OK, "%s", err.msg);
  return s;
}

RUN_HELPER void run_write(const char *path, const char *text) {
  lm_error err = {0};
  cr_assert_eq(lm_file_write_atomic(path, text, strlen(text), &err), LM_OK,
               "%s", err.msg);
}

/* Run the CLI with the NULL-terminated arguments after argv[0]. */
RUN_HELPER run_result run_cli(const char *const *args) {
  const char *argv[64] = {LANEMAP_CLI};
  int n = 1;
  for (; args[n - 1] && n < 63; n++)
    argv[n] = args[n - 1];
  argv[n] = NULL;
  char *out = run_tmp(".stdout"), *err = run_tmp(".stderr");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&fa, 2, err, O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid;
  int rc =
      posix_spawn(&pid, LANEMAP_CLI, &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  cr_assert_eq(rc, 0, "cannot start %s", LANEMAP_CLI);
  int status = 0;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  run_result r = {WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                  run_slurp(out), run_slurp(err)};
  return r;
}
#define RUN(...) run_cli((const char *const[]){__VA_ARGS__, NULL})

RUN_HELPER void run_free(run_result *r) {
  free(r->out);
  free(r->err);
}

/* Lines of s that contain needle. */
RUN_HELPER int run_count_lines(const char *s, const char *needle) {
  int n = 0;
  for (const char *line = s; *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    char *copy = strndup(line, len);
    if (strstr(copy, needle))
      n++;
    free(copy);
    line += len + (end ? 1 : 0);
  }
  return n;
}

RUN_HELPER int run_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

#endif
