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
 * than by sampling so that the report is reproducible.
 *
 * A case's times come from its confirmation round when it has one
 * (heldout/confirm.c), and a parallel variant measured while its cores
 * were busy counts for nothing.  How much the figures would move with
 * other timing rounds is a percentile bootstrap over the rounds: the
 * rounds of a case are resampled together, since interleaving made the
 * variants' samples of one round comparable, and the same rule as the
 * point estimate turns the resampled medians into regrets. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/heldout.h"
#include "lanemap/timing.h"

const int lm_autotune_budget[LM_AUTOTUNE_BUDGETS] = {1, 2, 3, 5, 10, 20};

static const char *const policy_names[LM_POLICY__COUNT] = {
    "plan",           "cross-isa",     "default-profile", "plan-learned", "roofline",
    "always-program", "always-packet", "inductor-like",   "random"};

const char *lm_policy_name(lm_policy p) {
  return (int)p >= 0 && p < LM_POLICY__COUNT ? policy_names[p] : "unknown";
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
  lm_timing_sort(r, n);
  out->n = n;
  out->score = sb / sc;
  out->geomean = exp(slog / n) - 1;
  out->median = lm_timing_quantile_sorted(r, n, 0.5);
  out->p90 = lm_timing_quantile_sorted(r, n, 0.9);
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
  lm_timing_sort(s, m);
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

/* A variant whose screening time counts: verified, timed, uncontended. */
static int timed(const lm_eval_variant *v) {
  return v->verified == 1 && isfinite(v->measured) && v->measured > 0 &&
         !v->contended;
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

/* The case's best and policy times from per-variant times: conf[v] the
 * confirmed time (NAN: not confirmed), screen[v] the screening time.  The
 * one rule lm_eval_case_score and the bootstrap share.  *best -1 when
 * nothing was timed. */
static void case_times(const lm_eval_case *c, const double *conf,
                       const double *screen, int *best, double *t_best,
                       double *t_screen, double t_policy[LM_POLICY__COUNT]) {
  int bs = -1, bc = -1, m = 0;
  double sum = 0;
  for (int i = 0; i < c->nvariants; i++) {
    const lm_eval_variant *v = &c->v[i];
    if (!timed(v) || !(screen[i] > 0))
      continue;
    m++;
    sum += screen[i];
    if (bs < 0 || screen[i] < screen[bs])
      bs = i;
    if (conf[i] > 0 && (bc < 0 || conf[i] < conf[bc]))
      bc = i;
  }
  int confirmed = bc >= 0;
  const double *t = confirmed ? conf : screen;
  *best = confirmed ? bc : bs;
  *t_best = *best >= 0 ? t[*best] : NAN;
  *t_screen = bs >= 0 ? screen[bs] : NAN;
  int plan = c->choice[LM_POLICY_PLAN];
  int left_out = plan >= 0 && c->v[plan].contended;
  for (int p = 0; p < LM_POLICY__COUNT; p++) {
    int ch = c->choice[p];
    if (*best < 0 || left_out)
      t_policy[p] = NAN;
    else if (p == LM_POLICY_RANDOM) /* over every variant: screening times */
      t_policy[p] = fmax(sum / m, *t_best);
    else if (ch < 0 || c->v[ch].contended)
      t_policy[p] = NAN; /* no pick, or one that does not count */
    else if (!timed(&c->v[ch]))
      t_policy[p] = INFINITY; /* a pick that failed the oracle check */
    else if (t[ch] > 0)
      t_policy[p] = t[ch];
    else /* confirmed without this pick (not made by the harness) */
      t_policy[p] = fmax(screen[ch], *t_best);
  }
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
  size_t sz = (size_t)(n > 0 ? n : 1);
  double *meas = malloc(sz * sizeof *meas);
  double *pred = malloc(sz * sizeof *pred);
  double *conf = malloc(sz * sizeof *conf);
  double *screen = malloc(sz * sizeof *screen);
  ranked *rk = malloc(sz * sizeof *rk);
  lm_status st = LM_OK;
  if (!meas || !pred || !conf || !screen || !rk) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    const lm_eval_variant *v = &c->v[i];
    conf[i] = v->confirmed;
    screen[i] = v->measured;
    if (!timed(v))
      continue;
    meas[m] = v->measured;
    pred[m] = v->predicted;
    rk[m] = (ranked){v->predicted, i};
    m++;
  }
  if (m == 0) {
    st = lm_error_set(err, LM_EINPUT,
                      "%s: no variant was verified and timed uncontended", id);
    goto done;
  }
  int plan = c->choice[LM_POLICY_PLAN];
  c->contended = plan >= 0 && c->v[plan].contended;
  case_times(c, conf, screen, &c->best, &c->t_best, &c->t_screen, c->t_policy);
  c->tau = lm_kendall_tau(pred, meas, m);
  /* measured autotuning: screening times, against t_screen */
  qsort(rk, (size_t)m, sizeof *rk, cmp_ranked);
  for (int b = 0; b < LM_AUTOTUNE_BUDGETS; b++) {
    int k = lm_autotune_budget[b] < m ? lm_autotune_budget[b] : m;
    double t = INFINITY;
    for (int j = 0; j < k; j++)
      if (c->v[rk[j].i].measured < t)
        t = c->v[rk[j].i].measured;
    c->t_top[b] = t;
    c->t_rand[b] = lm_expected_min(meas, m, lm_autotune_budget[b]);
    /* tune-k: the top k and every near tie of the model's best */
    double tt = t;
    int n = k;
    for (int j = k; j < m; j++)
      if (c->v[rk[j].i].near_tie) {
        n++;
        tt = fmin(tt, c->v[rk[j].i].measured);
      }
    c->t_tune[b] = tt;
    c->n_tune[b] = n;
  }
done:
  free(meas);
  free(pred);
  free(conf);
  free(screen);
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

/* ---- the bootstrap ----------------------------------------------------- */

/* splitmix64 (Steele, Lea and Flood 2014): a fixed, portable stream, so an
 * interval is the same on every machine. */
static uint64_t next_u64(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Median of x at the rounds idx[0..n), using tmp[n]. */
static double median_at(const double *x, const int *idx, int n, double *tmp) {
  for (int i = 0; i < n; i++)
    tmp[i] = x[idx[i]];
  lm_timing_sort(tmp, n);
  return lm_timing_quantile_sorted(tmp, n, 0.5);
}

/* Rounds of c's confirmation and screening: the sample count its variants
 * share (0 if none has samples). */
static int rounds_of(const lm_eval_case *c, int confirmation) {
  for (int i = 0; i < c->nvariants; i++) {
    int n = confirmation ? c->v[i].nctimes : c->v[i].ntimes;
    if (n > 0)
      return n;
  }
  return 0;
}

/* Every variant's time in one resample of c: the median over rounds drawn
 * with replacement, the same draw for every variant of the round. */
static void resample_case(const lm_eval_case *c, uint64_t *rng, int *idx,
                          double *tmp, double *conf, double *screen) {
  for (int pass = 0; pass < 2; pass++) {
    int confirmation = pass == 0, n = rounds_of(c, confirmation);
    for (int r = 0; r < n; r++)
      idx[r] = (int)(next_u64(rng) % (uint64_t)n);
    for (int i = 0; i < c->nvariants; i++) {
      const lm_eval_variant *v = &c->v[i];
      const double *x = confirmation ? v->ctimes : v->times;
      int nx = confirmation ? v->nctimes : v->ntimes;
      double point = confirmation ? v->confirmed : v->measured;
      double *out = confirmation ? conf : screen;
      out[i] = x && nx == n && n > 0 && isfinite(point)
                   ? median_at(x, idx, n, tmp)
                   : point;
    }
  }
}

static double sorted_quantile(double *v, int n, double q) {
  lm_timing_sort(v, n);
  return lm_timing_quantile_sorted(v, n, q);
}

lm_status lm_eval_policy_bootstrap(const lm_eval_run *run, lm_policy p,
                                   const char *split, int resamples,
                                   uint64_t seed, lm_regret_interval *out,
                                   lm_error *err) {
  memset(out, 0, sizeof *out);
  for (int k = 0; k < 2; k++)
    out->geomean[k] = out->p90[k] = out->max[k] = NAN;
  if ((int)p < 0 || p >= LM_POLICY__COUNT)
    return lm_error_set(err, LM_EINPUT, "policy %d: unknown", (int)p);
  if (resamples <= 0)
    resamples = LM_BOOTSTRAP_RESAMPLES;
  int n = run->ncases, maxv = 1, maxr = 1, m = 0;
  for (int i = 0; i < n; i++) {
    const lm_eval_case *c = &run->cases[i];
    maxv = c->nvariants > maxv ? c->nvariants : maxv;
    for (int j = 0; j < c->nvariants; j++) {
      maxr = c->v[j].ntimes > maxr ? c->v[j].ntimes : maxr;
      maxr = c->v[j].nctimes > maxr ? c->v[j].nctimes : maxr;
    }
  }
  int *in = malloc(sizeof *in * (size_t)(n > 0 ? n : 1));
  int *idx = malloc(sizeof *idx * (size_t)maxr);
  double *tmp = malloc(sizeof *tmp * (size_t)maxr);
  double *conf = malloc(sizeof *conf * (size_t)maxv);
  double *screen = malloc(sizeof *screen * (size_t)maxv);
  double *tb = malloc(sizeof *tb * (size_t)(n > 0 ? n : 1));
  double *tc = malloc(sizeof *tc * (size_t)(n > 0 ? n : 1));
  double *g = malloc(sizeof *g * (size_t)resamples);
  double *q = malloc(sizeof *q * (size_t)resamples);
  double *x = malloc(sizeof *x * (size_t)resamples);
  lm_status st = LM_OK;
  if (!in || !idx || !tmp || !conf || !screen || !tb || !tc || !g || !q || !x) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto done;
  }
  /* the cases lm_eval_policy_stats counts */
  for (int i = 0; i < n; i++) {
    const lm_eval_case *c = &run->cases[i];
    if ((!split || (c->split && strcmp(c->split, split) == 0)) &&
        isfinite(c->t_best) && !isnan(c->t_policy[p]))
      in[m++] = i;
  }
  out->n = m;
  out->resamples = resamples;
  if (m == 0)
    goto done;
  uint64_t rng = seed;
  for (int r = 0; r < resamples && st == LM_OK; r++) {
    for (int k = 0; k < m; k++) {
      const lm_eval_case *c = &run->cases[in[k]];
      double tp[LM_POLICY__COUNT], ts;
      int best;
      resample_case(c, &rng, idx, tmp, conf, screen);
      case_times(c, conf, screen, &best, &tb[k], &ts, tp);
      tc[k] = tp[p];
    }
    lm_regret_stats s;
    st = lm_regret_stats_compute(tb, tc, m, LM_REGRET_TIE, &s, err);
    g[r] = s.geomean;
    q[r] = s.p90;
    x[r] = s.max;
  }
  if (st != LM_OK)
    goto done;
  out->geomean[0] = sorted_quantile(g, resamples, 0.025);
  out->geomean[1] = lm_timing_quantile_sorted(g, resamples, 0.975);
  out->p90[0] = sorted_quantile(q, resamples, 0.025);
  out->p90[1] = lm_timing_quantile_sorted(q, resamples, 0.975);
  out->max[0] = sorted_quantile(x, resamples, 0.025);
  out->max[1] = lm_timing_quantile_sorted(x, resamples, 0.975);
done:
  free(in);
  free(idx);
  free(tmp);
  free(conf);
  free(screen);
  free(tb);
  free(tc);
  free(g);
  free(q);
  free(x);
  return st;
}

void lm_eval_count_verdicts(const lm_eval_run *run, lm_eval_verdicts *out) {
  memset(out, 0, sizeof *out);
  for (int i = 0; i < run->ncases; i++) {
    const lm_eval_case *c = &run->cases[i];
    int seen = c->attempts > 0;
    out->unknown += !seen;
    out->noisy += seen && c->noise.noisy;
    out->quiet += seen && !c->noise.noisy;
    out->unstable += seen && !c->noise.noisy && c->noise.reasons;
    out->contended += c->contended;
  }
}

/* Whether c's best came from a confirmation round. */
static int confirmed_case(const lm_eval_case *c) {
  return c->best >= 0 && c->best < c->nvariants &&
         isfinite(c->v[c->best].confirmed);
}

double lm_eval_screening_bias(const lm_eval_run *run, int *n) {
  double slog = 0;
  int m = 0;
  for (int i = 0; i < run->ncases; i++) {
    const lm_eval_case *c = &run->cases[i];
    if (!confirmed_case(c) || !(c->t_screen > 0) || !(c->t_best > 0))
      continue;
    slog += log(c->t_screen / c->t_best);
    m++;
  }
  if (n)
    *n = m;
  return m ? exp(slog / m) - 1 : NAN;
}

/* ---- ownership ----------------------------------------------------------- */

void lm_eval_case_free(lm_eval_case *c) {
  if (!c)
    return;
  for (int i = 0; c->v && i < c->nvariants; i++) {
    free(c->v[i].variant);
    free(c->v[i].terms);
    free(c->v[i].times);
    free(c->v[i].ctimes);
  }
  free(c->v);
  free(c->protocol);
  free(c->id);
  free(c->split);
  free(c->kernel);
  free(c->kernel_hash);
  free(c->extra);
  free(c->isa);
  free(c->fingerprint);
  free(c->node);
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
  free(run->node);
  free(run->profile_mode);
  free(run->cross_isa);
  memset(run, 0, sizeof *run);
}
