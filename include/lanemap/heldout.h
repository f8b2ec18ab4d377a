/* lanemap held-out evaluation: how much time each mapping policy loses
 * against the exhaustive oracle on cases the model never saw (DESIGN.md
 * §12).
 *
 * A case is one (kernel, shape) of heldout/cases.json.  Its oracle is every
 * legal variant, verified against the FP64 oracle and then measured
 * interleaved; each variant also carries what every model predicted for it.
 * A policy picks one variant per case (the random policy: the expectation
 * over a uniform pick), and its regret on the case is
 * t(chosen) / t(best) - 1.  The metrics summarise regret over cases the way
 * TenSet and the autotuning literature do; the report and plots render a
 * whole run.
 *
 * Ownership: an lm_eval_run owns its cases, a case its variants and
 * strings.  Nothing here prints; plots run gnuplot as a child process. */
#ifndef LANEMAP_HELDOUT_H
#define LANEMAP_HELDOUT_H

#include <stdint.h>

#include "lanemap/cases.h"
#include "lanemap/core.h"
#include "lanemap/records.h"
#include "lanemap/runtime.h"
#include "lanemap/timing.h"
#include "lanemap/variant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- metrics ------------------------------------------------------------- */

/* Regret summary of one policy over n cases, t_best[i] <= t_chosen[i]
 * (ns, finite, > 0). */
typedef struct lm_regret_stats {
  int n;          /* cases */
  double score;   /* Σ t_best / Σ t_chosen (1 = always best), TenSet's score */
  double geomean; /* exp(mean log(t_chosen / t_best)) - 1 */
  double median;  /* of the regrets; percentiles interpolate linearly */
  double p90;
  double max;
  double within;  /* share of cases with regret <= tie (noise ties) */
} lm_regret_stats;

#define LM_REGRET_TIE 0.03 /* regrets up to 3% are within timing noise */

/* t_chosen[i] may be INFINITY (the pick failed the oracle check): its regret
 * is infinite, the score drops accordingly.
 * LM_EINPUT naming the index of a bad time (NAN, <= 0, non-finite t_best, or
 * t_chosen < t_best by more than rounding, 1e-9 relative).  n == 0 is not
 * an error: out->n is 0 and the figures NAN.  A regret counts as within
 * when it is <= tie (up to rounding). */
lm_status lm_regret_stats_compute(const double *t_best, const double *t_chosen,
                                  int n, double tie, lm_regret_stats *out,
                                  lm_error *err);

/* Kendall's τ-b between x and y (ties counted as in τ-b); NAN if n < 2 or
 * either side is all ties.  Non-finite pairs are skipped. */
double lm_kendall_tau(const double *x, const double *y, int n);

/* E[min of k distinct elements drawn uniformly from t[0..n)], exactly (order
 * statistics); k clamped to [1, n]. */
double lm_expected_min(const double *t, int n, int k);

/* ---- a run --------------------------------------------------------------- */

typedef enum lm_policy {
  LM_POLICY_PLAN,     /* calibrated profile through the solver, no budget */
  LM_POLICY_CROSS,    /* plan from another ISA target's profile (LOIO) */
  LM_POLICY_DEFAULT,  /* plan from the uncalibrated default profile */
  LM_POLICY_ROOFLINE, /* the argmin of max(bytes / bandwidth, ops / peak) */
  LM_POLICY_PROGRAM,  /* always L = 1, the reference report's default */
  LM_POLICY_PACKET,   /* always L = W */
  LM_POLICY_INDUCTOR, /* row vectorised, rows split over workers when many */
  LM_POLICY_RANDOM,   /* a uniform random pick (its expectation) */
  LM_POLICY__COUNT
} lm_policy;

/* "plan", "cross-isa", "default-profile", "roofline", "always-program",
 * "always-packet", "inductor-like", "random". */
const char *lm_policy_name(lm_policy p);

/* One variant of one case. */
typedef struct lm_eval_variant {
  char *variant;       /* lm_variant string form */
  int verified;        /* 1 passed the oracle check, 0 failed, -1 not run */
  double measured;     /* p50 ns per call; NAN unless verified and timed */
  double spread;       /* (p90 - p10) / p50 of the samples, NAN if untimed */
  double predicted;    /* ns, calibrated profile */
  double pred_cross;   /* ns, another ISA target's profile; NAN if none */
  double pred_default; /* ns, uncalibrated default profile */
  double pred_roofline; /* ns, roofline-only model */
  double *terms;       /* [run->nterms] calibrated breakdown, ns per term */
  double *times;       /* [ntimes] the timing samples, ns per call; NULL */
  int ntimes;          /* if untimed */
} lm_eval_variant;

