/* The thread pool: a persistent set of workers that run a native entry over
 * chunks of instances, with a fork-join cost near one microsecond.
 *
 * The idea is that a launch must not need a syscall when the pool is warm.
 * The reference runtime paid about 34 µs per launch on narrow rows, all of
 * it dispatch and wake-up cost.  On this project's VM a launch that must
 * wake a parked worker waits 66-100 µs at p50 (bench_forkjoin), and even
 * the waker's FUTEX_WAKE costs about 4 µs, so a warm launch has to do
 * without any syscall.
 *
 * One 64-bit job word says everything a worker needs to decide whether to
 * join:  gen << 24 | participants << 1 | open.  A launch (under the launch
 * lock) writes the job fields, resets the chunk counter, and stores the word
 * with a new generation and open = 1.  Idle workers spin on that word with
 * pause instructions for spin_us, so they see the new generation with one
 * cache-line transfer.  After spin_us without work a worker parks on a
 * futex of its own (a condition variable elsewhere); a launch wakes exactly
 * the parked workers it wants, and only those cost a syscall.
 *
 * Workers and the caller claim chunks from one atomic counter.  When the
 * caller's claim comes back empty it closes the job (open = 0) and waits
 * for `refs`, the number of workers inside the job, to fall to zero; then
 * every chunk is done and the job fields may be reused.  A worker enters by
 * incrementing refs and then re-reading the job word: if it is still the
 * word that made it enter, the caller cannot have passed its wait yet
 * (both sides use sequentially consistent operations, a Dekker pair);
 * otherwise it leaves without touching the job.  The same pair of orders
 * (store the word, then read `parked`; set `parked`, then re-read the word)
 * makes sure no launch is missed by a worker that is about to park. */
#define _GNU_SOURCE
#include "lanemap/runtime.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/affinity.h"
#include "backend/pool.h"

#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#define LM_POOL_FUTEX 1
#else
#define LM_POOL_FUTEX 0
#endif

#define LM_CACHE_LINE 64

/* Job word layout. */
#define JOB_OPEN 1ull
#define JOB_PART_SHIFT 1
#define JOB_PART_MASK ((1ull << 23) - 1)
#define JOB_GEN_SHIFT 24

typedef struct lm_pool_worker {
  _Alignas(LM_CACHE_LINE) _Atomic uint32_t wake; /* futex word, +1 per wake */
  _Atomic int parked; /* 1 while the worker is (about to be) asleep */
  _Atomic uint32_t resumed; /* +1 each time the worker comes back from a park */
  /* lm_pool_warm, under the launch lock: whether it woke the worker, and
   * resumed before it did */
  int warm_woken;
  uint32_t warm_mark;
  /* lm_pool_stats, written by this worker only */
  _Atomic int64_t joined, late_ns, parks;
  /* LM_SCHED_STATIC: the generation of the launch whose block index+1 was
   * claimed, by this worker or by the caller taking it over */
  _Atomic uint64_t block;
  int index;          /* 0-based; participates when index < participants-1 */
  lm_pool *pool;
  pthread_t thread;
  lm_affinity_saved *kept; /* its mask before lm_pool_keep_off, or NULL */
#if !LM_POOL_FUTEX
  pthread_mutex_t mu;
  pthread_cond_t cv;
#endif
} lm_pool_worker;

struct lm_pool {
  _Alignas(LM_CACHE_LINE) _Atomic uint64_t job; /* the word workers spin on */
  _Alignas(LM_CACHE_LINE) _Atomic int64_t next; /* next chunk to claim */
  _Alignas(LM_CACHE_LINE) _Atomic int refs;     /* workers inside the job */
  /* Job fields: written by the launching thread while the job is closed and
   * refs is zero, read by workers only after they entered. */
  _Alignas(LM_CACHE_LINE) lm_entry_fn fn;
  const void *args;
  int64_t n, grain, nchunks;
  int64_t launch_ns; /* when the job was published */
  int kind;          /* lm_sched_kind */
  int64_t batch;     /* LM_SCHED_DYNAMIC: chunks per claim */
  int part;          /* participants, the caller included */
  uint64_t job_gen;  /* the job's generation, for static block claims */
  /* lm_pool_stats, written by the launching thread under launch_mu */
  _Atomic int64_t launches, wanted;
  uint64_t gen; /* generation of the last published job */
  _Atomic int stop;
  pthread_mutex_t launch_mu; /* serializes launches from several threads */
  int nthreads;
  int started; /* threads actually created (for cleanup) */
  int64_t spin_ns;
  /* lm_pool_warm: idle workers keep spinning at least until this time */
  _Atomic int64_t warm_until;
  int pin;
  lm_pool_worker *workers; /* [nthreads] */
};

