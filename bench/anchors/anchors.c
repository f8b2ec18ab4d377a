/* bench_anchors: lanemap's chosen code against what a user would write or
 * run instead, on every case of kernels/suite.json, single-threaded, in one
 * process.
 *
 * Per case, the entries are: the variant the plan chooses (the argmin of
 * lm_cost_predict under the calibrated profile over the legal variants of
 * the host ISA, one worker, no budget); the measured-best variant (every
 * legal variant timed side by side in a screening round, the fastest kept);
 * the same two in relaxed floating point (over the fp=relaxed variants of a
 * kernel that relaxed mode changes, else its strict ones: what `lanemap
 * evaluate --fp relaxed` judges);
 * the hand AVX-512 kernel in TorchInductor's structure; plain C at -O3 and
 * at -O3 -ffast-math (clang-19); the memory roofline and the pass roofline
 * of the chosen variant's column loops (anchors.h).  Every
 * entry except the roofline is verified against the FP64 oracle with guards
 * (lm_verify / lm_verify_entry) before it is timed; an entry that fails is
 * reported as failing and not timed.  The final round times the surviving
 * entries together with the project's timing harness (permuted rounds,
 * paired ratios), so every ratio of lanemap-chosen over an anchor is a
 * median of per-round ratios.
 *
 * With --out DIR it also exports, for the Python peers, each case's inputs
 * and the oracle's output as raw little-endian files (DIR/data/CASE/NAME.bin,
 * the output as f64 in want.bin) and the chosen variant as an object file
 * (DIR/data/CASE/chosen.o), and writes all results to DIR/c.json.  For the
 * 2-thread comparison it also exports the plan's choice among one and two
 * workers (lanemap solve's, near ties settled) (DIR/data/CASE/chosen_t2.o, entry lanemap_chosen_t2), verified
 * through lm_compiled_launch, with the cut peers.py launches it with
 * (lm_pool_launch_sched on the shared pool, as lm_compiled_launch does).
 *
 *   bench_anchors [--quick] [--case ID] [--out DIR] [--samples N]
 *                 [--sample-ms MS] [--profile P]
 * exit codes: 0 ok, 1 an entry failed the oracle, 2 bad input, 3 system. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "costmodel/counts.h"
#include "lanemap/json.h"

#include "bench/anchors/anchors.h"
#include "lanemap/calibrate.h"
#include "lanemap/plan.h"
#include "lanemap/verify.h"

typedef struct Opts {
  int quick, samples;
  double sample_ms;
  const char *only, *out, *profile;
} Opts;

/* The entries of the final round, in this order. */
enum { E_CHOSEN, E_BEST, E_RCHOSEN, E_RBEST, E_HAND, E_PLAIN, E_FAST, E_ROOF, E_PASSES, E__COUNT };
static const char *entry_key[E__COUNT] = {
    "lanemap_chosen", "lanemap_best",      "lanemap_relaxed_chosen", "lanemap_relaxed_best",
    "hand_avx512",    "plain_O3",          "plain_O3_fastmath",      "roofline",
    "pass_roofline"};

/* A native entry timed over all R rows of one launch. */
typedef struct Native {
  lm_entry_fn fn;
  const uint64_t *args;
  int64_t R;
} Native;

static void run_native(void *ctx, int64_t reps) {
  Native *e = ctx;
  for (int64_t i = 0; i < reps; i++)
    e->fn(e->args, 0, e->R);
}

static volatile uint64_t roofline_sink;
static void run_roofline(void *ctx, int64_t reps) {
  for (int64_t i = 0; i < reps; i++)
    roofline_sink ^= anchor_roofline_run(ctx);
}
static void run_passes(void *ctx, int64_t reps) {
  for (int64_t i = 0; i < reps; i++)
    roofline_sink ^= anchor_passes_run(ctx);
}

/* The profile the plan uses: the one given, else the cached calibrated
 * profile of the host ISA (quick first, then full, as `lanemap predict`
 * looks them up), else a quick calibration, saved to the cache. */
