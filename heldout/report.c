/* The held-out report: one Markdown page that answers "does the plan hold
 * up on work the model never saw, and where does it not?".
 *
 * It reads top to bottom as the argument goes: the setup (so a figure can
 * be traced to a machine and a profile), the per-policy summary against
 * the targets (geomean <= 3%, p90 <= 10%, max <= 25%, and better than every
 * fixed policy and the heuristic), what the model saves a measured
 * autotuner, what recalibrating another ISA target buys, every case, and
 * last the misses: each case the plan loses more than the noise on, with
 * the model term that made the wrong variant look better.  That term is
 * the k maximising terms_k(best) - terms_k(chosen): the model predicted the
 * chosen variant cheaper than the best one, and this is the term that
 * contributed most to that wrong difference. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/heldout.h"

#define TARGET_GEOMEAN 0.03
#define TARGET_P90 0.10
#define TARGET_MAX 0.25

/* A time in ns, printed at a readable scale. */
static const char *fmt_time(double ns, char buf[32]) {
  if (!isfinite(ns))
    snprintf(buf, 32, "-");
  else if (ns < 1e3)
    snprintf(buf, 32, "%.0f ns", ns);
  else if (ns < 1e6)
    snprintf(buf, 32, "%.2f us", ns / 1e3);
  else if (ns < 1e9)
    snprintf(buf, 32, "%.2f ms", ns / 1e6);
  else
    snprintf(buf, 32, "%.3f s", ns / 1e9);
  return buf;
}

static const char *fmt_pct(double x, char buf[32]) {
  if (!isfinite(x))
    snprintf(buf, 32, "-");
  else
    snprintf(buf, 32, "%.1f%%", 100 * x);
  return buf;
}

static int have_cross(const lm_eval_run *run) {
  if (run->cross_isa)
    return 1;
  for (int i = 0; i < run->ncases; i++)
    for (int j = 0; j < run->cases[i].nvariants; j++)
      if (isfinite(run->cases[i].v[j].pred_cross))
        return 1;
  return 0;
}

static int have_learned(const lm_eval_run *run) {
  for (int i = 0; i < run->ncases; i++)
    if (run->cases[i].choice[LM_POLICY_LEARNED] >= 0)
      return 1;
  return 0;
}

/* The policies shown: cross-ISA and plan-learned only when the run has
 * them. */
static int shown(const lm_eval_run *run, lm_policy p) {
  return (p != LM_POLICY_CROSS || have_cross(run)) &&
         (p != LM_POLICY_LEARNED || have_learned(run));
}

static lm_status stats_table(FILE *f, const lm_eval_run *run, const char *split,
                             lm_error *err) {
  char a[32], b[32], c[32], d[32];
  fprintf(f, "| policy | cases | score | geomean | median | p90 | max | "
             "within 3%% |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int p = 0; p < LM_POLICY__COUNT; p++) {
    if (!shown(run, (lm_policy)p))
      continue;
    lm_regret_stats s;
    lm_status st = lm_eval_policy_stats(run, (lm_policy)p, split, &s, err);
    if (st != LM_OK)
      return st;
    if (s.n == 0) {
      fprintf(f, "| %s | 0 | - | - | - | - | - | - |\n",
              lm_policy_name((lm_policy)p));
      continue;
    }
    fprintf(f, "| %s | %d | %.3f | %s | %s | %s | %s | %.0f%% |\n",
            lm_policy_name((lm_policy)p), s.n, s.score, fmt_pct(s.geomean, a),
            fmt_pct(s.median, b), fmt_pct(s.p90, c), fmt_pct(s.max, d),
            100 * s.within);
  }
  fprintf(f, "\n");
  return LM_OK;
}

/* The splits of the run, in order of first appearance. */
static int splits_of(const lm_eval_run *run, const char **out, int cap) {
  int n = 0;
  for (int i = 0; i < run->ncases; i++) {
    const char *s = run->cases[i].split;
    if (!s)
      continue;
    int k = 0;
    while (k < n && strcmp(out[k], s) != 0)
      k++;
    if (k == n && n < cap)
      out[n++] = s;
  }
  return n;
}

/* "[lo, hi]" in percent, or "" when the interval is unknown. */
static const char *fmt_ci(const double ci[2], char buf[48]) {
  if (!isfinite(ci[0]) || !isfinite(ci[1]))
    snprintf(buf, 48, "%s", isnan(ci[0]) ? "" : " [-]");
  else
    snprintf(buf, 48, " [%.1f%%, %.1f%%]", 100 * ci[0], 100 * ci[1]);
  return buf;
}

