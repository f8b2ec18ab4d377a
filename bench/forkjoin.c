/* Fork-join overhead of the thread pool, measured with the timing harness.
 *
 * DESIGN.md §7 sets the target at about 1 µs for 2 workers; the reference
 * runtime sat at about 34 µs on narrow rows.  Each comparison runs, side by
 * side and in permuted order:
 *   - call:  the entry called directly through a function pointer, the
 *            floor a launch is measured against;
 *   - w1:    lm_pool_launch with workers = 1 (inline, no pool);
 *   - w2:    workers = 2 on a pool whose idle workers spin (the default);
 *   - w2 parked: workers = 2 on a pool with spin_us = 0, so that every
 *            launch pays the futex wake-up the spin is there to avoid.
 * for an empty entry (2 chunks of 1 instance that do nothing) and for a tiny
 * one (64 instances of a few ns each, grain 8).  With work that small the
 * caller often runs every chunk before the worker arrives, so a third
 * comparison forces the round trip: a rendezvous entry whose 2 chunks each
 * wait until the other has started, which only completes when the pool
 * thread really joins.  That is the fork-join latency a launch pays when it
 * needs its workers.
 *
 * A harness sample averages thousands of launches, so one launch stalled
 * by a preempted thread (a busy 2-vCPU VM stalls a few per second) moves
 * it.  The last section therefore times single launches with lm_now_ns and
 * prints their distribution: back to back (the worker spins), and after
 * 1 ms idle (the worker has parked and must be woken by a futex).  It prints
 * p50 and min per launch in µs and the paired ratio against the direct call,
 * then, from an untimed pass, the share of chunks the pool thread ran: a launch
 * is only parallel when that share is above zero, and a cheap launch whose
 * worker never shows up is just an inline run with extra steps.
 *
 * The last section measures the participants' skew (lm_pool_skew) in
 * repeats spread over seconds: how much longer the slower of two equal
 * static blocks takes, on latency-bound and on throughput-bound work.
 *
 * Usage: bench_forkjoin [--quick] */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lanemap/runtime.h"
#include "lanemap/timing.h"

static void empty_entry(const void *args, int64_t first, int64_t count) {
  (void)args;
  (void)first;
  (void)count;
}

#define TINY_N 64
#define TINY_GRAIN 8

typedef struct tiny_args {
  float x[TINY_N];
  float y[TINY_N];
} tiny_args;

/* A few ns per instance: a short dependent polynomial. */
static void tiny_entry(const void *args, int64_t first, int64_t count) {
  tiny_args *a = (tiny_args *)args;
  for (int64_t i = first; i < first + count; i++) {
    float v = a->x[i];
    a->y[i] = ((v * 0.25f + 0.5f) * v + 0.75f) * v + 1.0f;
  }
}

/* About 200 ns of dependent arithmetic per instance: the balanced work of
 * the 512-chunk comparisons. */
static void work_entry(const void *args, int64_t first, int64_t count) {
  (void)args;
  for (int64_t i = first; i < first + count; i++) {
    uint64_t x = (uint64_t)i | 1u;
    for (int k = 0; k < 50; k++)
      x = x * 0x9E3779B97F4A7C15ull + (uint64_t)k;
    __asm__ volatile("" : "+r"(x));
  }
}

/* The participants' skew (lm_pool_skew) on two kinds of work of about
 * 25 us a block: a dependent scalar chain (latency-bound), and
 * lm_pool_skew_probe's eight independent 8-lane multiply-add chains
 * (throughput-bound: the vector units a core's other hyperthread, or
 * another tenant's vCPU on it, competes for). */
#define SKEW_ITERS 6000
static void chain_entry(const void *args, int64_t first, int64_t count) {
  (void)args, (void)count;
  uint64_t x = (uint64_t)first | 1u;
  for (int k = 0; k < 4 * SKEW_ITERS; k++)
    x = x * 0x9E3779B97F4A7C15ull + (uint64_t)k;
  __asm__ volatile("" : "+r"(x));
}

/* repeats of lm_pool_skew on fn (NULL: lm_pool_skew_probe's own block),
 * gap_ms apart: min, median, max of their means */