static lm_status load_profile(const char *path, lm_profile **out, lm_error *err) {
  char buf[1024];
  for (int m = LM_PROFILE_QUICK; m <= LM_PROFILE_FULL && !path; m++)
    if (lm_profile_cache_path(lm_isa_name(LM_ISA_HOST), m, buf, sizeof buf, err) == LM_OK &&
        access(buf, R_OK) == 0)
      path = buf;
  if (path) {
    lm_profile_load_info info;
    lm_status s = lm_profile_load(path, out, &info, err);
    if (s == LM_OK)
      fprintf(stderr, "bench_anchors: profile %s%s%s\n", path,
              info.fingerprint_diffs ? ": warning: " : "",
              info.fingerprint_diffs ? info.warning : "");
    return s;
  }
  fprintf(stderr, "bench_anchors: no cached profile; calibrating (quick)\n");
  lm_calib_opts co;
  lm_calib_defaults(&co);
  co.isa = LM_ISA_HOST;
  co.quick = 1;
  lm_status s = lm_calibrate(&co, out, err);
  if (s == LM_OK &&
      lm_profile_cache_path(lm_isa_name(LM_ISA_HOST), LM_PROFILE_QUICK, buf, sizeof buf, err) ==
          LM_OK)
    s = lm_profile_save(*out, buf, err);
  return s;
}

/* "x,g,eps,y;R,C" for a kernel, to match it against the anchor table. */
static void signature(const lm_kernel *k, char *buf, size_t n) {
  size_t at = 0;
  buf[0] = 0;
  for (int p = 0; p < k->nparams && at < n; p++)
    at += (size_t)snprintf(buf + at, n - at, "%s%s", p ? "," : "", k->params[p].name);
  for (int s = 0; s < k->nsyms && at < n; s++)
    at += (size_t)snprintf(buf + at, n - at, "%s%s", s ? "," : ";", k->syms[s]);
}

/* The roofline regions of a case: every buffer, read if an input,
 * written if an output. */
static void roofline_of(const lm_kernel *k, const lm_data *d, anchor_roofline *rl) {
  memset(rl, 0, sizeof *rl);
  for (int p = 0; p < k->nparams; p++) {
    const lm_param *pa = &k->params[p];
    if (pa->kind != LM_PARAM_BUFFER)
      continue;
    anchor_region g = {d->buf[p], d->count[p] * (int64_t)lm_dtype_size(pa->dtype)};
    if (pa->is_output && rl->nout < ANCHOR_MAX_REGIONS)
      rl->out[rl->nout++] = g;
    else if (!pa->is_output && rl->nin < ANCHOR_MAX_REGIONS)
      rl->in[rl->nin++] = g;
  }
}

/* The pass roofline of a variant (anchors.h): each input read as many
 * times per row as the variant's column loops read it from memory (the
 * cost model's count, costmodel/counts.h), row by row. */
static lm_status passes_of(const lm_kernel *k, const lm_variant *v, const lm_data *d,
                           anchor_passes *p, lm_error *err) {
  lm_cost_counts cc;
  if (lm_cost_counts_build(k, v, &cc, err) != LM_OK)
    return err->status;
  memset(p, 0, sizeof *p);
  roofline_of(k, d, &p->rl);
  p->R = d->shape.dims[0];
  for (int q = 0, b = 0, ni = 0, no = 0; q < k->nparams; q++) {
    const lm_param *pa = &k->params[q];
    if (pa->kind != LM_PARAM_BUFFER)
      continue;
    int rows = pa->dims[0].sym == 0 && pa->dims[0].coef == 1;
    if (pa->is_output && no < ANCHOR_MAX_REGIONS)
      p->out_rows[no++] = rows;
    else if (!pa->is_output && ni < ANCHOR_MAX_REGIONS) {
      p->in_rows[ni] = rows;
      p->passes[ni++] = cc.buf[b].nloads > 0 ? cc.buf[b].nloads : 1;
    }
    b++;
  }
  return LM_OK;
}

static int mkdirs(const char *path) {
  char tmp[1024];
  snprintf(tmp, sizeof tmp, "%s", path);
  for (char *p = tmp + 1; *p; p++)
    if (*p == '/') {
      *p = 0;
      if (mkdir(tmp, 0777) != 0 && errno != EEXIST)
        return -1;
      *p = '/';
    }
  return mkdir(tmp, 0777) != 0 && errno != EEXIST ? -1 : 0;
}

/* Write the case's inputs and the oracle's output under DIR/data/ID and
 * describe them in `jc` (one entry per parameter). */