static lm_status targets(FILE *f, const lm_eval_run *run, lm_error *err) {
  lm_regret_stats plan;
  lm_regret_interval ci;
  lm_status st = lm_eval_policy_stats(run, LM_POLICY_PLAN, NULL, &plan, err);
  if (st == LM_OK)
    st = lm_eval_policy_bootstrap(run, LM_POLICY_PLAN, NULL, 0,
                                  LM_BOOTSTRAP_SEED, &ci, err);
  if (st != LM_OK)
    return st;
  char a[32], b[48];
  fprintf(f, "## Targets\n\n");
  if (plan.n == 0) {
    fprintf(f, "No case has a plan with a measured time.\n\n");
    return LM_OK;
  }
  fprintf(f,
          "The brackets are 95%% bootstrap intervals: the timing rounds of "
          "each case's confirmation resampled %d times (seed fixed), the "
          "same rounds for every variant of a case.\n\n",
          ci.resamples);
  fprintf(f, "| target | plan | met |\n|---|---:|:---:|\n");
  fprintf(f, "| geomean regret <= 3%% | %s%s | %s |\n",
          fmt_pct(plan.geomean, a), fmt_ci(ci.geomean, b),
          plan.geomean <= TARGET_GEOMEAN ? "yes" : "**no**");
  fprintf(f, "| p90 regret <= 10%% | %s%s | %s |\n", fmt_pct(plan.p90, a),
          fmt_ci(ci.p90, b), plan.p90 <= TARGET_P90 ? "yes" : "**no**");
  fprintf(f, "| max regret <= 25%% | %s%s | %s |\n", fmt_pct(plan.max, a),
          fmt_ci(ci.max, b), plan.max <= TARGET_MAX ? "yes" : "**no**");
  static const lm_policy fixed[] = {LM_POLICY_PROGRAM, LM_POLICY_PACKET,
                                    LM_POLICY_INDUCTOR};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++) {
    lm_regret_stats s;
    if ((st = lm_eval_policy_stats(run, fixed[i], NULL, &s, err)) != LM_OK)
      return st;
    if (s.n == 0)
      continue;
    /* "beats": a better geomean and a better time-weighted score */
    int beats = plan.geomean < s.geomean && plan.score > s.score;
    char g[32];
    fprintf(f,
            "| beats %s: geomean %s, score %.3f | geomean %s, score %.3f "
            "| %s |\n",
            lm_policy_name(fixed[i]), fmt_pct(s.geomean, a), s.score,
            fmt_pct(plan.geomean, g), plan.score, beats ? "yes" : "**no**");
  }
  fprintf(f, "\n");
  return LM_OK;
}

/* Is case c unsure: more than one variant the calibrated model cannot tell
 * from its best in the case's bucket? *n gets how many. */
static int unsure_case(const lm_eval_case *c, int *n) {
  *n = 0;
  for (int v = 0; v < c->nvariants; v++)
    *n += c->v[v].near_tie != 0;
  return *n > 1;
}

/* The plan's regret on sure and unsure cases apart: what a pipeline that
 * measures only the unsure buckets leaves on the table. */
