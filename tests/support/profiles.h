/* Profiles for tests that need bootstrap vectors without calibrating:
 * the host's uncalibrated defaults, with nb resamples made by scaling
 * every default coefficient.  Header-only. */
#ifndef LANEMAP_TESTS_SUPPORT_PROFILES_H
#define LANEMAP_TESTS_SUPPORT_PROFILES_H

#include <criterion/criterion.h>
#include <stdlib.h>

#include "lanemap/calibrate.h"
#include "lanemap/profile.h"

/* Resample b's coefficient of term t is the default times scale(b, t). */
typedef double (*support_scale_fn)(int b, int t);

static __attribute__((unused)) lm_profile *
support_defaults_with_bootstrap(int nb, support_scale_fn scale) {
  lm_error e = {0};
  lm_profile *p = NULL;
  cr_assert_eq(lm_profile_default(LM_ISA_HOST, &p, &e), LM_OK, "%s", e.msg);
  int nt = lm_profile_nterms(p);
  double *bs = malloc(sizeof *bs * (size_t)nt * (size_t)nb);
  cr_assert_not_null(bs);
  for (int b = 0; b < nb; b++)
    for (int t = 0; t < nt; t++)
      bs[b * nt + t] = lm_profile_term_at(p, t)->coef * scale(b, t);
  cr_assert_eq(lm_profile_set_bootstrap(p, bs, nb, &e), LM_OK, "%s", e.msg);
  free(bs);
  return p;
}

#endif
