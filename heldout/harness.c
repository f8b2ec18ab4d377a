/* The held-out harness: every legal variant of a case is predicted by every
 * model, verified against the FP64 oracle, and measured interleaved; then
 * each policy picks a variant and its regret is what it lost against the
 * measured best.
 *
 * The policies see only what they are entitled to.  The model-based ones
 * (plan, cross-ISA, default profile) see their predictions and go through
 * the solver as a workload of the cases' shapes, with no cap and no budget
 * (heldout/plans.c), so their pick is the plan's and not a private
 * argmin.  The fixed ones read variant fields only:
 * always-program takes the reference report's program mapping, always-packet
 * the packet-local one, and the Inductor-like heuristic vectorises along the
 * row, re-reads instead of snapshotting, and splits rows over the workers
 * when there are enough elements.  The roofline model keeps only bytes by
 * level and arithmetic, with the calibrated per-byte and per-op costs, and
 * drops every overhead term (masks, gathers, shuffles, steps, tasks, fork).
 * Nothing here reads a kernel's or an operator's name. */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lanemap/backend.h"
#include "lanemap/costmodel.h"
#include "lanemap/dispatch.h"
#include "lanemap/heldout.h"
#include "lanemap/ir.h"
#include "lanemap/oracle.h"
#include "lanemap/profile.h"
#include "lanemap/solver.h"
#include "lanemap/verify.h"

struct lm_eval_kernel {
  char *path;
  lm_kernel *k;
  char hash[17];
  lm_variant *v; /* [nv] legal variants, in enumeration order */
  int nv;
  lm_compiled **c; /* [nv] once compiled; same-code variants rebound */
};

void lm_eval_defaults(lm_eval_opts *o) {
  memset(o, 0, sizeof *o);
  o->isa = LM_ISA_HOST;
  /* 1, 2, 4, ... up to the cores here, and always 2: a parallel variant
   * is a candidate even on one core, where the oracle shows what it costs */
  if (lm_worker_ladder(o->workers, 8) < 2) {
    o->workers[1] = 2;
    o->workers[2] = 0;
  }
  lm_timing_defaults(&o->timing);
  o->timing.samples = LM_EVALUATE_QUICK_SAMPLES;
  o->timing.sample_ms = LM_EVALUATE_QUICK_SAMPLE_MS;
  o->timing.warmup_ms = LM_EVALUATE_QUICK_WARMUP_MS;
  o->seed = 1;
  /* ATen's at::internal::GRAIN_SIZE: the elements below which PyTorch's
   * CPU kernels stay on one thread. */
  o->inductor_parallel_elems = 32768;
}

lm_status lm_eval_run_init(lm_eval_run *run, lm_isa isa, lm_error *err) {
  memset(run, 0, sizeof *run);
  run->nterms = LM_T__COUNT;
  run->term_names = calloc(LM_T__COUNT, sizeof *run->term_names);
  run->isa = strdup(lm_isa_name(isa));
  if (!run->term_names || !run->isa)
    return lm_error_set(err, LM_ESYS, "out of memory");
  for (int t = 0; t < LM_T__COUNT; t++)
    if (!(run->term_names[t] = strdup(lm_term_name((lm_term)t))))
      return lm_error_set(err, LM_ESYS, "out of memory");
  return LM_OK;
}

/* ---- kernels ------------------------------------------------------------- */