static lm_status sureness(FILE *f, const lm_eval_run *run, lm_error *err) {
  int n = run->ncases > 0 ? run->ncases : 1, any = 0;
  for (int i = 0; i < run->ncases; i++)
    for (int v = 0; v < run->cases[i].nvariants; v++)
      any |= run->cases[i].v[v].near_tie;
  if (!any)
    return LM_OK; /* no near ties marked (a profile without resamples) */
  double *tb = malloc((size_t)n * sizeof *tb);
  double *tc = malloc((size_t)n * sizeof *tc);
  if (!tb || !tc) {
    free(tb);
    free(tc);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  fprintf(f, "## Sure and unsure picks\n\nA case is unsure when more than "
             "one variant is within the calibrated profile's bootstrap reach "
             "of its predicted best (the near ties of settling, listed in the "
             "plan's `unsure`); a pipeline can measure those alone "
             "(`lanemap tune --measure 0`).  Plan regret per group, "
             "contended cases left out:\n\n"
             "| picks | cases | near ties per case | geomean | p90 | max | "
             "within 3%% |\n|---|---:|---:|---:|---:|---:|---:|\n");
  lm_status st = LM_OK;
  for (int g = 0; g < 2 && st == LM_OK; g++) {
    int m = 0, ties = 0;
    for (int i = 0; i < run->ncases; i++) {
      const lm_eval_case *c = &run->cases[i];
      int k;
      if (unsure_case(c, &k) != g || !isfinite(c->t_best) ||
          isnan(c->t_policy[LM_POLICY_PLAN]))
        continue;
      tb[m] = c->t_best;
      tc[m] = c->t_policy[LM_POLICY_PLAN];
      ties += k;
      m++;
    }
    lm_regret_stats rs;
    char a[32], b[32], c3[32];
    if ((st = lm_regret_stats_compute(tb, tc, m, LM_REGRET_TIE, &rs, err)) !=
        LM_OK)
      break;
    if (m == 0)
      fprintf(f, "| %s | 0 | - | - | - | - | - |\n", g ? "unsure" : "sure");
    else
      fprintf(f, "| %s | %d | %.1f | %s | %s | %s | %.0f%% |\n",
              g ? "unsure" : "sure", m, (double)ties / m,
              fmt_pct(rs.geomean, a), fmt_pct(rs.p90, b), fmt_pct(rs.max, c3),
              100 * rs.within);
  }
  fprintf(f, "\n");
  free(tb);
  free(tc);
  return st;
}

static lm_status autotune(FILE *f, const lm_eval_run *run, lm_error *err) {
  int n = run->ncases, maxv = 0;
  double *tb = malloc((size_t)(n > 0 ? n : 1) * sizeof *tb);
  double *tt = malloc((size_t)(n > 0 ? n : 1) * sizeof *tt);
  double *tr = malloc((size_t)(n > 0 ? n : 1) * sizeof *tr);
  double *tu = malloc((size_t)(n > 0 ? n : 1) * sizeof *tu);
  double *meas = NULL;
  lm_status st = LM_OK;
  char a[32], b[32], c3[32], c4[32];
  if (!tb || !tt || !tr || !tu) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto done;
  }
  fprintf(f, "## Measured autotuning\n\n"
             "An autotuner with a budget of k measurements either measures "
             "the k variants the calibrated model ranks first (model top-k) "
             "or k variants drawn at random (random-k, its exact "
             "expectation), and keeps the fastest it measured.  tune-k is "
             "what `lanemap tune` measures: the model's top k and every "
             "variant the bootstrap cannot tell from its best (near ties); "
             "variants is how many that is per case, on average, and ms "
             "their timing at this run's screening protocol.  All are "
             "read from the screening round, against its best.\n\n"
             "| k | model top-k score | geomean | within 3%% | tune-k geomean "
             "| max | variants | ms | random-k score | geomean | within 3%% "
             "|\n"
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  double top1 = NAN;
  for (int k = 0; k < LM_AUTOTUNE_BUDGETS; k++) {
    int m = 0;
    double nvar = 0;
    for (int i = 0; i < n; i++) {
      const lm_eval_case *c = &run->cases[i];
      if (!isfinite(c->t_screen) || !isfinite(c->t_top[k]) ||
          !isfinite(c->t_rand[k]) || !isfinite(c->t_tune[k]))
        continue;
      tb[m] = c->t_screen;
      tt[m] = c->t_top[k];
      tr[m] = c->t_rand[k];
      tu[m] = c->t_tune[k];
      nvar += c->n_tune[k];
      m++;
    }
    lm_regret_stats st_t, st_r, st_u;
    if ((st = lm_regret_stats_compute(tb, tt, m, LM_REGRET_TIE, &st_t, err)) !=
            LM_OK ||
        (st = lm_regret_stats_compute(tb, tr, m, LM_REGRET_TIE, &st_r, err)) !=
            LM_OK ||
        (st = lm_regret_stats_compute(tb, tu, m, LM_REGRET_TIE, &st_u, err)) !=
            LM_OK)
      goto done;
    if (m == 0)
      break;
    if (k == 0)
      top1 = st_t.geomean;
    double per = m ? nvar / m : NAN; /* variants per case */
    fprintf(f,
            "| %d | %.3f | %s | %.0f%% | %s | %s | %.1f | %.0f | %.3f | %s | "
            "%.0f%% |\n",
            lm_autotune_budget[k], st_t.score, fmt_pct(st_t.geomean, a),
            100 * st_t.within, fmt_pct(st_u.geomean, c3),
            fmt_pct(st_u.max, c4), per,
            per * run->protocol.samples * run->protocol.sample_ms,
            st_r.score, fmt_pct(st_r.geomean, b), 100 * st_r.within);
  }
  fprintf(f, "\n");
  if (!isfinite(top1))
    goto done;
  /* The smallest random budget whose expected geomean regret is no worse
   * than the model's single measurement (k clamped per case, so k = the
   * largest case's variant count is the exhaustive search). */
  for (int i = 0; i < n; i++)
    if (run->cases[i].nvariants > maxv)
      maxv = run->cases[i].nvariants;
  if (!(meas = malloc((size_t)(maxv > 0 ? maxv : 1) * sizeof *meas))) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto done;
  }
  int equal_k = -1;
  double equal_g = NAN;
  for (int k = 1; k <= maxv && equal_k < 0; k++) {
    double slog = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
      const lm_eval_case *c = &run->cases[i];
      if (!isfinite(c->t_screen) || !isfinite(c->t_top[0]))
        continue;
      int nm = 0;
      for (int j = 0; j < c->nvariants; j++)
        if (c->v[j].verified == 1 && !c->v[j].contended &&
            isfinite(c->v[j].measured))
          meas[nm++] = c->v[j].measured;
      double e = lm_expected_min(meas, nm, k);
      slog += log(e > c->t_screen ? e / c->t_screen : 1.0);
      m++;
    }
    double g = m ? exp(slog / m) - 1 : NAN;
    if (g <= top1 + 1e-12) {
      equal_k = k;
      equal_g = g;
    }
  }
  if (equal_k > 0)
    fprintf(f,
            "The model's top-1 (geomean regret %s) equals random-k at "
            "k = %d (geomean %s): measuring only the model's first pick "
            "saves %d measurement%s per case.\n\n",
            fmt_pct(top1, a), equal_k, fmt_pct(equal_g, b), equal_k - 1,
            equal_k == 2 ? "" : "s");
