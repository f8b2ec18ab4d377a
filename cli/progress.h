/* Progress bars on stderr for long work (only when stderr is a terminal). */
#ifndef LANEMAP_CLI_PROGRESS_H
#define LANEMAP_CLI_PROGRESS_H

#include "lanemap/heldout.h"

typedef struct cli_progress {
  const char *label; /* stage name, e.g. "measure" */
  int total;
  double t0; /* s, monotonic */
  int tty;
} cli_progress;

void cli_progress_start(cli_progress *p, const char *label, int total);
void cli_progress_step(cli_progress *p, int done, const char *what);
void cli_progress_end(cli_progress *p);
/* lm_calib_opts.progress adapter; ctx is a cli_progress. */
void cli_progress_calib(void *ctx, int done, int total, const char *what);
/* lm_evaluate_options (and lm_deploy_options) progress and note adapters:
 * one bar per stage, notes printed below it (warnings on stderr).  ctx is
 * a zeroed cli_eval_bar. */
typedef struct cli_eval_bar {
  cli_progress bar;
  int on;
  lm_evaluate_stage stage;
} cli_eval_bar;
void cli_eval_progress(void *ctx, lm_evaluate_stage stage, const char *isa,
                       int done, int total, const char *what);
void cli_eval_note(void *ctx, int warning, const char *line);

/* Monotonic seconds. */
double cli_now_s(void);

#endif
