/* lanemap oracle: seeded inputs and the FP64 interpreter of the IR, the
 * ground truth every compiled variant is compared against (DESIGN.md §5).
 *
 * Comparison rule, per output element (want from the oracle, got from the
 * code under test):
 *   - want NaN: got must be NaN (any payload);
 *   - want +Inf or -Inf: got must be the same infinity;
 *   - otherwise |got - want| <= atol + rtol*|want| (5e-5 both for f32;
 *     1e-9 both for f64 outputs; i32 outputs must be equal);
 *   - an element the oracle does not write (columns past a ragged row's
 *     length) must keep its sentinel bytes. */
#ifndef LANEMAP_ORACLE_H
#define LANEMAP_ORACLE_H

#include "lanemap/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Buffers for one launch: native element types, row-major, one per
 * parameter (NULL for scalars, whose values are in scalar[]). */
typedef struct lm_data {
  const lm_kernel *k; /* borrowed */
  lm_shape shape;
  uint64_t seed;
  void **buf;      /* [nparams] */
  int64_t *count;  /* [nparams] elements */
  double *scalar;  /* [nparams] scalar values (defaults unless overridden) */
} lm_data;

/* Fill every input from the seed (deterministic per kernel name, shape,
 * seed and parameter); outputs are allocated and filled with the sentinel
 * byte pattern LM_SENTINEL_BYTE. */
#define LM_SENTINEL_BYTE 0xA5
lm_status lm_data_gen(lm_keep const lm_kernel *k, const lm_shape *s,
                      uint64_t seed, lm_give lm_data **out, lm_error *err);
void lm_data_free(lm_take lm_data *d);
/* Reset every output buffer to the sentinel pattern. */
void lm_data_reset_outputs(lm_keep lm_data *d);

/* Oracle results: for each output parameter, want[p] holds count[p]
 * doubles and written[p] flags the elements the kernel writes. */
typedef struct lm_oracle {
  int nparams;
  double **want;      /* [nparams], NULL for non-outputs */
  uint8_t **written;  /* [nparams], NULL for non-outputs */
  int64_t *count;
} lm_oracle;

lm_status lm_oracle_run(lm_keep const lm_kernel *k, lm_keep const lm_data *in,
                        lm_give lm_oracle **out, lm_error *err);
void lm_oracle_free(lm_take lm_oracle *o);

typedef struct lm_compare_result {
  int64_t checked;    /* elements compared */
  int64_t mismatches; /* elements outside tolerance or with broken sentinels */
  int64_t first_bad;  /* index of the first mismatch, -1 if none */
  int first_param;    /* its parameter */
  double max_abs_err; /* over finite elements */
  double max_rel_err;
  double got_at_first, want_at_first;
} lm_compare_result;

/* Compare every output of `got` (same kernel and shape) to the oracle.
 * Returns the number of mismatching elements (0 = pass). */
int64_t lm_oracle_compare(lm_keep const lm_kernel *k, lm_keep const lm_oracle *o,
                          lm_keep const lm_data *got, lm_compare_result *res);
/* Tolerances by output dtype. */
double lm_oracle_atol(lm_dtype t);
double lm_oracle_rtol(lm_dtype t);

/* One JSON object (no newline) summarising the oracle outputs: per output
 * count, written, sum, min, max, l2 norm, NaN and Inf counts, and the first
 * values.  malloc'ed. */
lm_give char *lm_oracle_summary_json(lm_keep const lm_kernel *k,
                                     lm_keep const lm_data *in,
                                     lm_keep const lm_oracle *o);

#ifdef __cplusplus
}
#endif
#endif
