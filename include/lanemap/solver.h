/* lanemap solver: which variants to compile per kernel, and which of them
 * each shape bucket runs (DESIGN.md §11).
 *
 * Kernels k have shape buckets s with weights w[k,s] and candidate variants
 * v with predicted costs c[k,s,v] (ns per call; INFINITY = not allowed) and
 * compile costs cc[k,v] (ms).  Binary y[k,v] says v is compiled, x[k,s,v]
 * that bucket s runs v:
 *
 *   min Σ w[k,s] c[k,s,v] x[k,s,v]
 *   Σ_v x[k,s,v] = 1,  x[k,s,v] <= y[k,v],
 *   Σ_v y[k,v] <= K_k (K_k = 0: no cap),  Σ cc[k,v] y[k,v] <= B (B < 0: none).
 *
 * Thresholded dispatch adds: the buckets of one kernel are given in
 * increasing R, and the buckets that run one variant form one contiguous
 * run, so dispatch is a threshold table on R.  Robust mode takes S cost
 * scenarios c^(j) (bootstrap profiles) and minimises max_j Σ w c^(j) x.
 *
 * lm_solve finds a proven optimum (or reports its gap) by the cheapest
 * exact method the instance allows; docs/solver.md lists them.  Every array
 * of a problem is borrowed; a result owns its arrays. */
#ifndef LANEMAP_SOLVER_H
#define LANEMAP_SOLVER_H

#include "lanemap/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest objective a problem may reach: the sum over kernels and
 * buckets of weight x the bucket's largest finite cost, plus every compile
 * cost.  The methods add and compare such sums (and GLPK scales them), so
 * a problem past it is refused as bad input rather than letting a sum
 * overflow to infinity and no variant be chosen; 1e200 leaves a wide
 * margin below DBL_MAX for any sum of them. */
#define LM_SOLVE_MAX_TOTAL 1e200

/* One kernel of a problem. */
typedef struct lm_solve_kernel {
  int nbuckets;         /* >= 1, in increasing R when dispatch is thresholded */
  int nvariants;        /* >= 1 */
  const double *weight; /* [nbuckets], finite, >= 0; see LM_SOLVE_MAX_TOTAL */
  /* [nscenarios][nbuckets][nvariants]: cost[(j*nbuckets + s)*nvariants + v]
   * in ns, >= 0, INFINITY = v may not run s (in any scenario: not at all) */
  const double *cost;
  const double *compile_cost; /* [nvariants] ms, finite, >= 0; NULL = all 0 */
  int cap;                    /* K_k: at most cap variants; 0 = no cap */
} lm_solve_kernel;

typedef struct lm_solve_problem {
  int nkernels;                  /* >= 1 */
  const lm_solve_kernel *kernel; /* [nkernels] */
  /* Cost scenarios per kernel (0 counts as 1).  Without the robust option
   * only scenario 0, the point prediction, is used. */
  int nscenarios;
  double budget; /* B in ms; < 0 = no global budget */
} lm_solve_problem;

typedef enum lm_solve_method {
  /* Decompose by kernel when nothing couples them, then per kernel: the
   * per-bucket argmin when the cap does not bind, the threshold dynamic
   * program, enumeration of small compile sets, or a MIP. */
  LM_SOLVE_AUTO = 0,
  /* One GLPK MIP over all kernels (the direct formulation), for reference. */
  LM_SOLVE_JOINT_MIP = 1,
} lm_solve_method;

/* Options of lm_solve; lm_solve_defaults fills them. */
typedef struct lm_solve_opts {
  double time_limit;      /* s, over the whole call (default 10) */
  double mip_gap;         /* relative gap at which a MIP stops (default 0) */
  int presolve;           /* GLPK LP presolver on the root (default 0:
                             it ignores time_limit) */
  int threshold;          /* thresholded dispatch (default 0) */
  int robust;             /* min-max over the scenarios (default 0) */
  int prune;              /* drop dominated variants first (default 1) */
  int verbose;            /* GLPK's log (default 0: off); see log */
  lm_solve_method method; /* default LM_SOLVE_AUTO */
  /* With verbose, each piece of GLPK's log text goes to log(log_ctx, text);
   * NULL (the default) sends it to stderr, never stdout, so a caller's
   * machine-readable stdout (solve --json) stays clean. */
  void (*log)(void *log_ctx, const char *text);
  void *log_ctx;
} lm_solve_opts;

