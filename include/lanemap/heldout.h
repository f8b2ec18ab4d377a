/* lanemap held-out evaluation: how much time each mapping policy loses
 * against the exhaustive oracle on cases the model never saw (DESIGN.md
 * §12).
 *
 * A case is one (kernel, shape) of heldout/cases.json.  Its oracle is every
 * legal variant, verified against the FP64 oracle and then measured
 * interleaved; each variant also carries what every model predicted for it.
 * A policy picks one variant per case (the random policy: the expectation
 * over a uniform pick), and its regret on the case is
 * t(chosen) / t(best) - 1, with the times of a confirmation round that
 * re-measures the screening's fastest variants and the picks (the best of
 * many noisy times is biased low).  Every measurement carries a noise
 * verdict; a noisy case is measured again, and a parallel variant timed
 * while its cores were busy is left out.  The metrics summarise regret
 * over cases the way TenSet and the autotuning literature do, with
 * bootstrap intervals over the timing rounds; the report and plots render
 * a whole run.
 *
 * Ownership: an lm_eval_run owns its cases, a case its variants and
 * strings.  Nothing here prints; plots run gnuplot as a child process. */
#ifndef LANEMAP_HELDOUT_H
#define LANEMAP_HELDOUT_H

#include <stdint.h>

#include "lanemap/cases.h"
#include "lanemap/core.h"
#include "lanemap/learned.h"
#include "lanemap/noise.h"
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

/* 95% percentile-bootstrap intervals of a policy's geomean, p90 and max
 * regret: [0] the 2.5% and [1] the 97.5% quantile of the statistic over
 * the resamples.  n 0: no case, NAN. */
typedef struct lm_regret_interval {
  int n;          /* cases */
  int resamples;
  double geomean[2], p90[2], max[2];
} lm_regret_interval;

/* Resamples of the bootstrap, and its fixed seed, so that a report is
 * reproducible from its records.  1000 resamples put the 2.5% and 97.5%
 * quantiles on the 25th and 975th order statistics, as Efron and
 * Tibshirani's "An Introduction to the Bootstrap" asks of a percentile
 * interval. */
#define LM_BOOTSTRAP_RESAMPLES 1000
#define LM_BOOTSTRAP_SEED 0x6c616e656d6170ull /* "lanemap" */

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
  LM_POLICY_LEARNED,  /* plan from the calibrated profile times the learned
                         correction (lm_eval_opts.learned; none without) */
  LM_POLICY_ROOFLINE, /* the argmin of max(bytes / bandwidth, ops / peak) */
  LM_POLICY_PROGRAM,  /* always L = 1, the reference report's default */
  LM_POLICY_PACKET,   /* always L = W */
  LM_POLICY_INDUCTOR, /* row vectorised, rows split over workers when many */
  LM_POLICY_RANDOM,   /* a uniform random pick (its expectation) */
  LM_POLICY__COUNT
} lm_policy;

/* "plan", "cross-isa", "default-profile", "plan-learned", "roofline",
 * "always-program", "always-packet", "inductor-like", "random". */
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
  double pred_learned; /* ns, calibrated profile times the learned
                          correction; NAN without a learned model */
  double *terms;       /* [run->nterms] calibrated breakdown, ns per term */
  double *times;       /* [ntimes] the timing samples, ns per call; NULL */
  int ntimes;          /* if untimed */
  /* The confirmation round (heldout/confirm.c): p50 and samples, ns per
   * call; NAN and NULL for a variant it did not take. */
  double confirmed;
  double *ctimes;
  int nctimes;
  /* 1: a parallel variant measured while fewer CPUs were free than it has
   * workers (lm_noise_free_cpus); it is neither a case's best nor a pick
   * that counts. */
  int contended;
  /* 1: the calibrated model cannot tell it from its best in the case's
   * bucket (lm_plan_problem_near_tie, set when the plan is solved): a
   * variant `lanemap tune` measures beside the model's top K. */
  int near_tie;
  /* 1: the case list names it in the case's "time" (lm_case.time): the
   * first screening round times it whatever the split pruning says. */
  int listed;
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
  /* The machine that measured it, from its records: its fingerprint hash
   * (its machine type) and host name; NULL when unknown (older records,
   * or not measured yet). */
  char *fingerprint;
  char *node;
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
  /* tune-k, what lm_tune measures: the best measured time among the
   * model's top k and its near ties, and how many variants that is. */
  double t_tune[LM_AUTOTUNE_BUDGETS];
  int n_tune[LM_AUTOTUNE_BUDGETS];
  /* The plan's pick launched through the plan's dispatch
   * (lm_dispatch_launch), timed in the same rounds as the variants: its p50
   * in ns and the median over rounds of its time over the pick's own.  NAN
   * when the case was not measured so (resumed from records). */
  double t_dispatch;
  double dispatch_ratio;
  /* The noise verdict of the case's measurement (screening and
   * confirmation rounds merged), and how many times it was measured: 1,
   * or up to 1 + LM_EVALUATE_REMEASURE when noisy.  attempts 0: the
   * verdict is unknown (records written before verdicts existed). */
  lm_noise noise;
  int attempts;
  /* Filled by lm_eval_case_score: the plan's pick is contended (the case
   * is left out of every policy's figures), and the screening round's
   * best time (the winner's curse: t_screen / t_best - 1 is how much the
   * screening flattered its winner).  t_screen NAN without confirmation. */
  int contended;
  double t_screen;
} lm_eval_case;

