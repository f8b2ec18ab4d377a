/* The profiles a workload is priced with, for the commands that plan one
 * (solve, tune): the same choice and the same messages for both. */
#ifndef LANEMAP_CLI_PROFILES_H
#define LANEMAP_CLI_PROFILES_H

#include "lanemap/calibrate.h"
#include "lanemap/workload.h"

/* One profile per ISA target of w into owned[0..w->nisa): each of the
 * nprof files given prices the target of its own ISA (a lone file prices
 * a lone target, whatever ISA it names); a target without one takes this
 * machine's cached calibrated profile, or the named defaults with dflt.
 * accept takes a profile whose calibration was noisy.  Prints to stderr,
 * as "lanemap CMD: profile for ISA: ...", which one prices each target.
 * On error the profiles already loaded stay in owned for the caller to
 * free. */
/* `--profile P` at argv[*i], once per ISA target: P is appended to
 * profpath[*nprof].  Returns as cli_arg_value does (1 taken, 0 another
 * argument, < 0 missing value); more than LM_ISA__COUNT is a usage error
 * of cmd, printed, and < 0. */
int cli_arg_profile(int argc, char **argv, int *i, const char **profpath,
                    int *nprof, const char *usage, const char *cmd);

lm_status cli_workload_profiles(const char *cmd, const lm_workload *w,
                                const char *const *profpath, int nprof,
                                int dflt, int accept, lm_profile **owned,
                                lm_error *err);

#endif
