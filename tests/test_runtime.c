/* Claims about the thread pool: every instance runs exactly once, chunks
 * have the promised shape, workers = 1 never leaves the caller, concurrent
 * and nested launches complete, bad arguments are refused, and pools come
 * and go cleanly.  Nothing here asserts a time. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backend/pool.h"
#include "lanemap/runtime.h"
#include "lanemap/timing.h"

/* ---- a counting entry --------------------------------------------------- */

#define MAX_THREADS_SEEN 64

typedef struct count_args {
  int64_t n, grain;
  _Atomic int *hits;      /* [n] times each instance ran */
  _Atomic int bad_chunks; /* chunks of the wrong shape */
  _Atomic int off_caller; /* chunks run on a thread other than caller */
  pthread_t caller;
  pthread_mutex_t mu;
  pthread_t seen[MAX_THREADS_SEEN]; /* distinct threads that ran chunks */
  int nseen;
} count_args;

static void count_init(count_args *a, int64_t n, int64_t grain) {
  memset(a, 0, sizeof *a);
  a->n = n;
  a->grain = grain;
  a->hits = calloc((size_t)(n > 0 ? n : 1), sizeof *a->hits);
  cr_assert_not_null(a->hits);
  a->caller = pthread_self();
  pthread_mutex_init(&a->mu, NULL);
}

static void count_fini(count_args *a) {
  free(a->hits);
  pthread_mutex_destroy(&a->mu);
}

static void count_entry(const void *args, int64_t first, int64_t count) {
  count_args *a = (count_args *)args;
  int64_t want = a->n - first < a->grain ? a->n - first : a->grain;
  if (first < 0 || first >= a->n || first % a->grain != 0 || count != want)
    atomic_fetch_add(&a->bad_chunks, 1);
  for (int64_t i = first; i < first + count && i < a->n; i++)
    if (i >= 0)
      atomic_fetch_add(&a->hits[i], 1);
  pthread_t self = pthread_self();
  if (!pthread_equal(self, a->caller))
    atomic_fetch_add(&a->off_caller, 1);
  pthread_mutex_lock(&a->mu);
  int known = 0;
  for (int k = 0; k < a->nseen; k++)
    known |= pthread_equal(a->seen[k], self);
  if (!known && a->nseen < MAX_THREADS_SEEN)
    a->seen[a->nseen++] = self;
  pthread_mutex_unlock(&a->mu);
}

/* Instances hit not exactly once. */
static int64_t count_wrong(const count_args *a) {
  int64_t wrong = 0;
  for (int64_t i = 0; i < a->n; i++)
    wrong += atomic_load(&a->hits[i]) != 1;
  return wrong;
}

static void launch_sched_and_check(lm_pool *p, int64_t n, int64_t grain,
                                   int workers, const lm_launch_sched *sched) {
  count_args a;
  count_init(&a, n, grain);
  lm_error err = {0};
  lm_status st = lm_pool_launch_sched(p, count_entry, &a, n, grain, workers,
                                      sched, &err);
  cr_assert_eq(st, LM_OK, "n=%lld grain=%lld workers=%d: %s", (long long)n,
               (long long)grain, workers, err.msg);
  cr_assert_eq(count_wrong(&a), 0,
               "n=%lld grain=%lld workers=%d: instances not run exactly once",
               (long long)n, (long long)grain, workers);
  cr_assert_eq(atomic_load(&a.bad_chunks), 0,
               "n=%lld grain=%lld workers=%d: a chunk of the wrong shape",
               (long long)n, (long long)grain, workers);
  int expect_max = workers;
  if (expect_max > lm_pool_threads(p) + 1)
    expect_max = lm_pool_threads(p) + 1;
  cr_assert_leq(a.nseen, expect_max,
                "n=%lld grain=%lld workers=%d: %d threads ran chunks",
                (long long)n, (long long)grain, workers, a.nseen);
  count_fini(&a);
}

/* Every schedule: dynamic one chunk a claim (lm_pool_launch's), dynamic
 * in batches of 4, and static blocks. */
static const lm_launch_sched schedules[] = {
    {LM_SCHED_DYNAMIC, 1}, {LM_SCHED_DYNAMIC, 4}, {LM_SCHED_STATIC, 0}};

