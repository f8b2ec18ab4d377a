/* Claims about the held-out metrics (heldout/metrics.c), on synthetic
 * timings whose answers are worked out by hand in the comments. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/heldout.h"

#define EPS 1e-12

static void expect_near(double got, double want, const char *what) {
  cr_expect(fabs(got - want) <= EPS * (1 + fabs(want)),
            "%s: got %.17g, want %.17g", what, got, want);
}

/* ---- regret statistics --------------------------------------------------- */

Test(metrics, regret_stats_match_hand_values) {
  /* regrets 0, 3%, 10%, 50%, 100% */
  double tb[] = {1, 1, 1, 1, 1}, tc[] = {1, 1.03, 1.1, 1.5, 2};
  lm_regret_stats s;
  lm_error err = {0};
  cr_assert_eq(lm_regret_stats_compute(tb, tc, 5, LM_REGRET_TIE, &s, &err),
               LM_OK, "%s", err.msg);
  cr_expect_eq(s.n, 5);
  expect_near(s.score, 5 / 6.63, "score = 5 / (1 + 1.03 + 1.1 + 1.5 + 2)");
  /* (1 * 1.03 * 1.1 * 1.5 * 2)^(1/5) - 1 */
  expect_near(s.geomean, 0.27723329995561663, "geomean");
  expect_near(s.median, 0.1, "median");
  /* position 0.9 * 4 = 3.6: 0.5 + 0.6 * (1 - 0.5) */
  expect_near(s.p90, 0.8, "p90");
  expect_near(s.max, 1.0, "max");
  /* 0 and 1.03/1 - 1 (which rounds just above 0.03) are noise ties */
  expect_near(s.within, 0.4, "within");
}

Test(metrics, percentiles_interpolate_between_order_statistics) {
  /* regrets 0.4, 0, 0.2, 0.1 (unsorted on purpose), t_best not 1 */
  double tb[] = {10, 20, 5, 2}, tc[] = {14, 20, 6, 2.2};
  lm_regret_stats s;
  lm_error err = {0};
  cr_assert_eq(lm_regret_stats_compute(tb, tc, 4, 0.0, &s, &err), LM_OK);
  expect_near(s.median, 0.15, "median of 0, .1, .2, .4");
  expect_near(s.p90, 0.34, "position 2.7: .2 + .7 * .2");
  expect_near(s.max, 0.4, "max");
  expect_near(s.score, 37.0 / 42.2, "score = Σ t_best / Σ t_chosen");
  expect_near(s.within, 0.25, "only the exact tie is within a 0 tie");
}

Test(metrics, regret_stats_of_no_case_are_empty_not_an_error) {
  lm_regret_stats s;
  lm_error err = {0};
  cr_assert_eq(lm_regret_stats_compute(NULL, NULL, 0, LM_REGRET_TIE, &s, &err),
               LM_OK);
  cr_expect_eq(s.n, 0);
  cr_expect(isnan(s.geomean) && isnan(s.score));
}

Test(metrics, bad_times_are_rejected_naming_the_index) {
  lm_regret_stats s;
  lm_error err = {0};
  double tb[] = {1, 1, 0}, tc[] = {1, 1, 1};
  cr_expect_eq(lm_regret_stats_compute(tb, tc, 3, 0.03, &s, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "t_best[2]"), "%s", err.msg);
  double tb2[] = {1, 1}, tc2[] = {1, NAN};
  cr_expect_eq(lm_regret_stats_compute(tb2, tc2, 2, 0.03, &s, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "t_chosen[1]"), "%s", err.msg);
  double tb3[] = {2}, tc3[] = {1};
  cr_expect_eq(lm_regret_stats_compute(tb3, tc3, 1, 0.03, &s, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "t_chosen[0]") && strstr(err.msg, "below"), "%s",
            err.msg);
  double tb4[] = {1}, tc4[] = {1};
  cr_expect_eq(lm_regret_stats_compute(tb4, tc4, -1, 0.03, &s, &err),
               LM_EINPUT);
}

