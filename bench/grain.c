/* bench_grain: one worker against two, and the split of two workers'
 * launches, over a grid of shapes.  For four kernels (streaming
 * elementwise, one row reduction, a two-pass norm, a softmax) and about 60
 * points R x C (R from 1 to 2^17, C from 4 to 4096, log-spaced, at most
 * 2^22 elements per buffer) it measures the best t1 variant, the best t2
 * variant of each split (static, dyn2 .. dyn16), and the model's choice
 * (the argmin of the profile's predictions over every legal variant), and
 * reports:
 *
 *   - loss: the choice's time over the measured best, flagged when it is
 *     more than 10% and more than 50 ns;
 *   - threads loss: the choice's time over the best of its own code at
 *     any worker count and split (round 2 times them all), the part of
 *     the loss that the workers and the split decide;
 *   - gain: best t1 over best t2 where t1 takes >= 200 us;
 *   - side: whether the choice has the best's worker count, on the points
 *     where the best t1 and the best t2 differ by more than 10%;
 *   - the copy roofline at one and two workers (GB/s), which caps the
 *     streaming kernel's gain.
 *
 * Measuring every split of every code variant would take hours, so each
 * point is measured in two interleaved rounds.  Round 1 times every t1
 * variant and every code variant at t2/static.  Round 2 times, with more
 * samples, the best t1 of round 1, every split of the three code variants
 * whose t2/static was fastest, and the model's choice with its code at
 * every worker count and split; the figures come
 * from round 2 (p50).  A split is thus tried on the code that runs best in
 * parallel, the pruning rule stated in docs/runtime.md.  Every entry is
 * verified against the FP64 oracle before it is timed.
 *
 *   bench_grain [--profile P | --default-profile] [--quick] [--kernel NAME]
 *
 * Without --profile it uses this machine's cached profile for the host
 * ISA, calibrating one (quick) when there is none.  --quick measures a
 * third of the grid with fewer samples. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lanemap/calibrate.h"
#include "lanemap/timing.h"
#include "lanemap/verify.h"

static const struct {
  const char *name, *src;
} kernels[] = {
    {"stream", "kernel stream(a: f32[R, C], b: f32[R, C], z: f32[R, C]) -> (y: f32[R, C]) {\n"
               "  y[r, :] = fma(a[r, :], b[r, :], z[r, :])\n}\n"},
    /* positive inputs: a sum of 4096 values in [-1, 1] cancels below the
     * oracle's tolerance in a one-accumulator variant */
    {"rowsum", "kernel rowsum(x: f32[R, C] in(0, 1)) -> (s: f32[R]) {\n  s[r] = sum(x[r, :])\n}\n"},
    {"norm", "kernel norm(x: f32[R, C], g: f32[C]) -> (y: f32[R, C]) {\n"
             "  xs = x[r, :]\n  mu = sum(xs) / C\n  d = xs - mu\n"
             "  y[r, :] = d / sqrt(sum(d * d) / C + 1e-5) * g[:]\n}\n"},
    {"softmax", "kernel softmax(x: f32[R, C] in(-4, 4)) -> (y: f32[R, C]) {\n"
                "  xs = x[r, :]\n  m = max(xs)\n  e = exp(xs - m)\n"
                "  y[r, :] = e / sum(e)\n}\n"},
};
#define NKERNELS (sizeof kernels / sizeof kernels[0])

static const int64_t rows[] = {1, 4, 16, 64, 256, 1024, 4096, 8192, 16384, 32768, 65536, 131072};
static const int64_t cols[] = {4, 16, 64, 256, 1024, 4096};
#define MAX_ELEMS ((int64_t)1 << 22)

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double loadavg(void) {
  double l = -1;
  FILE *f = fopen("/proc/loadavg", "r");
  if (f) {
    if (fscanf(f, "%lf", &l) != 1)
      l = -1;
    fclose(f);
  }
  return l;
}

/* The index of a t2 split in the report's columns: 0 static, 1.. dynK. */
#define NSPLITS 5
static int split_col(const lm_variant *v) {
  if (v->split == LM_SPLIT_STATIC)
    return 0;
  for (int i = 1; i < NSPLITS; i++)
    if (v->split == LM_SPLIT_DYNAMIC && v->per_worker == 1 << i)
      return i;
  return -1;
}

typedef struct Kernel {
  lm_kernel *k;
  lm_variant *v;
  lm_compiled **c; /* per variant; t2 splits rebind their t1 code */
  int nv;
} Kernel;

