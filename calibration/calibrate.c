/* The calibration runner: compile every micro-benchmark with the backend,
 * verify it against the oracle, count its terms with the cost model, time
 * all of them interleaved round-robin, fit, and write what was learnt into
 * a profile.
 *
 * Each benchmark runs at N and 2N instances.  The pair cancels what does
 * not scale with the work (the call, the harness loop): those costs land
 * in the `call` term, fitted from the pairs, instead of inflating the
 * per-operation coefficients.  A row's relative error has two parts: its
 * timing's spread, and the model's own error (the linear form misses every
 * benchmark by some percent, far more than a timing's spread on a quiet
 * machine).  Rows are weighted by 1/((spread^2 + s^2) t^2), with s the
 * model error measured as the robust scale of a first fit's residuals, so
 * that a benchmark that happened to time tightly cannot pull the fit by
 * orders of magnitude more than its neighbours.  The fit is robust (Huber)
 * against the odd sample a shared machine produces.  The mixed kernels are not fitted:
 * they test whether the fitted costs compose as the model form says, and
 * give the overlap coefficient.
 *
 * The timing's noise verdict goes into the profile with it: the harness
 * judges the comparison as a whole (canary, other processes, steal, the
 * median spread, and the shared pool the fork-join benchmarks launch on),
 * and each family is judged on its own entries' median spread, and, when
 * its variants run on more than one worker, on the pool's measures. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "lanemap/calibrate.h"
#include "lanemap/fit.h"
#include "lanemap/runtime.h"
#include "lanemap/verify.h"

typedef struct Run {
  const lm_calib_bench *b;
  lm_kernel *k;
  lm_variant v;
  lm_compiled *c;
  lm_data *d[2]; /* N and 2N */
  uint64_t *args[2];
  lm_features f[2];
  double ns[2], spread[2], minv[2];
  int64_t reps[2];
} Run;

/* The verdict on the timing the fit used: the harness's on the whole
 * comparison, and each family's own. */
typedef struct Verdict {
  lm_noise noise;
  lm_profile_noisy_family *fam; /* [nfam]; family borrowed from the benches */
  int nfam;
} Verdict;

/* One term on trial (term_trials, lm_term_on_trial): its
 * leave-one-family-out scores with and without it, and the verdict. */
#define NTRIAL LM_T__COUNT
typedef struct Trial {
  lm_term t;
  double with, without; /* mean over families */
  double gain, se;      /* mean per-family drop of the score, its std error */
  int families, kept;
} Trial;

typedef struct Item {
  Run *r;
  int size;
} Item;

static void timed(void *ctx, int64_t reps) {
  Item *it = ctx;
  Run *r = it->r;
  for (int64_t i = 0; i < reps; i++)
    lm_compiled_launch(r->c, NULL, r->args[it->size], r->d[it->size]->shape.dims[0], NULL);
}

/* Row lengths for ragged benchmarks: a prefix of density*C for every row,
 * or random lengths with that mean. */
static void set_rowlens(const lm_kernel *k, lm_data *d, const lm_calib_bench *b,
                        int64_t C, uint64_t seed, lm_rowstats *st, int G) {
  if (k->rowlen_param < 0 || b->density <= 0)
    return;
  int32_t *len = d->buf[k->rowlen_param];
  int64_t R = d->shape.dims[0];
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  double sum = 0, gsum = 0;
  for (int64_t r = 0; r < R; r++) {
    double want = b->density < 1e-6 ? 0 : b->density * (double)C;
    if (b->random_lens) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      want = (double)(x % 10001) / 10000.0 * 2 * want;
    }
    int64_t l = (int64_t)llround(want);
    len[r] = (int32_t)(l < 0 ? 0 : l > C ? C : l);
    sum += len[r];
  }
  for (int64_t p = 0; p < R; p += G) {
    int32_t mx = 0;
    for (int64_t g = p; g < p + G && g < R; g++)
      mx = len[g] > mx ? len[g] : mx;
    gsum += mx;
  }
  memset(st, 0, sizeof *st);
  st->mean_len = sum / (double)R;
  int lg = 0;
  while ((1 << lg) < G)
    lg++;
  for (int i = 0; i < 7; i++)
    st->mean_group_max[i] = st->mean_len;
  st->mean_group_max[lg] = gsum / (double)((R + G - 1) / G);
}

/* Parse, compile, verify at a small shape, and prepare both sizes. */
static lm_status prepare(Run *r, const lm_calib_opts *o, const lm_caches *cc,
                         lm_error *err) {
  const lm_calib_bench *b = r->b;
  char file[160];
  snprintf(file, sizeof file, "calibration:%s", b->name);
  lm_status s = lm_kernel_parse(file, b->source, strlen(b->source), &r->k, err);
  if (s == LM_OK)
    s = lm_variant_parse(b->variant, &r->v, err);
  if (s == LM_OK)
    s = lm_variant_check(r->k, &r->v, err);
  if (s == LM_OK)
    s = lm_compile(r->k, &r->v, NULL, &r->c, err);
  if (s != LM_OK)
    return s;
  int G = r->v.w / r->v.l;
  /* verification on a small shape of the same kernel and variant */
  lm_shape sh;
  lm_data *vd = NULL;
  lm_oracle *orc = NULL;
  lm_verify_result res;
  lm_rowstats st;
  int64_t vr = b->R < 37 ? b->R : 37;
  if ((s = lm_shape_bind(r->k, vr, b->C, NULL, &sh, err)) == LM_OK &&
      (s = lm_data_gen(r->k, &sh, o->seed, &vd, err)) == LM_OK) {
    set_rowlens(r->k, vd, b, b->C, o->seed, &st, G);
    if ((s = lm_oracle_run(r->k, vd, &orc, err)) == LM_OK)
      s = lm_verify(r->k, r->c, vd, orc, NULL, &res, err);
  }
  lm_oracle_free(orc);
  lm_data_free(vd);
  if (s != LM_OK)
    return s;
  for (int i = 0; i < 2; i++) {
    int64_t R = b->R * (i + 1);
    lm_rowstats rs, *rsp = NULL;
    if ((s = lm_shape_bind(r->k, R, b->C, NULL, &sh, err)) != LM_OK ||
        (s = lm_data_gen(r->k, &sh, o->seed + (uint64_t)i, &r->d[i], err)) != LM_OK)
      return s;
    if (r->k->rowlen_param >= 0 && b->density > 0) {
      set_rowlens(r->k, r->d[i], b, b->C, o->seed + (uint64_t)i, &rs, G);
      rsp = &rs;
    }
    r->args[i] = lm_args_pack(r->k, r->d[i]);
    if ((s = lm_cost_features(r->k, &r->v, &sh, cc, rsp, &r->f[i], err)) != LM_OK)
      return s;
  }
  return LM_OK;
}