static void launch_and_check(lm_pool *p, int64_t n, int64_t grain,
                             int workers) {
  for (size_t s = 0; s < sizeof schedules / sizeof *schedules; s++)
    launch_sched_and_check(p, n, grain, workers, &schedules[s]);
}

static const int64_t sizes[] = {1, 2, 7, 64, 65, 1000, 4097};
static const int64_t grains[] = {1, 3, 8, 64, 5000};
static const int worker_counts[] = {1, 2, 3, 4, 9};

static void sweep(lm_pool *p) {
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
    for (size_t j = 0; j < sizeof grains / sizeof *grains; j++)
      for (size_t k = 0; k < sizeof worker_counts / sizeof *worker_counts; k++)
        launch_and_check(p, sizes[i], grains[j], worker_counts[k]);
}

Test(pool, every_instance_runs_exactly_once_on_a_3_thread_pool) {
  lm_error err = {0};
  lm_pool *p = lm_pool_new(3, &err);
  cr_assert_not_null(p, "%s", err.msg);
  sweep(p);
  lm_pool_free(p);
}

Test(pool, every_instance_runs_exactly_once_with_8_workers_on_2_cores) {
  /* more workers than cores: preempted workers, blocks taken over */
  lm_error err = {0};
  lm_pool *p = lm_pool_new(7, &err);
  cr_assert_not_null(p, "%s", err.msg);
  sweep(p);
  for (int r = 0; r < 200; r++)
    launch_and_check(p, 512 * 16, 16, 8);
  lm_pool_free(p);
}

Test(pool, every_instance_runs_exactly_once_on_a_1_thread_pool) {
  lm_error err = {0};
  lm_pool *p = lm_pool_new(1, &err);
  cr_assert_not_null(p, "%s", err.msg);
  sweep(p);
  lm_pool_free(p);
}

Test(pool, a_pool_with_0_threads_runs_everything_on_the_caller) {
  lm_error err = {0};
  lm_pool *p = lm_pool_new(0, &err);
  cr_assert_not_null(p, "%s", err.msg);
  cr_assert_eq(lm_pool_threads(p), 0);
  sweep(p);
  count_args a;
  count_init(&a, 100, 7);
  cr_assert_eq(lm_pool_launch(p, count_entry, &a, 100, 7, 4, &err), LM_OK);
  cr_assert_eq(count_wrong(&a), 0);
  cr_assert_eq(atomic_load(&a.off_caller), 0);
  count_fini(&a);
  lm_pool_free(p);
}

Test(pool, parked_workers_are_woken_for_every_launch) {
  /* spin_us = 0: workers park as soon as they are idle, so every launch
   * below goes through the futex wake path. */
  lm_pool_opts o;
  lm_pool_opts_defaults(&o);
  o.nthreads = 2;
  o.spin_us = 0;
  lm_error err = {0};
  lm_pool *p = lm_pool_new_opts(&o, &err);
  cr_assert_not_null(p, "%s", err.msg);
  for (int rep = 0; rep < 200; rep++) {
    launch_and_check(p, 97, 5, 3);
    if (rep % 50 == 0) {
      struct timespec ts = {0, 2 * 1000 * 1000};
      nanosleep(&ts, NULL);
    }
  }
  lm_pool_free(p);
}

static double mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int64_t parks_of(const lm_pool *p) {
  lm_pool_stats st;
  lm_pool_stats_get(p, &st);
  return st.parks;
}

/* lm_pool_warm wakes the parked workers, and idle workers then spin for
 * spin_us instead of parking at once; launches after it still run every
 * instance once.  The "no park" check is skipped when this thread slept
 * far longer than asked (a loaded machine), never failed for it. */