/* Number of measured-autotuning budgets reported, and the budgets. */
#define LM_AUTOTUNE_BUDGETS 6
extern const int lm_autotune_budget[LM_AUTOTUNE_BUDGETS]; /* 1 2 3 5 10 20 */

typedef struct lm_eval_case {
  char *id;     /* from the case list */
  char *split;  /* "operator" or "shape" */
  char *kernel; /* kernel path as the case list gives it, resolved */
  char *kernel_hash;
  int64_t R, C;
  char *extra; /* NULL or "H=33,..." */
  char *isa;   /* ISA target the variants were compiled for */
  char *protocol; /* how it is measured: "seed=1 samples=5 ...", or NULL */
  int nvariants;
  lm_eval_variant *v;
  /* Filled by lm_eval_case_score from v and the policy choices: */
  int choice[LM_POLICY__COUNT]; /* variant index; -1 for RANDOM, -1 = none */
  int best;                     /* argmin of measured over verified */
  double t_best;                /* ns */
  double t_policy[LM_POLICY__COUNT]; /* ns; RANDOM: the mean; NAN = none */
  double tau;                   /* Kendall τ-b, predicted vs measured */
  /* Measured autotuning: the best measured time among the k variants the
   * calibrated model ranks first, and the expectation for k random ones. */
  double t_top[LM_AUTOTUNE_BUDGETS];
  double t_rand[LM_AUTOTUNE_BUDGETS];
} lm_eval_case;

typedef struct lm_eval_run {
  int ncases;
  lm_eval_case *cases;
  int nterms;
  char **term_names;       /* [nterms] names of the breakdown terms */
  char *isa;               /* ISA target evaluated */
  char *fingerprint;       /* calibrated profile's fingerprint hash */
  char *profile_mode;      /* "quick" or "full" */
  char *cross_isa;         /* ISA whose profile gave pred_cross; NULL = none */
  double calibrate_s;      /* wall time of each stage, s (0 = cached) */
  double measure_s;
  double total_s;
} lm_eval_run;

/* Compute best, t_best, t_policy, tau, t_top and t_rand of c from its
 * variants and c->choice (the policies' picks are set by the harness).
 * Only verified, timed variants count: a pick that failed verification
 * gets t_policy INFINITY (an infinite regret: a policy is never flattered
 * by leaving the case out), no pick NAN, RANDOM's time is the mean
 * over them, t_top ranks them by predicted (ties to the lower index).
 * LM_EINPUT if no variant was verified and timed, or a choice is outside
 * [-1, nvariants). */
lm_status lm_eval_case_score(lm_eval_case *c, lm_error *err);

/* Regret summary of policy p over the cases of run whose split matches
 * (NULL = all); cases where p made no choice are left out. */
lm_status lm_eval_policy_stats(lm_keep const lm_eval_run *run, lm_policy p,
                               const char *split, lm_regret_stats *out,
                               lm_error *err);

void lm_eval_case_free(lm_eval_case *c);
void lm_eval_run_free(lm_eval_run *run);

/* ---- records ------------------------------------------------------------- *
 * A run is stored as lanemap.record/1 lines, one per (case, variant), with
 * the case fields and the other predictions in the record's extra object;
 * this is what `evaluate` appends as it goes and resumes from. */

/* The records of case c (one per variant, in variant order); *out is
 * malloc'ed, each record to be freed with lm_record_free.  fingerprint
 * NULL: run->fingerprint.  Fields added in extra: case, split,
 * case_variant (index), case_variants, pred_cross, pred_default,
 * pred_roofline (s), spread, terms_ns (run->term_names -> ns). */
lm_status lm_eval_case_records(lm_keep const lm_eval_case *c,
                               lm_keep const lm_eval_run *run,
                               const char *fingerprint, lm_give lm_record **out,
                               int *n, lm_error *err);
/* Rebuild the cases of records: a case is complete when it has as many
 * records as its "case_variants" field says; incomplete cases are dropped
 * and counted in *incomplete.  Records repeated across files (merging
 * overlapping shards) are deduplicated by (case id, variant). Cases come
 * out in order of first appearance, their variants in case_variant order;
 * choices are not set (the harness recomputes them).  Records without a
 * "case" field are ignored.  Each variant's terms follow the order of the
 * first record's terms_ns (lm_eval_case_records writes run->term_names
 * order), NULL when a record has none.  LM_EINPUT naming the record index
 * and field when records of one case disagree (shape, kernel_hash, isa,
 * case_variants, or an index naming two variants). */
lm_status lm_eval_cases_from_records(lm_keep const lm_records *rs,
                                     lm_give lm_eval_case **out, int *n,
                                     int *incomplete, lm_error *err);

