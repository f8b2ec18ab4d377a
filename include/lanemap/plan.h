/* lanemap plans: what the solver decided for a workload, and how it got
 * there (DESIGN.md §11).
 *
 *   workload × profiles --lm_plan_problem_build--> lm_solve_problem
 *        --lm_solve--> lm_solve_result --lm_plan_from_result--> lm_plan
 *
 * A plan holds, per kernel, the kernel file and a hash of its source, the
 * variant strings to compile, every bucket's shape with the index of the
 * variant it runs and its predicted cost, and with thresholded dispatch the
 * R thresholds; plus the profiles' fingerprints, the mode and the solver's
 * report.  On disk it is one JSON file, schema "lanemap.plan/1", written
 * atomically; docs/solver.md explains how to read one.  The backend turns
 * a plan into launchable code (lanemap/dispatch.h). */
#ifndef LANEMAP_PLAN_H
#define LANEMAP_PLAN_H

#include <stdbool.h>

#include "lanemap/profile.h"
#include "lanemap/solver.h"
#include "lanemap/workload.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LM_PLAN_SCHEMA "lanemap.plan/1"

/* ---- problem building ---------------------------------------------------- */

/* One kernel of a built problem: its candidates and the bucket order the
 * solver sees (by C, then R, so that thresholds run over R). */
typedef struct lm_plan_pkernel {
  lm_variant *variants; /* [nvariants], enumerated per allowed ISA and worker count */
  int nvariants;
  int *order;    /* [nbuckets]: solver bucket s is workload bucket order[s] */
  double *weight; /* [nbuckets], in solver order */
  double *cost;   /* [nscenarios][nbuckets][nvariants] ns, as the solver sees them */
  /* With settle: [nbuckets][nvariants] the point predictions (scenario 0
   * before lm_plan_problem_settle) and the named defaults' predictions;
   * NULL otherwise. */
  double *point;
  double *prior;
  /* After lm_plan_problem_settle: [nbuckets][nvariants], 1 for the
   * variants the bootstrap cannot tell from the bucket's point best (the
   * best among them); NULL before. */
  unsigned char *tie;
  double *compile_cost; /* [nvariants] ms (1 each with a budget in variants) */
} lm_plan_pkernel;

typedef struct lm_plan_problem {
  lm_solve_problem p;   /* borrows the arrays below */
  lm_solve_kernel *k;   /* [nkernels] */
  lm_plan_pkernel *pk;  /* [nkernels] */
  int robust;           /* scenario 0 the point prediction, j >= 1 bootstrap j-1 */
  int unpredictable;    /* (kernel, bucket, variant) cells whose features failed */
  int settle;           /* built for lm_plan_problem_settle */
  int settled;          /* buckets whose preferred variant is not the point best */
  int ties;             /* buckets with more than one indistinguishable variant */
} lm_plan_problem;

typedef struct lm_plan_build_opts {
  int robust; /* one scenario per bootstrap resample of the profiles */
  /* keep the bootstrap scenarios and the named defaults' predictions for
   * lm_plan_problem_settle (ignored with robust, which decides on the
   * scenarios itself) */
  int settle;
} lm_plan_build_opts;

/* Predict every (kernel, bucket, variant) of a bound workload.  profiles[i]
 * prices the variants of w->isa[i] (the same profile may be passed for
 * several).  Features are counted once per cell and evaluated per
 * scenario.  Robust mode needs every profile to hold the same number >= 1
 * of bootstrap vectors.  A cell whose features cannot be counted is not
 * allowed (INFINITY) and counted in `unpredictable`. */
lm_status lm_plan_problem_build(lm_keep const lm_workload *w,
                                lm_keep const lm_profile *const *profiles,
                                const lm_plan_build_opts *o,
                                lm_plan_problem *out, lm_error *err);
void lm_plan_problem_free(lm_plan_problem *pp);

/* Decide within the model's uncertainty (docs/solver.md, "Settling ties").
 * Per bucket, a variant is indistinguishable from the point best when it
 * is at least as fast in a share >= alpha of the bootstrap scenarios
 * (paired: both priced with the same resample).  Among those the plan
 * prefers the fewest chunks per worker (1 for one worker and for static,
 * K for dynK), then the lowest prediction under the named defaults, then
 * the earliest enumerated: the calibration decides where its resamples
 * agree, and a near tie is broken by a rule no calibration moves.  The
 * solver then sees every indistinguishable variant at the point best's
 * cost, raised by LM_SETTLE_STEP per rank of preference; the point
 * predictions stay in pk->point for the plan.  Afterwards the problem has
 * one scenario.  A problem built without settle (or with robust), or
 * settled already, is left as it is. */
/* chosen on the suite and validation cases (docs/solver.md, "Settling
 * near ties": re-chosen with the calibration families of model form 7's
 * term trials) */
#define LM_SETTLE_ALPHA 0.2
#define LM_SETTLE_STEP 1e-4
lm_status lm_plan_problem_settle(lm_plan_problem *pp, double alpha,
                                 lm_error *err);
