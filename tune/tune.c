/* lm_tune: measured autotuning of a workload (lanemap/tune.h,
 * docs/tune.md).
 *
 * The model ranks every variant of every bucket; the top K and the near
 * ties of the best (the variants the bootstrap cannot tell from it, the
 * rule lm_plan_problem_settle decides by) are compiled, checked against
 * the FP64 oracle at the bucket's shape, and timed side by side.  The
 * solver then decides on measured costs where there are some, and on
 * predictions put on the measured scale elsewhere: each kernel's
 * predictions are multiplied by the median, over its measured cells, of
 * measured / predicted, so that an unmeasured variant is neither favoured
 * nor penalised by the model's overall bias.  A variant that fails to
 * compile or verify is never chosen for its kernel. */
#define _GNU_SOURCE
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lanemap/backend.h"
#include "lanemap/json.h"
#include "lanemap/oracle.h"
#include "lanemap/records.h"
#include "lanemap/timing.h"
#include "lanemap/tune.h"
#include "lanemap/verify.h"

void lm_tune_defaults(lm_tune_opts *o) {
  memset(o, 0, sizeof *o);
  o->measure = LM_TUNE_MEASURE;
  o->alpha = LM_SETTLE_ALPHA;
  lm_timing_defaults(&o->timing);
  o->timing.samples = 5;
  o->timing.sample_ms = 10;
  o->timing.warmup_ms = 20;
  lm_solve_defaults(&o->solve);
}

void lm_tune_result_free(lm_tune_result *r) {
  lm_plan_free(r->plan);
  r->plan = NULL;
}

/* ---- the state of one call -------------------------------------------- */

typedef struct Tune {
  const lm_workload *w;
  const lm_tune_opts *o;
  lm_tune_result *res;
  lm_plan_problem pp;
  char fp[17];        /* this machine's type */
  char node[256];     /* its host name */
  char protocol[128]; /* how a bucket is timed: resumed only if equal */
  char (*hash)[17];   /* [nkernels] lm_kernel_hash, once per kernel */
  double t0;
  /* records of earlier calls: key -> index into med/ver */
  lm_strset *seen;
  double *med; /* ns, NAN for a failed variant */
  int nseen, capseen;
} Tune;

/* One kernel's cells, in solver order: [nb][nv]. */
typedef struct Cells {
  unsigned char *pick;   /* 1: measure (top K or near tie) */
  int *rank;             /* the model's rank in the bucket, 1-based */
  unsigned char *unsure; /* picked as a near tie beyond the top K */
  double *meas;          /* measured ns, NAN: not measured */
  unsigned char *failed; /* [nv] failed compile or verification */
  lm_compiled **c;       /* [nv] compiled once per kernel */
} Cells;

static void cells_free(Cells *c, int nv) {
  for (int v = 0; c->c && v < nv; v++)
    lm_compiled_free(c->c[v]);
  free(c->c);
  free(c->pick);
  free(c->rank);
  free(c->unsure);
  free(c->meas);
  free(c->failed);
  memset(c, 0, sizeof *c);
}

/* The identity of a measurement: kernel hash, shape, extra, variant,
 * ISA, machine type and protocol; malloc'ed. */
static char *cell_key(const char *hash, int64_t R, int64_t C, const char *extra,
                      const char *variant, const char *isa, const char *fp,
                      const char *protocol) {
  char *k = NULL;
  if (asprintf(&k, "%s|%lld|%lld|%s|%s|%s|%s|%s", hash, (long long)R,
               (long long)C, extra ? extra : "", variant, isa, fp ? fp : "",
               protocol) < 0)
    return NULL;
  return k;
}

/* ---- records ----------------------------------------------------------- */