static void skew_over_time(const char *title, lm_pool *p, lm_entry_fn fn, int repeats,
                           int gap_ms) {
  double x[64];
  int n = 0;
  lm_error err = {0};
  for (int r = 0; r < repeats && n < 64; r++) {
    if (r > 0) {
      struct timespec ts = {gap_ms / 1000, (long)(gap_ms % 1000) * 1000000L};
      nanosleep(&ts, NULL);
    }
    lm_status st = fn ? lm_pool_skew(p, fn, NULL, 2, 1, 40, &x[n], &err)
                      : lm_pool_skew_probe(p, 40, &x[n], &err);
    if (st == LM_OK)
      n++;
  }
  if (n == 0) {
    printf("  %-34s %s\n", title, err.msg);
    return;
  }
  lm_timing_sort(x, n);
  printf("  %-34s %8.3f %8.3f %8.3f %8.3f   (%d repeats)\n", title, x[0], x[n / 2],
         x[n * 9 / 10], x[n - 1], n);
}

/* Rendezvous: launch k moves the counter from 2k-2 to 2k; each chunk waits
 * until its launch's pair is complete (its ticket rounded up to even). */
static void meet_entry(const void *args, int64_t first, int64_t count) {
  (void)first;
  (void)count;
  _Atomic long *arrived = (_Atomic long *)args;
  long ticket = atomic_fetch_add(arrived, 1) + 1;
  long pair_done = (ticket + 1) / 2 * 2;
  while (atomic_load(arrived) < pair_done)
    ;
}

/* Distribution of single-launch latencies; idle_us > 0 sleeps that long
 * before each launch so the pool's worker has parked. */
static void latency(const char *title, lm_pool *p, lm_entry_fn fn,
                    const void *args, int count, double idle_us) {
  double *t = malloc((size_t)count * sizeof *t);
  if (!t)
    abort();
  for (int i = 0; i < count; i++) {
    if (idle_us > 0) {
      struct timespec ts = {0, (long)(idle_us * 1e3)};
      nanosleep(&ts, NULL);
    }
    double t0 = lm_now_ns();
    if (lm_pool_launch(p, fn, args, 2, 1, 2, NULL) != LM_OK)
      abort();
    t[i] = lm_now_ns() - t0;
  }
  lm_timing_sort(t, count);
  printf("  %-34s %8.2f %8.2f %8.2f %8.2f %8.2f\n", title, t[0] / 1e3,
         t[count / 2] / 1e3, t[count * 9 / 10] / 1e3, t[count * 99 / 100] / 1e3,
         t[count - 1] / 1e3);
  free(t);
}

/* lm_pool_launch's schedule: dynamic, one chunk a claim */
#define DYN1 {LM_SCHED_DYNAMIC, 1}

typedef struct launch_ctx {
  lm_pool *pool;
  lm_entry_fn fn;
  const void *args;
  int64_t n, grain;
  int workers; /* 0: call fn directly, chunk by chunk */
  lm_launch_sched sched; /* zero: dynamic, one chunk a claim */
} launch_ctx;

static void run_launch(void *ctx, int64_t reps) {
  launch_ctx *c = ctx;
  if (c->workers == 0) {
    for (int64_t r = 0; r < reps; r++) {
      /* A volatile read keeps the compiler from inlining the entry, so the
       * floor is a real indirect call, like the ones a launch makes. */
      lm_entry_fn fn = *(lm_entry_fn volatile *)&c->fn;
      for (int64_t first = 0; first < c->n; first += c->grain)
        fn(c->args, first, c->n - first < c->grain ? c->n - first : c->grain);
    }
    return;
  }
  for (int64_t r = 0; r < reps; r++)
    if (lm_pool_launch_sched(c->pool, c->fn, c->args, c->n, c->grain,
                             c->workers, &c->sched, NULL) != LM_OK)
      abort(); /* arguments are fixed and valid: a failure is a bug */
}

/* ---- participation (untimed) --------------------------------------------- */

static _Thread_local int on_main_thread;
static _Atomic long chunks_total, chunks_by_pool;
static lm_entry_fn counted_inner;

static void counted_entry(const void *args, int64_t first, int64_t count) {
  atomic_fetch_add_explicit(&chunks_total, 1, memory_order_relaxed);
  if (!on_main_thread)
    atomic_fetch_add_explicit(&chunks_by_pool, 1, memory_order_relaxed);
  counted_inner(args, first, count);
}

