/* Exact methods that need no MIP: per kernel, the per-bucket argmin when
 * it fits the cap, else every compile set of at most cap variants when
 * they are few, and for thresholded dispatch the dynamic programs of
 * greedy.c; across kernels, the global budget as a multiple-choice
 * knapsack over each kernel's Pareto front. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "solver/solve_impl.h"

/* Compile sets enumerated per kernel at most (each costs one pass over the
 * buckets); beyond, the kernel goes to GLPK. */
#define ENUM_MAX_SETS 20000

/* Enumerate compile sets of 1..cap of the active variants, depth first,
 * with the per-bucket best of the set so far in cur[depth]. */
/* One compile set of a kernel: its best plan's cost and its compile cost;
 * mask bit i is candidate i. */
typedef struct Point {
  double cost, cc;
  uint64_t mask;
} Point;

typedef struct Enum {
  int nb, nv, cap;
  const double *wc;
  const int *cand;
  int ncand;
  double *cur; /* [(cap + 1) * nb] */
  int *set, *bestset;
  int bestn;
  double best;
  const double *cc; /* compile costs, or NULL */
  Point *pts;       /* when non-NULL, every set is recorded */
  int npts;
} Enum;

static void enum_rec(Enum *e, int depth, int from, uint64_t mask, double cc) {
  const double *c = e->cur + (size_t)depth * e->nb;
  if (depth > 0) {
    double sum = 0;
    for (int s = 0; s < e->nb; s++)
      sum += c[s];
    if (e->pts && isfinite(sum))
      e->pts[e->npts++] = (Point){sum, cc, mask};
    if (sum < e->best) {
      e->best = sum;
      e->bestn = depth;
      memcpy(e->bestset, e->set, sizeof(int) * (size_t)depth);
    }
  }
  if (depth == e->cap)
    return;
  for (int i = from; i < e->ncand; i++) {
    double *n = e->cur + (size_t)(depth + 1) * e->nb;
    int v = e->cand[i];
    for (int s = 0; s < e->nb; s++)
      n[s] = fmin(c[s], e->wc[s * e->nv + v]);
    e->set[depth] = v;
    enum_rec(e, depth + 1, i + 1, mask | (uint64_t)1 << i,
             cc + (e->cc ? e->cc[v] : 0));
  }
}

static double binom_sum(int n, int k) {
  double total = 0, c = 1;
  for (int i = 1; i <= k && i <= n; i++) {
    c = c * (n - i + 1) / i;
    total += c;
  }
  return total;
}

static int cmp_cost(const void *a, const void *b) {
  const Point *x = a, *y = b;
  return x->cost < y->cost ? -1 : x->cost > y->cost;
}

/* Thresholded dispatch under a cap when the run program reused a variant:
 * list every compile set of at most cap variants with its unthresholded
 * cost (a lower bound on its threshold plans), and solve the exact set
 * program (greedy.c) in order of that bound until the bound passes the
 * best plan found. */
static int threshold_sets(const lm_solve_problem *p, int k,
                          const unsigned char *active, const double *wc,
                          int *choice) {
  const lm_solve_kernel *K = &p->kernel[k];
  int nb = K->nbuckets, nv = K->nvariants, cand[nv], ncand = 0, solved = 0;
  for (int v = 0; v < nv; v++)
    if (!active || active[v])
      cand[ncand++] = v;
  int cap = K->cap < ncand ? K->cap : ncand;
  if (cap > 8 || ncand > 62 || binom_sum(ncand, cap) > ENUM_MAX_SETS)
    return 0;
  Enum e = {.nb = nb,
            .nv = nv,
            .cap = cap,
            .wc = wc,
            .cand = cand,
            .ncand = ncand,
            .best = INFINITY};
  e.cur = malloc(sizeof(double) * (size_t)(cap + 1) * nb);
  e.set = malloc(sizeof(int) * (size_t)cap);
  e.bestset = malloc(sizeof(int) * (size_t)cap);
  e.pts = malloc(sizeof(Point) * (size_t)(binom_sum(ncand, cap) + 1));
  int *plan = malloc(sizeof(int) * (size_t)nb);
  if (e.cur && e.set && e.bestset && e.pts && plan) {
    for (int s = 0; s < nb; s++)
      e.cur[s] = INFINITY;
    enum_rec(&e, 0, 0, 0, 0);
    qsort(e.pts, (size_t)e.npts, sizeof(Point), cmp_cost);
    double best = INFINITY;
    for (int i = 0; i < e.npts && e.pts[i].cost < best; i++) {
      int set[8], n = 0;
      for (int b = 0; b < ncand; b++)
        if (e.pts[i].mask >> b & 1)
          set[n++] = cand[b];
      double val;
      if (lm_solve_threshold_set(nb, nv, wc, set, n, plan, &val) == 1 &&
          val < best) {
        best = val;
        memcpy(choice, plan, sizeof(int) * (size_t)nb);
        solved = 1;
      }
    }
  }
  free(e.cur);
  free(e.set);
  free(e.bestset);
  free(e.pts);
  free(plan);
  return solved;
}