static int kernel_open(int i, lm_isa isa, Kernel *K) {
  lm_error err = {0};
  memset(K, 0, sizeof *K);
  lm_enum_opts eo;
  lm_enum_defaults(&eo);
  eo.isa = isa;
  eo.workers[0] = 1, eo.workers[1] = 2, eo.workers[2] = 0;
  if (lm_kernel_parse(kernels[i].name, kernels[i].src, strlen(kernels[i].src), &K->k, &err) ||
      (K->nv = lm_variant_enumerate(K->k, &eo, &K->v, &err)) <= 0) {
    fprintf(stderr, "%s: %s\n", kernels[i].name, err.msg);
    return 2;
  }
  K->c = calloc((size_t)K->nv, sizeof *K->c);
  for (int j = 0; j < K->nv; j++) {
    int base = -1;
    for (int b = 0; b < j && base < 0; b++)
      if (K->c[b] && lm_variant_same_code(&K->v[b], &K->v[j]))
        base = b;
    lm_status s = base >= 0 ? lm_compiled_rebind(K->c[base], &K->v[j], &K->c[j], &err)
                            : lm_compile(K->k, &K->v[j], NULL, &K->c[j], &err);
    if (s != LM_OK) {
      fprintf(stderr, "%s: %s\n", kernels[i].name, err.msg);
      return 2;
    }
  }
  return 0;
}

static void kernel_close(Kernel *K) {
  for (int j = 0; j < K->nv; j++)
    lm_compiled_free(K->c[j]);
  free(K->c), free(K->v);
  lm_kernel_free(K->k);
}

/* Per point, what the report needs. */
typedef struct Point {
  int64_t R, C;
  double t1;             /* best t1, p50 ns */
  double t2[NSPLITS];    /* best t2 of each split (NAN: not measured) */
  double best;           /* measured best of round 2 */
  int best_workers;
  double choice;         /* the model's choice */
  double same_code;      /* the best of the choice's code, any workers and split */
  int choice_workers;
  char choice_name[96], best_name[96];
  int failed;            /* entries that failed verification */
} Point;

/* The timing protocol of a round. */
static lm_timing_opts protocol(int samples, double sample_ms, double warmup_ms) {
  lm_timing_opts o;
  lm_timing_defaults(&o);
  o.samples = samples;
  o.sample_ms = sample_ms;
  o.warmup_ms = warmup_ms;
  o.pool = lm_pool_shared();
  return o;
}

/* Times entries idx[0..n) of K at data d, interleaved (lm_time_variants);
 * p50 into t[idx[i]]. */
static int time_set(const Kernel *K, const int *idx, int n, lm_data *d, int samples,
                    double sample_ms, double *t) {
  lm_compiled **cs = calloc((size_t)n, sizeof *cs);
  for (int i = 0; i < n; i++)
    cs[i] = K->c[idx[i]];
  lm_timing_opts o = protocol(samples, sample_ms, 10);
  lm_timing_result tr = {0};
  lm_error err = {0};
  int rc = 0;
  if (lm_time_variants(K->k, cs, n, d, NULL, &o, &tr, &err) != LM_OK) {
    fprintf(stderr, "timing: %s\n", err.msg);
    rc = 2;
  } else {
    for (int i = 0; i < n; i++)
      t[idx[i]] = tr.stats[i].p50;
  }
  lm_timing_result_free(&tr);
  free(cs);
  return rc;
}