static void run_free(Run *r) {
  for (int i = 0; i < 2; i++) {
    free(r->args[i]);
    lm_data_free(r->d[i]);
  }
  lm_compiled_free(r->c);
  lm_kernel_free(r->k);
}

/* The families whose own measures pass a limit of l: the median spread
 * of their entries (both sizes of every benchmark), and, for a family
 * with a variant on more than one worker, the pool's measures, which the
 * harness judged over the whole comparison but only such launches feed.
 * The global measures are the verdict's, named once. */
static lm_status judge_families(const Run *runs, int n,
                                const lm_timing_result *tr,
                                const lm_noise_limits *l, Verdict *v) {
  double *spread = malloc(sizeof *spread * (size_t)(2 * n));
  v->fam = calloc((size_t)n, sizeof *v->fam);
  v->nfam = 0;
  if (!spread || !v->fam) {
    free(spread);
    return LM_ESYS;
  }
  for (int i = 0; i < n; i++) {
    const char *family = runs[i].b->family;
    int seen = 0;
    for (int j = 0; j < i && !seen; j++)
      seen = strcmp(runs[j].b->family, family) == 0;
    if (seen)
      continue;
    int m = 0, parallel = 0;
    for (int j = i; j < n; j++)
      if (strcmp(runs[j].b->family, family) == 0) {
        spread[m++] = tr->stats[2 * j].spread;
        spread[m++] = tr->stats[2 * j + 1].spread;
        parallel |= runs[j].v.workers > 1;
      }
    lm_profile_noisy_family f = {family, 0, lm_timing_median(spread, m)};
    if (f.spread > l->spread_max)
      f.reasons |= LM_NOISE_SPREAD;
    if (parallel)
      f.reasons |= tr->noise.reasons & LM_NOISE_WORKERS;
    if (f.reasons)
      v->fam[v->nfam++] = f;
  }
  free(spread);
  v->noise = tr->noise;
  return LM_OK;
}

/* The fork-join round and the workers' late join (lm_pool_round_ns),
 * measured apart from the fit.  One call takes some 70 ms, and on the
 * project's 2-vCPU VM the hypervisor now and then places the two vCPUs
 * where a cross-core round trip costs a third of its usual time, for
 * 0.1-0.4 s at a time (about 5% of the time; docs/runtime.md, "The round
 * is bimodal").  A single call that fell into such a window priced the
 * fork at 110 ns and the join at 90 ns against 250-550 and 770-1030 ns
 * otherwise, and the plans then put two workers on work of a microsecond.
 * So the round is repeated, ROUND_GAP_MS apart, and the medians of the
 * repeats are kept; a repeat whose own verdict is noisy is left out and
 * replaced, up to twice as many calls in all. */
#define ROUND_REPEATS_QUICK 7
#define ROUND_REPEATS_FULL 11
#define ROUND_GAP_MS 150
/* The participants' skew (lm_pool_skew_probe, as `lanemap evaluate`
 * measures it) is taken beside each repeat of the round, SKEW_LAUNCHES
 * launches.  It is a diagnostic, not a term: the profile records the
 * repeats' median, least and greatest (capped at SKEW_MAX) in
 * diagnostics.extra.forkjoin_round (docs/calibration.md, "Unequal
 * participants", says why the model does not use it). */
#define SKEW_LAUNCHES 40
#define SKEW_MAX 1.0
typedef struct Round {
  double fork, join;       /* medians of the kept repeats, ns (join capped) */
  double fork_lo, fork_hi; /* least and greatest of the kept repeats */
  double join_lo, join_hi;
  int wanted, calls, kept; /* repeats wanted, calls made, quiet ones kept */
  unsigned reasons;        /* interference seen by the left-out calls */
  double spread;           /* (p75 - p25) / p50 of the kept joins */
  double skew, skew_lo, skew_hi; /* median, least, greatest repeat; 0 unmeasured */
  int skews;                     /* repeats that measured it */
} Round;

static lm_status measure_round(const lm_calib_opts *o, int samples,
                               double sample_ms, Round *r, lm_error *err) {
  enum { MAXR = 2 * ROUND_REPEATS_FULL };
  double fk[MAXR], jn[MAXR], nfk[MAXR], njn[MAXR]; /* quiet calls, noisy */
  double sk[MAXR];
  int nnoisy = 0;
  lm_timing_opts jt;
  lm_timing_defaults(&jt);
  jt.samples = samples;
  jt.sample_ms = sample_ms;
  jt.warmup_ms = o->quick ? 20 : 100;
  r->wanted = o->quick ? ROUND_REPEATS_QUICK : ROUND_REPEATS_FULL;
  lm_status s = LM_OK;
  while (s == LM_OK && r->kept < r->wanted && r->calls < 2 * r->wanted) {
    if (r->calls > 0) {
      struct timespec gap = {0, ROUND_GAP_MS * 1000000L};
      nanosleep(&gap, NULL);
    }
    double f, j;
    lm_noise nz;
    s = lm_pool_round_ns(lm_pool_shared(), &jt, &f, &j, &nz, err);
    r->calls++;
    if (s != LM_OK)
      break;
    double x = NAN;
    lm_error ignored = {0}; /* a skew not measured is left out, not an error */
    if (lm_pool_skew_probe(lm_pool_shared(), SKEW_LAUNCHES, &x, &ignored) == LM_OK &&
        r->skews < MAXR)
      sk[r->skews++] = x;
    if (nz.noisy) {
      r->reasons |= nz.reasons & LM_NOISE_INTERFERENCE;
      nfk[nnoisy] = f;
      njn[nnoisy++] = fmin(j, LM_JOIN_MAX_NS);
      continue;
    }
    fk[r->kept] = f;
    jn[r->kept++] = fmin(j, LM_JOIN_MAX_NS);
  }
  if (s != LM_OK)
    return s;
  int m = r->kept;
  if (m == 0) { /* every call was disturbed: their figures, judged noisy */
    memcpy(fk, nfk, sizeof fk), memcpy(jn, njn, sizeof jn);
    m = nnoisy;
  }
  lm_timing_sort(fk, m);
  lm_timing_sort(jn, m);
  r->fork = lm_timing_quantile_sorted(fk, m, 0.5);
  r->join = lm_timing_quantile_sorted(jn, m, 0.5);
  r->fork_lo = fk[0], r->fork_hi = fk[m - 1];
  r->join_lo = jn[0], r->join_hi = jn[m - 1];
  double iqr = lm_timing_quantile_sorted(jn, m, 0.75) - lm_timing_quantile_sorted(jn, m, 0.25);
  r->spread = r->join > 0 ? iqr / r->join : 0;
  if (r->skews > 0) {
    lm_timing_sort(sk, r->skews);
    r->skew = fmin(lm_timing_quantile_sorted(sk, r->skews, 0.5), SKEW_MAX);
    r->skew_lo = fmin(sk[0], SKEW_MAX), r->skew_hi = fmin(sk[r->skews - 1], SKEW_MAX);
  }
  return LM_OK;
}