int lm_solve_kernel_exact(const lm_solve_problem *p, const lm_solve_opts *o,
                          int k, const unsigned char *active, int *choice) {
  const lm_solve_kernel *K = &p->kernel[k];
  int nb = K->nbuckets, nv = K->nvariants, solved = 0;
  double *wc = malloc(sizeof(double) * (size_t)nb * nv);
  if (!wc)
    return 0;
  lm_solve_weighted(p, o, k, active, wc);
  if (o->threshold) {
    double val;
    solved = lm_solve_threshold_dp(nb, nv, wc, K->cap, choice, &val) == 1;
    if (!solved && K->cap > 0)
      solved = threshold_sets(p, k, active, wc, choice);
    free(wc);
    return solved;
  }
  unsigned char used[nv];
  memset(used, 0, (size_t)nv);
  int nused = 0;
  for (int s = 0; s < nb; s++) {
    int b = -1;
    for (int v = 0; v < nv; v++) {
      double a = wc[s * nv + v];
      /* a bucket of weight 0 still runs its fastest variant */
      if (isfinite(a) &&
          (b < 0 || a < wc[s * nv + b] ||
           (a == wc[s * nv + b] &&
            lm_solve_cost(K, 0, s, v) < lm_solve_cost(K, 0, s, b))))
        b = v;
    }
    choice[s] = b;
    if (b >= 0 && !used[b]++)
      nused++;
  }
  if (K->cap == 0 || nused <= K->cap) {
    free(wc);
    return 1;
  }
  int cand[nv], ncand = 0;
  for (int v = 0; v < nv; v++)
    if (!active || active[v])
      cand[ncand++] = v;
  if (binom_sum(ncand, K->cap) <= ENUM_MAX_SETS) {
    Enum e = {.nb = nb,
              .nv = nv,
              .cap = K->cap,
              .wc = wc,
              .cand = cand,
              .ncand = ncand,
              .best = INFINITY};
    e.cur = malloc(sizeof(double) * (size_t)(K->cap + 1) * nb);
    e.set = malloc(sizeof(int) * (size_t)K->cap);
    e.bestset = malloc(sizeof(int) * (size_t)K->cap);
    if (e.cur && e.set && e.bestset) {
      for (int s = 0; s < nb; s++)
        e.cur[s] = INFINITY;
      enum_rec(&e, 0, 0, 0, 0);
      if (isfinite(e.best)) {
        for (int s = 0; s < nb; s++) {
          int b = e.bestset[0];
          for (int i = 1; i < e.bestn; i++)
            if (wc[s * nv + e.bestset[i]] < wc[s * nv + b])
              b = e.bestset[i];
          choice[s] = b;
        }
        solved = 1;
      }
    }
    free(e.cur);
    free(e.set);
    free(e.bestset);
  }
  free(wc);
  return solved;
}

/* ---- the global budget as a multiple-choice knapsack ---------------------
 *
 * A kernel's plan is worth only its cost and its compile cost, so per
 * kernel only the Pareto front of (compile cost, best plan cost) over its
 * compile sets matters.  When every set of every kernel can be listed, the
 * budget problem is: pick one front point per kernel, Σ cc <= B, min Σ
 * cost -- a multiple-choice knapsack, solved exactly by dynamic program
 * over the budget when compile costs are multiples of a resolution. */

typedef struct Front {
  Point *pt;
  int n;
  int *cand; /* candidate i is variant cand[i] */
} Front;

static int cmp_point(const void *a, const void *b) {
  const Point *x = a, *y = b;
  if (x->cc != y->cc)
    return x->cc < y->cc ? -1 : 1;
  return x->cost < y->cost ? -1 : x->cost > y->cost;
}

