/* Whole-file I/O.  Writes go to a temp file in the target's directory, are
 * fsynced and renamed over the target, so a crash or a full disk never
 * leaves half a profile, plan or report behind. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lanemap/core.h"

lm_status lm_file_write_atomic(const char *path, const void *data, size_t n,
                               lm_error *err) {
  size_t len = strlen(path);
  char *tmp = malloc(len + 32);
  if (!tmp)
    return lm_error_set(err, LM_ESYS, "%s: out of memory", path);
  snprintf(tmp, len + 32, "%s.tmp.%ld", path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    lm_status s = lm_error_set(err, LM_ESYS, "%s: cannot write: %s", path,
                               strerror(errno));
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
  free(tmp);
  return LM_OK;
error:;
  int e = errno ? errno : EIO;
  if (fd >= 0)
    close(fd);
  unlink(tmp);
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
  int bad = ferror(f);
  fclose(f);
  if (bad) {
    free(buf);
    return lm_error_set(err, LM_EINPUT, "%s: read error", path);
  }
  buf[len] = 0;
  *out = buf;
  if (n)
    *n = len;
  return LM_OK;
}
