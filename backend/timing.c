/* The timing harness: one protocol for every measurement the project makes.
 *
 * The reference report's lesson is that a comparison is only as good as its
 * pairing.  Two entries timed minutes apart see different turbo states,
 * neighbours and cache contents; two entries timed in the same round, in
 * alternating order, see the same ones.  So the harness never times an
 * entry alone when it is compared: each round runs one sample of every
 * entry, the order changes from round to round so that no entry always goes
 * first (first after a switch pays for cold caches and branch predictors),
 * and the ratio of two entries is taken inside each round before the median
 * is taken across rounds.  A ratio of medians would pair entry A's round 2
 * with entry B's round 5 and keep exactly the drift the rounds cancel.
 *
 * A sample is `reps` calls of the entry between two readings of
 * CLOCK_MONOTONIC; reps is calibrated by doubling from 1 so that a sample
 * lasts about sample_ms, which keeps the clock's ~20 ns cost and its
 * resolution far below the quantity measured. */
#define _GNU_SOURCE
#include "lanemap/timing.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/affinity.h"
#include "backend/pool.h"
#include "lanemap/runtime.h"

/* Reps stop doubling here even if the clock never moved, so an entry that
 * does nothing cannot hang the calibration (2^40 calls of even 1 ns would
 * take 18 minutes, so a real entry reaches sample_ms long before). */
#define LM_TIMING_MAX_REPS (INT64_C(1) << 40)
/* Calibration doubles until one sample lasts a quarter of sample_ms, then
 * scales: a 7.5 ms probe predicts a 30 ms sample well and costs half as
 * much as doubling all the way. */
#define LM_TIMING_PROBE_FRACTION 0.25
/* Bounds that only reject nonsense (a NaN, a negative count, a run that
 * would last days). */
#define LM_TIMING_MAX_SAMPLES 1000000
#define LM_TIMING_MAX_MS 1e7
#define LM_TIMING_MAX_ITEMS 4096

double lm_now_ns(void) {
  /* Seconds since the first call keep a double exact to the nanosecond for
   * 104 days of process life, whatever the machine's uptime. */
  static _Atomic int64_t origin_s = -1;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  int64_t base = atomic_load_explicit(&origin_s, memory_order_relaxed);
  if (base < 0) {
    int64_t expect = -1;
    atomic_compare_exchange_strong(&origin_s, &expect, (int64_t)ts.tv_sec);
    base = atomic_load(&origin_s);
  }
  return (double)((int64_t)ts.tv_sec - base) * 1e9 + (double)ts.tv_nsec;
}

void lm_timing_defaults(lm_timing_opts *o) {
  memset(o, 0, sizeof *o);
  o->warmup_ms = 100.0;
  o->samples = 7;
  o->sample_ms = 30.0;
  o->order = LM_ORDER_PERMUTE;
  o->pin = 1;
  o->canary = 1;
  o->pool = NULL;
  o->limits = NULL;
  o->clock_ns = NULL;
  o->clock_ctx = NULL;
}

lm_status lm_timing_opts_check(const lm_timing_opts *o, lm_error *err) {
  if (!o)
    return lm_error_set(err, LM_EINPUT, "timing: options are NULL");
  if (o->samples < 1 || o->samples > LM_TIMING_MAX_SAMPLES)
    return lm_error_set(err, LM_EINPUT,
                        "timing: samples = %d is outside [1, %d]", o->samples,
                        LM_TIMING_MAX_SAMPLES);
  if (!(o->sample_ms > 0.0 && o->sample_ms <= LM_TIMING_MAX_MS))
    return lm_error_set(err, LM_EINPUT,
                        "timing: sample_ms = %g is outside (0, %g]",
                        o->sample_ms, LM_TIMING_MAX_MS);
  if (!(o->warmup_ms >= 0.0 && o->warmup_ms <= LM_TIMING_MAX_MS))
    return lm_error_set(err, LM_EINPUT,
                        "timing: warmup_ms = %g is outside [0, %g]",
                        o->warmup_ms, LM_TIMING_MAX_MS);
  if (o->order != LM_ORDER_PERMUTE && o->order != LM_ORDER_ABAB)
    return lm_error_set(err, LM_EINPUT, "timing: order = %d is not an order",
                        (int)o->order);
  return LM_OK;
}

/* ---- orders ------------------------------------------------------------- */

static int64_t lm_timing_factorial(int n) {
  int64_t f = 1;
  for (int i = 2; i <= n; i++)
    f *= i;
  return f;
}

