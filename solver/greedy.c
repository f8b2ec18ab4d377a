/* The greedy plan, and the threshold dynamic program it shares with the
 * exact solver.
 *
 * Greedy starts with nothing compiled, so every bucket is uncovered, and
 * repeatedly compiles the variant with the largest gain: first the number
 * of buckets it newly covers, then the weighted time it saves on the
 * covered ones (per ms of compile cost when a global budget binds).  It
 * stops when nothing fits the caps and the budget or nothing gains.  Its
 * plan warm-starts the MIP and is the fallback incumbent, and its
 * objective is reported beside the optimum.
 *
 * The dynamic program reads the buckets of a kernel in order of R and
 * keeps, per (runs so far, variant of the current run), the cheapest
 * prefix: f'[r][v] = wc[s][v] + min(f[r][v], min_{u != v} f[r-1][u]).  The
 * inner minimum is the best or second best of the previous column, so one
 * kernel costs O(buckets × runs × variants). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "solver/solve_impl.h"

int lm_solve_nscen(const lm_solve_problem *p) {
  return p->nscenarios > 1 ? p->nscenarios : 1;
}

int lm_solve_allowed(const lm_solve_problem *p, int k, int s, int v) {
  const lm_solve_kernel *K = &p->kernel[k];
  for (int j = 0; j < lm_solve_nscen(p); j++)
    if (!isfinite(lm_solve_cost(K, j, s, v)))
      return 0;
  return 1;
}

void lm_solve_weighted(const lm_solve_problem *p, const lm_solve_opts *o, int k,
                       const unsigned char *active, double *out) {
  const lm_solve_kernel *K = &p->kernel[k];
  int nsc = o->robust ? lm_solve_nscen(p) : 1;
  for (int s = 0; s < K->nbuckets; s++)
    for (int v = 0; v < K->nvariants; v++) {
      double c = 0;
      for (int j = 0; j < nsc; j++)
        c += lm_solve_cost(K, j, s, v);
      c /= nsc;
      if ((active && !active[v]) || !lm_solve_allowed(p, k, s, v))
        c = INFINITY;
      out[s * K->nvariants + v] = isfinite(c) ? K->weight[s] * c : INFINITY;
    }
}

int lm_solve_threshold_dp(int nb, int nv, const double *wc, int maxruns,
                          int *choice, double *value) {
  int R = maxruns > 0 && maxruns < nb ? maxruns : nb;
  double *f = malloc(sizeof(double) * (size_t)(R + 1) * nv * 2);
  /* from[(s*(R+1) + r)*nv + v]: -1 continued the run, else the previous
   * run's variant */
  int *from = malloc(sizeof(int) * (size_t)nb * (R + 1) * nv);
  if (!f || !from) {
    free(f);
    free(from);
    return -1;
  }
  double *cur = f, *nxt = f + (size_t)(R + 1) * nv;
  for (int i = 0; i < (R + 1) * nv; i++)
    cur[i] = INFINITY;
  for (int v = 0; v < nv; v++) {
    cur[1 * nv + v] = wc[v];
    from[(0 * (R + 1) + 1) * nv + v] = -1;
  }
  for (int s = 1; s < nb; s++) {
    for (int r = 0; r <= R; r++) {
      /* best and second best of runs r-1 at s-1 */
      int b1 = -1, b2 = -1;
      if (r >= 1)
        for (int u = 0; u < nv; u++) {
          double x = cur[(r - 1) * nv + u];
          if (b1 < 0 || x < cur[(r - 1) * nv + b1]) {
            b2 = b1;
            b1 = u;
          } else if (b2 < 0 || x < cur[(r - 1) * nv + b2])
            b2 = u;
        }
      for (int v = 0; v < nv; v++) {
        double best = cur[r * nv + v];
        int arg = -1;
        int u = b1 == v ? b2 : b1;
        if (r >= 1 && u >= 0 && cur[(r - 1) * nv + u] < best) {
          best = cur[(r - 1) * nv + u];
          arg = u;
        }
        nxt[r * nv + v] = r == 0 ? INFINITY : best + wc[s * nv + v];
        from[((size_t)s * (R + 1) + r) * nv + v] = arg;
      }
    }
    double *t = cur;
    cur = nxt;
    nxt = t;
  }
  int br = -1, bv = -1;
  for (int r = 1; r <= R; r++)
    for (int v = 0; v < nv; v++)
      if (isfinite(cur[r * nv + v]) &&
          (bv < 0 || cur[r * nv + v] < cur[br * nv + bv])) {
        br = r;
        bv = v;
      }
  int ok = -1;
  if (bv >= 0) {
    *value = cur[br * nv + bv];
    for (int s = nb - 1, r = br, v = bv; s >= 0; s--) {
      choice[s] = v;
      int u = from[((size_t)s * (R + 1) + r) * nv + v];
      if (u >= 0) {
        v = u;
        r--;
      }
    }
    ok = 1;
    for (int s = 1; s < nb && ok; s++)
      if (choice[s] != choice[s - 1])
        for (int q = 0; q < s - 1; q++)
          if (choice[q] == choice[s])
            ok = 0;
  }
  free(f);
  free(from);
  return ok;
}

