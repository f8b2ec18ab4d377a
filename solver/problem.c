/* From a workload and its profiles to a solver problem.
 *
 * For each kernel the candidates are every legal variant of each allowed
 * ISA target and worker count (lm_variant_enumerate), priced with the
 * profile of that ISA.  The dynamic counts of one (kernel, bucket, variant)
 * are counted once (lm_cost_features); each cost scenario then costs one
 * lm_cost_eval with that scenario's coefficients: the point coefficients
 * for scenario 0, bootstrap resample j-1 for scenario j >= 1 in robust
 * mode and for settling (lm_plan_problem_settle, which also takes the
 * named defaults' prediction of every cell).  The buckets reach the solver
 * ordered by C, then R, so that thresholded dispatch runs over R within
 * each C. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/calibrate.h"
#include "lanemap/costmodel.h"
#include "lanemap/plan.h"

void lm_plan_problem_free(lm_plan_problem *pp) {
  if (!pp)
    return;
  for (int i = 0; pp->pk && i < pp->p.nkernels; i++) {
    free(pp->pk[i].variants);
    free(pp->pk[i].order);
    free(pp->pk[i].weight);
    free(pp->pk[i].cost);
    free(pp->pk[i].point);
    free(pp->pk[i].prior);
    free(pp->pk[i].tie);
    free(pp->pk[i].compile_cost);
  }
  free(pp->pk);
  free(pp->k);
  memset(pp, 0, sizeof *pp);
}

/* qsort's comparator has no context argument: the buckets it sorts are
 * per thread, so two threads building problems never mix them. */
static _Thread_local const lm_workload_bucket *sort_base;
static int by_c_then_r(const void *a, const void *b) {
  const lm_workload_bucket *x = &sort_base[*(const int *)a],
                           *y = &sort_base[*(const int *)b];
  if (x->C != y->C)
    return x->C < y->C ? -1 : 1;
  return x->R < y->R ? -1 : x->R > y->R;
}

/* Every legal variant of k over the workload's ISAs and worker counts. */
static lm_status enumerate(const lm_workload *w, const lm_kernel *k, lm_variant **out,
                           int *n, int **isa_of, lm_error *err) {
  *out = NULL;
  *n = 0;
  *isa_of = NULL;
  for (int i = 0; i < w->nisa; i++) {
    lm_enum_opts eo;
    lm_enum_defaults(&eo);
    eo.isa = w->isa[i];
    memset(eo.workers, 0, sizeof eo.workers);
    for (int j = 0; j < w->nworkers; j++)
      eo.workers[j] = w->workers[j];
    eo.fps = 1u << w->fp;
    lm_variant *vs = NULL;
    int m = lm_variant_enumerate(k, &eo, &vs, err);
    if (m < 0)
      return LM_EINPUT;
    lm_variant *all = realloc(*out, sizeof *all * (size_t)(*n + m + 1));
    int *io = realloc(*isa_of, sizeof *io * (size_t)(*n + m + 1));
    if (!all || !io) {
      free(vs);
      free(all ? all : *out);
      free(io ? io : *isa_of);
      *out = NULL;
      *isa_of = NULL;
      return lm_error_set(err, LM_ESYS, "problem: out of memory");
    }
    *out = all;
    *isa_of = io;
    for (int v = 0; v < m; v++) {
      all[*n + v] = vs[v];
      io[*n + v] = i;
    }
    *n += m;
    free(vs);
  }
  if (*n == 0)
    return lm_error_set(err, LM_EINPUT, "%s: kernel %s has no legal variant", w->name,
                        k->name);
  return LM_OK;
}