/* The idx-th permutation of {0..m-1} in lexicographic order. */
static void lm_timing_lexperm(int m, int64_t idx, int *out) {
  int pool[LM_TIMING_PERMUTE_MAX];
  for (int i = 0; i < m; i++)
    pool[i] = i;
  for (int i = 0; i < m; i++) {
    int64_t f = lm_timing_factorial(m - 1 - i);
    int pick = (int)(idx / f);
    idx %= f;
    out[i] = pool[pick];
    memmove(&pool[pick], &pool[pick + 1],
            (size_t)(m - 1 - i - pick) * sizeof pool[0]);
  }
}

/* Round r of the permutation sequence is q + k (mod n), where k = r mod n
 * and q is the (r div n)-th permutation that starts with 0.  Every
 * permutation p is reached once per n! rounds (k = p[0], q = p - p[0]), and
 * within each block of n rounds every entry takes every position once. */
void lm_timing_round_order(lm_timing_order order, int n, int round, int *perm) {
  if (n <= 0)
    return;
  if (round < 0)
    round = 0;
  if (order == LM_ORDER_ABAB) {
    for (int i = 0; i < n; i++)
      perm[i] = i;
    return;
  }
  if (n > LM_TIMING_PERMUTE_MAX) {
    /* Williams design: the base row 0, 1, n-1, 2, n-2, ... has every
     * difference between neighbours once (mod n), so its n shifts put
     * every entry right after every other once; for odd n the reversed
     * row's n shifts follow, the pairs then twice per 2n rounds. */
    int reversed = n % 2 && (round / n) % 2;
    for (int i = 0; i < n; i++) {
      int j = reversed ? n - 1 - i : i;
      int base = j % 2 ? (j + 1) / 2 : (n - j / 2) % n;
      perm[i] = (int)((base + round) % n);
    }
    return;
  }
  int k = round % n;
  int64_t qidx = (round / n) % lm_timing_factorial(n - 1);
  int rest[LM_TIMING_PERMUTE_MAX];
  lm_timing_lexperm(n - 1, qidx, rest);
  perm[0] = k;
  for (int i = 1; i < n; i++)
    perm[i] = (rest[i - 1] + 1 + k) % n;
}

/* ---- statistics --------------------------------------------------------- */

static int lm_timing_cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void lm_timing_sort(double *v, int n) {
  if (n > 1)
    qsort(v, (size_t)n, sizeof *v, lm_timing_cmp_double);
}

double lm_timing_quantile_sorted(const double *s, int n, double q) {
  double h = (n - 1) * q;
  int lo = (int)floor(h);
  if (lo >= n - 1)
    return s[n - 1];
  double f = h - lo;
  if (f == 0 || s[lo + 1] == s[lo])
    return s[lo]; /* also keeps two infinite values from giving NaN */
  return s[lo] + f * (s[lo + 1] - s[lo]);
}

