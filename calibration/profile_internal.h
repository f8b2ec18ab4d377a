/* What the files of the profile share (calibration/profile*.c): the
 * object's layout and the checks that the setters, the writer and the
 * reader all apply, so that a profile built in code, written and read back
 * obeys one set of rules.
 *
 *   profile_check.c  values and their checks
 *   profile.c        the object: constructor, getters, checked setters
 *   profile_write.c  the object as JSON text
 *   profile_read.c   JSON text back into a checked object
 *   profile_noise.c  the noise verdict the profile records
 *   profile_cache.c  where a machine's profiles are kept */
#ifndef LANEMAP_CALIBRATION_PROFILE_INTERNAL_H
#define LANEMAP_CALIBRATION_PROFILE_INTERNAL_H

#include <stdbool.h>

#include "lanemap/json.h"
#include "lanemap/profile.h"

/* The largest integer a JSON reader keeps exactly in a double. */
#define LM_PROFILE_INT53 (INT64_C(1) << 53)
/* Longest path a check names ("samples[123456].features[1234]"). */
#define LM_PROFILE_PATH_LEN 160
/* ISA names appear in cache file names. */
#define LM_PROFILE_ISA_MAX 63

struct lm_profile {
  char *isa;
  lm_profile_mode mode;
  char *units;
  char created[24]; /* "YYYY-MM-DDTHH:MM:SSZ" */
  lm_fingerprint fp;
  lm_profile_term *terms; /* strings owned */
  int nterms, capterms;
  lm_profile_sample *samples; /* strings and features owned */
  double *residuals;          /* [capsamples] */
  int nsamples, capsamples;
  lm_profile_diagnostics diag;
  lm_profile_loo *loo; /* bench owned */
  int nloo, caploo;
  char *extra;  /* compact JSON object, numbers exact */
  double *boot; /* [nboot][nterms] */
  int nboot;
  bool has_noise; /* a verdict is recorded */
  lm_noise noise;
  lm_profile_noisy_family *noisy; /* family owned */
  int nnoisy, capnoisy;
};

/* What a number must be. */
typedef enum lm_profile_want {
  LM_WANT_NONNEG,    /* finite and >= 0 */
  LM_WANT_FINITE,    /* finite */
  LM_WANT_CONDITION, /* >= 1, INFINITY allowed (null in the file) */
} lm_profile_want;

/* The checks.  pre names the caller (a setter, or a file) and starts each
 * message; path names the field, relative to the profile. */
const char *lm_profile_want_text(lm_profile_want w);
bool lm_profile_want_ok(double v, lm_profile_want w);
lm_status lm_profile_check_num(const char *pre, const char *path, double v,
                               lm_profile_want w, lm_error *err);
lm_status lm_profile_check_text(const char *pre, const char *path,
                                const char *s, lm_error *err);
lm_status lm_profile_check_isa(const char *pre, const char *path,
                               const char *isa, lm_error *err);
bool lm_profile_mode_ok(lm_profile_mode m);
bool lm_profile_mode_find(const char *text, lm_profile_mode *out);
lm_status lm_profile_check_created(const char *pre, const char *path,
                                   const char *s, lm_error *err);
lm_status lm_profile_check_fingerprint(const char *pre,
                                       const lm_fingerprint *fp, lm_error *err);
/* Term t as terms[at] of p (at == nterms for a new term). */
lm_status lm_profile_check_term(const lm_profile *p, int at,
                                const lm_profile_term *t, const char *pre,
                                lm_error *err);
lm_status lm_profile_check_sample(const lm_profile *p,
                                  const lm_profile_sample *x, const char *pre,
                                  lm_error *err);
lm_status lm_profile_check_diagnostics(const lm_profile *p,
                                       const lm_profile_diagnostics *d,
                                       const char *pre, lm_error *err);
/* "base.field" into buf (LM_PROFILE_PATH_LEN bytes), cut if longer. */
const char *lm_profile_join(char *buf, const char *base, const char *field);
lm_status lm_profile_oom(const char *pre, lm_error *err);

/* The object's checked mutators, shared by the setters and the reader. */
lm_status lm_profile_replace_text(char **slot, const char *s, const char *pre,
                                  lm_error *err);
lm_status lm_profile_term_add(lm_profile *p, const lm_profile_term *t,
                              const char *pre, lm_error *err);
lm_status lm_profile_sample_add(lm_profile *p, const lm_profile_sample *x,
                                const char *pre, lm_error *err);
lm_status lm_profile_residuals_set(lm_profile *p, const double *r, int n,
                                   const char *pre, lm_error *err);
lm_status lm_profile_loo_add(lm_profile *p, const char *bench, double rel_err,
                             const char *pre, lm_error *err);
/* Store the object j (numbers made exact in place) as p's extra text. */
lm_status lm_profile_extra_take(lm_profile *p, cJSON *j, const char *pre,
                                lm_error *err);
lm_status lm_profile_bootstrap_set(lm_profile *p, const double *coefs, int b,
                                   const char *pre, lm_error *err);
/* The verdict, normalised through its JSON form; NULL clears it and the
 * noisy families. */
lm_status lm_profile_noise_set(lm_profile *p, const lm_noise *n,
                               const char *pre, lm_error *err);
lm_status lm_profile_noisy_add(lm_profile *p, const lm_profile_noisy_family *f,
                               const char *pre, lm_error *err);
void lm_profile_noise_free(lm_profile *p);
bool lm_profile_noise_equal(const lm_profile *a, const lm_profile *b);

#endif
