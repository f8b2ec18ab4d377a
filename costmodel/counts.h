/* The per-variant counts of the cost model: what one step of each part
 * of the schedule (backend/schedule.h) executes, per cost term, and the
 * per-packet work; then their evaluation at a shape.  Everything the
 * lowering decides without knowing R and C is counted once, from the same
 * schedule the lowering emits from; a shape then costs a few dozen
 * multiply-adds and the cache-level choice of five working sets.
 * lm_cost_features and the compiled predictor both go through it, so they
 * cannot disagree. */
#ifndef LANEMAP_COSTMODEL_COUNTS_H
#define LANEMAP_COSTMODEL_COUNTS_H

#include "backend/schedule.h"
#include "lanemap/costmodel.h"

#define LM_COST_MAX_BUFS LM_MAX_BUFFERS
#define LM_COST_FWD_LOOPS 4

typedef enum lm_cost_buf {
  LM_CB_ROWS,   /* rank 2: R x C rows */
  LM_CB_PERROW, /* rank 1 of R: one value per instance */
  LM_CB_PERCOL, /* rank 1 of a column dim: read by every packet in every loop */
} lm_cost_buf;

typedef struct lm_cost_counts {
  lm_sched_rule rule;             /* the schedule's step rule */
  int W, L, G, U, per, nloops;
  lm_dim ncols;                   /* the column extent N */
  int copies[LM_PART__COUNT];     /* steps each part emits: main per, rest copies, tail 1 */
  double step_main[LM_T__COUNT];  /* one unmasked main step, summed over loops */
  double step_rest[LM_T__COUNT];  /* one unmasked rest step (block mode: gathers) */
  double step_tail[LM_T__COUNT];  /* one masked tail step */
  double packet[LM_T__COUNT];     /* per packet: uniforms, row stores, setup */
  double gather_main[LM_COST_MAX_BUFS]; /* per buffer: row elements gathered or */
  double gather_rest[LM_COST_MAX_BUFS]; /* scattered by one step of each part */
  double gather_tail[LM_COST_MAX_BUFS];
  double nred;                    /* reductions finalised per packet */
  double nred_cross;              /* butterfly stages crossing 128 bits, per reduction */
  int wide;                       /* wider than a register: wide512 and the wide math twins count */
  int nbuf;
  struct {
    lm_cost_buf kind;
    int rank, is_output, nloads; /* nloads: loops that read it from memory */
    lm_dim dims[2];
    double dsize;                /* bytes per element */
  } buf[LM_COST_MAX_BUFS];
  double privrow;                /* private-array bytes per row step: nsnap*W*elem */
  /* masked private reads of one tail step (priv=masked) by how many loops
   * after its write they come: [1] the next loop, ... [LM_COST_FWD_LOOPS-1]
   * that many or more (lm_cost_counts_fwd) */
  double fwd[LM_COST_FWD_LOOPS];
  double uops_main, uops_tail;   /* instructions of one step of each, per loop (fwd) */
} lm_cost_counts;

/* Store forwarding.  A load of bytes a masked store wrote cannot take
 * them from the store buffer: it waits until the store has left it.  A
 * private slot written by a masked tail step and read by a later loop's
 * tail step stalls so when little work lies between the two; the stall
 * fades as the work grows.  The work is counted in instructions (each
 * counted vector operation, load, store, shuffle and gathered or
 * scattered element one, a math call LM_COST_FWD_CALL_UOPS), and the
 * stall is gone after LM_COST_FWD_UOPS of them.  Named defaults, from
 * the `priv` kernel (y = x * sum(x), snapshot) at w16/l16 on the
 * project's VM (AMD EPYC, 2026-12-08): priv=masked over priv=slot cost
 * 4.6 ns a row with 0 or 1 full steps between, 4.0, 3.1, 2.7 with 2, 3,
 * 4, 1.0 with 6 and 0.3 from 8 on, and a full step of its reading loop
 * counts 3 instructions (a slot load, a multiply, a store): 24 in 8 steps
 * (docs/costmodel.md, "Store forwarding").  A call's instructions: the
 * 15-40 cycles of a vector math routine (calibration/defaults.c).  Weight
 * of one read with u instructions between: max(0, 1 - u / LM_COST_FWD_UOPS). */
#define LM_COST_FWD_UOPS 24.0
#define LM_COST_FWD_CALL_UOPS 20.0
double lm_cost_counts_fwd(const lm_cost_counts *pl, const lm_sched_steps *st);

#define LM_COST_NWIDE_INS 10
extern const lm_term lm_cost_wide_ins[LM_COST_NWIDE_INS];

/* Shape-independent counts of k x v (checks the variant's legality). */
lm_status lm_cost_counts_build(const lm_kernel *k, const lm_variant *v,
                               lm_cost_counts *out, lm_error *err);
/* The counts at shape s, exactly as lm_cost_features reports them. */
void lm_cost_counts_eval(const lm_cost_counts *pl, const lm_shape *s,
                         const lm_caches *caches, const lm_rowstats *rows,
                         lm_features *out);

/* The pieces of lm_cost_counts_eval, for the compiled predictor: the step
 * structure, the aliasing gathered elements, and the bytes by level
 * (lv = L2, L3, memory). */
void lm_cost_counts_steps(const lm_cost_counts *pl, const lm_shape *s,
                          const lm_rowstats *rows, lm_sched_steps *st);
double lm_cost_counts_alias(const lm_cost_counts *pl, const lm_shape *s,
                            const lm_caches *caches, const lm_sched_steps *st);
void lm_cost_counts_bytes(const lm_cost_counts *pl, const lm_shape *s,
                          const lm_caches *caches, const lm_sched_steps *st,
                          double lv[3], double *total, double *footprint);

/* Register pressure of one step of loop `loop` in part `part`
 * (costmodel/pressure.c): ev is the step's emission order, node ids as
 * computed and -1-id where a reduction, snapshot write or store takes a
 * value.  Returns the estimated spill and reload instructions of one step
 * (the `spill` term); out (may be NULL) gets the live values behind it. */
typedef struct lm_pressure {
  double accumulators; /* reductions x U, live across the loop */
  double uniforms;     /* row-uniform values the tiles use (constants aside) */
  double block;        /* transposed block columns: W per row buffer */
  double temporaries;  /* peak live values of the step itself */
  double live;         /* their sum, in registers (wide values take several) */
  double registers;    /* the target's vector registers */
  double spills;       /* spill and reload instructions per step */
} lm_pressure;
double lm_cost_spills(const lm_schedule *s, int loop, int part, const int *ev, int nev,
                      lm_pressure *out);

#endif