/* The round belongs to the forkjoin family's terms: fewer quiet repeats
 * than wanted mark that family with the interference the left-out calls
 * saw, which makes the profile noisy.  The repeats' spread is recorded
 * with them (diagnostics.extra.forkjoin_round), not as the family's: its
 * median is what the profile keeps, and a family's spread is its entries'. */
static void judge_round(const Round *r, Verdict *v) {
  if (r->calls == 0 || r->kept >= r->wanted)
    return;
  unsigned why = r->reasons ? r->reasons : LM_NOISE_BUSY;
  for (int i = 0; i < v->nfam; i++)
    if (strcmp(v->fam[i].family, "forkjoin") == 0) {
      v->fam[i].reasons |= why;
      return;
    }
  /* room: fam holds one entry per benchmark, and the forkjoin family's
   * benchmarks are never all of them; its entries' spread passed no limit
   * (else it would be listed), so none is named */
  v->fam[v->nfam++] = (lm_profile_noisy_family){"forkjoin", why, 0};
}

/* Time every (benchmark, size) interleaved, and judge the noise. */
static lm_status measure(Run *runs, int n, const lm_calib_opts *o, int samples,
                         double sample_ms, Verdict *v, lm_error *err) {
  Item *items = calloc((size_t)n * 2, sizeof *items);
  lm_timed *t = calloc((size_t)n * 2, sizeof *t);
  for (int i = 0; i < n; i++)
    for (int s = 0; s < 2; s++) {
      items[2 * i + s] = (Item){&runs[i], s};
      t[2 * i + s] = (lm_timed){runs[i].b->name, timed, &items[2 * i + s]};
    }
  lm_timing_opts to;
  lm_timing_defaults(&to);
  to.samples = samples;
  to.sample_ms = sample_ms;
  to.warmup_ms = o->quick ? 20 : 100;
  to.order = LM_ORDER_PERMUTE;
  to.canary = 1;
  /* the fork-join benchmarks launch on the shared pool (a NULL pool in
   * lm_compiled_launch), whose workers the verdict watches */
  to.pool = lm_pool_shared();
  lm_noise_limits lim;
  lm_noise_limits_defaults(&lim);
  to.limits = &lim;
  lm_timing_result tr = {0};
  free(v->fam);
  v->fam = NULL;
  v->nfam = 0;
  lm_status s = lm_time_compare(&to, 2 * n, t, &tr, err);
  if (s == LM_OK && judge_families(runs, n, &tr, &lim, v) != LM_OK)
    s = lm_error_set(err, LM_ESYS, "calibration: out of memory");
  if (s == LM_OK)
    for (int i = 0; i < 2 * n; i++) {
      Run *r = items[i].r;
      int z = items[i].size;
      /* one worker: the min, least disturbed by other load; more: the
       * median, because the cross-core round trips a parallel launch pays
       * change with where the hypervisor places the vCPUs, and the min
       * keeps the rare cheap placement (docs/calibration.md, "Parallel
       * rows are priced at the median") */
      r->ns[z] = r->v.workers > 1 ? tr.stats[i].p50 : tr.stats[i].min;
      r->minv[z] = tr.stats[i].min;
      r->spread[z] = tr.stats[i].spread;
      r->reps[z] = tr.stats[i].reps;
    }
  lm_timing_result_free(&tr);
  free(items);
  free(t);
  return s;
}

static void progress(const lm_calib_opts *o, int done, int total, const char *what) {
  if (o->progress)
    o->progress(o->progress_ctx, done, total, what);
}

/* A benchmark's design row: its counts, with the work every worker shares
 * out divided by the parallel speed-up of its cut (lm_features.par), as
 * lm_cost_eval combines them.  The fork-join round and DRAM bytes are paid
 * once per launch, not per worker; a one-worker row is its counts. */
static void design_row(const lm_features *f, double *row) {
  double par = f->par > 0 ? f->par : 1;
  for (int t = 0; t < LM_T__COUNT; t++)
    row[t] = t == LM_T_FORK || t == LM_T_B_DRAM ? f->n[t] : f->n[t] / par;
}

/* The fitted (non-mixed) rows: one per benchmark and size, with the
 * relative spread of each row's timing (at least LM_CALIB_SPREAD_FLOOR). */
static int build_design(Run *runs, int n, double **A, double **b,
                        double **spread, int **group) {
  int m = 0;
  *A = calloc((size_t)n * 2 * LM_T__COUNT, sizeof **A);
  *b = calloc((size_t)n * 2, sizeof **b);
  *spread = calloc((size_t)n * 2, sizeof **spread);
  *group = calloc((size_t)n * 2, sizeof **group);
  for (int i = 0; i < n; i++) {
    if (runs[i].b->mixed)
      continue;
    for (int z = 0; z < 2; z++) {
      design_row(&runs[i].f[z], *A + (size_t)m * LM_T__COUNT);
      (*b)[m] = runs[i].ns[z];
      (*spread)[m] = fmax(runs[i].spread[z], LM_CALIB_SPREAD_FLOOR);
      (*group)[m] = i;
      m++;
    }
  }
  return m;
}

/* The weights of the m benchmark rows for a model error s (relative):
 * 1 / ((spread^2 + s^2) t^2), the two errors taken as independent; 0 for
 * a row not kept. */
static void row_weights(int m, const double *b, const double *spread,
                        double s, const char *keep, double *w) {
  s = fmax(s, LM_CALIB_SPREAD_FLOOR);
  for (int i = 0; i < m; i++)
    w[i] = keep[i] ? 1.0 / ((spread[i] * spread[i] + s * s) * b[i] * b[i]) : 0;
}

/* The model error: 1.4826 times the median relative residual
 * |(k_i + A_i θ)/b_i - 1| over the m benchmark rows kept, k_i the share
 * of the row's measured terms (robust, as a few rows the form misses badly must
 * not set it), at least LM_CALIB_SPREAD_FLOOR. */