/* The pool whose launch (or worker) the current thread is running, so that
 * a nested launch runs inline instead of waiting for its own lock. */
static _Thread_local const lm_pool *lm_pool_current;

static inline void lm_pool_cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static int64_t lm_pool_clock_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- parking ------------------------------------------------------------ */

static void lm_pool_park_wait(lm_pool_worker *w, uint32_t seen) {
#if LM_POOL_FUTEX
  /* Returns at once if wake already moved past `seen`; EINTR and spurious
   * returns are fine because the caller re-reads the job word. */
  syscall(SYS_futex, (uint32_t *)&w->wake, FUTEX_WAIT_PRIVATE, seen, NULL, NULL,
          0);
#else
  pthread_mutex_lock(&w->mu);
  while (atomic_load(&w->wake) == seen)
    pthread_cond_wait(&w->cv, &w->mu);
  pthread_mutex_unlock(&w->mu);
#endif
}

/* Wakes w if it is parked; a worker that is spinning costs nothing.
 * Returns 1 if it woke w. */
static int lm_pool_park_wake(lm_pool_worker *w) {
  if (!atomic_load(&w->parked) || !atomic_exchange(&w->parked, 0))
    return 0;
#if LM_POOL_FUTEX
  atomic_fetch_add(&w->wake, 1);
  syscall(SYS_futex, (uint32_t *)&w->wake, FUTEX_WAKE_PRIVATE, 1, NULL, NULL,
          0);
#else
  pthread_mutex_lock(&w->mu);
  atomic_fetch_add(&w->wake, 1);
  pthread_cond_signal(&w->cv);
  pthread_mutex_unlock(&w->mu);
#endif
  return 1;
}

/* ---- running chunks ----------------------------------------------------- */

static void lm_pool_run_inline(lm_entry_fn fn, const void *args, int64_t n,
                               int64_t grain) {
  for (int64_t first = 0; first < n; first += grain)
    fn(args, first, n - first < grain ? n - first : grain);
}

/* Runs chunks [c0, c1) of the current job. */
static void lm_pool_run_range(const lm_pool *p, int64_t c0, int64_t c1) {
  for (int64_t c = c0; c < c1; c++) {
    int64_t first = c * p->grain;
    int64_t left = p->n - first;
    p->fn(p->args, first, left < p->grain ? left : p->grain);
  }
}

/* LM_SCHED_STATIC: the first chunk of block b of p->part, the blocks'
 * sizes differing by at most one (no product that could overflow). */
static int64_t block_start(const lm_pool *p, int b) {
  int64_t q = p->nchunks / p->part, r = p->nchunks % p->part;
  return (int64_t)b * q + (b < r ? b : r);
}

/* LM_SCHED_STATIC: runs block b (of p->part) if this thread claims it
 * first; returns the chunks run.  The claim is one exchange on the block's
 * own cache line (the caller's block 0 is never contested). */
static int64_t lm_pool_run_block(lm_pool *p, int b) {
  if (b > 0 && atomic_exchange(&p->workers[b - 1].block, p->job_gen) ==
                   p->job_gen)
    return 0;
  int64_t c0 = block_start(p, b), c1 = block_start(p, b + 1);
  lm_pool_run_range(p, c0, c1);
  return c1 - c0;
}

/* Claims and runs chunks of the current job until none are left for this
 * participant (block: its static block, 0 for the caller); returns how
 * many it ran. */
