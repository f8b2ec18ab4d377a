/* The schedule of one kernel x variant: every decision the lowering makes,
 * computed once, for the lowering to emit from and the cost model to count
 * from.
 *
 * A packet runs the kernel's column loops one after another.  Each loop has
 * three parts, and a packet has per-packet work around them:
 *
 *   main   unmasked, `per` steps per iteration (U accumulators, or W columns
 *          of a transposed block), taken while every lane is active;
 *   rest   unmasked full steps the main part leaves over: `copies` guarded
 *          straight-line steps (or one loop, for transposed blocks);
 *   tail   the masked steps: one loop, or one straight-line step when every
 *          packet is one full row (`uniform_rows`);
 *   packet uniforms, instance loads and stores, row lengths, reduction
 *          finalisation (butterflies).
 *
 * What a step does (which tiles a loop computes, its reductions, snapshot
 * writes and store groups) and how each access is realised (the step mode
 * of each part, the private-array realization per element type, the vector
 * math calls per operation) are read from here by both sides; a change to
 * the schedule changes the code and its price together.  The step counts at
 * a shape (lm_sched_at) follow the same parts. */
#ifndef LANEMAP_BACKEND_SCHEDULE_H
#define LANEMAP_BACKEND_SCHEDULE_H

#include <stdint.h>

#include "lanemap/variant.h"

/* Accumulators per reduction in the unmasked main part.  Four hide the
 * 4-cycle FP add latency when one packet walks one long row (L = W, and
 * L = 1 transposed blocks, which also form a serial chain per block); two
 * suffice for partial packets; gather-bound program mapping needs one. */
#define LM_SCHED_ACC_CONTIG 4
#define LM_SCHED_ACC_SEGMENT 2
#define LM_SCHED_ACC_GATHER 1
#define LM_SCHED_MAX_LANES 64
#define LM_SCHED_MAX_STORES LM_MAX_STORES

/* How one step reaches row data. */
typedef enum lm_sched_mode {
  LM_SCHED_CONTIG, /* L = W: one row, contiguous (masked) vector accesses */
  LM_SCHED_SEG,    /* 1 < L < W transposed: G segment accesses of L lanes */
  LM_SCHED_GATHER, /* gathers and scatters of W lanes */
  LM_SCHED_BLOCK,  /* L = 1 transposed: W row loads + a W x W transpose per W steps */
} lm_sched_mode;

typedef enum lm_sched_partid {
  LM_PART_MAIN,
  LM_PART_REST,
  LM_PART_TAIL,
  LM_PART_PACKET, /* per-packet work, outside the steps */
  LM_PART__COUNT
} lm_sched_partid;

typedef struct lm_sched_part {
  lm_sched_mode mode;
  int masked; /* steps run under the active mask */
  int steps;  /* steps one copy of the body emits (main: per) */
  int copies; /* bodies emitted (rest: per - 1 guarded steps) */
  int loops;  /* the body has a back edge */
} lm_sched_part;

/* Row stores of one loop with the same buffer and view step: written by one
 * store when their views cover the run. */
typedef struct lm_sched_group {
  int param, step;
  int first, n; /* members: lm_schedule.members[first .. first+n) (store ids) */
} lm_sched_group;

typedef struct lm_sched_loop {
  int red0, nred;   /* reductions finalised after it: reds[red0 ..] (node ids) */
  int snap0, nsnap; /* snapshot tiles it writes: snaps[snap0 ..] (node ids) */
  int grp0, ngrp;   /* its store groups: groups[grp0 ..] */
  unsigned char *need; /* [node]: tiles it computes from sources or reads from a snapshot */
} lm_sched_loop;

/* What the step counts at a shape depend on: a value, kept by the cost
 * model's per-variant counts without the schedule. */
typedef struct lm_sched_rule {
  int L, G, per, workers;
  int64_t grain;  /* the variant's split (lm_variant_cut) */
  lm_split split;
  int per_worker;
} lm_sched_rule;