done:
  free(tb);
  free(tt);
  free(tr);
  free(tu);
  free(meas);
  return st;
}

/* Mean τ over cases of predictions pred(v) against measurements. */
static double mean_tau(const lm_eval_run *run, int which) {
  double sum = 0;
  int m = 0;
  for (int i = 0; i < run->ncases; i++) {
    const lm_eval_case *c = &run->cases[i];
    double *x =
        malloc((size_t)(c->nvariants > 0 ? c->nvariants : 1) * sizeof *x);
    double *y =
        malloc((size_t)(c->nvariants > 0 ? c->nvariants : 1) * sizeof *y);
    int nv = 0;
    for (int j = 0; x && y && j < c->nvariants; j++) {
      const lm_eval_variant *v = &c->v[j];
      if (v->verified != 1 || !isfinite(v->measured))
        continue;
      x[nv] = which == 0   ? v->predicted
              : which == 1 ? v->pred_cross
                           : v->pred_default;
      y[nv++] = v->measured;
    }
    double t = x && y ? lm_kendall_tau(x, y, nv) : NAN;
    free(x);
    free(y);
    if (isfinite(t)) {
      sum += t;
      m++;
    }
  }
  return m ? sum / m : NAN;
}

static lm_status loio(FILE *f, const lm_eval_run *run, lm_error *err) {
  if (!have_cross(run))
    return LM_OK;
  char a[32], b[32], c[32], d[32];
  fprintf(f,
          "## Leave-one-ISA-out\n\n"
          "Evaluated on %s.  The cross-ISA plan uses the profile "
          "calibrated on %s; the plan uses %s's own; the default profile "
          "is uncalibrated.  The difference between the first two rows is "
          "what recalibrating on the new target buys.\n\n"
          "| profile | cases | score | geomean | p90 | max | mean τ |\n"
          "|---|---:|---:|---:|---:|---:|---:|\n",
          run->isa ? run->isa : "?", run->cross_isa ? run->cross_isa : "?",
          run->isa ? run->isa : "?");
  static const lm_policy ps[] = {LM_POLICY_CROSS, LM_POLICY_PLAN,
                                 LM_POLICY_DEFAULT};
  static const int which[] = {1, 0, 2};
  for (int i = 0; i < 3; i++) {
    lm_regret_stats s;
    lm_status st = lm_eval_policy_stats(run, ps[i], NULL, &s, err);
    if (st != LM_OK)
      return st;
    const char *name = i == 0   ? (run->cross_isa ? run->cross_isa : "other")
                       : i == 1 ? (run->isa ? run->isa : "own")
                                : "default";
    double t = mean_tau(run, which[i]);
    if (s.n == 0)
      fprintf(f, "| %s | 0 | - | - | - | - | - |\n", name);
    else
      fprintf(f, "| %s (%s) | %d | %.3f | %s | %s | %s | %s |\n", name,
              lm_policy_name(ps[i]), s.n, s.score, fmt_pct(s.geomean, a),
              fmt_pct(s.p90, b), fmt_pct(s.max, c),
              isfinite(t) ? (snprintf(d, sizeof d, "%.2f", t), d) : "-");
  }
  fprintf(f, "\n");
  return LM_OK;
}

static const char *regret_cell(const lm_eval_case *c, lm_policy p,
                               char buf[32]) {
  if (c->contended || (p != LM_POLICY_RANDOM && c->choice[p] >= 0 &&
                       c->v[c->choice[p]].contended))
    return strcpy(buf, "contended");
  if (isnan(c->t_policy[p]))
    return strcpy(buf, "-");
  if (!isfinite(c->t_policy[p]))
    return strcpy(buf, "unverified");
  return fmt_pct(c->t_policy[p] / c->t_best - 1, buf);
}