static int64_t lm_pool_run_chunks(lm_pool *p, int block) {
  if (p->kind == LM_SCHED_STATIC) {
    int64_t ran = lm_pool_run_block(p, block);
    /* the caller takes over the blocks no worker has claimed yet */
    for (int b = 1; block == 0 && b < p->part; b++)
      if (atomic_load_explicit(&p->workers[b - 1].block,
                               memory_order_relaxed) != p->job_gen)
        ran += lm_pool_run_block(p, b);
    return ran;
  }
  for (int64_t ran = 0;;) {
    int64_t c = atomic_fetch_add(&p->next, p->batch);
    if (c >= p->nchunks)
      return ran;
    int64_t c1 = c + p->batch < p->nchunks ? c + p->batch : p->nchunks;
    lm_pool_run_range(p, c, c1);
    ran += c1 - c;
  }
}

/* Worker w enters the job published as word s, runs chunks, leaves, and
 * counts whether it ran any and how long after the launch it came. */
static void lm_pool_join(lm_pool *p, lm_pool_worker *w, uint64_t s) {
  int64_t entered = lm_pool_clock_ns();
  atomic_fetch_add(&p->refs, 1);
  if (atomic_load(&p->job) == s) {
    int64_t late = entered - p->launch_ns;
    if (lm_pool_run_chunks(p, w->index + 1) > 0) {
      atomic_store_explicit(
          &w->joined, atomic_load_explicit(&w->joined, memory_order_relaxed) + 1,
          memory_order_relaxed);
      atomic_store_explicit(
          &w->late_ns,
          atomic_load_explicit(&w->late_ns, memory_order_relaxed) +
              (late > 0 ? late : 0),
          memory_order_relaxed);
    }
  }
  atomic_fetch_sub(&p->refs, 1);
}

static int lm_pool_wants(const lm_pool_worker *w, uint64_t s) {
  if (!(s & JOB_OPEN))
    return 0;
  int participants = (int)((s >> JOB_PART_SHIFT) & JOB_PART_MASK);
  return w->index < participants - 1;
}

/* Whether an idle worker whose own spin ends at deadline spins on: until
 * the later of it and the pool's warm_until. */
static int spin_on(lm_pool *p, int64_t deadline) {
  int64_t now = lm_pool_clock_ns();
  return now < deadline ||
         now < atomic_load_explicit(&p->warm_until, memory_order_relaxed);
}

static void *lm_pool_worker_main(void *arg) {
  lm_pool_worker *w = arg;
  lm_pool *p = w->pool;
  lm_pool_current = p;
  if (p->pin)
    (void)lm_affinity_pin_nth(w->index + 1);

  /* 0 is the word before the first launch, so a thread that starts late
   * still joins a launch that is open when it looks. */
  uint64_t last = 0;
  int64_t deadline = lm_pool_clock_ns() + p->spin_ns;
  unsigned spins = 0;
  for (;;) {
    if (atomic_load_explicit(&p->stop, memory_order_relaxed))
      break;
    uint64_t s = atomic_load(&p->job);
    if (s != last) {
      last = s;
      if (lm_pool_wants(w, s)) {
        lm_pool_join(p, w, s);
        deadline = lm_pool_clock_ns() + p->spin_ns;
      }
      continue;
    }
    /* Reading the clock costs ~20 ns, so look at it every 64 pauses. */
    if (p->spin_ns > 0 && ((++spins & 63) != 0 || spin_on(p, deadline))) {
      lm_pool_cpu_relax();
      continue;
    }
    uint32_t seen = atomic_load(&w->wake);
    atomic_store(&w->parked, 1);
    if (atomic_load(&p->job) != last || atomic_load(&p->stop)) {
      atomic_store(&w->parked, 0);
      continue;
    }
    atomic_store_explicit(
        &w->parks, atomic_load_explicit(&w->parks, memory_order_relaxed) + 1,
        memory_order_relaxed);
    lm_pool_park_wait(w, seen);
    atomic_store(&w->parked, 0);
    atomic_fetch_add(&w->resumed, 1);
    /* Woken for a job: spin a little before parking again. */
    deadline = lm_pool_clock_ns() + p->spin_ns;
  }
  lm_pool_current = NULL;
  return NULL;
}

/* ---- pool life ---------------------------------------------------------- */

