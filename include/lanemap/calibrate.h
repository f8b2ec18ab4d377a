/* lanemap calibration: micro-benchmarks that each isolate one cost term,
 * compiled by the same backend as every kernel, verified against the
 * oracle, timed interleaved, and fitted into a profile (DESIGN.md §10). */
#ifndef LANEMAP_CALIBRATE_H
#define LANEMAP_CALIBRATE_H

#include "lanemap/costmodel.h"
#include "lanemap/profile.h"
#include "lanemap/variant.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lm_calib_opts {
  lm_isa isa;
  int quick;      /* quick mode: fewer sizes and shorter samples */
  uint64_t seed;  /* input generator and bootstrap seed */
  /* Called after each step; `what` names it.  May be NULL. */
  void (*progress)(void *ctx, int done, int total, const char *what);
  void *progress_ctx;
} lm_calib_opts;
void lm_calib_defaults(lm_calib_opts *o);

/* The benchmark list for an ISA (names, families, sources), for
 * documentation and the held-out separation check. */
typedef struct lm_calib_bench {
  const char *name, *family;
  const char *source; /* .lk text */
  char variant[128];
  int64_t R, C;       /* the N-sized run; the 2N run doubles R */
  double density;     /* ragged rows: mean active fraction, 0 = full rows */
  int random_lens;    /* ragged rows: random lengths instead of a prefix */
  int mixed;          /* composition check, not fitted */
} lm_calib_bench;
int lm_calib_benches(lm_isa isa, int quick, const lm_caches *c,
                     lm_give lm_calib_bench **out);
void lm_calib_benches_free(lm_take lm_calib_bench *b, int n);

/* Run the suite and fit a profile. */
lm_status lm_calibrate(const lm_calib_opts *o, lm_give lm_profile **out,
                       lm_error *err);

/* A term's named default coefficient and its plausible range. */
void lm_term_default(lm_term t, double *coef, double *lo, double *hi,
                     const char **unit);

/* The uncalibrated default profile: every coefficient a named default
 * (see calibration/defaults.c), for the "default profile" baseline. */
lm_status lm_profile_default(lm_isa isa, lm_give lm_profile **out,
                             lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