static void shape_text(const lm_eval_case *c, char *buf, size_t n) {
  snprintf(buf, n, "%lldx%lld%s%s", (long long)c->R, (long long)c->C,
           c->extra ? " " : "", c->extra ? c->extra : "");
}

static void cases_table(FILE *f, const lm_eval_run *run) {
  char a[32], b[32], sh[96];
  fprintf(f, "## Cases\n\nRegret t/t_best - 1 per policy; τ is Kendall's "
             "τ-b of the calibrated predictions against the measured times "
             "of the verified variants; screening is the screening best "
             "against the confirmed best, t_screen/t_best - 1; verdict is "
             "the noise verdict and the measurements taken.\n\n"
             "| case | split | shape | verified | best variant | t_best | "
             "screening | verdict | plan variant");
  for (int p = 0; p < LM_POLICY__COUNT; p++)
    if (shown(run, (lm_policy)p))
      fprintf(f, " | %s", lm_policy_name((lm_policy)p));
  fprintf(f, " | τ |\n|---|---|---|---:|---|---:|---:|---|---");
  for (int p = 0; p < LM_POLICY__COUNT; p++)
    if (shown(run, (lm_policy)p))
      fprintf(f, "|---:");
  fprintf(f, "|---:|\n");
  for (int i = 0; i < run->ncases; i++) {
    const lm_eval_case *c = &run->cases[i];
    int nver = 0;
    for (int j = 0; j < c->nvariants; j++)
      nver += c->v[j].verified == 1;
    shape_text(c, sh, sizeof sh);
    int pl = c->choice[LM_POLICY_PLAN];
    char bias[32], verdict[32];
    int confirmed = c->best >= 0 && isfinite(c->v[c->best].confirmed);
    fmt_pct(confirmed ? c->t_screen / c->t_best - 1 : NAN, bias);
    if (c->attempts == 0)
      snprintf(verdict, sizeof verdict, "-");
    else
      snprintf(verdict, sizeof verdict, "%s (%d)",
               c->noise.noisy ? "**noisy**" : lm_noise_verdict_name(&c->noise),
               c->attempts);
    fprintf(f, "| %s | %s | %s | %d/%d | `%s` | %s | %s | %s | %s%s%s", c->id,
            c->split ? c->split : "-", sh, nver, c->nvariants,
            c->best >= 0 ? c->v[c->best].variant : "-", fmt_time(c->t_best, a),
            bias, verdict, pl >= 0 ? "`" : "", pl >= 0 ? c->v[pl].variant : "-",
            pl >= 0 ? "`" : "");
    if (c->best < 0) {
      fprintf(f, " | no variant measured");
      for (int p = 1; p < LM_POLICY__COUNT; p++)
        if (shown(run, (lm_policy)p))
          fprintf(f, " |");
      fprintf(f, " | |\n");
      continue;
    }
    for (int p = 0; p < LM_POLICY__COUNT; p++)
      if (shown(run, (lm_policy)p))
        fprintf(f, " | %s", regret_cell(c, (lm_policy)p, b));
    if (isfinite(c->tau))
      fprintf(f, " | %.2f |\n", c->tau);
    else
      fprintf(f, " | - |\n");
  }
  fprintf(f, "\n");
}

/* For a miss: the plan's code variant run with the best's workers and
 * split.  Within LM_REGRET_THREADS of the best, the miss is a threads
 * miss (the workers or the split were wrong, not the mapping). */
static void threads_note(FILE *f, const lm_eval_case *c, int ch) {
  lm_variant vc, vb, vx;
  char a[32], b[32];
  if (lm_variant_parse(c->v[ch].variant, &vc, NULL) != LM_OK ||
      lm_variant_parse(c->v[c->best].variant, &vb, NULL) != LM_OK)
    return;
  if (vc.workers == vb.workers && vc.split == vb.split &&
      vc.per_worker == vb.per_worker && vc.grain == vb.grain) {
    fprintf(f, "  Same workers and split as the best: not a threads miss.\n");
    return;
  }
  for (int j = 0; j < c->nvariants; j++) {
    if (lm_variant_parse(c->v[j].variant, &vx, NULL) != LM_OK ||
        !lm_variant_same_code(&vx, &vc) || vx.workers != vb.workers ||
        vx.split != vb.split || vx.per_worker != vb.per_worker ||
        vx.grain != vb.grain)
      continue;
    const lm_eval_variant *v = &c->v[j];
    /* the confirmation's times when both were confirmed, else screening */
    int conf = v->confirmed > 0 && c->v[c->best].confirmed > 0;
    double t = conf ? v->confirmed : v->measured;
    double tb = conf ? c->t_best : c->v[c->best].measured;
    if (v->verified != 1 || !(t > 0) || v->contended) {
      fprintf(f, "  The plan's mapping with the best's workers and split "
                 "(`%s`) %s.\n",
              v->variant,
              v->verified != 1 ? "failed the oracle check"
              : v->contended   ? "was timed contended"
                               : "was not timed (split pruning)");
      return;
    }
    double x = t / tb - 1;
    fprintf(f, "  The plan's mapping with the best's workers and split "
               "(`%s`): %s, %s from the best: %s.\n",
            v->variant, fmt_time(t, a), fmt_pct(x, b),
            x <= LM_REGRET_THREADS ? "**a threads miss**"
                                   : "the mapping misses too");
    return;
  }
}

