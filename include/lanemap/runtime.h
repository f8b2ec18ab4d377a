/* lanemap runtime: the persistent thread pool that runs a compiled kernel's
 * native entry over its instances (DESIGN.md §7 "Runtime").
 *
 * A compiled variant has one native entry that runs instances
 * [first, first+count).  A launch cuts [0, n) into chunks of `grain`
 * instances (the last one shorter) and lets `workers` participants (the
 * calling thread included) run them: claimed a batch at a time from one
 * atomic counter (dynamic), or as one contiguous block each (static; see
 * lm_launch_sched).  workers = 1 runs the chunks inline on the caller and
 * never touches the pool.
 *
 * The reference system lost about 34 µs per launch to wake-up cost on narrow
 * rows; the target here is about 1 µs for 2 workers.  So the caller
 * publishes a job by bumping a generation word that idle workers spin on
 * (no syscall while they spin), and only a worker that has already parked
 * on its futex after a bounded spin costs a wake-up.  docs/runtime.md has
 * the protocol and the measured overhead. */
#ifndef LANEMAP_RUNTIME_H
#define LANEMAP_RUNTIME_H

#include <stdint.h>

#include "lanemap/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The native entry of one variant: runs instances [first, first+count)
 * with the packed arguments `args`. */
typedef void (*lm_entry_fn)(const void *args, int64_t first, int64_t count);

typedef struct lm_pool lm_pool;

/* Largest pool accepted by lm_pool_new (the job word packs the number of
 * participating pool threads into 23 bits; this is far below that). */
#define LM_POOL_MAX_THREADS 4096

typedef struct lm_pool_opts {
  int nthreads;   /* pool threads besides the caller; 0 is allowed */
  double spin_us; /* how long an idle worker spins before it parks */
  int pin;        /* 1: pin pool thread i to the (i+1)-th allowed CPU */
} lm_pool_opts;

/* Defaults: nthreads 0, spin_us 100 (about one futex wake-up of a parked
 * worker on the project's VM, 66-100 µs at p50, so launches closer than
 * that never pay one while an idle pool goes quiet within 0.1 ms), pin 0
 * (a pinned pool thread cannot leave a core that the timing harness or
 * another process pins to).  docs/runtime.md has the measurements. */
void lm_pool_opts_defaults(lm_pool_opts *o);

/* A pool with nthreads worker threads besides the caller, default options.
 * NULL with err set when nthreads is out of [0, LM_POOL_MAX_THREADS]
 * (LM_EINPUT) or a thread cannot be created (LM_ESYS). */
lm_give lm_pool *lm_pool_new(int nthreads, lm_error *err);
/* The same with every option spelled out. */
lm_give lm_pool *lm_pool_new_opts(const lm_pool_opts *o, lm_error *err);
/* Stops and joins the threads, then frees.  No launch may be running on p.
 * NULL is a no-op. */
void lm_pool_free(lm_take lm_pool *p);
/* Worker threads besides the caller (0 for NULL). */
int lm_pool_threads(lm_keep const lm_pool *p);

/* What the pool's parallel launches did since it was created; counters
 * only grow, so a caller takes two snapshots and subtracts (the noise
 * verdict of the timing harness does).  Each worker counts in its own
 * cache line and the caller under the launch lock, so counting adds no
 * shared write to a launch. */
typedef struct lm_pool_stats {
  int64_t launches; /* launches that asked for more than one participant */
  int64_t wanted;   /* worker slots they asked for (participants - 1) */
  int64_t joined;   /* slots whose worker ran at least one chunk */
  double late_ns;   /* sum over joined slots: launch to first chunk */
  int64_t parks;    /* times a worker went to sleep after spin_us idle */
} lm_pool_stats;
/* A snapshot of p's counters (zeros for NULL).  Safe while launches run;
 * a launch in flight may be counted in part. */
void lm_pool_stats_get(lm_keep const lm_pool *p, lm_pool_stats *out);

/* The process-wide pool, created on first use with one thread per allowed
 * CPU minus one (the caller is the last participant).  It lives until the
 * process exits.  NULL only if not even a pool without threads could be
 * made. */
lm_keep lm_pool *lm_pool_shared(void);

/* The physical cores this process may run workers on: hwloc's cores that
 * have a CPU in the process's affinity mask (SMT siblings count once); the
 * mask's CPU count when hwloc cannot tell.  At least 1; computed once. */
int lm_cores_available(void);
/* The worker counts worth enumerating here: 1, 2, 4, ... up to
 * lm_cores_available(), at most max of them, into workers (0 after the
 * last when there is room).  Returns how many. */
int lm_worker_ladder(int *workers, int max);

/* Runs fn over [0, n) in chunks of `grain` instances with `workers`
 * participants, the caller included, and returns when every chunk is done.
 *   - workers = 1 runs the chunks inline on the caller, in order, without
 *     touching the pool (p may then be NULL);
 *   - workers is clamped to lm_pool_threads(p) + 1 and to the number of
 *     chunks (a participant without a chunk to claim is not woken);
 *   - n = 0 is a no-op; grain <= 0, workers <= 0, n < 0, fn NULL, or p NULL
 *     with workers > 1 is LM_EINPUT.
 * Thread safety: launches on one pool from several threads are serialized
 * by a lock held for the whole launch.  A launch made from inside a running
 * entry of the same pool (a nested launch) runs inline instead, since the
 * lock is already held by its own launch. */
