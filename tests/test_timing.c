/* Claims about the timing harness.  Most tests run on a scripted clock that
 * only moves when a fake entry "runs", so calibration, warm-up, round order
 * and statistics are checked exactly and instantly.  The one test on the
 * real clock compares two workloads 20x apart and asserts only that their
 * paired ratio exceeds 2: a relation that holds on a noisy machine, never an
 * absolute time. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/timing.h"

/* ---- a scripted clock and fake entries ---------------------------------- */

#define LOG_MAX 8192

typedef struct fake_world {
  double now; /* the scripted clock, ns */
  int nlog;
  int log_item[LOG_MAX];
  int64_t log_reps[LOG_MAX];
  double log_start[LOG_MAX];
} fake_world;

typedef struct fake_item {
  fake_world *w;
  int id;
  double ns_per_rep;    /* used when script is NULL */
  const double *script; /* ns of the k-th call, whatever reps is */
  int nscript;
  int calls;
  int max_cpus_seen; /* CPUs the caller may run on, at worst, during calls */
} fake_item;

static double fake_clock(void *ctx) { return ((fake_world *)ctx)->now; }

static void fake_run(void *ctx, int64_t reps) {
  fake_item *it = ctx;
  fake_world *w = it->w;
  if (w->nlog < LOG_MAX) {
    w->log_item[w->nlog] = it->id;
    w->log_reps[w->nlog] = reps;
    w->log_start[w->nlog] = w->now;
    w->nlog++;
  }
  if (it->script && it->calls < it->nscript)
    w->now += it->script[it->calls];
  else
    w->now += it->ns_per_rep * (double)reps;
  it->calls++;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) == 0 &&
      CPU_COUNT(&set) > it->max_cpus_seen)
    it->max_cpus_seen = CPU_COUNT(&set);
}

static void fake_opts(lm_timing_opts *o, fake_world *w) {
  lm_timing_defaults(o);
  o->clock_ns = fake_clock;
  o->clock_ctx = w;
  o->pin = 0;
}

/* Entries slower than 2 sample_ms: calibration takes one call with reps = 1
 * and there is no warm-up, so call k >= 1 of an entry is round k-1. */
static void slow_items(fake_world *w, int n, fake_item *fi, lm_timed *items) {
  for (int i = 0; i < n; i++) {
    fi[i] = (fake_item){.w = w, .id = i, .ns_per_rep = 3e6 + 1e5 * i};
    items[i] = (lm_timed){"slow", fake_run, &fi[i]};
  }
}

/* ---- defaults and options ----------------------------------------------- */

Test(timing, defaults_are_the_reference_protocol) {
  lm_timing_opts o;
  lm_timing_defaults(&o);
  cr_assert_eq(o.warmup_ms, 100.0);
  cr_assert_eq(o.samples, 7);
  cr_assert_eq(o.sample_ms, 30.0);
  cr_assert_eq(o.order, LM_ORDER_PERMUTE);
  cr_assert_null(o.clock_ns);
  cr_assert_eq(lm_timing_opts_check(&o, NULL), LM_OK);
}

static void expect_bad_opts(const lm_timing_opts *o, const char *what) {
  fake_world w = {0};
  fake_item fi[1];
  lm_timed items[1];
  slow_items(&w, 1, fi, items);
  lm_timing_result r;
  lm_error err = {0};
  cr_assert_eq(lm_time_compare(o, 1, items, &r, &err), LM_EINPUT, "%s", what);
  cr_assert_neq(err.msg[0], 0, "%s: no message", what);
  cr_assert_null(r.stats, "%s: result not left empty", what);
  cr_assert_eq(fi[0].calls, 0, "%s: the entry ran", what);
  lm_timing_result_free(&r);
}