void lm_pool_opts_defaults(lm_pool_opts *o) {
  memset(o, 0, sizeof *o);
  o->nthreads = 0;
  o->spin_us = 100.0;
  o->pin = 0;
}

static void lm_pool_stop_threads(lm_pool *p) {
  atomic_store(&p->stop, 1);
  for (int i = 0; i < p->started; i++) {
    /* Force the wake even if the worker has not set parked yet: it checks
     * stop before parking, and a spurious futex wake costs nothing here. */
    atomic_store(&p->workers[i].parked, 1);
    lm_pool_park_wake(&p->workers[i]);
  }
  for (int i = 0; i < p->started; i++) {
    pthread_join(p->workers[i].thread, NULL);
    free(p->workers[i].kept); /* the thread is gone: nothing to restore */
    p->workers[i].kept = NULL;
  }
  p->started = 0;
}

static void lm_pool_release(lm_pool *p) {
  lm_pool_stop_threads(p);
#if !LM_POOL_FUTEX
  for (int i = 0; i < p->nthreads; i++) {
    pthread_mutex_destroy(&p->workers[i].mu);
    pthread_cond_destroy(&p->workers[i].cv);
  }
#endif
  pthread_mutex_destroy(&p->launch_mu);
  free(p->workers);
  free(p);
}

