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
  /* 1: keep every term on trial without cross-validating it (research:
   * the terms' effect elsewhere, docs/calibration.md "Terms on trial") */
  int keep_terms;
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

/* Run the suite and fit a profile.  A timing whose verdict is noisy is
 * repeated up to LM_CALIB_REMEASURE more times, keeping the last.  The
 * profile records the noise verdict of the timing (lm_profile_get_noise)
 * and the families that passed a limit; it is returned either way, and the
 * caller decides whether to keep it (lm_profile_save_calibrated). */
#define LM_CALIB_REMEASURE 2
/* The least relative spread a calibration row is weighted with (and the
 * least model error): a timing is never trusted to better than 1%. */
#define LM_CALIB_SPREAD_FLOOR 0.01
/* The workers' late join (lm_coefs.join, profile term "join"): the named
 * default is the warm pool's fork-join round trip measured by
 * bench_forkjoin on the project's VM (rendezvous, back to back: p50
 * 0.91-1.32 us, docs/runtime.md "Measured fork-join overhead").
 * Calibration measures it (lm_pool_round_ns, capped at LM_JOIN_MAX_NS: a
 * parked worker's wake-up, 66-100 us, is beyond what a warm launch waits),
 * and the fork cost with it (the fit then takes the fork cost as known). */
#define LM_JOIN_DEFAULT_NS 1000.0
#define LM_JOIN_MAX_NS 20000.0
lm_status lm_calibrate(const lm_calib_opts *o, lm_give lm_profile **out,
                       lm_error *err);

/* A term's named default coefficient and its plausible range. */
void lm_term_default(lm_term t, double *coef, double *lo, double *hi,
                     const char **unit);

/* The terms on trial (mask_ins, spill: docs/calibration.md, "Terms on
 * trial"): a calibration keeps each only when its leave-one-family-out
 * cross-validation says it helps, and the uncalibrated defaults hold them
 * at 0 (their named default is the fit's prior, not a price). */
int lm_term_on_trial(lm_term t);

/* The verdict on a term on trial, from each family's leave-one-family-out
 * score (mean |log(predicted / measured)| of its rows) with the term and
 * without it, NAN for a family left unscored: kept (1) when the mean
 * over families of the paired rise without - with is at least 1% of the
 * mean score without the term and at least two standard errors of that
 * mean.  *gain gets the mean rise, *se its standard error (INFINITY below
 * two families), *families (if not NULL) how many were paired. */
int lm_term_trial_keeps(const double *with, const double *without, int nfam,
                        double *gain, double *se, int *families);

/* The uncalibrated default profile: every coefficient a named default
 * (see calibration/defaults.c), for the "default profile" baseline. */
lm_status lm_profile_default(lm_isa isa, lm_give lm_profile **out,
                             lm_error *err);

/* ---- finding a profile ---------------------------------------------------
 * The file given, else this machine's cached profile for the ISA target,
 * else (when the cache has none) an error, the uncalibrated defaults, or a
 * calibration that is then cached.  calibration/lookup.c. */

typedef enum lm_profile_missing {
  LM_PROFILE_MISSING_ERROR = 0,     /* LM_EINPUT naming how to get one */
  LM_PROFILE_MISSING_DEFAULTS = 1,  /* the uncalibrated defaults */
  LM_PROFILE_MISSING_CALIBRATE = 2, /* calibrate now and cache the result */
} lm_profile_missing;

typedef struct lm_profile_lookup_opts {
  const char *path;  /* a profile file; NULL: the cache */
  int use_defaults;  /* 1: the uncalibrated defaults, whatever else is set */
  lm_isa isa;        /* the target the profile prices */
  /* The cache entry looked for: LM_PROFILE_QUICK or LM_PROFILE_FULL, or
   * LM_PROFILE_DEFAULT for either (quick first).  Calibrating, FULL runs the
   * full suite and any other value the quick one. */
  lm_profile_mode mode;
  int require_isa;   /* 1: a file or cache entry of another ISA is LM_EINPUT */
  lm_profile_missing missing; /* what an empty cache gives */
  lm_calib_opts calib; /* progress and seed when calibrating (isa, quick set) */
  /* 0: a profile whose noise verdict is noisy is refused (LM_EFAIL), and
   * a noisy calibration is not cached but kept beside the cache entry;
   * 1: both are used, and the calibration is cached with its verdict.
   * LANEMAP_ACCEPT_NOISY=1 in the environment counts as 1. */
  int accept_noisy;
} lm_profile_lookup_opts;
/* host, any mode, no ISA check, an empty cache is an error, noisy
 * profiles refused. */
void lm_profile_lookup_defaults(lm_profile_lookup_opts *o);

typedef enum lm_profile_source {
  LM_PROFILE_SOURCE_FILE,       /* the file given */
  LM_PROFILE_SOURCE_CACHE,      /* the cached profile */
  LM_PROFILE_SOURCE_CALIBRATED, /* calibrated now, and cached */
  LM_PROFILE_SOURCE_DEFAULTS,   /* the uncalibrated defaults */
} lm_profile_source;
/* "given", "cached", "calibrated", "defaults". */
const char *lm_profile_source_name(lm_profile_source s);

/* Where a profile came from. */
typedef struct lm_profile_found {
  lm_profile_source source;
  char path[1024];           /* the file read or written; "" for defaults */
  double calibrate_s;        /* calibration wall time, 0 if none ran */
  lm_profile_load_info info; /* a fingerprint warning for the caller */
  bool noisy; /* the profile's noise verdict is noisy, and was accepted */
} lm_profile_found;

lm_status lm_profile_lookup(const lm_profile_lookup_opts *o,
                            lm_give lm_profile **out, lm_profile_found *found,
                            lm_error *err);

/* ---- noisy profiles --------------------------------------------------
 * A profile calibrated while something else ran is refused unless the
 * caller accepts it (docs/calibration.md, "Noisy calibrations").
 * calibration/noise_gate.c. */

/* The opt-in to noisy profiles: accept (a caller's --accept-noisy), or
 * LANEMAP_ACCEPT_NOISY=1 in the environment, for tests and CI that
 * calibrate beside other measuring processes.  The one place the variable
 * is read. */
int lm_profile_accept_noisy(int accept);

/* Where a noisy calibration meant for path is kept: path without a final
 * ".json", then ".noisy.json". */
lm_status lm_profile_noisy_path(const char *path, char *buf, size_t n,
                                lm_error *err);

/* LM_EFAIL when p is noisy (lm_profile_noisy) and accept is 0, with a
 * message that names path (the file p was read from), the verdict and
 * --accept-noisy; else LM_OK. */
lm_status lm_profile_check_noisy(lm_keep const lm_profile *p, const char *path,
                                 int accept, lm_error *err);

/* Keep a profile calibrated just now.  Quiet, or noisy and accepted: saved
 * as path.  Noisy and not accepted: saved as lm_profile_noisy_path(path)
 * instead, so nothing measured is lost and the user can inspect it, and
 * the result is LM_EFAIL with a message that says which families were
 * noisy by what measure, that path (the cache, if cache is 1) was not
 * written, where the profile is, and how to proceed.  Both writes are
 * atomic.  wrote[n] gets the file written ("" if none). */
lm_status lm_profile_save_calibrated(lm_keep const lm_profile *p,
                                     const char *path, int cache, int accept,
                                     char *wrote, size_t n, lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