static lm_status export_case(const char *dir, const char *id, const lm_kernel *k,
                             const lm_data *d, const lm_oracle *o, cJSON *jc, lm_error *err) {
  char path[1200];
  snprintf(path, sizeof path, "%s/data/%s", dir, id);
  if (mkdirs(path) != 0)
    return lm_error_set(err, LM_ESYS, "%s: cannot create: %s", path, strerror(errno));
  cJSON *jp = cJSON_AddArrayToObject(jc, "params");
  for (int p = 0; p < k->nparams; p++) {
    const lm_param *pa = &k->params[p];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddItemToArray(jp, e);
    cJSON_AddStringToObject(e, "name", pa->name);
    cJSON_AddStringToObject(e, "dtype", lm_dtype_name(pa->dtype));
    cJSON_AddBoolToObject(e, "output", pa->is_output);
    if (pa->kind == LM_PARAM_SCALAR) {
      cJSON_AddNumberToObject(e, "value", d->scalar[p]);
      continue;
    }
    cJSON_AddNumberToObject(e, "count", (double)d->count[p]);
    char file[1300];
    if (pa->is_output) {
      snprintf(file, sizeof file, "%s/want.bin", path);
      if (lm_file_write_atomic(file, o->want[p], (size_t)o->count[p] * sizeof(double), err) !=
          LM_OK)
        return err->status;
      cJSON_AddStringToObject(e, "want", file);
    } else {
      snprintf(file, sizeof file, "%s/%s.bin", path, pa->name);
      size_t n = (size_t)d->count[p] * lm_dtype_size(pa->dtype);
      if (lm_file_write_atomic(file, d->buf[p], n, err) != LM_OK)
        return err->status;
      cJSON_AddStringToObject(e, "file", file);
    }
  }
  return LM_OK;
}

/* The chosen variant as an object file DIR/data/ID/chosen.o with entry
 * `lanemap_chosen` (run.sh links it into a shared object), so peers.py can
 * time lanemap's code in its own process, paired with each Python peer. */
static lm_status export_chosen(const char *dir, const char *id, const lm_kernel *k,
                               const lm_variant *v, const lm_shape *sh, cJSON *jc,
                               lm_error *err) {
  char obj[1200], hdr[1200];
  snprintf(obj, sizeof obj, "%s/data/%s/chosen.o", dir, id);
  snprintf(hdr, sizeof hdr, "%s/data/%s/chosen.h", dir, id);
  if (lm_emit_object(k, v, "lanemap_chosen", obj, hdr, err) != LM_OK)
    return err->status;
  cJSON_AddStringToObject(jc, "chosen_object", obj);
  cJSON *js = cJSON_AddArrayToObject(jc, "symbols");
  for (int i = 0; i < sh->nsyms; i++)
    cJSON_AddItemToArray(js, cJSON_CreateNumber((double)sh->dims[i]));
  return LM_OK;
}

/* The plan's choice with up to two workers (strict), as `lanemap solve`
 * makes it: a workload of the one case (host ISA, workers 1 and 2), its
 * near ties settled (lm_plan_problem_settle, which prefers the named
 * defaults' pick and then t1 among variants the bootstrap cannot tell
 * apart), solved.  The variant is compiled, verified (lm_verify launches it
 * with its workers) and exported as chosen_t2.o with the cut of one launch
 * of all R rows, for peers.py to launch on lanemap's shared pool beside
 * TorchInductor with two threads. */
static lm_status plan_t2(const char *kfile, const lm_shape *sh, int64_t C,
                         const lm_profile *prof, lm_variant *out, double *pred,
                         lm_error *err) {
  lm_workload *w = lm_workload_new("<anchors>", NULL, err);
  if (!w)
    return err->status;
  const lm_isa isa = LM_ISA_HOST;
  const int workers[2] = {1, 2};
  int ki = -1, have = 0;
  lm_plan_problem pp = {0};
  lm_solve_result res = {0};
  lm_solve_opts so;
  lm_solve_defaults(&so);
  lm_plan_build_opts bo = {0, 1};
  const lm_profile *profs[1] = {prof};
  lm_status st = lm_workload_add_kernel(w, kfile, NULL, &ki, err);
  if (st == LM_OK)
    st = lm_workload_add_bucket(w, ki, sh->dims[0], C, 1, err);
  if (st == LM_OK)
    st = lm_workload_set_isas(w, &isa, 1, err);
  if (st == LM_OK)
    st = lm_workload_set_workers(w, workers, 2, err);
  if (st == LM_OK)
    st = lm_workload_bind(w, err);
  if (st == LM_OK)
    st = lm_plan_problem_build(w, profs, &bo, &pp, err);
  if (st == LM_OK)
    st = lm_plan_problem_settle(&pp, LM_SETTLE_ALPHA, err);
  if (st == LM_OK && (st = lm_solve(&pp.p, &so, &res, err)) == LM_OK) {
    have = 1;
    int v = res.choice[res.bucket_start[0]];
    *out = pp.pk[0].variants[v];
    *pred = pp.pk[0].point ? pp.pk[0].point[v] : pp.pk[0].cost[v];
  }
  if (have)
    lm_solve_result_free(&res);
  lm_plan_problem_free(&pp);
  lm_workload_free(w);
  return st;
}