Test(pool, warm_wakes_parked_workers_and_keeps_them_spinning_for_spin_us) {
  lm_pool_opts o;
  lm_pool_opts_defaults(&o);
  o.nthreads = 2;
  o.spin_us = 50000; /* 50 ms */
  lm_error err = {0};
  lm_pool *p = lm_pool_new_opts(&o, &err);
  cr_assert_not_null(p, "%s", err.msg);
  /* idle for longer than spin_us: both workers park */
  for (int i = 0; i < 100 && parks_of(p) < 2; i++) {
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  cr_assert_geq(parks_of(p), 2, "the idle workers never parked");
  /* counted before the warm: on a loaded machine this thread may not run
   * again until both warmed workers have spun out and parked */
  int64_t parked = parks_of(p);
  cr_expect_eq(lm_pool_warm(p, 10ll * 1000 * 1000 * 1000), 0,
               "a woken worker did not come back within 10 s");
  int64_t before = parks_of(p);
  double t0 = mono_ms();
  struct timespec ts = {0, 5 * 1000 * 1000};
  nanosleep(&ts, NULL);
  int64_t after = parks_of(p);
  if (mono_ms() - t0 < 30)
    cr_expect_eq(after, before, "a warmed worker parked within 30 ms of "
                                "spin_us = 50 ms");
  /* they were up: once spin_us has passed, both park again */
  for (int i = 0; i < 500 && parks_of(p) < parked + 2; i++) {
    struct timespec t = {0, 10 * 1000 * 1000};
    nanosleep(&t, NULL);
  }
  cr_expect_geq(parks_of(p), parked + 2, "warm did not wake the parked workers");
  launch_and_check(p, 97, 5, 3);
  lm_pool_free(p);
}

static void warm_own_pool(const void *args, int64_t first, int64_t count) {
  (void)first, (void)count;
  lm_pool *p = (lm_pool *)args;
  cr_expect_eq(lm_pool_warm(p, 1000), 0);
}

/* from inside a launch the launch lock is held: warm must not wait for it */
Test(pool, warm_inside_a_launch_on_the_same_pool_returns_at_once,
     .timeout = 60) {
  lm_pool *p = lm_pool_new(1, NULL);
  cr_assert_not_null(p);
  lm_error err = {0};
  cr_assert_eq(lm_pool_launch(p, warm_own_pool, p, 8, 1, 2, &err), LM_OK,
               "%s", err.msg);
  lm_pool_free(p);
}

Test(pool, warm_is_a_no_op_without_threads_or_spin) {
  cr_expect_eq(lm_pool_warm(NULL, 1000), 0);
  lm_pool_opts o;
  lm_pool_opts_defaults(&o);
  o.nthreads = 1;
  o.spin_us = 0; /* parks by design: warm leaves it alone */
  lm_error err = {0};
  lm_pool *p = lm_pool_new_opts(&o, &err);
  cr_assert_not_null(p, "%s", err.msg);
  for (int i = 0; i < 100 && parks_of(p) < 1; i++) {
    struct timespec ts = {0, 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  int64_t before = parks_of(p);
  cr_expect_eq(lm_pool_warm(p, 1000), 0);
  struct timespec ts = {0, 2 * 1000 * 1000};
  nanosleep(&ts, NULL);
  cr_expect_eq(parks_of(p), before, "warm woke a pool with spin_us = 0");
  launch_and_check(p, 31, 2, 2);
  lm_pool_free(p);
}

Test(pool, pinned_pool_runs_every_instance_exactly_once) {
  lm_pool_opts o;
  lm_pool_opts_defaults(&o);
  o.nthreads = 2;
  o.pin = 1;
  lm_error err = {0};
  lm_pool *p = lm_pool_new_opts(&o, &err);
  cr_assert_not_null(p, "%s", err.msg);
  launch_and_check(p, 1000, 16, 3);
  lm_pool_free(p);
}

/* ---- workers = 1 -------------------------------------------------------- */

Test(pool, workers_1_runs_only_on_the_calling_thread_in_order) {
  lm_error err = {0};
  lm_pool *p = lm_pool_new(2, &err);
  cr_assert_not_null(p, "%s", err.msg);
  count_args a;
  count_init(&a, 1000, 10);
  cr_assert_eq(lm_pool_launch(p, count_entry, &a, 1000, 10, 1, &err), LM_OK);
  cr_assert_eq(count_wrong(&a), 0);
  cr_assert_eq(atomic_load(&a.off_caller), 0);
  cr_assert_eq(a.nseen, 1);
  cr_assert(pthread_equal(a.seen[0], pthread_self()));
  count_fini(&a);
  lm_pool_free(p);
}

Test(pool, workers_1_needs_no_pool) {
  count_args a;
  count_init(&a, 33, 4);
  lm_error err = {0};
  cr_assert_eq(lm_pool_launch(NULL, count_entry, &a, 33, 4, 1, &err), LM_OK,
               "%s", err.msg);
  cr_assert_eq(count_wrong(&a), 0);
  cr_assert_eq(atomic_load(&a.bad_chunks), 0);
  cr_assert_eq(atomic_load(&a.off_caller), 0);
  count_fini(&a);
}

typedef struct order_args {
  int64_t next_first; /* chunks must arrive in increasing order */
  int out_of_order;
} order_args;

static void order_entry(const void *args, int64_t first, int64_t count) {
  order_args *a = (order_args *)args;
  if (first != a->next_first)
    a->out_of_order++;
  a->next_first = first + count;
}

Test(pool, workers_1_runs_chunks_in_increasing_order) {
  order_args a = {0, 0};
  lm_error err = {0};
  cr_assert_eq(lm_pool_launch(NULL, order_entry, &a, 1001, 10, 1, &err), LM_OK);
  cr_assert_eq(a.out_of_order, 0);
  cr_assert_eq(a.next_first, 1001);
}

/* ---- parallelism -------------------------------------------------------- */

typedef struct meet_args {
  _Atomic int arrived;
  _Atomic int met; /* chunks that saw the other chunk running */
} meet_args;

/* Each of the two chunks waits (up to 20 s) until both have started: only
 * a launch that really runs two participants at once lets both meet. */
static void meet_entry(const void *args, int64_t first, int64_t count) {
  (void)first;
  (void)count;
  meet_args *a = (meet_args *)args;
  atomic_fetch_add(&a->arrived, 1);
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    if (atomic_load(&a->arrived) >= 2) {
      atomic_fetch_add(&a->met, 1);
      return;
    }
    clock_gettime(CLOCK_MONOTONIC, &t);
    if (t.tv_sec - t0.tv_sec > 20)
      return;
  }
}

Test(pool, workers_2_runs_two_chunks_at_the_same_time) {
  lm_error err = {0};
  lm_pool *p = lm_pool_new(1, &err);
  cr_assert_not_null(p, "%s", err.msg);
  meet_args a = {0, 0};
  cr_assert_eq(lm_pool_launch(p, meet_entry, &a, 2, 1, 2, &err), LM_OK);
  cr_assert_eq(atomic_load(&a.met), 2, "the two chunks never overlapped");
  lm_pool_free(p);
}

/* ---- concurrency and nesting -------------------------------------------- */

typedef struct launcher {
  lm_pool *pool;
  int64_t seed;
  int failures;
} launcher;

static void *launcher_main(void *arg) {
  launcher *l = arg;
  for (int rep = 0; rep < 200; rep++) {
    int64_t n = 1 + (l->seed * 7919 + rep * 104729) % 3000;
    int64_t grain = 1 + (rep * 31 + l->seed) % 50;
    int workers = 1 + rep % 4;
    count_args a;
    memset(&a, 0, sizeof a);
    a.n = n;
    a.grain = grain;
    a.hits = calloc((size_t)n, sizeof *a.hits);
    a.caller = pthread_self();
    pthread_mutex_init(&a.mu, NULL);
    lm_error err = {0};
    if (!a.hits ||
        lm_pool_launch(l->pool, count_entry, &a, n, grain, workers, &err) !=
            LM_OK ||
        count_wrong(&a) != 0 || atomic_load(&a.bad_chunks) != 0)
      l->failures++;
    free(a.hits);
    pthread_mutex_destroy(&a.mu);
  }
  return NULL;
}

Test(pool, concurrent_launches_from_4_threads_on_the_shared_pool_all_complete) {
  lm_pool *p = lm_pool_shared();
  cr_assert_not_null(p);
  launcher l[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    l[i] = (launcher){p, i + 1, 0};
    cr_assert_eq(pthread_create(&t[i], NULL, launcher_main, &l[i]), 0);
  }
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(l[i].failures, 0, "launcher %d had %d failed launches", i,
                 l[i].failures);
}

Test(pool, concurrent_launches_on_a_3_thread_pool_all_complete) {
  lm_error err = {0};
  lm_pool *p = lm_pool_new(3, &err);
  cr_assert_not_null(p, "%s", err.msg);
  launcher l[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++) {
    l[i] = (launcher){p, 10 * i + 3, 0};
    cr_assert_eq(pthread_create(&t[i], NULL, launcher_main, &l[i]), 0);
  }
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  for (int i = 0; i < 4; i++)
    cr_assert_eq(l[i].failures, 0);
  lm_pool_free(p);
}

typedef struct nest_args {
  lm_pool *pool;
  count_args inner[8]; /* one inner launch per outer instance */
  _Atomic int failed;
} nest_args;

static void nest_entry(const void *args, int64_t first, int64_t count) {
  nest_args *a = (nest_args *)args;
  for (int64_t i = first; i < first + count; i++)
    if (lm_pool_launch(a->pool, count_entry, &a->inner[i], a->inner[i].n,
                       a->inner[i].grain, 3, NULL) != LM_OK)
      atomic_fetch_add(&a->failed, 1);
}

Test(pool, a_nested_launch_on_the_same_pool_runs_inline_and_completes) {
  lm_error err = {0};
  lm_pool *p = lm_pool_new(2, &err);
  cr_assert_not_null(p, "%s", err.msg);
  nest_args a;
  memset(&a, 0, sizeof a);
  a.pool = p;
  for (int i = 0; i < 8; i++)
    count_init(&a.inner[i], 50 + i, 3);
  cr_assert_eq(lm_pool_launch(p, nest_entry, &a, 8, 1, 3, &err), LM_OK);
  cr_assert_eq(atomic_load(&a.failed), 0);
  for (int i = 0; i < 8; i++) {
    cr_assert_eq(count_wrong(&a.inner[i]), 0);
    cr_assert_eq(a.inner[i].nseen, 1, "nested launch %d left its thread", i);
    count_fini(&a.inner[i]);
  }
  lm_pool_free(p);
}

/* ---- arguments ---------------------------------------------------------- */

static void noop_entry(const void *args, int64_t first, int64_t count) {
  (void)args;
  (void)first;
  (void)count;
}

static void expect_einput(lm_pool *p, lm_entry_fn fn, int64_t n, int64_t grain,
                          int workers) {
  lm_error err = {0};
  lm_status st = lm_pool_launch(p, fn, NULL, n, grain, workers, &err);
  cr_assert_eq(st, LM_EINPUT, "n=%lld grain=%lld workers=%d", (long long)n,
               (long long)grain, workers);
  cr_assert_eq(err.status, LM_EINPUT);
  cr_assert_neq(err.msg[0], 0, "the error has no message");
}

Test(pool, bad_launch_arguments_are_einput) {
  lm_error err = {0};
  lm_pool *p = lm_pool_new(1, &err);
  cr_assert_not_null(p);
  expect_einput(p, noop_entry, 10, 0, 2);
  expect_einput(p, noop_entry, 10, -1, 2);
  expect_einput(p, noop_entry, 10, 4, 0);
  expect_einput(p, noop_entry, 10, 4, -3);
  expect_einput(p, noop_entry, -1, 4, 2);
  expect_einput(p, NULL, 10, 4, 2);
  expect_einput(NULL, noop_entry, 10, 4, 2);
  /* Bad grain or workers stay bad even when there is nothing to run. */
  expect_einput(p, noop_entry, 0, 0, 1);
  expect_einput(p, noop_entry, 0, 1, 0);
  const lm_launch_sched bad[] = {{(lm_sched_kind)7, 1},
                                 {LM_SCHED_DYNAMIC, -2}};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err = (lm_error){0};
    cr_expect_eq(lm_pool_launch_sched(p, noop_entry, NULL, 10, 4, 2, &bad[i],
                                      &err),
                 LM_EINPUT);
    cr_expect(err.msg[0], "no message for bad schedule %zu", i);
  }
  lm_pool_free(p);
}

Test(pool, bad_thread_counts_are_einput) {
  lm_error err = {0};
  cr_assert_null(lm_pool_new(-1, &err));
  cr_assert_eq(err.status, LM_EINPUT);
  lm_error_clear(&err);
  cr_assert_null(lm_pool_new(LM_POOL_MAX_THREADS + 1, &err));
  cr_assert_eq(err.status, LM_EINPUT);
  lm_pool_opts o;
  lm_pool_opts_defaults(&o);
  o.spin_us = -1;
  lm_error_clear(&err);
  cr_assert_null(lm_pool_new_opts(&o, &err));
  cr_assert_eq(err.status, LM_EINPUT);
}

typedef struct called_args {
  _Atomic int calls;
} called_args;

static void called_entry(const void *args, int64_t first, int64_t count) {
  (void)first;
  (void)count;
  atomic_fetch_add(&((called_args *)args)->calls, 1);
}

Test(pool, n_0_is_a_no_op) {
  lm_error err = {0};
  lm_pool *p = lm_pool_new(1, &err);
  cr_assert_not_null(p);
  called_args a = {0};
  cr_assert_eq(lm_pool_launch(p, called_entry, &a, 0, 4, 2, &err), LM_OK);
  cr_assert_eq(lm_pool_launch(NULL, called_entry, &a, 0, 4, 1, &err), LM_OK);
  cr_assert_eq(atomic_load(&a.calls), 0);
  lm_pool_free(p);
}

Test(pool, grain_larger_than_n_runs_one_chunk) {
  lm_error err = {0};
  lm_pool *p = lm_pool_new(2, &err);
  cr_assert_not_null(p);
  called_args a = {0};
  cr_assert_eq(lm_pool_launch(p, called_entry, &a, 5, 100, 3, &err), LM_OK);
  cr_assert_eq(atomic_load(&a.calls), 1);
  lm_pool_free(p);
}

/* ---- life cycle --------------------------------------------------------- */

Test(pool, threads_reports_the_requested_count) {
  lm_error err = {0};
  for (int t = 0; t <= 4; t++) {
    lm_pool *p = lm_pool_new(t, &err);
    cr_assert_not_null(p, "%s", err.msg);
    cr_assert_eq(lm_pool_threads(p), t);
    lm_pool_free(p);
  }
  cr_assert_eq(lm_pool_threads(NULL), 0);
}

Test(pool, the_shared_pool_is_one_pool_sized_to_the_cpus_minus_one) {
  lm_pool *a = lm_pool_shared(), *b = lm_pool_shared();
  cr_assert_not_null(a);
  cr_assert_eq(a, b);
  cpu_set_t set;
  CPU_ZERO(&set);
  cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
  int want = CPU_COUNT(&set) - 1;
  cr_assert_eq(lm_pool_threads(a), want > 0 ? want : 0);
}

Test(pool, pools_made_used_and_freed_in_a_loop_leave_nothing_behind) {
  /* Under ASan/LSan a leaked worker array or pool shows up here. */
  lm_error err = {0};
  for (int rep = 0; rep < 30; rep++) {
    lm_pool *p = lm_pool_new(1 + rep % 3, &err);
    cr_assert_not_null(p, "%s", err.msg);
    if (rep % 2)
      launch_and_check(p, 257, 16, 4);
    lm_pool_free(p);
  }
  lm_pool_free(NULL);
}

/* ---- placement beside a pinned caller ----------------------------------- */

typedef struct cpu_args {
  pthread_t caller;
  int avoid;
  _Atomic int on_avoided, off_caller;
} cpu_args;

static void record_cpu(const void *p, int64_t first, int64_t count) {
  cpu_args *a = (cpu_args *)p;
  (void)first;
  (void)count;
  if (pthread_equal(pthread_self(), a->caller))
    return;
  atomic_fetch_add(&a->off_caller, 1);
  if (sched_getcpu() == a->avoid)
    atomic_fetch_add(&a->on_avoided, 1);
}

Test(pool, kept_off_workers_never_run_on_the_callers_cpu_and_come_back) {
  cpu_set_t set;
  CPU_ZERO(&set);
  cr_assert_eq(sched_getaffinity(0, sizeof set, &set), 0);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; c++)
    if (CPU_ISSET(c, &set))
      first = c;
  lm_error err = {0};
  lm_pool *p = lm_pool_new(2, &err);
  cr_assert_not_null(p, "%s", err.msg);
  int moved = lm_pool_keep_off(p, first);
  if (CPU_COUNT(&set) < 2) {
    /* nowhere else to go: nothing moves, and the launch still completes */
    cr_assert_eq(moved, 0);
    launch_and_check(p, 1000, 8, 3);
    lm_pool_free(p);
    return;
  }
  cr_assert_eq(moved, 2, "both threads kept off CPU %d", first);
  cpu_args a = {pthread_self(), first, 0, 0};
  for (int rep = 0; rep < 200; rep++)
    cr_assert_eq(lm_pool_launch(p, record_cpu, &a, 64, 1, 3, &err), LM_OK,
                 "%s", err.msg);
  cr_assert_eq(atomic_load(&a.on_avoided), 0,
               "%d chunks ran on the avoided CPU %d", atomic_load(&a.on_avoided),
               first);
  /* back where they could run before; a second call replaces the first */
  cr_assert_eq(lm_pool_keep_off(p, -1), 0);
  cr_assert_eq(lm_pool_keep_off(NULL, first), 0);
  launch_and_check(p, 1000, 8, 3);
  lm_pool_free(p);
}