static int point(const Kernel *K, const lm_predictor *pr, int64_t R, int64_t C, int quick,
                 Point *pt) {
  memset(pt, 0, sizeof *pt);
  pt->R = R, pt->C = C;
  lm_error err = {0};
  lm_shape sh;
  lm_data *d = NULL;
  lm_oracle *o = NULL;
  if (lm_shape_bind(K->k, R, C, NULL, &sh, &err) || lm_data_gen(K->k, &sh, 1, &d, &err) ||
      lm_oracle_run(K->k, d, &o, &err)) {
    fprintf(stderr, "%s %lldx%lld: %s\n", K->k->name, (long long)R, (long long)C, err.msg);
    lm_oracle_free(o);
    lm_data_free(d);
    return 2;
  }
  int nv = K->nv;
  double *pred = malloc(sizeof *pred * (size_t)nv), *t = malloc(sizeof *t * (size_t)nv);
  int *idx = malloc(sizeof *idx * (size_t)nv), *ok = calloc((size_t)nv, sizeof *ok);
  int *tried = calloc((size_t)nv, sizeof *tried);
  lm_predictor_eval(pr, &sh, pred);
  int choice = 0;
  for (int j = 0; j < nv; j++) {
    t[j] = NAN;
    if (pred[j] < pred[choice])
      choice = j;
  }
  /* verified on first use */
#define USE(j)                                                                                  \
  do {                                                                                          \
    if (!tried[j]) {                                                                            \
      lm_verify_result vr;                                                                      \
      tried[j] = 1;                                                                             \
      ok[j] = lm_verify(K->k, K->c[j], d, o, NULL, &vr, &err) == LM_OK;                         \
      pt->failed += !ok[j];                                                                     \
      if (!ok[j]) {                                                                             \
        char vn_[96];                                                                           \
        fprintf(stderr, "%s %lldx%lld %s: %s\n", K->k->name, (long long)R, (long long)C,       \
                lm_variant_format(&K->v[j], vn_, sizeof vn_), err.msg);                        \
      }                                                                                         \
    }                                                                                           \
  } while (0)
  /* round 1: every t1, every code variant at t2/static, the choice */
  int n = 0;
  for (int j = 0; j < nv; j++)
    if (K->v[j].workers == 1 || K->v[j].split == LM_SPLIT_STATIC || j == choice) {
      USE(j);
      if (ok[j])
        idx[n++] = j;
    }
  int rc = time_set(K, idx, n, d, quick ? 3 : 5, 1, t);
  /* round 2: the best t1, every split of the 3 fastest static code
   * variants, the choice */
  int t1 = -1, top[3] = {-1, -1, -1};
  for (int i = 0; i < n && !rc; i++) {
    int j = idx[i];
    if (K->v[j].workers == 1 && (t1 < 0 || t[j] < t[t1]))
      t1 = j;
    if (K->v[j].split == LM_SPLIT_STATIC)
      for (int s = 0; s < 3; s++)
        if (top[s] < 0 || t[j] < t[top[s]]) {
          for (int u = 2; u > s; u--)
            top[u] = top[u - 1];
          top[s] = j;
          break;
        }
  }
  n = 0;
  if (t1 >= 0)
    idx[n++] = t1;
  for (int j = 0; j < nv && !rc; j++) {
    /* the choice, and its code at every worker count and split: what the
     * choice would take with other threads decides the threads loss */
    int in = j != t1 && lm_variant_same_code(&K->v[j], &K->v[choice]);
    for (int s = 0; s < 3; s++)
      in |= top[s] >= 0 && K->v[j].workers > 1 && lm_variant_same_code(&K->v[j], &K->v[top[s]]);
    if (in) {
      USE(j);
      if (ok[j] && j != t1)
        idx[n++] = j;
    }
  }
#undef USE
  for (int j = 0; j < nv; j++)
    t[j] = NAN;
  if (!rc)
    rc = time_set(K, idx, n, d, quick ? 5 : 9, quick ? 2 : 3, t);
  pt->t1 = pt->best = pt->choice = NAN;
  for (int s = 0; s < NSPLITS; s++)
    pt->t2[s] = NAN;
  int best = -1;
  for (int i = 0; i < n && !rc; i++) {
    int j = idx[i], s = split_col(&K->v[j]);
    if (K->v[j].workers == 1)
      pt->t1 = isnan(pt->t1) ? t[j] : fmin(pt->t1, t[j]);
    else if (s >= 0)
      pt->t2[s] = isnan(pt->t2[s]) ? t[j] : fmin(pt->t2[s], t[j]);
    if (best < 0 || t[j] < t[best])
      best = j;
  }
  if (best >= 0) {
    pt->best = t[best];
    pt->best_workers = K->v[best].workers;
    lm_variant_format(&K->v[best], pt->best_name, sizeof pt->best_name);
  }
  pt->choice = t[choice];
  pt->choice_workers = K->v[choice].workers;
  pt->same_code = NAN;
  for (int i = 0; i < n && !rc; i++)
    if (lm_variant_same_code(&K->v[idx[i]], &K->v[choice]) &&
        !(t[idx[i]] >= pt->same_code))
      pt->same_code = t[idx[i]];
  lm_variant_format(&K->v[choice], pt->choice_name, sizeof pt->choice_name);
  free(pred), free(t), free(idx), free(ok), free(tried);
  lm_oracle_free(o);
  lm_data_free(d);
  return rc;
}

/* The copy roofline: GB/s of y = x over 2^22 floats at t1 and t2/static,
 * interleaved. */