/* Share of chunks run by pool threads over many back-to-back launches. */
static double pool_share(const launch_ctx *c) {
  if (c->workers < 2)
    return 0.0;
  counted_inner = c->fn;
  atomic_store(&chunks_total, 0);
  atomic_store(&chunks_by_pool, 0);
  for (int r = 0; r < 20000; r++)
    if (lm_pool_launch_sched(c->pool, counted_entry, c->args, c->n, c->grain,
                             c->workers, &c->sched, NULL) != LM_OK)
      abort();
  return (double)atomic_load(&chunks_by_pool) /
         (double)atomic_load(&chunks_total);
}

static int compare(const char *title, const lm_timing_opts *o, int n,
                   const lm_timed *items) {
  lm_timing_result r;
  lm_error err = {0};
  if (lm_time_compare(o, n, items, &r, &err) != LM_OK) {
    fprintf(stderr, "bench_forkjoin: %s\n", err.msg);
    return 1;
  }
  printf("\n%s (%d samples, pinned: %s)\n", title, r.nsamples,
         r.pinned ? "yes" : "no");
  printf("  %-12s %10s %10s %8s %14s %11s\n", "entry", "p50 us", "min us",
         "spread", "ratio vs call", "pool share");
  for (int i = 0; i < n; i++) {
    const lm_timing_stats *s = &r.stats[i];
    printf("  %-12s %10.3f %10.3f %7.1f%% %14.2f %10.1f%%\n", s->name,
           s->p50 / 1e3, s->min / 1e3, 100 * s->spread, r.ratio[i * n + 0],
           100 * pool_share(items[i].ctx));
  }
  lm_timing_result_free(&r);
  return 0;
}