int lm_solve_threshold_set(int nb, int nv, const double *wc, const int *set,
                           int n, int *choice, double *value) {
  int M = 1 << n, st = M * n;
  double *f = malloc(sizeof(double) * (size_t)st * 2);
  int *from = malloc(sizeof(int) * (size_t)nb * st);
  if (!f || !from) {
    free(f);
    free(from);
    return -1;
  }
  /* state (mask, i): variants in mask used, set[i] the current run */
  double *cur = f, *nxt = f + st;
  for (int q = 0; q < st; q++)
    cur[q] = INFINITY;
  for (int i = 0; i < n; i++) {
    cur[(1 << i) * n + i] = wc[set[i]];
    from[(1 << i) * n + i] = -1;
  }
  for (int s = 1; s < nb; s++) {
    for (int q = 0; q < st; q++)
      nxt[q] = INFINITY;
    for (int mask = 1; mask < M; mask++)
      for (int i = 0; i < n; i++) {
        double c = cur[mask * n + i];
        if (!(mask >> i & 1) || !isfinite(c))
          continue;
        for (int j = 0; j < n; j++) {
          if (j != i && (mask >> j & 1))
            continue;
          int m2 = mask | 1 << j, q = m2 * n + j;
          double x = c + wc[s * nv + set[j]];
          if (x < nxt[q]) {
            nxt[q] = x;
            from[(size_t)s * st + q] = mask * n + i;
          }
        }
      }
    double *t = cur;
    cur = nxt;
    nxt = t;
  }
  int bq = -1;
  for (int q = 0; q < st; q++)
    if (isfinite(cur[q]) && (bq < 0 || cur[q] < cur[bq]))
      bq = q;
  if (bq >= 0) {
    *value = cur[bq];
    for (int s = nb - 1, q = bq; s >= 0; s--) {
      choice[s] = set[q % n];
      q = from[(size_t)s * st + q];
    }
  }
  free(f);
  free(from);
  return bq >= 0;
}

/* Gain of compiling v in kernel k given the current per-bucket best: the
 * buckets it would cover (none compiled yet covers them), the weighted
 * time it would take there, and what it would save on the covered ones. */
static void gain(int nb, int nv, const double *wc, const double *best, int v,
                 int *cover, double *fill, double *save) {
  *cover = 0;
  *fill = 0;
  *save = 0;
  for (int s = 0; s < nb; s++) {
    double c = wc[s * nv + v];
    if (!isfinite(c))
      continue;
    if (!isfinite(best[s]))
      ++*cover, *fill += c;
    else if (c < best[s])
      *save += best[s] - c;
  }
}