/* The measurement protocol of a run, for the report. */
typedef struct lm_eval_protocol {
  int samples;            /* screening rounds; 0: unknown (resumed only) */
  double sample_ms, warmup_ms;
  int remeasure;          /* LM_EVALUATE_REMEASURE */
  int confirm_samples;    /* rounds of the confirmation */
  int confirm_top;        /* LM_EVALUATE_CONFIRM_TOP */
  int canary;             /* the canary ran in every round */
  lm_noise_limits limits; /* of the verdicts */
  int all_splits;         /* no split pruning (LM_EVALUATE_SPLIT_TOP) */
  lm_fp fp;               /* the floating-point mode (lm_eval_opts.fp) */
} lm_eval_protocol;

typedef struct lm_eval_run {
  int ncases;
  lm_eval_case *cases;
  int nterms;
  char **term_names;       /* [nterms] names of the breakdown terms */
  char *isa;               /* ISA target evaluated */
  char *fingerprint;       /* the measuring machine's fingerprint hash */
  char *node;              /* the measuring machine's host name, or NULL */
  char *profile_mode;      /* "quick" or "full" */
  char *cross_isa;         /* ISA whose profile gave pred_cross; NULL = none */
  double calibrate_s;      /* wall time of each stage, s (0 = cached) */
  double measure_s;
  double total_s;
  lm_eval_protocol protocol; /* samples 0: not given */
} lm_eval_run;

/* Compute best, t_best, t_policy, tau, t_top, t_rand, contended and
 * t_screen of c from its variants and c->choice (the policies' picks are
 * set by the harness).  Only verified, timed, uncontended variants count.
 * When the case has a confirmation round, best is the confirmed variant
 * with the least confirmed time and each pick's time is its confirmed
 * time; without one (older records), the screening times serve.  A pick
 * that failed verification gets t_policy INFINITY (an infinite regret: a
 * policy is never flattered by leaving the case out), a contended pick or
 * no pick NAN; when the plan's pick is contended, c->contended is set and
 * every t_policy is NAN (the case is left out).  RANDOM's time is the mean
 * of the screening times (at least t_best); t_top ranks the variants by
 * predicted (ties to the lower index) against the screening times, like
 * t_rand, and the report's autotuning table compares those with
 * t_screen.  LM_EINPUT if no variant was verified and timed, or a choice is
 * outside [-1, nvariants). */
lm_status lm_eval_case_score(lm_eval_case *c, lm_error *err);

/* Regret summary of policy p over the cases of run whose split matches
 * (NULL = all); cases where p made no choice are left out. */
lm_status lm_eval_policy_stats(lm_keep const lm_eval_run *run, lm_policy p,
                               const char *split, lm_regret_stats *out,
                               lm_error *err);

/* Bootstrap intervals of policy p's regret over the cases of run whose
 * split matches (NULL = all), cases scored (lm_eval_case_score).  Each
 * resample draws, per case, the round indices of its confirmation (or,
 * without one, its screening) with replacement -- the same rounds for all
 * the case's variants, keeping the pairing that interleaving gave -- and
 * recomputes every variant's median, the best and the pick as
 * lm_eval_case_score does, then the statistics over the cases.  Cases
 * without samples keep their times.  resamples <= 0: LM_BOOTSTRAP_RESAMPLES.
 * The same seed gives the same interval. */
lm_status lm_eval_policy_bootstrap(lm_keep const lm_eval_run *run, lm_policy p,
                                   const char *split, int resamples,
                                   uint64_t seed, lm_regret_interval *out,
                                   lm_error *err);

/* Over the cases of run with a confirmation round: the geometric mean of
 * t_screen / t_best, minus 1 (negative: the screening round flattered its
 * winner), and in *n how many cases it covers.  NAN when none. */
double lm_eval_screening_bias(lm_keep const lm_eval_run *run, int *n);

/* The noise verdicts of run's cases: measured and quiet (the unstable ones,
 * whose spread alone passed its limit, among them), noisy after
 * re-measuring, unknown (records without a verdict), and how many cases'
 * plan pick was contended. */
typedef struct lm_eval_verdicts {
  int quiet, unstable, noisy, unknown, contended;
} lm_eval_verdicts;
void lm_eval_count_verdicts(lm_keep const lm_eval_run *run,
                            lm_eval_verdicts *out);

void lm_eval_case_free(lm_eval_case *c);
void lm_eval_run_free(lm_eval_run *run);

/* ---- records ------------------------------------------------------------- *
 * A run is stored as lanemap.record/1 lines, one per (case, variant), with
 * the case fields and the other predictions in the record's extra object;
 * this is what `evaluate` appends as it goes and resumes from. */

