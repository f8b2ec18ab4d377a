/* Verification: the variant runs on guarded copies of the output buffers
 * (LM_GUARD_BYTES of LM_GUARD_BYTE on both sides, interior filled with the
 * oracle's sentinel), inputs are compared against a copy afterwards, and
 * every output element is compared with lm_oracle_compare.  A verifier
 * (lm_verifier_new) keeps those buffers for many variants on one data set,
 * so a run writes no fresh pages: allocating them per variant made page
 * faults most of the verification time of large shapes. */
#include <stdlib.h>
#include <string.h>

#include "lanemap/verify.h"

static size_t round64(size_t n) { return (n + 63) & ~(size_t)63; }

typedef struct Runner {
  const lm_compiled *c; /* or, when NULL, fn on the calling thread */
  lm_entry_fn fn;
  lm_pool *pool;
  lm_verify_run_fn other; /* or, when set, code run by other means */
  void *ctx;
} Runner;

static lm_status run(const Runner *r, const uint64_t *args, int64_t R,
                     lm_error *err) {
  if (r->other)
    return r->other(r->ctx, args, R, err);
  if (r->c)
    return lm_compiled_launch(r->c, r->pool, args, R, err);
  if (R > 0)
    r->fn(args, 0, R);
  return LM_OK;
}

struct lm_verifier {
  const lm_kernel *k;
  lm_data *d;
  const lm_oracle *o;
  unsigned char **guarded; /* [np] an output's guarded buffer, or NULL */
  unsigned char **copy;    /* [np] an input as it was given, or NULL */
  void **orig;             /* [np] d's own output buffers during a run */
  size_t *bytes;           /* [np] the buffer's bytes */
};

void lm_verifier_free(lm_verifier *v) {
  if (!v)
    return;
  for (int i = 0; i < v->k->nparams; i++) {
    free(v->guarded ? v->guarded[i] : NULL);
    free(v->copy ? v->copy[i] : NULL);
  }
  free(v->guarded);
  free(v->copy);
  free(v->orig);
  free(v->bytes);
  free(v);
}

lm_status lm_verifier_new(const lm_kernel *k, lm_data *d, const lm_oracle *o,
                          lm_verifier **out, lm_error *err) {
  *out = NULL;
  int np = k->nparams;
  size_t n1 = (size_t)(np > 0 ? np : 1);
  lm_verifier *v = calloc(1, sizeof *v);
  if (v) {
    *v = (lm_verifier){k, d, o, calloc(n1, sizeof *v->guarded),
                       calloc(n1, sizeof *v->copy), calloc(n1, sizeof *v->orig),
                       calloc(n1, sizeof *v->bytes)};
  }
  if (!v || !v->guarded || !v->copy || !v->orig || !v->bytes) {
    lm_verifier_free(v);
    return lm_error_set(err, LM_ESYS, "verify: out of memory");
  }
  for (int i = 0; i < np; i++) {
    const lm_param *p = &k->params[i];
    if (p->kind != LM_PARAM_BUFFER)
      continue;
    v->bytes[i] = (size_t)d->count[i] * lm_dtype_size(p->dtype);
    if (p->is_output)
      v->guarded[i] =
          aligned_alloc(64, round64(2 * LM_GUARD_BYTES + v->bytes[i]));
    else if ((v->copy[i] = malloc(v->bytes[i] ? v->bytes[i] : 1)))
      memcpy(v->copy[i], d->buf[i], v->bytes[i]);
    if (!(p->is_output ? (void *)v->guarded[i] : (void *)v->copy[i])) {
      lm_verifier_free(v);
      return lm_error_set(err, LM_ESYS, "out of memory for %s", p->name);
    }
  }
  *out = v;
  return LM_OK;
}

/* One run on the verifier's buffers: guards and sentinels set afresh, the
 * runner launched, then the guards, the inputs (restored from the copy if
 * the run wrote one) and every output element checked. */