lm_status lm_solve_greedy(const lm_solve_problem *p, const lm_solve_opts *o,
                          const unsigned char *active, lm_solve_result *r,
                          lm_error *err) {
  lm_status st = lm_solve_start(p, o, r, err);
  if (st)
    return st;
  int nk = p->nkernels, *bs = r->bucket_start, *vs = r->variant_start;
  double *wc = NULL;
  double *best = malloc(sizeof(double) * (size_t)bs[nk]);
  int *cnt = calloc((size_t)nk, sizeof(int));
  int *cover = malloc(sizeof(int) * (size_t)vs[nk]);
  double *save = malloc(sizeof(double) * (size_t)vs[nk]);
  double *fill = malloc(sizeof(double) * (size_t)vs[nk]);
  long wcn = 0;
  for (int k = 0; k < nk; k++)
    wcn += (long)p->kernel[k].nbuckets * p->kernel[k].nvariants;
  wc = malloc(sizeof(double) * (size_t)wcn);
  long *wo = malloc(sizeof(long) * (size_t)(nk + 1));
  if (!wc || !best || !cnt || !cover || !save || !fill || !wo) {
    st = lm_error_set(err, LM_ESYS, "solver: out of memory");
    goto error;
  }
  wo[0] = 0;
  for (int k = 0; k < nk; k++) {
    const lm_solve_kernel *K = &p->kernel[k];
    wo[k + 1] = wo[k] + (long)K->nbuckets * K->nvariants;
    lm_solve_weighted(p, o, k, active ? active + vs[k] : NULL, wc + wo[k]);
  }
  for (int i = 0; i < bs[nk]; i++)
    best[i] = INFINITY;
  for (int k = 0; k < nk; k++)
    for (int v = 0; v < p->kernel[k].nvariants; v++)
      gain(p->kernel[k].nbuckets, p->kernel[k].nvariants, wc + wo[k],
           best + bs[k], v, &cover[vs[k] + v], &fill[vs[k] + v], &save[vs[k] + v]);
  double spent = 0;
  int budget = p->budget >= 0;
  for (;;) {
    int bk = -1, bv = -1;
    double bscore = 0;
    for (int k = 0; k < nk; k++) {
      const lm_solve_kernel *K = &p->kernel[k];
      if (K->cap > 0 && cnt[k] >= K->cap)
        continue;
      for (int v = 0; v < K->nvariants; v++) {
        int i = vs[k] + v;
        double cc = K->compile_cost ? K->compile_cost[v] : 0;
        if (r->compiled[i] || (budget && spent + cc > p->budget))
          continue;
        if (cover[i] == 0 && save[i] <= 0)
          continue;
        /* while buckets are uncovered, among the widest covers the
         * cheapest compile under a compile budget (it must fit), else the
         * fastest on the buckets it covers (with a cap of one variant per
         * kernel the first pick is the plan: the cheapest compile alone
         * made it the enumeration's first variant); then the largest
         * saving (per ms with a budget) */
        double score = cover[i] > 0 ? (budget ? -cc : -fill[i])
                       : budget     ? save[i] / fmax(cc, 1e-9)
                                    : save[i];
        int bc = bk < 0 ? -1 : cover[vs[bk] + bv];
        if (bk < 0 || cover[i] > bc || (cover[i] == bc && score > bscore)) {
          bk = k;
          bv = v;
          bscore = score;
        }
      }
    }
    if (bk < 0)
      break;
    const lm_solve_kernel *K = &p->kernel[bk];
    r->compiled[vs[bk] + bv] = 1;
    cnt[bk]++;
    spent += K->compile_cost ? K->compile_cost[bv] : 0;
    for (int s = 0; s < K->nbuckets; s++) {
      double c = wc[wo[bk] + s * K->nvariants + bv];
      if (c < best[bs[bk] + s]) {
        best[bs[bk] + s] = c;
        r->choice[bs[bk] + s] = bv;
      }
    }
    for (int v = 0; v < K->nvariants; v++)
      gain(K->nbuckets, K->nvariants, wc + wo[bk], best + bs[bk], v,
           &cover[vs[bk] + v], &fill[vs[bk] + v], &save[vs[bk] + v]);
  }
  for (int i = 0; i < bs[nk]; i++)
    if (r->choice[i] < 0) {
      st = lm_error_set(err, LM_EFAIL, "greedy: found no feasible plan");
      goto error;
    }
  if (o->threshold)
    /* Keep the compiled set; dispatch it by threshold. */
    for (int k = 0; k < nk; k++) {
      const lm_solve_kernel *K = &p->kernel[k];
      double *m = malloc(sizeof(double) * (size_t)K->nbuckets * K->nvariants);
      double val;
      int ok = -1;
      if (m) {
        for (int i = 0; i < K->nbuckets * K->nvariants; i++)
          m[i] =
              r->compiled[vs[k] + i % K->nvariants] ? wc[wo[k] + i] : INFINITY;
        int set[16], n = 0;
        for (int v = 0; v < K->nvariants && n < 16; v++)
          if (r->compiled[vs[k] + v])
            set[n++] = v;
        /* the set program has 2^n·n states per bucket */
        if (n <= 10)
          ok = lm_solve_threshold_set(K->nbuckets, K->nvariants, m, set, n,
                                      r->choice + bs[k], &val);
        free(m);
      }
      if (ok != 1) {
        st = lm_error_set(err, LM_EFAIL,
                          "greedy: kernel %d has no threshold plan", k);
        goto error;
      }
      memset(r->compiled + vs[k], 0, (size_t)K->nvariants);
      for (int s = 0; s < K->nbuckets; s++)
        r->compiled[vs[k] + r->choice[bs[k] + s]] = 1;
    }
  if ((st = lm_solve_check(p, o, r, &r->objective, err)))
    goto error; /* a broken invariant of greedy itself */
  r->greedy_objective = r->objective;
  r->bound = -INFINITY;
  r->gap = INFINITY;
  r->status = LM_SOLVE_FEASIBLE;
  free(wc);
  free(best);
  free(cnt);
  free(cover);
  free(save);
  free(fill);
  free(wo);
  return LM_OK;
error:
  free(wc);
  free(best);
  free(cnt);
  free(cover);
  free(save);
  free(fill);
  free(wo);
  lm_solve_result_free(r);
  return st;
}