/* The records of case c (one per variant, in variant order); *out is
 * malloc'ed, each record to be freed with lm_record_free.  fingerprint
 * NULL: run->fingerprint.  Fields added in extra: case, split, node
 * (run->node, when set),
 * case_variant (index), case_variants, pred_cross, pred_default,
 * pred_roofline (s), spread, terms_ns (run->term_names -> ns), and, each
 * optional, confirmed and confirmed_times (s), contended (true), noise
 * (lm_noise_to_json) and attempts (when c->attempts > 0). */
lm_status lm_eval_case_records(lm_keep const lm_eval_case *c,
                               lm_keep const lm_eval_run *run,
                               const char *fingerprint, lm_give lm_record **out,
                               int *n, lm_error *err);
/* Rebuild the cases of records (a record without the optional fields above
 * reads as unconfirmed, uncontended, attempts 0: verdict unknown; a bad
 * one is LM_EINPUT naming the record): a case is complete when it has as many
 * records as its "case_variants" field says; incomplete cases are dropped
 * and counted in *incomplete.  A case is one measurement on one machine
 * type: records of one case id and two fingerprints are two cases, each
 * with its fingerprint and node (the first record's).  Records repeated
 * across files (merging overlapping shards) are deduplicated by (case id,
 * fingerprint, variant). Cases come
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

/* ---- the learned correction: training and cross-validation -------------
 * heldout/learn.c (docs/learned.md).  Rows are the timed, verified,
 * uncontended variants of the quiet cases measured by lm_evaluate (records of the
 * suite and its validation shapes, never of a held-out set), priced by
 * profile; a case weighs 1 in all.  Cross-validation leaves one kernel
 * out at a time and scores each model's pick per case (the argmin of its
 * prediction among the case's timed variants) against the measured best. */

typedef struct lm_profile lm_profile;
typedef struct lm_learn_opts {
  const lm_profile *profile; /* prices the rows (required) */
  lm_learned_opts model;     /* the trees' options */
  /* 1: the profile's own calibration samples are training rows too, one
   * case per benchmark source and shape timed under two or more variants
   * (the math providers' routines, mappings of one copy); never left out
   * nor scored by the cross-validation.  Default 0, chosen by that
   * cross-validation on the suite (docs/learned.md: 6.2% with them, 4.2%
   * without). */
  int calib;
} lm_learn_opts;
/* no profile, lm_learned_defaults, calib 0 */
void lm_learn_defaults(lm_learn_opts *o);

/* One cross-validation fold: one kernel left out. */
typedef struct lm_learn_fold {
  char *kernel;      /* its name */
  int rows, cases;   /* its timed variants and cases */
  double geo_analytic, geo_learned; /* geomean top-1 regret of each model */
  /* RMS of log(predicted / measured) within a case (its mean removed) */
  double rms_analytic, rms_learned;
} lm_learn_fold;

typedef struct lm_learn_result {
  lm_learned *model;  /* trained on every row (owned) */
  int rows, ncases;   /* rows and cases trained on */
  int skipped_ragged; /* cases of kernels with per-row lengths, left out */
  int skipped_noisy;  /* cases measured under interference, left out */
  /* of rows and ncases, those of the profile's calibration samples (calib) */
  int calib_rows, calib_cases;
  int nfolds;
  lm_learn_fold *folds;
  /* over every fold's cases */
  double cv_geo_analytic, cv_geo_learned;
  double cv_rms_analytic, cv_rms_learned;
  int learned_better; /* the learned model's CV geomean regret is lower */
} lm_learn_result;

/* Train on cases[n] and cross-validate.  LM_EINPUT when the cases hold
 * fewer than two kernels with timed variants; kernel, shape and variant
 * errors as lm_kernel_load, lm_shape_bind and lm_variant_parse give them. */
lm_status lm_learn(lm_keep const lm_learn_opts *o,
                   lm_keep const lm_eval_case *cases, int n,
                   lm_learn_result *out, lm_error *err);
void lm_learn_result_free(lm_learn_result *r);

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
 * every policy choose (lm_eval_choose: the model-based ones through a
 * workload of the cases and its plans); compile the kernel's variants
 * (lm_eval_kernel_compile) and the plan (lm_dispatch_new); measure the
 * oracle and the plan's picks (lm_eval_case_measure); score
 * (lm_eval_case_score).  lm_evaluate, below, runs them all. */

typedef struct lm_profile lm_profile;

typedef struct lm_eval_opts {
  lm_isa isa;                  /* ISA target evaluated */
  const lm_profile *profile;   /* calibrated for isa (required) */
  const lm_profile *cross;     /* another ISA target's profile; NULL = none */
  const lm_profile *defaults;  /* uncalibrated defaults (required) */
  /* The learned correction of profile's predictions (pred_learned and the
   * plan-learned policy); NULL = none. */
  const lm_learned *learned;
  int workers[8]; /* worker counts enumerated; 0 ends.  Default: 1, 2, 4,
                     ... up to lm_cores_available(), and 2 at least */
  lm_timing_opts timing;       /* protocol of the oracle measurement */
  uint64_t seed;               /* input data seed */
  lm_pool *pool;               /* NULL: the shared pool */
  /* Inductor-like heuristic: parallelise over rows when there are at least
   * two rows and R*C reaches this many elements. */
  int64_t inductor_parallel_elems;
  /* 1: screen every split of every code variant.  0 (the default): the
   * oracle's split pruning (LM_EVALUATE_SPLIT_TOP). */
  int all_splits;
  /* The floating-point mode of every variant: LM_FP_RELAXED enumerates the
   * relaxed variants of the kernels it changes (the others stay strict),
   * so a run judges one mode and neither hides the other. */
  lm_fp fp;
} lm_eval_opts;

