/* Error records: a status plus a message the caller prints.  Nothing in the
 * library prints; this is where its words are kept instead. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lanemap/core.h"

lm_status lm_error_set(lm_error *err, lm_status status, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->status = status;
  }
  return status;
}

void lm_error_clear(lm_error *err) {
  if (err) {
    err->status = LM_OK;
    err->msg[0] = 0;
  }
}

const char *lm_version(void) { return LANEMAP_VERSION_STRING; }