static void roofline(lm_isa isa) {
  static const char src[] =
      "kernel copy(x: f32[R, C]) -> (y: f32[R, C]) {\n  y[r, :] = x[r, :]\n}\n";
  lm_error err = {0};
  lm_kernel *k = NULL;
  lm_shape sh;
  lm_data *d = NULL;
  int W = lm_isa_lanes(isa, LM_F32, 1);
  char v1[96], v2[96];
  snprintf(v1, sizeof v1, "%s/w%d/l%d/t1", lm_isa_name(isa), W, W);
  snprintf(v2, sizeof v2, "%s/w%d/l%d/t2/static", lm_isa_name(isa), W, W);
  lm_variant va, vb;
  lm_compiled *ca = NULL, *cb = NULL;
  int64_t R = 4096, C = 1024;
  if (lm_kernel_parse("copy", src, strlen(src), &k, &err) ||
      lm_shape_bind(k, R, C, NULL, &sh, &err) || lm_data_gen(k, &sh, 1, &d, &err) ||
      lm_variant_parse(v1, &va, &err) || lm_variant_parse(v2, &vb, &err) ||
      lm_compile(k, &va, NULL, &ca, &err) || lm_compiled_rebind(ca, &vb, &cb, &err)) {
    fprintf(stderr, "roofline: %s\n", err.msg);
    return;
  }
  lm_compiled *cs[2] = {ca, cb};
  lm_timing_opts o = protocol(9, 20, 100);
  lm_timing_result tr = {0};
  if (lm_time_variants(k, cs, 2, d, NULL, &o, &tr, &err) == LM_OK) {
    double bytes = 2.0 * 4 * (double)(R * C);
    printf("\ncopy roofline, %lld floats in and out: t1 %.1f GB/s, t2/static %.1f GB/s "
           "(%.2fx)\n",
           (long long)(R * C), bytes / tr.stats[0].p50, bytes / tr.stats[1].p50,
           tr.stats[0].p50 / tr.stats[1].p50);
  } else {
    fprintf(stderr, "roofline: %s\n", err.msg);
  }
  lm_timing_result_free(&tr);
  lm_compiled_free(cb), lm_compiled_free(ca);
  lm_data_free(d);
  lm_kernel_free(k);
}

static void fmt_us(double ns, char *buf, size_t n) {
  if (isnan(ns))
    snprintf(buf, n, "-");
  else
    snprintf(buf, n, "%.2f", ns / 1e3);
}