Test(metrics, a_failed_pick_is_an_infinite_regret_not_a_dropped_case) {
  lm_regret_stats s;
  lm_error err = {0};
  double tb[] = {1, 1, 1}, tc[] = {1, 1.5, INFINITY};
  cr_assert_eq(lm_regret_stats_compute(tb, tc, 3, 0.03, &s, &err), LM_OK,
               "%s", err.msg);
  cr_expect_eq(s.n, 3);
  cr_expect(isinf(s.max) && isinf(s.geomean), "max %g geomean %g", s.max,
            s.geomean);
  cr_expect_eq(s.score, 0);
  cr_expect_float_eq(s.median, 0.5, 1e-12);
  cr_expect_float_eq(s.within, 1.0 / 3, 1e-12);
}

Test(metrics, a_chosen_time_a_rounding_below_best_counts_as_the_best) {
  double tb[] = {1.0}, tc[] = {1.0 - 1e-12};
  lm_regret_stats s;
  lm_error err = {0};
  cr_assert_eq(lm_regret_stats_compute(tb, tc, 1, 0.03, &s, &err), LM_OK);
  cr_expect_eq(s.max, 0.0);
  cr_expect_eq(s.score, 1.0);
}

/* ---- Kendall τ-b -------------------------------------------------------- */

Test(metrics, kendall_tau_without_ties) {
  /* one discordant pair (1, 2) of 6: (5 - 1) / 6 */
  double x[] = {1, 2, 3, 4}, y[] = {1, 3, 2, 4};
  expect_near(lm_kendall_tau(x, y, 4), 4.0 / 6.0, "tau");
  double r[] = {4, 3, 2, 1};
  expect_near(lm_kendall_tau(x, r, 4), -1.0, "reversed");
  expect_near(lm_kendall_tau(x, x, 4), 1.0, "identical");
}

Test(metrics, kendall_tau_b_corrects_for_ties) {
  /* pairs: 4 concordant, (1,2) tied in x, (2,3) tied in y: n0 = 6,
   * n1 = n2 = 1, τ-b = 4 / sqrt(5 * 5) = 0.8 (τ-a would be 4/6) */
  double x[] = {1, 2, 2, 3}, y[] = {1, 2, 3, 3};
  expect_near(lm_kendall_tau(x, y, 4), 0.8, "tau-b");
  /* ties on one side only: x all distinct, y = {1, 1, 2}: n0 = 3, n2 = 1,
   * concordant 2: 2 / sqrt(3 * 2) */
  double a[] = {1, 2, 3}, b[] = {1, 1, 2};
  expect_near(lm_kendall_tau(a, b, 3), 2 / sqrt(6.0), "one-sided ties");
}

Test(metrics, kendall_tau_is_nan_when_undefined_and_skips_nonfinite) {
  double x[] = {1, 2, 3}, same[] = {5, 5, 5};
  cr_expect(isnan(lm_kendall_tau(x, same, 3)), "all ties");
  cr_expect(isnan(lm_kendall_tau(x, x, 1)), "one element");
  cr_expect(isnan(lm_kendall_tau(x, x, 0)), "none");
  double xn[] = {1, NAN, 2}, yn[] = {1, 5, 2};
  expect_near(lm_kendall_tau(xn, yn, 3), 1.0, "the NAN pair is skipped");
}

/* ---- expected minimum ------------------------------------------------------
 */

/* E[min] over every k-subset, by enumeration. */
static double brute_min(const double *t, int n, int k) {
  double sum = 0;
  int count = 0;
  for (unsigned m = 0; m < (1u << n); m++) {
    if (__builtin_popcount(m) != k)
      continue;
    double mn = INFINITY;
    for (int i = 0; i < n; i++)
      if (m & (1u << i) && t[i] < mn)
        mn = t[i];
    sum += mn;
    count++;
  }
  return sum / count;
}

