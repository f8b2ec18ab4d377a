/* Held-out metrics: what a policy loses against the measured best.
 *
 * Regret on one case is t(chosen) / t(best) - 1.  Over cases, one number
 * cannot say everything, so there are several, each from the literature it
 * is compared with: TenSet's time-weighted score Σt_best / Σt_chosen (a long
 * case weighs more, the way it does in a real workload), the geometric mean
 * of t_chosen / t_best (every case weighs the same, a 2x loss and a 2x win
 * cancel), the median, p90 and max (the tail the targets bound), and the
 * share of cases within the timing noise.  Kendall's τ-b says whether the
 * model ranks variants in measured order, which matters for measured
 * autotuning; the expected minimum of k random measurements is the baseline
 * a model's top-k must beat, computed exactly from order statistics rather
 * than by sampling so that the report is reproducible. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/heldout.h"

const int lm_autotune_budget[LM_AUTOTUNE_BUDGETS] = {1, 2, 3, 5, 10, 20};

static const char *const policy_names[LM_POLICY__COUNT] = {
    "plan",           "cross-isa",     "default-profile", "roofline",
    "always-program", "always-packet", "inductor-like",   "random"};

const char *lm_policy_name(lm_policy p) {
  return (int)p >= 0 && p < LM_POLICY__COUNT ? policy_names[p] : "unknown";
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Linear interpolation between order statistics at q (numpy's default). */
static double quantile(const double *sorted, int n, double q) {
  double pos = q * (n - 1);
  int lo = (int)floor(pos);
  if (lo >= n - 1)
    return sorted[n - 1];
  double f = pos - lo;
  if (f == 0 || sorted[lo + 1] == sorted[lo])
    return sorted[lo]; /* also keeps an infinite regret from giving NAN */
  return sorted[lo] + f * (sorted[lo + 1] - sorted[lo]);
}

/* Two times closer than this (relative) are the same time printed twice. */
#define ROUNDING 1e-9

lm_status lm_regret_stats_compute(const double *t_best, const double *t_chosen,
                                  int n, double tie, lm_regret_stats *out,
                                  lm_error *err) {
  memset(out, 0, sizeof *out);
  out->score = out->geomean = out->median = out->p90 = out->max = out->within =
      NAN;
  if (n < 0)
    return lm_error_set(err, LM_EINPUT, "regret: %d cases", n);
  if (n == 0)
    return LM_OK;
  for (int i = 0; i < n; i++) {
    if (!isfinite(t_best[i]) || t_best[i] <= 0)
      return lm_error_set(err, LM_EINPUT,
                          "t_best[%d]: expected a finite time > 0, got %g", i,
                          t_best[i]);
    if (isnan(t_chosen[i]) || t_chosen[i] <= 0)
      return lm_error_set(err, LM_EINPUT,
                          "t_chosen[%d]: expected a time > 0 (INFINITY: the "
                          "pick failed), got %g",
                          i, t_chosen[i]);
    if (t_chosen[i] < t_best[i] * (1 - ROUNDING))
      return lm_error_set(err, LM_EINPUT, "t_chosen[%d]: %g is below t_best %g",
                          i, t_chosen[i], t_best[i]);
  }
  double *r = malloc((size_t)n * sizeof *r);
  if (!r)
    return lm_error_set(err, LM_ESYS, "out of memory");
  double sb = 0, sc = 0, slog = 0;
  int within = 0;
  for (int i = 0; i < n; i++) {
    double ratio = t_chosen[i] > t_best[i] ? t_chosen[i] / t_best[i] : 1.0;
    r[i] = ratio - 1;
    sb += t_best[i];
    sc += ratio == 1.0 ? t_best[i] : t_chosen[i];
    slog += log(ratio);
    within += r[i] <= tie + ROUNDING;
  }
  qsort(r, (size_t)n, sizeof *r, cmp_double);
  out->n = n;
  out->score = sb / sc;
  out->geomean = exp(slog / n) - 1;
  out->median = quantile(r, n, 0.5);
  out->p90 = quantile(r, n, 0.9);
  out->max = r[n - 1];
  out->within = (double)within / n;
  free(r);
  return LM_OK;
}