typedef struct lm_schedule {
  const lm_kernel *k; /* the kernel as compiled: lm_kernel_relaxed for fp=relaxed */
  const lm_variant *v;
  int W, L, G;      /* lanes, lanes per instance, instances per packet */
  int U;            /* accumulators per reduction in the main part */
  int per;          /* steps per main iteration: U, or W for transposed blocks */
  int block;        /* L = 1 transposed blocks */
  int snapshot;     /* phase = snapshot */
  int uniform_rows; /* G = 1 without row lengths: every packet is one full row */
  int contract;     /* fp=relaxed on an ISA with FMA: a multiply and its one
                       add, subtract or sum (lm_kernel_contractible) fuse */
  lm_sched_part part[LM_PART__COUNT];
  lm_sched_rule rule;
  int nloops;
  lm_sched_loop *loop;
  int *reds, *snaps, *members;
  lm_sched_group *groups;
} lm_schedule;

/* Builds the schedule of k x v (checks the variant's legality).  The
 * schedule keeps pointers to k (or its relaxed form, out->k) and v;
 * lm_schedule_free releases it.  Callers walk out->k's nodes. */
lm_status lm_schedule_build(const lm_kernel *k, const lm_variant *v, lm_schedule *out,
                            lm_error *err);
void lm_schedule_free(lm_schedule *s);

/* How a private array of element type t is accessed: the variant's
 * realization for 4- and 8-byte elements, gathers for others (a fallback
 * when the variant asked for another realization; *why then says why). */
lm_priv lm_sched_priv(const lm_schedule *s, lm_dtype t, const char **why);
/* Lanes of one vector math call on W lanes of type t (the ISA's widest
 * vector for t, never wider, padded up to 16 bytes), and the calls one
 * W-lane operation makes. */
int lm_sched_math_lanes(const lm_schedule *s, lm_dtype t);
int lm_sched_math_calls(const lm_schedule *s, lm_dtype t);
/* fp=relaxed lets LLVM replace 1/sqrt(u) of type t by an estimate refined
 * by one Newton step (x86 has estimates for f32 only): then it costs
 * LM_SCHED_RSQRT_OPS vector operations and no divider lanes. */
#define LM_SCHED_RSQRT_OPS 5 /* rsqrt and 4 multiplies and adds (one FMA on
                                v3 and v4): counted in the assembly LLVM 19
                                emits on x86-64-v2..v4 */
int lm_sched_rsqrt_estimated(const lm_schedule *s, lm_dtype t);
/* Whether division node `id` divides in every row: not when its value is
 * the same for every row (LLVM hoists it out of the row loop), nor, in
 * fp=relaxed, when its divisor is (the lowering allows the reciprocal,
 * which LLVM hoists, and the row multiplies by it, as -ffast-math does). */
int lm_sched_div_per_row(const lm_schedule *s, int id);
/* Instance loads and stores (one value per row): a masked vector access of
 * G = W consecutive rows for L = 1, else a gather or scatter of W lanes. */
int lm_sched_inst_contiguous(const lm_schedule *s);

/* The step structure at a shape: R rows of N columns, optionally ragged
 * (rowlen = {mean row length, mean of the longest row of G consecutive
 * rows}; NULL when every row has N columns). */
typedef struct lm_sched_steps {
  int64_t R, N;
  double P, Pf;                  /* packets, full packets (G rows each) */
  double S;                      /* steps per packet */
  double full, main, rest, tail; /* of a full packet: unmasked (main + rest), masked */
  double density;                /* active lane-steps / issued lane-steps of the rows */
  double tasks;                  /* chunks of the variant's cut (workers > 1), else 1 */
  double claims;                 /* claims on the pool's shared counter (0 for static) */
  double calls;                  /* entry calls and launch-path levels */
  double par;                    /* packets over the busiest participant's packets */
  double participants;           /* participants of the cut (1 inline) */
  int dynamic;                   /* the cut's chunks are claimed */
} lm_sched_steps;
void lm_sched_at(const lm_sched_rule *r, int64_t R, int64_t N, const double *rowlen,
                 lm_sched_steps *out);

#endif