static void misses(FILE *f, const lm_eval_run *run) {
  char a[32], b[32], c1[32], c2[32], c3[32], c4[32], sh[96];
  int nmiss = 0;
  fprintf(f,
          "## Misses\n\nEvery case where the plan loses more than %.0f%% "
          "(flagged **>10%%** and **>25%%**, the p90 and max targets).  "
          "The term named is the one by which the model wrongly favoured "
          "its choice: the k maximising terms_k(best) - terms_k(chosen).\n"
          "\n",
          100 * LM_REGRET_TIE);
  for (int i = 0; i < run->ncases; i++) {
    const lm_eval_case *c = &run->cases[i];
    int ch = c->choice[LM_POLICY_PLAN];
    if (c->best < 0 || ch < 0 || c->contended)
      continue; /* a contended case is listed under "Measurement" */
    shape_text(c, sh, sizeof sh);
    const lm_eval_variant *vc = &c->v[ch], *vb = &c->v[c->best];
    if (!isfinite(c->t_policy[LM_POLICY_PLAN])) {
      fprintf(f,
              "- **%s** (%s): the plan's variant `%s` failed "
              "verification; the best is `%s` at %s.\n",
              c->id, sh, vc->variant, vb->variant, fmt_time(c->t_best, a));
      nmiss++;
      continue;
    }
    double r = c->t_policy[LM_POLICY_PLAN] / c->t_best - 1;
    if (r <= LM_REGRET_TIE + 1e-9)
      continue;
    nmiss++;
    fprintf(f,
            "- **%s** (%s): regret %s%s: the plan chose `%s` (predicted "
            "%s, measured %s), the best is `%s` (predicted %s, measured "
            "%s).",
            c->id, sh, fmt_pct(r, a),
            r > TARGET_MAX   ? " **>25%**"
            : r > TARGET_P90 ? " **>10%**"
                             : "",
            vc->variant, fmt_time(vc->predicted, c1),
            fmt_time(vc->measured, c2), vb->variant,
            fmt_time(vb->predicted, c3), fmt_time(vb->measured, c4));
    int k = -1;
    double gap = -INFINITY;
    for (int t = 0; vb->terms && vc->terms && t < run->nterms; t++) {
      double d = vb->terms[t] - vc->terms[t];
      if (isfinite(d) && d > gap) {
        gap = d;
        k = t;
      }
    }
    if (vc->predicted > vb->predicted * (1 + 1e-9))
      fprintf(f,
              " The model predicted the best cheaper (%s against %s): the "
              "solver's choice is not the model's argmin here.\n",
              fmt_time(vb->predicted, a), fmt_time(vc->predicted, b));
    else if (k >= 0 && gap > 0)
      fprintf(f,
              " Mispredicting term: **%s**, %s for the best against %s "
              "for the chosen.\n",
              run->term_names && run->term_names[k] ? run->term_names[k] : "?",
              fmt_time(vb->terms[k], a), fmt_time(vc->terms[k], b));
    else
      fprintf(f, " The model predicts both alike, term by term: a tie the "
                 "solver broke.\n");
    if (r > TARGET_P90)
      threads_note(f, c, ch);
  }
  if (nmiss == 0)
    fprintf(f,
            "None: the plan is within %.0f%% of the best on every "
            "case.\n",
            100 * LM_REGRET_TIE);
  fprintf(f, "\n");
}

/* How the plan's picks ran through the plan's dispatch, for the cases
 * measured so (cases read back from records carry no dispatch time). */
static void dispatched(FILE *f, const lm_eval_run *run) {
  double *r = malloc(sizeof *r * (size_t)(run->ncases + 1));
  int n = 0;
  for (int i = 0; r && i < run->ncases; i++)
    if (isfinite(run->cases[i].dispatch_ratio) &&
        run->cases[i].dispatch_ratio > 0)
      r[n++] = run->cases[i].dispatch_ratio;
  if (n > 0)
    fprintf(f,
            "The plan (plan.json, solved from workload.json) was compiled "
            "and its pick for %d cases launched by shape through its "
            "dispatch, timed in the same rounds as the variants: median "
            "time %.3f of the same variant launched directly. Regrets use "
            "the variant's own time.\n\n",
            n, lm_timing_median(r, n));
  free(r);
}