static double model_error(int m, int nc, const double *A, const double *b,
                          const double *known, const char *keep, const double *theta) {
  double *r = malloc(sizeof *r * (size_t)(m > 0 ? m : 1));
  if (!r)
    return LM_CALIB_SPREAD_FLOOR;
  int k = 0;
  for (int i = 0; i < m; i++) {
    if (!keep[i])
      continue;
    double pred = known[i];
    for (int j = 0; j < nc; j++)
      pred += A[i * nc + j] * theta[j];
    r[k++] = fabs(pred / b[i] - 1);
  }
  double s = 1.4826 * lm_timing_median(r, k);
  free(r);
  return isfinite(s) && s > LM_CALIB_SPREAD_FLOOR ? s : LM_CALIB_SPREAD_FLOOR;
}

/* Fit the terms some benchmark exercises; a term no benchmark counts (e.g.
 * memory bytes in quick mode, whose working sets stay in cache) keeps its
 * named default and is reported as unmeasured.  A term with a finite
 * known[t] was measured apart (the fork-join round): it is not fitted, its
 * share known[t] * count is taken off each row's time, and every resample
 * carries it. */
#define PRIOR_WEIGHT 1.0
#define KNOWN_SHARE_MAX 0.5

/* The share of a design row's time the measured terms (finite known[t])
 * account for. */
static double known_share(const double *known, const double *row) {
  double k = 0;
  for (int t = 0; t < LM_T__COUNT; t++)
    if (isfinite(known[t]))
      k += known[t] * row[t];
  return k;
}

/* Is a row of time ns left out of the fit: the measured terms' share
 * takes more than KNOWN_SHARE_MAX of it, so what is left is smaller than
 * their own error (or below zero: a tiny launch faster than the measured
 * round)? */
static int left_out(double share, double ns) { return share > KNOWN_SHARE_MAX * ns; }

/* The rows the bootstrap keeps in every resample (fixed[0..m+nc)): the
 * prior rows after the m benchmark rows, which are not measurements, and
 * every row of a benchmark that alone measures one of the nc fitted
 * columns of Ac (among the rows kept in the fit).  Resampling such a
 * benchmark away leaves its term to the prior (or to 0 once the prior row
 * goes too), so each provider's math routine, measured by one benchmark,
 * would show a spread from 0 to its value (docs/calibration.md, "Bootstrap
 * strata"). */
static void sole_measures(int m, int nc, const double *Ac, const int *group,
                          const char *keep, unsigned char *fixed) {
  for (int j = 0; j < nc; j++) {
    fixed[m + j] = 1;
    int g = -1, many = 0;
    for (int i = 0; i < m && !many; i++)
      if (keep[i] && Ac[(size_t)i * nc + j] != 0) {
        many = g >= 0 && group[i] != g;
        g = group[i];
      }
    for (int i = 0; g >= 0 && !many && i < m; i++)
      fixed[i] |= group[i] == g;
  }
}