int main(int argc, char **argv) {
  const char *ppath = NULL, *only = NULL;
  int quick = 0, defaults = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--profile") && i + 1 < argc)
      ppath = argv[++i];
    else if (!strcmp(argv[i], "--default-profile"))
      defaults = 1;
    else if (!strcmp(argv[i], "--kernel") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--quick"))
      quick = 1;
    else {
      fprintf(stderr, "usage: bench_grain [--profile P | --default-profile] [--quick] "
                      "[--kernel stream|rowsum|norm|softmax]\n");
      return 2;
    }
  }
  lm_error err = {0};
  lm_isa isa = LM_ISA_HOST;
  lm_profile_lookup_opts lo;
  lm_profile_lookup_defaults(&lo);
  lo.path = ppath;
  lo.use_defaults = defaults;
  lo.isa = isa;
  lo.missing = LM_PROFILE_MISSING_CALIBRATE;
  lm_profile *prof = NULL;
  lm_profile_found found;
  if (lm_profile_lookup(&lo, &prof, &found, &err) != LM_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return 2;
  }
  double t0 = now_s(), load0 = loadavg();
  printf("# bench_grain (profile: %s %s; load average %.2f at start)\n",
         lm_profile_source_name(found.source), found.path, load0);
  printf("\nTimes in us, p50 of interleaved samples; t2 columns: the best code variant "
         "of each split; `loss`: the model's choice over the measured best.\n");
  int rc = 0, npoints = 0, nloss = 0, ntloss = 0, nside = 0, nright = 0, failed = 0;
  double worst = 0, tworst = 0;
  char worst_at[320] = "", tworst_at[320] = "";
  for (size_t ki = 0; ki < NKERNELS && !rc; ki++) {
    if (only && strcmp(only, kernels[ki].name))
      continue;
    Kernel K;
    if ((rc = kernel_open((int)ki, isa, &K)))
      break;
    lm_predictor *pr = NULL;
    if (lm_predictor_new(prof, K.k, K.v, K.nv, &pr, &err) != LM_OK) {
      fprintf(stderr, "%s\n", err.msg);
      rc = 2;
      kernel_close(&K);
      break;
    }
    printf("\n## %s (%d variants)\n\n| R x C | t1 | static | dyn2 | dyn4 | dyn8 | dyn16 | "
           "best t1/t2 | choice | loss | threads loss |\n"
           "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|\n",
           kernels[ki].name, K.nv);
    double gain_min = INFINITY;
    int ngain = 0;
    int p = 0;
    for (size_t ri = 0; ri < sizeof rows / sizeof *rows && !rc; ri++)
      for (size_t ci = 0; ci < sizeof cols / sizeof *cols && !rc; ci++) {
        int64_t R = rows[ri], C = cols[ci];
        if (R * C > MAX_ELEMS || (quick && (p++ % 3) != 0))
          continue;
        Point pt;
        if ((rc = point(&K, pr, R, C, quick, &pt)))
          break;
        npoints++;
        failed += pt.failed;
        if (isnan(pt.choice) || isnan(pt.best)) {
          /* the choice failed the oracle check (reported above) */
          printf("| %lldx%lld | the model's choice `%s` was not timed |\n", (long long)R,
                 (long long)C, pt.choice_name);
          continue;
        }
        double t2 = NAN;
        for (int s = 0; s < NSPLITS; s++)
          if (!isnan(pt.t2[s]))
            t2 = isnan(t2) ? pt.t2[s] : fmin(t2, pt.t2[s]);
        double loss = pt.choice / pt.best - 1;
        int bad = loss > 0.10 && pt.choice - pt.best > 50;
        nloss += bad;
        /* the threads part of the loss: the choice against its own code
         * with the best workers and split */
        double tloss = pt.choice / pt.same_code - 1;
        int tbad = tloss > 0.10 && pt.choice - pt.same_code > 50;
        ntloss += tbad;
        if (tloss > tworst) {
          tworst = tloss;
          snprintf(tworst_at, sizeof tworst_at, "%s %lldx%lld (`%s`)", kernels[ki].name,
                   (long long)R, (long long)C, pt.choice_name);
        }
        if (loss > worst) {
          worst = loss;
          snprintf(worst_at, sizeof worst_at, "%s %lldx%lld (`%s` against `%s`)", kernels[ki].name,
                   (long long)R, (long long)C, pt.choice_name, pt.best_name);
        }
        double ratio = pt.t1 / t2;
        if (fabs(ratio - 1) > 0.10) {
          nside++;
          nright += pt.choice_workers == (ratio > 1 ? 2 : 1);
        }
        if (pt.t1 >= 200e3) {
          ngain++;
          gain_min = fmin(gain_min, ratio);
        }
        char c[7][32];
        fmt_us(pt.t1, c[0], sizeof c[0]);
        for (int s = 0; s < NSPLITS; s++)
          fmt_us(pt.t2[s], c[1 + s], sizeof c[1 + s]);
        const char *cv = strchr(pt.choice_name, '/');
        printf("| %lldx%lld | %s | %s | %s | %s | %s | %s | %.2f | `%s` | %s%.1f%% | %s%.1f%% |\n",
               (long long)R, (long long)C, c[0], c[1], c[2], c[3], c[4], c[5], ratio,
               cv ? cv + 1 : pt.choice_name, bad ? "**" : "", 100 * loss, tbad ? "**" : "",
               100 * tloss);
        fflush(stdout);
      }
    if (ngain)
      printf("\n%s: where t1 >= 200 us (%d points), the best t2 is at least %.2fx faster\n",
             kernels[ki].name, ngain, gain_min);
    lm_predictor_free(pr);
    kernel_close(&K);
  }
  if (!rc && !only)
    roofline(isa);
  printf("\n%d points, %.0f s, load average %.2f -> %.2f%s\n", npoints, now_s() - t0, load0,
         loadavg(), failed ? ", SOME VARIANTS FAILED VERIFICATION" : "");
  printf("loss > 10%% and > 50 ns: %d points; worst %.1f%% at %s\n", nloss, 100 * worst,
         worst_at);
  printf("threads loss (the choice against its own code with the best workers and split) "
         "> 10%% and > 50 ns: %d points; worst %.1f%% at %s\n",
         ntloss, 100 * tworst, tworst_at);
  printf("right side of t1 against t2 where they differ by > 10%%: %d of %d (%.0f%%)\n", nright,
         nside, nside ? 100.0 * nright / nside : 100.0);
  lm_profile_free(prof);
  return rc ? rc : failed ? 1 : 0;
}