/* A miss above the p90 target whose plan mapping, run with the best's
 * workers and split, comes within this of the best is a threads miss
 * (report.md, Misses). */
#define LM_REGRET_THREADS 0.03

/* The oracle's split pruning.  Every split of every code variant would
 * triple a case's entries (five splits per worker count above one), and
 * every math provider (up to four) multiplies them again, so a case is
 * screened in two rounds.  The first times every variant with the default
 * math provider (sleef-u10) whose split is not dynK (one worker, static,
 * and any gG), every policy's pick, every variant the case list names in
 * its "time", the model's 20 best among the verified
 * variants (the largest autotuning budget) and its near ties.  The second
 * times the dynK splits of the LM_EVALUATE_SPLIT_TOP code variants whose
 * parallel variants screened fastest in the first, and the other math
 * providers of the LM_EVALUATE_SPLIT_TOP fastest mappings (at their
 * worker count, every split).  The rest are verified but never timed (measured
 * NAN).  docs/evaluation.md ("Split pruning") has the
 * rule's check: run with all_splits (`--all-splits`) and the report counts
 * the cases whose best the rule would have pruned. */
#define LM_EVALUATE_SPLIT_TOP 3
/* The rule, for the measurement and for its check.  The first round:
 * in[i] 1 for the variants of c it times (vs: c's variants; every one with
 * all_splits). */
void lm_eval_split_first(const lm_eval_case *c, const lm_variant *vs,
                         int all_splits, unsigned char *in);
/* The second round, from the first round's screening times
 * (c->v[i].measured where first[i]): second[i] 1 for the dynK splits (not
 * in first) of the LM_EVALUATE_SPLIT_TOP fastest uncontended parallel code
 * variants, and for the other math providers (not in first) of the
 * LM_EVALUATE_SPLIT_TOP fastest uncontended mappings.  Returns how many. */
int lm_eval_split_second(const lm_eval_case *c, const lm_variant *vs,
                         const unsigned char *first, unsigned char *second);

/* The timing protocol of an evaluation.  The reference protocol
 * (lm_timing_defaults: 100 ms warm-up, 7 samples of 30 ms) is for a few
 * entries compared side by side; an evaluation times every legal variant of
 * every case: the 53 bundled cases hold 5,248 (case, variant) entries on
 * x86-64-v4 (32 to 128 a case), 18 minutes of samples per target at 7 x
 * 30 ms before warm-up and repetition calibration.  The full protocol keeps
 * the reference's 7 samples, so a variant's p10, p50 and p90 stay order
 * statistics of real samples, and shortens each to 10 ms, well above the
 * clock's resolution and a launch's overhead (6 minutes of samples); the
 * quick one (`--quick`, and lm_eval_defaults) takes 5 samples of 2 ms, under
 * a minute, its figures spread by the load of the host
 * (docs/evaluation.md, "Wall time"). */
#define LM_EVALUATE_SAMPLES 7
#define LM_EVALUATE_SAMPLE_MS 10.0
#define LM_EVALUATE_WARMUP_MS 50.0
#define LM_EVALUATE_QUICK_SAMPLES 5
#define LM_EVALUATE_QUICK_SAMPLE_MS 2.0
#define LM_EVALUATE_QUICK_WARMUP_MS 20.0

/* A case whose measurement the noise verdict calls noisy is measured again,
 * up to this many more times; the last measurement and its verdict are
 * kept, and a case still noisy then is reported as such.  Two: a burst of
 * another process rarely spans three measurements of a case (a quick
 * case takes tens of ms), and a machine that stays busy is not made quiet
 * by retrying (docs/evaluation.md, "Noise verdicts"). */
#define LM_EVALUATE_REMEASURE 2

/* The confirmation round (winner's curse): after screening every variant,
 * the LM_EVALUATE_CONFIRM_TOP fastest and every policy's pick are timed
 * again, interleaved, with LM_EVALUATE_CONFIRM_SAMPLES(s) rounds for a
 * screening of s, and regrets use those times.  The best of many noisy
 * screening times is biased low; re-measuring a small set independently
 * removes the bias for the variants that decide the figures.  Five:
 * the quick profile's top-5 already reaches within about 1% of the best
 * (docs/evaluation.md, "Measured autotuning"), so the true best is in the
 * screening's top five unless noise moved it by more than that. */
#define LM_EVALUATE_CONFIRM_TOP 5
#define LM_EVALUATE_CONFIRM_SAMPLES(s) (2 * (s))

/* isa host, workers {1, 2}, timing defaults but the quick protocol
 * (LM_EVALUATE_QUICK_*), seed 1, inductor_parallel_elems 32768. */
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
/* Where a case's plan pick is launched from: kernel `kernel` of a
 * dispatch built from the plan policy's plan. */
typedef struct lm_dispatch lm_dispatch;
typedef struct lm_eval_launch {
  const lm_dispatch *dispatch;
  int kernel;
} lm_eval_launch;