lm_status lm_eval_kernel_new(const lm_eval_opts *o, const char *path,
                             lm_eval_kernel **out, lm_error *err) {
  *out = NULL;
  lm_eval_kernel *ek = calloc(1, sizeof *ek);
  if (!ek || !(ek->path = strdup(path))) {
    free(ek);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  lm_status st = lm_kernel_load(path, &ek->k, err);
  if (st != LM_OK)
    goto error;
  lm_kernel_hash(ek->k, ek->hash);
  lm_enum_opts eo;
  lm_enum_defaults(&eo);
  eo.isa = o->isa;
  eo.fps = 1u << o->fp;
  memcpy(eo.workers, o->workers, sizeof eo.workers);
  ek->nv = lm_variant_enumerate(ek->k, &eo, &ek->v, err);
  if (ek->nv < 0) {
    st = LM_EINPUT;
    goto error;
  }
  if (ek->nv == 0) {
    st = lm_error_set(err, LM_EINPUT, "%s: no legal variant for %s", path,
                      lm_isa_name(o->isa));
    goto error;
  }
  *out = ek;
  return LM_OK;
error:
  lm_eval_kernel_free(ek);
  return st;
}

/* Compile jobs: the variants that need code of their own, shared out to
 * threads (lm_compile is thread-safe), one index at a time. */
typedef struct CompileJobs {
  lm_eval_kernel *ek;
  int *todo; /* variant indices */
  int n;
  atomic_int next;
  atomic_int failed;
  lm_error err; /* the first failure */
  pthread_mutex_t lock;
} CompileJobs;

static void *compile_worker(void *arg) {
  CompileJobs *j = arg;
  for (int t; !atomic_load(&j->failed) &&
              (t = atomic_fetch_add(&j->next, 1)) < j->n;) {
    int i = j->todo[t];
    lm_error e = {0};
    if (lm_compile(j->ek->k, &j->ek->v[i], NULL, &j->ek->c[i], &e) != LM_OK) {
      pthread_mutex_lock(&j->lock);
      if (!atomic_exchange(&j->failed, 1))
        j->err = e;
      pthread_mutex_unlock(&j->lock);
    }
  }
  return NULL;
}

lm_status lm_eval_kernel_compile(lm_eval_kernel *ek, double *ms,
                                 lm_error *err) {
  double t0 = lm_now_ns();
  if (!ek->c && !(ek->c = calloc((size_t)ek->nv, sizeof *ek->c)))
    return lm_error_set(err, LM_ESYS, "out of memory");
  int *owner = malloc(sizeof *owner * (size_t)ek->nv);
  CompileJobs j = {.ek = ek, .todo = malloc(sizeof(int) * (size_t)ek->nv)};
  if (!owner || !j.todo) {
    free(owner);
    free(j.todo);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  for (int i = 0; i < ek->nv; i++) {
    owner[i] = i;
    for (int o = 0; o < i && owner[i] == i; o++)
      if (owner[o] == o && lm_variant_same_code(&ek->v[o], &ek->v[i]))
        owner[i] = o;
    if (owner[i] == i && !ek->c[i])
      j.todo[j.n++] = i;
  }
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int nt = cpus < 1 ? 1 : cpus > 4 ? 4 : (int)cpus;
  if (nt > j.n)
    nt = j.n;
  pthread_t th[4];
  int started = 0;
  pthread_mutex_init(&j.lock, NULL);
  for (int t = 1; t < nt; t++)
    started += pthread_create(&th[started], NULL, compile_worker, &j) == 0;
  compile_worker(&j);
  for (int t = 0; t < started; t++)
    pthread_join(th[t], NULL);
  pthread_mutex_destroy(&j.lock);
  lm_status st = LM_OK;
  if (atomic_load(&j.failed)) {
    if (err)
      *err = j.err;
    st = j.err.status ? j.err.status : LM_EFAIL;
  }
  for (int i = 0; i < ek->nv && st == LM_OK; i++)
    if (owner[i] != i && !ek->c[i])
      st = lm_compiled_rebind(ek->c[owner[i]], &ek->v[i], &ek->c[i], err);
  free(owner);
  free(j.todo);
  if (ms)
    *ms = (lm_now_ns() - t0) / 1e6;
  return st;
}

int lm_eval_kernel_variants(const lm_eval_kernel *ek) { return ek->nv; }
const char *lm_eval_kernel_hash(const lm_eval_kernel *ek) { return ek->hash; }

void lm_eval_kernel_free(lm_eval_kernel *ek) {
  if (!ek)
    return;
  if (ek->c) {
    /* rebound handles borrow their owner's code: free them first */
    for (int pass = 0; pass < 2; pass++)
      for (int i = 0; i < ek->nv; i++)
        if (ek->c[i] && (lm_compiled_ms(ek->c[i]) > 0) == (pass == 1)) {
          lm_compiled_free(ek->c[i]);
          ek->c[i] = NULL;
        }
    free(ek->c);
  }
  free(ek->v);
  lm_kernel_free(ek->k);
  free(ek->path);
  free(ek);
}

/* ---- predictions ------------------------------------------------------ */

/* The roofline-only model: bytes by level and arithmetic, each at its
 * calibrated cost, split over the workers like the full model, and nothing
 * else. */
static double roofline_ns(const lm_coefs *c, const lm_features *f,
                          const lm_variant *v) {
  (void)v; /* the split's busiest share is in the features */
  double par = f->par >= 1 ? f->par : 1;
  double mem = 0, comp = c->theta[LM_T_VOP] * f->n[LM_T_VOP] +
                c->theta[LM_T_VDIV] * f->n[LM_T_VDIV];
  for (int t = LM_T_FIRST_MATH; t <= LM_T_LAST_WMATH; t++) /* both widths */
    comp += c->theta[t] * f->n[t];
  for (int t = LM_T_FIRST_MEM; t < LM_T__COUNT; t++)
    mem += c->theta[t] * f->n[t] / (t == LM_T_B_DRAM ? 1 : par);
  comp /= par;
  return comp > mem ? comp : mem;
}

static char *dup_or_null(const char *s) { return s ? strdup(s) : NULL; }

/* Row-length statistics of the data the case will be measured on, for
 * kernels with per-row lengths: the mean length, and the mean over groups
 * of G consecutive rows of their longest, for every G (what a packet of G
 * program-mapped rows runs).  0 if the kernel has full rows. */
static lm_status case_rows(const lm_eval_opts *o, const lm_kernel *k,
                           const lm_shape *sh, lm_rowstats *rs, int *have,
                           lm_error *err) {
  *have = 0;
  if (k->rowlen_param < 0)
    return LM_OK;
  lm_data *d = NULL;
  lm_status st = lm_data_gen(k, sh, o->seed, &d, err);
  if (st != LM_OK)
    return st;
  const int32_t *len = d->buf[k->rowlen_param];
  int64_t R = sh->dims[0];
  memset(rs, 0, sizeof *rs);
  for (int lg = 0; lg < 7; lg++) {
    int64_t G = (int64_t)1 << lg;
    double sum = 0;
    for (int64_t p = 0; p < R; p += G) {
      int32_t mx = 0;
      for (int64_t r = p; r < p + G && r < R; r++)
        mx = len[r] > mx ? len[r] : mx;
      sum += mx;
    }
    rs->mean_group_max[lg] = sum / (double)((R + G - 1) / G);
  }
  rs->mean_len = rs->mean_group_max[0];
  lm_data_free(d);
  *have = 1;
  return LM_OK;
}

/* What profile p predicts for v on the case. */
static lm_status predict_one(const lm_profile *p, const lm_kernel *k,
                             const lm_variant *v, const lm_shape *sh,
                             const lm_rowstats *rows, lm_prediction *out,
                             lm_error *err) {
  if (!rows)
    return lm_cost_predict(p, k, v, sh, out, err);
  lm_coefs c;
  lm_features f;
  lm_status st = lm_coefs_from_profile(p, &c, err);
  if (st == LM_OK)
    st = lm_cost_features(k, v, sh, &c.caches, rows, &f, err);
  if (st == LM_OK)
    lm_cost_eval(&c, &f, v, out);
  return st;
}

/* Mark the variants the case list names in "time" (those of the evaluated
 * ISA target; a name of another target is for its run).  A name of this
 * target that is not one of the case's variants is bad input. */
static lm_status mark_listed(const lm_eval_opts *o, const lm_case *c,
                             lm_eval_case *out, lm_error *err) {
  for (int j = 0; j < c->ntime; j++) {
    lm_variant v;
    char name[128];
    lm_status st = lm_variant_parse(c->time[j], &v, err);
    if (st != LM_OK)
      return st;
    if (v.isa != o->isa)
      continue;
    lm_variant_format(&v, name, sizeof name);
    int found = 0;
    for (int i = 0; i < out->nvariants; i++)
      if (strcmp(out->v[i].variant, name) == 0)
        out->v[i].listed = found = 1;
    if (!found)
      return lm_error_set(err, LM_EINPUT,
                          "case %s: time[%d]: %s is not a variant of %s "
                          "here",
                          c->id, j, name, c->kernel);
  }
  return LM_OK;
}

lm_status lm_eval_case_predict(const lm_eval_opts *o, const lm_eval_kernel *ek,
                               const lm_case *c, const lm_eval_run *run,
                               lm_eval_case *out, lm_error *err) {
  memset(out, 0, sizeof *out);
  lm_shape sh;
  lm_status st = lm_shape_bind(ek->k, c->R, c->C, c->extra, &sh, err);
  if (st != LM_OK)
    return st;
  lm_coefs cal;
  lm_rowstats rs;
  int ragged = 0;
  if ((st = lm_coefs_from_profile(o->profile, &cal, err)) != LM_OK ||
      (st = case_rows(o, ek->k, &sh, &rs, &ragged, err)) != LM_OK)
    return st;
  const lm_rowstats *rows = ragged ? &rs : NULL;
  out->id = strdup(c->id);
  out->split = dup_or_null(c->split);
  out->kernel = strdup(c->kernel);
  out->kernel_hash = strdup(ek->hash);
  out->extra = dup_or_null(c->extra);
  out->isa = strdup(lm_isa_name(o->isa));
  out->R = c->R;
  out->C = c->C;
  out->nvariants = ek->nv;
  char proto[256];
  int n = snprintf(proto, sizeof proto,
                   "seed=%llu samples=%d sample_ms=%g warmup_ms=%g workers=",
                   (unsigned long long)o->seed, o->timing.samples,
                   o->timing.sample_ms, o->timing.warmup_ms);
  for (int w = 0; w < 8 && o->workers[w] > 0 && n < (int)sizeof proto - 8; w++)
    n += snprintf(proto + n, sizeof proto - (size_t)n, "%s%d", w ? "," : "",
                  o->workers[w]);
  /* the split pruning decides which variants have times: a run of the
   * other rule is not resumed */
  if (o->all_splits && n < (int)sizeof proto - 16)
    snprintf(proto + n, sizeof proto - (size_t)n, " splits=all");
  else if (n < (int)sizeof proto - 16)
    snprintf(proto + n, sizeof proto - (size_t)n, " splits=top%d",
             LM_EVALUATE_SPLIT_TOP);
  /* a relaxed run has other variants: it is not resumed by a strict one
   * (whose protocol string is as before) */
  n = (int)strlen(proto);
  if (o->fp != LM_FP_STRICT && n < (int)sizeof proto - 16)
    snprintf(proto + n, sizeof proto - (size_t)n, " fp=%s", lm_fp_name(o->fp));
  out->protocol = strdup(proto);
  out->v = calloc((size_t)ek->nv, sizeof *out->v);
  if (!out->id || !out->kernel || !out->kernel_hash || !out->isa || !out->v ||
      !out->protocol || (c->split && !out->split) || (c->extra && !out->extra))
    return lm_error_set(err, LM_ESYS, "out of memory");
  /* the learned correction's rows, predicted in one call */
  double *lx = NULL, *delta = NULL;
  size_t nv = (size_t)(ek->nv ? ek->nv : 1);
  if (o->learned && (!(lx = malloc(sizeof *lx * nv * LM_LEARNED_NFEAT)) ||
                     !(delta = malloc(sizeof *delta * nv)))) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto done;
  }
  for (int i = 0; i < ek->nv; i++) {
    lm_eval_variant *ev = &out->v[i];
    const lm_variant *v = &ek->v[i];
    char name[128];
    lm_variant_format(v, name, sizeof name);
    ev->variant = strdup(name);
    ev->terms = calloc((size_t)run->nterms, sizeof *ev->terms);
    if (!ev->variant || !ev->terms) {
      st = lm_error_set(err, LM_ESYS, "out of memory");
      goto done;
    }
    ev->verified = -1;
    ev->measured = ev->spread = ev->confirmed = ev->pred_learned = NAN;
    lm_prediction p;
    if ((st = predict_one(o->profile, ek->k, v, &sh, rows, &p, err)) != LM_OK)
      goto done;
    ev->predicted = p.ns;
    if (lx)
      lm_learned_row(ek->k, v, &sh, &p, lx + (size_t)i * LM_LEARNED_NFEAT);
    for (int t = 0; t < run->nterms && t < LM_T__COUNT; t++)
      ev->terms[t] = p.term_ns[t];
    ev->pred_roofline = roofline_ns(&cal, &p.f, v);
    if ((st = predict_one(o->defaults, ek->k, v, &sh, rows, &p, err)) != LM_OK)
      goto done;
    ev->pred_default = p.ns;
    ev->pred_cross = NAN;
    if (o->cross) {
      if ((st = predict_one(o->cross, ek->k, v, &sh, rows, &p, err)) != LM_OK)
        goto done;
      ev->pred_cross = p.ns;
    }
  }
  if ((st = mark_listed(o, c, out, err)) != LM_OK)
    goto done;
  if (lx) { /* corrected = analytic * exp(delta), lm_learned_apply */
    if ((st = lm_learned_check_features(o->learned, LM_LEARNED_NFEAT,
                                        lm_learned_row_names(), err)) !=
            LM_OK ||
        (st = lm_learned_predict(o->learned, lx, ek->nv, delta, err)) != LM_OK)
      goto done;
    for (int i = 0; i < ek->nv; i++)
      out->v[i].pred_learned = lm_learned_apply(out->v[i].predicted, delta[i]);
  }
  for (int p = 0; p < LM_POLICY__COUNT; p++) {
    out->choice[p] = -1;
    out->t_policy[p] = NAN;
  }
  out->best = -1;
  out->t_best = out->tau = NAN;
  out->t_dispatch = out->dispatch_ratio = out->t_screen = NAN;
  lm_noise_clear(&out->noise);
done:
  free(lx);
  free(delta);
  return st;
}

/* ---- the oracle measurement ------------------------------------------ */

/* One timed entry: a compiled variant launched directly, or (c NULL) the
 * plan's pick launched by shape through the dispatch. */
typedef struct Launch {
  const lm_compiled *c;
  const lm_eval_launch *plan;
  lm_pool *pool;
  const uint64_t *args;
  int64_t R, C;
} Launch;

static void run_launch(void *ctx, int64_t reps) {
  const Launch *l = ctx;
  for (int64_t i = 0; i < reps; i++)
    if (l->c)
      lm_compiled_launch(l->c, l->pool, l->args, l->R, NULL);
    else
      lm_dispatch_launch(l->plan->dispatch, l->plan->kernel, l->R, l->C,
                         l->args, NULL, NULL);
}

/* Check that the dispatch runs the plan's pick of c at c's shape, and
 * verify what it runs; *ok 0 if that fails the oracle check. */
static lm_status check_dispatch(const lm_eval_opts *o,
                                const lm_eval_launch *plan,
                                const lm_eval_case *c, lm_data *d,
                                const lm_oracle *orc, int *ok, lm_error *err) {
  lm_dispatch_info info;
  lm_status st =
      lm_dispatch_lookup(plan->dispatch, plan->kernel, c->R, c->C, &info, err);
  if (st != LM_OK)
    return st;
  int pick = c->choice[LM_POLICY_PLAN];
  if (pick < 0 || strcmp(info.variant_name, c->v[pick].variant) != 0)
    return lm_error_set(
        err, LM_EFAIL, "%s: the plan's dispatch runs %s, the plan chose %s",
        c->id, info.variant_name, pick < 0 ? "nothing" : c->v[pick].variant);
  lm_verify_result vr;
  lm_error verr = {0};
  *ok = lm_verify(
            lm_dispatch_kernel(plan->dispatch, plan->kernel),
            lm_dispatch_compiled(plan->dispatch, plan->kernel, info.variant), d,
            orc, o->pool, &vr, &verr) == LM_OK;
  return LM_OK;
}

/* Parallel variants measured with fewer free CPUs than workers: their time
 * is the machine's load, not the variant's.  Judged on each comparison's
 * own verdict (a merged one sums wall times and keeps the worst reading,
 * which would judge a short comparison's coarse reading as a long one's). */
static void mark_contended(const lm_eval_kernel *ek, const lm_noise *noise,
                           lm_eval_case *c) {
  for (int i = 0; i < c->nvariants; i++)
    c->v[i].contended |= lm_noise_contended(noise, ek->v[i].workers);
}

/* The screening round: every verified variant (items[0..nok), variant
 * idx[j]) and, with dispatched, the plan's pick through the dispatch
 * (items[nok]), interleaved.  *noise gets the verdict. */
static lm_status screen(const lm_eval_opts *o, const lm_timed *items, int nok,
                        const int *idx, int dispatched, lm_eval_case *c,
                        lm_noise *noise, lm_error *err) {
  lm_timing_result tr = {0};
  int n = nok + dispatched;
  lm_status st = lm_time_compare(&o->timing, n, items, &tr, err);
  for (int j = 0; j < nok && st == LM_OK; j++) {
    const lm_timing_stats *s = &tr.stats[j];
    lm_eval_variant *ev = &c->v[idx[j]];
    ev->measured = s->p50;
    ev->spread = s->spread;
    free(ev->times);
    ev->times = malloc(sizeof *ev->times * (size_t)tr.nsamples);
    ev->ntimes = ev->times ? tr.nsamples : 0;
    if (ev->times)
      memcpy(ev->times, s->samples, sizeof *ev->times * (size_t)tr.nsamples);
  }
  if (st == LM_OK && dispatched) {
    int pick = -1; /* the pick's entry, if it was verified */
    for (int j = 0; j < nok; j++)
      if (idx[j] == c->choice[LM_POLICY_PLAN])
        pick = j;
    c->t_dispatch = tr.stats[nok].p50;
    c->dispatch_ratio = pick >= 0 ? tr.ratio[nok * n + pick] : NAN;
  }
  *noise = tr.noise;
  lm_timing_result_free(&tr);
  return st;
}

void lm_eval_split_first(const lm_eval_case *c, const lm_variant *vs,
                         int all_splits, unsigned char *in) {
  int n = c->nvariants, budget = lm_autotune_budget[LM_AUTOTUNE_BUDGETS - 1];
  for (int i = 0; i < n; i++) {
    /* the model's rank among the variants that passed the oracle check
     * (or are still to be checked): those predicted faster, ties by index */
    int rank = 0;
    for (int j = 0; j < n && rank < budget; j++)
      rank += c->v[j].verified != 0 &&
              (c->v[j].predicted < c->v[i].predicted ||
               (c->v[j].predicted == c->v[i].predicted && j < i));
    in[i] = all_splits || c->v[i].near_tie || c->v[i].listed ||
            rank < budget ||
            ((vs[i].workers == 1 || vs[i].split != LM_SPLIT_DYNAMIC) &&
             vs[i].math == LM_MATH_SLEEF);
    for (int p = 0; p < LM_POLICY__COUNT; p++)
      in[i] |= p != LM_POLICY_RANDOM && c->choice[p] == i;
  }
}

/* The same mapping apart from the math provider. */
static int same_mapping(const lm_variant *a, const lm_variant *b) {
  lm_variant x = *a;
  x.math = b->math;
  return lm_variant_same_code(&x, b);
}

/* The LM_EVALUATE_SPLIT_TOP fastest first-round variants (parallel ones
 * only if `parallel`), one per code variant (per mapping when `mapping`)
 * and worker count, into top; returns how many. */
static int fastest(const lm_eval_case *c, const lm_variant *vs,
                   const unsigned char *first, int parallel, int mapping,
                   int *top) {
  int ntop = 0;
  for (int k = 0; k < LM_EVALUATE_SPLIT_TOP; k++) {
    int b = -1;
    for (int i = 0; i < c->nvariants; i++) {
      int seen = 0;
      for (int j = 0; j < ntop; j++)
        seen |= vs[i].workers == vs[top[j]].workers &&
                (mapping ? same_mapping(&vs[i], &vs[top[j]])
                         : lm_variant_same_code(&vs[i], &vs[top[j]]));
      const lm_eval_variant *v = &c->v[i];
      if (!seen && (!parallel || vs[i].workers > 1) && first[i] &&
          !v->contended && v->verified == 1 && isfinite(v->measured) &&
          (b < 0 || v->measured < c->v[b].measured))
        b = i;
    }
    if (b < 0)
      break;
    top[ntop++] = b;
  }
  return ntop;
}

int lm_eval_split_second(const lm_eval_case *c, const lm_variant *vs,
                         const unsigned char *first, unsigned char *second) {
  int par[LM_EVALUATE_SPLIT_TOP], any[LM_EVALUATE_SPLIT_TOP], n = 0;
  int npar = fastest(c, vs, first, 1, 0, par);
  int nany = fastest(c, vs, first, 0, 1, any);
  for (int i = 0; i < c->nvariants; i++) {
    second[i] = 0;
    /* the dynK splits of the fastest parallel code variants */
    for (int j = 0; j < npar && !first[i]; j++)
      second[i] |= vs[i].workers == vs[par[j]].workers &&
                   lm_variant_same_code(&vs[i], &vs[par[j]]);
    /* the other math providers of the fastest mappings, at their worker
     * count, every split */
    for (int j = 0; j < nany && !first[i]; j++)
      second[i] |= vs[i].workers == vs[any[j]].workers &&
                   same_mapping(&vs[i], &vs[any[j]]);
    n += second[i];
  }
  return n;
}

/* The second screening round (lm_eval_split_second), timed.  *noise gets
 * the round's verdict (cleared when there is nothing to time). */
static lm_status split_round(const lm_eval_opts *o, const lm_eval_kernel *ek,
                             const lm_timed *entries, const unsigned char *done,
                             lm_eval_case *c, lm_noise *noise, lm_error *err) {
  lm_noise_clear(noise);
  size_t nv = (size_t)(c->nvariants > 0 ? c->nvariants : 1);
  lm_timed *items = calloc(nv, sizeof *items);
  int *idx = calloc(nv, sizeof *idx);
  unsigned char *second = calloc(nv, 1);
  if (!items || !idx || !second) {
    free(items), free(idx), free(second);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  lm_eval_split_second(c, ek->v, done, second);
  int n = 0;
  for (int i = 0; i < c->nvariants; i++)
    if (second[i] && entries[i].run) {
      items[n] = entries[i];
      idx[n++] = i;
    }
  lm_status st = n > 0 ? screen(o, items, n, idx, 0, c, noise, err) : LM_OK;
  free(items), free(idx), free(second);
  return st;
}

/* Screen (in one round, or two with split pruning), mark the contended,
 * confirm, judge the picks' discord; again while the verdict is noisy, up
 * to LM_EVALUATE_REMEASURE more times.  entries[v] is variant v's timed
 * entry (run NULL: not verified); done[v] 1 for the first round's
 * variants. */
static lm_status measure_rounds(const lm_eval_opts *o, const lm_eval_kernel *ek,
                                const lm_timed *items, int nok, const int *idx,
                                int dispatched, const lm_timed *entries,
                                const unsigned char *done, lm_eval_case *c,
                                lm_error *err) {
  lm_status st = LM_OK;
  c->attempts = 0;
  lm_noise_clear(&c->noise);
  do {
    lm_noise confirm, second;
    for (int i = 0; i < c->nvariants; i++) {
      c->v[i].contended = 0;
      if (!done[i]) { /* the second round's picks may differ this time */
        c->v[i].measured = NAN;
        c->v[i].spread = NAN;
        free(c->v[i].times);
        c->v[i].times = NULL;
        c->v[i].ntimes = 0;
      }
    }
    if ((st = screen(o, items, nok, idx, dispatched, c, &c->noise, err)) !=
        LM_OK)
      return st;
    mark_contended(ek, &c->noise, c);
    if ((st = split_round(o, ek, entries, done, c, &second, err)) != LM_OK)
      return st;
    mark_contended(ek, &second, c);
    lm_noise_merge(&c->noise, &second);
    if ((st = lm_eval_case_confirm(o, entries, c, &confirm, err)) != LM_OK)
      return st;
    mark_contended(ek, &confirm, c);
    /* a pick timed twice that disagrees with itself: interference the
     * rounds' own measures did not see */
    confirm.discord = lm_eval_pick_discord(c);
    lm_noise_judge(&confirm, o->timing.limits);
    lm_noise_merge(&c->noise, &confirm);
    c->attempts++;
  } while (c->noise.noisy && c->attempts <= LM_EVALUATE_REMEASURE);
  return st;
}

lm_status lm_eval_case_measure(const lm_eval_opts *o, const lm_eval_kernel *ek,
                               const lm_eval_launch *plan, lm_eval_case *c,
                               int *failures, lm_error *err) {
  if (!ek->c)
    return lm_error_set(err, LM_EINPUT, "%s: variants not compiled", c->id);
  if (c->nvariants != ek->nv)
    return lm_error_set(err, LM_EINPUT,
                        "%s: the case has %d variants, the kernel %d", c->id,
                        c->nvariants, ek->nv);
  lm_shape sh;
  lm_status st = lm_shape_bind(ek->k, c->R, c->C, c->extra, &sh, err);
  if (st != LM_OK)
    return st;
  /* every comparison carries the canary and watches the pool it launches
   * on, for the noise verdict */
  lm_eval_opts oo = *o;
  oo.timing.canary = 1;
  oo.timing.pool = o->pool ? o->pool : lm_pool_shared();
  lm_data *d = NULL;
  lm_oracle *orc = NULL;
  lm_verifier *ver = NULL;
  uint64_t *args = NULL;
  Launch *ls = calloc((size_t)ek->nv + 1, sizeof *ls);
  lm_timed *items = calloc((size_t)ek->nv + 1, sizeof *items);
  lm_timed *entries = calloc((size_t)ek->nv, sizeof *entries);
  int *idx = calloc((size_t)ek->nv, sizeof *idx);
  unsigned char *done = calloc((size_t)ek->nv, 1);
  int nok = 0, bad = 0, dispatched = 0;
  if (!ls || !items || !entries || !idx || !done) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto done;
  }
  if ((st = lm_data_gen(ek->k, &sh, o->seed, &d, err)) != LM_OK ||
      (st = lm_oracle_run(ek->k, d, &orc, err)) != LM_OK)
    goto done;
  if (!(args = lm_args_pack(ek->k, d))) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto done;
  }
  if ((st = lm_verifier_new(ek->k, d, orc, &ver, err)) != LM_OK)
    goto done;
  for (int i = 0; i < ek->nv; i++) {
    lm_verify_result vr;
    lm_error verr = {0};
    c->v[i].verified =
        lm_verifier_run(ver, ek->c[i], o->pool, &vr, &verr) == LM_OK;
    c->v[i].measured = NAN;
    if (c->v[i].verified) {
      Launch *l = &ls[i];
      *l = (Launch){ek->c[i], NULL, o->pool, args, c->R, c->C};
      entries[i] = (lm_timed){c->v[i].variant, run_launch, l};
    } else {
      bad++;
    }
  }
  /* the first round, ranked among the verified variants */
  lm_eval_split_first(c, ek->v, o->all_splits, done);
  for (int i = 0; i < ek->nv; i++)
    if (done[i] && entries[i].run) {
      items[nok] = entries[i];
      idx[nok++] = i;
    }
  if (plan && plan->dispatch) {
    int ok = 0;
    if ((st = check_dispatch(o, plan, c, d, orc, &ok, err)) != LM_OK)
      goto done;
    bad += !ok;
    dispatched = ok && nok > 0;
    if (dispatched) {
      ls[ek->nv] = (Launch){NULL, plan, o->pool, args, c->R, c->C};
      items[nok] = (lm_timed){"dispatch", run_launch, &ls[ek->nv]};
    }
  }
  if (nok > 0 && (st = measure_rounds(&oo, ek, items, nok, idx, dispatched,
                                      entries, done, c, err)) != LM_OK)
    goto done;
  if (failures)
    *failures = bad;
done:
  lm_verifier_free(ver);
  free(args);
  free(ls);
  free(items);
  free(entries);
  free(idx);
  free(done);
  lm_oracle_free(orc);
  lm_data_free(d);
  return st;
}

