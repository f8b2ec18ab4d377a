/* Output paths that are not plain files.  Every writer goes through
 * lm_file_write_atomic, which must never replace what a path names:
 *
 * - a symlink is followed and its target written atomically;
 * - a device node, FIFO or socket is written through (so `-o /dev/stdout`
 *   prints and `-o /dev/full` fails with "No space left on device", exit 3);
 * - a folder is refused, saying so (`-o .`);
 * - the temp file fits whenever the name itself does;
 * - an object file and its header are written whole or not at all.
 *
 * Device nodes are made with mknod in a private temp folder, never the real
 * /dev; that needs root, and the tests that need it are skipped with the
 * reason when not run as root (CI runs as root). */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lanemap/core.h"
#include "support/run.h"
#include "support/source.h"

TestSuite(outputs, .init = run_tmp_make, .fini = run_tmp_remove);

static int entries(const char *dir) {
  int n = 0;
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  for (struct dirent *e; (e = readdir(d));)
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return n;
}

static int is_root(void) { return geteuid() == 0; }

/* A private character device with the numbers of /dev/null (1, 3) or
 * /dev/full (1, 7). */
static const char *make_node(const char *name, unsigned minor) {
  const char *p = run_tmp(name);
  cr_assert_eq(mknod(p, S_IFCHR | 0666, makedev(1, minor)), 0, "mknod %s: %s", p,
               strerror(errno));
  return p;
}

Test(outputs, a_symlink_to_a_file_has_its_target_replaced_and_stays_a_link) {
  run_write(run_tmp("real.json"), "old\n");
  cr_assert_eq(symlink("real.json", run_tmp("link.json")), 0);
  lm_error err = {0};
  cr_assert_eq(lm_file_write_atomic(run_tmp("link.json"), "new\n", 4, &err), LM_OK, "%s",
               err.msg);
  struct stat st;
  cr_assert_eq(lstat(run_tmp("link.json"), &st), 0);
  cr_expect(S_ISLNK(st.st_mode), "the link was replaced by a file");
  char *text = run_slurp(run_tmp("real.json"));
  cr_expect_str_eq(text, "new\n");
  free(text);
  cr_expect_eq(entries(run_tmpdir), 2, "a temp file was left behind");
}

Test(outputs, a_dangling_symlink_creates_its_target) {
  cr_assert_eq(symlink("made.json", run_tmp("link.json")), 0);
  lm_error err = {0};
  cr_assert_eq(lm_file_write_atomic(run_tmp("link.json"), "x\n", 2, &err), LM_OK, "%s",
               err.msg);
  char *text = run_slurp(run_tmp("made.json"));
  cr_expect_str_eq(text, "x\n");
  free(text);
}

Test(outputs, a_replaced_file_keeps_its_permission_bits) {
  run_write(run_tmp("p.json"), "old\n");
  cr_assert_eq(chmod(run_tmp("p.json"), 0600), 0);
  lm_error err = {0};
  cr_assert_eq(lm_file_write_atomic(run_tmp("p.json"), "new\n", 4, &err), LM_OK, "%s",
               err.msg);
  struct stat st;
  cr_assert_eq(stat(run_tmp("p.json"), &st), 0);
  cr_expect_eq(st.st_mode & 0777, 0600);
}

Test(outputs, a_fifo_is_written_through_and_stays_a_fifo) {
  const char *fifo = run_tmp("pipe");
  cr_assert_eq(mkfifo(fifo, 0600), 0);
  pid_t pid = fork();
  cr_assert_geq(pid, 0);
  if (pid == 0) { /* the reader: checks what arrives */
    int fd = open(fifo, O_RDONLY);
    char buf[64] = {0};
    ssize_t n = read(fd, buf, sizeof buf - 1);
    _exit(n == 6 && strcmp(buf, "hello\n") == 0 ? 0 : 1);
  }
  lm_error err = {0};
  cr_assert_eq(lm_file_write_atomic(fifo, "hello\n", 6, &err), LM_OK, "%s", err.msg);
  int status;
  waitpid(pid, &status, 0);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the reader got other data");
  struct stat st;
  cr_assert_eq(lstat(fifo, &st), 0);
  cr_expect(S_ISFIFO(st.st_mode), "the FIFO was replaced");
  cr_expect_eq(entries(run_tmpdir), 1);
}

Test(outputs, a_folder_is_refused_naming_the_reason) {
  lm_error err = {0};
  cr_assert_eq(lm_file_write_atomic(run_tmpdir, "x", 1, &err), LM_ESYS);
  cr_expect(strstr(err.msg, "Is a directory"), "%s", err.msg);
  cr_expect_eq(entries(run_tmpdir), 0);
}

Test(outputs, a_name_of_250_characters_is_written) {
  char name[251];
  memset(name, 'n', 250);
  name[250] = 0;
  lm_error err = {0};
  cr_assert_eq(lm_file_write_atomic(run_tmp(name), "x", 1, &err), LM_OK, "%s", err.msg);
  cr_expect(run_exists(run_tmp(name)));
  cr_expect_eq(entries(run_tmpdir), 1);
}