static lm_status fit(Run *runs, int n, const lm_calib_opts *o, int light,
                     lm_fit_result *fr, double *lo, double *hi, const double *known,
                     int *measured, double *model_err, lm_error *err) {
  double *A, *b, *spread;
  int *group;
  int m = build_design(runs, n, &A, &b, &spread, &group);
  int cols[LM_T__COUNT], nc = 0;
  double *kn = calloc((size_t)(m > 0 ? m : 1), sizeof *kn);
  if (!kn) {
    free(A), free(b), free(spread), free(group);
    return lm_error_set(err, LM_ESYS, "fit: out of memory");
  }
  for (int t = 0; t < LM_T__COUNT; t++) {
    measured[t] = 0;
    for (int i = 0; i < m && !measured[t]; i++)
      measured[t] = A[i * LM_T__COUNT + t] != 0;
    if (measured[t] && !isfinite(known[t]))
      cols[nc++] = t;
  }
  /* a row left out keeps its place, with weight 0 */
  char *keep = malloc((size_t)(m > 0 ? m : 1));
  if (!keep) {
    free(kn), free(A), free(b), free(spread), free(group);
    return lm_error_set(err, LM_ESYS, "fit: out of memory");
  }
  for (int i = 0; i < m; i++) {
    kn[i] = known_share(known, A + (size_t)i * LM_T__COUNT);
    keep[i] = !left_out(kn[i], b[i]);
  }
  /* one prior row per fitted term after the benchmark rows: theta/default
   * = 1 with weight PRIOR_WEIGHT, i.e. a factor-2 departure from the
   * named default costs what a one-sigma miss (spread and model error)
   * on one benchmark costs.
   * It decides only what the benchmarks leave open (collinear terms would
   * otherwise fall to 0 or take another term's share); Huber reweighting
   * drops it where the measurements disagree with the default. */
  int mp = m + nc;
  double *Ac = calloc((size_t)mp * (size_t)nc, sizeof *Ac);
  double *bp = malloc(sizeof *bp * (size_t)mp), *wp = malloc(sizeof *wp * (size_t)mp);
  int *gp = malloc(sizeof *gp * (size_t)mp);
  unsigned char *fixed = calloc((size_t)(mp > 0 ? mp : 1), 1);
  if (!Ac || !bp || !wp || !gp || !fixed) {
    free(Ac), free(bp), free(wp), free(gp), free(fixed), free(kn), free(keep);
    free(A), free(b), free(spread), free(group);
    return lm_error_set(err, LM_ESYS, "fit: out of memory");
  }
  double loc[LM_T__COUNT], hic[LM_T__COUNT];
  for (int i = 0; i < m; i++) {
    for (int j = 0; j < nc; j++)
      Ac[i * nc + j] = A[i * LM_T__COUNT + cols[j]];
    bp[i] = keep[i] ? b[i] - kn[i] : b[i], gp[i] = group[i];
  }
  for (int j = 0; j < nc; j++) {
    double d, l, h;
    const char *u;
    lm_term_default(cols[j], &d, &l, &h, &u);
    Ac[(m + j) * nc + j] = 1 / d;
    bp[m + j] = 1, wp[m + j] = PRIOR_WEIGHT, gp[m + j] = n + j;
  }
  for (int j = 0; j < nc; j++)
    loc[j] = lo[cols[j]], hic[j] = hi[cols[j]];
  sole_measures(m, nc, Ac, gp, keep, fixed);
  lm_fit_opts fo;
  lm_fit_defaults(&fo);
  fo.group = gp;
  fo.fixed = fixed;
  fo.lo = loc;
  fo.hi = hic;
  fo.seed = o->seed;
  /* resamples and reweighting rounds within the time budgets (each of the
   * bootstrap and leave-one-out refits repeats the Huber rounds) */
  fo.bootstrap = light ? 0 : o->quick ? 30 : 100;
  fo.huber_max_iter = o->quick ? 20 : 30;
  if (light) /* a cross-validation refit needs the coefficients only */
    fo.loo = 0;
  /* a first fit, weighted by the spreads alone, measures the model error;
   * the fit proper weights every row by its spread and that error */
  lm_fit_opts first = fo;
  first.loo = 0, first.bootstrap = 0;
  lm_fit_result cr = {0};
  row_weights(m, b, spread, 0, keep, wp);
  lm_status s = lm_fit(&first, mp, nc, Ac, bp, wp, &cr, err);
  double merr = s == LM_OK ? model_error(m, nc, Ac, b, kn, keep, cr.theta) : 0;
  lm_fit_result_free(&cr);
  memset(&cr, 0, sizeof cr);
  row_weights(m, b, spread, merr, keep, wp);
  if (s == LM_OK)
    s = lm_fit(&fo, mp, nc, Ac, bp, wp, &cr, err);
  *model_err = merr;
  if (s == LM_OK) {
    /* a row left out of the fit has no leave-one-out error */
    for (int i = 0; cr.loo && i < m; i++)
      if (!keep[i])
        cr.loo[i] = NAN;
    /* expand back to every term */
    *fr = cr;
    fr->n = LM_T__COUNT;
    fr->theta = calloc(LM_T__COUNT, sizeof(double));
    fr->p5 = calloc(LM_T__COUNT, sizeof(double));
    fr->p50 = calloc(LM_T__COUNT, sizeof(double));
    fr->p95 = calloc(LM_T__COUNT, sizeof(double));
    fr->flag = calloc(LM_T__COUNT, sizeof(int));
    fr->boot = calloc((size_t)(cr.nboot > 0 ? cr.nboot : 1) * LM_T__COUNT, sizeof(double));
    for (int t = 0; t < LM_T__COUNT; t++) {
      double c, l, h;
      const char *u;
      lm_term_default(t, &c, &l, &h, &u);
      if (measured[t] && isfinite(known[t]))
        c = known[t];
      fr->theta[t] = fr->p5[t] = fr->p50[t] = fr->p95[t] = c;
      for (int r = 0; r < cr.nboot; r++)
        fr->boot[r * LM_T__COUNT + t] = c;
    }
    for (int j = 0; j < nc; j++) {
      int t = cols[j];
      fr->theta[t] = cr.theta[j], fr->flag[t] = cr.flag ? cr.flag[j] : LM_FIT_PLAUSIBLE;
      /* a light fit has no bootstrap: its percentiles are the value */
      fr->p5[t] = cr.p5 ? cr.p5[j] : cr.theta[j];
      fr->p50[t] = cr.p50 ? cr.p50[j] : cr.theta[j];
      fr->p95[t] = cr.p95 ? cr.p95[j] : cr.theta[j];
      for (int r = 0; r < cr.nboot; r++)
        fr->boot[r * LM_T__COUNT + t] = cr.boot[r * nc + j];
    }
    free(cr.theta), free(cr.p5), free(cr.p50), free(cr.p95), free(cr.flag), free(cr.boot);
  } else {
    lm_fit_result_free(&cr);
  }
  free(Ac), free(bp), free(wp), free(gp), free(fixed), free(kn), free(keep);
  free(A), free(b), free(spread), free(group);
  return s;
}

/* ---- terms on trial ------------------------------------------------------
 * A term added for a known cause of error (masked instructions, register
 * pressure) is kept only if leave-one-family-out cross-validation on the
 * calibration's own rows says it helps: each family's rows are predicted
 * by a fit of the other families, with and without the term, and each
 * family's score is the mean |log(predicted / measured)| of its rows.
 * The term stays when its removal raises the families' scores clearly:
 * the mean over families of the paired rise is at least TRIAL_MARGIN of
 * the score without it and at least TRIAL_SE standard errors of that mean
 * (the families' rises differ; one family's luck is not evidence).  The
 * margin alone decided up to model form 9, and the `spill` trial came out
 * kept in 7 of 12 quick calibrations on one quiet machine and fixed at 0
 * in 5, by gains of 0.2-5% (docs/calibration.md, "Terms on trial").
 * A term that does not help is fixed at 0 (known), so that the model the
 * profile prices with is the one the cross-validation chose.  Terms are
 * tried one after another, each against the model the earlier trials
 * left. */
#define TRIAL_MARGIN 0.01
#define TRIAL_SE 2.0

/* The leave-one-family-out score of the model with `known` fixed terms:
 * score[f] for each family f of fams (up to n; *nf of them, in the
 * order of first appearance in runs, which is the same for every call). */
static lm_status lofo_score(Run *runs, int n, const lm_calib_opts *o, double *lo,
                            double *hi, const double *known, double *score, int *nfam,
                            lm_error *err) {
  Run *sub = malloc(sizeof *sub * (size_t)(n > 0 ? n : 1));
  const char **fams = malloc(sizeof *fams * (size_t)(n > 0 ? n : 1));
  if (!sub || !fams) {
    free(sub), free(fams);
    return lm_error_set(err, LM_ESYS, "calibrate: out of memory");
  }
  int nf = 0;
  for (int i = 0; i < n; i++) {
    int seen = runs[i].b->mixed;
    for (int f = 0; f < nf && !seen; f++)
      seen = strcmp(fams[f], runs[i].b->family) == 0;
    if (!seen)
      fams[nf++] = runs[i].b->family;
  }
  lm_status s = LM_OK;
  for (int f = 0; f < nf && s == LM_OK; f++) {
    int m = 0;
    for (int i = 0; i < n; i++)
      if (strcmp(runs[i].b->family, fams[f]) != 0)
        sub[m++] = runs[i];
    lm_fit_result fr = {0};
    int measured[LM_T__COUNT];
    double merr;
    s = fit(sub, m, o, 1, &fr, lo, hi, known, measured, &merr, err);
    if (s != LM_OK)
      break;
    double e = 0;
    int rows = 0;
    for (int i = 0; i < n; i++) {
      if (runs[i].b->mixed || strcmp(runs[i].b->family, fams[f]) != 0)
        continue;
      for (int z = 0; z < 2; z++) {
        double row[LM_T__COUNT], pred = 0;
        design_row(&runs[i].f[z], row);
        for (int t = 0; t < LM_T__COUNT; t++)
          pred += fr.theta[t] * row[t];
        pred = fmax(pred, 1e-3 * runs[i].ns[z]);
        e += fabs(log(pred / runs[i].ns[z])), rows++;
      }
    }
    lm_fit_result_free(&fr);
    score[f] = rows ? e / rows : NAN; /* a family of only mixed rows: unscored */
  }
  free(sub), free(fams);
  *nfam = nf;
  return s;
}