/* How the cases were measured, what the noise verdicts said, and the
 * screening round's bias against the confirmation. */
static void protocol(FILE *f, const lm_eval_run *run) {
  const lm_eval_protocol *p = &run->protocol;
  const lm_noise_limits *l = &p->limits;
  fprintf(f, "## Measurement\n\n");
  if (p->samples > 0)
    fprintf(f, "- floating point: %s\n",
            p->fp == LM_FP_RELAXED
                ? "**relaxed** (`--fp relaxed`): every kernel that relaxed "
                  "mode changes is judged on its fp=relaxed variants, the "
                  "others on their strict ones (docs/language.md, Relaxed "
                  "floating point); strict figures come from a strict run"
                : "strict (the default; `--fp relaxed` judges the relaxed "
                  "mode in a run of its own)");
  if (p->samples > 0)
    fprintf(f, "- screened: %s\n",
            p->all_splits
                ? "every verified variant (`--all-splits`)"
                : "every verified variant with one worker or a static (or gG) "
                  "split, "
                  "every policy's pick, the model's 20 best and its near "
                  "ties; then the dynK splits of the 3 fastest parallel code "
                  "variants (split pruning, docs/evaluation.md)");
  if (p->samples > 0)
    fprintf(f,
            "- screening: interleaved, %d samples "
            "of %g ms after %g ms of warm-up\n"
            "- confirmation: the %d fastest and every policy's pick again, "
            "interleaved, %d samples; regrets use these times\n"
            "- canary: %s; a noisy case is measured again up to %d more "
            "times, keeping the last\n"
            "- noise limits: canary drift %.0f%%, other processes %.2f "
            "CPU, steal %.0f%%, workers late %.0f us (or none joined), a "
            "policy's pick %.0f%% apart in screening and confirmation "
            "(discord); a spread above %.0f%% alone marks a case unstable, "
            "not noisy\n",
            p->samples, p->sample_ms, p->warmup_ms, p->confirm_top,
            p->confirm_samples, p->canary ? "on" : "off", p->remeasure,
            100 * l->canary_max, l->other_cpus_max, 100 * l->steal_max,
            l->late_ns_max / 1e3, 100 * l->discord_max, 100 * l->spread_max);
  int n = 0;
  lm_eval_verdicts v;
  lm_eval_count_verdicts(run, &v);
  fprintf(f,
          "- verdicts: %d cases quiet (%d of them unstable: spread only), %d "
          "noisy after re-measuring, %d of unknown verdict (records without "
          "one); %d contended (the plan's pick is a parallel variant measured "
          "while its cores were busy: left out of every policy's figures)\n",
          v.quiet, v.unstable, v.noisy, v.unknown, v.contended);
  double bias = lm_eval_screening_bias(run, &n);
  char a[32];
  if (n > 0)
    fprintf(f,
            "- winner's curse: the screening best against the confirmed "
            "best, geomean over %d cases: %s\n",
            n, fmt_pct(bias, a));
  fprintf(f, "\n");
  if (v.noisy + v.contended == 0)
    return;
  fprintf(f, "Cases measured under interference:\n\n");
  for (int i = 0; i < run->ncases; i++) {
    const lm_eval_case *c = &run->cases[i];
    if (!(c->attempts > 0 && c->noise.noisy) && !c->contended)
      continue;
    char why[256];
    lm_noise_describe(&c->noise, l, why, sizeof why);
    fprintf(f, "- **%s**: %s after %d measurement%s%s\n", c->id, why,
            c->attempts, c->attempts == 1 ? "" : "s",
            c->contended ? "; the plan's pick was contended" : "");
  }
  fprintf(f, "\n");
}

/* The split pruning's check, on a run that screened every split: would
 * the rule have kept each case's best?  Simulated on this run's screening
 * times (lm_eval_split_first and _second, the rule the measurement uses). */