/* The variants the confirmation round of c times, marked in in[0..nvariants)
 * (which the caller clears): the `top` verified variants with the least
 * screening times (uncontended ones only when contended is set; ties to
 * the lower index), every policy's pick that was verified and timed, and
 * the plan's.  Returns how many are marked.  The picks are known before
 * any measurement, since no policy looks at measured times. */
int lm_eval_confirm_set(lm_keep const lm_eval_case *c, int top,
                        unsigned char *in);

/* The discord of c's measurement (lm_noise_limits.discord_max): the
 * largest max(a/b, b/a) - 1 between a policy's pick's screening median
 * (measured) and its confirmed one, over the picks timed in both rounds
 * and not contended; NAN when there is none.  Only the picks are judged:
 * they are chosen before any timing, so both medians estimate one time,
 * while the screening's fastest are biased low by their selection. */
double lm_eval_pick_discord(lm_keep const lm_eval_case *c);

/* The confirmation round of c: time the set lm_eval_confirm_set marks,
 * entries[v] being variant v's (entries[v].run NULL: not timeable),
 * interleaved with o->timing but LM_EVALUATE_CONFIRM_SAMPLES rounds, and
 * store each one's confirmed p50 and samples.  *noise gets the round's
 * verdict.  heldout/confirm.c. */
lm_status lm_eval_case_confirm(lm_keep const lm_eval_opts *o,
                               lm_keep const lm_timed *entries,
                               lm_eval_case *c, lm_noise *noise,
                               lm_error *err);

/* Verify every variant against the FP64 oracle, then time the verified ones
 * interleaved, with the canary and o->pool (else the shared pool) watched
 * for the noise verdict; then confirm (lm_eval_case_confirm) and judge the
 * picks' discord (lm_eval_pick_discord) with the round.  A case whose
 * verdict is noisy is measured again, up to LM_EVALUATE_REMEASURE more
 * times, keeping the last (c->noise, c->attempts); parallel variants
 * measured with fewer free CPUs than workers are marked contended.  A variant that fails keeps verified 0 and is never timed;
 * the mismatch is counted in *failures (may be NULL), and the call still
 * succeeds.  With plan (may be NULL), the plan's pick is also launched
 * through plan->dispatch at the case's shape: it must run the variant
 * c->choice[LM_POLICY_PLAN] names (else LM_EFAIL), it is verified (a
 * failure counts), and timed in the same rounds (t_dispatch,
 * dispatch_ratio).  Needs lm_eval_kernel_compile first. */
lm_status lm_eval_case_measure(lm_keep const lm_eval_opts *o,
                               lm_keep const lm_eval_kernel *k,
                               lm_keep const lm_eval_launch *plan,
                               lm_eval_case *c, int *failures, lm_error *err);

/* The cases of a run as a workload, and the model-based policies' plans of
 * it: what `lanemap solve` would make of the cases. */
typedef struct lm_workload lm_workload;
typedef struct lm_plan lm_plan;
typedef struct lm_eval_plans {
  /* One kernel per (kernel file, extra symbols), one bucket per shape with
   * weight the number of its cases, the run's ISA target and worker counts,
   * no cap and no compile budget. */
  lm_workload *workload;
  int *kernel, *bucket; /* [ncases]: the case's workload kernel and bucket */
  /* The plans of LM_POLICY_PLAN, CROSS (when every case has a cross
   * prediction) and DEFAULT, each priced with that policy's predictions of
   * the cases; NULL for the other policies. */
  lm_plan *plan[LM_POLICY__COUNT];
  double solve_s; /* the solver's time over the plans */
} lm_eval_plans;

/* The workload of run's cases and the model-based policies' plans of it,
 * setting those policies' choices. */
lm_status lm_eval_plans_make(lm_keep const lm_eval_opts *o, lm_eval_run *run,
                             const char *dir, lm_eval_plans *out,
                             lm_error *err);
/* Every policy's choice for every case of run.  The plan, cross-ISA and
 * default-profile policies solve the run's workload (out->workload) with
 * their predictions; with one bucket per shape and no cap or budget the
 * solver's answer is the per-bucket argmin, and each case takes its
 * bucket's variant from the plan.  out->workload is named
 * DIR/workload.json (dir NULL: built in code).  Free out with
 * lm_eval_plans_free, also after an error. */
lm_status lm_eval_choose(lm_keep const lm_eval_opts *o, lm_eval_run *run,
                         const char *dir, lm_eval_plans *out, lm_error *err);
/* The variant a fixed rule picks for case c (always-program, always-packet
 * or inductor-like; -1 when no variant fits the rule), as lm_eval_choose
 * sets it: the rule's own preferences, ties to the first enumerated.
 * LM_EINPUT for another policy. */
lm_status lm_eval_fixed_choice(lm_keep const lm_eval_opts *o,
                               lm_keep const lm_eval_case *c, lm_policy p,
                               int *choice, lm_error *err);
/* Write DIR/workload.json and the plans, DIR/plan.json for the plan policy
 * and DIR/plan-<policy>.json for the others, atomically. */