Test(outputs, a_null_device_node_is_written_through_and_not_replaced) {
  if (!is_root())
    cr_skip_test("mknod needs root: not run as root (CI runs as root)");
  const char *node = make_node("null", 3);
  run_result r = RUN("oracle", source_path("kernels/rmsnorm.lk"), "--shape", "2,8", "--out", node);
  cr_expect_eq(r.code, 0, "%s", r.err);
  struct stat st;
  cr_assert_eq(lstat(node, &st), 0);
  cr_expect(S_ISCHR(st.st_mode), "the device node was replaced by a regular file");
  cr_expect_eq(entries(run_tmpdir) - 2, 1, "a temp file was left behind"); /* + out, err */
  run_free(&r);
}

Test(outputs, a_full_device_fails_with_exit_3_and_stays_a_device) {
  if (!is_root())
    cr_skip_test("mknod needs root: not run as root (CI runs as root)");
  const char *node = make_node("full", 7);
  run_result r = RUN("oracle", source_path("kernels/rmsnorm.lk"), "--shape", "2,8", "--out", node);
  cr_expect_eq(r.code, 3, "%s", r.err);
  cr_expect(strstr(r.err, "No space left on device"), "%s", r.err);
  struct stat st;
  cr_assert_eq(lstat(node, &st), 0);
  cr_expect(S_ISCHR(st.st_mode), "the device node was replaced");
  run_free(&r);
}

Test(outputs, a_symlink_to_a_device_writes_through_it) {
  if (!is_root())
    cr_skip_test("mknod needs root: not run as root (CI runs as root)");
  make_node("null", 3);
  cr_assert_eq(symlink("null", run_tmp("link")), 0);
  lm_error err = {0};
  cr_assert_eq(lm_file_write_atomic(run_tmp("link"), "x", 1, &err), LM_OK, "%s", err.msg);
  struct stat st;
  cr_assert_eq(lstat(run_tmp("null"), &st), 0);
  cr_expect(S_ISCHR(st.st_mode));
  cr_assert_eq(lstat(run_tmp("link"), &st), 0);
  cr_expect(S_ISLNK(st.st_mode));
}

Test(outputs, standard_output_as_a_path_prints) {
  run_result r = RUN("oracle", source_path("kernels/rmsnorm.lk"), "--shape", "2,8", "--out",
                     "/dev/stdout");
  cr_expect_eq(r.code, 0, "%s", r.err);
  cr_expect_geq(run_count_lines(r.out, "\"kernel\""), 1, "nothing printed: %s", r.out);
  run_free(&r);
}

/* Several imports into one records file at once: each holds the file's
 * lock from its read to its write, so no import's records are lost. */
Test(outputs, concurrent_imports_into_one_file_keep_every_record) {
  enum { PROCS = 4, ROUNDS = 6, PER_IMPORT = 2 };
  const char *out = run_tmp("r.jsonl");
  pid_t pids[PROCS];
  for (int p = 0; p < PROCS; p++) {
    pids[p] = fork();
    cr_assert_geq(pids[p], 0);
    if (pids[p] == 0) {
      int fails = 0;
      for (int r = 0; r < ROUNDS; r++) {
        pid_t c = fork();
        if (c == 0) {
          int devnull = open("/dev/null", O_WRONLY);
          dup2(devnull, 1);
          execl(LANEMAP_CLI, LANEMAP_CLI, "records", "import",
                source_path("tests/fixtures/records/hyperfine.json"), "-o", out, (char *)NULL);
          _exit(127);
        }
        int st;
        waitpid(c, &st, 0);
        fails += !(WIFEXITED(st) && WEXITSTATUS(st) == 0);
      }
      _exit(fails);
    }
  }
  for (int p = 0; p < PROCS; p++) {
    int st;
    waitpid(pids[p], &st, 0);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "an import failed");
  }
  char *text = run_slurp(out);
  cr_expect_eq(run_count_lines(text, "\"kernel\""), PROCS * ROUNDS * PER_IMPORT,
               "records were lost");
  free(text);
}

/* The lock is a sidecar beside the file a path resolves to (the write's
 * rename replaces the file itself): an import waits while another process
 * holds it, whether it names the file or a symlink to it. */
Test(outputs, an_import_waits_for_the_sidecar_lock_of_its_output) {
  const char *out = run_tmp("r.jsonl"), *link = run_tmp("link.jsonl");
  cr_assert_eq(symlink(out, link), 0);
  char side[4200];
  snprintf(side, sizeof side, "%s.lock", out);
  int fd = open(side, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  cr_assert_geq(fd, 0);
  cr_assert_eq(flock(fd, LOCK_EX), 0);
  pid_t c = fork();
  cr_assert_geq(c, 0);
  if (c == 0) {
    int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 1);
    execl(LANEMAP_CLI, LANEMAP_CLI, "records", "import",
          source_path("tests/fixtures/records/hyperfine.json"), "-o", link, (char *)NULL);
    _exit(127);
  }
  usleep(300 * 1000);
  int st;
  cr_expect_eq(waitpid(c, &st, WNOHANG), 0, "the import did not wait for the lock");
  cr_expect_not(run_exists(out), "written while the lock was held");
  close(fd);
  cr_assert_eq(waitpid(c, &st, 0), c);
  cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the import failed");
  char *text = run_slurp(out);
  cr_expect_eq(run_count_lines(text, "\"kernel\""), 2);
  free(text);
  struct stat lsb;
  cr_expect(lstat(link, &lsb) == 0 && S_ISLNK(lsb.st_mode), "the symlink was replaced");
}