static void split_check(FILE *f, const lm_eval_run *run) {
  if (!run->protocol.all_splits)
    return;
  int cases = 0, kept_best = 0, timed = 0, total = 0;
  double worst = 0;
  const char *worst_id = NULL;
  for (int i = 0; i < run->ncases; i++) {
    const lm_eval_case *c = &run->cases[i];
    int n = c->nvariants, all = n > 0 && c->best >= 0, dyn = 0;
    lm_variant *vs = calloc((size_t)(n > 0 ? n : 1), sizeof *vs);
    unsigned char *in = calloc((size_t)(n > 0 ? n : 1), 2);
    for (int j = 0; vs && in && all && j < n; j++) {
      all &= lm_variant_parse(c->v[j].variant, &vs[j], NULL) == LM_OK &&
             (c->v[j].verified != 1 || isfinite(c->v[j].measured));
      dyn += vs[j].split == LM_SPLIT_DYNAMIC || vs[j].math != LM_MATH_SLEEF;
    }
    if (vs && in && all && dyn > 0) { /* the rule pruned something */
      lm_eval_split_first(c, vs, 0, in);
      lm_eval_split_second(c, vs, in, in + n);
      double kept = INFINITY;
      for (int j = 0; j < n; j++) {
        int k = in[j] || in[n + j];
        timed += k && c->v[j].verified == 1;
        total += c->v[j].verified == 1;
        if (k && c->v[j].verified == 1 && !c->v[j].contended)
          kept = fmin(kept, c->v[j].measured);
      }
      cases++;
      double loss = kept / c->v[c->best].measured - 1;
      if (in[c->best] || in[n + c->best] || loss <= 0) {
        kept_best++;
      } else if (loss > worst) {
        worst = loss;
        worst_id = c->id;
      }
    }
    free(vs), free(in);
  }
  if (cases == 0)
    return;
  char a[32];
  fprintf(f,
          "## Split pruning\n\nThis run screened every split.  The pruning "
          "rule, simulated on its screening times, would have timed %d of "
          "%d verified entries (%.0f%%) and kept the best of %d of %d "
          "cases",
          timed, total, total ? 100.0 * timed / total : 0, kept_best, cases);
  if (worst_id)
    fprintf(f, "; where it would not, the best it kept is at most %s slower "
               "(%s)",
            fmt_pct(worst, a), worst_id);
  fprintf(f, ".\n\n");
}

lm_status lm_eval_report_write(const lm_eval_run *run, const char *dir,
                               lm_error *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return lm_error_set(err, LM_ESYS, "report: out of memory");
  lm_status st = LM_OK;
  const char *splits[16];
  int nsplits = splits_of(run, splits, 16);
  int nmeasured = 0;
  for (int i = 0; i < run->ncases; i++)
    nmeasured += isfinite(run->cases[i].t_best);
  fprintf(f, "# Held-out evaluation\n\n## Setup\n\n");
  fprintf(f, "- ISA target: %s\n", run->isa ? run->isa : "?");
  fprintf(f, "- machine type: fingerprint %s%s%s\n",
          run->fingerprint ? run->fingerprint : "?",
          run->node ? ", measured on " : "", run->node ? run->node : "");
  fprintf(f, "- profile: %s\n", run->profile_mode ? run->profile_mode : "?");
  if (run->cross_isa)
    fprintf(f, "- cross-ISA profile: %s\n", run->cross_isa);
  fprintf(f, "- cases: %d (%d measured)", run->ncases, nmeasured);
  for (int s = 0; s < nsplits; s++) {
    int m = 0;
    for (int i = 0; i < run->ncases; i++)
      m += run->cases[i].split && strcmp(run->cases[i].split, splits[s]) == 0;
    fprintf(f, "%s%d %s", s == 0 ? ": " : ", ", m, splits[s]);
  }
  fprintf(f,
          "\n- stage times: calibrate %.1f s%s, measure %.1f s, total "
          "%.1f s\n\n",
          run->calibrate_s, run->calibrate_s == 0 ? " (cached profile)" : "",
          run->measure_s, run->total_s);
  dispatched(f, run);
  protocol(f, run);
  if ((st = targets(f, run, err)) != LM_OK)
    goto done;
  fprintf(f, "## Policies\n\nRegret t(chosen)/t(best) - 1 per case; score "
             "is Σt_best/Σt_chosen; random is the expectation of a uniform "
             "pick.\n\n### All cases\n\n");
  if ((st = stats_table(f, run, NULL, err)) != LM_OK)
    goto done;
  for (int s = 0; s < nsplits; s++) {
    fprintf(f, "### Split %s\n\n", splits[s]);
    if ((st = stats_table(f, run, splits[s], err)) != LM_OK)
      goto done;
  }
  if ((st = sureness(f, run, err)) != LM_OK ||
      (st = autotune(f, run, err)) != LM_OK ||
      (st = loio(f, run, err)) != LM_OK)
    goto done;
  cases_table(f, run);
  misses(f, run);
  split_check(f, run);
done:
  if (fclose(f) != 0 && st == LM_OK)
    st = lm_error_set(err, LM_ESYS, "report: out of memory");
  if (st == LM_OK) {
    size_t dl = strlen(dir);
    char *path = malloc(dl + 16);
    if (!path) {
      st = lm_error_set(err, LM_ESYS, "out of memory");
    } else {
      snprintf(path, dl + 16, "%s/report.md", dir);
      st = lm_file_write_atomic(path, buf, len, err);
      free(path);
    }
  }
  free(buf);
  return st;
}