lm_status lm_pool_launch(lm_keep lm_pool *p, lm_entry_fn fn, const void *args,
                         int64_t n, int64_t grain, int workers, lm_error *err);

/* How a launch hands its chunks to the participants. */
typedef enum lm_sched_kind {
  /* Participants claim `batch` chunks at a time from one counter, alone on
   * its cache line: balances uneven chunks, costs one atomic per claim. */
  LM_SCHED_DYNAMIC = 0,
  /* Participant i runs the i-th of `participants` contiguous blocks of
   * chunks, claimed with one exchange per block and no counter per chunk.
   * The caller runs block 0, then any block whose worker has not claimed it
   * yet (a parked or preempted worker), so a launch never waits for a
   * worker that has not started. */
  LM_SCHED_STATIC = 1,
} lm_sched_kind;

typedef struct lm_launch_sched {
  lm_sched_kind kind;
  int64_t batch; /* LM_SCHED_DYNAMIC: chunks per claim, >= 1; 0 means 1 */
} lm_launch_sched;

/* The batch a compiled launch claims at once: `chunks` over `participants`
 * (the caller included) in about LM_LAUNCH_CLAIMS claims each, at least 1.
 * Each claim is one cache-line transfer between cores (about 115 ns with
 * work between claims on the project's VM, docs/runtime.md), paid once a
 * batch; eight claims a participant still let a late worker find work.
 * The cost model counts claims with the same rule (backend/schedule.h). */
#define LM_LAUNCH_CLAIMS 8
int64_t lm_launch_batch(int64_t chunks, int participants);

/* lm_pool_launch with a schedule (NULL: dynamic, one chunk per claim, as
 * lm_pool_launch).  An unknown kind or a negative batch is LM_EINPUT.
 * docs/runtime.md has the measured cost of each. */
lm_status lm_pool_launch_sched(lm_keep lm_pool *p, lm_entry_fn fn,
                               const void *args, int64_t n, int64_t grain,
                               int workers, const lm_launch_sched *sched,
                               lm_error *err);

/* A launch's fixed costs on p (at least one thread), measured with the
 * timing options o, in ns (backend/join.c), from the medians of three
 * entries timed side by side, each two one-instance chunks:
 *   *fork  a launch whose chunks return at once (the caller usually runs
 *          both) minus the two chunks called directly: the fork-join round
 *          (the cost model's fork term);
 *   *join  a launch whose chunks wait for each other (the worker must
 *          join) minus the one whose chunks return at once: the workers'
 *          late join (lm_coefs.join).
 * Both NAN on error.  *noise (NULL: not wanted) is the comparison's
 * verdict (lanemap/noise.h), zeroed on error.  One call takes a few tens
 * of milliseconds, and on a virtual machine whose vCPUs the hypervisor
 * moves between cores it can fall entirely into a brief placement whose
 * cross-core round trip is a third of the usual one (docs/runtime.md,
 * "The round is bimodal"): calibration takes the median of repeats spread
 * in time.  LM_EINPUT for a pool without threads; timing errors as
 * lm_time_compare's. */
struct lm_timing_opts;
struct lm_noise;
lm_status lm_pool_round_ns(lm_keep lm_pool *p, const struct lm_timing_opts *o,
                           double *fork, double *join, struct lm_noise *noise,
                           lm_error *err);

/* The participants' skew on p (at least one thread): how much longer the
 * slowest participant of a static launch takes than the fastest for the
 * same work, as a fraction (backend/join.c).  `launches` static launches
 * of fn over n instances (args as fn expects) are made with every
 * participant of the pool that has an instance (at most n); each
 * participant runs its block `reps` times in a row and times it.  *skew is
 * the mean over launches of max/min - 1: what a static launch loses to
 * equal blocks on unequal cores.  On a virtual machine whose vCPUs share
 * their physical cores with other tenants it is tens of percent at times
 * and near 0 at others (docs/runtime.md, "Unequal participants"), so
 * calibration takes the median of repeats spread in time.  NAN on error;
 * LM_EINPUT for a pool without threads, n < 2, reps < 1, launches < 1 or
 * fn NULL. */
lm_status lm_pool_skew(lm_keep lm_pool *p, lm_entry_fn fn, const void *args,
                       int64_t n, int reps, int launches, double *skew,
                       lm_error *err);

/* lm_pool_skew on a built-in entry: a block of about 25 us of independent
 * 8-lane multiply-adds (throughput-bound, in registers) per participant,
 * `launches` launches.  For a run's diagnostics (`lanemap evaluate`
 * measures it before and after its cases); errors as lm_pool_skew's. */
lm_status lm_pool_skew_probe(lm_keep lm_pool *p, int launches, double *skew,
                             lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