/* ---- policies ----------------------------------------------------------- */

/* How well v fits a fixed policy's template; the best-fitting variant
 * wins, ties to the first. */
typedef int (*fit_fn)(const lm_variant *v, int wmax, const lm_eval_case *c,
                      const lm_eval_opts *o);

static int fit_common(const lm_variant *v, int wmax) {
  int s = 0;
  s += v->w == wmax ? 8 : 0;
  s += v->priv == LM_PRIV_SLOT || v->priv == LM_PRIV_NONE ? 2 : 0;
  return s;
}

/* The reference report's default: one row per lane, slot private arrays
 * (its change), global access by gathers (what it emitted), snapshots,
 * inline. */
static int fit_program(const lm_variant *v, int wmax, const lm_eval_case *c,
                       const lm_eval_opts *o) {
  (void)c, (void)o;
  if (v->l != 1 || v->workers != 1)
    return -1;
  return fit_common(v, wmax) + (v->glob == LM_GLOB_GATHER ? 4 : 0) +
         (v->phase != LM_PHASE_REREAD ? 1 : 0);
}

/* The W lanes of a packet split one row; snapshots; inline. */
static int fit_packet(const lm_variant *v, int wmax, const lm_eval_case *c,
                      const lm_eval_opts *o) {
  (void)c, (void)o;
  if (v->l != v->w || v->workers != 1)
    return -1;
  return fit_common(v, wmax) + (v->phase != LM_PHASE_REREAD ? 1 : 0);
}