/* 1: f holds kernel k's front; 0: too many sets. */
static int kernel_front(const lm_solve_problem *p, const lm_solve_opts *o,
                        int k, const unsigned char *active, Front *f) {
  const lm_solve_kernel *K = &p->kernel[k];
  int nb = K->nbuckets, nv = K->nvariants, ncand = 0;
  memset(f, 0, sizeof *f);
  f->cand = malloc(sizeof(int) * (size_t)nv);
  if (!f->cand)
    return 0;
  for (int v = 0; v < nv; v++)
    if (active[v])
      f->cand[ncand++] = v;
  int cap = K->cap > 0 && K->cap < ncand ? K->cap : ncand;
  if (ncand > 62 || binom_sum(ncand, cap) > ENUM_MAX_SETS)
    return 0;
  double *wc = malloc(sizeof(double) * (size_t)nb * nv);
  Enum e = {.nb = nb,
            .nv = nv,
            .cap = cap,
            .wc = wc,
            .cand = f->cand,
            .ncand = ncand,
            .best = INFINITY,
            .cc = K->compile_cost};
  e.cur = malloc(sizeof(double) * (size_t)(cap + 1) * nb);
  e.set = malloc(sizeof(int) * (size_t)cap);
  e.bestset = malloc(sizeof(int) * (size_t)cap);
  e.pts = malloc(sizeof(Point) * (size_t)(binom_sum(ncand, cap) + 1));
  int ok = wc && e.cur && e.set && e.bestset && e.pts;
  if (ok) {
    lm_solve_weighted(p, o, k, active, wc);
    for (int s = 0; s < nb; s++)
      e.cur[s] = INFINITY;
    enum_rec(&e, 0, 0, 0, 0);
    qsort(e.pts, (size_t)e.npts, sizeof(Point), cmp_point);
    int n = 0;
    for (int i = 0; i < e.npts; i++)
      if (n == 0 || e.pts[i].cost < e.pts[n - 1].cost)
        e.pts[n++] = e.pts[i];
    f->pt = e.pts;
    f->n = n;
    e.pts = NULL;
  }
  free(wc);
  free(e.cur);
  free(e.set);
  free(e.bestset);
  free(e.pts);
  return ok;
}

/* Budget units: the coarsest of 1, 1e-1, ..., 1e-6 ms of which every
 * compile cost is a multiple; 0 if none is or the table would be too big. */
static double budget_unit(const lm_solve_problem *p, const Front *f) {
  for (double u = 1; u >= 1e-6; u /= 10) {
    int ok = p->budget / u <= 4e6;
    for (int k = 0; k < p->nkernels && ok; k++)
      for (int i = 0; i < f[k].n && ok; i++) {
        double q = f[k].pt[i].cc / u;
        ok = fabs(q - nearbyint(q)) <= 1e-9 * fmax(1, q);
      }
    if (ok && (double)p->nkernels * (p->budget / u + 1) <= 1e8)
      return u;
  }
  return 0;
}

int lm_solve_knapsack(const lm_solve_problem *p, const lm_solve_opts *o,
                      const unsigned char *active, lm_solve_result *r) {
  int nk = p->nkernels, ret = 0;
  Front *f = calloc((size_t)nk, sizeof(Front));
  double *dp = NULL, *nx = NULL;
  unsigned short *pick = NULL;
  if (!f)
    return -1;
  for (int k = 0; k < nk; k++)
    if (!kernel_front(p, o, k, active + r->variant_start[k], &f[k]) ||
        f[k].n > 65535)
      goto done;
  double u = budget_unit(p, f);
  if (u == 0)
    goto done;
  long W = (long)floor(p->budget / u + 1e-9) + 1;
  dp = malloc(sizeof(double) * (size_t)W);
  nx = malloc(sizeof(double) * (size_t)W);
  pick = malloc(sizeof(unsigned short) * (size_t)nk * (size_t)W);
  if (!dp || !nx || !pick) {
    ret = -1;
    goto done;
  }
  /* dp[b]: least cost of the kernels so far with compile units <= b */
  for (long b = 0; b < W; b++)
    dp[b] = 0;
  for (int k = 0; k < nk; k++) {
    for (long b = 0; b < W; b++) {
      nx[b] = INFINITY;
      pick[(size_t)k * W + b] = 0;
    }
    for (int i = 0; i < f[k].n; i++) {
      long c = (long)nearbyint(f[k].pt[i].cc / u);
      for (long b = c; b < W; b++)
        if (dp[b - c] + f[k].pt[i].cost < nx[b]) {
          nx[b] = dp[b - c] + f[k].pt[i].cost;
          pick[(size_t)k * W + b] = (unsigned short)i;
        }
    }
    double *t = dp;
    dp = nx;
    nx = t;
  }
  if (!isfinite(dp[W - 1]))
    goto done;
  long b = W - 1;
  for (int k = nk - 1; k >= 0; k--) {
    const lm_solve_kernel *K = &p->kernel[k];
    Point *pt = &f[k].pt[pick[(size_t)k * W + b]];
    b -= (long)nearbyint(pt->cc / u);
    for (int s = 0; s < K->nbuckets; s++) {
      int best = -1;
      for (int i = 0; i < 64; i++)
        if (pt->mask >> i & 1) {
          int v = f[k].cand[i];
          if (lm_solve_allowed(p, k, s, v) &&
              (best < 0 || K->weight[s] * lm_solve_cost(K, 0, s, v) <
                               K->weight[s] * lm_solve_cost(K, 0, s, best)))
            best = v;
        }
      r->choice[r->bucket_start[k] + s] = best;
    }
  }
  ret = 1;
done:
  for (int k = 0; k < nk; k++) {
    free(f[k].pt);
    free(f[k].cand);
  }
  free(f);
  free(dp);
  free(nx);
  free(pick);
  return ret;
}