Test(metrics, expected_min_equals_enumeration_of_all_subsets) {
  double t[] = {5.5, 1.25, 9, 3, 3, 7.75, 2, 11};
  for (int n = 1; n <= 8; n++)
    for (int k = 1; k <= n; k++) {
      double want = brute_min(t, n, k), got = lm_expected_min(t, n, k);
      cr_expect(fabs(got - want) <= 1e-12 * want, "n %d k %d: %.17g vs %.17g",
                n, k, got, want);
    }
}

Test(metrics, expected_min_clamps_k_and_skips_nonfinite) {
  double t[] = {4, 2, NAN, 6};
  expect_near(lm_expected_min(t, 4, 0), 4.0, "k 0 is k 1: the mean of 4 2 6");
  expect_near(lm_expected_min(t, 4, 1), 4.0, "k 1: the mean");
  expect_near(lm_expected_min(t, 4, 3), 2.0, "k = the finite count: the min");
  expect_near(lm_expected_min(t, 4, 99), 2.0, "k above n: the min");
  /* k 2 of {2, 4, 6}: min 2 in 2 of 3 pairs, 4 in one: (4 + 4) / 3 */
  expect_near(lm_expected_min(t, 4, 2), 8.0 / 3.0, "k 2");
  cr_expect(isnan(lm_expected_min(t + 2, 1, 1)), "no finite time");
}

/* ---- one case
 * ----------------------------------------------------------------- */

static lm_eval_variant mkvar(double measured, int verified, double predicted) {
  lm_eval_variant v = {0};
  v.variant = NULL;
  v.verified = verified;
  v.measured = measured;
  v.predicted = predicted;
  v.pred_cross = v.pred_default = v.pred_roofline = v.spread = NAN;
  return v;
}

static void init_case(lm_eval_case *c, lm_eval_variant *v, int n) {
  memset(c, 0, sizeof *c);
  c->id = "synthetic";
  c->nvariants = n;
  c->v = v;
  for (int p = 0; p < LM_POLICY__COUNT; p++)
    c->choice[p] = -1;
}