lm_status lm_eval_plans_save(lm_keep const lm_eval_plans *p, const char *dir,
                             lm_error *err);
void lm_eval_plans_free(lm_eval_plans *p);
/* Set run's term names from the cost model. */
lm_status lm_eval_run_init(lm_eval_run *run, lm_isa isa, lm_error *err);

/* ---- the whole evaluation ------------------------------------------------ *
 * lm_evaluate is `lanemap evaluate`: for every ISA target, take the profile
 * (given, cached, or calibrated and cached), predict every variant of every
 * case, solve the cases' workload, write it and the plan beside the
 * records, compile the plan, measure every variant and the plan's picks
 * through its dispatch, score, and report.  Finished cases are appended to
 * OUT/ISA/records.jsonl as they finish; a later run with the same cases,
 * seed and protocol takes them from there (resume).  heldout/evaluate.c. */

#define LM_EVALUATE_MAX_ISAS 4

typedef enum lm_evaluate_stage {
  LM_EVALUATE_CALIBRATE, /* calibrating a target's profile: suite steps */
  LM_EVALUATE_MEASURE,   /* compiling and measuring a target's cases */
} lm_evaluate_stage;

typedef struct lm_evaluate_options {
  const char *cases; /* the case list (lanemap.cases/1), required */
  const char *out;   /* the output folder, created; required */
  /* ISA targets measured, in order; each one's profile also plans the next
   * one's cases (leave one ISA target out).  nisa 0: x86-64-v4 and
   * x86-64-v3 where runnable, else x86-64-v3 and x86-64-v2, else host; with
   * quick only the first. */
  lm_isa isa[LM_EVALUATE_MAX_ISAS];
  int nisa;
  /* With one target, another whose profile also plans its cases: -1 the
   * default (x86-64-v3 for v4; v4, else v2, for v3), 0 none, 1 cross_isa. */
  int cross;
  lm_isa cross_isa;
  const char *profile; /* the one target's profile file; NULL: the cache,
                          else calibrate and cache */
  /* A learned correction (lm_learned_save's file) of the first target's
   * profile: the plan-learned policy.  NULL: none. */
  const char *learned;
  int quick;           /* quick calibration and the quick protocol */
  int fresh;           /* ignore the records of an earlier run */
  int all_splits;      /* no split pruning (lm_eval_opts.all_splits) */
  lm_fp fp;            /* floating-point mode (lm_eval_opts.fp) */
  /* Take a cached profile that calibration flagged noisy (passed to
   * lm_profile_lookup); the CLI also keeps its exit status 0 for a noisy
   * run with it.  `--accept-noisy`, env LANEMAP_ACCEPT_NOISY=1. */
  int accept_noisy;
  int shard_i, shard_n; /* only block shard_i of shard_n (lm_cases_shard) */
  uint64_t seed;        /* input data seed */
  /* Timing protocol; NULL: LM_EVALUATE_*, or LM_EVALUATE_QUICK_* with
   * quick. */
  const lm_timing_opts *timing;
  /* Called as a stage starts (done 0), after each step (what names it) and
   * as it ends (done == total, what NULL).  May be NULL. */
  void (*progress)(void *ctx, lm_evaluate_stage stage, const char *isa,
                   int done, int total, const char *what);
  /* One line for the user, without a newline: which profile, what was
   * resumed, what each target took; warning 1 for a fingerprint mismatch,
   * a failed oracle check or missing plots.  May be NULL. */
  void (*note)(void *ctx, int warning, const char *line);
  void *ctx;
} lm_evaluate_options;
/* No cases or folder, the default targets and cross target, the cache,
 * full protocol, no shard (0 of 1), seed 1, no callbacks. */
void lm_evaluate_options_defaults(lm_evaluate_options *o);

/* What one target's evaluation found: one ISA target on one machine
 * type.  Records of other machine types in OUT/ISA make a target of their
 * own each (foreign 1), resumed and never measured here, planned with the
 * profile bundled for that type (lm_eval_bundle_path). */
typedef struct lm_evaluate_target {
  lm_isa isa;
  char fingerprint[17]; /* the machine type */
  char node[64];        /* its nodes seen, comma-separated (cut) */
  int foreign;          /* 1: another machine type's measurements */
  char dir[96];         /* its folder under OUT: "x86-64-v4", or
                           "x86-64-v4/machine-<fingerprint>" */
  int ncases;       /* cases evaluated */
  int measured;     /* of them measured by this call; the rest resumed */
  int failures;     /* variants that failed the oracle check, all cases */
  int dispatched;   /* cases whose plan pick ran through the dispatch now */
  double dispatch_ratio; /* median of their dispatch_ratio; NAN if none */
  double calibrate_s, solve_s, compile_s, measure_s; /* wall times */
  double plan_compile_s; /* of compile_s, compiling the plan's dispatch */
  int has_cross;    /* another target's profile planned these cases */
  lm_isa cross_isa;
  lm_regret_stats stats[LM_POLICY__COUNT]; /* n 0: the policy never chose */
  lm_regret_interval plan_ci; /* bootstrap 95% intervals of the plan's */
  /* Verdicts: cases measured quiet, still noisy after re-measuring, of
   * unknown verdict (resumed from older records), and whose plan pick was
   * contended (left out of the figures); noise merges every case's.
   * unstable counts the quiet cases whose spread alone passed its limit. */
  int quiet, unstable, noisy, unknown, contended;
  lm_noise noise;
  /* Winner's curse: geomean of screening best / confirmed best - 1 over
   * the bias_n cases with a confirmation. */
  double bias;
  int bias_n;
} lm_evaluate_target;

