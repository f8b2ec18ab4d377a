/* Seeded inputs for one launch of a kernel.
 *
 * Every buffer gets its own random stream, seeded from a hash of the kernel
 * name, the shape, the seed and the parameter index.  So a parameter's data
 * depends on nothing else: adding a parameter, or generating in another
 * order, leaves the others' bytes alone, and the same case gives the same
 * bytes on every machine (the generator is integer-only up to the final
 * scaling into [lo, hi], which IEEE arithmetic does identically
 * everywhere).
 *
 * The hash is FNV-1a over the name, then each word (dims, seed, index) is
 * folded in with the splitmix64 finaliser; the stream is xoshiro256**
 * seeded by splitmix64, as its authors recommend.
 *
 * Outputs are filled with the sentinel byte so that the comparison can
 * tell an element the code under test wrote from one it left alone. */
#include <stdlib.h>
#include <string.h>

#include "ir/oracle_internal.h"
#include "lanemap/oracle.h"

typedef struct Rng {
  uint64_t s[4];
} Rng;

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static uint64_t mix(uint64_t h, uint64_t v) {
  uint64_t x = h ^ v;
  return splitmix64(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

/* xoshiro256** */
static uint64_t rng_next(Rng *g) {
  uint64_t *s = g->s;
  uint64_t out = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

/* Uniform in [0, 1) with 53 random bits. */
static double rng_unit(Rng *g) { return (double)(rng_next(g) >> 11) * 0x1p-53; }

/* Uniform integer in [0, n), by Lemire's multiply-shift (bias < n/2^64). */
static uint64_t rng_below(Rng *g, uint64_t n) {
  return (uint64_t)(((unsigned __int128)rng_next(g) * n) >> 64);
}

static void rng_seed(Rng *g, const lm_kernel *k, const lm_shape *s,
                     uint64_t seed, int p) {
  uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 offset basis */
  for (const unsigned char *c = (const unsigned char *)k->name; c && *c; c++)
    h = (h ^ *c) * 0x100000001b3ull;
  for (int i = 0; i < k->nsyms; i++)
    h = mix(h, (uint64_t)s->dims[i]);
  h = mix(h, seed);
  h = mix(h, (uint64_t)p);
  for (int i = 0; i < 4; i++)
    g->s[i] = splitmix64(&h);
}

/* Element count of p under s, or -1 if a dim is not positive or the byte
 * size does not fit.  The front end's binder checks this for shapes it
 * made; shapes built by hand come through here too. */
static int64_t checked_count(const lm_kernel *k, int p, const lm_shape *s) {
  const lm_param *q = &k->params[p];
  if (q->kind == LM_PARAM_SCALAR)
    return 1;
  int64_t n = 1;
  for (int i = 0; i < q->rank; i++) {
    lm_dim d = q->dims[i];
    int64_t v = d.coef;
    if (d.sym >= 0 && __builtin_mul_overflow(d.coef, s->dims[d.sym], &v))
      return -1;
    if (v <= 0 || __builtin_mul_overflow(n, v, &n))
      return -1;
  }
  if (n > (INT64_MAX >> 4))
    return -1;
  return n;
}

static lm_status check_shape(const lm_kernel *k, const lm_shape *s,
                             lm_error *err) {
  if (s->nsyms < k->nsyms)
    return lm_error_set(err, LM_EINPUT,
                        "shape binds %d symbols, kernel %s has %d", s->nsyms,
                        k->name, k->nsyms);
  for (int i = 0; i < k->nsyms; i++)
    if (s->dims[i] <= 0)
      return lm_error_set(err, LM_EINPUT, "dim %s = %lld is not positive",
                          k->syms ? k->syms[i] : "?", (long long)s->dims[i]);
  for (int p = 0; p < k->nparams; p++)
    if (checked_count(k, p, s) < 0)
      return lm_error_set(err, LM_EINPUT, "parameter %s: bad or huge size",
                          k->params[p].name);
  return LM_OK;
}

/* 64-byte aligned, size rounded up to a multiple of 64 as aligned_alloc
 * requires. */
static void *buf_alloc(int64_t count, lm_dtype t, size_t *bytes) {
  size_t n = (size_t)count * lm_dtype_size(t);
  n = (n + 63) & ~(size_t)63;
  *bytes = n;
  return aligned_alloc(64, n);
}

static double scalar_value(const lm_param *q, Rng *g) {
  if (q->has_default)
    return q->defval;
  if (q->dtype == LM_I32) {
    double lo = ceil(q->lo), hi = floor(q->hi);
    if (hi < lo)
      return lo;
    return lo + (double)rng_below(g, (uint64_t)(hi - lo) + 1);
  }
  return q->lo + (q->hi - q->lo) * rng_unit(g);
}

static void fill_default(void *buf, const lm_param *q, int64_t n, Rng *g) {
  for (int64_t i = 0; i < n; i++) {
    double v = q->dtype == LM_I32 ? (double)rng_below(g, 10)
                                  : q->lo + (q->hi - q->lo) * rng_unit(g);
    elem_put(buf, q->dtype, i, v);
  }
}

/* 0/1 with probability 1/2, then one forced 1 per row so that no row is
 * fully masked.  A rank-1 mask is one row.  When the kernel is ragged the
 * forced 1 lands inside the row's active columns (len is generated first),
 * otherwise it could sit where nothing reads it. */
static void fill_mask(void *buf, const lm_param *q, int64_t n, Rng *g,
                      const lm_data *d, const lm_kernel *k) {
  int64_t rows = q->rank == 2 ? lm_dim_eval(q->dims[0], &d->shape) : 1;
  int64_t cols = n / rows;
  for (int64_t i = 0; i < n; i++)
    elem_put(buf, q->dtype, i, (double)(rng_next(g) >> 63));
  const int32_t *len = NULL;
  if (k->rowlen_param >= 0 && q->rank == 2 &&
      k->params[k->rowlen_param].dtype == LM_I32)
    len = d->buf[k->rowlen_param];
  for (int64_t r = 0; r < rows; r++) {
    int64_t span = cols;
    if (len && r < d->count[k->rowlen_param] && len[r] > 0 && len[r] < cols)
      span = len[r];
    elem_put(buf, q->dtype, r * cols + (int64_t)rng_below(g, (uint64_t)span),
             1);
  }
}

/* Row lengths uniform in [0, N], with a full row first and, when there
 * are three rows or more, an empty second row: the two edge cases every
 * ragged kernel must meet. */
static void fill_rowlen(void *buf, const lm_param *q, int64_t n, Rng *g,
                        int64_t ncols) {
  for (int64_t i = 0; i < n; i++)
    elem_put(buf, q->dtype, i, (double)rng_below(g, (uint64_t)ncols + 1));
  elem_put(buf, q->dtype, 0, (double)ncols);
  if (n >= 3)
    elem_put(buf, q->dtype, 1, 0);
}

static lm_status gen_param(lm_data *d, int p, lm_error *err) {
  const lm_kernel *k = d->k;
  const lm_param *q = &k->params[p];
  Rng g;
  rng_seed(&g, k, &d->shape, d->seed, p);
  d->count[p] = lm_param_count(k, p, &d->shape);
  if (q->kind == LM_PARAM_SCALAR) {
    double v = scalar_value(q, &g);
    /* the value the code under test receives, so the oracle sees it too */
    d->scalar[p] = q->dtype == LM_F32   ? (double)(float)v
                   : q->dtype == LM_I32 ? (double)elem_to_i32(v)
                                        : v;
    return LM_OK;
  }
  size_t bytes;
  void *buf = buf_alloc(d->count[p], q->dtype, &bytes);
  if (!buf)
    return lm_error_set(err, LM_ESYS, "out of memory for %s (%zu bytes)",
                        q->name, bytes);
  d->buf[p] = buf;
  if (q->is_output) {
    memset(buf, LM_SENTINEL_BYTE, bytes);
    return LM_OK;
  }
  memset(buf, 0, bytes); /* the padding past count is defined too */
  switch (q->gen) {
  case LM_GEN_DEFAULT:
    fill_default(buf, q, d->count[p], &g);
    break;
  case LM_GEN_MASK:
    fill_mask(buf, q, d->count[p], &g, d, k);
    break;
  case LM_GEN_ROWLEN:
    fill_rowlen(buf, q, d->count[p], &g, lm_dim_eval(k->ncols, &d->shape));
    break;
  }
  return LM_OK;
}

lm_status lm_data_gen(const lm_kernel *k, const lm_shape *s, uint64_t seed,
                      lm_data **out, lm_error *err) {
  lm_status st;
  lm_data *d = NULL;
  *out = NULL;
  if ((st = check_shape(k, s, err)))
    goto error;
  d = calloc(1, sizeof *d);
  if (!d) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto error;
  }
  d->k = k;
  d->shape = *s;
  d->seed = seed;
  d->buf = calloc((size_t)k->nparams + 1, sizeof *d->buf);
  d->count = calloc((size_t)k->nparams + 1, sizeof *d->count);
  d->scalar = calloc((size_t)k->nparams + 1, sizeof *d->scalar);
  if (!d->buf || !d->count || !d->scalar) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto error;
  }
  /* row lengths first: masks look at them (see fill_mask) */
  if (k->rowlen_param >= 0 && (st = gen_param(d, k->rowlen_param, err)))
    goto error;
  for (int p = 0; p < k->nparams; p++)
    if (p != k->rowlen_param && (st = gen_param(d, p, err)))
      goto error;
  *out = d;
  return LM_OK;
error:
  lm_data_free(d);
  return st;
}

void lm_data_free(lm_data *d) {
  if (!d)
    return;
  if (d->buf)
    for (int p = 0; p < d->k->nparams; p++)
      free(d->buf[p]);
  free(d->buf);
  free(d->count);
  free(d->scalar);
  free(d);
}

void lm_data_reset_outputs(lm_data *d) {
  for (int p = 0; p < d->k->nparams; p++) {
    const lm_param *q = &d->k->params[p];
    if (q->is_output && d->buf[p]) {
      size_t n = (size_t)d->count[p] * lm_dtype_size(q->dtype);
      memset(d->buf[p], LM_SENTINEL_BYTE, (n + 63) & ~(size_t)63);
    }
  }
}
