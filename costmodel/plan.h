/* The shape-independent part of the dynamic counts of one kernel x
 * variant (a "cost plan"), and its evaluation at a shape.  Everything the
 * lowering decides without knowing R and C — the per-step counts of every
 * loop in each step mode, the per-packet work, which buffers each loop
 * re-reads — is computed once; a shape then costs a few dozen multiply-adds
 * and the cache-level choice of five working sets.  lm_cost_features and
 * the compiled predictor both go through it, so they cannot disagree. */
#ifndef LANEMAP_COSTMODEL_PLAN_H
#define LANEMAP_COSTMODEL_PLAN_H

#include "lanemap/costmodel.h"

#define PLAN_MAX_BUFS 64

typedef enum PlanBuf {
  PB_ROWS,   /* rank 2: R x C rows */
  PB_PERROW, /* rank 1 of R: one value per instance */
  PB_PERCOL, /* rank 1 of a column dim: read by every packet in every loop */
} PlanBuf;

typedef struct lm_cost_plan {
  int W, L, G, U, per, workers, nloops;
  int64_t grain;
  lm_dim ncols;                   /* the column extent N */
  double step_main[LM_T__COUNT];  /* one unmasked main step, summed over loops */
  double step_rest[LM_T__COUNT];  /* one unmasked rest step (block mode: gathers) */
  double step_tail[LM_T__COUNT];  /* one masked tail step */
  double packet[LM_T__COUNT];     /* per packet: uniforms, row stores, setup */
  double gather_main[PLAN_MAX_BUFS]; /* per buffer: row elements gathered or */
  double gather_rest[PLAN_MAX_BUFS]; /* scattered by one step of each mode */
  double gather_tail[PLAN_MAX_BUFS];
  double nred;                    /* reductions finalised per packet */
  double nred_cross;              /* butterfly stages crossing 128 bits, per reduction */
  int wide;                       /* 512-bit registers: wide512 and wide_call count */
  int nbuf;
  struct {
    PlanBuf kind;
    int rank, is_output, nloads; /* nloads: loops that read it from memory */
    lm_dim dims[2];
    double dsize;                /* bytes per element */
  } buf[PLAN_MAX_BUFS];
  double privrow;                /* private-array bytes per row step: nsnap*W*elem */
} lm_cost_plan;

/* The step structure at a shape: packets, steps of each mode, tasks. */
typedef struct lm_plan_steps {
  int64_t R, N;
  double P, Pf;                 /* packets, full packets (G rows each) */
  double S;                     /* steps per packet */
  double full, main, rest, tail; /* of a full packet: unmasked (main + rest), masked */
  double density, tasks;
  double calls;                 /* entry calls and launch-path levels */
} lm_plan_steps;

#define LM_PLAN_NWIDE_INS 10
#define LM_PLAN_NWIDE_CALLS 5
extern const lm_term lm_plan_wide_ins[LM_PLAN_NWIDE_INS];
extern const lm_term lm_plan_wide_calls[LM_PLAN_NWIDE_CALLS];

/* Shape-independent counts of k x v (checks the variant's legality). */
lm_status lm_cost_plan_build(const lm_kernel *k, const lm_variant *v,
                             lm_cost_plan *out, lm_error *err);
/* The counts at shape s, exactly as lm_cost_features reports them. */
void lm_cost_plan_eval(const lm_cost_plan *pl, const lm_shape *s,
                       const lm_caches *caches, const lm_rowstats *rows,
                       lm_features *out);

/* The pieces of lm_cost_plan_eval, for the compiled predictor: the step
 * structure, the aliasing gathered elements, and the bytes by level
 * (lv = L2, L3, memory). */
void lm_cost_plan_steps(const lm_cost_plan *pl, const lm_shape *s,
                        const lm_rowstats *rows, lm_plan_steps *st);
double lm_cost_plan_alias(const lm_cost_plan *pl, const lm_shape *s,
                          const lm_caches *caches, const lm_plan_steps *st);
void lm_cost_plan_bytes(const lm_cost_plan *pl, const lm_shape *s,
                        const lm_caches *caches, const lm_plan_steps *st,
                        double lv[3], double *total, double *footprint);

#endif