/* Targets of one call: each ISA target on each machine type. */
#define LM_EVALUATE_MAX_TARGETS 32

typedef struct lm_evaluate_result {
  int ntargets;
  lm_evaluate_target target[LM_EVALUATE_MAX_TARGETS];
  int failures; /* over every target */
  int noisy;     /* cases still noisy after re-measuring, every target */
  int contended; /* cases whose plan pick was contended, every target */
  int cases;     /* cases evaluated, every target */
  lm_noise noise; /* every case's verdict merged */
  /* The other process that used the most CPU time while the cases were
   * measured (pid 0: none, or /proc unreadable): whom a noisy verdict
   * names. */
  lm_proc_top busiest;
  /* The participants' skew (lm_pool_skew_probe, 40 launches) before the
   * cases were measured and after: how much slower the slower core ran
   * equal work; NAN where it could not be measured (no pool thread). */
  double skew_before, skew_after;
  double total_s;
} lm_evaluate_result;

/* Where target folder OUT/ISA bundles the profile that planned machine
 * type fp's cases in protocol mode ("quick" or "full"):
 * OUT/ISA/profile-<fp>-<mode>.json.  `evaluate` writes this machine's;
 * `merge` copies the shards'.  LM_EINPUT for a fingerprint that is not 16
 * hex digits or a path longer than n. */
lm_status lm_eval_bundle_path(const char *out, const char *isa,
                              const char *fp, const char *mode, char *buf,
                              size_t n, lm_error *err);

/* Run the evaluation o describes.  Writes OUT/report.md (one line per
 * target), and per target OUT/ISA/ report.md, records.jsonl, workload.json,
 * plan.json, plan-<policy>.json, the plots and the profile bundle
 * (OUT/ISA/machine-<fp>/ for another machine type's report and plans).  Variants that fail the
 * oracle check are counted in out->failures and are not an error: the call
 * failed only when it returns something other than LM_OK.  LM_EINPUT for
 * bad options, cases or profiles, LM_ESYS when a file cannot be written. */
lm_status lm_evaluate(const lm_evaluate_options *o, lm_evaluate_result *out,
                      lm_error *err);

/* ---- deployment --------------------------------------------------------- *
 * lm_deploy is `lanemap evaluate --deploy`: what a pipeline meets when it
 * compiles a few variants per kernel ahead of time and dispatches shapes it
 * never planned for (docs/evaluation.md, "Deployment").  A deployment spec
 * (lanemap.deploy/1, heldout/deploy.json) gives per kernel its fixed
 * columns and the distribution of R (log-uniform over a range).  From it:
 *
 *   - a workload whose planning buckets are geometric over each (kernel, C)
 *     range, each weighing the kernel's weight times the share of the
 *     distribution it serves under thresholded dispatch ([R_b, R_b+1));
 *   - held-out shapes drawn from the same distribution with the spec's
 *     seed, never a bucket's R, no buffer above the element cap;
 *   - every legal variant of every held-out shape measured by lm_evaluate
 *     (OUT/measure: verification, interleaved timing, noise verdicts,
 *     records, resume);
 *   - per budget K (variants per kernel, 0 unlimited) the plans of each
 *     policy below with thresholded dispatch, each held-out shape looked up
 *     in the plan (lm_plan_lookup) and priced with its measured time; the
 *     calibrated plan's dispatch is also compiled and every held-out shape
 *     launched through it and checked against the oracle;
 *   - regret against the per-shape best, and against the budget oracle: the
 *     best K-variant threshold plan in hindsight, the same ILP solved on
 *     the held-out shapes' measured times with the workload's buckets. */

#define LM_DEPLOY_MAX_BUDGETS 8
#define LM_DEPLOY_SCHEMA "lanemap.deploy/1"

/* One kernel of a deployment spec: its fixed columns, and R log-uniform
 * over [from, to], capped per column so that no buffer holds more than the
 * spec's element cap (rmax[c]). */
typedef struct lm_deploy_kernel {
  char *path;     /* resolved against the spec's folder */
  lm_kernel *k;   /* loaded */
  int64_t *C;     /* [nC] */
  int nC;
  int64_t from, to;
  int64_t *rmax;  /* [nC] */
  double weight;  /* launches per pipeline step, relative */
} lm_deploy_kernel;

typedef struct lm_deploy_spec {
  lm_deploy_kernel *k;
  int nkernels;
  uint64_t seed;        /* of the held-out shapes */
  int shapes;           /* held-out shapes per kernel (quick or full) */
  int buckets;          /* planning buckets per (kernel, C) */
  int64_t max_elements; /* per buffer (quick or full) */
} lm_deploy_spec;

/* Load a spec (quick: its quick shapes and element cap).  Every malformed
 * field is LM_EINPUT naming its JSON path; a kernel that does not load is
 * LM_EINPUT with the kernel's own message. */
