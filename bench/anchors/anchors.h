/* Comparison kernels for the anchor benchmark (bench/anchors): what a user
 * would write instead of letting lanemap choose a mapping.  They are
 * comparison points in bench/, never library code.
 *
 * Every kernel uses the lanemap entry ABI (runtime.h): fn(args, first,
 * count) over rows [first, first+count), args = one 8-byte slot per kernel
 * parameter in declaration order (buffer pointer, or a scalar as a double),
 * then one int64 per kernel symbol.  So lm_verify_entry checks them against
 * the FP64 oracle with the same guards as a compiled variant.
 *
 * Three families, one kernel per operator of kernels/suite.json:
 *   - hand-vectorized AVX-512 intrinsics in TorchInductor's structure
 *     (hand_avx512.c): a row loop, a vector inner loop, one read-and-reduce
 *     pass then a re-read output pass, masked tails, a horizontal reduce,
 *     exp and erf from SLEEF (the routines the backend calls);
 *   - plain scalar C (plain.c), compiled twice by clang-19 -O3
 *     -march=native: once as written (no fast-math) and once with
 *     -ffast-math, which reassociates the reductions and so rounds
 *     differently;
 *   - the memory roofline (roofline.c): a streaming read of every input
 *     byte and a write of every output byte, computing nothing. */
#ifndef LANEMAP_BENCH_ANCHORS_H
#define LANEMAP_BENCH_ANCHORS_H

#include <stdint.h>

#include "lanemap/runtime.h"

/* One operator's comparison kernels.  `params` is the kernel's parameter
 * list followed by its symbols ("x,g,eps,y;R,C"), checked against the .lk
 * source before any kernel runs, so a changed kernel is refused rather
 * than compared with the wrong arithmetic. */
typedef struct anchor_op {
  const char *kernel; /* lm_kernel.name */
  const char *params; /* "param,...;sym,..." */
  lm_entry_fn hand;   /* AVX-512 intrinsics (needs avx512f/bw/dq/vl) */
  lm_entry_fn plain;  /* scalar C, clang-19 -O3 -march=native */
  lm_entry_fn fast;   /* the same source with -ffast-math */
} anchor_op;

/* The operator table entry for a kernel name, or NULL. */
const anchor_op *anchor_op_find(const char *kernel);
/* Can this CPU run the hand-vectorized kernels? */
int anchor_hand_runnable(void);

/* The hand AVX-512 kernels (hand_avx512.c). */
void anchor_hand_rmsnorm(const void *args, int64_t first, int64_t count);
void anchor_hand_layernorm(const void *args, int64_t first, int64_t count);
void anchor_hand_masked_softmax(const void *args, int64_t first, int64_t count);
void anchor_hand_gelu_residual(const void *args, int64_t first, int64_t count);
void anchor_hand_swiglu(const void *args, int64_t first, int64_t count);
void anchor_hand_rope(const void *args, int64_t first, int64_t count);

/* The plain C kernels (plain.c), built as anchor_plain_* and, with
 * -ffast-math, anchor_fast_*. */
#define ANCHOR_PLAIN_DECL(pfx)                                                  \
  void pfx##rmsnorm(const void *args, int64_t first, int64_t count);           \
  void pfx##layernorm(const void *args, int64_t first, int64_t count);         \
  void pfx##masked_softmax(const void *args, int64_t first, int64_t count);    \
  void pfx##gelu_residual(const void *args, int64_t first, int64_t count);     \
  void pfx##swiglu(const void *args, int64_t first, int64_t count);            \
  void pfx##rope(const void *args, int64_t first, int64_t count);
ANCHOR_PLAIN_DECL(anchor_plain_)
ANCHOR_PLAIN_DECL(anchor_fast_)

/* The roofline: read `nin` input buffers whole, then write `nout` output
 * buffers whole (buffers are dense, so this streams the same bytes the
 * kernel moves). */
typedef struct anchor_region {
  void *base;
  int64_t bytes;
} anchor_region;

#define ANCHOR_MAX_REGIONS 8
typedef struct anchor_roofline {
  int nin, nout;
  anchor_region in[ANCHOR_MAX_REGIONS], out[ANCHOR_MAX_REGIONS];
} anchor_roofline;

/* One launch of the streaming copy over all rows of *rl; returns a value
 * folded from every byte read, which the caller keeps. */
uint64_t anchor_roofline_run(const anchor_roofline *rl);

/* The pass roofline: the memory traffic of the kernel's column loops with
 * no arithmetic.  Row by row, each input region is read `passes` times
 * (its row when `rows` is set, else the whole region, which a column
 * vector or a per-row value is), then each output row is written; outputs
 * that are not rows are written once at the end.  With a pass each it
 * moves the bytes of the copy roofline, but one row at a time, as the
 * kernel does. */
typedef struct anchor_passes {
  anchor_roofline rl;
  int64_t R;
  int passes[ANCHOR_MAX_REGIONS];      /* per input region */
  int in_rows[ANCHOR_MAX_REGIONS];     /* the region is R rows */
  int out_rows[ANCHOR_MAX_REGIONS];
} anchor_passes;
uint64_t anchor_passes_run(const anchor_passes *p);
/* Bytes moved by one launch (read + written). */
int64_t anchor_roofline_bytes(const anchor_roofline *rl);

#endif