/* ---- report -------------------------------------------------------------- */

/* Write DIR/report.md: the run's setup, per-policy summary (all, and per
 * split), measured autotuning against the model's top-k, leave-one-ISA-out,
 * per-case regrets with τ, and the cases above the targets with the term
 * that mispredicts.  Atomic. */
lm_status lm_eval_report_write(lm_keep const lm_eval_run *run,
                               const char *dir, lm_error *err);

/* Draw DIR/pred_vs_measured.png (log-log, every variant),
 * DIR/regret_cdf.png (one curve per policy) and DIR/cases.png (per-case
 * t/t_best of the plan, the best and the baselines) with gnuplot.
 * LM_EFAIL with "gnuplot not found: apt-get install gnuplot-nox" if it is
 * absent; the data and scripts are written either way. */
lm_status lm_eval_plots(lm_keep const lm_eval_run *run, const char *dir,
                        lm_error *err);

/* ---- the harness --------------------------------------------------------- *
 * Stages, in the order `lanemap evaluate` runs them: per kernel, load it
 * and enumerate its legal variants (lm_eval_kernel_new); per case, predict
 * every variant with every model (lm_eval_case_predict); over the run, let
 * every policy choose (lm_eval_choose: the model-based ones through the
 * solver); compile the kernel's variants (lm_eval_kernel_compile); measure
 * the oracle (lm_eval_case_measure); score (lm_eval_case_score). */

typedef struct lm_profile lm_profile;

typedef struct lm_eval_opts {
  lm_isa isa;                  /* ISA target evaluated */
  const lm_profile *profile;   /* calibrated for isa (required) */
  const lm_profile *cross;     /* another ISA target's profile; NULL = none */
  const lm_profile *defaults;  /* uncalibrated defaults (required) */
  int workers[8];              /* worker counts enumerated; 0 ends */
  lm_timing_opts timing;       /* protocol of the oracle measurement */
  uint64_t seed;               /* input data seed */
  lm_pool *pool;               /* NULL: the shared pool */
  /* Inductor-like heuristic: parallelise over rows when there are at least
   * two rows and R*C reaches this many elements. */
  int64_t inductor_parallel_elems;
} lm_eval_opts;

/* isa host, workers {1, 2}, timing defaults but 5 samples of 2 ms and
 * 20 ms warm-up, seed 1, inductor_parallel_elems 32768. */
void lm_eval_defaults(lm_eval_opts *o);

/* A kernel and its legal variants, with their code once compiled. */
typedef struct lm_eval_kernel lm_eval_kernel;

lm_status lm_eval_kernel_new(lm_keep const lm_eval_opts *o, const char *path,
                             lm_give lm_eval_kernel **out, lm_error *err);
/* Compile every variant (variants that differ only in workers and grain
 * share code).  *ms gets the compile wall time. */
lm_status lm_eval_kernel_compile(lm_keep lm_eval_kernel *k, double *ms,
                                 lm_error *err);
int lm_eval_kernel_variants(lm_keep const lm_eval_kernel *k);
const char *lm_eval_kernel_hash(lm_keep const lm_eval_kernel *k);
void lm_eval_kernel_free(lm_take lm_eval_kernel *k);

/* Fill out's case fields and every variant's predictions (nothing measured:
 * verified -1, measured NAN).  run gives the term names. */
lm_status lm_eval_case_predict(lm_keep const lm_eval_opts *o,
                               lm_keep const lm_eval_kernel *k,
                               lm_keep const lm_case *c,
                               lm_keep const lm_eval_run *run,
                               lm_eval_case *out, lm_error *err);
/* Verify every variant against the FP64 oracle, then time the verified ones
 * interleaved.  A variant that fails keeps verified 0 and is never timed;
 * the mismatch is named in *failures (may be NULL), and the call still
 * succeeds.  Needs lm_eval_kernel_compile first. */
lm_status lm_eval_case_measure(lm_keep const lm_eval_opts *o,
                               lm_keep const lm_eval_kernel *k,
                               lm_eval_case *c, int *failures, lm_error *err);
/* Every policy's choice for every case of run; the plan, cross-ISA and
 * default-profile policies go through lm_solve (no budget) over all cases,
 * one solver kernel per kernel hash and one bucket per case.  *solve_s gets
 * the solver's time. */
lm_status lm_eval_choose(lm_keep const lm_eval_opts *o, lm_eval_run *run,
                         double *solve_s, lm_error *err);
/* Set run's term names from the cost model. */
lm_status lm_eval_run_init(lm_eval_run *run, lm_isa isa, lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