lm_status lm_deploy_spec_load(const char *path, int quick, lm_deploy_spec *out,
                              lm_error *err);
void lm_deploy_spec_free(lm_deploy_spec *s);
/* The planning buckets of kernel k at its column c: up to n R values
 * geometric over [from, rmax[c]], rounded, repeats dropped; returns how
 * many (R has room for n). */
int lm_deploy_buckets(const lm_deploy_kernel *k, int c, int n, int64_t *R);
/* Up to n held-out shapes of spec kernel ki: C uniform over its columns, R
 * log-uniform over [from, rmax], never a planning bucket's R and never
 * twice, drawn from the spec's seed and the kernel's name (the same on
 * every machine).  Returns how many. */
int lm_deploy_shapes(const lm_deploy_spec *s, int ki, int n, int64_t *R,
                     int64_t *C);

typedef enum lm_deploy_policy {
  LM_DEPLOY_PLAN,     /* the ILP on the calibrated predictions */
  LM_DEPLOY_ROBUST,   /* the same, min-max over the bootstrap scenarios */
  LM_DEPLOY_GREEDY,   /* the K variants predicted best for the most weight */
  LM_DEPLOY_PACKET,   /* the ILP over packet-local (L = W) variants only */
  LM_DEPLOY_DEFAULT,  /* the ILP on the uncalibrated defaults' predictions */
  LM_DEPLOY_INDUCTOR, /* the inductor-like rule per shape: no plan, no budget */
  LM_DEPLOY_ORACLE,   /* the budget oracle (measured, in hindsight) */
  LM_DEPLOY__COUNT
} lm_deploy_policy;

/* "plan", "robust", "greedy", "always-packet", "default-profile",
 * "inductor-like", "budget-oracle". */
const char *lm_deploy_policy_name(lm_deploy_policy p);

typedef struct lm_deploy_options {
  const char *spec; /* the deployment spec, required */
  const char *out;  /* the output folder, created; required */
  /* The one ISA target; LM_ISA__COUNT: x86-64-v4 where runnable, else
   * x86-64-v3, else host. */
  lm_isa isa;
  const char *profile; /* its profile file; NULL: cache, else calibrate */
  int quick;           /* quick calibration and protocol, the quick shapes */
  int fresh, accept_noisy;
  uint64_t seed; /* input data seed (the shapes come from the spec's seed) */
  int budgets[LM_DEPLOY_MAX_BUDGETS]; /* K per kernel, 0 = unlimited */
  int nbudgets;                       /* 0: 1, 2, 4 and unlimited */
  int shapes; /* held-out shapes per kernel; 0: the spec's (quick or full) */
  /* 1: the oracle times every split of every variant; 0: its split
   * pruning (LM_EVALUATE_SPLIT_TOP), which always times the variants the
   * predicted plans run */
  int all_splits;
  /* As lm_evaluate_options's, for the measurement and the deployment. */
  void (*progress)(void *ctx, lm_evaluate_stage stage, const char *isa,
                   int done, int total, const char *what);
  void (*note)(void *ctx, int warning, const char *line);
  void *ctx;
} lm_deploy_options;
void lm_deploy_options_defaults(lm_deploy_options *o);

/* One policy at one budget, over every held-out shape. */
typedef struct lm_deploy_row {
  lm_deploy_policy policy;
  int budget;    /* K, 0 unlimited */
  int made;      /* 0: not made (robust without bootstrap resamples) */
  int left_out;  /* shapes whose pick was timed contended: not counted */
  int variants;  /* variants the plan compiles, every kernel */
  lm_regret_stats best; /* against the per-shape best */
  /* Against the budget oracle of the same K, per shape t / t_oracle - 1
   * (negative where the policy happens to beat it): geomean and max. */
  double oracle_geomean, oracle_max;
  /* The weighted workload time (Σ kernel weight × mean over its held-out
   * shapes) over the budget oracle's, and over the per-shape best's, - 1. */
  double workload_oracle, workload_best;
} lm_deploy_row;

typedef struct lm_deploy_result {
  char isa[32];
  int kernels, shapes; /* kernels of the spec, held-out shapes */
  int measured;        /* shapes measured by this call; the rest resumed */
  int failures;        /* variants or dispatched launches that failed the
                          oracle check */
  int dispatched;      /* held-out shapes launched through the plan's
                          dispatch and verified, every budget */
  int nrows;
  lm_deploy_row row[LM_DEPLOY__COUNT * LM_DEPLOY_MAX_BUDGETS];
  double measure_s, deploy_s, total_s;
  int noisy; /* held-out shapes still noisy after re-measuring */
} lm_deploy_result;

/* Run the deployment evaluation o describes: OUT/cases.json (the held-out
 * shapes), OUT/workload.json, OUT/measure/ (lm_evaluate's output for the
 * shapes), OUT/plans/ (every policy's plan per budget), OUT/deploy.md,
 * OUT/deploy.jsonl (one record per policy, budget and shape) and
 * OUT/deploy-regret.png.  LM_EINPUT for a bad spec or options. */
lm_status lm_deploy(const lm_deploy_options *o, lm_deploy_result *out,
                    lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
