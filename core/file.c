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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

/* Follows symlinks from path (at most 40, as the kernel does) to the name
 * the data belongs at: a dangling link names the file it would create.
 * Returns a malloc'ed path, or NULL with errno set. */
static char *lm_file_target(const char *path) {
  char *cur = strdup(path);
  for (int hop = 0; cur && hop < 40; hop++) {
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
      return cur; /* absent (created by the rename) or not a link */
    size_t cap = (size_t)st.st_size + 1 > 64 ? (size_t)st.st_size + 1 : 64;
    char *link = malloc(cap + 1);
    ssize_t n = link ? readlink(cur, link, cap) : -1;
    if (n < 0 || (size_t)n > cap) {
      free(link);
      free(cur);
      errno = n < 0 ? errno : ENAMETOOLONG;
      return NULL;
    }
    link[n] = 0;
    if (link[0] == '/') {
      free(cur);
      cur = link;
      continue;
    }
    /* a relative target is relative to the link's folder */
    const char *slash = strrchr(cur, '/');
    size_t dl = slash ? (size_t)(slash - cur) + 1 : 0;
    char *next = malloc(dl + (size_t)n + 1);
    if (next) {
      memcpy(next, cur, dl);
      memcpy(next + dl, link, (size_t)n + 1);
    }
    free(link);
    free(cur);
    cur = next;
  }
  if (cur) {
    free(cur);
    errno = ELOOP;
  }
  return NULL;
}

static int lm_file_write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0) {
      if (w == 0)
        errno = EIO;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* A device node, FIFO or socket is written through, never replaced: its
 * reader (a terminal, a pipe, /dev/null) gets the data; a write error such
 * as ENOSPC from /dev/full is the caller's error.  A regular file reached
 * through another process's descriptor (/dev/stdout redirected to a file)
 * is appended to, as printing would. */
static lm_status lm_file_write_through(const char *path, const void *data, size_t n,
                                       int append, lm_error *err) {
  int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | (append ? O_APPEND : 0));
  if (fd < 0)
    return lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path, strerror(errno));
  int bad = lm_file_write_all(fd, data, n), e = errno;
  if (close(fd) != 0 && !bad)
    bad = 1, e = errno;
  if (bad)
    return lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path, strerror(e));
  return LM_OK;
}

/* Paths the kernel resolves to another process's open file (/dev/stdout,
 * /dev/fd/N, /proc/.../fd/N): their links do not name files. */
static int lm_file_is_fd_link(const char *path) {
  return strncmp(path, "/dev/std", 8) == 0 || strncmp(path, "/dev/fd/", 8) == 0 ||
         strncmp(path, "/proc/", 6) == 0;
}

lm_status lm_file_write_atomic(const char *path, const void *data, size_t n,
                               lm_error *err) {
  if (!path[0])
    return lm_error_set(err, LM_EINPUT, "an output path is empty");
  struct stat st;
  int exists = stat(path, &st) == 0;
  if (!exists && errno != ENOENT)
    return lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path, strerror(errno));
  if (exists && S_ISDIR(st.st_mode))
    return lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path, strerror(EISDIR));
  if (exists && (!S_ISREG(st.st_mode) || lm_file_is_fd_link(path)))
    return lm_file_write_through(path, data, n, S_ISREG(st.st_mode), err);
  /* a regular file, maybe behind symlinks, or a name to create (maybe at
   * the end of a dangling link) */
  char *target = exists ? realpath(path, NULL) : lm_file_target(path);
  if (!target)
    return lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path, strerror(errno));
  /* The temp file is a short name in the target's folder, so it fits
   * whenever the target's own name does. */
  static _Atomic unsigned long seq;
  const char *slash = strrchr(target, '/');
  size_t dl = slash ? (size_t)(slash - target) + 1 : 0;
  char *tmp = malloc(dl + 64);
  if (!tmp) {
    free(target);
    return lm_error_set(err, LM_ESYS, "%s: out of memory", path);
  }
  memcpy(tmp, target, dl);
  snprintf(tmp + dl, 64, ".lm-%ld-%lu.tmp", (long)getpid(), atomic_fetch_add(&seq, 1));
  int slot = lm_file_register(tmp);
  /* a replaced file keeps its permission bits */
  mode_t mode = exists ? (st.st_mode & 07777) : 0644;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) {
    lm_status s = lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path,
                               strerror(errno));
    lm_file_unregister(slot);
    free(tmp);
    free(target);
    return s;
  }
  if (exists)
    (void)fchmod(fd, mode); /* open applies the umask */
  if (lm_file_write_all(fd, data, n) != 0)
    goto error;
  if (fsync(fd) != 0 || close(fd) != 0) {
    fd = -1;
    goto error;
  }
  fd = -1;
  if (rename(tmp, target) != 0)
    goto error;
  lm_file_unregister(slot);
  free(tmp);
  free(target);
  return LM_OK;