void lm_solve_defaults(lm_solve_opts *o);

/* What the solver proved about its plan. */
typedef enum lm_solve_status {
  LM_SOLVE_OPTIMAL = 0,    /* proven optimal (within mip_gap, if > 0) */
  LM_SOLVE_FEASIBLE = 1,   /* feasible, gap not closed (a MIP stopped early) */
  LM_SOLVE_TIME_LIMIT = 2, /* time limit hit: the plan is the incumbent */
  LM_SOLVE_INFEASIBLE = 3, /* no plan satisfies the budgets */
} lm_solve_status;

const char *lm_solve_status_name(lm_solve_status s);

/* A plan and what it cost to find.  Kernel k's choices are
 * choice[bucket_start[k] + s], its compiled flags
 * compiled[variant_start[k] + v]. */
typedef struct lm_solve_result {
  lm_solve_status status;
  int nkernels;
  int *bucket_start;       /* [nkernels + 1] */
  int *variant_start;      /* [nkernels + 1] */
  int *choice;             /* variant run by each bucket */
  unsigned char *compiled; /* 1: the variant is compiled */
  double objective;        /* Σ w c x of the plan (robust: worst scenario) */
  double greedy_objective; /* of the greedy plan; INFINITY if it found none */
  double bound;            /* proven lower bound on the optimum */
  double gap;              /* (objective - bound) / objective, 0 if optimal */
  double compile_total;    /* Σ cc y of the plan, ms */
  double time_s;           /* wall time of the call */
  long nodes;              /* branch-and-bound nodes over all MIPs */
  int mip_solves;          /* GLPK MIPs solved */
  int pruned;              /* variants removed as dominated */
} lm_solve_result;

/* Solve p.  LM_OK with a plan whose status is OPTIMAL, FEASIBLE or
 * TIME_LIMIT.  LM_EINPUT for bad input (NaN or negative cost, negative
 * weight, no variants, ...) and for budgets no plan can meet; the message
 * names the binding constraint and r->status is INFEASIBLE.  LM_EFAIL if
 * the time limit passed before any plan was found.  r is filled (and must
 * be freed) whenever the call returns LM_OK. */
lm_status lm_solve(lm_keep const lm_solve_problem *p,
                   lm_keep const lm_solve_opts *o, lm_solve_result *r,
                   lm_error *err);

/* The greedy plan: per kernel, buckets start uncovered, and variants are
 * added by largest marginal saving (per ms of compile cost when there is a
 * global budget) while the cap and the budget allow.  active (NULL = all),
 * indexed like r->compiled, restricts the candidates.  LM_EFAIL if greedy
 * finds no feasible plan (a plan may still exist). */
lm_status lm_solve_greedy(lm_keep const lm_solve_problem *p,
                          lm_keep const lm_solve_opts *o,
                          lm_keep const unsigned char *active,
                          lm_solve_result *r, lm_error *err);

/* Exhaustive reference for small instances: every assignment of every
 * kernel.  LM_EINPUT if the instance is too large (over 1e7 combinations)
 * or infeasible. */
lm_status lm_solve_brute(lm_keep const lm_solve_problem *p,
                         lm_keep const lm_solve_opts *o, lm_solve_result *r,
                         lm_error *err);

/* Check a plan against p: every bucket runs an allowed, compiled variant,
 * caps, budget and (with o->threshold) contiguity hold.  Returns its
 * objective through *objective (may be NULL).  LM_EFAIL naming the first
 * violation. */
lm_status lm_solve_check(lm_keep const lm_solve_problem *p,
                         lm_keep const lm_solve_opts *o,
                         lm_keep const lm_solve_result *r, double *objective,
                         lm_error *err);

/* Check p and o: LM_EINPUT naming the first bad field (no kernels or
 * variants, a NaN, negative or -INFINITY cost, a negative or non-finite
 * weight or compile cost, a negative cap). */
lm_status lm_solve_validate(lm_keep const lm_solve_problem *p,
                            lm_keep const lm_solve_opts *o, lm_error *err);

/* Allocate r's arrays for p (choices -1, nothing compiled). */
lm_status lm_solve_result_init(lm_keep const lm_solve_problem *p,
                               lm_solve_result *r, lm_error *err);
void lm_solve_result_free(lm_solve_result *r);

#ifdef __cplusplus
}
#endif
#endif