Test(timing, bad_options_are_einput_and_run_nothing) {
  fake_world w = {0};
  lm_timing_opts o;
  fake_opts(&o, &w);
  o.samples = 0;
  expect_bad_opts(&o, "samples 0");
  fake_opts(&o, &w);
  o.samples = -3;
  expect_bad_opts(&o, "samples -3");
  fake_opts(&o, &w);
  o.sample_ms = 0;
  expect_bad_opts(&o, "sample_ms 0");
  fake_opts(&o, &w);
  o.sample_ms = -1;
  expect_bad_opts(&o, "sample_ms -1");
  fake_opts(&o, &w);
  o.sample_ms = NAN;
  expect_bad_opts(&o, "sample_ms NaN");
  fake_opts(&o, &w);
  o.sample_ms = INFINITY;
  expect_bad_opts(&o, "sample_ms inf");
  fake_opts(&o, &w);
  o.warmup_ms = -1;
  expect_bad_opts(&o, "warmup_ms -1");
  fake_opts(&o, &w);
  o.warmup_ms = NAN;
  expect_bad_opts(&o, "warmup_ms NaN");
  fake_opts(&o, &w);
  o.order = (lm_timing_order)7;
  expect_bad_opts(&o, "order 7");
}

Test(timing, bad_entries_are_einput) {
  fake_world w = {0};
  lm_timing_opts o;
  fake_opts(&o, &w);
  fake_item fi[2];
  lm_timed items[2];
  slow_items(&w, 2, fi, items);
  lm_timing_result r;
  lm_error err = {0};
  cr_assert_eq(lm_time_compare(&o, 0, items, &r, &err), LM_EINPUT);
  cr_assert_eq(lm_time_compare(&o, -1, items, &r, &err), LM_EINPUT);
  cr_assert_eq(lm_time_compare(&o, 2, NULL, &r, &err), LM_EINPUT);
  cr_assert_eq(lm_time_compare(&o, 2, items, NULL, &err), LM_EINPUT);
  items[1].run = NULL;
  cr_assert_eq(lm_time_compare(&o, 2, items, &r, &err), LM_EINPUT);
  cr_assert_eq(fi[0].calls, 0);
  cr_assert_eq(lm_time_one(&o, NULL, &r, &err), LM_EINPUT);
}

/* ---- calibration and warm-up -------------------------------------------- */

Test(timing, calibration_makes_one_sample_last_sample_ms) {
  fake_world w = {0};
  lm_timing_opts o;
  fake_opts(&o, &w);
  o.sample_ms = 1.0; /* 1e6 ns */
  o.warmup_ms = 0;
  o.samples = 5;
  fake_item fi = {.w = &w, .id = 0, .ns_per_rep = 1000};
  lm_timed it = {"k1000", fake_run, &fi};
  lm_timing_result r;
  lm_error err = {0};
  cr_assert_eq(lm_time_one(&o, &it, &r, &err), LM_OK, "%s", err.msg);
  /* Doubling 1, 2, ..., 256 reaches a quarter sample; scaling gives 1000. */
  cr_assert_eq(r.stats[0].reps, 1000);
  for (int k = 0; k < 9; k++)
    cr_assert_eq(w.log_reps[k], INT64_C(1) << k, "probe %d", k);
  cr_assert_eq(r.stats[0].p50, 1000.0, "ns per call, not per sample");
  cr_assert_eq(r.stats[0].min, 1000.0);
  cr_assert_eq(r.stats[0].max, 1000.0);
  cr_assert_eq(r.stats[0].spread, 0.0);
  cr_assert_str_eq(r.stats[0].name, "k1000");
  lm_timing_result_free(&r);
}

Test(timing, warmup_spans_warmup_ms_and_runs_every_entry) {
  fake_world w = {0};
  lm_timing_opts o;
  fake_opts(&o, &w);
  o.sample_ms = 1.0;
  o.warmup_ms = 5.0;
  o.samples = 3;
  fake_item fi[2] = {{.w = &w, .id = 0, .ns_per_rep = 1000},
                     {.w = &w, .id = 1, .ns_per_rep = 500}};
  lm_timed items[2] = {{"a", fake_run, &fi[0]}, {"b", fake_run, &fi[1]}};
  lm_timing_result r;
  lm_error err = {0};
  cr_assert_eq(lm_time_compare(&o, 2, items, &r, &err), LM_OK, "%s", err.msg);
  /* The rounds are the last 2*3 calls; calibration calls have power-of-two
   * reps; what lies between is the warm-up. */
  int first_round = w.nlog - 2 * 3;
  int first_warm = -1;
  int warmed[2] = {0, 0};
  for (int k = 0; k < first_round; k++) {
    int64_t reps = w.log_reps[k];
    int pow2 = reps > 0 && (reps & (reps - 1)) == 0;
    if (!pow2 || first_warm >= 0) {
      if (first_warm < 0)
        first_warm = k;
      warmed[w.log_item[k]]++;
    }
  }
  cr_assert_geq(first_warm, 0, "no warm-up calls");
  double warm_ns = w.log_start[first_round] - w.log_start[first_warm];
  cr_assert_geq(warm_ns, 5e6, "warm-up lasted %g ns", warm_ns);
  cr_assert_gt(warmed[0], 0);
  cr_assert_gt(warmed[1], 0);
  lm_timing_result_free(&r);
}