error:;
  int e = errno ? errno : EIO;
  if (fd >= 0)
    close(fd);
  unlink(tmp);
  lm_file_unregister(slot);
  free(tmp);
  free(target);
  return lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path, strerror(e));
}

/* The folder part of path ("." when it has none), malloc'ed. */
static char *lm_file_folder(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? strndup(path, (size_t)(slash - path) + 1) : strdup(".");
}

lm_status lm_file_check_writable(const char *path, lm_error *err) {
  struct stat st;
  if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
    return lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path, strerror(EISDIR));
  char *dir = lm_file_folder(path);
  if (!dir)
    return lm_error_set(err, LM_ESYS, "%s: out of memory", path);
  lm_status s = LM_OK;
  if (stat(dir, &st) != 0)
    s = lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path, strerror(errno));
  else if (!S_ISDIR(st.st_mode))
    s = lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path, strerror(ENOTDIR));
  else if (access(dir, W_OK) != 0)
    s = lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path, strerror(errno));
  free(dir);
  return s;
}

/* path with its symlinks followed (malloc'ed): the canonical path when the
 * file exists, else the path the last link names, or path itself. */
static char *resolve_links(const char *path) {
  char *real = realpath(path, NULL);
  if (real)
    return real;
  char *cur = strdup(path);
  for (int hop = 0; cur && hop < 40; hop++) { /* ELOOP's bound */
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
      break;
    char *to = malloc((size_t)st.st_size + 2);
    ssize_t n = to ? readlink(cur, to, (size_t)st.st_size + 1) : -1;
    if (n < 0 || n > st.st_size) {
      free(to);
      break;
    }
    to[n] = 0;
    char *next = to;
    if (to[0] != '/') { /* relative to the link's folder */
      char *dir = lm_file_folder(cur);
      next = dir ? malloc(strlen(dir) + (size_t)n + 2) : NULL;
      if (next)
        sprintf(next, "%s/%s", dir, to);
      free(dir);
      free(to);
    }
    free(cur);
    cur = next;
  }
  return cur;
}

lm_status lm_file_lock(const char *path, int *out, lm_error *err) {
  *out = -1;
  /* Two names of one file (a symlink and its target) must take one lock:
   * lock beside the file the path resolves to, even when it does not exist
   * yet (a dangling symlink to the output). */
  char *real = resolve_links(path);
  if (!real)
    return lm_error_set(err, LM_ESYS, "%s: out of memory", path);
  const char *target = real;
  struct stat st;
  if (stat(target, &st) == 0 && !S_ISREG(st.st_mode)) {
    free(real); /* a device, FIFO or socket is written through, not merged */
    return LM_OK;
  }
  size_t n = strlen(target);
  char *side = malloc(n + sizeof ".lock");
  if (!side) {
    free(real);
    return lm_error_set(err, LM_ESYS, "%s: out of memory", path);
  }
  memcpy(side, target, n);
  memcpy(side + n, ".lock", sizeof ".lock");
  free(real);
  /* O_RDWR, not O_RDONLY: on NFS flock becomes a POSIX record lock, and an
   * exclusive one needs a descriptor open for writing. */
  int fd = open(side, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0666);
  if (fd < 0) {
    lm_status s = lm_error_set(err, LM_ESYS, "%s: cannot open its lock file %s: %s", path,
                               side, strerror(errno));
    free(side);
    return s;
  }
  free(side);
  int r;
  do
    r = flock(fd, LOCK_EX);
  while (r != 0 && errno == EINTR);
  if (r != 0) {
    int e = errno;
    close(fd);
    return lm_error_set(err, LM_ESYS, "%s: cannot lock: %s", path, strerror(e));
  }
  *out = fd;
  return LM_OK;
}

