/* Running gnuplot for the held-out reports (internal to heldout/): the
 * evaluation's plots (heldout/plots.c) and the deployment's
 * (heldout/deploy_report.c). */
#ifndef LANEMAP_HELDOUT_GNUPLOT_H
#define LANEMAP_HELDOUT_GNUPLOT_H

#include "lanemap/core.h"

/* Is there an executable gnuplot on PATH? */
int lm_eval_have_gnuplot(void);

/* Run `gnuplot script` in dir, its output in dir/gnuplot.log (truncated
 * by the first script of a call, appended to by the others).  The script
 * draws into png.part (its `outfile`), renamed to png once gnuplot has
 * succeeded, so a PNG is either whole or absent.  LM_EFAIL when gnuplot is
 * missing or fails. */
lm_status lm_eval_gnuplot(const char *dir, const char *script, const char *png,
                          int first, lm_error *err);

#endif
