/* Settling ties: decide within the model's uncertainty (docs/solver.md).
 *
 * A calibration fits its coefficients with an error, which its bootstrap
 * resamples show.  Two variants whose point predictions differ by less
 * than that error are not told apart by the model: which one is the
 * point best then depends on which calibration ran, and two calibrations
 * of one machine pick differently (docs/evaluation.md, "Trust figures").
 * Settling replaces the point best of each bucket by a preferred variant
 * among those the bootstrap cannot separate from it:
 *
 *   near tie(v) = share of resamples j with c_j[v] <= c_j[best] >= alpha
 *                 (paired: both priced with resample j)
 *   preferred   = the fewest chunks per worker (1 for one worker and for
 *                 static, K for dynK), then the lowest prediction under
 *                 the named defaults, then the first enumerated.
 *
 * The calibration decides where its resamples agree; elsewhere a rule no
 * calibration moves breaks the tie, so every calibration breaks it the
 * same way.  A finer schedule must win clearly to be chosen.  Preferring
 * the fewest workers first was measured twice and dropped (docs/solver.md,
 * "Settling near ties"). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/plan.h"

/* Chunks per worker of v's launch: 1 for one worker and for static, K for
 * dynK; a gG split's count depends on the rows, so it ranks last. */
static int chunks_per_worker(const lm_variant *v) {
  if (v->workers <= 1 || v->split == LM_SPLIT_STATIC)
    return 1;
  return v->split == LM_SPLIT_DYNAMIC ? v->per_worker : LM_SPLIT_DYN_MAX + 1;
}

/* Is variant a preferred to b (var: the kernel's variants; prior: the
 * bucket row of the defaults' predictions)? */
static int prefer(const lm_variant *var, const double *prior, int a, int b) {
  int ka = chunks_per_worker(&var[a]), kb = chunks_per_worker(&var[b]);
  if (ka != kb)
    return ka < kb;
  double pa = prior[a], pb = prior[b];
  if (pa != pb && !(isnan(pa) && isnan(pb)))
    return pa < pb || isnan(pb);
  return a < b;
}

/* Sorts set[0..n) by preference (insertion: near-tie sets are small, and
 * no state outlives the call). */
static void sort_by_preference(const lm_variant *var, const double *prior,
                               int *set, int n) {
  for (int i = 1; i < n; i++) {
    int x = set[i], j = i;
    for (; j > 0 && prefer(var, prior, x, set[j - 1]); j--)
      set[j] = set[j - 1];
    set[j] = x;
  }
}

/* The point best of bucket b (row point[0..nv)), -1 when none is finite. */
static int point_best(const double *point, int nv) {
  int best = -1;
  for (int v = 0; v < nv; v++)
    if (isfinite(point[v]) && (best < 0 || point[v] < point[best]))
      best = v;
  return best;
}

/* The rule: v is a near tie of best in bucket b when, in a share >= alpha
 * of the resamples j >= 1 of cost[nsc][nb][nv], it is at least as fast
 * (paired).  best is one of its own. */
static int near_tie(const double *cost, int nb, int nsc, int nv, int b, int v,
                    int best, double alpha) {
  if (v == best)
    return 1;
  int wins = 0, pairs = 0;
  for (int j = 1; j < nsc; j++) {
    const double *c = cost + ((size_t)j * nb + b) * nv;
    if (isfinite(c[v]) && isfinite(c[best])) {
      pairs++;
      wins += c[v] <= c[best];
    }
  }
  return pairs > 0 && wins >= alpha * pairs;
}

bool lm_plan_problem_near_tie(const lm_plan_problem *pp, int ki, int s, int v,
                              double alpha) {
  const lm_plan_pkernel *pk = &pp->pk[ki];
  int nb = pp->k[ki].nbuckets, nv = pk->nvariants;
  const double *point =
      (pk->point ? pk->point : pk->cost) + (size_t)s * (size_t)nv;
  int best = point_best(point, nv);
  if (best < 0 || !isfinite(point[v]))
    return false;
  /* settled: one scenario left, and no resample says anything */
  int nsc = pk->point ? 1 : pp->p.nscenarios;
  return near_tie(pk->cost, nb, nsc, nv, s, v, best, alpha);
}

/* Settle one bucket b of kernel pk with nsc scenarios; returns the number
 * of indistinguishable variants, and *moved whether the preferred one is
 * not the point best. */
static int settle_bucket(lm_plan_pkernel *pk, int nb, int nsc, int b,
                         double alpha, int *set, int *moved) {
  int nv = pk->nvariants;
  const double *point = pk->point + (size_t)b * nv;
  int best = point_best(point, nv);
  *moved = 0;
  if (best < 0)
    return 0;
  int n = 0;
  for (int v = 0; v < nv; v++)
    if (isfinite(point[v]) &&
        near_tie(pk->cost, nb, nsc, nv, b, v, best, alpha))
      set[n++] = v;
  sort_by_preference(pk->variants, pk->prior + (size_t)b * nv, set, n);
  for (int r = 0; r < n; r++)
    pk->tie[(size_t)b * nv + (size_t)set[r]] = 1;
  double *c0 = pk->cost + (size_t)b * nv;
  for (int r = 0; r < n; r++)
    c0[set[r]] = point[best] * (1 + LM_SETTLE_STEP * r);
  *moved = set[0] != best;
  return n;
}

lm_status lm_plan_problem_settle(lm_plan_problem *pp, double alpha,
                                 lm_error *err) {
  if (!pp->settle || (pp->p.nkernels > 0 && pp->pk[0].point))
    return LM_OK; /* not built for it, or settled already */
  if (!(alpha > 0 && alpha <= 1))
    return lm_error_set(err, LM_EINPUT,
                        "settle: alpha must be in (0, 1], not %g", alpha);
  int nsc = pp->p.nscenarios;
  pp->settled = pp->ties = 0;
  for (int ki = 0; ki < pp->p.nkernels; ki++) {
    lm_plan_pkernel *pk = &pp->pk[ki];
    int nb = pp->k[ki].nbuckets, nv = pk->nvariants;
    size_t cells = (size_t)nb * (size_t)nv;
    free(pk->point);
    free(pk->tie);
    pk->point = malloc(sizeof *pk->point * (cells ? cells : 1));
    pk->tie = calloc(cells ? cells : 1, 1);
    int *set = malloc(sizeof *set * (size_t)(nv > 0 ? nv : 1));
    if (!pk->point || !pk->tie || !set) {
      free(set);
      return lm_error_set(err, LM_ESYS, "settle: out of memory");
    }
    memcpy(pk->point, pk->cost, sizeof *pk->point * cells);
    for (int b = 0; b < nb; b++) {
      int moved = 0;
      pp->ties += settle_bucket(pk, nb, nsc, b, alpha, set, &moved) > 1;
      pp->settled += moved;
    }
    free(set);
  }
  /* the solver decides on the settled point costs alone */
  pp->p.nscenarios = 1;
  for (int ki = 0; ki < pp->p.nkernels; ki++)
    pp->k[ki].cost = pp->pk[ki].cost;
  return LM_OK;
}
