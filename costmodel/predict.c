/* Prediction: coefficients x counts, combined as a compute/memory
 * bottleneck with a fitted overlap (the form of Halide's Adams2019 terms
 * and of ECM-style bottleneck models), with each term's share kept so that
 * `lanemap predict --explain` can say why one variant beats another. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/costmodel.h"
#include "lanemap/profile.h"

static void caches_from(const lm_fingerprint *fp, lm_caches *c) {
  lm_caches_default(c);
  if (fp && fp->l1d_bytes)
    c->l1 = (int64_t)fp->l1d_bytes;
  if (fp && fp->l2_bytes)
    c->l2 = (int64_t)fp->l2_bytes;
  if (fp && fp->l3_bytes)
    c->l3 = (int64_t)fp->l3_bytes;
}

static lm_status coefs_from(const lm_profile *p, const double *vec,
                            lm_coefs *out, lm_error *err) {
  memset(out, 0, sizeof *out);
  out->overlap = 1.0;
  caches_from(lm_profile_get_fingerprint(p), &out->caches);
  int n = lm_profile_nterms(p);
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
    int k = lm_term_lookup(t->name);
    if (k >= 0)
      out->theta[k] = x;
  }
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
    return lm_error_set(err, LM_EINPUT, "no bootstrap resample %d (profile has %d)",
                        b, nb);
  return coefs_from(p, bs + (size_t)b * (size_t)lm_profile_nterms(p), out, err);
}

void lm_cost_eval(const lm_coefs *c, const lm_features *f, const lm_variant *v,
                  lm_prediction *out) {
  memset(out, 0, sizeof *out);
  out->f = *f;
  double tasks = f->n[LM_T_CALL] > 0 ? f->n[LM_T_CALL] : 1;
  double par = v->workers > 1 ? fmin((double)v->workers, tasks) : 1;
  double C = 0, Mc = 0, Md = 0;
  for (int t = 0; t < LM_T__COUNT; t++) {
    double x = c->theta[t] * f->n[t];
    if (t == LM_T_FORK)
      out->fork_ns = x;
    else if (t == LM_T_B_DRAM)
      Md += x;
    else if (t >= LM_T_FIRST_MEM)
      Mc += x;
    else
      C += x;
    out->term_ns[t] = x;
  }
  C /= par;
  double M = Mc / par + Md;
  double hi = fmax(C, M), lo = fmin(C, M);
  out->compute_ns = C;
  out->memory_ns = M;
  out->memory_bound = M > C;
  out->ns = out->fork_ns + hi + c->overlap * lo;
  /* shares: the bound side counts fully, the hidden side by the overlap */
  double fc = (C >= M ? 1 : c->overlap) / par, fm = C >= M ? c->overlap : 1;
  for (int t = 0; t < LM_T__COUNT; t++) {
    if (t == LM_T_FORK)
      continue;
    if (t < LM_T_FIRST_MEM)
      out->term_ns[t] *= fc;
    else
      out->term_ns[t] *= fm / (t == LM_T_B_DRAM ? 1 : par);
  }
  out->p5 = out->p95 = out->ns;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

lm_status lm_cost_predict(const lm_profile *p, const lm_kernel *k,
                          const lm_variant *v, const lm_shape *s,
                          lm_prediction *out, lm_error *err) {
  lm_coefs c;
  if (lm_coefs_from_profile(p, &c, err) != LM_OK)
    return LM_EINPUT;
  lm_features f;
  if (lm_cost_features(k, v, s, &c.caches, NULL, &f, err) != LM_OK)
    return LM_EINPUT;
  lm_cost_eval(&c, &f, v, out);
  int nb = 0;
  lm_profile_get_bootstrap(p, &nb);
  if (nb > 0) {
    double *t = malloc(sizeof *t * (size_t)nb);
    for (int b = 0; b < nb; b++) {
      lm_coefs cb;
      lm_prediction pb;
      if (lm_coefs_from_bootstrap(p, b, &cb, err) != LM_OK) {
        free(t);
        return LM_EINPUT;
      }
      lm_cost_eval(&cb, &f, v, &pb);
      t[b] = pb.ns;
    }
    qsort(t, (size_t)nb, sizeof *t, cmp_double);
    out->p5 = t[(int)floor(0.05 * (nb - 1))];
    out->p95 = t[(int)ceil(0.95 * (nb - 1))];
    free(t);
  }
  return LM_OK;
}