lm_status lm_plan_problem_build(const lm_workload *w, const lm_profile *const *profiles,
                                const lm_plan_build_opts *o, lm_plan_problem *out,
                                lm_error *err) {
  memset(out, 0, sizeof *out);
  lm_status s = LM_OK;
  int robust = o && o->robust;
  int settle = o && o->settle && !robust;
  int nsc = 1;
  lm_coefs *coefs = NULL; /* [nisa][nsc] */
  lm_coefs *dflt = NULL;  /* [nisa] the named defaults, with settle */
  lm_variant *vs = NULL;
  int *isa_of = NULL;
  if (w->nkernels < 1)
    return lm_error_set(err, LM_EINPUT, "%s: no kernels", w->name);
  if (robust) {
    nsc = -1;
    for (int i = 0; i < w->nisa; i++) {
      int nb = 0;
      lm_profile_get_bootstrap(profiles[i], &nb);
      if (nb < 1)
        return lm_error_set(err, LM_EINPUT,
                            "robust mode: the profile for %s has no bootstrap vectors",
                            lm_isa_name(w->isa[i]));
      if (nsc >= 0 && nb != nsc)
        return lm_error_set(err, LM_EINPUT,
                            "robust mode: the profiles hold %d and %d bootstrap "
                            "vectors; they must agree",
                            nsc, nb);
      nsc = nb;
    }
    nsc += 1; /* scenario 0 stays the point prediction */
  } else if (settle) {
    /* the bootstrap scenarios when every profile has the same number;
     * without them every bucket settles on its point best */
    int nb0 = -1, same = 1;
    for (int i = 0; i < w->nisa; i++) {
      int nb = 0;
      lm_profile_get_bootstrap(profiles[i], &nb);
      same &= nb0 < 0 || nb == nb0;
      nb0 = nb;
    }
    nsc = same && nb0 > 0 ? nb0 + 1 : 1;
  }
  coefs = calloc((size_t)w->nisa * (size_t)nsc, sizeof *coefs);
  out->k = calloc((size_t)w->nkernels, sizeof *out->k);
  out->pk = calloc((size_t)w->nkernels, sizeof *out->pk);
  out->p.nkernels = w->nkernels;
  out->p.kernel = out->k;
  out->p.nscenarios = nsc;
  out->robust = robust;
  out->settle = settle;
  if (settle)
    dflt = calloc((size_t)w->nisa, sizeof *dflt);
  if (!coefs || !out->k || !out->pk || (settle && !dflt)) {
    s = lm_error_set(err, LM_ESYS, "problem: out of memory");
    goto done;
  }
  for (int i = 0; i < w->nisa && s == LM_OK; i++)
    for (int j = 0; j < nsc && s == LM_OK; j++)
      s = j > 0 ? lm_coefs_from_bootstrap(profiles[i], j - 1, &coefs[i * nsc + j], err)
                : lm_coefs_from_profile(profiles[i], &coefs[i * nsc + j], err);
  for (int i = 0; settle && i < w->nisa && s == LM_OK; i++) {
    lm_profile *d = NULL;
    if ((s = lm_profile_default(w->isa[i], &d, err)) == LM_OK)
      s = lm_coefs_from_profile(d, &dflt[i], err);
    lm_profile_free(d);
  }
  if (s != LM_OK)
    goto done;
  int budget_variants = w->compile_budget_variants >= 0;
  out->p.budget = budget_variants ? w->compile_budget_variants : w->compile_budget_ms;
  for (int ki = 0; ki < w->nkernels && s == LM_OK; ki++) {
    const lm_workload_kernel *wk = &w->kernels[ki];
    lm_plan_pkernel *pk = &out->pk[ki];
    if (!wk->k) {
      s = lm_error_set(err, LM_EINPUT, "%s: kernels[%d] is not loaded", w->name, ki);
      break;
    }
    int nv = 0, nb = wk->nbuckets;
    if ((s = enumerate(w, wk->k, &vs, &nv, &isa_of, err)) != LM_OK)
      break;
    pk->variants = vs;
    pk->nvariants = nv;
    vs = NULL;
    pk->order = malloc(sizeof *pk->order * (size_t)nb);
    pk->weight = malloc(sizeof *pk->weight * (size_t)nb);
    pk->cost = malloc(sizeof *pk->cost * (size_t)nsc * (size_t)nb * (size_t)nv);
    pk->compile_cost = malloc(sizeof *pk->compile_cost * (size_t)nv);
    if (settle)
      pk->prior = malloc(sizeof *pk->prior * (size_t)nb * (size_t)nv);
    if (!pk->order || !pk->weight || !pk->cost || !pk->compile_cost ||
        (settle && !pk->prior)) {
      s = lm_error_set(err, LM_ESYS, "problem: out of memory");
      break;
    }
    for (int b = 0; b < nb; b++)
      pk->order[b] = b;
    sort_base = wk->buckets;
    qsort(pk->order, (size_t)nb, sizeof *pk->order, by_c_then_r);
    for (int v = 0; v < nv; v++)
      pk->compile_cost[v] = budget_variants      ? 1
                            : wk->compile_ms >= 0 ? wk->compile_ms
                                                  : LM_COMPILE_MS_DEFAULT;
    for (int b = 0; b < nb && s == LM_OK; b++) {
      int wb = pk->order[b];
      pk->weight[b] = wk->buckets[wb].weight;
      lm_shape sh;
      if ((s = lm_workload_shape(w, ki, wb, &sh, err)) != LM_OK)
        break;
      for (int v = 0; v < nv; v++) {
        lm_features f;
        lm_error ferr = {0};
        const lm_coefs *c0 = &coefs[isa_of[v] * nsc];
        int ok = lm_cost_features(wk->k, &pk->variants[v], &sh, &c0->caches, NULL, &f,
                                  &ferr) == LM_OK;
        if (!ok)
          out->unpredictable++;
        for (int j = 0; j < nsc; j++) {
          double ns = INFINITY;
          if (ok) {
            lm_prediction pr;
            lm_cost_eval(&c0[j], &f, &pk->variants[v], &pr);
            ns = isfinite(pr.ns) && pr.ns >= 0 ? pr.ns : INFINITY;
          }
          pk->cost[((size_t)j * nb + b) * nv + v] = ns;
        }
        if (settle) {
          double ns = INFINITY;
          if (ok) {
            lm_prediction pr;
            lm_cost_eval(&dflt[isa_of[v]], &f, &pk->variants[v], &pr);
            ns = isfinite(pr.ns) && pr.ns >= 0 ? pr.ns : INFINITY;
          }
          pk->prior[(size_t)b * nv + v] = ns;
        }
      }
    }
    free(isa_of);
    isa_of = NULL;
    int cap = wk->max_variants ? wk->max_variants : w->max_variants_per_kernel;
    out->k[ki] = (lm_solve_kernel){nb, nv, pk->weight, pk->cost, pk->compile_cost, cap};
  }
done:
  free(isa_of);
  free(vs);
  free(coefs);
  free(dflt);
  if (s != LM_OK)
    lm_plan_problem_free(out);
  return s;
}