/* The rule alone, on a problem built with settle and not yet settled: is
 * variant v of kernel ki indistinguishable from the point best of solver
 * bucket s (pp->pk[ki].order maps it to the workload's)?  The point best
 * is; a variant that cannot run there is not; after settling, or without
 * bootstrap resamples, only the point best is.  lm_tune measures these
 * beside the model's top K (lanemap/tune.h). */
bool lm_plan_problem_near_tie(lm_keep const lm_plan_problem *pp, int ki, int s,
                              int v, double alpha);

/* ---- plans --------------------------------------------------------------- */

typedef struct lm_plan_bucket {
  int64_t R, C;
  double weight;
  int variant;         /* index into the kernel's variants */
  double predicted_ns; /* of that variant, scenario 0 */
  /* An unsure bucket: its best predicted candidates are within each
   * other's bootstrap reach (the near ties of settling), listed here as
   * variant strings, the preferred first; nunsure 0 (unsure NULL) for a
   * sure bucket.  A pipeline measures these (lanemap tune --measure 0). */
  char **unsure;
  int nunsure;
} lm_plan_bucket;

/* Thresholded dispatch at one C: runs[i] starts at R >= from_R[i]. */
typedef struct lm_plan_threshold {
  int64_t C;
  int nruns;
  int64_t *from_R; /* increasing; from_R[0] is the smallest bucket R */
  int *variant;
} lm_plan_threshold;

typedef struct lm_plan_kernel {
  char *name;   /* the kernel's name */
  char *path;   /* the kernel file, absolute when the plan was made */
  char *hash;   /* 16 hex digits, FNV-1a of the file's bytes */
  char *extra;  /* NULL or "H=64" */
  char **variants; /* the variant strings to compile */
  int nvariants;
  lm_plan_bucket *buckets; /* in the workload's order */
  int nbuckets;
  lm_plan_threshold *thresholds; /* with threshold mode, one per C */
  int nthresholds;
} lm_plan_kernel;

/* One profile a plan was priced with. */
typedef struct lm_plan_profile {
  char isa[32];         /* the ISA target it priced */
  char fingerprint[17]; /* its machine fingerprint hash */
  char mode[16];        /* "default", "quick", "full" */
} lm_plan_profile;

typedef struct lm_plan {
  char *workload; /* the workload file it was made from ("" if built in code) */
  lm_plan_profile profiles[LM_ISA__COUNT];
  int nprofiles;
  int threshold, robust, scenarios;
  int settle; /* near ties settled (lm_plan_problem_settle); false in plans
               * written before the field existed */
  /* the solver's report */
  char status[16]; /* lm_solve_status_name */
  double objective, greedy_objective, bound, gap, time_s, compile_total_ms;
  long nodes;
  int mip_solves, pruned;
  lm_plan_kernel *kernels;
  int nkernels;
} lm_plan;

/* The plan of a solve.  profiles as for lm_plan_problem_build; opts gives
 * the threshold and robust flags.  Only compiled variants appear, in
 * order, and buckets refer to them. */
lm_status lm_plan_from_result(lm_keep const lm_workload *w,
                              lm_keep const lm_profile *const *profiles,
                              lm_keep const lm_plan_problem *pp,
                              lm_keep const lm_solve_opts *opts,
                              lm_keep const lm_solve_result *r,
                              lm_give lm_plan **out, lm_error *err);
void lm_plan_free(lm_take lm_plan *p);

/* What loading found besides errors; the caller prints the warning. */
typedef struct lm_plan_load_info {
  int fingerprint_checked; /* this machine could be fingerprinted */
  int fingerprint_differs; /* a profile's fingerprint is not this machine's */
  char warning[512];       /* "" when every fingerprint matches */
} lm_plan_load_info;

lm_status lm_plan_to_json_text(lm_keep const lm_plan *p, lm_give char **out,
                               lm_error *err);
lm_status lm_plan_save(lm_keep const lm_plan *p, const char *path,
                       lm_error *err);
/* Parse a plan; every malformed field is LM_EINPUT with "NAME: FIELD:
 * expected ...".  Checks the structure only (variant strings parse, bucket
 * variants are in range, thresholds increase), not the files it names.
 * info may be NULL; it is filled only by lm_plan_load (fingerprints). */
lm_status lm_plan_from_json_text(const char *name, const char *text, size_t n,
                                 lm_give lm_plan **out, lm_error *err);
lm_status lm_plan_load(const char *path, lm_give lm_plan **out,
                       lm_plan_load_info *info, lm_error *err);
/* Compare the plan's fingerprints with this machine's into info. */
void lm_plan_check_fingerprint(lm_keep const lm_plan *p,
                               lm_plan_load_info *info);
/* Every field equal (doubles bit for bit). */
bool lm_plan_equal(lm_keep const lm_plan *a, lm_keep const lm_plan *b);

#ifdef __cplusplus
}
#endif
#endif