/* The mean of the finite entries of x[0..n). */
static double finite_mean(const double *x, int n) {
  double t = 0;
  int k = 0;
  for (int i = 0; i < n; i++)
    if (isfinite(x[i]))
      t += x[i], k++;
  return k ? t / k : 0;
}

int lm_term_trial_keeps(const double *with, const double *without, int nfam,
                        double *gain, double *se, int *families) {
  double sum = 0, sq = 0;
  int k = 0;
  for (int f = 0; f < nfam; f++)
    if (isfinite(with[f]) && isfinite(without[f])) {
      double d = without[f] - with[f];
      sum += d, sq += d * d, k++;
    }
  double g = k ? sum / k : 0;
  double var = k > 1 ? (sq - k * g * g) / (k - 1) : 0;
  *gain = g;
  *se = k > 1 ? sqrt(fmax(var, 0) / k) : INFINITY;
  if (families)
    *families = k;
  return k > 1 && g >= TRIAL_MARGIN * finite_mean(without, nfam) && g >= TRIAL_SE * *se;
}

/* Tries every term on trial; *ntrials gets how many were tried. */
static lm_status term_trials(Run *runs, int n, const lm_calib_opts *o, double *lo,
                             double *hi, double *known, Trial *trials, int *ntrials,
                             int *dropped, lm_error *err) {
  *dropped = *ntrials = 0;
  double *base = malloc(sizeof *base * (size_t)(2 * (n > 0 ? n : 1)));
  if (!base)
    return lm_error_set(err, LM_ESYS, "calibrate: out of memory");
  double *without = base + (n > 0 ? n : 1);
  int nf = 0;
  lm_status s = lofo_score(runs, n, o, lo, hi, known, base, &nf, err);
  for (int t = 0; t < LM_T__COUNT && s == LM_OK; t++) {
    if (!lm_term_on_trial(t))
      continue;
    double was = known[t];
    known[t] = 0;
    s = lofo_score(runs, n, o, lo, hi, known, without, &nf, err);
    if (s != LM_OK)
      break;
    double gain, se;
    int k = 0, kept = lm_term_trial_keeps(base, without, nf, &gain, &se, &k);
    Trial *tr = &trials[(*ntrials)++];
    *tr = (Trial){t, finite_mean(base, nf), finite_mean(without, nf), gain, se, k, kept};
    if (tr->kept)
      known[t] = was;
    else
      memcpy(base, without, sizeof *base * (size_t)nf), ++*dropped;
  }
  free(base);
  return s;
}

/* Composition check: predicted (with the fitted coefficients) vs measured
 * on the mixed kernels, and the overlap gamma in t = max + gamma*min. */
static double composition(Run *runs, int n, const double *theta, cJSON *out) {
  double num = 0, den = 0;
  cJSON *rows = cJSON_AddArrayToObject(out, "composition");
  for (int i = 0; i < n; i++) {
    if (!runs[i].b->mixed)
      continue;
    for (int z = 0; z < 2; z++) {
      lm_coefs c = {{0}, 1.0, {0, 0, 0}, 0};
      memcpy(c.theta, theta, sizeof c.theta);
      lm_prediction p;
      lm_cost_eval(&c, &runs[i].f[z], &runs[i].v, &p);
      double hiv = fmax(p.compute_ns, p.memory_ns), lov = fmin(p.compute_ns, p.memory_ns);
      num += (runs[i].ns[z] - p.fork_ns - hiv) * lov;
      den += lov * lov;
      if (z == 0) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "bench", runs[i].b->name);
        cJSON_AddNumberToObject(r, "measured_ns", runs[i].ns[z]);
        cJSON_AddNumberToObject(r, "additive_ns", p.ns);
        cJSON_AddNumberToObject(r, "bottleneck_ns", p.fork_ns + hiv);
        cJSON_AddNumberToObject(r, "compute_ns", p.compute_ns);
        cJSON_AddNumberToObject(r, "memory_ns", p.memory_ns);
        cJSON_AddItemToArray(rows, r);
      }
    }
  }
  double g = den > 0 ? num / den : 1;
  g = g < 0 ? 0 : g > 1 ? 1 : g;
  cJSON_AddNumberToObject(out, "overlap", g);
  return g;
}

