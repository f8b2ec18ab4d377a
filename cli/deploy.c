/* lanemap evaluate --deploy: lm_deploy (heldout/deploy.c) with evaluate's
 * options, its progress on a bar, and a summary of the plan, greedy and the
 * budget oracle per budget. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "lanemap/heldout.h"

lm_status cli_parse_budgets(const char *text, int *budgets, int *n,
                            lm_error *err) {
  char buf[256];
  size_t len = strlen(text);
  if (len == 0 || len >= sizeof buf || text[0] == ',' || text[len - 1] == ',' ||
      strstr(text, ",,"))
    return lm_error_set(err, LM_EINPUT,
                        "--budgets: expected K[,K...] (K a count, 0 or all), "
                        "got '%.64s'",
                        text);
  snprintf(buf, sizeof buf, "%s", text);
  *n = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
       t = strtok_r(NULL, ",", &save)) {
    uint64_t k = 0;
    if (*n == LM_DEPLOY_MAX_BUDGETS)
      return lm_error_set(err, LM_EINPUT, "--budgets: at most %d budgets",
                          LM_DEPLOY_MAX_BUDGETS);
    if (strcmp(t, "all") != 0 &&
        cli_parse_u64("--budgets", t, 4096, &k, err) != LM_OK)
      return LM_EINPUT;
    for (int j = 0; j < *n; j++)
      if (budgets[j] == (int)k)
        return lm_error_set(err, LM_EINPUT, "--budgets: %s given twice", t);
    budgets[(*n)++] = (int)k;
  }
  if (*n == 0)
    return lm_error_set(err, LM_EINPUT, "--budgets: expected K[,K...]");
  return LM_OK;
}

/* A percentage in a column of width 8; "-" when there is no figure. */
static const char *pct(double x, char buf[16]) {
  if (x != x)
    snprintf(buf, 16, "%8s", "-");
  else
    snprintf(buf, 16, "%7.1f%%", 100 * x);
  return buf;
}

static void print_summary(const lm_deploy_result *r) {
  printf("%s: %d kernels, %d held-out shapes\n%-16s %4s %8s %8s %8s %10s "
         "%10s\n",
         r->isa, r->kernels, r->shapes, "policy", "K", "variants", "geomean",
         "max", "vs oracle", "workload");
  for (int i = 0; i < r->nrows; i++) {
    const lm_deploy_row *w = &r->row[i];
    if (!w->made)
      continue;
    char k[8];
    snprintf(k, sizeof k, w->budget ? "%d" : "all", w->budget);
    char a[16], b[16], c[16], d[16];
    printf("%-16s %4s %8d %s %s  %s  %s\n", lm_deploy_policy_name(w->policy), k,
           w->variants, pct(w->best.geomean, a), pct(w->best.max, b),
           pct(w->oracle_geomean, c), pct(w->workload_oracle, d));
  }
}

int cli_deploy(const lm_evaluate_options *e, const char *spec,
               const int *budgets, int nbudgets, int shapes) {
  lm_deploy_options o;
  lm_deploy_options_defaults(&o);
  o.spec = spec;
  o.out = e->out;
  if (e->nisa == 1)
    o.isa = e->isa[0];
  o.profile = e->profile;
  o.quick = e->quick, o.fresh = e->fresh, o.accept_noisy = e->accept_noisy;
  o.seed = e->seed;
  o.all_splits = e->all_splits;
  memcpy(o.budgets, budgets, sizeof *budgets * (size_t)nbudgets);
  o.nbudgets = nbudgets;
  o.shapes = shapes;
  cli_eval_bar bar = {0};
  o.progress = cli_eval_progress, o.note = cli_eval_note, o.ctx = &bar;
  lm_deploy_result *r = calloc(1, sizeof *r);
  lm_error err = {0};
  lm_status st =
      r ? lm_deploy(&o, r, &err) : lm_error_set(&err, LM_ESYS, "out of memory");
  if (bar.on)
    cli_progress_end(&bar.bar);
  if (st != LM_OK) {
    fprintf(stderr, "lanemap evaluate: %s\n", err.msg);
    free(r);
    return st;
  }
  print_summary(r);
  printf("report    %s/deploy.md (%.0f s: %.0f s measuring)\n", o.out,
         r->total_s, r->measure_s);
  int bad = r->failures > 0 || (r->noisy > 0 && !o.accept_noisy);
  if (r->noisy > 0)
    printf("noisy: %d of %d held-out shapes measured under interference; "
           "rerun on a quiet machine\n",
           r->noisy, r->shapes);
  else
    printf("quiet: the %d held-out shapes were measured without "
           "interference\n",
           r->shapes);
  free(r);
  return bad ? LM_EFAIL : LM_OK;
}