static int sign(double d) { return (d > 0) - (d < 0); }

double lm_kendall_tau(const double *x, const double *y, int n) {
  /* τ-b = (nc - nd) / sqrt((n0 - n1)(n0 - n2)), n1 and n2 the pairs tied
   * in x and in y (a pair tied in both counts in both). */
  double conc = 0, n0 = 0, n1 = 0, n2 = 0;
  for (int i = 0; i < n; i++) {
    if (!isfinite(x[i]) || !isfinite(y[i]))
      continue;
    for (int j = i + 1; j < n; j++) {
      if (!isfinite(x[j]) || !isfinite(y[j]))
        continue;
      int sx = sign(x[i] - x[j]), sy = sign(y[i] - y[j]);
      n0++;
      n1 += sx == 0;
      n2 += sy == 0;
      conc += sx * sy;
    }
  }
  if (n0 == 0 || n0 == n1 || n0 == n2)
    return NAN;
  return conc / sqrt((n0 - n1) * (n0 - n2));
}

double lm_expected_min(const double *t, int n, int k) {
  double *s = malloc((size_t)(n > 0 ? n : 1) * sizeof *s);
  if (!s)
    return NAN;
  int m = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(t[i]))
      s[m++] = t[i];
  if (m == 0) {
    free(s);
    return NAN;
  }
  if (k < 1)
    k = 1;
  if (k > m)
    k = m;
  qsort(s, (size_t)m, sizeof *s, cmp_double);
  /* P(min is the i-th smallest, 0-based) = C(m-1-i, k-1) / C(m, k): the
   * other k-1 draws come from the m-1-i larger ones.  p_0 = k/m, and
   * p_{i+1} / p_i = (m-1-i-(k-1)) / (m-1-i). */
  double e = 0, p = (double)k / m;
  for (int i = 0; i <= m - k; i++) {
    e += p * s[i];
    if (m - 1 - i > 0)
      p *= (double)(m - i - k) / (m - 1 - i);
  }
  free(s);
  return e;
}

/* ---- cases ----------------------------------------------------------------
 */

static int timed(const lm_eval_variant *v) {
  return v->verified == 1 && isfinite(v->measured) && v->measured > 0;
}

typedef struct ranked {
  double pred;
  int i;
} ranked;

static int cmp_ranked(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  int nx = !isfinite(x->pred), ny = !isfinite(y->pred);
  if (nx != ny)
    return nx - ny; /* unpredicted last */
  if (!nx && x->pred != y->pred)
    return x->pred < y->pred ? -1 : 1;
  return x->i - y->i;
}

