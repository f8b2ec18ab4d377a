/* Error records: a status plus a message the caller prints.  Nothing in the
 * library prints; this is where its words are kept instead.
 *
 * A message longer than the record holds keeps its head and its tail, with
 * the size of the cut between them: the reason usually comes last ("PATH:
 * cannot open: No such file or directory"), so cutting only the end would
 * lose the one part the user needs. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/core.h"

/* Fit text[0..n) into dst[0..cap) as head, marker, tail. */
static void fit_cut(char *dst, size_t cap, const char *text, size_t n) {
  char mark[48];
  size_t cut = n - (cap - 1); /* at least; the marker takes room too */
  int m = snprintf(mark, sizeof mark, "...[%zu bytes cut]...", cut);
  for (int tries = 0; tries < 3; tries++) {
    cut = n - (cap - 1 - (size_t)m);
    m = snprintf(mark, sizeof mark, "...[%zu bytes cut]...", cut);
  }
  size_t keep = cap - 1 - (size_t)m, head = keep / 2, tail = keep - head;
  memcpy(dst, text, head);
  memcpy(dst + head, mark, (size_t)m);
  memcpy(dst + head + (size_t)m, text + n - tail, tail);
  dst[head + (size_t)m + tail] = 0;
}

lm_status lm_error_set(lm_error *err, lm_status status, const char *fmt, ...) {
  if (!err)
    return status;
  /* format aside first: an argument may be err->msg itself */
  char head[sizeof err->msg];
  va_list ap, again;
  va_start(ap, fmt);
  va_copy(again, ap);
  int n = vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  char *all = n >= (int)sizeof head ? malloc((size_t)n + 1) : NULL;
  if (all) {
    vsnprintf(all, (size_t)n + 1, fmt, again);
    fit_cut(err->msg, sizeof err->msg, all, (size_t)n);
    free(all);
  } else {
    memcpy(err->msg, head, sizeof head);
  }
  va_end(again);
  err->status = status;
  return status;
}

void lm_error_clear(lm_error *err) {
  if (err) {
    err->status = LM_OK;
    err->msg[0] = 0;
  }
}

const char *lm_version(void) { return LANEMAP_VERSION_STRING; }
