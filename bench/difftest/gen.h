/* Random differential testing of the backend: a seeded generator of valid,
 * well-conditioned `.lk` kernels, and the check that compiles a kernel's
 * variants and verifies each on a set of shapes against the FP64 oracle
 * (lm_verify: tolerance, 64-byte guards, sentinels, unchanged inputs).
 *
 * A case file is a kernel source whose leading comment lines may pin what
 * to check, so that a mismatch can be replayed and kept as a regression:
 *
 *   # difftest-variant: x86-64-v3/w8/l1/phase=snapshot/priv=slot
 *   # difftest-shape: 17,66
 *   kernel ... { ... }
 *
 * With no variant line every legal variant of every runnable ISA target,
 * with workers {1, 2}, is checked (or a seeded sample of them); with no
 * shape line three shapes from dt_pick_shapes are used. */
#ifndef LANEMAP_DIFFTEST_GEN_H
#define LANEMAP_DIFFTEST_GEN_H

#include <stdint.h>
#include <stdio.h>

#include "lanemap/verify.h"

/* What the generator chose for one kernel. */
typedef struct dt_info {
  lm_dtype elem; /* f32 or f64 */
  int step;      /* the column stride of the 2-D buffers (1: none) */
  int ragged;    /* has a rowlen input */
  int masked;    /* has a mask input */
  int nout;      /* outputs */
  int nstmts;    /* named values */
} dt_info;

/* A random valid kernel named `dk<seed>` (malloc'ed source text). */
char *dt_gen_kernel(uint64_t seed, dt_info *info);

typedef struct dt_shape {
  int64_t R, C;
} dt_shape;

/* Up to max random shapes for k, edge shapes included (R = 1, R < W,
 * C = 1, C = k*W +- 1), C a multiple of the kernel's column stride.
 * Returns the count. */
int dt_pick_shapes(const lm_kernel *k, uint64_t seed, dt_shape *out, int max);

/* Counters of one or more checks. */
typedef struct dt_stats {
  int64_t kernels;        /* kernels generated and parsed */
  int64_t variants;       /* kernel x variant pairs compiled and checked */
  int64_t shape_checks;   /* kernel x variant x shape verifications */
  int64_t mismatches;     /* verifications that failed */
  int64_t compile_errors; /* legal variants that failed to compile */
} dt_stats;

typedef struct dt_opts {
  int variants_per_kernel; /* <= 0: every legal variant */
  uint64_t seed;           /* for sampling variants and shapes */
  const char *out_dir;     /* where mismatch case files go (NULL: none) */
  FILE *log;               /* one line per mismatch (NULL: silent) */
} dt_opts;

/* Check the kernel in `src` (a case file, see above): parse it (a parse
 * error is LM_EINPUT: for generated kernels that is a generator bug),
 * enumerate or read its variants, verify each on its shapes, add to st and
 * write a replayable case file per mismatch into o->out_dir.  Returns
 * LM_OK when the kernel parsed and the checks ran (mismatches are counted,
 * not returned), otherwise the error. */
lm_status dt_check_source(const char *file, const char *src,
                          const dt_opts *o, dt_stats *st, lm_error *err);

#endif
