/* Which canary sees the drift a kernel sees?
 *
 * The timing harness's canary (lm_noise_canary_run) is a dependent chain of
 * integer multiply-adds: its latency sets its time, so what the compared
 * entries do to the core's ports, caches and memory bandwidth does not
 * change it.  That also makes it blind to another tenant of the physical
 * core (a hyperthread sibling on the host) or of the shared caches, which
 * slows throughput-bound and cache-bound kernels without counting as steal.
 * This benchmark times, on one pinned CPU, back to back and in turn:
 *   - chain:  the harness's canary;
 *   - fma:    eight independent vector multiply-add chains (port-bound;
 *             lm_noise_vector_run);
 *   - sweep:  a sum over a buffer of --kib KiB (cache-bound; the default,
 *             2048, is half of a 4 MiB L2);
 * each sized to about 2 ms, for --seconds s, and prints each loop's spread
 * over single samples and over the medians of 0.5 s windows, relative to
 * its overall median.  When fma or sweep drift while chain holds still, the
 * machine's noise is of the kind the canary cannot see (docs/timing.md,
 * "What the canary cannot see").
 *
 * Usage: bench_canaries [--seconds S] [--kib K] [--cpu C] [--quick] */
#define _GNU_SOURCE /* sched_setaffinity */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/noise.h"
#include "lanemap/timing.h"

typedef float vf __attribute__((vector_size(32)));

static float *buf;
static size_t nbuf; /* floats, a multiple of 8 */

static float sweep_loop(int64_t reps) {
  vf s = {0};
  for (int64_t r = 0; r < reps; r++)
    for (size_t i = 0; i < nbuf; i += 8) {
      vf x;
      memcpy(&x, buf + i, sizeof x);
      s += x;
    }
  float t = 0;
  for (int l = 0; l < 8; l++)
    t += s[l];
  return t;
}

enum { CHAIN, FMA, SWEEP, NLOOP };
static const char *names[NLOOP] = {"chain", "fma", "sweep"};
static volatile float sink;

static void run(int which, int64_t reps) {
  if (which == CHAIN)
    lm_noise_canary_run(NULL, reps);
  else if (which == FMA)
    lm_noise_vector_run(NULL, reps);
  else
    sink += sweep_loop(reps);
}

/* reps for about ns nanoseconds of loop `which`: doubled until a run
 * takes a quarter of ns, then scaled by the least of three runs */
static int64_t size_for(int which, double ns) {
  int64_t reps = 1;
  for (;;) {
    double best = 1e300;
    for (int k = 0; k < 3; k++) {
      double t0 = lm_now_ns();
      run(which, reps);
      double t = lm_now_ns() - t0;
      best = t < best ? t : best;
    }
    if (best > ns / 4 || reps > (INT64_C(1) << 40))
      return (int64_t)((double)reps * ns / (best > 0 ? best : 1)) + 1;
    reps *= 2;
  }
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* the q-quantile of x[0..n) (sorted in place) */
static double quantile(double *x, int n, double q) {
  qsort(x, (size_t)n, sizeof *x, cmp);
  int i = (int)(q * (n - 1) + 0.5);
  return x[i < 0 ? 0 : i >= n ? n - 1 : i];
}

int main(int argc, char **argv) {
  double seconds = 60;
  size_t kib = 2048;
  int cpu = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
      seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--kib") && i + 1 < argc)
      kib = (size_t)atol(argv[++i]);
    else if (!strcmp(argv[i], "--cpu") && i + 1 < argc)
      cpu = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--quick"))
      seconds = 5;
    else {
      fprintf(stderr, "usage: bench_canaries [--seconds S] [--kib K] [--cpu C] "
                      "[--quick]\n");
      return 2;
    }
  }
  if (!(seconds > 0 && seconds <= 3600) || kib < 1 || kib > (1u << 20) ||
      cpu < 0) {
    fprintf(stderr, "bench_canaries: --seconds in (0, 3600], --kib in "
                    "[1, 1048576], --cpu >= 0\n");
    return 2;
  }
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) {
    perror("bench_canaries: sched_setaffinity");
    return 2;
  }
  nbuf = kib * 1024 / sizeof(float) / 8 * 8;
  buf = malloc(nbuf * sizeof *buf);
  if (!buf)
    return 1;
  for (size_t i = 0; i < nbuf; i++)
    buf[i] = 1.0f / (float)(i % 97 + 1);
  int64_t reps[NLOOP];
  for (int w = 0; w < NLOOP; w++)
    reps[w] = size_for(w, 2e6);
  int cap = (int)(seconds * 1e3 / 2) + 16, n = 0;
  double *t[NLOOP], *at = malloc(sizeof *at * (size_t)cap);
  for (int w = 0; w < NLOOP; w++)
    t[w] = malloc(sizeof *t[w] * (size_t)cap);
  double start = lm_now_ns();
  while (n < cap && lm_now_ns() - start < seconds * 1e9) {
    at[n] = (lm_now_ns() - start) / 1e9;
    for (int w = 0; w < NLOOP; w++) {
      double t0 = lm_now_ns();
      run(w, reps[w]);
      t[w][n] = lm_now_ns() - t0;
    }
    n++;
  }
  /* the run's own length: the sample cap may end it before --seconds */
  printf("bench_canaries: CPU %d, %.1f s, %d samples of each loop (about 2 "
         "ms), sweep over %zu KiB\n",
         cpu, (lm_now_ns() - start) / 1e9, n, kib);
  printf("%-6s %9s | single samples / median: %6s %6s %6s | 0.5 s window "
         "medians / median: %6s %6s %s\n",
         "loop", "p50 ms", "p10", "p90", "p99", "min", "max",
         "windows off by >15%");
  double *tmp = malloc(sizeof *tmp * (size_t)(n > 0 ? n : 1));
  for (int w = 0; w < NLOOP && n > 0; w++) {
    memcpy(tmp, t[w], sizeof *tmp * (size_t)n);
    double med = quantile(tmp, n, 0.5);
    double p10 = quantile(tmp, n, 0.1), p90 = quantile(tmp, n, 0.9),
           p99 = quantile(tmp, n, 0.99);
    double lo = 1e300, hi = 0;
    int nwin = 0, off = 0;
    for (int i = 0; i < n;) {
      int j = i;
      while (j < n && at[j] < at[i] + 0.5)
        j++;
      double wm = quantile(memcpy(tmp, t[w] + i, sizeof *tmp * (size_t)(j - i)),
                           j - i, 0.5) /
                  med;
      lo = wm < lo ? wm : lo;
      hi = wm > hi ? wm : hi;
      off += wm > 1.15 || wm < 1 / 1.15;
      nwin++;
      i = j;
    }
    printf("%-6s %9.3f | %31.3f %6.3f %6.3f | %26.3f %6.3f %d of %d\n",
           names[w], med / 1e6, p10 / med, p90 / med, p99 / med, lo, hi, off,
           nwin);
  }
  free(tmp);
  free(at);
  for (int w = 0; w < NLOOP; w++)
    free(t[w]);
  free(buf);
  return 0;
}