static lm_status to_profile(Run *runs, int n, const lm_calib_opts *o,
                            const lm_fit_result *fr, const double *lo,
                            const double *hi, const int *measured,
                            const lm_fingerprint *fp, const Verdict *v,
                            double model_err, const double *known,
                            const Round *R,
                            const Trial *trials, int ntrials, lm_profile **out,
                            lm_error *err) {
  lm_profile *p = lm_profile_new(lm_isa_name(o->isa),
                                 o->quick ? LM_PROFILE_QUICK : LM_PROFILE_FULL, err);
  if (!p)
    return LM_ESYS;
  lm_profile_set_fingerprint(p, fp, err);
  cJSON *extra = cJSON_CreateObject();
  double g = composition(runs, n, fr->theta, extra);
  /* the measured fork-join round (known[LM_T_FORK]; NAN when it was
   * fitted: no pool thread) and late join (fitting either swung from 0 to
   * hundreds of ns between quick calibrations; a fork fitted at 0 made a
   * launch of a few microseconds as cheap on two workers as on one;
   * docs/calibration.md) */
  double J = R->join;
  if (isfinite(known[LM_T_FORK]))
    cJSON_AddNumberToObject(extra, "fork_ns", known[LM_T_FORK]);
  cJSON_AddNumberToObject(extra, "join_ns", J);
  if (R->calls > 0) {
    cJSON *rj = cJSON_AddObjectToObject(extra, "forkjoin_round");
    cJSON_AddNumberToObject(rj, "repeats_wanted", R->wanted);
    cJSON_AddNumberToObject(rj, "calls", R->calls);
    cJSON_AddNumberToObject(rj, "kept", R->kept);
    cJSON_AddNumberToObject(rj, "gap_ms", ROUND_GAP_MS);
    cJSON_AddNumberToObject(rj, "fork_min_ns", R->fork_lo);
    cJSON_AddNumberToObject(rj, "fork_max_ns", R->fork_hi);
    cJSON_AddNumberToObject(rj, "join_min_ns", R->join_lo);
    cJSON_AddNumberToObject(rj, "join_max_ns", R->join_hi);
    cJSON_AddNumberToObject(rj, "join_spread", R->spread);
    cJSON_AddNumberToObject(rj, "skew_repeats", R->skews);
    cJSON_AddNumberToObject(rj, "skew_launches", SKEW_LAUNCHES);
    if (R->skews > 0) {
      cJSON_AddNumberToObject(rj, "skew", R->skew);
      cJSON_AddNumberToObject(rj, "skew_min", R->skew_lo);
      cJSON_AddNumberToObject(rj, "skew_max", R->skew_hi);
    }
  }
  cJSON *tt = cJSON_AddArrayToObject(extra, "term_trials");
  for (int i = 0; i < ntrials; i++) {
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "term", lm_term_name(trials[i].t));
    cJSON_AddNumberToObject(r, "lofo_with", trials[i].with);
    cJSON_AddNumberToObject(r, "lofo_without", trials[i].without);
    cJSON_AddNumberToObject(r, "lofo_gain", trials[i].gain);
    cJSON_AddNumberToObject(r, "lofo_gain_se", trials[i].se);
    cJSON_AddNumberToObject(r, "families", trials[i].families);
    cJSON_AddBoolToObject(r, "kept", trials[i].kept);
    cJSON_AddItemToArray(tt, r);
  }
  for (int t = 0; t < LM_T__COUNT; t++) {
    double c, l, h;
    const char *unit;
    lm_term_default(t, &c, &l, &h, &unit);
    lm_profile_term pt = {lm_term_name(t), unit, fr->theta[t], fr->p5[t], fr->p50[t],
                          fr->p95[t], lo[t], hi[t], fr->flag[t] != LM_FIT_PLAUSIBLE};
    if (t == LM_T_FORK && isfinite(known[t]) && R->calls > 0) {
      /* measured, not fitted: its range is the repeats' */
      pt.p5 = fmin(fmax(R->fork_lo, lo[t]), hi[t]);
      pt.p95 = fmin(fmax(R->fork_hi, lo[t]), hi[t]);
    }
    if (lm_profile_add_term(p, &pt, err) != LM_OK) {
      cJSON_Delete(extra);
      goto error;
    }
  }
  cJSON *um = cJSON_AddArrayToObject(extra, "unmeasured");
  for (int t = 0; t < LM_T__COUNT; t++)
    if (!measured[t])
      cJSON_AddItemToArray(um, cJSON_CreateString(lm_term_name(t)));
  lm_profile_term ov = {"overlap", "1", g, g, g, g, 0, 1, false};
  /* p5 and p95 of the measured join: the least and greatest repeat */
  double jlo = R->calls > 0 ? R->join_lo : J, jhi = R->calls > 0 ? R->join_hi : J;
  lm_profile_term jn = {"join", "ns", J, jlo, J, jhi, 0, LM_JOIN_MAX_NS, false};
  if (lm_profile_add_term(p, &ov, err) != LM_OK ||
      lm_profile_add_term(p, &jn, err) != LM_OK) {
    cJSON_Delete(extra);
    goto error;
  }
  /* every row is a sample with its residual; the rms is over the rows the
   * fit used: not the mixed ones, nor those the measured fork-join round
   * explains to more than KNOWN_SHARE_MAX */
  int row = 0, nfit = 0, left = 0;
  double rms = 0;
  double *resid = calloc((size_t)n * 2, sizeof *resid);
  if (!resid) {
    lm_error_set(err, LM_ESYS, "calibrate: out of memory");
    cJSON_Delete(extra);
    goto error;
  }
  for (int i = 0; i < n; i++)
    for (int z = 0; z < 2; z++) {
      double feats[LM_T__COUNT + 2];
      design_row(&runs[i].f[z], feats);
      int out = !runs[i].b->mixed && left_out(known_share(known, feats), runs[i].ns[z]);
      feats[LM_T__COUNT] = 0;     /* the overlap term counts nothing */
      feats[LM_T__COUNT + 1] = 0; /* nor does the join */
      /* both sizes carry the benchmark's name; reps and features tell them apart */
      lm_profile_sample smp = {runs[i].b->name,          runs[i].b->family, feats,
                               runs[i].ns[z], runs[i].minv[z],   runs[i].spread[z],
                               runs[i].reps[z]};
      lm_profile_add_sample(p, &smp, err);
      double pred = 0;
      for (int t = 0; t < LM_T__COUNT; t++)
        pred += fr->theta[t] * feats[t];
      resid[row] = (pred - runs[i].ns[z]) / runs[i].ns[z];
      left += out;
      if (!runs[i].b->mixed && !out)
        rms += resid[row] * resid[row], nfit++;
      row++;
    }
  lm_profile_set_residuals(p, resid, row, err);
  rms = nfit ? sqrt(rms / nfit) : 0;
  cJSON_AddNumberToObject(extra, "rows_left_out", left);
  free(resid);
  /* leave-one-benchmark-out errors, one per fitted benchmark */
  int frow = 0, nloo = 0;
  double loo2 = 0;
  for (int i = 0; i < n; i++) {
    if (runs[i].b->mixed)
      continue;
    /* a row left out of the fit (NAN) has none */
    double e = NAN;
    for (int z = 0; z < 2 && fr->loo_units > 0; z++)
      if (isfinite(fr->loo[frow + z])) {
        e = isfinite(e) ? fmax(e, fabs(fr->loo[frow + z])) : fabs(fr->loo[frow + z]);
        loo2 += fr->loo[frow + z] * fr->loo[frow + z], nloo++;
      }
    if (isfinite(e))
      lm_profile_add_loo(p, runs[i].b->name, e, err);
    frow += 2;
  }
  /* rms and LOO over the benchmark rows (the prior rows are not measurements) */
  lm_profile_diagnostics dg = {fr->cond, fr->rank, rms};
  lm_profile_set_diagnostics(p, &dg, err);
  cJSON_AddNumberToObject(extra, "loo_rms", nloo ? sqrt(loo2 / nloo) : 0);
  cJSON_AddNumberToObject(extra, "model_error", model_err);
  cJSON_AddNumberToObject(extra, "huber_iterations", fr->huber_iters);
  cJSON_AddNumberToObject(extra, "flagged", fr->nflagged);
  char *ej = cJSON_PrintUnformatted(extra);
  lm_profile_set_extra(p, ej, err);
  free(ej);
  cJSON_Delete(extra);
  /* bootstrap vectors, with the overlap and the measured join appended
   * (the same join for every resample: it is measured, not fitted) */
  if (fr->nboot > 0) {
    int nt = LM_T__COUNT + 2;
    double *bs = calloc((size_t)fr->nboot * (size_t)nt, sizeof *bs);
    for (int r = 0; bs && r < fr->nboot; r++) {
      memcpy(bs + (size_t)r * nt, fr->boot + (size_t)r * LM_T__COUNT,
             sizeof(double) * LM_T__COUNT);
      bs[(size_t)r * nt + LM_T__COUNT] = g;
      bs[(size_t)r * nt + LM_T__COUNT + 1] = J;
    }
    lm_profile_set_bootstrap(p, bs, fr->nboot, err);
    free(bs);
  }
  if (lm_profile_set_noise(p, &v->noise, err) != LM_OK)
    goto error;
  for (int i = 0; i < v->nfam; i++)
    if (lm_profile_add_noisy_family(p, &v->fam[i], err) != LM_OK)
      goto error;
  *out = p;
  return LM_OK;
