/* Thread-pool stress: many launches with random worker counts, grains and
 * schedules (lm_launch_sched), each task writing a disjoint slice of an
 * output that is checked element by element afterwards (every index
 * written exactly once, with the launch's tag, by chunks that respect the
 * grain); launches from several
 * threads at once on one pool; nested launches; pools created and freed
 * while in use elsewhere; and compiled kernels launched concurrently from
 * several threads, each checked against the FP64 oracle.
 *
 * The run is short by default.  LANEMAP_STRESS_SCALE=N multiplies the
 * number of launches (the tsan preset sets it): the point of that build is
 * that ThreadSanitizer watches every one of them. */
#ifndef LM_STRESS_STANDALONE
#include <criterion/criterion.h>
#endif
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/calibrate.h"
#include "lanemap/dispatch.h"
#include "lanemap/plan.h"
#include "lanemap/verify.h"

#ifdef LM_STRESS_STANDALONE
/* Criterion cannot start under ThreadSanitizer (its shared-memory arena
 * needs a fixed mapping that TSan's address layout refuses), so the tsan
 * build compiles this file with a minimal harness instead: each Test runs
 * in order in one process, and a failed check prints and counts. */
typedef struct SaTest {
  const char *name;
  void (*fn)(void);
} SaTest;
static SaTest sa_tests[32];
static int sa_ntests;
static _Atomic int sa_failures;
static void sa_register(const char *name, void (*fn)(void)) {
  if (sa_ntests < 32)
    sa_tests[sa_ntests++] = (SaTest){name, fn};
}
static void sa_fail(int fatal, const char *file, int line, const char *cond,
                    const char *f, ...) __attribute__((format(printf, 5, 6)));
static void sa_fail(int fatal, const char *file, int line, const char *cond,
                    const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  fprintf(stderr, "%s:%d: check failed: %s:", file, line, cond);
  vfprintf(stderr, f, ap);
  fputc('\n', stderr);
  va_end(ap);
  atomic_fetch_add(&sa_failures, 1);
  if (fatal)
    exit(1);
}
#define Test(suite, name)                                                    \
  static void suite##_##name(void);                                          \
  __attribute__((constructor)) static void suite##_##name##_reg(void) {      \
    sa_register(#suite "::" #name, suite##_##name);                          \
  }                                                                          \
  static void suite##_##name(void)
