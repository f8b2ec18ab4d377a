/* Verification: the variant runs on guarded copies of the output buffers
 * (LM_GUARD_BYTES of LM_GUARD_BYTE on both sides, interior filled with the
 * oracle's sentinel), inputs are compared against a copy afterwards, and
 * every output element is compared with lm_oracle_compare. */
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

static lm_status verify(const lm_kernel *k, const Runner *runner, lm_data *d,
                        const lm_oracle *o, lm_verify_result *res,
                        lm_error *err) {
  memset(res, 0, sizeof *res);
  int np = k->nparams;
  void **orig = calloc((size_t)np, sizeof *orig);
  unsigned char **guarded = calloc((size_t)np, sizeof *guarded);
  unsigned char **copy = calloc((size_t)np, sizeof *copy);
  size_t *bytes = calloc((size_t)np, sizeof *bytes);
  lm_status s = LM_OK;
  for (int i = 0; i < np; i++) {
    const lm_param *p = &k->params[i];
    if (p->kind != LM_PARAM_BUFFER)
      continue;
    bytes[i] = (size_t)d->count[i] * lm_dtype_size(p->dtype);
    if (p->is_output) {
      size_t n = round64(2 * LM_GUARD_BYTES + bytes[i]);
      guarded[i] = aligned_alloc(64, n);
      if (!guarded[i]) {
        s = lm_error_set(err, LM_ESYS, "out of memory for %s", p->name);
        goto restore;
      }
      memset(guarded[i], LM_GUARD_BYTE, n);
      memset(guarded[i] + LM_GUARD_BYTES, LM_SENTINEL_BYTE, bytes[i]);
      orig[i] = d->buf[i];
      d->buf[i] = guarded[i] + LM_GUARD_BYTES;
    } else {
      copy[i] = malloc(bytes[i] ? bytes[i] : 1);
      memcpy(copy[i], d->buf[i], bytes[i]);
    }
  }
  uint64_t *args = lm_args_pack(k, d);
  s = run(runner, args, d->shape.dims[0], err);
  free(args);
  if (s != LM_OK)
    goto restore;
  for (int i = 0; i < np; i++) {
    if (guarded[i]) {
      size_t n = round64(2 * LM_GUARD_BYTES + bytes[i]);
      for (size_t b = 0; b < n; b++)
        if ((b < LM_GUARD_BYTES || b >= LM_GUARD_BYTES + bytes[i]) &&
            guarded[i][b] != LM_GUARD_BYTE)
          res->guard_bad++;
    } else if (copy[i] && memcmp(copy[i], d->buf[i], bytes[i]) != 0) {
      res->inputs_changed = 1;
    }
  }
  res->mismatches = lm_oracle_compare(k, o, d, &res->cmp);
restore:
  for (int i = 0; i < np; i++)
    if (guarded[i]) {
      memcpy(orig[i], d->buf[i], bytes[i]);
      d->buf[i] = orig[i];
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
  for (int i = 0; i < np; i++) {
    free(guarded[i]);
    free(copy[i]);
  }
  free(orig);
  free(guarded);
  free(copy);
  free(bytes);
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