int main(int argc, char **argv) {
  lm_timing_opts o;
  lm_timing_defaults(&o);
  int quick = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--quick")) {
      quick = 1;
      o.warmup_ms = 20;
      o.sample_ms = 5;
    } else {
      fprintf(stderr, "usage: bench_forkjoin [--quick]\n");
      return 2;
    }
  }

  on_main_thread = 1;
  lm_error err = {0};
  lm_pool_opts po;
  lm_pool_opts_defaults(&po);
  po.nthreads = 1;
  lm_pool *spin = lm_pool_new_opts(&po, &err);
  po.spin_us = 0;
  lm_pool *park = spin ? lm_pool_new_opts(&po, &err) : NULL;
  if (!spin || !park) {
    fprintf(stderr, "bench_forkjoin: %s\n", err.msg);
    lm_pool_free(spin);
    return 1;
  }
  printf("fork-join overhead, 1 pool thread + caller, lanemap %s\n",
         lm_version());

  int rc = 0;
  launch_ctx e[4] = {
      {NULL, empty_entry, NULL, 2, 1, 0, DYN1},
      {NULL, empty_entry, NULL, 2, 1, 1, DYN1},
      {spin, empty_entry, NULL, 2, 1, 2, DYN1},
      {park, empty_entry, NULL, 2, 1, 2, DYN1},
  };
  lm_timed empty[4] = {{"call", run_launch, &e[0]},
                       {"w1", run_launch, &e[1]},
                       {"w2", run_launch, &e[2]},
                       {"w2 parked", run_launch, &e[3]}};
  rc |= compare("empty entry, 2 chunks of 1 instance", &o, 4, empty);

  static tiny_args ta;
  for (int i = 0; i < TINY_N; i++)
    ta.x[i] = (float)i / TINY_N;
  launch_ctx t[4] = {
      {NULL, tiny_entry, &ta, TINY_N, TINY_GRAIN, 0, DYN1},
      {NULL, tiny_entry, &ta, TINY_N, TINY_GRAIN, 1, DYN1},
      {spin, tiny_entry, &ta, TINY_N, TINY_GRAIN, 2, DYN1},
      {park, tiny_entry, &ta, TINY_N, TINY_GRAIN, 2, DYN1},
  };
  lm_timed tiny[4] = {{"call", run_launch, &t[0]},
                      {"w1", run_launch, &t[1]},
                      {"w2", run_launch, &t[2]},
                      {"w2 parked", run_launch, &t[3]}};
  rc |= compare("tiny entry, 64 instances, grain 8", &o, 4, tiny);

  static _Atomic long arrived_spin, arrived_park;
  launch_ctx m[3] = {
      {NULL, empty_entry, NULL, 2, 1, 0, DYN1},
      {spin, meet_entry, (const void *)&arrived_spin, 2, 1, 2, DYN1},
      {park, meet_entry, (const void *)&arrived_park, 2, 1, 2, DYN1},
  };
  lm_timed meet[3] = {{"call", run_launch, &m[0]},
                      {"w2 meet", run_launch, &m[1]},
                      {"parked meet", run_launch, &m[2]}};
  rc |= compare("rendezvous: both participants must run a chunk", &o, 3, meet);

  /* The schedules at 512 chunks of one instance: empty chunks give the
   * cost of handing a chunk out; chunks of ~200 ns give what a schedule
   * adds over the slowest participant's share of the work (half of the
   * direct call's time, the work being even). */
  for (int w = 0; w < 2; w++) {
    lm_entry_fn fn = w ? work_entry : empty_entry;
    launch_ctx s[5] = {
        {NULL, fn, NULL, 512, 1, 0, {LM_SCHED_DYNAMIC, 1}},
        {spin, fn, NULL, 512, 1, 2, {LM_SCHED_DYNAMIC, 1}},
        {spin, fn, NULL, 512, 1, 2, {LM_SCHED_DYNAMIC, 8}},
        {spin, fn, NULL, 512, 1, 2, {LM_SCHED_DYNAMIC, 32}},
        {spin, fn, NULL, 512, 1, 2, {LM_SCHED_STATIC, 0}},
    };
    lm_timed si[5] = {{"call", run_launch, &s[0]},
                      {"dyn b1", run_launch, &s[1]},
                      {"dyn b8", run_launch, &s[2]},
                      {"dyn b32", run_launch, &s[3]},
                      {"static", run_launch, &s[4]}};
    lm_timing_result r;
    if (lm_time_compare(&o, 5, si, &r, &err) != LM_OK) {
      fprintf(stderr, "bench_forkjoin: %s\n", err.msg);
      rc = 1;
      continue;
    }
    double call = r.stats[0].p50;
    printf("\n512 chunks of 1 instance, %s, workers = 2 (%d samples)\n",
           w ? "~200 ns each" : "empty", r.nsamples);
    printf("  %-8s %10s %12s %16s %11s\n", "entry", "p50 us", "ns/chunk",
           "over call/2 us", "pool share");
    for (int i = 0; i < 5; i++)
      printf("  %-8s %10.3f %12.1f %16.3f %10.1f%%\n", si[i].name,
             r.stats[i].p50 / 1e3, r.stats[i].p50 / 512,
             i ? (r.stats[i].p50 - call / 2) / 1e3 : 0.0,
             100 * pool_share(&s[i]));
    lm_timing_result_free(&r);
  }

  printf("\nsingle launches, workers = 2, µs\n");
  printf("  %-34s %8s %8s %8s %8s %8s\n", "", "min", "p50", "p90", "p99",
         "max");
  int count = quick ? 2000 : 20000;
  latency("rendezvous, back to back", spin, meet_entry, &arrived_spin, count,
          0);
  latency("empty, back to back", spin, empty_entry, NULL, count, 0);
  latency("rendezvous after 1 ms idle (parked)", spin, meet_entry,
          &arrived_spin, count / 10, 1000);
  latency("empty after 1 ms idle (parked)", spin, empty_entry, NULL, count / 10,
          1000);

  printf("\nparticipants' skew, 2 static blocks of ~25 us, 40 launches a repeat,\n"
         "repeats 250 ms apart: slowest block / fastest - 1\n");
  printf("  %-34s %8s %8s %8s %8s\n", "", "min", "p50", "p90", "max");
  int reps = quick ? 12 : 40;
  skew_over_time("scalar chain (latency-bound)", spin, chain_entry, reps, 250);
  skew_over_time("8-lane multiply-adds (throughput)", spin, NULL, reps, 250);

  lm_pool_free(park);
  lm_pool_free(spin);
  return rc;
}