/* Inductor's CPP backend: vectorise the row at the widest width, read and
 * reduce then re-read for the output, and run rows in parallel when the
 * work is large enough. */
static int fit_inductor(const lm_variant *v, int wmax, const lm_eval_case *c,
                        const lm_eval_opts *o) {
  if (v->l != v->w)
    return -1;
  int par = c->R >= 2 && c->R * c->C >= o->inductor_parallel_elems;
  int s = fit_common(v, wmax) + (v->phase != LM_PHASE_SNAPSHOT ? 1 : 0);
  s += par ? (v->workers > 1 ? 4 + v->workers : 0) : (v->workers == 1 ? 4 : 0);
  return s;
}

lm_status lm_eval_fixed_choice(const lm_eval_opts *o, const lm_eval_case *c,
                               lm_policy p, int *choice, lm_error *err) {
  fit_fn fit = p == LM_POLICY_PROGRAM    ? fit_program
               : p == LM_POLICY_PACKET   ? fit_packet
               : p == LM_POLICY_INDUCTOR ? fit_inductor
                                         : NULL;
  if (!fit)
    return lm_error_set(err, LM_EINPUT, "%s is not a fixed rule",
                        lm_policy_name(p));
  lm_variant *vs = calloc((size_t)(c->nvariants > 0 ? c->nvariants : 1),
                          sizeof *vs);
  if (!vs)
    return lm_error_set(err, LM_ESYS, "out of memory");
  int wmax = 0;
  for (int i = 0; i < c->nvariants; i++) {
    if (lm_variant_parse(c->v[i].variant, &vs[i], err) != LM_OK) {
      free(vs);
      return LM_EINPUT;
    }
    if (vs[i].w > wmax)
      wmax = vs[i].w;
  }
  int best = -1, bs = -1;
  for (int i = 0; i < c->nvariants; i++) {
    int s = fit(&vs[i], wmax, c, o);
    if (s > bs) {
      bs = s;
      best = i;
    }
  }
  *choice = best;
  free(vs);
  return LM_OK;
}

lm_status lm_eval_choose(const lm_eval_opts *o, lm_eval_run *run,
                         const char *dir, lm_eval_plans *plans, lm_error *err) {
  lm_status st = lm_eval_plans_make(o, run, dir, plans, err);
  for (int i = 0; i < run->ncases && st == LM_OK; i++) {
    lm_eval_case *c = &run->cases[i];
    int r = -1;
    for (int v = 0; v < c->nvariants; v++)
      if (isfinite(c->v[v].pred_roofline) &&
          (r < 0 || c->v[v].pred_roofline < c->v[r].pred_roofline))
        r = v;
    c->choice[LM_POLICY_ROOFLINE] = r;
    c->choice[LM_POLICY_RANDOM] = -1;
    static const lm_policy fixed[] = {LM_POLICY_PROGRAM, LM_POLICY_PACKET,
                                      LM_POLICY_INDUCTOR};
    for (int f = 0; f < 3 && st == LM_OK; f++)
      st = lm_eval_fixed_choice(o, c, fixed[f], &c->choice[fixed[f]], err);
  }
  return st;
}
