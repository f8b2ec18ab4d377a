/* lanemap timing: the one measurement protocol shared by calibration,
 * benchmarks and the held-out harness (DESIGN.md §8, and the reference
 * report's protocol in §2).
 *
 * Entries that are compared are measured side by side in one run:
 * calibrate a repetition count per entry so that one sample lasts about
 * sample_ms, warm up, then take `samples` rounds, each timing one sample of
 * every entry in that round's order (all permutations in turn, or a fixed
 * order).  Drift, frequency changes and noisy neighbours then hit every
 * entry alike, and the paired ratio of two entries is computed per round and
 * summarised by its median: never a ratio of two medians.  The clock is
 * clock_gettime(CLOCK_MONOTONIC); performance counters are not available on
 * the VMs this runs on.  docs/timing.md has the protocol in full. */
#ifndef LANEMAP_TIMING_H
#define LANEMAP_TIMING_H

#include <stdint.h>

#include "lanemap/core.h"
#include "lanemap/noise.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Nanoseconds on CLOCK_MONOTONIC (arbitrary origin). */
double lm_now_ns(void);

typedef enum lm_timing_order {
  /* Round r runs the entries in the r-th permutation of a sequence that
   * visits all n! permutations when n <= 5 (each block of n consecutive
   * rounds puts every entry once in every position), else the r-th row
   * of a Williams design: every entry once in every position per n
   * rounds, and right after every other entry once per n rounds (n even)
   * or twice per 2n rounds (n odd). */
  LM_ORDER_PERMUTE = 0,
  /* Every round runs the entries in index order: A B A B ... */
  LM_ORDER_ABAB = 1,
} lm_timing_order;

/* Permutations are used up to this many entries; beyond it, a Williams
 * design. */
#define LM_TIMING_PERMUTE_MAX 5

typedef struct lm_timing_opts {
  double warmup_ms;      /* total warm-up over all entries, after calibration */
  int samples;           /* rounds; every entry gets one sample per round */
  double sample_ms;      /* target duration of one sample */
  lm_timing_order order; /* order of the entries within a round */
  int pin;               /* pin the caller to its current core while timing */
  /* Time the canary (lm_noise_canary_run) as one more entry of every
   * round, for the noise verdict's drift measure.  Default 1. */
  int canary;
  /* The pool the entries launch on: the verdict checks its parallel
   * launches (workers that ran no chunk or joined late), and while the
   * timing thread is pinned, the pool's threads are kept off its CPU.
   * NULL: none. */
  struct lm_pool *pool;
  /* Limits of the verdict; NULL: lm_noise_limits_defaults. */
  const lm_noise_limits *limits;
  /* Clock override for deterministic tests: NULL uses lm_now_ns. */
  double (*clock_ns)(void *clock_ctx);
  void *clock_ctx;
} lm_timing_opts;

/* warmup_ms 100, samples 7, sample_ms 30 (the reference report's protocol),
 * order LM_ORDER_PERMUTE, pin 1, canary 1, pool NULL, limits NULL,
 * clock_ns NULL. */
void lm_timing_defaults(lm_timing_opts *o);
/* LM_EINPUT with a message naming the bad field, else LM_OK. */
lm_status lm_timing_opts_check(const lm_timing_opts *o, lm_error *err);

/* One measured entry: run(ctx, reps) performs the measured thing reps
 * times. */
typedef struct lm_timed {
  const char *name;
  void (*run)(void *ctx, int64_t reps);
  void *ctx;
} lm_timed;

/* Statistics of one entry; times are nanoseconds per call (one rep). */
typedef struct lm_timing_stats {
  char *name;   /* copy of lm_timed.name (NULL if it was NULL) */
  int64_t reps; /* calibrated reps per sample */
  double p50;   /* median of the samples */
  double min, max, mean;
  double spread;   /* (p75 - p25) / p50, quantiles by linear interpolation */
  double *samples; /* [nsamples], in round order */
} lm_timing_stats;

typedef struct lm_timing_result {
  int n;                  /* entries */
  int nsamples;           /* rounds */
  lm_timing_stats *stats; /* [n] */
  /* ratio[i*n+j] = median over rounds of samples_i[r] / samples_j[r]. */
  double *ratio;
  int *order; /* [nsamples*n]: order[r*n+k] = entry timed k-th in round r */
  int pinned; /* 1 if the caller was pinned while timing */
  /* The canary's samples, in the same rounds (name "canary"; reps 0 and no
   * samples without opts.canary).  It is not one of the n entries. */
  lm_timing_stats canary;
  /* The verdict on this comparison (lanemap/noise.h). */
  lm_noise noise;
} lm_timing_result;

/* Is this process running under a user-mode emulator: does
 * /sys/devices/system/cpu/modalias (else /proc/cpuinfo) describe another
 * architecture than the one it was compiled for?  1 yes, 0 no or cannot
 * tell.  lm_emulated_in reads one such file. */
int lm_emulated(void);
int lm_emulated_in(const char *file);

/* Times n entries side by side with options o (NULL = defaults) and fills
 * *out, which the caller frees with lm_timing_result_free (also after an
 * error, when it is left empty).  Refused (LM_EINPUT) under emulation. */
lm_status lm_time_compare(const lm_timing_opts *o, int n,
                          lm_keep const lm_timed *items, lm_timing_result *out,
                          lm_error *err);
/* The same for a single entry. */
lm_status lm_time_one(const lm_timing_opts *o, lm_keep const lm_timed *item,
                      lm_timing_result *out, lm_error *err);
/* Frees what *r owns and empties it; safe on an empty result. */
void lm_timing_result_free(lm_timing_result *r);

/* The order of round `round` for n entries under `order` (perm[0..n-1]),
 * exactly as lm_time_compare uses it.  Exposed for reports and tests. */
void lm_timing_round_order(lm_timing_order order, int n, int round, int *perm);

/* Paired ratio of two entries measured in the same n rounds: the median
 * over r of a[r] / b[r].  This is what ratio[i*n+j] holds.  NaN for n = 0. */
double lm_timing_paired_ratio(const double *a, const double *b, int n);

/* Median of v[0..n-1] (average of the two middle values for even n);
 * v is not modified.  NaN for n = 0. */
double lm_timing_median(const double *v, int n);

/* Quantile q in [0, 1] of sorted s[0..n-1], n >= 1: linear interpolation
 * between order statistics (Hyndman-Fan type 7, the default of R and
 * NumPy), as the stats' p50 and spread are computed.  Between two equal
 * order statistics it is that value, so infinite ones (a regret against a
 * failed variant) give infinity, not NaN. */
double lm_timing_quantile_sorted(const double *s, int n, double q);

/* Sorts v[0..n-1] ascending (for lm_timing_quantile_sorted). */
void lm_timing_sort(double *v, int n);

#ifdef __cplusplus
}
#endif
#endif