/* Index the earlier measurements of this machine type and protocol. */
static lm_status read_records(Tune *t, lm_error *err) {
  if (!t->o->records || access(t->o->records, F_OK) != 0)
    return LM_OK;
  lm_records rs = {0};
  lm_status st = lm_records_read(t->o->records, &rs, err);
  for (int i = 0; i < rs.n && st == LM_OK; i++) {
    const lm_record *r = &rs.r[i];
    const cJSON *src = lm_json_get(r->extra, "source");
    const cJSON *pr = lm_json_get(r->extra, "protocol");
    if (!cJSON_IsString(src) || strcmp(src->valuestring, "lanemap tune") ||
        !cJSON_IsString(pr) || strcmp(pr->valuestring, t->protocol) ||
        !r->fingerprint || strcmp(r->fingerprint, t->fp) || r->verified < 0)
      continue;
    char *key = cell_key(r->kernel_hash, r->R, r->C, r->extra_syms, r->variant,
                         r->isa, r->fingerprint, t->protocol);
    int64_t prior = -1;
    if (!key || lm_strset_add_str(t->seen, key, t->nseen, &prior) != LM_OK) {
      free(key);
      st = lm_error_set(err, LM_ESYS, "out of memory");
      break;
    }
    free(key);
    if (prior >= 0) { /* a later record of the same cell wins */
      t->med[prior] =
          r->verified == 1 && isfinite(r->median) ? r->median * 1e9 : NAN;
      continue;
    }
    if (t->nseen == t->capseen) {
      int nc = t->capseen ? 2 * t->capseen : 256;
      double *nm = realloc(t->med, sizeof *nm * (size_t)nc);
      if (!nm) {
        st = lm_error_set(err, LM_ESYS, "out of memory");
        break;
      }
      t->med = nm;
      t->capseen = nc;
    }
    t->med[t->nseen++] =
        r->verified == 1 && isfinite(r->median) ? r->median * 1e9 : NAN;
  }
  lm_records_free(&rs);
  return st;
}

/* The earlier measurement of a cell: 1 found (*ns NAN: it failed), 0 not. */
static int find_record(const Tune *t, const char *key, double *ns) {
  int64_t i = lm_strset_get_str(t->seen, key);
  if (i < 0)
    return 0;
  *ns = t->med[i];
  return 1;
}

/* Append the record of one cell: measured samples, or a failure. */
static lm_status append(const Tune *t, int ki, int b, const char *variant,
                        const char *isa, double pred, const lm_timing_stats *s,
                        int nsamples, int rank, int unsure,
                        const lm_noise *noise, lm_error *err) {
  if (!t->o->records)
    return LM_OK;
  const lm_workload_kernel *wk = &t->w->kernels[ki];
  lm_record r;
  lm_record_init(&r);
  lm_status st = LM_OK;
  int ok = (r.kernel = strdup(wk->resolved)) &&
           (r.kernel_hash = strdup(t->hash[ki])) &&
           (r.variant = strdup(variant)) && (r.isa = strdup(isa)) &&
           (r.fingerprint = strdup(t->fp)) &&
           (!wk->extra || (r.extra_syms = strdup(wk->extra)));
  r.R = wk->buckets[b].R;
  r.C = wk->buckets[b].C;
  r.predicted = isfinite(pred) ? pred * 1e-9 : NAN;
  r.verified = s ? 1 : 0;
  if (ok && s)
    st = lm_record_set_samples(&r, s->samples, nsamples, err);
  if (ok && st == LM_OK)
    st = lm_record_stamp(&r, err);
  cJSON *x = ok && st == LM_OK ? (r.extra = cJSON_CreateObject()) : NULL;
  ok = ok && (st != LM_OK ||
              (x && cJSON_AddStringToObject(x, "source", "lanemap tune") &&
               cJSON_AddStringToObject(x, "protocol", t->protocol) &&
               cJSON_AddStringToObject(x, "node", t->node) &&
               cJSON_AddNumberToObject(x, "bucket", b) &&
               cJSON_AddNumberToObject(x, "model_rank", rank) &&
               cJSON_AddBoolToObject(x, "unsure", unsure) &&
               (!noise ||
                cJSON_AddItemToObject(x, "noise", lm_noise_to_json(noise)))));
  if (st == LM_OK && !ok)
    st = lm_error_set(err, LM_ESYS, "out of memory");
  if (st == LM_OK)
    st = lm_records_append(t->o->records, &r, err);
  lm_record_free(&r);
  return st;
}