Test(metrics, case_score_fills_every_field) {
  /* measured 50 40 (unverified) 30 60, predicted 10 20 5 40 30 */
  lm_eval_variant v[] = {mkvar(50, 1, 10), mkvar(40, 1, 20), mkvar(NAN, 0, 5),
                         mkvar(30, 1, 40), mkvar(60, 1, 30)};
  lm_eval_case c;
  init_case(&c, v, 5);
  c.choice[LM_POLICY_PLAN] = 1;
  c.choice[LM_POLICY_PROGRAM] = 0;
  c.choice[LM_POLICY_PACKET] = 2; /* failed verification */
  lm_error err = {0};
  cr_assert_eq(lm_eval_case_score(&c, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(c.best, 3);
  cr_expect_eq(c.t_best, 30);
  cr_expect_eq(c.t_policy[LM_POLICY_PLAN], 40);
  cr_expect_eq(c.t_policy[LM_POLICY_PROGRAM], 50);
  cr_expect(isinf(c.t_policy[LM_POLICY_PACKET]), "an unverified pick");
  cr_expect(isnan(c.t_policy[LM_POLICY_INDUCTOR]), "no pick");
  expect_near(c.t_policy[LM_POLICY_RANDOM], 45, "mean of 50 40 30 60");
  /* verified: pred 10 20 40 30 vs meas 50 40 30 60: 2 concordant pairs
   * ((0,3) and (1,3) in verified order), 4 discordant: -2/6 */
  expect_near(c.tau, -1.0 / 3.0, "tau");
  /* model order among verified: 50 (10), 40 (20), 60 (30), 30 (40) */
  double top[] = {50, 40, 40, 30, 30, 30};
  /* random: k 1 the mean; k 2: 30*3/6 + 40*2/6 + 50/6; k 3: 30*3/4 + 40/4 */
  double rnd[] = {45, 30 * 0.5 + 40.0 / 3 + 50.0 / 6, 32.5, 30, 30, 30};
  for (int b = 0; b < LM_AUTOTUNE_BUDGETS; b++) {
    expect_near(c.t_top[b], top[b], "t_top");
    expect_near(c.t_rand[b], rnd[b], "t_rand");
  }
}

Test(metrics, case_score_rejects_a_case_with_nothing_measured) {
  lm_eval_variant v[] = {mkvar(NAN, 0, 1), mkvar(NAN, -1, 2)};
  lm_eval_case c;
  init_case(&c, v, 2);
  lm_error err = {0};
  cr_expect_eq(lm_eval_case_score(&c, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "synthetic: no variant was verified"), "%s",
            err.msg);
}

Test(metrics, case_score_rejects_a_choice_out_of_range) {
  lm_eval_variant v[] = {mkvar(1, 1, 1)};
  lm_eval_case c;
  init_case(&c, v, 1);
  c.choice[LM_POLICY_PLAN] = 1;
  lm_error err = {0};
  cr_expect_eq(lm_eval_case_score(&c, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "choice[plan] = 1"), "%s", err.msg);
  c.choice[LM_POLICY_PLAN] = -2;
  cr_expect_eq(lm_eval_case_score(&c, &err), LM_EINPUT);
}

/* ---- a run ------------------------------------------------------------------
 */

Test(metrics, policy_stats_filter_by_split_and_skip_cases_without_a_pick) {
  lm_eval_case cs[3];
  memset(cs, 0, sizeof cs);
  const char *splits[] = {"operator", "shape", "operator"};
  double best[] = {10, 20, 40}, plan[] = {11, 20, NAN};
  for (int i = 0; i < 3; i++) {
    cs[i].split = (char *)splits[i];
    cs[i].t_best = best[i];
    for (int p = 0; p < LM_POLICY__COUNT; p++)
      cs[i].t_policy[p] = NAN;
    cs[i].t_policy[LM_POLICY_PLAN] = plan[i];
    cs[i].t_policy[LM_POLICY_PROGRAM] = 2 * best[i];
  }
  lm_eval_run run = {0};
  run.ncases = 3;
  run.cases = cs;
  lm_regret_stats s;
  lm_error err = {0};
  cr_assert_eq(lm_eval_policy_stats(&run, LM_POLICY_PLAN, NULL, &s, &err),
               LM_OK);
  cr_expect_eq(s.n, 2, "the third case has no plan time");
  expect_near(s.max, 0.1, "max");
  cr_assert_eq(lm_eval_policy_stats(&run, LM_POLICY_PLAN, "operator", &s, &err),
               LM_OK);
  cr_expect_eq(s.n, 1);
  expect_near(s.geomean, 0.1, "operator geomean");
  cr_assert_eq(
      lm_eval_policy_stats(&run, LM_POLICY_PROGRAM, "operator", &s, &err),
      LM_OK);
  cr_expect_eq(s.n, 2);
  expect_near(s.geomean, 1.0, "always 2x");
  cr_assert_eq(lm_eval_policy_stats(&run, LM_POLICY_PLAN, "none", &s, &err),
               LM_OK);
  cr_expect_eq(s.n, 0);
  cr_expect_eq(lm_eval_policy_stats(&run, LM_POLICY__COUNT, NULL, &s, &err),
               LM_EINPUT);
}

Test(metrics, policy_names_are_the_documented_ones) {
  const char *want[] = {"plan",          "cross-isa",      "default-profile",
                        "roofline",      "always-program", "always-packet",
                        "inductor-like", "random"};
  for (int p = 0; p < LM_POLICY__COUNT; p++)
    cr_expect_str_eq(lm_policy_name((lm_policy)p), want[p]);
  cr_expect_str_eq(lm_policy_name(LM_POLICY__COUNT), "unknown");
  int budgets[] = {1, 2, 3, 5, 10, 20};
  for (int b = 0; b < LM_AUTOTUNE_BUDGETS; b++)
    cr_expect_eq(lm_autotune_budget[b], budgets[b]);
}