#define sa_check(fatal, cond, ...)                                           \
  do {                                                                       \
    if (!(cond))                                                             \
      sa_fail(fatal, __FILE__, __LINE__, #cond, " " __VA_ARGS__);            \
  } while (0)
#define cr_assert(cond, ...) sa_check(1, cond, __VA_ARGS__)
#define cr_assert_eq(a, b, ...) sa_check(1, (a) == (b), __VA_ARGS__)
#define cr_assert_gt(a, b, ...) sa_check(1, (a) > (b), __VA_ARGS__)
#define cr_assert_not_null(a, ...) sa_check(1, (a) != NULL, __VA_ARGS__)
#define cr_expect_eq(a, b, ...) sa_check(0, (a) == (b), __VA_ARGS__)
#endif

static int scale(void) {
  const char *s = getenv("LANEMAP_STRESS_SCALE");
  int v = s ? atoi(s) : 1;
  return v > 0 ? v : 1;
}

static uint64_t next_rand(uint64_t *s) {
  uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

typedef struct Job {
  int64_t *out;     /* [n] tag * n + i where written */
  uint8_t *hits;    /* [n] times written (disjoint, so plain bytes) */
  int64_t n, grain; /* the launch's extent and grain */
  int64_t tag;
  _Atomic int64_t bad_chunks; /* chunks not aligned to the grain */
  _Atomic int64_t chunks;
  lm_pool *nest;    /* launch a nested job on this pool from each chunk */
  pthread_t caller; /* the launching thread */
  int work;         /* extra busy work per element, so pool threads join */
} Job;

static _Atomic int64_t foreign_chunks; /* chunks run by pool threads */

static void fill(const void *args, int64_t first, int64_t count) {
  Job *j = (Job *)args;
  atomic_fetch_add(&j->chunks, 1);
  if (first % j->grain != 0 || count <= 0 || count > j->grain ||
      (count < j->grain && first + count != j->n))
    atomic_fetch_add(&j->bad_chunks, 1);
  if (!pthread_equal(pthread_self(), j->caller))
    atomic_fetch_add(&foreign_chunks, 1);
  for (int64_t i = first; i < first + count; i++) {
    volatile int64_t v = j->tag * j->n;
    for (int w = 0; w < j->work; w++)
      v = v + 1 - 1;
    j->out[i] = v + i;
    j->hits[i]++;
  }
}

typedef struct Inner {
  int64_t *out; /* [n] */
  int64_t base;
} Inner;

static void inner_fill(const void *args, int64_t first, int64_t count) {
  const Inner *in = args;
  for (int64_t i = first; i < first + count; i++)
    in->out[i] = in->base + i;
}

/* Each chunk also launches a nested job over its own 4-element slice of a
 * second array (it must run inline, on the same pool). */
static void fill_nested(const void *args, int64_t first, int64_t count) {
  Job *j = (Job *)args;
  fill(args, first, count);
  for (int64_t i = first; i < first + count; i++) {
    Inner in = {j->out + j->n + 4 * i, 1000 * i};
    lm_error err;
    if (lm_pool_launch(j->nest, inner_fill, &in, 4, 1, 8, &err) != LM_OK)
      atomic_fetch_add(&j->bad_chunks, 1);
  }
}

/* One checked launch; returns the number of wrong elements (all reported
 * by the caller). */
static int64_t one_launch(lm_pool *p, uint64_t *rng, int64_t tag, int nested) {
  int64_t n = (int64_t)(next_rand(rng) % 3000);
  if (next_rand(rng) % 8 == 0)
    n = (int64_t)(next_rand(rng) % 4); /* tiny launches: 0 to 3 */
  int64_t grain = 1 + (int64_t)(next_rand(rng) % (next_rand(rng) % 2 ? 7 : 400));
  int workers = 1 + (int)(next_rand(rng) % (uint64_t)(lm_pool_threads(p) + 3));
  Job j = {0};
  j.n = n, j.grain = grain, j.tag = tag, j.nest = p;
  j.caller = pthread_self();
  j.work = next_rand(rng) % 4 == 0 ? 200 : 0;
  j.out = malloc((size_t)(n * 5 + 1) * sizeof *j.out);
  j.hits = calloc((size_t)n + 1, 1);
  cr_assert(j.out && j.hits);
  for (int64_t i = 0; i < 5 * n; i++)
    j.out[i] = -1;
  /* every schedule: dynamic one or a few chunks a claim, and static */
  uint64_t pick = next_rand(rng) % 3;
  lm_launch_sched sched = {pick == 2 ? LM_SCHED_STATIC : LM_SCHED_DYNAMIC,
                           pick == 1 ? 1 + (int64_t)(next_rand(rng) % 8) : 0};
  lm_error err = {0};
  lm_status s = lm_pool_launch_sched(p, nested ? fill_nested : fill, &j, n,
                                     grain, workers, &sched, &err);
  cr_assert_eq(s, LM_OK, "launch n=%lld grain=%lld workers=%d: %s", (long long)n,
               (long long)grain, workers, err.msg);
  int64_t wrong = atomic_load(&j.bad_chunks);
  for (int64_t i = 0; i < n; i++)
    if (j.hits[i] != 1 || j.out[i] != tag * n + i)
      wrong++;
  if (nested)
    for (int64_t i = 0; i < 4 * n; i++)
      if (j.out[n + i] != 1000 * (i / 4) + i % 4)
        wrong++;
  int64_t want_chunks = n / grain + (n % grain != 0);
  if (atomic_load(&j.chunks) != want_chunks)
    wrong++;
  cr_expect_eq(wrong, 0, "n=%lld grain=%lld workers=%d nested=%d: %lld wrong",
               (long long)n, (long long)grain, workers, nested, (long long)wrong);
  free(j.out);
  free(j.hits);
  return wrong;
}

Test(pool_stress, many_launches_with_random_workers_and_grains_write_every_element_once) {
  const int sizes[] = {0, 1, 2, 3, 7};
  uint64_t rng = 42;
  int64_t launches = 0;
  for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
    lm_error err = {0};
    lm_pool *p = lm_pool_new(sizes[si], &err);
    cr_assert(p, "%s", err.msg);
    for (int it = 0; it < 300 * scale(); it++, launches++)
      one_launch(p, &rng, it, 0);
    lm_pool_free(p);
  }
  cr_assert_gt(launches, 0);
  printf("%lld launches, %lld chunks ran on pool threads\n", (long long)launches,
         (long long)atomic_load(&foreign_chunks));
}

Test(pool_stress, nested_launches_run_inline_and_stay_correct) {
  lm_error err = {0};
  lm_pool *p = lm_pool_new(3, &err);
  cr_assert(p, "%s", err.msg);
  uint64_t rng = 7;
  for (int it = 0; it < 100 * scale(); it++)
    one_launch(p, &rng, it, 1);
  lm_pool_free(p);
}

/* A pool that parks between launches: spin 0 makes every launch wake. */
Test(pool_stress, workers_that_park_between_launches_never_miss_one) {
  lm_pool_opts o;
  lm_pool_opts_defaults(&o);
  o.nthreads = 2;
  o.spin_us = 0;
  lm_error err = {0};
  lm_pool *p = lm_pool_new_opts(&o, &err);
  cr_assert(p, "%s", err.msg);
  uint64_t rng = 99;
  for (int it = 0; it < 200 * scale(); it++)
    one_launch(p, &rng, it, 0);
  lm_pool_free(p);
}

typedef struct Launcher {
  lm_pool *pool;
  uint64_t seed;
  int iters;
  int64_t wrong;
} Launcher;

static void *launcher(void *arg) {
  Launcher *l = arg;
  uint64_t rng = l->seed;
  for (int it = 0; it < l->iters; it++)
    l->wrong += one_launch(l->pool, &rng, it + 1, it % 5 == 0);
  return NULL;
}

Test(pool_stress, launches_from_several_threads_on_one_pool_are_serialized) {
  lm_error err = {0};
  lm_pool *p = lm_pool_new(3, &err);
  cr_assert(p, "%s", err.msg);
  enum { T = 4 };
  pthread_t th[T];
  Launcher l[T];
  for (int i = 0; i < T; i++) {
    l[i] = (Launcher){p, 1000u + (uint64_t)i, 100 * scale(), 0};
    cr_assert_eq(pthread_create(&th[i], NULL, launcher, &l[i]), 0);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    cr_expect_eq(l[i].wrong, 0, "thread %d: %lld wrong", i, (long long)l[i].wrong);
  }
  lm_pool_free(p);
}

/* Pools made, used and freed in a loop on several threads at once, while
 * another pool keeps running launches. */
static void *churn(void *arg) {
  Launcher *l = arg;
  uint64_t rng = l->seed;
  for (int it = 0; it < l->iters; it++) {
    lm_error err = {0};
    lm_pool *p = lm_pool_new(1 + (int)(next_rand(&rng) % 3), &err);
    if (!p) {
      l->wrong++;
      continue;
    }
    for (int k = 0; k < 3; k++)
      l->wrong += one_launch(p, &rng, k, 0);
    lm_pool_free(p);
  }
  return NULL;
}

Test(pool_stress, pools_created_and_freed_while_others_run) {
  enum { T = 3 };
  pthread_t th[T];
  Launcher l[T];
  for (int i = 0; i < T; i++) {
    l[i] = (Launcher){NULL, 77u + (uint64_t)i, 20 * scale(), 0};
    cr_assert_eq(pthread_create(&th[i], NULL, churn, &l[i]), 0);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    cr_expect_eq(l[i].wrong, 0, "thread %d: %lld wrong", i, (long long)l[i].wrong);
  }
}

/* ---- compiled kernels launched from several threads ------------------- */

typedef struct KernelRun {
  const lm_kernel *k;
  const lm_compiled *c;
  lm_pool *pool;
  int64_t R, C;
  uint64_t seed;
  int iters;
  int failures;
  char msg[sizeof(((lm_error *)0)->msg)];
} KernelRun;

static void *kernel_runner(void *arg) {
  KernelRun *kr = arg;
  lm_shape sh;
  lm_data *d = NULL;
  lm_oracle *o = NULL;
  lm_error err = {0};
  if (lm_shape_bind(kr->k, kr->R, kr->C, NULL, &sh, &err) != LM_OK ||
      lm_data_gen(kr->k, &sh, kr->seed, &d, &err) != LM_OK ||
      lm_oracle_run(kr->k, d, &o, &err) != LM_OK) {
    kr->failures++;
    snprintf(kr->msg, sizeof kr->msg, "%s", err.msg);
    goto done;
  }
  for (int it = 0; it < kr->iters; it++) {
    lm_verify_result res;
    if (lm_verify(kr->k, kr->c, d, o, kr->pool, &res, &err) != LM_OK) {
      kr->failures++;
      snprintf(kr->msg, sizeof kr->msg, "%s", err.msg);
    }
  }
done:
  lm_oracle_free(o);
  lm_data_free(d);
  return NULL;
}

Test(pool_stress, compiled_kernels_launched_from_several_threads_match_the_oracle) {
  char path[1024];
  snprintf(path, sizeof path, "%s/kernels/layernorm.lk", LANEMAP_SOURCE_DIR);
  lm_kernel *k = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_load(path, &k, &err), LM_OK, "%s", err.msg);
  const char *vars[] = {"x86-64-v2/w4/l1/priv=slot/glob=transpose/phase=snapshot/t2/g4",
                        "x86-64-v2/w4/l4/phase=reread/t2/g1"};
  lm_compiled *c[2];
  for (int i = 0; i < 2; i++) {
    lm_variant v;
    cr_assert_eq(lm_variant_parse(vars[i], &v, &err), LM_OK, "%s", err.msg);
    cr_assert_eq(lm_compile(k, &v, NULL, &c[i], &err), LM_OK, "%s: %s", vars[i],
                 err.msg);
  }
  lm_pool *p = lm_pool_new(2, &err);
  cr_assert(p, "%s", err.msg);
  enum { T = 4 };
  pthread_t th[T];
  KernelRun kr[T];
  for (int i = 0; i < T; i++) {
    kr[i] = (KernelRun){k, c[i % 2], i < 2 ? p : lm_pool_shared(),
                        17 + 16 * i, 33 + 8 * i, 5u + (uint64_t)i, 10 * scale(), 0, ""};
    cr_assert_eq(pthread_create(&th[i], NULL, kernel_runner, &kr[i]), 0);
  }
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    cr_expect_eq(kr[i].failures, 0, "thread %d: %s", i, kr[i].msg);
  }
  lm_pool_free(p);
  for (int i = 0; i < 2; i++)
    lm_compiled_free(c[i]);
  lm_kernel_free(k);
}