Test(pool, a_pool_freed_while_kept_off_leaves_nothing_behind) {
  lm_error err = {0};
  lm_pool *p = lm_pool_new(1, &err);
  cr_assert_not_null(p, "%s", err.msg);
  (void)lm_pool_keep_off(p, sched_getcpu());
  launch_and_check(p, 100, 4, 2);
  lm_pool_free(p); /* frees the saved masks under LSan's eye */
}

/* The worker ladder: 1, 2, 4, ... up to the cores this process may use,
 * which hwloc and the affinity mask bound (a core counts once, whatever
 * its SMT siblings). */
Test(pool, the_worker_ladder_doubles_up_to_the_cores_available) {
  int cores = lm_cores_available();
  cr_assert_geq(cores, 1);
  long online = sysconf(_SC_NPROCESSORS_ONLN);
  cr_expect_leq(cores, online > 0 ? online : 1, "more cores than CPUs");
  int w[8];
  int n = lm_worker_ladder(w, 8);
  cr_assert_geq(n, 1);
  cr_expect_eq(w[0], 1);
  for (int i = 1; i < n; i++)
    cr_expect_eq(w[i], 2 * w[i - 1]);
  cr_expect_leq(w[n - 1], cores);
  cr_expect_gt(2 * w[n - 1], cores, "the ladder stops early");
  if (n < 8)
    cr_expect_eq(w[n], 0);
  int one[1];
  cr_expect_eq(lm_worker_ladder(one, 1), 1, "max bounds the ladder");
  cr_expect_eq(one[0], 1);
}