static lm_status export_t2(const char *dir, const char *id, const char *kfile,
                           const lm_kernel *k, const lm_shape *sh, int64_t C, lm_data *d,
                           const lm_oracle *o, const lm_profile *prof, cJSON *jc,
                           lm_error *err) {
  lm_variant v;
  double pred = 0;
  lm_status st = plan_t2(kfile, sh, C, prof, &v, &pred, err);
  lm_compiled *c = NULL;
  lm_verify_result vr;
  if (st == LM_OK && ((st = lm_compile(k, &v, NULL, &c, err)) != LM_OK ||
                      (st = lm_verify(k, c, d, o, NULL, &vr, err)) != LM_OK))
    fprintf(stderr, "%s: the 2-worker plan's variant fails: %s\n", id, err->msg);
  lm_compiled_free(c);
  if (st != LM_OK)
    return st;
  char obj[1200], hdr[1200], name[128];
  snprintf(obj, sizeof obj, "%s/data/%s/chosen_t2.o", dir, id);
  snprintf(hdr, sizeof hdr, "%s/data/%s/chosen_t2.h", dir, id);
  if ((st = lm_emit_object(k, &v, "lanemap_chosen_t2", obj, hdr, err)) != LM_OK)
    return st;
  lm_cut cut;
  lm_variant_cut(&v, sh->dims[0], &cut);
  cJSON *t = cJSON_AddObjectToObject(jc, "t2");
  cJSON_AddStringToObject(t, "variant", lm_variant_format(&v, name, sizeof name));
  cJSON_AddStringToObject(t, "object", obj);
  cJSON_AddNumberToObject(t, "predicted_ns", pred);
  cJSON_AddNumberToObject(t, "workers", v.workers);
  cJSON_AddNumberToObject(t, "grain", (double)cut.grain);
  cJSON_AddNumberToObject(t, "sched", cut.dynamic ? LM_SCHED_DYNAMIC : LM_SCHED_STATIC);
  cJSON_AddNumberToObject(t, "batch", (double)cut.batch);
  return LM_OK;
}

typedef struct CaseResult {
  char variant[E__COUNT][128]; /* lanemap entries: variant strings */
  int timed[E__COUNT];         /* 1 timed, 0 absent, -1 failed the oracle */
  double p50[E__COUNT], spread[E__COUNT];
  double ratio[E__COUNT];      /* chosen / entry, paired */
  double rratio[E__COUNT];     /* relaxed chosen / entry, paired */
  double predicted_ns;         /* the chosen variant's prediction */
  int nvariants, nfailed;
  double best_screen_ratio;    /* chosen / best in the screening round */
  int64_t bytes;               /* roofline bytes per launch */
} CaseResult;

/* Compile and verify every legal variant, pick the plan's choice and the
 * measured best, verify the anchors, and time the entries side by side. */