static lm_status verify_run(lm_verifier *v, const Runner *runner,
                            lm_verify_result *res, lm_error *err) {
  memset(res, 0, sizeof *res);
  const lm_kernel *k = v->k;
  lm_data *d = v->d;
  int np = k->nparams;
  for (int i = 0; i < np; i++)
    if (v->guarded[i]) {
      memset(v->guarded[i], LM_GUARD_BYTE, LM_GUARD_BYTES);
      memset(v->guarded[i] + LM_GUARD_BYTES, LM_SENTINEL_BYTE, v->bytes[i]);
      memset(v->guarded[i] + LM_GUARD_BYTES + v->bytes[i], LM_GUARD_BYTE,
             round64(2 * LM_GUARD_BYTES + v->bytes[i]) - LM_GUARD_BYTES -
                 v->bytes[i]);
      v->orig[i] = d->buf[i];
      d->buf[i] = v->guarded[i] + LM_GUARD_BYTES;
    }
  uint64_t *args = lm_args_pack(k, d);
  lm_status s = args ? run(runner, args, d->shape.dims[0], err)
                     : lm_error_set(err, LM_ESYS, "verify: out of memory");
  free(args);
  if (s != LM_OK)
    goto restore;
  for (int i = 0; i < np; i++) {
    if (v->guarded[i]) { /* the guards: before the data, and after it */
      size_t n = round64(2 * LM_GUARD_BYTES + v->bytes[i]);
      for (size_t b = 0; b < LM_GUARD_BYTES; b++)
        res->guard_bad += v->guarded[i][b] != LM_GUARD_BYTE;
      for (size_t b = LM_GUARD_BYTES + v->bytes[i]; b < n; b++)
        res->guard_bad += v->guarded[i][b] != LM_GUARD_BYTE;
    } else if (v->copy[i] && memcmp(v->copy[i], d->buf[i], v->bytes[i]) != 0) {
      res->inputs_changed = 1;
      memcpy(d->buf[i], v->copy[i], v->bytes[i]); /* for the next run */
    }
  }
  res->mismatches = lm_oracle_compare(k, v->o, d, &res->cmp);
restore:
  for (int i = 0; i < np; i++)
    if (v->guarded[i]) {
      memcpy(v->orig[i], d->buf[i], v->bytes[i]);
      d->buf[i] = v->orig[i];
    }
  if (s == LM_OK) {
    if (res->guard_bad)
      s = lm_error_set(err, LM_EFAIL, "%lld guard bytes around outputs changed",
                       (long long)res->guard_bad);
    else if (res->inputs_changed)
      s = lm_error_set(err, LM_EFAIL, "an input buffer was written");
    else if (res->mismatches)
      s = lm_error_set(
          err, LM_EFAIL,
          "%lld of %lld output elements differ from the oracle; first: %s[%lld] "
          "= %.9g, want %.9g",
          (long long)res->mismatches, (long long)res->cmp.checked,
          k->params[res->cmp.first_param].name, (long long)res->cmp.first_bad,
          res->cmp.got_at_first, res->cmp.want_at_first);
  }
  return s;
}

lm_status lm_verifier_run(lm_verifier *v, const lm_compiled *c, lm_pool *pool,
                          lm_verify_result *res, lm_error *err) {
  Runner r = {c, NULL, pool, NULL, NULL};
  return verify_run(v, &r, res, err);
}

lm_status lm_verifier_run_entry(lm_verifier *v, lm_entry_fn fn,
                                lm_verify_result *res, lm_error *err) {
  Runner r = {NULL, fn, NULL, NULL, NULL};
  return verify_run(v, &r, res, err);
}

/* A verifier for one run. */
static lm_status verify(const lm_kernel *k, const Runner *runner, lm_data *d,
                        const lm_oracle *o, lm_verify_result *res,
                        lm_error *err) {
  memset(res, 0, sizeof *res);
  lm_verifier *v = NULL;
  lm_status s = lm_verifier_new(k, d, o, &v, err);
  if (s == LM_OK)
    s = verify_run(v, runner, res, err);
  lm_verifier_free(v);
  return s;
}

lm_status lm_verify(const lm_kernel *k, const lm_compiled *c, lm_data *d,
                    const lm_oracle *o, lm_pool *pool, lm_verify_result *res,
                    lm_error *err) {
  Runner r = {c, NULL, pool, NULL, NULL};
  return verify(k, &r, d, o, res, err);
}

lm_status lm_verify_entry(const lm_kernel *k, lm_entry_fn fn, lm_data *d,
                          const lm_oracle *o, lm_verify_result *res,
                          lm_error *err) {
  Runner r = {NULL, fn, NULL, NULL, NULL};
  return verify(k, &r, d, o, res, err);
}

lm_status lm_verify_with(const lm_kernel *k, lm_verify_run_fn fn, void *ctx,
                         lm_data *d, const lm_oracle *o, lm_verify_result *res,
                         lm_error *err) {
  Runner r = {NULL, NULL, NULL, fn, ctx};
  return verify(k, &r, d, o, res, err);
}