/* A plan launched by shape from several threads at once (lm_dispatch_launch,
 * the path a pipeline takes): two dispatches over the same small workload,
 * one planned for a single worker and one for two, so launches run both
 * inline and through the shared pool; each thread draws its own shapes,
 * exact, between buckets and outside every bucket, and checks every launch
 * against the FP64 oracle. */
typedef struct PlanRun {
  const lm_dispatch *d[2];
  uint64_t seed;
  int iters;
  int failures, fallbacks;
  char msg[1024];
} PlanRun;

static lm_dispatch *plan_dispatch(int workers) {
  lm_error e = {0};
  lm_workload *w = lm_workload_new(NULL, LANEMAP_SOURCE_DIR "/kernels", &e);
  cr_assert_not_null(w, "%s", e.msg);
  cr_assert_eq(lm_workload_add_kernel(w, "rmsnorm.lk", NULL, NULL, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(lm_workload_add_bucket(w, 0, 4, 64, 4, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(lm_workload_add_bucket(w, 0, 96, 64, 1, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(lm_workload_add_kernel(w, "swiglu.lk", NULL, NULL, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(lm_workload_add_bucket(w, 1, 17, 65, 1, &e), LM_OK, "%s", e.msg);
  int wk[1] = {workers};
  cr_assert_eq(lm_workload_set_workers(w, wk, 1, &e), LM_OK, "%s", e.msg);
  cr_assert_eq(lm_workload_bind(w, &e), LM_OK, "%s", e.msg);
  lm_profile *prof = NULL;
  cr_assert_eq(lm_profile_default(LM_ISA_HOST, &prof, &e), LM_OK, "%s", e.msg);
  const lm_profile *ps[1] = {prof};
  lm_plan_problem pp;
  lm_plan_build_opts bo = {0};
  cr_assert_eq(lm_plan_problem_build(w, ps, &bo, &pp, &e), LM_OK, "%s", e.msg);
  lm_solve_opts so;
  lm_solve_defaults(&so);
  lm_solve_result r;
  cr_assert_eq(lm_solve(&pp.p, &so, &r, &e), LM_OK, "%s", e.msg);
  lm_plan *plan = NULL;
  cr_assert_eq(lm_plan_from_result(w, ps, &pp, &so, &r, &plan, &e), LM_OK, "%s", e.msg);
  lm_dispatch *d = NULL;
  cr_assert_eq(lm_dispatch_new(plan, NULL, &d, &e), LM_OK, "%s", e.msg);
  lm_solve_result_free(&r);
  lm_plan_problem_free(&pp);
  lm_plan_free(plan);
  lm_profile_free(prof);
  lm_workload_free(w);
  return d;
}

static void plan_fail(PlanRun *pr, const char *what, const char *msg) {
  pr->failures++;
  snprintf(pr->msg, sizeof pr->msg, "%s: %.900s", what, msg);
}

static void *plan_runner(void *arg) {
  PlanRun *pr = arg;
  uint64_t rs = pr->seed;
  for (int it = 0; it < pr->iters; it++) {
    const lm_dispatch *d = pr->d[next_rand(&rs) % 2];
    int kernel = (int)(next_rand(&rs) % 2);
    /* R from 1 to 200 (the buckets are 4 and 96, or 17); C at a bucket's
     * or, one draw in four, another (a fallback) */
    int64_t R = 1 + (int64_t)(next_rand(&rs) % 200);
    int64_t C = kernel == 0 ? 64 : 65;
    if (next_rand(&rs) % 4 == 0)
      C = 1 + (int64_t)(next_rand(&rs) % 130);
    const lm_kernel *k = lm_dispatch_kernel(d, kernel);
    lm_error e = {0};
    lm_shape sh;
    lm_data *data = NULL;
    lm_oracle *orc = NULL;
    if (lm_shape_bind(k, R, C, NULL, &sh, &e) != LM_OK ||
        lm_data_gen(k, &sh, rs, &data, &e) != LM_OK ||
        lm_oracle_run(k, data, &orc, &e) != LM_OK) {
      plan_fail(pr, "setup", e.msg);
    } else {
      uint64_t *args = lm_args_pack(k, data);
      lm_dispatch_info info;
      lm_compare_result cmp;
      lm_status st = lm_dispatch_launch(d, kernel, R, C, args, &info, &e);
      if (st == LM_OK && info.match == LM_DISPATCH_FALLBACK)
        pr->fallbacks++;
      if (st != LM_OK)
        plan_fail(pr, "launch", e.msg);
      else if (lm_oracle_compare(k, orc, data, &cmp) != 0) {
        char m[256];
        snprintf(m, sizeof m, "%s at %lldx%lld: %lld mismatches", info.variant_name,
                 (long long)R, (long long)C, (long long)cmp.mismatches);
        plan_fail(pr, "oracle", m);
      }
      free(args);
    }
    lm_oracle_free(orc);
    lm_data_free(data);
  }
  return NULL;
}

Test(pool_stress, a_plan_launched_by_shape_from_several_threads_matches_the_oracle) {
  lm_dispatch *d1 = plan_dispatch(1), *d2 = plan_dispatch(2);
  /* the second plan really runs its variants on two workers */
  lm_dispatch_info info;
  lm_error e = {0};
  cr_assert_eq(lm_dispatch_lookup(d2, 0, 96, 64, &info, &e), LM_OK, "%s", e.msg);
  cr_assert(strstr(info.variant_name, "/t2") != NULL, "%s", info.variant_name);
  enum { T = 4 };
  pthread_t th[T];
  PlanRun pr[T];
  for (int i = 0; i < T; i++) {
    pr[i] = (PlanRun){{d1, d2}, 101u + (uint64_t)i, 8 * scale(), 0, 0, ""};
    cr_assert_eq(pthread_create(&th[i], NULL, plan_runner, &pr[i]), 0);
  }
  int fallbacks = 0;
  for (int i = 0; i < T; i++) {
    pthread_join(th[i], NULL);
    cr_expect_eq(pr[i].failures, 0, "thread %d: %s", i, pr[i].msg);
    fallbacks += pr[i].fallbacks;
  }
  cr_assert_gt(fallbacks, 0, "no launch fell back: the shapes miss a case");
  lm_dispatch_free(d2);
  lm_dispatch_free(d1);
}

#ifdef LM_STRESS_STANDALONE
int main(void) {
  for (int i = 0; i < sa_ntests; i++) {
    fprintf(stderr, "[RUN ] %s\n", sa_tests[i].name);
    int before = atomic_load(&sa_failures);
    sa_tests[i].fn();
    fprintf(stderr, "[%s] %s\n", atomic_load(&sa_failures) == before ? "PASS" : "FAIL",
            sa_tests[i].name);
  }
  fprintf(stderr, "%d tests, %d failed checks\n", sa_ntests, atomic_load(&sa_failures));
  return atomic_load(&sa_failures) ? 1 : 0;
}
#endif