static int bench_case(const char *id, const char *kfile, int64_t R, int64_t C,
                      const lm_profile *prof, const Opts *op, cJSON *jcases) {
  lm_error err = {0};
  lm_kernel *k = NULL;
  lm_shape sh;
  lm_data *d = NULL;
  lm_oracle *o = NULL;
  lm_variant *vs = NULL;
  lm_compiled **cs = NULL;
  lm_timed *items = NULL;
  Native *ents = NULL;
  char(*names)[128] = NULL;
  uint64_t *args = NULL;
  lm_timing_result screen = {0}, tr = {0};
  CaseResult res;
  memset(&res, 0, sizeof res);
  int rc = 0, nv = 0, n = 0, chosen = -1, rchosen = -1;
  int *vof = NULL; /* verified variant -> index in vs */
  if (lm_kernel_load(kfile, &k, &err) != LM_OK || lm_shape_bind(k, R, C, NULL, &sh, &err) != LM_OK ||
      lm_data_gen(k, &sh, 1, &d, &err) != LM_OK || lm_oracle_run(k, d, &o, &err) != LM_OK)
    goto bad;
  const anchor_op *aop = anchor_op_find(k->name);
  char sig[256];
  signature(k, sig, sizeof sig);
  if (!aop || strcmp(aop->params, sig) != 0) {
    lm_error_set(&err, LM_EINPUT, "%s: kernel %s (%s) has no anchor with this signature", kfile,
                 k->name, sig);
    goto bad;
  }
  lm_enum_opts eo;
  lm_enum_defaults(&eo);
  eo.fps = 1u << LM_FP_STRICT | 1u << LM_FP_RELAXED;
  nv = lm_variant_enumerate(k, &eo, &vs, &err);
  if (nv <= 0)
    goto bad;
  cs = calloc((size_t)nv, sizeof *cs);
  items = calloc((size_t)nv + E__COUNT, sizeof *items);
  ents = calloc((size_t)nv + E__COUNT, sizeof *ents);
  names = calloc((size_t)nv + E__COUNT, sizeof *names);
  vof = calloc((size_t)nv, sizeof *vof);
  args = lm_args_pack(k, d);
  if (!cs || !items || !ents || !names || !args || !vof) {
    lm_error_set(&err, LM_ESYS, "out of memory");
    goto bad;
  }
  /* the plan's choice: the argmin of the prediction over all legal
   * variants of each mode (relaxed: the strict ones when relaxed mode does
   * not change the kernel) */
  int relaxes = 0;
  for (int i = 0; i < nv; i++)
    relaxes |= vs[i].fp == LM_FP_RELAXED;
  lm_fp rmode = relaxes ? LM_FP_RELAXED : LM_FP_STRICT;
  int plan = -1, rplan = -1;
  double rpred = 0;
  for (int i = 0; i < nv; i++) {
    lm_prediction pr;
    if (lm_cost_predict(prof, k, &vs[i], &sh, &pr, &err) != LM_OK)
      goto bad;
    if (vs[i].fp == LM_FP_STRICT && (plan < 0 || pr.ns < res.predicted_ns))
      plan = i, res.predicted_ns = pr.ns;
    if (vs[i].fp == rmode && (rplan < 0 || pr.ns < rpred))
      rplan = i, rpred = pr.ns;
  }
  lm_variant_format(&vs[plan], res.variant[E_CHOSEN], sizeof res.variant[E_CHOSEN]);
  lm_variant_format(&vs[rplan], res.variant[E_RCHOSEN], sizeof res.variant[E_RCHOSEN]);
  for (int i = 0; i < nv; i++) {
    lm_verify_result vr;
    lm_compiled *c = NULL;
    if (lm_compile(k, &vs[i], NULL, &c, &err) != LM_OK ||
        lm_verify(k, c, d, o, NULL, &vr, &err) != LM_OK) {
      fprintf(stderr, "%s: variant fails: %s\n", id, err.msg);
      lm_compiled_free(c);
      res.nfailed++;
      continue;
    }
    if (i == plan)
      chosen = n;
    if (i == rplan)
      rchosen = n;
    cs[n] = c;
    vof[n] = i;
    lm_variant_format(&vs[i], names[n], sizeof names[n]);
    ents[n] = (Native){lm_compiled_entry(c), args, R};
    items[n] = (lm_timed){names[n], run_native, &ents[n]};
    n++;
  }
  res.nvariants = n;
  if (n == 0) {
    lm_error_set(&err, LM_EFAIL, "no variant passes the oracle");
    goto bad;
  }
  /* screening: every verified variant side by side, the fastest is the
   * measured best */
  lm_timing_opts so;
  lm_timing_defaults(&so);
  so.samples = op->quick ? 3 : 5;
  so.sample_ms = op->quick ? 2 : 5;
  so.warmup_ms = op->quick ? 10 : 50;
  if (lm_time_compare(&so, n, items, &screen, &err) != LM_OK)
    goto bad;
  int best = -1, rbest = -1;
  for (int i = 0; i < n; i++) {
    lm_fp f = vs[vof[i]].fp;
    if (f == LM_FP_STRICT && (best < 0 || screen.stats[i].p50 < screen.stats[best].p50))
      best = i;
    if (f == rmode && (rbest < 0 || screen.stats[i].p50 < screen.stats[rbest].p50))
      rbest = i;
  }
  if (best < 0 || rbest < 0) {
    lm_error_set(&err, LM_EFAIL, "no variant of a mode passes the oracle");
    goto bad;
  }
  snprintf(res.variant[E_BEST], sizeof res.variant[E_BEST], "%s", names[best]);
  snprintf(res.variant[E_RBEST], sizeof res.variant[E_RBEST], "%s", names[rbest]);
  res.best_screen_ratio = chosen >= 0 ? screen.ratio[chosen * n + best] : NAN;
  /* the final round */
  lm_timed fin[E__COUNT];
  int slot[E__COUNT], nf = 0;
  for (int e = 0; e < E__COUNT; e++)
    slot[e] = -1;
  if (chosen >= 0)
    slot[E_CHOSEN] = nf, fin[nf++] = items[chosen];
  else
    res.timed[E_CHOSEN] = -1;
  if (best != chosen)
    slot[E_BEST] = nf, fin[nf++] = items[best];
  /* the relaxed entries, each timed once: a variant already in the round
   * keeps its slot */
  int rvar[2] = {rchosen, rbest};
  for (int r = 0; r < 2; r++) {
    int v = rvar[r], e = E_RCHOSEN + r;
    if (v < 0)
      res.timed[e] = -1;
    else if (v == chosen)
      slot[e] = slot[E_CHOSEN];
    else if (v == best)
      slot[e] = slot[E_BEST];
    else if (r == 1 && v == rchosen)
      slot[e] = slot[E_RCHOSEN];
    else
      slot[e] = nf, fin[nf++] = items[v];
  }
  lm_entry_fn anchors[3] = {anchor_hand_runnable() ? aop->hand : NULL, aop->plain, aop->fast};
  Native *an = &ents[n];
  for (int a = 0; a < 3; a++) {
    int e = E_HAND + a;
    lm_verify_result vr;
    if (!anchors[a])
      continue;
    if (lm_verify_entry(k, anchors[a], d, o, &vr, &err) != LM_OK) {
      fprintf(stderr, "%s: %s fails the oracle: %s\n", id, entry_key[e], err.msg);
      res.timed[e] = -1;
      rc = 1;
      continue;
    }
    an[a] = (Native){anchors[a], args, R};
    slot[e] = nf;
    fin[nf++] = (lm_timed){entry_key[e], run_native, &an[a]};
  }
  anchor_roofline rl;
  roofline_of(k, d, &rl);
  res.bytes = anchor_roofline_bytes(&rl);
  slot[E_ROOF] = nf;
  fin[nf++] = (lm_timed){entry_key[E_ROOF], run_roofline, &rl};
  anchor_passes ps;
  if (passes_of(k, &vs[plan], d, &ps, &err) != LM_OK)
    goto bad;
  slot[E_PASSES] = nf;
  fin[nf++] = (lm_timed){entry_key[E_PASSES], run_passes, &ps};
  lm_timing_opts to;
  lm_timing_defaults(&to);
  to.samples = op->samples;
  to.sample_ms = op->sample_ms;
  to.warmup_ms = op->quick ? 20 : 100;
  if (lm_time_compare(&to, nf, fin, &tr, &err) != LM_OK)
    goto bad;
  int ci = slot[E_CHOSEN], ri = slot[E_RCHOSEN];
  for (int e = 0; e < E__COUNT; e++) {
    int s = e == E_BEST && slot[E_BEST] < 0 ? ci : slot[e];
    if (s < 0)
      continue;
    res.timed[e] = 1;
    res.p50[e] = tr.stats[s].p50;
    res.spread[e] = tr.stats[s].spread;
    res.ratio[e] = ci >= 0 ? tr.ratio[ci * nf + s] : NAN;
    res.rratio[e] = ri >= 0 ? tr.ratio[ri * nf + s] : NAN;
  }
  /* report */
  printf("\n## %s  (%d variants verified, %d failed; chosen %s, measured best %s)\n", id, n,
         res.nfailed, res.variant[E_CHOSEN], res.variant[E_BEST]);
  printf("relaxed: chosen %s, measured best %s\n", res.variant[E_RCHOSEN],
         res.variant[E_RBEST]);
  printf("| entry | p50 us | spread | chosen / entry (paired) | relaxed chosen / entry |\n"
         "|---|---:|---:|---:|---:|\n");
  for (int e = 0; e < E__COUNT; e++) {
    if (res.timed[e] == 1)
      printf("| %s | %.2f | %.2f | %.3f | %.3f |\n", entry_key[e], res.p50[e] / 1e3,
             res.spread[e], res.ratio[e], res.rratio[e]);
    else if (res.timed[e] < 0)
      printf("| %s | FAILS THE ORACLE | | |\n", entry_key[e]);
  }
  fflush(stdout);
  if (jcases) {
    cJSON *jc = cJSON_CreateObject();
    cJSON_AddItemToArray(jcases, jc);
    cJSON_AddStringToObject(jc, "id", id);
    cJSON_AddStringToObject(jc, "kernel", k->name);
    cJSON_AddNumberToObject(jc, "R", (double)R);
    cJSON_AddNumberToObject(jc, "C", (double)C);
    cJSON_AddNumberToObject(jc, "bytes", (double)res.bytes);
    cJSON_AddNumberToObject(jc, "variants", n);
    cJSON_AddNumberToObject(jc, "variants_failed", res.nfailed);
    cJSON_AddNumberToObject(jc, "predicted_ns", res.predicted_ns);
    cJSON_AddNumberToObject(jc, "screen_chosen_over_best", res.best_screen_ratio);
    cJSON_AddBoolToObject(jc, "relaxes", relaxes); /* fp=relaxed changes the kernel */
    cJSON_AddNumberToObject(jc, "samples", tr.nsamples);
    cJSON *je = cJSON_AddObjectToObject(jc, "entries");
    for (int e = 0; e < E__COUNT; e++) {
      if (!res.timed[e])
        continue;
      cJSON *x = cJSON_AddObjectToObject(je, entry_key[e]);
      cJSON_AddStringToObject(x, "status", res.timed[e] > 0 ? "ok" : "fails-oracle");
      if (e <= E_RBEST)
        cJSON_AddStringToObject(x, "variant", res.variant[e]);
      if (res.timed[e] > 0) {
        cJSON_AddNumberToObject(x, "p50_ns", res.p50[e]);
        cJSON_AddNumberToObject(x, "spread", res.spread[e]);
        cJSON_AddNumberToObject(x, "chosen_over", res.ratio[e]);
        cJSON_AddNumberToObject(x, "relaxed_chosen_over", res.rratio[e]);
      }
    }
    if (op->out && (export_case(op->out, id, k, d, o, jc, &err) != LM_OK ||
                    export_chosen(op->out, id, k, &vs[plan], &sh, jc, &err) != LM_OK ||
                    export_t2(op->out, id, kfile, k, &sh, C, d, o, prof, jc, &err) != LM_OK))
      goto bad;
  }
  goto done;
bad:
  fprintf(stderr, "%s: %s\n", id, err.msg);
  rc = err.status ? (int)err.status : 2;
done:
  lm_timing_result_free(&screen);
  lm_timing_result_free(&tr);
  for (int i = 0; i < n; i++)
    lm_compiled_free(cs[i]);
  free(cs);
  free(items);
  free(ents);
  free(names);
  free(vof);
  free(args);
  free(vs);
  lm_oracle_free(o);
  lm_data_free(d);
  lm_kernel_free(k);
  return rc;
}