/* Median of v[0..n-1], n >= 1; sorts v. */
static double lm_timing_median_inplace(double *v, int n) {
  lm_timing_sort(v, n);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double lm_timing_median(const double *v, int n) {
  if (n <= 0)
    return NAN;
  double *s = malloc((size_t)n * sizeof *s);
  if (!s)
    return NAN;
  memcpy(s, v, (size_t)n * sizeof *s);
  double m = lm_timing_median_inplace(s, n);
  free(s);
  return m;
}

double lm_timing_paired_ratio(const double *a, const double *b, int n) {
  if (n <= 0)
    return NAN;
  double *q = malloc((size_t)n * sizeof *q);
  if (!q)
    return NAN;
  for (int r = 0; r < n; r++)
    q[r] = a[r] / b[r];
  double m = lm_timing_median_inplace(q, n);
  free(q);
  return m;
}

static void lm_timing_summarize(lm_timing_stats *st, int ns, double *sorted) {
  memcpy(sorted, st->samples, (size_t)ns * sizeof *sorted);
  lm_timing_sort(sorted, ns);
  double sum = 0;
  for (int r = 0; r < ns; r++)
    sum += sorted[r];
  st->min = sorted[0];
  st->max = sorted[ns - 1];
  st->mean = sum / ns;
  st->p50 = lm_timing_quantile_sorted(sorted, ns, 0.5);
  double iqr = lm_timing_quantile_sorted(sorted, ns, 0.75) -
               lm_timing_quantile_sorted(sorted, ns, 0.25);
  st->spread = st->p50 > 0 ? iqr / st->p50 : 0.0;
}

/* ---- measuring ---------------------------------------------------------- */

typedef struct lm_timing_clock {
  double (*fn)(void *);
  void *ctx;
} lm_timing_clock;

static double lm_timing_read(const lm_timing_clock *c) {
  return c->fn ? c->fn(c->ctx) : lm_now_ns();
}

/* Nanoseconds for reps calls of it.  A clock that did not move (an entry
 * far below its resolution) counts as 1 ns, so that no ratio divides by
 * zero; calibration makes this unreachable for real entries. */
static double lm_timing_sample(const lm_timing_clock *c, const lm_timed *it,
                               int64_t reps) {
  double t0 = lm_timing_read(c);
  it->run(it->ctx, reps);
  double el = lm_timing_read(c) - t0;
  return el > 0 ? el : 1.0;
}

static int64_t lm_timing_calibrate(const lm_timing_clock *c, const lm_timed *it,
                                   double target_ns) {
  int64_t reps = 1;
  double el;
  for (;;) {
    el = lm_timing_sample(c, it, reps);
    if (el >= target_ns * LM_TIMING_PROBE_FRACTION ||
        reps >= LM_TIMING_MAX_REPS)
      break;
    reps *= 2;
  }
  double scaled = (double)reps * target_ns / el;
  if (scaled < 1)
    return 1;
  if (scaled > (double)LM_TIMING_MAX_REPS)
    return LM_TIMING_MAX_REPS;
  return (int64_t)llround(scaled);
}

static void lm_timing_warmup(const lm_timing_clock *c, int n,
                             const lm_timed *items,
                             const lm_timing_stats *stats, double warmup_ns) {
  if (warmup_ns <= 0)
    return;
  /* A quarter sample per entry and pass: every entry is warm after the
   * first pass, and a pass stays short against warmup_ms. */
  double t0 = lm_timing_read(c);
  do {
    for (int i = 0; i < n; i++)
      items[i].run(items[i].ctx, stats[i].reps / 4 > 0 ? stats[i].reps / 4 : 1);
  } while (lm_timing_read(c) - t0 < warmup_ns);
}

void lm_timing_result_free(lm_timing_result *r) {
  if (!r)
    return;
  if (r->stats) {
    for (int i = 0; i < r->n; i++) {
      free(r->stats[i].name);
      free(r->stats[i].samples);
    }
  }
  free(r->stats);
  free(r->canary.name);
  free(r->canary.samples);
  free(r->ratio);
  free(r->order);
  memset(r, 0, sizeof *r);
}

static lm_status lm_timing_alloc(lm_timing_result *out, int n, int ns,
                                 const lm_timed *items, int canary,
                                 lm_error *err) {
  out->n = n;
  out->nsamples = ns;
  out->stats = calloc((size_t)n, sizeof *out->stats);
  out->ratio = calloc((size_t)n * (size_t)n, sizeof *out->ratio);
  out->order = calloc((size_t)n * (size_t)ns, sizeof *out->order);
  if (!out->stats || !out->ratio || !out->order)
    return lm_error_set(err, LM_ESYS, "timing: out of memory");
  for (int i = 0; i < n; i++) {
    out->stats[i].samples = calloc((size_t)ns, sizeof(double));
    if (!out->stats[i].samples)
      return lm_error_set(err, LM_ESYS, "timing: out of memory");
    if (items[i].name && !(out->stats[i].name = strdup(items[i].name)))
      return lm_error_set(err, LM_ESYS, "timing: out of memory");
  }
  lm_noise_clear(&out->noise);
  if (canary && (!(out->canary.name = strdup("canary")) ||
                 !(out->canary.samples = calloc((size_t)ns, sizeof(double)))))
    return lm_error_set(err, LM_ESYS, "timing: out of memory");
  return LM_OK;
}

/* The allowed CPU that was least busy over QUIET_WINDOW_NS, the current
 * one among equals; -1 when /proc cannot say.  Pinning to the CPU the
 * thread happens to be on would, beside a neighbour that keeps one core
 * busy, now and then pin the timing to that very core for the whole
 * comparison, where the scheduler would have moved it. */
#define QUIET_WINDOW_NS 20e6 /* two ticks of /proc/stat */
static int quietest_cpu(void) {
  lm_sysload a, b;
  lm_sysload_read(&a);
  if (!a.ok)
    return -1;
  struct timespec ts = {0, (long)QUIET_WINDOW_NS};
  nanosleep(&ts, NULL);
  lm_sysload_read(&b);
  int here = sched_getcpu(), best = -1;
  double least = INFINITY;
  for (int c = 0; c < a.ncpu && c < b.ncpu; c++) {
    if (!lm_affinity_allowed(c))
      continue;
    double busy = b.cpu_busy_s[c] - a.cpu_busy_s[c];
    if (busy < least || (busy == least && c == here))
      least = busy, best = c;
  }
  return best;
}

/* (second slowest - fastest) / median of the canary's rounds: one slow
 * round is a hiccup, interference holds up more (lanemap/noise.h).  With
 * one round, 0. */
static double canary_drift(const lm_timing_stats *c, int ns) {
  double slow = -INFINITY, second = -INFINITY;
  for (int r = 0; r < ns; r++) {
    double x = c->samples[r];
    if (x > slow)
      second = slow, slow = x;
    else if (x > second)
      second = x;
  }
  return ns > 1 ? (second - c->min) / c->p50 : 0;
}

/* The noise verdict of a comparison: its entries' spread, the canary's
 * drift, what other processes and the hypervisor took between load0 and
 * load1, and what the watched pool's workers did. */
static void lm_timing_verdict(const lm_timing_opts *o, lm_timing_result *out,
                              const lm_sysload *load0, const lm_sysload *load1,
                              const lm_pool_stats *pool0,
                              const lm_pool_stats *pool1) {
  lm_noise *nz = &out->noise;
  lm_noise_clear(nz);
  double *spreads = malloc((size_t)out->n * sizeof *spreads);
  if (spreads) {
    for (int i = 0; i < out->n; i++)
      spreads[i] = out->stats[i].spread;
    nz->spread = lm_timing_median(spreads, out->n);
    free(spreads);
  }
  if (o->canary && out->canary.p50 > 0)
    nz->canary = canary_drift(&out->canary, out->nsamples);
  lm_sysload_delta d;
  lm_sysload_diff(load0, load1, &d);
  nz->other_cpus = d.other_cpus;
  nz->other_here = d.other_here;
  nz->busiest_cpu = d.busiest_cpu;
  nz->steal = d.steal;
  nz->wall_s = d.wall_s;
  nz->load_start = load0->load1;
  nz->load_end = load1->load1;
  nz->running_start = load0->running;
  nz->running_end = load1->running;
  nz->wanted = pool1->wanted - pool0->wanted;
  int64_t joined = pool1->joined - pool0->joined;
  nz->missed = nz->wanted > joined ? nz->wanted - joined : 0;
  nz->late_ns = joined > 0 ? (pool1->late_ns - pool0->late_ns) / (double)joined
                           : NAN;
  lm_noise_judge(nz, o->limits);
}

/* How long lm_pool_warm may wait for parked workers before a sample:
 * twenty times the p50 wake-up measured by bench_forkjoin (66-100 µs). */
#define LM_TIMING_WARM_MAX_NS 2000000

/* lm_emulated, asked once per process: the answer does not change, and
 * every comparison would otherwise read two files. */
static pthread_once_t emulated_once = PTHREAD_ONCE_INIT;
static int emulated_answer;
static void emulated_ask(void) { emulated_answer = lm_emulated(); }
static int emulated(void) {
  pthread_once(&emulated_once, emulated_ask);
  return emulated_answer;
}

lm_status lm_time_compare(const lm_timing_opts *o, int n, const lm_timed *items,
                          lm_timing_result *out, lm_error *err) {
  lm_timing_opts d;
  lm_affinity_saved *pin = NULL;
  double *scratch = NULL;
  lm_status st;

  if (!out)
    return lm_error_set(err, LM_EINPUT, "timing: result is NULL");
  memset(out, 0, sizeof *out);
  if (!o) {
    lm_timing_defaults(&d);
    o = &d;
  }
  if ((st = lm_timing_opts_check(o, err)) != LM_OK)
    return st;
  if (emulated())
    return lm_error_set(err, LM_EINPUT,
                        "timing refused: this process runs under an emulator "
                        "(the kernel's CPU description names another "
                        "architecture), whose timings describe the emulator, "
                        "not the target");
  if (n < 1 || n > LM_TIMING_MAX_ITEMS)
    return lm_error_set(err, LM_EINPUT, "timing: %d entries, need 1 to %d", n,
                        LM_TIMING_MAX_ITEMS);
  if (!items)
    return lm_error_set(err, LM_EINPUT, "timing: entries are NULL");
  for (int i = 0; i < n; i++)
    if (!items[i].run)
      return lm_error_set(err, LM_EINPUT, "timing: entry %d (%s) has no run", i,
                          items[i].name ? items[i].name : "unnamed");

  const int ns = o->samples;
  if ((st = lm_timing_alloc(out, n, ns, items, o->canary, err)) != LM_OK)
    goto error;
  scratch = malloc((size_t)ns * sizeof *scratch);
  if (!scratch) {
    st = lm_error_set(err, LM_ESYS, "timing: out of memory");
    goto error;
  }

  if (o->pin) {
    /* a test clock measures nothing: no window spent looking for a core */
    pin = o->clock_ns ? NULL : lm_affinity_pin_to(quietest_cpu());
    if (!pin)
      pin = lm_affinity_pin_current();
    out->pinned = pin != NULL;
    /* the watched pool's threads run beside the timing thread, never on
     * its CPU (backend/pool.h) */
    if (pin)
      lm_pool_keep_off(o->pool, sched_getcpu());
  }
  const lm_timing_clock clk = {o->clock_ns, o->clock_ctx};

  lm_sysload load0, load1;
  lm_pool_stats pool0, pool1;
  lm_sysload_read(&load0);
  load0.cpu = pin ? sched_getcpu() : -1;
  lm_pool_stats_get(o->pool, &pool0);

  for (int i = 0; i < n; i++)
    out->stats[i].reps =
        lm_timing_calibrate(&clk, &items[i], o->sample_ms * 1e6);
  const lm_timed canary = {"canary", lm_noise_canary_run, NULL};
  /* the canary always runs on the real clock: it measures the machine, and
   * a test clock that never moves would calibrate it to 2^40 reps */
  const lm_timing_clock real = {NULL, NULL};
  if (o->canary)
    out->canary.reps = lm_timing_calibrate(&real, &canary, o->sample_ms * 1e6);
  lm_timing_warmup(&clk, n, items, out->stats, o->warmup_ms * 1e6);

  for (int r = 0; r < ns; r++) {
    int *perm = &out->order[(size_t)r * (size_t)n];
    lm_timing_round_order(o->order, n, r, perm);
    for (int k = 0; k < n; k++) {
      lm_timing_stats *s = &out->stats[perm[k]];
      /* each sample starts with the watched pool's workers up: a worker
       * parked while the entries before it ran would charge its wake-up
       * to this sample's first launch (lm_pool_warm) */
      lm_pool_warm(o->pool, LM_TIMING_WARM_MAX_NS);
      s->samples[r] =
          lm_timing_sample(&clk, &items[perm[k]], s->reps) / (double)s->reps;
    }
    /* the canary closes every round, after whatever the entries left */
    if (o->canary)
      out->canary.samples[r] =
          lm_timing_sample(&real, &canary, out->canary.reps) /
          (double)out->canary.reps;
  }

  lm_sysload_read(&load1);
  load1.cpu = pin ? sched_getcpu() : -1;
  lm_pool_stats_get(o->pool, &pool1);
  if (pin) {
    lm_pool_keep_off(o->pool, -1);
    lm_affinity_restore(pin);
    pin = NULL;
  }

  for (int i = 0; i < n; i++)
    lm_timing_summarize(&out->stats[i], ns, scratch);
  if (o->canary)
    lm_timing_summarize(&out->canary, ns, scratch);
  lm_timing_verdict(o, out, &load0, &load1, &pool0, &pool1);
  for (int i = 0; i < n; i++) {
    for (int j = 0; j < n; j++) {
      if (i == j) {
        out->ratio[(size_t)i * n + j] = 1.0;
        continue;
      }
      for (int r = 0; r < ns; r++)
        scratch[r] = out->stats[i].samples[r] / out->stats[j].samples[r];
      out->ratio[(size_t)i * n + j] = lm_timing_median_inplace(scratch, ns);
    }
  }
  free(scratch);
  return LM_OK;

error:
  if (pin)
    lm_pool_keep_off(o->pool, -1);
  lm_affinity_restore(pin);
  free(scratch);
  lm_timing_result_free(out);
  return st;
}

lm_status lm_time_one(const lm_timing_opts *o, const lm_timed *item,
                      lm_timing_result *out, lm_error *err) {
  return lm_time_compare(o, 1, item, out, err);
}