lm_pool *lm_pool_new_opts(const lm_pool_opts *o, lm_error *err) {
  lm_pool_opts d;
  if (!o) {
    lm_pool_opts_defaults(&d);
    o = &d;
  }
  if (o->nthreads < 0 || o->nthreads > LM_POOL_MAX_THREADS) {
    lm_error_set(err, LM_EINPUT, "pool: nthreads %d is outside [0, %d]",
                 o->nthreads, LM_POOL_MAX_THREADS);
    return NULL;
  }
  if (!(o->spin_us >= 0.0 && o->spin_us <= 1e7)) {
    lm_error_set(err, LM_EINPUT, "pool: spin_us %g is outside [0, 1e7]",
                 o->spin_us);
    return NULL;
  }
  lm_pool *p = aligned_alloc(LM_CACHE_LINE, sizeof *p);
  if (!p) {
    lm_error_set(err, LM_ESYS, "pool: out of memory");
    return NULL;
  }
  memset(p, 0, sizeof *p);
  atomic_init(&p->job, 0);
  atomic_init(&p->next, 0);
  atomic_init(&p->refs, 0);
  atomic_init(&p->stop, 0);
  pthread_mutex_init(&p->launch_mu, NULL);
  p->nthreads = o->nthreads;
  p->spin_ns = (int64_t)(o->spin_us * 1000.0);
  p->pin = o->pin;
  if (p->nthreads > 0) {
    p->workers =
        aligned_alloc(LM_CACHE_LINE, (size_t)p->nthreads * sizeof *p->workers);
    if (!p->workers) {
      lm_error_set(err, LM_ESYS, "pool: out of memory for %d workers",
                   p->nthreads);
      goto error;
    }
    memset(p->workers, 0, (size_t)p->nthreads * sizeof *p->workers);
  }
  for (int i = 0; i < p->nthreads; i++) {
    lm_pool_worker *w = &p->workers[i];
    atomic_init(&w->wake, 0);
    atomic_init(&w->parked, 0);
    atomic_init(&w->resumed, 0);
    atomic_init(&w->block, 0);
    w->index = i;
    w->pool = p;
#if !LM_POOL_FUTEX
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
#endif
  }
  /* Workers start with every signal blocked, so that the application's
   * signals keep going to the application's own threads. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int rc = 0;
  for (int i = 0; i < p->nthreads; i++) {
    rc = pthread_create(&p->workers[i].thread, NULL, lm_pool_worker_main,
                        &p->workers[i]);
    if (rc != 0)
      break;
    p->started++;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    lm_error_set(err, LM_ESYS, "pool: cannot start thread %d of %d: %s",
                 p->started + 1, p->nthreads, strerror(rc));
    goto error;
  }
  return p;
error:
  lm_pool_release(p);
  return NULL;
}

lm_pool *lm_pool_new(int nthreads, lm_error *err) {
  lm_pool_opts o;
  lm_pool_opts_defaults(&o);
  o.nthreads = nthreads;
  return lm_pool_new_opts(&o, err);
}

void lm_pool_free(lm_pool *p) {
  if (p)
    lm_pool_release(p);
}

int lm_pool_threads(const lm_pool *p) { return p ? p->nthreads : 0; }

static lm_pool *lm_pool_the_shared;
static pthread_once_t lm_pool_shared_once = PTHREAD_ONCE_INIT;

static void lm_pool_shared_init(void) {
  int n = lm_affinity_count_allowed() - 1;
  if (n > LM_POOL_MAX_THREADS)
    n = LM_POOL_MAX_THREADS;
  lm_pool_the_shared = lm_pool_new(n > 0 ? n : 0, NULL);
  if (!lm_pool_the_shared && n > 0)
    lm_pool_the_shared = lm_pool_new(0, NULL);
}

lm_pool *lm_pool_shared(void) {
  pthread_once(&lm_pool_shared_once, lm_pool_shared_init);
  return lm_pool_the_shared;
}

/* ---- launch ------------------------------------------------------------- */

/* Waits for the workers inside the job to leave.  They normally finish a
 * chunk within microseconds; a worker that was preempted inside a chunk can
 * take a scheduler quantum, so after a while yield the CPU to it. */
static void lm_pool_wait_refs(lm_pool *p) {
  unsigned spins = 0;
  while (atomic_load(&p->refs) != 0) {
    if (++spins < 4096)
      lm_pool_cpu_relax();
    else
      sched_yield();
  }
}

lm_status lm_pool_launch(lm_pool *p, lm_entry_fn fn, const void *args,
                         int64_t n, int64_t grain, int workers, lm_error *err) {
  return lm_pool_launch_sched(p, fn, args, n, grain, workers, NULL, err);
}

int64_t lm_launch_batch(int64_t chunks, int participants) {
  if (chunks <= 0 || participants <= 0)
    return 1;
  int64_t b = chunks / ((int64_t)participants * LM_LAUNCH_CLAIMS);
  return b > 1 ? b : 1;
}

lm_status lm_pool_launch_sched(lm_pool *p, lm_entry_fn fn, const void *args,
                               int64_t n, int64_t grain, int workers,
                               const lm_launch_sched *sched, lm_error *err) {
  lm_launch_sched dyn = {LM_SCHED_DYNAMIC, 1};
  if (!sched)
    sched = &dyn;
  if (sched->kind != LM_SCHED_DYNAMIC && sched->kind != LM_SCHED_STATIC)
    return lm_error_set(err, LM_EINPUT, "launch: schedule kind %d is unknown",
                        (int)sched->kind);
  if (sched->batch < 0)
    return lm_error_set(err, LM_EINPUT,
                        "launch: batch = %lld must be >= 0 (0 means 1)",
                        (long long)sched->batch);
  if (!fn)
    return lm_error_set(err, LM_EINPUT, "launch: entry is NULL");
  if (n < 0)
    return lm_error_set(err, LM_EINPUT, "launch: n = %lld is negative",
                        (long long)n);
  if (grain <= 0)
    return lm_error_set(err, LM_EINPUT, "launch: grain = %lld must be >= 1",
                        (long long)grain);
  if (workers <= 0)
    return lm_error_set(err, LM_EINPUT, "launch: workers = %d must be >= 1",
                        workers);
  if (!p && workers > 1)
    return lm_error_set(err, LM_EINPUT,
                        "launch: workers = %d needs a pool, got NULL", workers);
  if (n == 0)
    return LM_OK;

  int64_t nchunks = n / grain + (n % grain != 0);
  int64_t part = workers;
  if (p && part > (int64_t)p->nthreads + 1)
    part = (int64_t)p->nthreads + 1;
  if (part > nchunks)
    part = nchunks;
  if (part <= 1 || lm_pool_current == p) {
    lm_pool_run_inline(fn, args, n, grain);
    return LM_OK;
  }

  pthread_mutex_lock(&p->launch_mu);
  const lm_pool *outer = lm_pool_current;
  lm_pool_current = p;

  p->fn = fn;
  p->args = args;
  p->n = n;
  p->grain = grain;
  p->nchunks = nchunks;
  p->kind = sched->kind;
  p->batch = sched->batch > 0 ? sched->batch : 1;
  p->part = (int)part;
  p->job_gen = p->gen + 1;
  atomic_store_explicit(&p->next, 0, memory_order_relaxed);
  p->launch_ns = lm_pool_clock_ns();
  atomic_store_explicit(&p->launches,
                        atomic_load_explicit(&p->launches, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  atomic_store_explicit(&p->wanted,
                        atomic_load_explicit(&p->wanted, memory_order_relaxed) +
                            part - 1,
                        memory_order_relaxed);
  p->gen++;
  uint64_t s =
      (p->gen << JOB_GEN_SHIFT) | ((uint64_t)part << JOB_PART_SHIFT) | JOB_OPEN;
  atomic_store(&p->job, s);
  for (int i = 0; i < (int)part - 1; i++)
    lm_pool_park_wake(&p->workers[i]);

  (void)lm_pool_run_chunks(p, 0);

  atomic_store(&p->job, s & ~JOB_OPEN);
  lm_pool_wait_refs(p);

  lm_pool_current = outer;
  pthread_mutex_unlock(&p->launch_mu);
  return LM_OK;
}

int lm_pool_warm(lm_pool *p, int64_t max_wait_ns) {
  /* inside a launch (or a worker) of p its workers are busy, and the
   * launch lock is taken: nothing to warm */
  if (!p || p->spin_ns <= 0 || p->started == 0 || lm_pool_current == p)
    return 0;
  int64_t t0 = lm_pool_clock_ns();
  /* spinning workers stay up for spin_ns from now, and a worker about to
   * park sees this before it does */
  atomic_store(&p->warm_until, t0 + p->spin_ns);
  int late = 0;
  pthread_mutex_lock(&p->launch_mu);
  /* wake them all first, then wait: the wake-ups overlap */
  for (int i = 0; i < p->started; i++) {
    lm_pool_worker *w = &p->workers[i];
    w->warm_mark = atomic_load(&w->resumed);
    w->warm_woken = lm_pool_park_wake(w);
  }
  for (int i = 0; i < p->started; i++) {
    lm_pool_worker *w = &p->workers[i];
    if (!w->warm_woken)
      continue;
    while (atomic_load(&w->resumed) == w->warm_mark &&
           lm_pool_clock_ns() - t0 < max_wait_ns)
      lm_pool_cpu_relax();
    late += atomic_load(&w->resumed) == w->warm_mark;
  }
  /* the time spent waking counts from when the last one is up */
  atomic_store(&p->warm_until, lm_pool_clock_ns() + p->spin_ns);
  pthread_mutex_unlock(&p->launch_mu);
  return late;
}

int lm_pool_keep_off(lm_pool *p, int cpu) {
  if (!p)
    return 0;
  int moved = 0;
  pthread_mutex_lock(&p->launch_mu);
  for (int i = 0; i < p->started; i++) {
    lm_pool_worker *w = &p->workers[i];
    lm_affinity_restore_thread(w->thread, w->kept);
    w->kept = cpu >= 0 ? lm_affinity_keep_off(w->thread, cpu) : NULL;
    moved += w->kept != NULL;
  }
  pthread_mutex_unlock(&p->launch_mu);
  return moved;
}

void lm_pool_stats_get(const lm_pool *p, lm_pool_stats *out) {
  memset(out, 0, sizeof *out);
  if (!p)
    return;
  out->launches = atomic_load_explicit(&p->launches, memory_order_relaxed);
  out->wanted = atomic_load_explicit(&p->wanted, memory_order_relaxed);
  for (int i = 0; i < p->nthreads; i++) {
    out->joined += atomic_load_explicit(&p->workers[i].joined, memory_order_relaxed);
    out->late_ns +=
        (double)atomic_load_explicit(&p->workers[i].late_ns, memory_order_relaxed);
    out->parks += atomic_load_explicit(&p->workers[i].parks, memory_order_relaxed);
  }
}