lm_status lm_eval_case_score(lm_eval_case *c, lm_error *err) {
  const char *id = c->id ? c->id : "case";
  if (c->nvariants < 0 || (c->nvariants > 0 && !c->v))
    return lm_error_set(err, LM_EINPUT, "%s: no variants", id);
  for (int p = 0; p < LM_POLICY__COUNT; p++)
    if (c->choice[p] < -1 || c->choice[p] >= c->nvariants)
      return lm_error_set(
          err, LM_EINPUT, "%s: choice[%s] = %d: out of range [0, %d)", id,
          lm_policy_name((lm_policy)p), c->choice[p], c->nvariants);
  int n = c->nvariants, m = 0;
  double *meas = malloc((size_t)(n > 0 ? n : 1) * sizeof *meas);
  double *pred = malloc((size_t)(n > 0 ? n : 1) * sizeof *pred);
  ranked *rk = malloc((size_t)(n > 0 ? n : 1) * sizeof *rk);
  if (!meas || !pred || !rk) {
    free(meas);
    free(pred);
    free(rk);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  int best = -1;
  double sum = 0;
  for (int i = 0; i < n; i++) {
    const lm_eval_variant *v = &c->v[i];
    if (!timed(v))
      continue;
    meas[m] = v->measured;
    pred[m] = v->predicted;
    rk[m] = (ranked){v->predicted, i};
    m++;
    sum += v->measured;
    if (best < 0 || v->measured < c->v[best].measured)
      best = i;
  }
  lm_status st = LM_OK;
  if (m == 0) {
    st = lm_error_set(err, LM_EINPUT, "%s: no variant was verified and timed",
                      id);
    goto done;
  }
  c->best = best;
  c->t_best = c->v[best].measured;
  for (int p = 0; p < LM_POLICY__COUNT; p++) {
    int ch = c->choice[p];
    if (p == LM_POLICY_RANDOM)
      c->t_policy[p] = sum / m;
    else if (ch < 0)
      c->t_policy[p] = NAN; /* the policy made no choice */
    else /* a pick that failed the oracle check loses everything */
      c->t_policy[p] = timed(&c->v[ch]) ? c->v[ch].measured : INFINITY;
  }
  c->tau = lm_kendall_tau(pred, meas, m);
  qsort(rk, (size_t)m, sizeof *rk, cmp_ranked);
  for (int b = 0; b < LM_AUTOTUNE_BUDGETS; b++) {
    int k = lm_autotune_budget[b] < m ? lm_autotune_budget[b] : m;
    double t = INFINITY;
    for (int j = 0; j < k; j++)
      if (c->v[rk[j].i].measured < t)
        t = c->v[rk[j].i].measured;
    c->t_top[b] = t;
    c->t_rand[b] = lm_expected_min(meas, m, lm_autotune_budget[b]);
  }
done:
  free(meas);
  free(pred);
  free(rk);
  return st;
}

lm_status lm_eval_policy_stats(const lm_eval_run *run, lm_policy p,
                               const char *split, lm_regret_stats *out,
                               lm_error *err) {
  if ((int)p < 0 || p >= LM_POLICY__COUNT) {
    memset(out, 0, sizeof *out);
    return lm_error_set(err, LM_EINPUT, "policy %d: unknown", (int)p);
  }
  int n = run->ncases > 0 ? run->ncases : 1;
  double *tb = malloc((size_t)n * sizeof *tb);
  double *tc = malloc((size_t)n * sizeof *tc);
  if (!tb || !tc) {
    free(tb);
    free(tc);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  int m = 0;
  for (int i = 0; i < run->ncases; i++) {
    const lm_eval_case *c = &run->cases[i];
    if (split && (!c->split || strcmp(c->split, split) != 0))
      continue;
    if (!isfinite(c->t_best) || isnan(c->t_policy[p]))
      continue;
    tb[m] = c->t_best;
    tc[m] = c->t_policy[p];
    m++;
  }
  lm_status st = lm_regret_stats_compute(tb, tc, m, LM_REGRET_TIE, out, err);
  free(tb);
  free(tc);
  return st;
}

/* ---- ownership ----------------------------------------------------------- */

void lm_eval_case_free(lm_eval_case *c) {
  if (!c)
    return;
  for (int i = 0; c->v && i < c->nvariants; i++) {
    free(c->v[i].variant);
    free(c->v[i].terms);
    free(c->v[i].times);
  }
  free(c->v);
  free(c->protocol);
  free(c->id);
  free(c->split);
  free(c->kernel);
  free(c->kernel_hash);
  free(c->extra);
  free(c->isa);
  memset(c, 0, sizeof *c);
}

void lm_eval_run_free(lm_eval_run *run) {
  if (!run)
    return;
  for (int i = 0; run->cases && i < run->ncases; i++)
    lm_eval_case_free(&run->cases[i]);
  free(run->cases);
  for (int t = 0; run->term_names && t < run->nterms; t++)
    free(run->term_names[t]);
  free(run->term_names);
  free(run->isa);
  free(run->fingerprint);
  free(run->profile_mode);
  free(run->cross_isa);
  memset(run, 0, sizeof *run);
}
