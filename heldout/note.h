/* One formatted line to the note callback of lm_evaluate_options or
 * lm_deploy_options (internal to heldout/): which profile, what was
 * resumed, what went wrong but did not stop the run. */
#ifndef LANEMAP_HELDOUT_NOTE_H
#define LANEMAP_HELDOUT_NOTE_H

#include <stdarg.h>
#include <stdio.h>

typedef void (*lm_eval_note_fn)(void *ctx, int warning, const char *line);

/* note(ctx, warning, the formatted line, cut at 2400 bytes); nothing when
 * note is NULL. */
static inline void lm_eval_notef(lm_eval_note_fn note, void *ctx, int warning,
                                 const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static inline void lm_eval_notef(lm_eval_note_fn note, void *ctx, int warning,
                                 const char *fmt, ...) {
  if (!note)
    return;
  char line[2400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  note(ctx, warning, line);
}

#endif