void lm_file_unlock(int lock) {
  if (lock >= 0)
    close(lock); /* closing the last descriptor releases the flock */
}

lm_status lm_file_read_max(const char *path, size_t max, const char *what, char **out,
                           size_t *n, lm_error *err) {
  *out = NULL;
  if (n)
    *n = 0;
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return lm_error_set(err, LM_EINPUT, "%s: cannot open: %s", path,
                        strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0)
    memset(&st, 0, sizeof st);
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    return lm_error_set(err, LM_EINPUT, "%s: cannot read: %s", path, strerror(EISDIR));
  }
  size_t cap = 1 << 16, len = 0;
  if (S_ISREG(st.st_mode) && st.st_size > 0 &&
      (uint64_t)st.st_size <= max)
    cap = (size_t)st.st_size + 2; /* room to see the end of the file */
  char *buf = malloc(cap);
  lm_status s = LM_OK;
  for (;;) {
    if (!buf) {
      s = lm_error_set(err, LM_ESYS, "%s: out of memory", path);
      break;
    }
    if (len + 1 == cap) {
      if (len > max) {
        s = lm_error_set(err, LM_EINPUT, "%s: more than %zu MiB, the most a %s may hold",
                         path, max >> 20, what);
        break;
      }
      size_t nc =
          cap * 2 > max + 2 ? max + 2 : cap * 2;
      char *nb = realloc(buf, nc);
      if (!nb) {
        s = lm_error_set(err, LM_ESYS, "%s: out of memory", path);
        break;
      }
      buf = nb;
      cap = nc;
    }
    ssize_t r = read(fd, buf + len, cap - len - 1);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      s = lm_error_set(err, LM_EINPUT, "%s: cannot read: %s", path,
                       strerror(errno));
      break;
    }
    if (r == 0)
      break;
    len += (size_t)r;
  }
  close(fd);
  if (s != LM_OK) {
    free(buf);
    return s;
  }
  buf[len] = 0;
  *out = buf;
  if (n)
    *n = len;
  return LM_OK;
}

lm_status lm_file_read(const char *path, char **out, size_t *n, lm_error *err) {
  return lm_file_read_max(path, LM_FILE_MAX_BYTES, "file", out, n, err);
}

/* mkdir -p, one level per call: the parents first. */
static int make_dirs(const char *dir) {
  struct stat sb;
  if (stat(dir, &sb) == 0)
    return S_ISDIR(sb.st_mode) ? 0 : ENOTDIR;
  char *parent = strdup(dir); /* whole: a cut path is another folder */
  if (!parent)
    return ENOMEM;
  char *slash = strrchr(parent, '/');
  while (slash && slash > parent && slash[1] == 0) { /* trailing slashes */
    *slash = 0;
    slash = strrchr(parent, '/');
  }
  int e = 0;
  if (slash && slash > parent) {
    *slash = 0;
    e = make_dirs(parent);
  }
  free(parent);
  if (e)
    return e;
  return mkdir(dir, 0777) == 0 || errno == EEXIST ? 0 : errno;
}

lm_status lm_file_make_dirs(const char *dir, lm_error *err) {
  int e = make_dirs(dir);
  if (e != 0)
    return lm_error_set(err, LM_ESYS, "%s: cannot create the folder: %s", dir,
                        strerror(e));
  return LM_OK;
}
