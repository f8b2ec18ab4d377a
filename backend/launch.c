/* Launching compiled variants: the args block and the cut into chunks.
 * workers = 1 calls the entry once over [0, R) with no pool at all; more
 * workers cut [0, R) on the pool as the variant's split says
 * (lm_variant_cut): static blocks, K chunks per worker, or chunks of a
 * fixed grain claimed in batches. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/backend.h"

uint64_t *lm_args_pack(const lm_kernel *k, const lm_data *d) {
  uint64_t *a = calloc((size_t)(k->nparams + k->nsyms), sizeof *a);
  if (!a)
    return NULL;
  for (int i = 0; i < k->nparams; i++) {
    if (k->params[i].kind == LM_PARAM_BUFFER) {
      a[i] = (uint64_t)(uintptr_t)d->buf[i];
    } else {
      double x = d->scalar[i];
      memcpy(&a[i], &x, sizeof x);
    }
  }
  for (int s = 0; s < k->nsyms; s++)
    a[k->nparams + s] = (uint64_t)d->shape.dims[s];
  return a;
}

lm_status lm_compiled_launch(const lm_compiled *c, lm_pool *pool,
                             const uint64_t *args, int64_t R, lm_error *err) {
  const lm_variant *v = lm_compiled_variant(c);
  lm_entry_fn fn = lm_compiled_entry(c);
  if (!fn)
    return lm_error_set(err, LM_EINPUT,
                        "the variant was compiled without an entry (no_entry): "
                        "there is no code to launch");
  if (R < 0)
    return lm_error_set(err, LM_EINPUT, "negative instance count %lld",
                        (long long)R);
  if (v->workers == 1) {
    if (R > 0)
      fn(args, 0, R);
    return LM_OK;
  }
  if (!pool)
    pool = lm_pool_shared();
  /* the variant's cut, as the cost model prices it (the pool may clamp the
   * participants further) */
  lm_cut cut;
  lm_variant_cut(v, R, &cut);
  lm_launch_sched s = {cut.dynamic ? LM_SCHED_DYNAMIC : LM_SCHED_STATIC,
                       cut.batch};
  return lm_pool_launch_sched(pool, fn, args, R, cut.grain, v->workers, &s,
                              err);
}

/* Private arrays of generated code live in one growing, 64-byte aligned
 * buffer per thread, freed when the thread ends. */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static _Thread_local struct {
  void *p;
  int64_t n;
} scratch;

static void scratch_free(void *p) { free(p); }
static void scratch_init(void) { pthread_key_create(&scratch_key, scratch_free); }

void *lm_rt_scratch(int64_t bytes) {
  if (bytes <= scratch.n)
    return scratch.p;
  pthread_once(&scratch_once, scratch_init);
  int64_t n = scratch.n ? scratch.n : 4096;
  while (n < bytes)
    n *= 2;
  free(scratch.p);
  scratch.p = aligned_alloc(64, (size_t)n);
  if (!scratch.p)
    abort(); /* generated code has no error path; out of memory is fatal */
  scratch.n = n;
  pthread_setspecific(scratch_key, scratch.p);
  return scratch.p;
}

typedef struct TimedLaunch {
  const lm_compiled *c;
  lm_pool *pool;
  const uint64_t *args;
  int64_t R;
} TimedLaunch;

static void timed_launch(void *ctx, int64_t reps) {
  TimedLaunch *t = ctx;
  for (int64_t i = 0; i < reps; i++)
    lm_compiled_launch(t->c, t->pool, t->args, t->R, NULL);
}

lm_status lm_time_variants(const lm_kernel *k, lm_compiled *const *cs, int n,
                           lm_data *d, lm_pool *pool, const lm_timing_opts *o,
                           lm_timing_result *out, lm_error *err) {
  uint64_t *args = lm_args_pack(k, d);
  TimedLaunch *tl = calloc((size_t)n, sizeof *tl);
  lm_timed *items = calloc((size_t)n, sizeof *items);
  char (*names)[128] = calloc((size_t)n, sizeof *names);
  if (!args || !tl || !items || !names) {
    free(args), free(tl), free(items), free(names);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  for (int i = 0; i < n; i++) {
    tl[i] = (TimedLaunch){cs[i], pool, args, d->shape.dims[0]};
    lm_variant_format(lm_compiled_variant(cs[i]), names[i], sizeof names[i]);
    items[i] = (lm_timed){names[i], timed_launch, &tl[i]};
  }
  /* the timing watches the pool the entries launch on (lm_timing_opts.pool):
   * its verdict counts the workers' joins, and the pinned timing thread
   * keeps them off its CPU */
  lm_timing_opts t;
  if (o)
    t = *o;
  else
    lm_timing_defaults(&t);
  if (!t.pool)
    t.pool = pool ? pool : lm_pool_shared();
  lm_status s = lm_time_compare(&t, n, items, out, err);
  free(args), free(tl), free(items), free(names);
  return s;
}
