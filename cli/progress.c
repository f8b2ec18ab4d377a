/* Progress bars for long work: on a terminal, one line redrawn in place
 * with the count, the elapsed time and an ETA from the mean pace so far;
 * off a terminal, nothing (logs get the stage lines instead). */
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "cli/progress.h"

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

double cli_now_s(void) { return now_s(); }

void cli_progress_start(cli_progress *p, const char *label, int total) {
  p->label = label;
  p->total = total;
  p->t0 = now_s();
  p->tty = isatty(2);
  cli_progress_step(p, 0, "");
}

static void clock_text(double s, char *buf, size_t n) {
  if (s < 0)
    s = 0;
  int m = (int)(s / 60);
  snprintf(buf, n, "%dm%02ds", m, (int)(s - 60.0 * m));
}

void cli_progress_step(cli_progress *p, int done, const char *what) {
  if (!p->tty)
    return;
  double el = now_s() - p->t0;
  char e[16], eta[16] = "?";
  clock_text(el, e, sizeof e);
  if (done > 0)
    clock_text(el / done * (p->total - done), eta, sizeof eta);
  int w = 24, f = p->total ? done * w / p->total : w;
  fprintf(stderr, "\r%-8.8s [%.*s%*s] %3d/%-3d %s ETA %s %-24.24s", p->label, f,
          "########################", w - f, "", done, p->total, e, eta, what);
  fflush(stderr);
}

void cli_progress_end(cli_progress *p) {
  if (p->tty)
    fputc('\n', stderr);
}

void cli_progress_calib(void *ctx, int done, int total, const char *what) {
  cli_progress *p = ctx;
  if (p->total != total)
    p->total = total;
  cli_progress_step(p, done, what);
}

/* ---- evaluate's stages ---------------------------------------------------- */

void cli_eval_progress(void *ctx, lm_evaluate_stage stage, const char *isa,
                       int done, int total, const char *what) {
  (void)isa;
  cli_eval_bar *b = ctx;
  if (b->on && b->stage != stage) {
    cli_progress_end(&b->bar);
    b->on = 0;
  }
  if (!b->on) {
    if (!what)
      return;
    cli_progress_start(&b->bar,
                       stage == LM_EVALUATE_CALIBRATE ? "calibrate" : "measure",
                       total);
    b->on = 1;
    b->stage = stage;
  }
  b->bar.total = total;
  cli_progress_step(&b->bar, done, what ? what : "");
  if (!what) {
    cli_progress_end(&b->bar);
    b->on = 0;
  }
}

void cli_eval_note(void *ctx, int warning, const char *line) {
  cli_eval_bar *b = ctx;
  if (b->on && b->bar.tty)
    fputc('\n', stderr); /* below the bar, which the next step redraws */
  if (warning)
    fprintf(stderr, "lanemap evaluate: warning: %s\n", line);
  else
    printf("%s\n", line);
  fflush(stdout);
}
