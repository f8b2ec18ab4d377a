/* The solver: compile sets and dispatch plans (DESIGN.md §11).
 *
 * The direct MIP over all kernels at once does not scale (§11 measured 20
 * kernels × 64 buckets × 32 variants at 15 s, 100 kernels without a
 * feasible point in 60 s), so lm_solve uses the structure of the problem
 * and keeps GLPK for what has no cheaper exact method:
 *
 *   1. dominance pruning: a variant no cheaper than another in every bucket
 *      and scenario, allowed nowhere the other is not, and no cheaper to
 *      compile can be replaced by it in any plan; it is dropped.
 *   2. decomposition: without a global budget (and without robust mode,
 *      whose worst case sums over kernels), kernels are independent.
 *   3. per kernel: the per-bucket argmin is optimal whenever it uses no
 *      more variants than the cap; otherwise all compile sets of at most
 *      cap variants are enumerated when they are few; thresholded dispatch
 *      is an exact dynamic program (greedy.c) when its plan uses each
 *      variant for one run; what is left is a MIP of that kernel alone.
 *   4. the global budget and robust mode couple kernels: one MIP, with the
 *      greedy plan offered as a warm start.
 *
 * The MIP's form is described in mip.c; feasibility is checked first
 * (feasible.c), so an infeasible instance is reported by the constraint
 * that binds. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/solve_impl.h"

static void finish_gap(lm_solve_result *r) {
  if (r->status == LM_SOLVE_OPTIMAL && r->bound >= r->objective)
    r->gap = 0;
  else if (!isfinite(r->bound))
    r->gap = INFINITY;
  else
    r->gap =
        fmax(0, (r->objective - r->bound) / fmax(fabs(r->objective), 1e-300));
  if (r->status == LM_SOLVE_OPTIMAL && r->gap > 0 && r->gap < 1e-9)
    r->gap = 0;
}

lm_status lm_solve(const lm_solve_problem *p, const lm_solve_opts *o,
                   lm_solve_result *r, lm_error *err) {
  double t0 = lm_solve_now();
  lm_status st = lm_solve_start(p, o, r, err);
  if (st)
    return st;
  int nk = p->nkernels, *bs = r->bucket_start, *vs = r->variant_start;
  unsigned char *active = calloc((size_t)vs[nk] + 1, 1);
  long *xo = malloc(sizeof(long) * (size_t)(nk + 1));
  int *warm = NULL;
  lm_solve_result g = {0};
  if (!active || !xo) {
    st = lm_error_set(err, LM_ESYS, "solver: out of memory");
    goto error;
  }
  xo[0] = 0;
  for (int k = 0; k < nk; k++)
    xo[k + 1] = xo[k] + (long)p->kernel[k].nbuckets * p->kernel[k].nvariants;
  r->pruned = lm_solve_prune(p, o, vs, active);
  Mip base = {.p = p,
              .o = o,
              .active = active,
              .bs = bs,
              .vs = vs,
              .xo = xo,
              .k0 = 0,
              .k1 = nk,
              .obj = OBJ_PLAN,
              .caps = 1,
              .budget = 1,
              .warm = NULL,
              .deadline = t0 + o->time_limit};
  if ((st = lm_solve_feasible(&base, r, err))) {
    r->status = LM_SOLVE_INFEASIBLE;
    goto error;
  }
  if (lm_solve_greedy(p, o, active, &g, NULL) == LM_OK) {
    r->greedy_objective = g.objective;
    warm = g.choice;
  }
  memset(r->compiled, 0, (size_t)vs[nk]);
  int coupled = p->budget >= 0 || (o->robust && lm_solve_nscen(p) > 1) ||
                o->method == LM_SOLVE_JOINT_MIP;
  int timed_out = 0, proven = 1, kn = 0;
  double bound = 0;
  if (!coupled) {
    for (int k = 0; k < nk; k++) {
      if (lm_solve_kernel_exact(p, o, k, active + vs[k], r->choice + bs[k])) {
        const lm_solve_kernel *K = &p->kernel[k];
        for (int s = 0; s < K->nbuckets; s++) {
          r->compiled[vs[k] + r->choice[bs[k] + s]] = 1;
          bound += K->weight[s] * lm_solve_cost(K, 0, s, r->choice[bs[k] + s]);
        }
        continue;
      }
      Mip m = base;
      m.k0 = k;
      m.k1 = k + 1;
      m.warm = warm;
      MipOut out;
      if ((st = lm_solve_mip(&m, r, &out, err)))
        goto error;
      r->mip_solves++;
      r->nodes += out.nodes;
      if (!out.ok) {
        if (!warm) {
          st = lm_error_set(err, LM_EFAIL,
                            "solver: time limit %g s passed before kernel %d "
                            "had a plan",
                            o->time_limit, k);
          goto error;
        }
        for (int s = 0; s < p->kernel[k].nbuckets; s++)
          r->choice[bs[k] + s] = warm[bs[k] + s];
        memcpy(r->compiled + vs[k], g.compiled + vs[k],
               (size_t)p->kernel[k].nvariants);
      }
      timed_out |= out.tmlim;
      proven &= out.optimal;
      bound += out.bound;
    }
  } else if (p->budget >= 0 && !o->robust && !o->threshold &&
             o->method == LM_SOLVE_AUTO &&
             (kn = lm_solve_knapsack(p, o, active, r)) != 0) {
    if (kn < 0) {
      st = lm_error_set(err, LM_ESYS, "solver: out of memory");
      goto error;
    }
    for (int i = 0; i < bs[nk]; i++) {
      int k = 0;
      while (bs[k + 1] <= i)
        k++;
      r->compiled[vs[k] + r->choice[i]] = 1;
    }
    double obj;
    lm_solve_check(p, o, r, &obj, NULL);
    bound = obj;
  } else {
    MipOut out;
    base.warm = warm;
    if ((st = lm_solve_mip(&base, r, &out, err)))
      goto error;
    r->mip_solves++;
    r->nodes += out.nodes;
    /* GLPK may not have taken the warm start; the greedy plan is then the
     * better incumbent. */
    double mo = INFINITY;
    if (out.ok && lm_solve_check(p, o, r, &mo, NULL))
      mo = INFINITY;
    if (warm && g.objective < mo) {
      memcpy(r->choice, g.choice, sizeof(int) * (size_t)bs[nk]);
      memcpy(r->compiled, g.compiled, (size_t)vs[nk]);
    } else if (!out.ok) {
      st = lm_error_set(err, LM_EFAIL,
                        "solver: time limit %g s passed before any plan",
                        o->time_limit);
      goto error;
    }
    timed_out = out.tmlim;
    proven = out.optimal;
    bound = out.bound;
  }
  if ((st = lm_solve_check(p, o, r, &r->objective, err))) {
    st = lm_error_set(err, LM_EFAIL, "solver: internal: infeasible plan");
    goto error;
  }
  r->compile_total = 0;
  for (int k = 0; k < nk; k++)
    for (int v = 0; v < p->kernel[k].nvariants; v++)
      if (r->compiled[vs[k] + v] && p->kernel[k].compile_cost)
        r->compile_total += p->kernel[k].compile_cost[v];
  r->status = proven      ? LM_SOLVE_OPTIMAL
              : timed_out ? LM_SOLVE_TIME_LIMIT
                          : LM_SOLVE_FEASIBLE;
  r->bound = proven ? fmin(bound, r->objective) : bound;
  finish_gap(r);
  r->time_s = lm_solve_now() - t0;
  free(active);
  free(xo);
  lm_solve_result_free(&g);
  return LM_OK;
error:
  free(active);
  free(xo);
  lm_solve_result_free(&g);
  {
    lm_solve_status s = r->status;
    lm_solve_result_free(r);
    r->status = s;
  }
  return st;
}
