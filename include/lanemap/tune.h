/* lanemap tune: measured autotuning of a whole workload, ending in a plan
 * (docs/tune.md).
 *
 *   workload × profiles --predict--> every (kernel, bucket, variant)
 *     --pick--> per bucket the model's top K, and every variant the model
 *               cannot tell from its best (the near-tie rule of
 *               lm_plan_problem_settle: unsure)
 *     --compile, verify (FP64 oracle, guards), time interleaved-->
 *               measured ns, with a noise verdict per bucket
 *     --solve (lm_solve) on measured costs where measured, predictions on
 *               the measured scale elsewhere--> lm_plan
 *
 * Each measured (bucket, variant) is appended to a records file
 * (lanemap.record/1); a later call with the same file takes every bucket
 * whose candidates all have records of this machine type and protocol
 * from there, and measures nothing twice.  A time budget stops measuring
 * between buckets and plans with what was measured. */
#ifndef LANEMAP_TUNE_H
#define LANEMAP_TUNE_H

#include "lanemap/noise.h"
#include "lanemap/plan.h"
#include "lanemap/timing.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The model's top K measured per bucket by default. */
#define LM_TUNE_MEASURE 3
/* In a measured bucket, an unmeasured variant costs at least the measured
 * best times 1 + this: it never wins the bucket on a prediction alone,
 * and ties go to what was measured (the same step settling uses). */
#define LM_TUNE_UNMEASURED_STEP LM_SETTLE_STEP

typedef struct lm_tune_opts {
  int measure;           /* K: the model's top K per bucket; 0 measures only
                            the unsure buckets, their near ties */
  double alpha;          /* near-tie share marking a variant unsure, in
                            (0, 1]; LM_SETTLE_ALPHA */
  double time_budget_s;  /* stop measuring once this much time has passed;
                            <= 0: no budget */
  const char *records;   /* resumed from and appended to; NULL: none */
  lm_timing_opts timing; /* the protocol of each bucket's comparison */
  lm_solve_opts solve;
  /* Called after each bucket (done of total; what names it) and at the
   * end (done == total, what NULL).  May be NULL. */
  void (*progress)(void *ctx, int done, int total, const char *what);
  void *ctx;
} lm_tune_opts;

/* K = LM_TUNE_MEASURE, alpha LM_SETTLE_ALPHA, no budget, no records, 5
 * samples of 10 ms after 20 ms per bucket, lm_solve_defaults. */
void lm_tune_defaults(lm_tune_opts *o);

typedef struct lm_tune_result {
  lm_plan *plan; /* owned: lm_tune_result_free */
  int buckets;   /* every bucket of the workload */
  int measured_buckets, resumed_buckets, skipped_buckets; /* skipped: the
                                                             budget ran out */
  int sure_buckets;  /* with K = 0: sure buckets, left to the model */
  int candidates;    /* (bucket, variant) cells picked to measure */
  int unsure;        /* of them, beyond the top K: near ties */
  int measured;      /* cells timed by this call */
  int resumed;       /* cells taken from the records */
  int failed;        /* variants that failed compile or verification */
  int noisy_buckets; /* buckets whose comparison was noisy */
  lm_noise noise;    /* every comparison's verdict merged */
  /* Wall time, s: predicting, compiling, the oracle and verification,
   * timing, solving, and everything. */
  double predict_s, compile_s, verify_s, measure_s, solve_s, total_s;
} lm_tune_result;
void lm_tune_result_free(lm_tune_result *r);

/* Tune a bound workload (lm_workload_bind): profiles[i] prices the
 * variants of w->isa[i], as for lm_plan_problem_build.  LM_EINPUT for bad
 * options or a records file that does not read, LM_ESYS when it cannot be
 * appended to.  A variant that fails compiling or the oracle check is
 * counted in failed and never chosen for its kernel. */
lm_status lm_tune(lm_keep const lm_workload *w,
                  lm_keep const lm_profile *const *profiles,
                  const lm_tune_opts *o, lm_tune_result *out, lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
