/* A profile's coefficients for the cost model.  The cost model knows only
 * plain coefficients (lm_coefs); this is where a profile's named terms,
 * bootstrap rows and fingerprint become them, and where the calls that
 * take a profile forward to the cost model. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/calibrate.h"
#include "lanemap/profile.h"

void lm_caches_from_fingerprint(const lm_fingerprint *fp, lm_caches *c) {
  lm_caches_default(c);
  if (fp && fp->l1d_bytes)
    c->l1 = (int64_t)fp->l1d_bytes;
  if (fp && fp->l2_bytes)
    c->l2 = (int64_t)fp->l2_bytes;
  if (fp && fp->l3_bytes)
    c->l3 = (int64_t)fp->l3_bytes;
}

/* The coefficients of row vec (NULL: the point estimates). */
static lm_status coefs_from(const lm_profile *p, const double *vec,
                            lm_coefs *out, lm_error *err) {
  memset(out, 0, sizeof *out);
  out->overlap = 1.0;
  /* a profile written before the join existed (model form 5 or older)
   * gets the named default, not an instant join */
  out->join = LM_JOIN_DEFAULT_NS;
  lm_caches_from_fingerprint(lm_profile_get_fingerprint(p), &out->caches);
  int n = lm_profile_nterms(p), wide_twins = 0;
  double wide_call = -1;
  for (int i = 0; i < n; i++) {
    const lm_profile_term *t = lm_profile_term_at(p, i);
    double x = vec ? vec[i] : t->coef;
    if (!isfinite(x) || x < 0)
      return lm_error_set(err, LM_EINPUT, "profile term %s: coefficient %g",
                          t->name, x);
    if (strcmp(t->name, "overlap") == 0) {
      out->overlap = x > 1 ? 1 : x;
      continue;
    }
    if (strcmp(t->name, "join") == 0) {
      out->join = x;
      continue;
    }
    if (strcmp(t->name, "wide_call") == 0) {
      wide_call = x;
      continue;
    }
    int k = lm_term_lookup(t->name);
    if (k >= 0)
      out->theta[k] = x, wide_twins |= k >= LM_T_FIRST_WMATH && k <= LM_T_LAST_WMATH;
  }
  /* a profile of model form 8 or older: one width term added to every
   * routine's call, as those forms priced a wide call */
  if (wide_call >= 0 && !wide_twins)
    for (int k = LM_T_FIRST_MATH; k <= LM_T_LAST_MATH; k++)
      out->theta[LM_T_WIDE_MATH(k)] = out->theta[k] + wide_call;
  return LM_OK;
}

lm_status lm_coefs_from_profile(const lm_profile *p, lm_coefs *out,
                                lm_error *err) {
  return coefs_from(p, NULL, out, err);
}

lm_status lm_coefs_from_bootstrap(const lm_profile *p, int b, lm_coefs *out,
                                  lm_error *err) {
  int nb = 0;
  const double *bs = lm_profile_get_bootstrap(p, &nb);
  if (b < 0 || b >= nb || !bs)
    return lm_error_set(err, LM_EINPUT,
                        "no bootstrap resample %d (profile has %d)", b, nb);
  return coefs_from(p, bs + (size_t)b * (size_t)lm_profile_nterms(p), out, err);
}

lm_status lm_cost_predict(const lm_profile *p, const lm_kernel *k,
                          const lm_variant *v, const lm_shape *s,
                          lm_prediction *out, lm_error *err) {
  lm_coefs c;
  if (lm_coefs_from_profile(p, &c, err) != LM_OK)
    return LM_EINPUT;
  int nb = 0;
  lm_profile_get_bootstrap(p, &nb);
  lm_coefs *boot = NULL;
  if (nb > 0 && !(boot = malloc(sizeof *boot * (size_t)nb)))
    return lm_error_set(err, LM_ESYS, "predict: out of memory");
  lm_status st = LM_OK;
  for (int b = 0; b < nb && st == LM_OK; b++)
    if (lm_coefs_from_bootstrap(p, b, &boot[b], err) != LM_OK)
      st = LM_EINPUT;
  if (st == LM_OK)
    st = lm_cost_predict_coefs(&c, boot, nb, k, v, s, out, err);
  free(boot);
  return st;
}

lm_status lm_predictor_new(const lm_profile *p, const lm_kernel *k,
                           const lm_variant *vs, int n, lm_predictor **out,
                           lm_error *err) {
  *out = NULL;
  lm_coefs c;
  if (lm_coefs_from_profile(p, &c, err) != LM_OK)
    return LM_EINPUT;
  return lm_predictor_new_coefs(&c, k, vs, n, out, err);
}