/* ---- picking ----------------------------------------------------------- */

/* Per solver bucket: the model's top K by point prediction, and every
 * near tie of its best. */
static lm_status pick(Tune *t, int ki, Cells *c, lm_error *err) {
  const lm_plan_pkernel *pk = &t->pp.pk[ki];
  int nb = t->pp.k[ki].nbuckets, nv = pk->nvariants;
  size_t cells = (size_t)nb * (size_t)nv;
  c->pick = calloc(cells + 1, 1);
  c->rank = calloc(cells + 1, sizeof *c->rank);
  c->unsure = calloc(cells + 1, 1);
  c->meas = malloc(sizeof *c->meas * (cells + 1));
  c->failed = calloc((size_t)nv + 1, 1);
  c->c = calloc((size_t)nv + 1, sizeof *c->c);
  int *order = malloc(sizeof *order * ((size_t)nv + 1));
  if (!c->pick || !c->rank || !c->unsure || !c->meas || !c->failed || !c->c ||
      !order) {
    free(order);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  for (size_t i = 0; i < cells; i++)
    c->meas[i] = NAN;
  for (int s = 0; s < nb; s++) {
    const double *point = pk->cost + (size_t)s * nv; /* scenario 0 */
    int n = 0;
    for (int v = 0; v < nv; v++)
      if (isfinite(point[v]))
        order[n++] = v;
    /* rank by prediction, the first enumerated on a tie (insertion: a
     * bucket has a few hundred candidates at most) */
    for (int i = 1; i < n; i++) {
      int x = order[i], j = i;
      for (; j > 0 && point[x] < point[order[j - 1]]; j--)
        order[j] = order[j - 1];
      order[j] = x;
    }
    /* the near ties first: with K = 0 a bucket is measured only when it
     * has more than one (an unsure bucket) */
    int nties = 0;
    for (int r = 0; r < n; r++) {
      size_t i = (size_t)s * nv + (size_t)order[r];
      c->unsure[i] =
          lm_plan_problem_near_tie(&t->pp, ki, s, order[r], t->o->alpha);
      nties += c->unsure[i];
    }
    for (int r = 0; r < n; r++) {
      size_t i = (size_t)s * nv + (size_t)order[r];
      c->rank[i] = r + 1;
      int top = r < t->o->measure;
      int tie = !top && c->unsure[i] && (t->o->measure > 0 || nties > 1);
      c->pick[i] = top || tie;
      c->unsure[i] = tie;
      t->res->candidates += c->pick[i];
      t->res->unsure += tie;
    }
  }
  free(order);
  return LM_OK;
}

/* ---- measuring --------------------------------------------------------- */

static double now_s(void) { return lm_now_ns() / 1e9; }

/* Compile variant v of kernel ki once; 0 when it failed. */
static int compiled(Tune *t, int ki, Cells *c, int v) {
  if (c->c[v] || c->failed[v])
    return !c->failed[v];
  const lm_variant *var = &t->pp.pk[ki].variants[v];
  lm_compile_opts co;
  lm_compile_defaults(&co);
  lm_error e = {0};
  double t0 = now_s();
  if (lm_compile(t->w->kernels[ki].k, var, &co, &c->c[v], &e) != LM_OK) {
    c->failed[v] = 1;
    t->res->failed++;
  }
  t->res->compile_s += now_s() - t0;
  return !c->failed[v];
}

/* Measure the picked variants of solver bucket s (workload bucket b) side
 * by side, after checking each against the oracle at the bucket's shape;
 * append their records. */
static lm_status measure_bucket(Tune *t, int ki, int s, int b, Cells *c,
                                lm_error *err) {
  const lm_plan_pkernel *pk = &t->pp.pk[ki];
  const lm_kernel *k = t->w->kernels[ki].k;
  int nv = pk->nvariants;
  lm_shape shape;
  lm_data *d = NULL;
  lm_oracle *orc = NULL;
  lm_verifier *ver = NULL;
  lm_timing_result tr = {0};
  lm_compiled **cs = calloc((size_t)nv + 1, sizeof *cs);
  int *vof = calloc((size_t)nv + 1, sizeof *vof), n = 0;
  lm_status st =
      cs && vof ? LM_OK : lm_error_set(err, LM_ESYS, "out of memory");
  double t0 = now_s();
  if (st == LM_OK)
    st = lm_workload_shape(t->w, ki, b, &shape, err);
  if (st == LM_OK)
    st = lm_data_gen(k, &shape, 1, &d, err);
  if (st == LM_OK)
    st = lm_oracle_run(k, d, &orc, err);
  if (st == LM_OK) /* one set of guarded buffers for the bucket's picks */
    st = lm_verifier_new(k, d, orc, &ver, err);
  t->res->verify_s += now_s() - t0;
  for (int v = 0; v < nv && st == LM_OK; v++) {
    size_t i = (size_t)s * nv + (size_t)v;
    if (!c->pick[i] || !compiled(t, ki, c, v))
      continue;
    lm_verify_result vr;
    lm_error e = {0};
    double t1 = now_s();
    /* the run writes the verifier's own sentinel-filled outputs */
    int good = lm_verifier_run(ver, c->c[v], NULL, &vr, &e) == LM_OK;
    t->res->verify_s += now_s() - t1;
    if (!good) { /* never chosen for this kernel: a wrong answer somewhere */
      char vb[160];
      c->failed[v] = 1;
      t->res->failed++;
      st = append(t, ki, b, lm_variant_format(&pk->variants[v], vb, sizeof vb),
                  lm_isa_name(pk->variants[v].isa), pk->cost[i], NULL, 0,
                  c->rank[i], c->unsure[i], NULL, err);
      continue;
    }
    cs[n] = c->c[v];
    vof[n++] = v;
  }
  if (st == LM_OK && n > 0) {
    double t1 = now_s();
    st = lm_time_variants(k, cs, n, d, NULL, &t->o->timing, &tr, err);
    t->res->measure_s += now_s() - t1;
  }
  if (st == LM_OK && n > 0) {
    lm_noise_merge(&t->res->noise, &tr.noise);
    t->res->noisy_buckets += tr.noise.noisy != 0;
  }
  for (int j = 0; j < n && st == LM_OK; j++) {
    int v = vof[j];
    size_t i = (size_t)s * nv + (size_t)v;
    char vb[160];
    c->meas[i] = tr.stats[j].p50;
    t->res->measured++;
    st = append(t, ki, b, lm_variant_format(&pk->variants[v], vb, sizeof vb),
                lm_isa_name(pk->variants[v].isa), pk->cost[i], &tr.stats[j],
                tr.nsamples, c->rank[i], c->unsure[i], &tr.noise, err);
  }
  lm_timing_result_free(&tr);
  lm_verifier_free(ver);
  lm_oracle_free(orc);
  lm_data_free(d);
  free(cs);
  free(vof);
  return st;
}

/* Take bucket s from the records when every picked cell of it is there:
 * 1 taken, 0 not (then it is measured whole, in one comparison). */
static int resume_bucket(Tune *t, int ki, int s, int b, Cells *c) {
  const lm_plan_pkernel *pk = &t->pp.pk[ki];
  const lm_workload_kernel *wk = &t->w->kernels[ki];
  int nv = pk->nvariants;
  const char *hash = t->hash[ki];
  double *ns = malloc(sizeof *ns * ((size_t)nv + 1));
  int all = ns != NULL;
  for (int v = 0; v < nv && all; v++) {
    size_t i = (size_t)s * nv + (size_t)v;
    if (!c->pick[i])
      continue;
    char vb[160];
    char *key = cell_key(hash, wk->buckets[b].R, wk->buckets[b].C, wk->extra,
                         lm_variant_format(&pk->variants[v], vb, sizeof vb),
                         lm_isa_name(pk->variants[v].isa), t->fp, t->protocol);
    all = key && find_record(t, key, &ns[v]);
    free(key);
  }
  for (int v = 0; v < nv && all; v++) {
    size_t i = (size_t)s * nv + (size_t)v;
    if (!c->pick[i])
      continue;
    t->res->resumed++;
    if (isnan(ns[v]) && !c->failed[v]) {
      c->failed[v] = 1;
      t->res->failed++;
    }
    c->meas[i] = ns[v];
  }
  free(ns);
  return all;
}

/* ---- costs ------------------------------------------------------------- */

/* Scenario 0 of kernel ki becomes: measured where measured, the
 * prediction times the kernel's median measured / predicted elsewhere,
 * and INFINITY for a variant that failed; one scenario, nothing settled.
 * In a bucket that was measured, an unmeasured variant is never cheaper
 * than the bucket's measured best (LM_TUNE_UNMEASURED_STEP above it): the
 * model ranked it behind what was measured, and a prediction does not
 * overrule a measurement it did not take.  It stays a candidate for the
 * compile budget, at that price. */
static lm_status set_costs(Tune *t, int ki, const Cells *c, lm_error *err) {
  lm_plan_pkernel *pk = &t->pp.pk[ki];
  int nb = t->pp.k[ki].nbuckets, nv = pk->nvariants;
  size_t cells = (size_t)nb * (size_t)nv;
  double *ratio = malloc(sizeof *ratio * (cells + 1));
  if (!ratio)
    return lm_error_set(err, LM_ESYS, "out of memory");
  size_t nr = 0;
  for (size_t i = 0; i < cells; i++)
    if (isfinite(c->meas[i]) && isfinite(pk->cost[i]) && pk->cost[i] > 0)
      ratio[nr++] = c->meas[i] / pk->cost[i];
  double scale = 1;
  if (nr > 0) {
    lm_timing_sort(ratio, (int)nr);
    scale = lm_timing_quantile_sorted(ratio, (int)nr, 0.5);
  }
  free(ratio);
  for (int s = 0; s < nb; s++) {
    double best = INFINITY; /* the bucket's measured best */
    for (int v = 0; v < nv; v++)
      if (!c->failed[v])
        best = fmin(best, c->meas[(size_t)s * nv + (size_t)v]);
    for (int v = 0; v < nv; v++) {
      size_t i = (size_t)s * nv + (size_t)v;
      if (c->failed[v])
        pk->cost[i] = INFINITY;
      else if (isfinite(c->meas[i]))
        pk->cost[i] = c->meas[i];
      else /* INFINITY stays */
        pk->cost[i] =
            fmax(pk->cost[i] * scale,
                 isfinite(best) ? best * (1 + LM_TUNE_UNMEASURED_STEP) : 0);
    }
  }
  return LM_OK;
}

/* ---- the pipeline ------------------------------------------------------ */

static lm_status check_opts(const lm_tune_opts *o, lm_error *err) {
  if (o->measure < 0)
    return lm_error_set(err, LM_EINPUT, "tune: measure must be >= 0, not %d",
                        o->measure);
  if (!(o->alpha > 0 && o->alpha <= 1))
    return lm_error_set(err, LM_EINPUT, "tune: alpha must be in (0, 1], not %g",
                        o->alpha);
  if (isnan(o->time_budget_s))
    return lm_error_set(err, LM_EINPUT, "tune: time budget is not a number");
  return lm_timing_opts_check(&o->timing, err);
}

/* Every bucket of kernel ki: resumed, measured, or skipped once the time
 * budget is spent. */
static lm_status tune_kernel(Tune *t, int ki, Cells *c, int *done, int total,
                             lm_error *err) {
  const lm_workload_kernel *wk = &t->w->kernels[ki];
  lm_status st = pick(t, ki, c, err);
  for (int s = 0; s < t->pp.k[ki].nbuckets && st == LM_OK; s++) {
    int b = t->pp.pk[ki].order[s];
    char what[160];
    snprintf(what, sizeof what, "%s %lldx%lld", wk->k ? wk->k->name : wk->path,
             (long long)wk->buckets[b].R, (long long)wk->buckets[b].C);
    int any = 0;
    for (int v = 0; v < t->pp.pk[ki].nvariants && !any; v++)
      any = c->pick[(size_t)s * t->pp.pk[ki].nvariants + (size_t)v];
    if (!any) /* K = 0 and a sure bucket: the model decides it */
      t->res->sure_buckets++;
    else if (resume_bucket(t, ki, s, b, c))
      t->res->resumed_buckets++;
    else if (t->o->time_budget_s > 0 && now_s() - t->t0 >= t->o->time_budget_s)
      t->res->skipped_buckets++;
    else if ((st = measure_bucket(t, ki, s, b, c, err)) == LM_OK)
      t->res->measured_buckets++;
    if (t->o->progress)
      t->o->progress(t->o->ctx, ++*done, total, what);
  }
  if (st == LM_OK)
    st = set_costs(t, ki, c, err);
  return st;
}

lm_status lm_tune(const lm_workload *w, const lm_profile *const *profiles,
                  const lm_tune_opts *o, lm_tune_result *out, lm_error *err) {
  memset(out, 0, sizeof *out);
  Tune t = {.w = w, .o = o, .res = out, .t0 = now_s()};
  lm_noise_clear(&out->noise);
  lm_fingerprint host;
  lm_status st = check_opts(o, err);
  for (int i = 0; st == LM_OK && i < w->nisa; i++)
    if (!lm_isa_runnable(w->isa[i]))
      st = lm_error_set(err, LM_EINPUT,
                        "tune measures on this machine, which cannot run %s "
                        "code: plan it with lanemap solve, on predictions",
                        lm_isa_name(w->isa[i]));
  if (st == LM_OK)
    st = lm_fingerprint_host(&host, err);
  if (st != LM_OK)
    return st;
  snprintf(t.fp, sizeof t.fp, "%s", host.hash);
  if (gethostname(t.node, sizeof t.node - 1) != 0)
    snprintf(t.node, sizeof t.node, "?");
  snprintf(t.protocol, sizeof t.protocol,
           "samples=%d sample_ms=%g warmup_ms=%g seed=1", o->timing.samples,
           o->timing.sample_ms, o->timing.warmup_ms);
  if (!(t.seen = lm_strset_new()))
    return lm_error_set(err, LM_ESYS, "out of memory");
  lm_plan_build_opts bo = {.robust = 0, .settle = 1};
  double t0 = now_s();
  st = lm_plan_problem_build(w, profiles, &bo, &t.pp, err); /* predict */
  out->predict_s = now_s() - t0;
  if (st == LM_OK)
    st = read_records(&t, err); /* resume */
  int nk = st == LM_OK ? t.pp.p.nkernels : 0, done = 0;
  if (nk > 0 && !(t.hash = malloc(sizeof *t.hash * (size_t)nk)))
    st = lm_error_set(err, LM_ESYS, "out of memory"), nk = 0;
  for (int ki = 0; ki < nk; ki++)
    lm_kernel_hash(w->kernels[ki].k, t.hash[ki]);
  for (int ki = 0; ki < nk; ki++)
    out->buckets += t.pp.k[ki].nbuckets;
  for (int ki = 0; ki < nk && st == LM_OK; ki++) { /* pick, measure */
    Cells c = {0};
    st = tune_kernel(&t, ki, &c, &done, out->buckets, err);
    cells_free(&c, t.pp.pk[ki].nvariants);
  }
  if (o->progress && st == LM_OK)
    o->progress(o->ctx, out->buckets, out->buckets, NULL);
  /* the solver decides on measured costs: one scenario, nothing settled */
  t.pp.p.nscenarios = 1;
  t.pp.settle = 0;
  lm_solve_result sr = {0};
  int have = 0;
  t0 = now_s();
  if (st == LM_OK && (st = lm_solve(&t.pp.p, &o->solve, &sr, err)) == LM_OK)
    have = 1;
  if (st == LM_OK)
    st = lm_plan_from_result(w, profiles, &t.pp, &o->solve, &sr, &out->plan,
                             err);
  out->solve_s = now_s() - t0;
  if (have)
    lm_solve_result_free(&sr);
  lm_plan_problem_free(&t.pp);
  lm_strset_free(t.seen);
  free(t.med);
  free(t.hash);
  out->total_s = now_s() - t.t0;
  if (st != LM_OK)
    lm_tune_result_free(out);
  return st;
}
