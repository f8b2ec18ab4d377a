/* Claims about the held-out metrics (heldout/metrics.c), on synthetic
 * timings whose answers are worked out by hand in the comments. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdint.h>
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
  cr_assert_eq(lm_regret_stats_compute(tb, tc, 3, 0.03, &s, &err), LM_OK, "%s",
               err.msg);
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

/* tune-k measures the top k and every near tie of the model's best: the
 * fastest variant, ranked last by the model, is found at k = 1 when the
 * bootstrap cannot tell it from the best, and counted in n_tune. */
Test(metrics, tune_k_adds_the_near_ties_to_the_top_k) {
  /* model order among verified: 50 (10), 40 (20), 60 (30), 30 (40) */
  lm_eval_variant v[] = {mkvar(50, 1, 10), mkvar(40, 1, 20), mkvar(NAN, 0, 5),
                         mkvar(30, 1, 40), mkvar(60, 1, 30)};
  v[0].near_tie = 1; /* the point best is always one of its ties */
  v[3].near_tie = 1;
  lm_eval_case c;
  init_case(&c, v, 5);
  lm_error err = {0};
  cr_assert_eq(lm_eval_case_score(&c, &err), LM_OK, "%s", err.msg);
  double tune[] = {30, 30, 30, 30, 30, 30};
  int n[] = {2, 3, 4, 4, 4, 4}; /* k (clamped to 4 timed) plus the tie */
  for (int b = 0; b < LM_AUTOTUNE_BUDGETS; b++) {
    expect_near(c.t_tune[b], tune[b], "t_tune");
    cr_expect_eq(c.n_tune[b], n[b], "n_tune[%d]", b);
  }
  /* without ties tune-k is the top k */
  for (int i = 0; i < 5; i++)
    v[i].near_tie = 0;
  cr_assert_eq(lm_eval_case_score(&c, &err), LM_OK, "%s", err.msg);
  for (int b = 0; b < LM_AUTOTUNE_BUDGETS; b++)
    expect_near(c.t_tune[b], c.t_top[b], "t_tune without ties");
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
                        "plan-learned",  "roofline",       "always-program",
                        "always-packet", "inductor-like",  "random"};
  for (int p = 0; p < LM_POLICY__COUNT; p++)
    cr_expect_str_eq(lm_policy_name((lm_policy)p), want[p]);
  cr_expect_str_eq(lm_policy_name(LM_POLICY__COUNT), "unknown");
  int budgets[] = {1, 2, 3, 5, 10, 20};
  for (int b = 0; b < LM_AUTOTUNE_BUDGETS; b++)
    cr_expect_eq(lm_autotune_budget[b], budgets[b]);
}

/* ---- confirmation, contention and the bootstrap ------------------------ */