/* A block that spins (1 + its index) x 20 us: block 1 takes twice block
 * 0's time, whatever the cores' speeds. */
static void uneven_entry(const void *args, int64_t first, int64_t count) {
  (void)args, (void)count;
  double t0 = lm_now_ns();
  while (lm_now_ns() - t0 < (double)(1 + first) * 20000)
    ;
}

static void even_entry(const void *args, int64_t first, int64_t count) {
  (void)args, (void)first, (void)count;
  double t0 = lm_now_ns();
  while (lm_now_ns() - t0 < 20000)
    ;
}

/* The participants' skew: the slowest block over the fastest, less one,
 * averaged over launches; refused without a pool thread or work to split. */
Test(runtime, the_participants_skew_is_the_slowest_block_over_the_fastest) {
  lm_error err = {0};
  double x = 0;
  cr_expect_eq(lm_pool_skew(NULL, even_entry, NULL, 2, 1, 1, &x, &err), LM_EINPUT);
  cr_expect(isnan(x));
  lm_pool *p0 = lm_pool_new(0, &err);
  cr_assert_not_null(p0, "%s", err.msg);
  cr_expect_eq(lm_pool_skew(p0, even_entry, NULL, 2, 1, 1, &x, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "at least one thread"), "%s", err.msg);
  lm_pool_free(p0);
  lm_pool *p = lm_pool_new(1, &err);
  cr_assert_not_null(p, "%s", err.msg);
  cr_expect_eq(lm_pool_skew(p, NULL, NULL, 2, 1, 1, &x, &err), LM_EINPUT);
  cr_expect_eq(lm_pool_skew(p, even_entry, NULL, 1, 1, 1, &x, &err), LM_EINPUT);
  cr_expect_eq(lm_pool_skew(p, even_entry, NULL, 2, 0, 1, &x, &err), LM_EINPUT);
  cr_expect_eq(lm_pool_skew(p, even_entry, NULL, 2, 1, 0, &x, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "launches"), "%s", err.msg);
  /* a preempted block only lengthens a launch's ratio, so the uneven
   * blocks give at least their 1.0 less the clock's jitter */
  cr_assert_eq(lm_pool_skew(p, uneven_entry, NULL, 2, 1, 10, &x, &err), LM_OK, "%s", err.msg);
  cr_expect(x > 0.9 && isfinite(x), "uneven blocks: skew %g, want about 1", x);
  cr_assert_eq(lm_pool_skew(p, even_entry, NULL, 2, 2, 10, &x, &err), LM_OK, "%s", err.msg);
  cr_expect(x >= 0 && isfinite(x), "even blocks: skew %g", x);
  /* the built-in probe: the same measure on its own throughput-bound
   * blocks; refused without a pool thread */
  x = 0;
  cr_assert_eq(lm_pool_skew_probe(p, 5, &x, &err), LM_OK, "%s", err.msg);
  cr_expect(x >= 0 && isfinite(x), "probe: skew %g", x);
  cr_expect_eq(lm_pool_skew_probe(NULL, 5, &x, &err), LM_EINPUT);
  cr_expect(isnan(x));
  lm_pool_free(p);
}

