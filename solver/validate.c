/* A problem before it is solved and a plan after: the options' defaults,
 * the checks of a problem's shape and numbers, the result's storage, and
 * lm_solve_check, which the plan of every method must pass. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/solve_impl.h"

void lm_solve_defaults(lm_solve_opts *o) {
  memset(o, 0, sizeof *o);
  o->time_limit = 10;
  o->mip_gap = 0;
  o->presolve = 0; /* GLPK's LP presolver ignores the time limit (mip.c) */
  o->prune = 1;
  o->method = LM_SOLVE_AUTO;
}

const char *lm_solve_status_name(lm_solve_status s) {
  switch (s) {
  case LM_SOLVE_OPTIMAL:
    return "optimal";
  case LM_SOLVE_FEASIBLE:
    return "feasible";
  case LM_SOLVE_TIME_LIMIT:
    return "time-limit";
  case LM_SOLVE_INFEASIBLE:
    return "infeasible";
  }
  return "?";
}

lm_status lm_solve_validate(const lm_solve_problem *p, const lm_solve_opts *o,
                            lm_error *err) {
  if (!p || !o)
    return lm_error_set(err, LM_EINPUT, "solver: no problem or options");
  if (p->nkernels < 1 || !p->kernel)
    return lm_error_set(err, LM_EINPUT, "solver: the problem has no kernels");
  if (p->nscenarios < 0)
    return lm_error_set(err, LM_EINPUT, "solver: %d cost scenarios",
                        p->nscenarios);
  if (isnan(p->budget) || p->budget == INFINITY)
    return lm_error_set(err, LM_EINPUT, "solver: global budget is %g",
                        p->budget);
  if (!(o->time_limit > 0) || !(o->mip_gap >= 0))
    return lm_error_set(err, LM_EINPUT,
                        "solver: time limit %g s and MIP gap %g must be > 0 "
                        "and >= 0",
                        o->time_limit, o->mip_gap);
  int nsc = lm_solve_nscen(p);
  double total = 0; /* the largest objective any choice can reach */
  for (int k = 0; k < p->nkernels; k++) {
    const lm_solve_kernel *K = &p->kernel[k];
    if (K->nvariants < 1)
      return lm_error_set(err, LM_EINPUT, "solver: kernel %d has no variants",
                          k);
    if (K->nbuckets < 1)
      return lm_error_set(err, LM_EINPUT, "solver: kernel %d has no buckets",
                          k);
    if (!K->weight || !K->cost)
      return lm_error_set(err, LM_EINPUT,
                          "solver: kernel %d has no weights or costs", k);
    if (K->cap < 0)
      return lm_error_set(err, LM_EINPUT, "solver: kernel %d has cap %d", k,
                          K->cap);
    for (int s = 0; s < K->nbuckets; s++)
      if (!isfinite(K->weight[s]) || K->weight[s] < 0)
        return lm_error_set(err, LM_EINPUT,
                            "solver: kernel %d bucket %d has weight %g (must "
                            "be finite and >= 0)",
                            k, s, K->weight[s]);
    for (int v = 0; v < K->nvariants; v++) {
      double cc = K->compile_cost ? K->compile_cost[v] : 0;
      if (!isfinite(cc) || cc < 0)
        return lm_error_set(err, LM_EINPUT,
                            "solver: kernel %d variant %d has compile cost %g "
                            "(must be finite and >= 0)",
                            k, v, cc);
      for (int j = 0; j < nsc; j++)
        for (int s = 0; s < K->nbuckets; s++) {
          double c = lm_solve_cost(K, j, s, v);
          if (isnan(c) || c < 0)
            return lm_error_set(err, LM_EINPUT,
                                "solver: kernel %d bucket %d variant %d has "
                                "cost %g in scenario %d (must be >= 0 or "
                                "INFINITY)",
                                k, s, v, c, j);
        }
    }
    for (int s = 0; s < K->nbuckets; s++) {
      double worst = 0;
      int wv = 0;
      for (int j = 0; j < nsc; j++)
        for (int v = 0; v < K->nvariants; v++) {
          double c = lm_solve_cost(K, j, s, v);
          if (isfinite(c) && c > worst)
            worst = c, wv = v;
        }
      double wc = K->weight[s] * worst;
      total += wc;
      if (!isfinite(wc) || !(total <= LM_SOLVE_MAX_TOTAL))
        return lm_error_set(err, LM_EINPUT,
                            "solver: kernel %d bucket %d: weight %g x cost %g of variant %d "
                            "takes the weighted total past %g; scale the weights down",
                            k, s, K->weight[s], worst, wv, LM_SOLVE_MAX_TOTAL);
    }
    for (int v = 0; v < K->nvariants; v++)
      total += K->compile_cost ? K->compile_cost[v] : 0;
  }
  if (!(total <= LM_SOLVE_MAX_TOTAL))
    return lm_error_set(err, LM_EINPUT,
                        "solver: the compile costs take the total past %g", LM_SOLVE_MAX_TOTAL);
  return LM_OK;
}