error:
  lm_profile_free(p);
  return LM_ESYS;
}

lm_status lm_calibrate(const lm_calib_opts *o, lm_profile **out, lm_error *err) {
  *out = NULL;
  if (lm_isa_is_aarch64(o->isa) && !lm_isa_runnable(o->isa))
    return lm_error_set(err, LM_EINPUT,
                        "this machine cannot run %s code, and calibration "
                        "times code where it runs: build lanemap on an "
                        "AArch64 machine and calibrate there (an emulator's "
                        "timings would describe the emulator)",
                        lm_isa_name(o->isa));
  if (!lm_isa_runnable(o->isa))
    return lm_error_set(err, LM_EINPUT, "this machine cannot run %s code",
                        lm_isa_name(o->isa));
  lm_fingerprint fp;
  lm_status s = lm_fingerprint_host(&fp, err);
  if (s != LM_OK)
    return s;
  lm_caches cc;
  lm_caches_from_fingerprint(&fp, &cc);
  lm_calib_bench *benches;
  int n = lm_calib_benches(o->isa, o->quick, &cc, &benches);
  Run *runs = calloc((size_t)n, sizeof *runs);
  int total = n + 3;
  for (int i = 0; i < n && s == LM_OK; i++) {
    runs[i].b = &benches[i];
    s = prepare(&runs[i], o, &cc, err);
    if (s != LM_OK) {
      char msg[sizeof err->msg];
      snprintf(msg, sizeof msg, "%s", err->msg);
      lm_error_set(err, s, "calibration benchmark %s: %s", benches[i].name, msg);
    }
    progress(o, i + 1, total, benches[i].name);
  }
  double lo[LM_T__COUNT], hi[LM_T__COUNT];
  for (int t = 0; t < LM_T__COUNT; t++) {
    double c;
    const char *u;
    lm_term_default(t, &c, &lo[t], &hi[t], &u);
  }
  lm_fit_result fr = {0};
  Verdict verdict = {0};
  int measured[LM_T__COUNT];
  double merr = 0;
  int samples = o->quick ? 5 : 9;
  double sample_ms = o->quick ? 1.5 : 6;
  /* a comparison disturbed by interference is timed again, up to
   * LM_CALIB_REMEASURE more times, keeping the last: a passing hiccup
   * costs a second or two, a busy machine is still flagged */
  for (int a = 0; s == LM_OK && a <= LM_CALIB_REMEASURE; a++) {
    s = measure(runs, n, o, samples, sample_ms, &verdict, err);
    /* interference in the whole comparison or a family's own measures (a
     * spread alone leaves the timing usable) */
    if (s != LM_OK ||
        !lm_noise_families_noisy(&verdict.noise, verdict.fam, verdict.nfam))
      break;
  }
  /* the fork-join round and the workers' late join, on the pool the
   * fork-join benchmarks ran on; without a pool thread no worker ever
   * joins and every launch runs inline, which the join's cap prices as
   * all of the work on the caller, and the fork cost is the fit's */
  double known[LM_T__COUNT];
  for (int t = 0; t < LM_T__COUNT; t++)
    known[t] = NAN;
  Round round = {.fork = NAN, .join = LM_JOIN_MAX_NS};
  if (s == LM_OK && lm_pool_threads(lm_pool_shared()) > 0) {
    s = measure_round(o, samples, sample_ms, &round, err);
    if (s == LM_OK)
      known[LM_T_FORK] = fmin(fmax(round.fork, lo[LM_T_FORK]), hi[LM_T_FORK]);
  }
  progress(o, n + 1, total, "timing");
  if (s == LM_OK)
    s = fit(runs, n, o, 0, &fr, lo, hi, known, measured, &merr, err);
  if (s == LM_OK && fr.nflagged > 0 && !o->quick) {
    /* re-measure once with longer samples before flagging (full mode; the
     * quick mode flags at once, to stay within its time budget) */
    lm_fit_result_free(&fr);
    memset(&fr, 0, sizeof fr);
    s = measure(runs, n, o, samples + 2, sample_ms * 2, &verdict, err);
    if (s == LM_OK)
      s = fit(runs, n, o, 0, &fr, lo, hi, known, measured, &merr, err);
  }
  /* the terms on trial: one that leave-one-family-out cross-validation
   * does not find helpful is fixed at 0, and the fit is redone */
  Trial trials[NTRIAL];
  int dropped = 0, ntrials = 0;
  if (s == LM_OK && !o->keep_terms)
    s = term_trials(runs, n, o, lo, hi, known, trials, &ntrials, &dropped, err);
  if (s == LM_OK && dropped) {
    lm_fit_result_free(&fr);
    memset(&fr, 0, sizeof fr);
    s = fit(runs, n, o, 0, &fr, lo, hi, known, measured, &merr, err);
  }
  progress(o, n + 2, total, "fit");
  /* after the last measure(), which rebuilds the families' verdicts */
  if (s == LM_OK)
    judge_round(&round, &verdict);
  if (s == LM_OK)
    s = to_profile(runs, n, o, &fr, lo, hi, measured, &fp, &verdict, merr,
                   known, &round, trials, ntrials, out, err);
  progress(o, total, total, "profile");
  lm_fit_result_free(&fr);
  free(verdict.fam);
  for (int i = 0; i < n; i++)
    run_free(&runs[i]);
  free(runs);
  lm_calib_benches_free(benches, n);
  return s;
}
