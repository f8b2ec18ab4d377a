/* A pooled launch's two fixed costs, measured: the fork-join round and
 * the workers' late join.  Three entries are timed side by side
 * (lm_time_compare), each two one-instance chunks:
 *
 *   rendezvous  a pooled launch whose chunks wait for each other (the
 *               worker must join, start and finish before it returns);
 *   no wait     a pooled launch whose chunks return at once, so the
 *               caller usually runs both before the worker arrives;
 *   direct      the two chunks called in turn, no pool.
 *
 * no wait - direct is the round a launch pays even when its caller does
 * all the work: the cost model's fork (lm_coefs.theta[LM_T_FORK]).
 * rendezvous - no wait is the round trip beyond it: the join
 * (lm_coefs.join), what a parallel launch of a few microseconds waits for
 * its worker. */
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "lanemap/noise.h"
#include "lanemap/runtime.h"
#include "lanemap/timing.h"

/* Never wait longer than this for the other chunk (a worker that cannot
 * be scheduled): the launch then ends, and the measurement shows it. */
#define JOIN_WAIT_NS 2e6

typedef struct Meet {
  _Atomic long arrived;
} Meet;

/* Launch k moves the counter from 2k-2 to 2k; each chunk waits until its
 * launch's pair is complete (its ticket rounded up to even). */
static void meet_entry(const void *args, int64_t first, int64_t count) {
  (void)first, (void)count;
  Meet *m = (Meet *)args;
  long ticket = atomic_fetch_add(&m->arrived, 1) + 1;
  long pair_done = (ticket + 1) / 2 * 2;
  double t0 = lm_now_ns();
  while (atomic_load(&m->arrived) < pair_done)
    if (lm_now_ns() - t0 > JOIN_WAIT_NS) {
      /* give up: complete the pair in the partner's name, unless the
       * partner arrived meanwhile (then the pair is complete already), so
       * that the next launch's pair starts even */
      long seen = ticket;
      atomic_compare_exchange_strong(&m->arrived, &seen, pair_done);
      break;
    }
}

static void empty_entry(const void *args, int64_t first, int64_t count) {
  (void)args, (void)first, (void)count;
}

typedef struct Launch {
  lm_pool *pool;
  lm_entry_fn fn;
  const void *args;
} Launch;

static void run(void *ctx, int64_t reps) {
  Launch *l = ctx;
  for (int64_t i = 0; i < reps; i++)
    lm_pool_launch(l->pool, l->fn, l->args, 2, 1, 2, NULL);
}

/* The same two chunks without a pool (volatile: the calls stay). */
static void run_direct(void *ctx, int64_t reps) {
  lm_entry_fn volatile fn = empty_entry;
  (void)ctx;
  for (int64_t i = 0; i < reps; i++) {
    fn(NULL, 0, 1);
    fn(NULL, 1, 1);
  }
}

lm_status lm_pool_round_ns(lm_pool *p, const lm_timing_opts *o, double *fork,
                           double *join, lm_noise *noise, lm_error *err) {
  *fork = *join = NAN;
  if (noise)
    memset(noise, 0, sizeof *noise);
  if (!p || lm_pool_threads(p) < 1)
    return lm_error_set(err, LM_EINPUT,
                        "fork-join round: needs a pool with at least one thread");
  Meet m;
  atomic_init(&m.arrived, 0);
  Launch meet = {p, meet_entry, &m}, none = {p, empty_entry, NULL};
  lm_timed items[3] = {
      {"rendezvous", run, &meet}, {"no wait", run, &none}, {"direct", run_direct, NULL}};
  lm_timing_opts t = *o;
  t.pool = p;
  lm_timing_result r = {0};
  lm_status s = lm_time_compare(&t, 3, items, &r, err);
  if (s == LM_OK) {
    *join = fmax(0, r.stats[0].p50 - r.stats[1].p50);
    *fork = fmax(0, r.stats[1].p50 - r.stats[2].p50);
    if (noise)
      *noise = r.noise;
  }
  lm_timing_result_free(&r);
  return s;
}

/* ---- the participants' skew ---------------------------------------------- */

#define SKEW_MAX_PARTS 64

typedef struct Skew {
  lm_entry_fn fn;
  const void *args;
  int64_t grain;
  int reps;
  double ns[SKEW_MAX_PARTS]; /* each block's time, by block */
} Skew;

/* One static block: the real entry over the block, reps times, timed. */
static void skew_entry(const void *ctx, int64_t first, int64_t count) {
  Skew *s = (Skew *)ctx;
  double t0 = lm_now_ns();
  for (int r = 0; r < s->reps; r++)
    s->fn(s->args, first, count);
  int64_t b = first / s->grain;
  if (b >= 0 && b < SKEW_MAX_PARTS)
    s->ns[b] = lm_now_ns() - t0;
}

lm_status lm_pool_skew(lm_pool *p, lm_entry_fn fn, const void *args, int64_t n,
                       int reps, int launches, double *skew, lm_error *err) {
  *skew = NAN;
  if (!p || lm_pool_threads(p) < 1)
    return lm_error_set(err, LM_EINPUT, "participants' skew: needs a pool with at least one thread");
  if (!fn || n < 2 || reps < 1 || launches < 1)
    return lm_error_set(err, LM_EINPUT,
                        "participants' skew: needs an entry, n >= 2, reps >= 1 and "
                        "launches >= 1 (n %lld, reps %d, launches %d)",
                        (long long)n, reps, launches);
  int parts = lm_pool_threads(p) + 1;
  if (parts > SKEW_MAX_PARTS)
    parts = SKEW_MAX_PARTS;
  if (parts > n)
    parts = (int)n;
  /* one block per participant: the static schedule's blocks of one chunk */
  Skew s = {.fn = fn, .args = args, .grain = n / parts, .reps = reps};
  int64_t used = s.grain * parts; /* a remainder would make a block more */
  lm_launch_sched sched = {LM_SCHED_STATIC, 1};
  double sum = 0;
  for (int l = 0; l < launches; l++) {
    for (int b = 0; b < parts; b++)
      s.ns[b] = NAN;
    lm_status st = lm_pool_launch_sched(p, skew_entry, &s, used, s.grain, parts, &sched, err);
    if (st != LM_OK)
      return st;
    double lo = INFINITY, hi = 0;
    for (int b = 0; b < parts; b++)
      lo = fmin(lo, s.ns[b]), hi = fmax(hi, s.ns[b]);
    sum += lo > 0 && isfinite(hi) ? hi / lo - 1 : 0;
  }
  *skew = sum / launches;
  return LM_OK;
}

/* The probe's block: lm_noise_vector_run, SKEW_PROBE_REPS reps (about
 * 25 us on the project's VM: 750 took 42.6 us, best of 200, 2026-12-08). */
#define SKEW_PROBE_REPS 440
static void skew_probe_entry(const void *args, int64_t first, int64_t count) {
  (void)args, (void)first, (void)count;
  lm_noise_vector_run(NULL, SKEW_PROBE_REPS);
}

lm_status lm_pool_skew_probe(lm_pool *p, int launches, double *skew, lm_error *err) {
  int parts = p ? lm_pool_threads(p) + 1 : 2;
  return lm_pool_skew(p, skew_probe_entry, NULL, parts < 2 ? 2 : parts, 1, launches, skew,
                      err);
}