lm_status lm_solve_result_init(const lm_solve_problem *p, lm_solve_result *r,
                               lm_error *err) {
  memset(r, 0, sizeof *r);
  int nk = p->nkernels;
  r->nkernels = nk;
  r->bucket_start = malloc(sizeof(int) * (size_t)(nk + 1));
  r->variant_start = malloc(sizeof(int) * (size_t)(nk + 1));
  if (!r->bucket_start || !r->variant_start)
    goto error;
  r->bucket_start[0] = r->variant_start[0] = 0;
  for (int k = 0; k < nk; k++) {
    r->bucket_start[k + 1] = r->bucket_start[k] + p->kernel[k].nbuckets;
    r->variant_start[k + 1] = r->variant_start[k] + p->kernel[k].nvariants;
  }
  r->choice = malloc(sizeof(int) * (size_t)(r->bucket_start[nk] + 1));
  r->compiled = calloc((size_t)r->variant_start[nk] + 1, 1);
  if (!r->choice || !r->compiled)
    goto error;
  for (int i = 0; i < r->bucket_start[nk]; i++)
    r->choice[i] = -1;
  r->status = LM_SOLVE_INFEASIBLE;
  r->objective = r->greedy_objective = INFINITY;
  r->bound = -INFINITY;
  r->gap = INFINITY;
  return LM_OK;
error:
  lm_solve_result_free(r);
  return lm_error_set(err, LM_ESYS, "solver: out of memory");
}

void lm_solve_result_free(lm_solve_result *r) {
  if (!r)
    return;
  free(r->bucket_start);
  free(r->variant_start);
  free(r->choice);
  free(r->compiled);
  r->bucket_start = r->variant_start = r->choice = NULL;
  r->compiled = NULL;
}

lm_status lm_solve_check(const lm_solve_problem *p, const lm_solve_opts *o,
                         const lm_solve_result *r, double *objective,
                         lm_error *err) {
  int nsc = o->robust ? lm_solve_nscen(p) : 1;
  double sc[nsc], spent = 0;
  for (int j = 0; j < nsc; j++)
    sc[j] = 0;
  for (int k = 0; k < p->nkernels; k++) {
    const lm_solve_kernel *K = &p->kernel[k];
    const int *ch = r->choice + r->bucket_start[k];
    const unsigned char *cp = r->compiled + r->variant_start[k];
    int n = 0;
    for (int v = 0; v < K->nvariants; v++) {
      n += cp[v] != 0;
      spent += cp[v] && K->compile_cost ? K->compile_cost[v] : 0;
    }
    if (K->cap > 0 && n > K->cap)
      return lm_error_set(err, LM_EFAIL,
                          "plan: kernel %d compiles %d variants, cap %d", k, n,
                          K->cap);
    for (int s = 0; s < K->nbuckets; s++) {
      int v = ch[s];
      if (v < 0 || v >= K->nvariants || !cp[v])
        return lm_error_set(err, LM_EFAIL,
                            "plan: kernel %d bucket %d runs variant %d, which "
                            "is not compiled",
                            k, s, v);
      if (!lm_solve_allowed(p, k, s, v))
        return lm_error_set(err, LM_EFAIL,
                            "plan: kernel %d bucket %d runs variant %d, which "
                            "may not run it",
                            k, s, v);
      if (o->threshold && s > 0 && v != ch[s - 1])
        for (int q = 0; q < s - 1; q++)
          if (ch[q] == v)
            return lm_error_set(err, LM_EFAIL,
                                "plan: kernel %d variant %d runs buckets %d "
                                "and %d but not %d (not a threshold table)",
                                k, v, q, s, s - 1);
      for (int j = 0; j < nsc; j++)
        sc[j] += K->weight[s] * lm_solve_cost(K, j, s, v);
    }
  }
  if (p->budget >= 0 && spent > p->budget * (1 + 1e-12) + 1e-12)
    return lm_error_set(err, LM_EFAIL,
                        "plan: compiles %g ms, over the global budget %g ms",
                        spent, p->budget);
  double obj = sc[0];
  for (int j = 1; j < nsc; j++)
    obj = fmax(obj, sc[j]);
  if (objective)
    *objective = obj;
  return LM_OK;
}

lm_status lm_solve_start(const lm_solve_problem *p, const lm_solve_opts *o,
                         lm_solve_result *r, lm_error *err) {
  lm_status st = lm_solve_validate(p, o, err);
  if (st)
    return st;
  return lm_solve_result_init(p, r, err);
}
