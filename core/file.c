/* Whole-file I/O.  Writes go to a temp file in the target's directory, are
 * fsynced and renamed over the target, so a crash or a full disk never
 * leaves half a profile, plan or report behind.
 *
 * A temp file is registered while it exists, so that an interrupt does not
 * leave it behind either: on its first write this file installs a handler
 * for SIGINT, SIGTERM, SIGHUP and SIGXFSZ, only for the signals whose
 * disposition is still the default (an application's own handler, or an
 * ignored signal, is left alone).  The handler unlinks every registered
 * temp file, restores the default action and re-raises the signal, so the
 * process still dies of it.  SIGXFSZ (a write past RLIMIT_FSIZE) is the
 * exception: while a temp file is being written it is swallowed, so that
 * the write fails with EFBIG and the caller reports a clean error instead
 * of dying with a half-written temp file. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lanemap/core.h"

/* ---- temp files a fatal signal must remove ---------------------------- */

#define LM_FILE_SLOTS 16

typedef struct lm_file_slot {
  _Atomic int used; /* 1 while path names a temp file being written */
  char path[PATH_MAX];
} lm_file_slot;

static lm_file_slot lm_file_slots[LM_FILE_SLOTS];
static pthread_once_t lm_file_handlers_once = PTHREAD_ONCE_INIT;
static const int lm_file_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGXFSZ};

/* Async-signal-safe: unlink, sigaction and raise only. */
static void lm_file_on_signal(int sig) {
  int pending = 0;
  for (int i = 0; i < LM_FILE_SLOTS; i++)
    pending |= atomic_load(&lm_file_slots[i].used);
  if (sig == SIGXFSZ && pending)
    return; /* the write fails with EFBIG and is cleaned up by its caller */
  int saved = errno;
  for (int i = 0; i < LM_FILE_SLOTS; i++)
    if (atomic_load(&lm_file_slots[i].used) == 1)
      unlink(lm_file_slots[i].path);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, NULL);
  errno = saved;
  raise(sig); /* delivered when the handler returns: dies of sig */
}

static void lm_file_install_handlers(void) {
  for (size_t i = 0; i < sizeof lm_file_signals / sizeof lm_file_signals[0]; i++) {
    struct sigaction old, sa;
    if (sigaction(lm_file_signals[i], NULL, &old) != 0 ||
        (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
      continue;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = lm_file_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(lm_file_signals[i], &sa, NULL);
  }
}

/* Registers tmp; returns its slot, or -1 when every slot is taken or the
 * name is too long (the write still works, only without the cleanup). */
static int lm_file_register(const char *tmp) {
  pthread_once(&lm_file_handlers_once, lm_file_install_handlers);
  if (strlen(tmp) >= PATH_MAX)
    return -1;
  for (int i = 0; i < LM_FILE_SLOTS; i++) {
    int expect = 0;
    /* 2 claims the slot while its path is written, 1 publishes it */
    if (atomic_compare_exchange_strong(&lm_file_slots[i].used, &expect, 2)) {
      strcpy(lm_file_slots[i].path, tmp);
      atomic_store(&lm_file_slots[i].used, 1);
      return i;
    }
  }
  return -1;
}

static void lm_file_unregister(int slot) {
  if (slot >= 0)
    atomic_store(&lm_file_slots[slot].used, 0);
}

lm_status lm_file_write_atomic(const char *path, const void *data, size_t n,
                               lm_error *err) {
  size_t len = strlen(path);
  char *tmp = malloc(len + 32);
  if (!tmp)
    return lm_error_set(err, LM_ESYS, "%s: out of memory", path);
  snprintf(tmp, len + 32, "%s.tmp.%ld", path, (long)getpid());
  int slot = lm_file_register(tmp);
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    lm_status s = lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path,
                               strerror(errno));
    lm_file_unregister(slot);
    free(tmp);
    return s;
  }
  const char *p = data;
  size_t left = n;
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      goto error;
    p += w;
    left -= (size_t)w;
  }
  if (fsync(fd) != 0 || close(fd) != 0) {
    fd = -1;
    goto error;
  }
  if (rename(tmp, path) != 0) {
    fd = -1;
    goto error;
  }
  lm_file_unregister(slot);
  free(tmp);
  return LM_OK;
error:;
  int e = errno ? errno : EIO;
  if (fd >= 0)
    close(fd);
  unlink(tmp);
  lm_file_unregister(slot);
  free(tmp);
  return lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path, strerror(e));
}

lm_status lm_file_read(const char *path, char **out, size_t *n, lm_error *err) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f)
    return lm_error_set(err, LM_EINPUT, "%s: cannot open: %s", path,
                        strerror(errno));
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  for (;;) {
    if (!buf) {
      fclose(f);
      return lm_error_set(err, LM_ESYS, "%s: out of memory", path);
    }
    size_t r = fread(buf + len, 1, cap - len - 1, f);
    len += r;
    if (r == 0)
      break;
    if (cap - len - 1 == 0) {
      cap *= 2;
      char *nb = realloc(buf, cap);
      if (!nb)
        free(buf);
      buf = nb;
    }
  }
  int bad = ferror(f), e = errno;
  fclose(f);
  if (bad) {
    free(buf);
    return lm_error_set(err, LM_EINPUT, "%s: cannot read: %s", path,
                        strerror(e));
  }
  buf[len] = 0;
  *out = buf;
  if (n)
    *n = len;
  return LM_OK;
}