/* ---- rounds and their order --------------------------------------------- */

static int perm_index(const int *p, int n) {
  int code = 0;
  for (int i = 0; i < n; i++)
    code = code * n + p[i];
  return code;
}

/* Runs n slow fake entries for `samples` rounds and checks that the calls
 * of round r came in out.order[r] and lm_timing_round_order's order. */
static void run_and_check_order(lm_timing_order order, int n, int samples,
                                lm_timing_result *r) {
  static fake_world w;
  memset(&w, 0, sizeof w);
  lm_timing_opts o;
  fake_opts(&o, &w);
  o.sample_ms = 1.0;
  o.warmup_ms = 0;
  o.samples = samples;
  o.order = order;
  fake_item fi[8];
  lm_timed items[8];
  slow_items(&w, n, fi, items);
  lm_error err = {0};
  cr_assert_eq(lm_time_compare(&o, n, items, r, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(w.nlog, n + n * samples, "calibration must be 1 call each");
  int perm[8];
  for (int rd = 0; rd < samples; rd++) {
    lm_timing_round_order(order, n, rd, perm);
    for (int k = 0; k < n; k++) {
      int called = w.log_item[n + rd * n + k];
      cr_assert_eq(called, r->order[rd * n + k], "round %d pos %d", rd, k);
      cr_assert_eq(called, perm[k], "round %d pos %d", rd, k);
    }
  }
}

Test(timing, permute_order_visits_all_permutations_of_3_then_repeats) {
  lm_timing_result r;
  run_and_check_order(LM_ORDER_PERMUTE, 3, 12, &r);
  int seen[27] = {0};
  for (int rd = 0; rd < 6; rd++)
    seen[perm_index(&r.order[rd * 3], 3)]++;
  int distinct = 0;
  for (int c = 0; c < 27; c++)
    distinct += seen[c] == 1;
  cr_assert_eq(distinct, 6, "rounds 0-5 are not the 6 permutations");
  for (int rd = 6; rd < 12; rd++)
    for (int k = 0; k < 3; k++)
      cr_assert_eq(r.order[rd * 3 + k], r.order[(rd - 6) * 3 + k]);
  lm_timing_result_free(&r);
}

Test(timing, permute_order_puts_every_entry_in_every_position_per_n_rounds) {
  for (int n = 2; n <= LM_TIMING_PERMUTE_MAX; n++) {
    lm_timing_result r;
    run_and_check_order(LM_ORDER_PERMUTE, n, 2 * n, &r);
    for (int block = 0; block < 2; block++) {
      int count[5][5] = {{0}};
      for (int rd = block * n; rd < (block + 1) * n; rd++)
        for (int k = 0; k < n; k++)
          count[r.order[rd * n + k]][k]++;
      for (int i = 0; i < n; i++)
        for (int k = 0; k < n; k++)
          cr_assert_eq(count[i][k], 1, "n=%d entry %d position %d", n, i, k);
    }
    lm_timing_result_free(&r);
  }
}

Test(timing, permute_sequence_covers_all_n_factorial_permutations) {
  int perm[5];
  for (int n = 1; n <= LM_TIMING_PERMUTE_MAX; n++) {
    int fact = 1;
    for (int i = 2; i <= n; i++)
      fact *= i;
    static char seen[3125];
    memset(seen, 0, sizeof seen);
    for (int rd = 0; rd < fact; rd++) {
      lm_timing_round_order(LM_ORDER_PERMUTE, n, rd, perm);
      int used = 0;
      for (int k = 0; k < n; k++)
        used |= 1 << perm[k];
      cr_assert_eq(used, (1 << n) - 1, "n=%d round %d is no permutation", n,
                   rd);
      int code = perm_index(perm, n);
      cr_assert_eq(seen[code], 0, "n=%d round %d repeats early", n, rd);
      seen[code] = 1;
    }
  }
}

/* Beyond 5 entries, a Williams design: a fixed predecessor would carry
 * whatever state it leaves (a parked pool, a cold cache, a frequency
 * change) into every sample of the entry after it. */
Test(timing, more_than_5_entries_follow_every_other_entry_equally_often) {
  for (int n = 6; n <= 11; n++) {
    int period = n % 2 ? 2 * n : n;
    int pos[12][12] = {{0}}, after[12][12] = {{0}};
    for (int rd = 0; rd < period; rd++) {
      int perm[12];
      lm_timing_round_order(LM_ORDER_PERMUTE, n, rd, perm);
      int used = 0;
      for (int k = 0; k < n; k++) {
        cr_assert(perm[k] >= 0 && perm[k] < n);
        used |= 1 << perm[k];
        pos[perm[k]][k]++;
        if (k > 0)
          after[perm[k]][perm[k - 1]]++;
      }
      cr_assert_eq(used, (1 << n) - 1, "n=%d round %d is no permutation", n, rd);
    }
    for (int a = 0; a < n; a++)
      for (int b = 0; b < n; b++) {
        cr_assert_eq(pos[a][b], period / n, "n=%d: entry %d at position %d", n,
                     a, b);
        if (a != b)
          cr_assert_eq(after[a][b], period / n, "n=%d: %d right after %d", n,
                       a, b);
      }
  }
  /* the harness runs the rounds in that order */
  lm_timing_result r;
  run_and_check_order(LM_ORDER_PERMUTE, 6, 8, &r);
  for (int rd = 0; rd < 8; rd++) {
    int perm[6];
    lm_timing_round_order(LM_ORDER_PERMUTE, 6, rd, perm);
    for (int k = 0; k < 6; k++)
      cr_assert_eq(r.order[rd * 6 + k], perm[k]);
  }
  lm_timing_result_free(&r);
}

Test(timing, abab_order_is_fixed) {
  lm_timing_result r;
  run_and_check_order(LM_ORDER_ABAB, 3, 5, &r);
  for (int rd = 0; rd < 5; rd++)
    for (int k = 0; k < 3; k++)
      cr_assert_eq(r.order[rd * 3 + k], k);
  lm_timing_result_free(&r);
}

/* ---- statistics and paired ratios --------------------------------------- */

Test(timing, ratio_is_the_median_of_per_round_ratios_not_a_ratio_of_medians) {
  fake_world w = {0};
  lm_timing_opts o;
  fake_opts(&o, &w);
  o.sample_ms = 1.0;
  o.warmup_ms = 0;
  o.samples = 3;
  /* Call 0 is calibration (>= 2 sample_ms, so reps = 1); calls 1-3 are the
   * rounds.  Per round a/b = 0.5, 2, 0.5: paired median 0.5, while both
   * medians are 4e6 and their ratio would be 1. */
  static const double sa[] = {3e6, 2e6, 4e6, 8e6};
  static const double sb[] = {3e6, 4e6, 2e6, 16e6};
  fake_item fi[2] = {{.w = &w, .id = 0, .script = sa, .nscript = 4},
                     {.w = &w, .id = 1, .script = sb, .nscript = 4}};
  lm_timed items[2] = {{"a", fake_run, &fi[0]}, {"b", fake_run, &fi[1]}};
  lm_timing_result r;
  lm_error err = {0};
  cr_assert_eq(lm_time_compare(&o, 2, items, &r, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(r.stats[0].reps, 1);
  cr_assert_eq(r.stats[0].p50, 4e6);
  cr_assert_eq(r.stats[1].p50, 4e6);
  cr_assert_eq(r.ratio[0 * 2 + 1], 0.5);
  cr_assert_eq(r.ratio[1 * 2 + 0], 2.0);
  cr_assert_eq(lm_timing_paired_ratio(sa + 1, sb + 1, 3), 0.5);
  lm_timing_result_free(&r);
}

Test(timing, statistics_of_scripted_samples_are_exact) {
  fake_world w = {0};
  lm_timing_opts o;
  fake_opts(&o, &w);
  o.sample_ms = 1.0;
  o.warmup_ms = 0;
  o.samples = 5;
  static const double s[] = {9e6, 5e6, 3e6, 4e6, 2e6, 6e6};
  fake_item fi = {.w = &w, .id = 0, .script = s, .nscript = 6};
  lm_timed it = {NULL, fake_run, &fi};
  lm_timing_result r;
  lm_error err = {0};
  cr_assert_eq(lm_time_one(&o, &it, &r, &err), LM_OK, "%s", err.msg);
  const lm_timing_stats *st = &r.stats[0];
  cr_assert_null(st->name);
  cr_assert_eq(r.nsamples, 5);
  for (int k = 0; k < 5; k++)
    cr_assert_eq(st->samples[k], s[k + 1], "samples are kept in round order");
  cr_assert_eq(st->min, 2e6);
  cr_assert_eq(st->max, 6e6);
  cr_assert_eq(st->p50, 4e6);
  cr_assert_float_eq(st->mean, 4e6, 1e-6);
  /* sorted 2 3 4 5 6 (e6): p25 = 3e6, p75 = 5e6 */
  cr_assert_float_eq(st->spread, 0.5, 1e-12);
  lm_timing_result_free(&r);
}

Test(timing, median_and_paired_ratio_of_small_arrays_are_exact) {
  const double odd[] = {5, 1, 3};
  const double even[] = {4, 1, 3, 2};
  cr_assert_eq(lm_timing_median(odd, 3), 3.0);
  cr_assert_eq(lm_timing_median(even, 4), 2.5);
  cr_assert(isnan(lm_timing_median(odd, 0)));
  cr_assert_eq(odd[0], 5.0, "the input must not be sorted in place");
  const double a[] = {1, 2, 3}, b[] = {2, 2, 2};
  cr_assert_eq(lm_timing_paired_ratio(a, b, 3), 1.0);
}

Test(timing, sorted_quantiles_interpolate_and_keep_infinities) {
  double v[] = {4, INFINITY, 1, 3, 2, INFINITY};
  lm_timing_sort(v, 6);
  const double want[] = {1, 2, 3, 4, INFINITY, INFINITY};
  for (int i = 0; i < 6; i++)
    cr_assert_eq(v[i], want[i], "v[%d] = %g", i, v[i]);
  cr_assert_eq(lm_timing_quantile_sorted(v, 6, 0), 1.0);
  cr_assert_eq(lm_timing_quantile_sorted(v, 6, 0.5), 3.5);
  cr_assert_eq(lm_timing_quantile_sorted(v, 4, 0.5), 2.5);
  cr_assert_eq(lm_timing_quantile_sorted(v, 4, 0.25), 1.75);
  /* between 4 and infinity: infinity; between two infinities too, not
   * the NaN of inf + 0.x * (inf - inf) */
  cr_assert(isinf(lm_timing_quantile_sorted(v, 6, 0.7)));
  cr_assert(isinf(lm_timing_quantile_sorted(v, 6, 0.9)));
  cr_assert(isinf(lm_timing_quantile_sorted(v, 6, 1)));
  double one = 7;
  lm_timing_sort(&one, 1);
  cr_assert_eq(lm_timing_quantile_sorted(&one, 1, 0.3), 7.0);
}

/* ---- on the real clock -------------------------------------------------- */

typedef struct busy {
  int work; /* loop trips per rep */
  volatile double sink;
} busy;

static void busy_run(void *ctx, int64_t reps) {
  busy *b = ctx;
  double x = b->sink;
  for (int64_t r = 0; r < reps; r++)
    for (int i = 0; i < b->work; i++)
      x = x * 0.999999 + 1e-9;
  b->sink = x;
}

static void quick_opts(lm_timing_opts *o) {
  lm_timing_defaults(o);
  o->warmup_ms = 10;
  o->sample_ms = 4;
  o->samples = 5;
}

Test(timing, result_structure_holds_on_the_real_clock) {
  busy b[3] = {{.work = 100}, {.work = 300}, {.work = 200}};
  lm_timed items[3] = {{"x1", busy_run, &b[0]},
                       {"x3", busy_run, &b[1]},
                       {"x2", busy_run, &b[2]}};
  lm_timing_opts o;
  quick_opts(&o);
  lm_timing_result r;
  lm_error err = {0};
  cr_assert_eq(lm_time_compare(&o, 3, items, &r, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(r.n, 3);
  cr_assert_eq(r.nsamples, 5);
  for (int i = 0; i < 3; i++) {
    const lm_timing_stats *s = &r.stats[i];
    cr_assert_str_eq(s->name, items[i].name);
    cr_assert_neq((const void *)s->name, (const void *)items[i].name,
                  "names are copied");
    cr_assert_geq(s->reps, 1);
    cr_assert_leq(s->min, s->p50);
    cr_assert_leq(s->p50, s->max);
    cr_assert_leq(s->min, s->mean);
    cr_assert_leq(s->mean, s->max);
    cr_assert_geq(s->spread, 0.0);
    for (int k = 0; k < 5; k++)
      cr_assert_gt(s->samples[k], 0.0);
    cr_assert_eq(r.ratio[i * 3 + i], 1.0);
  }
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) {
      double rij = r.ratio[i * 3 + j], rji = r.ratio[j * 3 + i];
      cr_assert(fabs(rij * rji - 1.0) < 1e-9,
                "odd sample count: ratio[%d][%d] = %.17g is not 1/%.17g", i, j,
                rij, rji);
      cr_assert_eq(rij, lm_timing_paired_ratio(r.stats[i].samples,
                                               r.stats[j].samples, 5));
    }
  lm_timing_result_free(&r);
  lm_timing_result_free(&r); /* freeing an emptied result is safe */
}

Test(timing, twenty_times_the_work_measures_more_than_twice_as_slow) {
  busy fast = {.work = 200}, slow = {.work = 4000};
  lm_timed items[2] = {{"fast", busy_run, &fast}, {"slow", busy_run, &slow}};
  lm_timing_opts o;
  quick_opts(&o);
  lm_timing_result r;
  lm_error err = {0};
  cr_assert_eq(lm_time_compare(&o, 2, items, &r, &err), LM_OK, "%s", err.msg);
  cr_assert_gt(r.ratio[1 * 2 + 0], 2.0, "slow/fast = %g", r.ratio[2]);
  cr_assert_lt(r.ratio[0 * 2 + 1], 0.5, "fast/slow = %g", r.ratio[1]);
  lm_timing_result_free(&r);
}

/* ---- pinning ------------------------------------------------------------ */

static int affinity_count(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (pthread_getaffinity_np(pthread_self(), sizeof set, &set) != 0)
    return -1;
  return CPU_COUNT(&set);
}

Test(timing, pin_holds_the_caller_on_one_cpu_and_restores_its_mask) {
  cpu_set_t before, after;
  CPU_ZERO(&before);
  cr_assert_eq(pthread_getaffinity_np(pthread_self(), sizeof before, &before),
               0);
  /* Whether the OS lets us pin: setting the mask we already have. */
  int can_pin =
      pthread_setaffinity_np(pthread_self(), sizeof before, &before) == 0;
  fake_world w = {0};
  lm_timing_opts o;
  fake_opts(&o, &w);
  o.pin = 1;
  o.warmup_ms = 0;
  o.samples = 3;
  fake_item fi[1];
  lm_timed items[1];
  slow_items(&w, 1, fi, items);
  lm_timing_result r;
  lm_error err = {0};
  cr_assert_eq(lm_time_compare(&o, 1, items, &r, &err), LM_OK, "%s", err.msg);
  if (can_pin) {
    cr_assert_eq(r.pinned, 1);
    cr_assert_eq(fi[0].max_cpus_seen, 1, "ran on %d CPUs while pinned",
                 fi[0].max_cpus_seen);
  }
  CPU_ZERO(&after);
  cr_assert_eq(pthread_getaffinity_np(pthread_self(), sizeof after, &after), 0);
  cr_assert(CPU_EQUAL(&before, &after), "the caller's mask was not restored");
  cr_assert_eq(affinity_count(), CPU_COUNT(&before));
  lm_timing_result_free(&r);
}

Test(timing, pin_off_leaves_the_caller_free) {
  fake_world w = {0};
  lm_timing_opts o;
  fake_opts(&o, &w);
  o.pin = 0;
  o.warmup_ms = 0;
  o.samples = 1;
  fake_item fi[1];
  lm_timed items[1];
  slow_items(&w, 1, fi, items);
  lm_timing_result r;
  lm_error err = {0};
  int before = affinity_count();
  cr_assert_eq(lm_time_compare(&o, 1, items, &r, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(r.pinned, 0);
  cr_assert_eq(fi[0].max_cpus_seen, before);
  lm_timing_result_free(&r);
}