/* ---- object files and headers: all or nothing ---------------------------- */

#define RMS_VARIANT "x86-64-v3/w8/l8/phase=reread/t1"

Test(outputs, a_header_that_cannot_be_written_leaves_no_object) {
  run_result r = RUN("emit", source_path("kernels/rmsnorm.lk"), "--variant", RMS_VARIANT,
                     "--object", run_tmp("a.o"), "--header", run_tmp("nodir/a.h"));
  cr_expect_eq(r.code, 3, "%s", r.err);
  cr_expect(strstr(r.err, "nodir/a.h: cannot write: No such file or directory"), "%s", r.err);
  cr_expect_not(run_exists(run_tmp("a.o")), "the object was written");
  run_free(&r);
}

Test(outputs, a_header_without_an_object_is_a_usage_error) {
  run_result r = RUN("emit", source_path("kernels/rmsnorm.lk"), "--variant", RMS_VARIANT,
                     "--header", run_tmp("a.h"));
  cr_expect_eq(r.code, 2, "%s", r.err);
  cr_expect(strstr(r.err, "--header F.h needs --object F.o"), "%s", r.err);
  cr_expect_not(run_exists(run_tmp("a.h")));
  run_free(&r);
}

Test(outputs, one_path_for_object_and_header_is_refused) {
  run_result r = RUN("emit", source_path("kernels/rmsnorm.lk"), "--variant", RMS_VARIANT,
                     "--object", run_tmp("x"), "--header", run_tmp("x"));
  cr_expect_eq(r.code, 2, "%s", r.err);
  cr_expect(strstr(r.err, "are one file"), "%s", r.err);
  cr_expect_not(run_exists(run_tmp("x")));
  run_free(&r);
}

Test(outputs, a_symbol_that_is_not_a_c_identifier_is_refused_before_writing) {
  run_result r = RUN("emit", source_path("kernels/rmsnorm.lk"), "--variant", RMS_VARIANT,
                     "--object", run_tmp("a.o"), "--header", run_tmp("a.h"), "--symbol", "1 bad");
  cr_expect_eq(r.code, 2, "%s", r.err);
  cr_expect(strstr(r.err, "is not a C identifier"), "%s", r.err);
  cr_expect_not(run_exists(run_tmp("a.o")));
  run_free(&r);
}

/* A header has no size limit: a 16,000-character kernel name and an
 * 8,000-character symbol give a complete header that compiles. */
Test(outputs, long_names_give_a_complete_header) {
  char *src = run_slurp(source_path("kernels/rmsnorm.lk"));
  char *at = strstr(src, "kernel rmsnorm");
  cr_assert_not_null(at);
  size_t pre = (size_t)(at - src) + 7, post = strlen(at + 14);
  char *big = malloc(pre + 16000 + post + 1);
  memcpy(big, src, pre);
  memset(big + pre, 'k', 16000);
  memcpy(big + pre + 16000, at + 14, post + 1);
  run_write(run_tmp("long.lk"), big);
  char *sym = malloc(8001);
  memset(sym, 's', 8000);
  sym[8000] = 0;
  run_result r = RUN("emit", run_tmp("long.lk"), "--variant", RMS_VARIANT, "--object",
                     run_tmp("a.o"), "--header", run_tmp("a.h"), "--symbol", sym);
  cr_expect_eq(r.code, 0, "%s", r.err);
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "printf '#include \"a.h\"\\n' | %s -fsyntax-only -I '%s' -x c -",
           LANEMAP_CC, run_tmpdir);
  cr_expect_eq(system(cmd), 0, "the header does not compile");
  char *hdr = run_slurp(run_tmp("a.h"));
  cr_expect(strstr(hdr, sym), "the symbol is missing or cut");
  free(hdr);
  run_free(&r);
  free(sym);
  free(big);
  free(src);
}

Test(outputs, a_failed_ahead_of_time_compile_leaves_no_folder) {
  run_result r = RUN("solve", source_path("solver/examples/tiny.json"), "--default-profile", "-o",
                     run_tmp("plan.json"));
  cr_assert_eq(r.code, 0, "%s", r.err);
  run_free(&r);
  r = RUN("compile", "--plan", run_tmp("plan.json"), "--aot", run_tmp("D"), "--prefix", "1 bad");
  cr_expect_eq(r.code, 2, "%s", r.err);
  cr_expect_not(run_exists(run_tmp("D")), "an empty folder was left behind");
  run_free(&r);
}