/* The fork-join round and the late join are measured on a pool with a
 * thread, refused without. */
Test(runtime, the_fork_join_round_and_late_join_are_measured_on_a_pool_with_a_thread) {
  lm_timing_opts o;
  lm_timing_defaults(&o);
  o.samples = 3, o.sample_ms = 1, o.warmup_ms = 2;
  double f = 0, j = 0;
  lm_error err = {0};
  cr_expect_eq(lm_pool_round_ns(NULL, &o, &f, &j, NULL, &err), LM_EINPUT);
  cr_expect(isnan(f) && isnan(j));
  lm_pool *p0 = lm_pool_new(0, &err);
  cr_assert_not_null(p0, "%s", err.msg);
  cr_expect_eq(lm_pool_round_ns(p0, &o, &f, &j, NULL, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "at least one thread"), "%s", err.msg);
  lm_pool_free(p0);
  lm_pool *p = lm_pool_new(1, &err);
  cr_assert_not_null(p, "%s", err.msg);
  lm_pool_stats before, after;
  lm_pool_stats_get(p, &before);
  /* the rendezvous made the pool's thread run chunks (a worker that never
   * came would leave every launch to the caller).  Beside other tests on
   * two cores the thread may get no CPU in one measurement of a few
   * milliseconds, so it is measured again, up to about two seconds in
   * all, before that counts as never joining; the times themselves are
   * not asserted, only that they are differences of medians */
  lm_noise nz;
  for (int tries = 0; tries < 200; tries++) {
    cr_assert_eq(lm_pool_round_ns(p, &o, &f, &j, &nz, &err), LM_OK, "%s", err.msg);
    lm_pool_stats_get(p, &after);
    if (after.joined > before.joined)
      break;
  }
  cr_expect_gt(after.joined, before.joined, "the worker never joined");
  cr_expect(isfinite(f) && f >= 0, "fork %g ns", f);
  cr_expect(isfinite(j) && j >= 0, "join %g ns", j);
  /* the verdict is the comparison's: it watched the pool's launches */
  cr_expect_gt(nz.wall_s, 0);
  cr_expect_gt(nz.wanted, 0, "the verdict saw no pooled launch");
  lm_pool_free(p);
}
