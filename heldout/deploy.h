/* The state of one deployment evaluation, shared by heldout/deploy.c (the
 * pipeline) and heldout/deploy_report.c (report, records and plot);
 * internal to heldout/. */
#ifndef LANEMAP_HELDOUT_DEPLOY_H
#define LANEMAP_HELDOUT_DEPLOY_H

#include "lanemap/heldout.h"
#include "lanemap/plan.h"

/* One held-out shape. */
typedef struct lm_deploy_shape {
  int kernel; /* spec kernel, also the workload kernel */
  int64_t R, C;
  char id[96];     /* the case id in OUT/cases.json */
  lm_eval_case *c; /* its measurement, NULL if it has none */
  int bucket;      /* the workload bucket threshold dispatch gives it */
  double t_best;   /* the fastest timed variant, ns; NAN: none */
  /* [budget][policy]: the variant each plan runs here and its time (ns;
   * INFINITY: it failed the oracle check or was not timed; NAN: no plan) */
  const char **chosen;
  double *t;
} lm_deploy_shape;

typedef struct lm_deploy_state {
  const lm_deploy_options *o;
  lm_deploy_spec spec;
  lm_isa isa;
  char profile_path[1024]; /* the profile the plans and lm_evaluate use */
  int budgets[LM_DEPLOY_MAX_BUDGETS];
  int nbudgets;
  lm_workload *w;
  lm_deploy_shape *s;
  int nshapes;
  /* [budget][policy] the plans (NULL: not made; inductor-like never) */
  lm_plan **plans;
  lm_deploy_result *res;
} lm_deploy_state;

/* The slot of budget b and policy p in plans, chosen, t and the result's
 * rows. */
static inline int lm_deploy_slot(int b, lm_deploy_policy p) {
  return b * LM_DEPLOY__COUNT + (int)p;
}

/* OUT/deploy.md, OUT/deploy.jsonl and the plot (deploy_report.c). */
lm_status lm_deploy_report(const lm_deploy_state *d, lm_error *err);

#endif