static int usage(const char *why) {
  fprintf(stderr,
          "bench_anchors: %s\n"
          "usage: bench_anchors [--quick] [--case ID] [--out DIR] [--samples N]\n"
          "                     [--sample-ms MS] [--profile P]\n",
          why);
  return 2;
}

/* A positive number from argv[i+1], or -1. */
static double number_arg(int argc, char **argv, int *i) {
  if (*i + 1 >= argc)
    return -1;
  char *end;
  double v = strtod(argv[++*i], &end);
  return *end || !(v > 0) ? -1 : v;
}

int main(int argc, char **argv) {
  Opts op = {0, 7, 30, NULL, NULL, NULL};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--quick") == 0) {
      op.quick = 1, op.samples = 5, op.sample_ms = 10;
    } else if (strcmp(a, "--case") == 0 || strcmp(a, "--out") == 0 ||
               strcmp(a, "--profile") == 0) {
      if (i + 1 >= argc)
        return usage("an option needs a value");
      const char **dst = a[2] == 'c' ? &op.only : a[2] == 'o' ? &op.out : &op.profile;
      *dst = argv[++i];
    } else if (strcmp(a, "--samples") == 0) {
      double v = number_arg(argc, argv, &i);
      if (v < 1 || v != floor(v))
        return usage("--samples: expected a positive integer");
      op.samples = (int)v;
    } else if (strcmp(a, "--sample-ms") == 0) {
      op.sample_ms = number_arg(argc, argv, &i);
      if (op.sample_ms <= 0)
        return usage("--sample-ms: expected a positive number");
    } else {
      char why[160];
      snprintf(why, sizeof why, "unknown option '%s'", a);
      return usage(why);
    }
  }
  lm_error err = {0};
  char path[1024];
  snprintf(path, sizeof path, "%s/kernels/suite.json", LANEMAP_SOURCE_DIR);
  cJSON *suite = NULL;
  lm_profile *prof = NULL;
  if (lm_json_load(path, &suite, &err) != LM_OK ||
      load_profile(op.profile, &prof, &err) != LM_OK) {
    fprintf(stderr, "bench_anchors: %s\n", err.msg);
    cJSON_Delete(suite);
    return err.status;
  }
  lm_fingerprint fp;
  if (lm_fingerprint_host(&fp, &err) != LM_OK)
    memset(&fp, 0, sizeof fp);
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "schema", "lanemap.anchors/1");
  cJSON_AddStringToObject(root, "cpu", fp.cpu_name);
  cJSON_AddStringToObject(root, "llvm", fp.llvm_version);
  cJSON_AddNumberToObject(root, "l1d_bytes", (double)fp.l1d_bytes);
  cJSON_AddNumberToObject(root, "l2_bytes", (double)fp.l2_bytes);
  cJSON_AddNumberToObject(root, "l3_bytes", (double)fp.l3_bytes);
  cJSON_AddBoolToObject(root, "hand_avx512", anchor_hand_runnable());
  cJSON_AddNumberToObject(root, "samples", op.samples);
  cJSON_AddNumberToObject(root, "sample_ms", op.sample_ms);
  cJSON *jcases = cJSON_AddArrayToObject(root, "cases");
  printf("# anchors: single-threaded, host ISA (%s), %d samples x %.0f ms, permuted rounds\n",
         fp.cpu_name, op.samples, op.sample_ms);
  int rc = 0, seen = 0;
  cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(suite, "cases")) {
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(c, "id"));
    const char *kf = cJSON_GetStringValue(cJSON_GetObjectItem(c, "kernel"));
    cJSON *sh = cJSON_GetObjectItem(c, "shape");
    if (!id || !kf || cJSON_GetArraySize(sh) != 2) {
      fprintf(stderr, "bench_anchors: %s: cases[%d]: expected id, kernel and shape [R, C]\n",
              path, seen);
      rc = 2;
      break;
    }
    seen++;
    if (op.only && strcmp(op.only, id) != 0)
      continue;
    char kpath[1024];
    snprintf(kpath, sizeof kpath, "%s/kernels/%s", LANEMAP_SOURCE_DIR, kf);
    int r = bench_case(id, kpath, (int64_t)cJSON_GetArrayItem(sh, 0)->valuedouble,
                       (int64_t)cJSON_GetArrayItem(sh, 1)->valuedouble, prof, &op, jcases);
    if (r > rc)
      rc = r;
  }
  if (op.only && cJSON_GetArraySize(jcases) == 0 && rc == 0) {
    fprintf(stderr, "bench_anchors: --case: no suite case '%s'\n", op.only);
    rc = 2;
  }
  if (op.out && rc != 2) {
    char *js = cJSON_Print(root);
    snprintf(path, sizeof path, "%s/c.json", op.out);
    if (mkdirs(op.out) != 0 || lm_file_write_atomic(path, js, strlen(js), &err) != LM_OK) {
      fprintf(stderr, "bench_anchors: %s: %s\n", path, err.msg[0] ? err.msg : strerror(errno));
      rc = 3;
    }
    free(js);
  }
  cJSON_Delete(root);
  cJSON_Delete(suite);
  lm_profile_free(prof);
  return rc;
}