Test(metrics, regrets_use_the_confirmed_times_and_report_the_screening_bias) {
  /* screening: v0 90 (the screening's winner), v1 100, v2 150; confirmed:
   * v0 110, v1 100.  The best is v1 at 100; the plan's pick v0 loses 10%,
   * and the screening best flattered its winner by 90/100 - 1 = -10%. */
  lm_eval_variant v[] = {mkvar(90, 1, 1), mkvar(100, 1, 2), mkvar(150, 1, 3)};
  v[0].confirmed = 110;
  v[1].confirmed = 100;
  lm_eval_case c;
  init_case(&c, v, 3);
  c.choice[LM_POLICY_PLAN] = 0;
  c.choice[LM_POLICY_PROGRAM] = 1;
  lm_error err = {0};
  cr_assert_eq(lm_eval_case_score(&c, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(c.best, 1);
  cr_expect_eq(c.t_best, 100);
  cr_expect_eq(c.t_screen, 90);
  cr_expect_eq(c.t_policy[LM_POLICY_PLAN], 110);
  cr_expect_eq(c.t_policy[LM_POLICY_PROGRAM], 100);
  /* random: the screening mean, 340/3 */
  expect_near(c.t_policy[LM_POLICY_RANDOM], 340.0 / 3, "random");
  lm_eval_run run = {0};
  run.ncases = 1;
  run.cases = &c;
  int n = 0;
  expect_near(lm_eval_screening_bias(&run, &n), -0.1, "bias");
  cr_expect_eq(n, 1);
}

Test(metrics,
     contended_variants_are_never_best_and_contended_plan_picks_are_left_out) {
  /* v0 is the fastest but contended: the best is v1 */
  lm_eval_variant v[] = {mkvar(50, 1, 1), mkvar(60, 1, 2), mkvar(80, 1, 3)};
  v[0].contended = 1;
  lm_eval_case cs[2];
  init_case(&cs[0], v, 3);
  cs[0].choice[LM_POLICY_PLAN] = 2;
  cs[0].choice[LM_POLICY_PACKET] = 0; /* a contended pick: no time */
  lm_error err = {0};
  cr_assert_eq(lm_eval_case_score(&cs[0], &err), LM_OK, "%s", err.msg);
  cr_expect_eq(cs[0].best, 1);
  cr_expect_eq(cs[0].contended, 0);
  cr_expect_eq(cs[0].t_policy[LM_POLICY_PLAN], 80);
  cr_expect(isnan(cs[0].t_policy[LM_POLICY_PACKET]), "contended pick");
  expect_near(cs[0].t_policy[LM_POLICY_RANDOM], 70, "mean of 60 and 80");
  /* the plan picks the contended variant: the case is left out */
  lm_eval_variant w[] = {mkvar(50, 1, 1), mkvar(60, 1, 2)};
  w[0].contended = 1;
  init_case(&cs[1], w, 2);
  cs[1].choice[LM_POLICY_PLAN] = 0;
  cs[1].choice[LM_POLICY_PROGRAM] = 1;
  cr_assert_eq(lm_eval_case_score(&cs[1], &err), LM_OK, "%s", err.msg);
  cr_expect_eq(cs[1].contended, 1);
  for (int p = 0; p < LM_POLICY__COUNT; p++)
    cr_expect(isnan(cs[1].t_policy[p]), "%s counts the case",
              lm_policy_name((lm_policy)p));
  lm_eval_run run = {0};
  run.ncases = 2;
  run.cases = cs;
  lm_regret_stats s;
  cr_assert_eq(lm_eval_policy_stats(&run, LM_POLICY_PLAN, NULL, &s, &err),
               LM_OK);
  cr_expect_eq(s.n, 1, "the contended case is not counted");
  expect_near(s.max, 80.0 / 60 - 1, "plan regret");
  cr_assert_eq(lm_eval_policy_stats(&run, LM_POLICY_PROGRAM, NULL, &s, &err),
               LM_OK);
  cr_expect_eq(s.n, 0, "nor is it for the other policies");
}

Test(metrics, the_confirmation_takes_the_top_five_and_every_pick) {
  /* measured 10..100 by index; v1 unverified, v2 contended: the top five
   * uncontended verified are v0 v3 v4 v5 v6; picks v9 (plan), v7
   * (program), v2 (packet, contended but a pick), v0 (inductor, already
   * in); random picks nothing */
  lm_eval_variant v[10];
  for (int i = 0; i < 10; i++)
    v[i] = mkvar(10.0 * (i + 1), 1, i);
  v[1].verified = 0;
  v[1].measured = NAN;
  v[2].contended = 1;
  lm_eval_case c;
  init_case(&c, v, 10);
  c.choice[LM_POLICY_PLAN] = 9;
  c.choice[LM_POLICY_PROGRAM] = 7;
  c.choice[LM_POLICY_PACKET] = 2;
  c.choice[LM_POLICY_INDUCTOR] = 0;
  c.choice[LM_POLICY_ROOFLINE] = 1; /* unverified: nothing to time */
  unsigned char in[10] = {0};
  cr_expect_eq(lm_eval_confirm_set(&c, LM_EVALUATE_CONFIRM_TOP, in), 8);
  const unsigned char want[10] = {1, 0, 1, 1, 1, 1, 1, 1, 0, 1};
  for (int i = 0; i < 10; i++)
    cr_expect_eq(in[i], want[i], "variant %d", i);
}

Test(metrics, discord_judges_the_picks_timed_twice_and_nothing_else) {
  /* v0..v5 screened at 100; confirmed: v0 300 (a top variant, not a
   * pick), v1 80 (plan: 100/80 - 1 = 25%), v2 150 (program, contended),
   * v3 60 (packet: 100/60 - 1 = 67%), v4 not confirmed (inductor), v5
   * 130 (random: an expectation, not a pick) */
  lm_eval_variant v[6];
  const double conf[6] = {300, 80, 150, 60, 0, 130};
  for (int i = 0; i < 6; i++) {
    v[i] = mkvar(100, 1, i);
    v[i].confirmed = conf[i];
  }
  v[2].contended = 1;
  lm_eval_case c;
  init_case(&c, v, 6);
  cr_expect(isnan(lm_eval_pick_discord(&c)), "no pick: NAN");
  c.choice[LM_POLICY_PLAN] = 1;
  expect_near(lm_eval_pick_discord(&c), 0.25, "faster in confirmation");
  c.choice[LM_POLICY_PROGRAM] = 2;
  c.choice[LM_POLICY_INDUCTOR] = 4;
  c.choice[LM_POLICY_RANDOM] = 5;
  expect_near(lm_eval_pick_discord(&c), 0.25,
              "contended, unconfirmed and random picks are not judged");
  c.choice[LM_POLICY_PACKET] = 3;
  expect_near(lm_eval_pick_discord(&c), 100.0 / 60 - 1, "the largest");
}

/* One synthetic run for the bootstrap: n cases of 4 variants, each with
 * 10 confirmation rounds of base * (1 + amp * u), u uniform in [-1, 1)
 * from a fixed linear congruential stream; the plan picks v1, 5-40% slower
 * than v0, the best. */
enum { BOOT_CASES = 16, BOOT_VARIANTS = 4, BOOT_ROUNDS = 10 };
typedef struct BootRun {
  lm_eval_run run;
  lm_eval_case c[BOOT_CASES];
  lm_eval_variant v[BOOT_CASES][BOOT_VARIANTS];
  double t[BOOT_CASES][BOOT_VARIANTS][BOOT_ROUNDS];
} BootRun;

static void boot_run(BootRun *b, double amp) {
  memset(b, 0, sizeof *b);
  uint64_t x = 12345;
  for (int i = 0; i < BOOT_CASES; i++) {
    double base[BOOT_VARIANTS] = {100, 100 * (1.05 + 0.35 * i / BOOT_CASES),
                                  200, 300};
    for (int j = 0; j < BOOT_VARIANTS; j++) {
      lm_eval_variant *v = &b->v[i][j];
      *v = mkvar(0, 1, j);
      for (int r = 0; r < BOOT_ROUNDS; r++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(x >> 11) / 9007199254740992.0 * 2 - 1;
        b->t[i][j][r] = base[j] * (1 + amp * u);
      }
      v->ctimes = b->t[i][j];
      v->nctimes = BOOT_ROUNDS;
      v->confirmed = lm_timing_median(v->ctimes, BOOT_ROUNDS);
      v->times = b->t[i][j];
      v->ntimes = BOOT_ROUNDS;
      v->measured = v->confirmed;
    }
    init_case(&b->c[i], b->v[i], BOOT_VARIANTS);
    b->c[i].choice[LM_POLICY_PLAN] = 1;
    lm_error err = {0};
    cr_assert_eq(lm_eval_case_score(&b->c[i], &err), LM_OK, "%s", err.msg);
  }
  b->run.ncases = BOOT_CASES;
  b->run.cases = b->c;
}

Test(metrics, bootstrap_intervals_hold_the_point_and_narrow_with_less_noise) {
  static BootRun noisy, quiet;
  boot_run(&noisy, 0.20);
  boot_run(&quiet, 0.02);
  lm_error err = {0};
  lm_regret_stats s;
  lm_regret_interval wide, narrow, again;
  cr_assert_eq(lm_eval_policy_stats(&noisy.run, LM_POLICY_PLAN, NULL, &s, &err),
               LM_OK);
  cr_assert_eq(lm_eval_policy_bootstrap(&noisy.run, LM_POLICY_PLAN, NULL, 0,
                                        LM_BOOTSTRAP_SEED, &wide, &err),
               LM_OK, "%s", err.msg);
  cr_expect_eq(wide.n, BOOT_CASES);
  cr_expect_eq(wide.resamples, LM_BOOTSTRAP_RESAMPLES);
  cr_expect(wide.geomean[0] <= s.geomean && s.geomean <= wide.geomean[1],
            "geomean %g outside [%g, %g]", s.geomean, wide.geomean[0],
            wide.geomean[1]);
  cr_expect(wide.p90[0] <= s.p90 && s.p90 <= wide.p90[1],
            "p90 %g outside [%g, %g]", s.p90, wide.p90[0], wide.p90[1]);
  cr_expect(wide.max[0] <= s.max && s.max <= wide.max[1],
            "max %g outside [%g, %g]", s.max, wide.max[0], wide.max[1]);
  cr_expect_lt(wide.geomean[0], wide.geomean[1], "noise gives a width");
  cr_assert_eq(lm_eval_policy_stats(&quiet.run, LM_POLICY_PLAN, NULL, &s, &err),
               LM_OK);
  cr_assert_eq(lm_eval_policy_bootstrap(&quiet.run, LM_POLICY_PLAN, NULL, 0,
                                        LM_BOOTSTRAP_SEED, &narrow, &err),
               LM_OK, "%s", err.msg);
  cr_expect(narrow.geomean[0] <= s.geomean && s.geomean <= narrow.geomean[1],
            "geomean %g outside [%g, %g]", s.geomean, narrow.geomean[0],
            narrow.geomean[1]);
  cr_expect_lt(narrow.geomean[1] - narrow.geomean[0],
               (wide.geomean[1] - wide.geomean[0]) / 4,
               "a tenth of the noise, a much narrower interval");
  cr_expect_lt(narrow.max[1] - narrow.max[0], wide.max[1] - wide.max[0]);
  /* the seed is fixed: the same interval every time */
  cr_assert_eq(lm_eval_policy_bootstrap(&noisy.run, LM_POLICY_PLAN, NULL, 0,
                                        LM_BOOTSTRAP_SEED, &again, &err),
               LM_OK);
  cr_expect_eq(memcmp(&again, &wide, sizeof again), 0);
}

Test(metrics, bootstrap_of_cases_without_samples_is_the_point) {
  lm_eval_variant v[] = {mkvar(100, 1, 1), mkvar(120, 1, 2)};
  lm_eval_case c;
  init_case(&c, v, 2);
  c.choice[LM_POLICY_PLAN] = 1;
  lm_error err = {0};
  cr_assert_eq(lm_eval_case_score(&c, &err), LM_OK);
  lm_eval_run run = {0};
  run.ncases = 1;
  run.cases = &c;
  lm_regret_interval ci;
  cr_assert_eq(
      lm_eval_policy_bootstrap(&run, LM_POLICY_PLAN, NULL, 50, 7, &ci, &err),
      LM_OK);
  expect_near(ci.geomean[0], 0.2, "lo");
  expect_near(ci.geomean[1], 0.2, "hi");
  cr_expect_eq(
      lm_eval_policy_bootstrap(&run, LM_POLICY__COUNT, NULL, 0, 1, &ci, &err),
      LM_EINPUT);
}
