/* Exhaustive reference for small instances.
 *
 * Per kernel, every assignment of a variant to each bucket is listed (the
 * compiled set is then exactly the variants it uses; compiling more never
 * helps), filtered by the cap and, with thresholded dispatch, by
 * contiguity.  Without robust mode only the cheapest assignment per used
 * set matters; robust mode keeps every assignment's scenario sums.  The
 * product over kernels is then searched under the global budget.  Nothing
 * here shares code with the exact solver beyond reading costs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/solve_impl.h"

#define BRUTE_MAX 10000000.0

typedef struct Cand {
  int *choice;   /* [nb] */
  unsigned mask; /* used variants */
  double cc;     /* compile cost of mask */
  double *sum;   /* [nsc] weighted cost per scenario */
} Cand;

typedef struct Kern {
  Cand *c;
  int n;
} Kern;

typedef struct Search {
  const lm_solve_problem *p;
  Kern *kern;
  int nsc, *pick, *bestpick;
  double *acc; /* [(nk + 1) * nsc] */
  double best;
} Search;

static void search(Search *S, int k, double spent) {
  const lm_solve_problem *p = S->p;
  double *a = S->acc + (size_t)k * S->nsc;
  if (k == p->nkernels) {
    double obj = a[0];
    for (int j = 1; j < S->nsc; j++)
      obj = fmax(obj, a[j]);
    if (obj < S->best) {
      S->best = obj;
      memcpy(S->bestpick, S->pick, sizeof(int) * (size_t)p->nkernels);
    }
    return;
  }
  for (int i = 0; i < S->kern[k].n; i++) {
    Cand *c = &S->kern[k].c[i];
    if (p->budget >= 0 && spent + c->cc > p->budget * (1 + 1e-12) + 1e-12)
      continue;
    for (int j = 0; j < S->nsc; j++)
      a[S->nsc + j] = a[j] + c->sum[j];
    S->pick[k] = i;
    search(S, k + 1, spent + c->cc);
  }
}

lm_status lm_solve_brute(const lm_solve_problem *p, const lm_solve_opts *o,
                         lm_solve_result *r, lm_error *err) {
  lm_status st = lm_solve_validate(p, o, err);
  if (st)
    return st;
  int nk = p->nkernels, nsc = o->robust ? lm_solve_nscen(p) : 1;
  /* assignments listed, and kernel combinations searched */
  double listed = 0, combos = 1;
  for (int k = 0; k < nk; k++) {
    const lm_solve_kernel *K = &p->kernel[k];
    if (K->nvariants > 16)
      return lm_error_set(err, LM_EINPUT, "brute: kernel %d has %d variants", k,
                          K->nvariants);
    double a = pow(K->nvariants, K->nbuckets);
    listed += a;
    combos *= nsc == 1 ? fmin(a, pow(2, K->nvariants)) : a;
  }
  combos = fmax(combos, listed);
  if (combos > BRUTE_MAX)
    return lm_error_set(err, LM_EINPUT, "brute: %.3g combinations are too many",
                        combos);
  if ((st = lm_solve_result_init(p, r, err)))
    return st;
  Search S = {p,
              calloc((size_t)nk, sizeof(Kern)),
              nsc,
              calloc((size_t)nk, sizeof(int)),
              calloc((size_t)nk, sizeof(int)),
              calloc((size_t)(nk + 1) * nsc, sizeof(double)),
              INFINITY};
  if (!S.kern || !S.pick || !S.bestpick || !S.acc)
    goto oom;
  for (int k = 0; k < nk; k++) {
    const lm_solve_kernel *K = &p->kernel[k];
    int nb = K->nbuckets, nv = K->nvariants;
    long total = (long)pow(nv, nb);
    Kern *kk = &S.kern[k];
    kk->c = calloc((size_t)total, sizeof(Cand));
    if (!kk->c)
      goto oom;
    int a[nb];
    for (long idx = 0; idx < total; idx++) {
      long q = idx;
      unsigned mask = 0;
      int ok = 1;
      for (int s = 0; s < nb; s++) {
        a[s] = (int)(q % nv);
        q /= nv;
        mask |= 1u << a[s];
        ok &= lm_solve_allowed(p, k, s, a[s]);
      }
      if (!ok || (K->cap > 0 && __builtin_popcount(mask) > K->cap))
        continue;
      if (o->threshold)
        for (int s = 1; s < nb && ok; s++)
          if (a[s] != a[s - 1])
            for (int t = 0; t < s - 1; t++)
              ok &= a[t] != a[s];
      if (!ok)
        continue;
      double sum[nsc];
      for (int j = 0; j < nsc; j++) {
        sum[j] = 0;
        for (int s = 0; s < nb; s++)
          sum[j] += K->weight[s] * lm_solve_cost(K, j, s, a[s]);
      }
      int slot = kk->n;
      if (nsc == 1) /* keep the cheapest assignment per used set */
        for (int i = 0; i < kk->n; i++)
          if (kk->c[i].mask == mask) {
            slot = i;
            break;
          }
      Cand *c = &kk->c[slot];
      if (slot < kk->n && c->sum[0] <= sum[0])
        continue;
      if (slot == kk->n) {
        c->choice = malloc(sizeof(int) * (size_t)nb);
        c->sum = malloc(sizeof(double) * (size_t)nsc);
        if (!c->choice || !c->sum)
          goto oom;
        kk->n++;
      }
      memcpy(c->choice, a, sizeof(int) * (size_t)nb);
      memcpy(c->sum, sum, sizeof(double) * (size_t)nsc);
      c->mask = mask;
      c->cc = 0;
      for (int v = 0; v < nv; v++)
        if (mask >> v & 1)
          c->cc += K->compile_cost ? K->compile_cost[v] : 0;
    }
  }
  search(&S, 0, 0);
  if (!isfinite(S.best)) {
    st = lm_error_set(err, LM_EINPUT, "brute: no plan meets the budgets");
    goto error;
  }
  for (int k = 0; k < nk; k++) {
    Cand *c = &S.kern[k].c[S.bestpick[k]];
    for (int s = 0; s < p->kernel[k].nbuckets; s++) {
      r->choice[r->bucket_start[k] + s] = c->choice[s];
      r->compiled[r->variant_start[k] + c->choice[s]] = 1;
    }
  }
  r->objective = r->bound = S.best;
  r->gap = 0;
  r->status = LM_SOLVE_OPTIMAL;
  goto done;
oom:
  st = lm_error_set(err, LM_ESYS, "brute: out of memory");
error:
  lm_solve_result_free(r);
  r->status = LM_SOLVE_INFEASIBLE;
done:
  if (S.kern)
    for (int k = 0; k < nk; k++) {
      for (int i = 0; i < S.kern[k].n; i++) {
        free(S.kern[k].c[i].choice);
        free(S.kern[k].c[i].sum);
      }
      free(S.kern[k].c);
    }
  free(S.kern);
  free(S.pick);
  free(S.bestpick);
  free(S.acc);
  return st;
}
