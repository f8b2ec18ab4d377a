/* lm_evaluate, the main job: for every ISA target it takes the profile
 * (given, cached, or calibrated and cached), predicts every variant of
 * every held-out case, solves the cases' workload into a plan, compiles the
 * plan, measures every variant and the plan's picks through the plan's
 * dispatch, scores every policy and reports.  Each target's profile also
 * plans the next target's cases, which is the leave-one-ISA-out comparison.
 *
 * Finished cases are appended to OUT/ISA/records.jsonl as they finish, so
 * an interrupted run resumes where it stopped: a case is taken from the
 * records when its kernel, shape, variants, seed and protocol are the ones
 * this run would measure, and measured again otherwise.  The workload and
 * the plans are made again on every run (predicting and solving take
 * seconds) and written beside the records.  Nothing here prints: stage
 * progress and one-line notes go to the caller's callbacks.
 *
 * Records carry the fingerprint (machine type) and node of the machine
 * that measured them.  A target folder holding records of other machine
 * types (merged with --allow-mixed, or measured elsewhere and evaluated
 * here) gets one section per machine type: each other type's complete
 * cases are planned with its own profile, bundled in the folder as
 * profile-<fingerprint>-<mode>.json, and never measured here; this machine
 * measures the cases no type has finished.  heldout/machines.c splits the
 * records; docs/evaluation.md, "Machine types". */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "heldout/machines.h"
#include "heldout/note.h"

#include "lanemap/calibrate.h"
#include "lanemap/dispatch.h"
#include "lanemap/heldout.h"
#include "lanemap/plan.h"
#include "lanemap/runtime.h"

void lm_evaluate_options_defaults(lm_evaluate_options *o) {
  memset(o, 0, sizeof *o);
  o->cross = -1;
  o->shard_n = 1;
  o->seed = 1;
}

/* ---- the state of one call -------------------------------------------- */

typedef struct Eval {
  const lm_evaluate_options *o;
  lm_cases cases;
  lm_isa isa[LM_EVALUATE_MAX_ISAS + 1]; /* measured targets, then the cross */
  int nisa, nprof;                      /* measured targets, profiles */
  lm_profile *prof[LM_EVALUATE_MAX_ISAS + 1];
  double calib_s[LM_EVALUATE_MAX_ISAS + 1];
  lm_learned *learned; /* the first target's learned correction, or NULL */
  lm_timing_opts timing;
  /* busy judged on the timing thread's own CPU: a neighbour on another
   * core leaves one-worker variants alone, and the parallel ones it
   * touches are marked contended (docs/evaluation.md) */
  lm_noise_limits limits;
  lm_fingerprint host; /* this machine: its type */
  char node[256];      /* and its host name */
  lm_evaluate_result *res;
} Eval;

/* One target: an ISA target on one machine type, its cases, kernels, run,
 * plans and dispatch. */
typedef struct Target {
  lm_eval_opts o;
  lm_evaluate_target *r;
  const char *fp;   /* the machine type: its fingerprint hash */
  int foreign;      /* another machine's: resumed only, planned with prof */
  lm_profile *prof; /* foreign: the bundled profile (owned) */
  lm_cases cases;   /* the case list's cases this type evaluates (a view) */
  /* OUT/ISA, holding the records of every machine type, and the folder of
   * this type's report and plans: OUT/ISA itself for this machine,
   * OUT/ISA/machine-<fingerprint> for another */
  char isadir[PATH_MAX], dir[PATH_MAX + 32], records[PATH_MAX + 16];
  lm_profile *defaults;
  lm_eval_kernel **k; /* [nk] one per distinct kernel path */
  int nk;
  int *k_of;  /* [ncases] */
  int *first; /* [nk] the first case of each kernel */
  lm_eval_run run;
  lm_eval_plans plans;
  lm_dispatch *dispatch;
  int *idx;             /* [cases.n] each case's index in the case list */
  unsigned char *taken; /* [list n] cases another machine type finished */
  unsigned char *done;  /* [ncases] measured by an earlier run */
  int ndone;
  int lock; /* held on records from the resume to the last append */
} Target;

/* A note line to the caller (heldout/note.h). */
#define note(e, warning, ...)                                                  \
  lm_eval_notef((e)->o->note, (e)->o->ctx, warning, __VA_ARGS__)

static void progress(const Eval *e, lm_evaluate_stage s, lm_isa isa, int done,
                     int total, const char *what) {
  if (e->o->progress)
    e->o->progress(e->o->ctx, s, lm_isa_name(isa), done, total, what);
}

/* ---- options ---------------------------------------------------------- */

static lm_status add_isa(Eval *e, lm_isa isa, lm_error *err) {
  if (!lm_isa_runnable(isa))
    return lm_error_set(err, LM_EINPUT,
                        "ISA target %s cannot run on this "
                        "machine",
                        lm_isa_name(isa));
  for (int j = 0; j < e->nisa; j++)
    if (e->isa[j] == isa)
      return lm_error_set(err, LM_EINPUT, "ISA target %s given twice",
                          lm_isa_name(isa));
  e->isa[e->nisa++] = isa;
  return LM_OK;
}

/* The measured targets and the cross target, with their defaults. */
static lm_status targets(Eval *e, lm_error *err) {
  const lm_evaluate_options *o = e->o;
  int v4 = lm_isa_runnable(LM_ISA_AVX512), v3 = lm_isa_runnable(LM_ISA_AVX2);
  lm_isa dflt[2] = {LM_ISA_HOST, LM_ISA_HOST};
  int ndflt = 1;
  if (v4)
    dflt[0] = LM_ISA_AVX512, dflt[1] = LM_ISA_AVX2, ndflt = o->quick ? 1 : 2;
  else if (v3)
    dflt[0] = LM_ISA_AVX2, dflt[1] = LM_ISA_SSE42, ndflt = o->quick ? 1 : 2;
  if (o->nisa < 0 || o->nisa > LM_EVALUATE_MAX_ISAS)
    return lm_error_set(err, LM_EINPUT, "at most %d ISA targets",
                        LM_EVALUATE_MAX_ISAS);
  lm_status st = LM_OK;
  for (int i = 0; i < (o->nisa ? o->nisa : ndflt) && st == LM_OK; i++)
    st = add_isa(e, o->nisa ? o->isa[i] : dflt[i], err);
  if (st != LM_OK)
    return st;
  if (o->cross > 0 && e->nisa > 1)
    return lm_error_set(err, LM_EINPUT,
                        "a cross target applies to one ISA target only");
  if (o->profile && e->nisa != 1)
    return lm_error_set(err, LM_EINPUT,
                        "a given profile needs exactly one ISA target");
  e->nprof = e->nisa;
  if (e->nisa == 1 && o->cross != 0) {
    lm_isa c = o->cross_isa;
    if (o->cross < 0) {
      if (e->isa[0] == LM_ISA_AVX512 && v3)
        c = LM_ISA_AVX2;
      else if (e->isa[0] == LM_ISA_AVX2)
        c = v4 ? LM_ISA_AVX512 : LM_ISA_SSE42;
      else
        return LM_OK; /* no other target by default */
    }
    if (!lm_isa_runnable(c) || c == e->isa[0])
      return lm_error_set(err, LM_EINPUT,
                          "cross target %s is not another runnable target",
                          lm_isa_name(c));
    e->isa[e->nprof++] = c;
  }
  return LM_OK;
}

/* ---- stages ----------------------------------------------------------- */

typedef struct CalibProgress {
  const Eval *e;
  lm_isa isa;
} CalibProgress;

static void calib_progress(void *ctx, int done, int total, const char *what) {
  const CalibProgress *p = ctx;
  progress(p->e, LM_EVALUATE_CALIBRATE, p->isa, done, total, what);
}

/* Where the profile of machine type fp for target isa is bundled. */
static lm_status bundle_path(const Eval *e, lm_isa isa, const char *fp,
                             char *buf, size_t n, lm_error *err) {
  return lm_eval_bundle_path(e->o->out, lm_isa_name(isa), fp,
                             e->o->quick ? "quick" : "full", buf, n, err);
}

/* Profile i (once): the given file (the first target's), else the one
 * bundled in OUT/ISA for this machine type by an earlier run, else the
 * cached one of the mode, else calibrated now and cached. */
static lm_status calibrate(Eval *e, int i, lm_error *err) {
  if (e->prof[i])
    return LM_OK;
  CalibProgress cp = {e, e->isa[i]};
  lm_profile_found f;
  int bundled = 0;
  lm_status st = lm_eval_profile_find(
      e->o->out, e->isa[i], e->host.hash, e->o->quick, e->o->fresh,
      i == 0 ? e->o->profile : NULL, e->o->accept_noisy, calib_progress, &cp,
      &e->prof[i], &f, &bundled, err);
  if (f.source == LM_PROFILE_SOURCE_CALIBRATED)
    progress(e, LM_EVALUATE_CALIBRATE, e->isa[i], 1, 1, NULL);
  if (st != LM_OK)
    return st;
  e->calib_s[i] = f.calibrate_s;
  if (f.info.fingerprint_diffs > 0)
    note(e, 1, "%s", f.info.warning);
  if (f.source == LM_PROFILE_SOURCE_CALIBRATED)
    note(e, 0, "calibrate %-10s %.1f s -> %s", lm_isa_name(e->isa[i]),
         f.calibrate_s, f.path);
  else
    note(e, 0, "calibrate %-10s %s %s", lm_isa_name(e->isa[i]),
         bundled ? "bundled" : lm_profile_source_name(f.source),
         f.path);
  return LM_OK;
}

/* OUT/ISA and this type's report folder, the records' lock, the profiles
 * (this machine's calibrated now if need be, and bundled in OUT/ISA;
 * another type's read from its bundle) and the harness options. */
static lm_status open_target(Eval *e, int i, Target *t, lm_error *err) {
  int w = snprintf(t->isadir, sizeof t->isadir, "%s/%s", e->o->out,
                   lm_isa_name(e->isa[i]));
  if (w < 0 || (size_t)w + sizeof "/machine-0123456789abcdef/records.jsonl" >
                   sizeof t->isadir)
    return lm_error_set(err, LM_EINPUT,
                        "--out %s: the folder's path is longer than the %zu "
                        "bytes a path may have here",
                        e->o->out,
                        sizeof t->isadir -
                            sizeof "/x86-64-v4/machine-0123456789abcdef/"
                                   "records.jsonl");
  snprintf(t->records, sizeof t->records, "%s/records.jsonl", t->isadir);
  if (t->foreign)
    snprintf(t->dir, sizeof t->dir, "%s/machine-%s", t->isadir, t->fp);
  else
    snprintf(t->dir, sizeof t->dir, "%s", t->isadir);
  lm_status st = lm_file_make_dirs(t->isadir, err);
  if (st == LM_OK && t->foreign)
    st = lm_file_make_dirs(t->dir, err);
  if (st == LM_OK) /* a second run into OUT waits, then resumes from it */
    st = lm_file_lock(t->records, &t->lock, err);
  if (st != LM_OK)
    return st;
  int j = (i + 1) % e->nprof; /* the other target whose profile plans i */
  char bundle[PATH_MAX];
  if ((st = bundle_path(e, e->isa[i], t->fp, bundle, sizeof bundle, err)) !=
      LM_OK)
    return st;
  if (t->foreign) { /* planned with its own type's profile, no other */
    if (access(bundle, R_OK) != 0)
      return lm_error_set(
          err, LM_EINPUT,
          "%s: %d cases were measured on machine type %s (node %s), and %s, "
          "the profile to plan them with, is missing: merge the shard "
          "folders (lanemap merge copies their profiles), or copy that "
          "machine type's profile there",
          t->records, t->cases.n, t->fp, t->r->node[0] ? t->r->node : "?",
          bundle);
    if ((st = lm_profile_load(bundle, &t->prof, NULL, err)) != LM_OK)
      return st;
    if (strcmp(lm_profile_get_isa(t->prof), lm_isa_name(e->isa[i])) != 0)
      return lm_error_set(err, LM_EINPUT, "%s: a profile of %s, not %s", bundle,
                          lm_profile_get_isa(t->prof), lm_isa_name(e->isa[i]));
  } else {
    if ((st = calibrate(e, i, err)) != LM_OK ||
        (e->nprof > 1 && (st = calibrate(e, j, err)) != LM_OK))
      return st;
    char *text = NULL; /* the profile that plans, bundled beside records */
    if ((st = lm_profile_to_json_text(e->prof[i], &text, err)) == LM_OK)
      st = lm_file_write_atomic(bundle, text, strlen(text), err);
    free(text);
    if (st != LM_OK)
      return st;
  }
  lm_profile *prof = t->foreign ? t->prof : e->prof[i];
  lm_eval_defaults(&t->o);
  t->o.isa = e->isa[i];
  t->o.seed = e->o->seed;
  t->o.all_splits = e->o->all_splits;
  t->o.fp = e->o->fp;
  t->o.timing = e->timing;
  t->o.profile = prof;
  t->o.cross = e->nprof > 1 && !t->foreign ? e->prof[j] : NULL;
  t->o.learned = i == 0 && !t->foreign ? e->learned : NULL;
  t->r->isa = e->isa[i];
  t->r->has_cross = t->o.cross != NULL;
  t->r->cross_isa = e->isa[j];
  t->r->calibrate_s = t->foreign ? 0 : e->calib_s[i];
  snprintf(t->r->fingerprint, sizeof t->r->fingerprint, "%s", t->fp);
  t->r->foreign = t->foreign;
  if (!t->foreign)
    snprintf(t->r->node, sizeof t->r->node, "%.63s", e->node);
  if ((st = lm_profile_default(e->isa[i], &t->defaults, err)) != LM_OK)
    return st;
  t->o.defaults = t->defaults;
  if ((st = lm_eval_run_init(&t->run, e->isa[i], err)) != LM_OK)
    return st;
  t->run.fingerprint = strdup(t->fp);
  t->run.node = t->foreign ? NULL : strdup(e->node);
  t->run.profile_mode = strdup(lm_profile_mode_name(lm_profile_get_mode(prof)));
  t->run.cross_isa = t->o.cross ? strdup(lm_isa_name(e->isa[j])) : NULL;
  t->run.calibrate_s = t->r->calibrate_s;
  lm_eval_protocol *pr = &t->run.protocol;
  pr->samples = e->timing.samples;
  pr->sample_ms = e->timing.sample_ms;
  pr->warmup_ms = e->timing.warmup_ms;
  pr->remeasure = LM_EVALUATE_REMEASURE;
  pr->confirm_samples = LM_EVALUATE_CONFIRM_SAMPLES(e->timing.samples);
  pr->confirm_top = LM_EVALUATE_CONFIRM_TOP;
  pr->canary = 1; /* lm_eval_case_measure turns it on */
  pr->all_splits = e->o->all_splits;
  pr->fp = e->o->fp;
  if (e->timing.limits)
    pr->limits = *e->timing.limits;
  else
    lm_noise_limits_defaults(&pr->limits);
  t->done = calloc((size_t)t->cases.n + 1, 1);
  if (!t->run.fingerprint || !t->run.profile_mode || !t->done ||
      (!t->foreign && !t->run.node) || (t->o.cross && !t->run.cross_isa))
    return lm_error_set(err, LM_ESYS, "out of memory");
  return LM_OK;
}

/* One loaded kernel per distinct kernel path of the cases. */
static lm_status load_kernels(Target *t, lm_error *err) {
  const lm_cases *cs = &t->cases;
  t->k = calloc((size_t)cs->n + 1, sizeof *t->k);
  t->k_of = calloc((size_t)cs->n + 1, sizeof *t->k_of);
  t->first = calloc((size_t)cs->n + 1, sizeof *t->first);
  if (!t->k || !t->k_of || !t->first)
    return lm_error_set(err, LM_ESYS, "out of memory");
  for (int i = 0; i < cs->n; i++) {
    int j = 0; /* the first case of each kernel names its path */
    while (j < t->nk && strcmp(cs->c[t->first[j]].kernel, cs->c[i].kernel))
      j++;
    if (j == t->nk) {
      t->first[j] = i;
      lm_status st = lm_eval_kernel_new(&t->o, cs->c[i].kernel, &t->k[j], err);
      if (st != LM_OK)
        return st;
      t->nk++;
    }
    t->k_of[i] = j;
  }
  return LM_OK;
}

static lm_status predict(Target *t, lm_error *err) {
  const lm_cases *cs = &t->cases;
  t->run.cases = calloc((size_t)cs->n + 1, sizeof *t->run.cases);
  if (!t->run.cases)
    return lm_error_set(err, LM_ESYS, "out of memory");
  for (int i = 0; i < cs->n; i++) {
    lm_status st = lm_eval_case_predict(&t->o, t->k[t->k_of[i]], &cs->c[i],
                                        &t->run, &t->run.cases[i], err);
    t->run.ncases = i + 1;
    if (st != LM_OK)
      return st;
  }
  return LM_OK;
}

/* Every policy chooses: the model-based ones by solving the cases'
 * workload into their plans. */
static lm_status solve(Target *t, lm_error *err) {
  lm_status st = lm_eval_choose(&t->o, &t->run, t->dir, &t->plans, err);
  t->r->solve_s = t->plans.solve_s;
  return st;
}

/* The workload and the plans go beside the records. */
static lm_status write_plans(Target *t, lm_error *err) {
  return lm_eval_plans_save(&t->plans, t->dir, err);
}

static int same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Is a measurement with fingerprint fp (NULL: older records, taken as
 * this machine's) one of machine type t's? */
static int of_type(const Target *t, const char *fp) {
  return fp ? strcmp(fp, t->fp) == 0 : !t->foreign;
}

/* Keep the records of other machine types, and of complete cases old[j]
 * that this run takes over (used[j]) or does not run at all (another
 * shard's); drop this type's incomplete cases and the cases this run
 * measures again (after an interruption, or with another protocol), so a
 * case is never mixed from two runs. */
static int keep_used(lm_records *rs, const lm_eval_case *old,
                     const unsigned char *used, int n, const Target *t) {
  const lm_eval_run *run = &t->run;
  int kept = 0;
  for (int i = 0; i < rs->n; i++) {
    const cJSON *id =
        rs->r[i].extra
            ? cJSON_GetObjectItemCaseSensitive(rs->r[i].extra, "case")
            : NULL;
    int keep = !of_type(t, rs->r[i].fingerprint);
    for (int j = 0; j < n && !keep && cJSON_IsString(id); j++) {
      if (strcmp(old[j].id, id->valuestring) != 0 ||
          !same_str(old[j].fingerprint, rs->r[i].fingerprint))
        continue;
      int ours = 0;
      for (int c = 0; c < run->ncases && !ours; c++)
        ours = strcmp(run->cases[c].id, old[j].id) == 0;
      keep = used[j] || !ours;
    }
    if (keep)
      rs->r[kept++] = rs->r[i];
    else
      lm_record_free(&rs->r[i]);
  }
  int dropped = rs->n - kept;
  rs->n = kept;
  return dropped;
}

/* Is p the measurement c would take: same case, kernel, shape, seed,
 * protocol and variants, and a time (or a failed check) for every variant
 * the case list names in "time"? */
static int same_case(const lm_eval_case *p, const lm_eval_case *c) {
  if (strcmp(p->id, c->id) != 0 || p->nvariants != c->nvariants ||
      strcmp(p->kernel_hash, c->kernel_hash) != 0 || p->R != c->R ||
      p->C != c->C || !same_str(p->extra, c->extra) ||
      !same_str(p->protocol, c->protocol))
    return 0;
  for (int v = 0; v < c->nvariants; v++)
    if (strcmp(p->v[v].variant, c->v[v].variant) != 0 ||
        (c->v[v].listed && p->v[v].verified != 0 &&
         !isfinite(p->v[v].measured)))
      return 0;
  return 1;
}

/* Another machine type's section holds the cases it finished with this
 * run's seed and protocol, and only those; they are marked taken so that
 * this machine does not measure them again. */
static void keep_resumed(const Eval *e, Target *t) {
  lm_eval_run *run = &t->run;
  int kept = 0;
  for (int i = 0; i < run->ncases; i++) {
    if (!t->done[i]) {
      note(e, 1,
           "%s: case %s was measured on machine type %s with another seed "
           "or protocol; this machine cannot measure it for that type: left "
           "out",
           t->records, run->cases[i].id, t->fp);
      lm_eval_case_free(&run->cases[i]);
      continue;
    }
    t->taken[t->idx[i]] = 1;
    run->cases[kept++] = run->cases[i];
  }
  run->ncases = kept;
  memset(t->done, 1, (size_t)kept);
}

/* Take the measurements of this machine type's cases that an earlier run
 * finished (done[i]).  Another type's cases that cannot be taken (another
 * seed or protocol) are left out of its section, with a note: this machine
 * cannot measure them for it. */
static lm_status resume(const Eval *e, Target *t, lm_error *err) {
  if (e->o->fresh || access(t->records, F_OK) != 0)
    return LM_OK;
  lm_eval_run *run = &t->run;
  lm_records rs = {0};
  lm_eval_case *old = NULL;
  int nold = 0, incomplete = 0;
  lm_status st = lm_records_read(t->records, &rs, err);
  if (st == LM_OK)
    st = lm_eval_cases_from_records(&rs, &old, &nold, &incomplete, err);
  unsigned char *used = calloc((size_t)(nold > 0 ? nold : 1), 1);
  if (st == LM_OK && !used)
    st = lm_error_set(err, LM_ESYS, "out of memory");
  for (int i = 0; i < run->ncases && st == LM_OK; i++) {
    lm_eval_case *c = &run->cases[i];
    for (int j = 0; j < nold; j++) {
      lm_eval_case *p = &old[j];
      if (used[j] || !of_type(t, p->fingerprint) || !same_case(p, c))
        continue; /* another kernel, shape, seed or protocol: measure again */
      for (int v = 0; v < c->nvariants; v++) {
        c->v[v].verified = p->v[v].verified;
        c->v[v].measured = p->v[v].measured;
        c->v[v].spread = p->v[v].spread;
        c->v[v].times = p->v[v].times; /* moved */
        c->v[v].ntimes = p->v[v].ntimes;
        p->v[v].times = NULL;
        c->v[v].confirmed = p->v[v].confirmed;
        c->v[v].ctimes = p->v[v].ctimes; /* moved */
        c->v[v].nctimes = p->v[v].nctimes;
        p->v[v].ctimes = NULL;
        c->v[v].contended = p->v[v].contended;
      }
      c->noise = p->noise;
      c->attempts = p->attempts;
      free(c->fingerprint);
      free(c->node);
      c->fingerprint = p->fingerprint ? strdup(p->fingerprint) : NULL;
      c->node = p->node ? strdup(p->node) : NULL;
      if ((p->fingerprint && !c->fingerprint) || (p->node && !c->node))
        st = lm_error_set(err, LM_ESYS, "out of memory");
      t->done[i] = used[j] = 1;
      t->ndone++;
      break;
    }
  }
  /* Half a line, half a case or a stale case of an earlier run: drop them
   * before appending, so every case in the file is one measurement.
   * Another type's records are never rewritten here. */
  if (st == LM_OK && !t->foreign &&
      (keep_used(&rs, old, used, nold, t) > 0 || rs.truncated))
    st = lm_records_write(t->records, &rs, err);
  free(used);
  for (int j = 0; j < nold; j++)
    lm_eval_case_free(&old[j]);
  free(old);
  lm_records_free(&rs);
  if (st == LM_OK && t->ndone)
    note(e, 0, "resume    %-10s %d of %d cases from %s%s%s", run->isa, t->ndone,
         run->ncases, t->records,
         t->foreign ? ", measured on machine type " : "",
         t->foreign ? t->fp : "");
  if (st == LM_OK && t->foreign)
    keep_resumed(e, t);
  return st;
}

/* Compile the plan into a dispatch, when there are cases left to measure. */
static lm_status compile_plan(const Eval *e, Target *t, lm_error *err) {
  if (t->ndone == t->run.ncases || !t->plans.plan[LM_POLICY_PLAN])
    return LM_OK;
  lm_dispatch_opts d;
  lm_dispatch_defaults(&d);
  d.pool = t->o.pool;
  double t0 = lm_now_ns();
  progress(e, LM_EVALUATE_MEASURE, t->o.isa, 0, t->run.ncases - t->ndone,
           "compiling the plan");
  lm_status st =
      lm_dispatch_new(t->plans.plan[LM_POLICY_PLAN], &d, &t->dispatch, err);
  t->r->plan_compile_s = (lm_now_ns() - t0) / 1e9;
  t->r->compile_s += t->r->plan_compile_s;
  return st;
}

static lm_status append_case(const Target *t, const lm_eval_case *c,
                             lm_error *err) {
  lm_record *rs = NULL;
  int n = 0;
  lm_status st =
      lm_eval_case_records(c, &t->run, t->run.fingerprint, &rs, &n, err);
  for (int i = 0; i < n && st == LM_OK; i++)
    st = lm_records_append(t->records, &rs[i], err);
  for (int i = 0; i < n; i++)
    lm_record_free(&rs[i]);
  free(rs);
  return st;
}

/* Compile each kernel with cases left, then measure those cases beside the
 * plan's pick launched through the dispatch, appending each to the
 * records. */
static lm_status measure(const Eval *e, Target *t, lm_error *err) {
  lm_eval_run *run = &t->run;
  int total = run->ncases - t->ndone, count = 0;
  double m0 = lm_now_ns();
  lm_status st = LM_OK;
  for (int k = 0; k < t->nk && st == LM_OK && count < total; k++) {
    int left = 0;
    for (int i = 0; i < run->ncases; i++)
      left += t->k_of[i] == k && !t->done[i];
    if (!left)
      continue;
    double ms = 0;
    progress(e, LM_EVALUATE_MEASURE, t->o.isa, count, total, "compiling");
    if ((st = lm_eval_kernel_compile(t->k[k], &ms, err)) != LM_OK)
      break;
    t->r->compile_s += ms / 1e3;
    for (int i = 0; i < run->ncases && st == LM_OK; i++) {
      lm_eval_case *c = &run->cases[i];
      if (t->k_of[i] != k || t->done[i])
        continue;
      progress(e, LM_EVALUATE_MEASURE, t->o.isa, count, total, c->id);
      lm_eval_launch plan = {t->dispatch, t->plans.kernel[i]};
      int bad = 0;
      st = lm_eval_case_measure(&t->o, t->k[k], t->dispatch ? &plan : NULL, c,
                                &bad, err);
      if (st == LM_OK)
        st = append_case(t, c, err);
      if (bad)
        note(e, 1, "%s: %d variants failed the oracle check", c->id, bad);
      progress(e, LM_EVALUATE_MEASURE, t->o.isa, ++count, total, c->id);
    }
  }
  progress(e, LM_EVALUATE_MEASURE, t->o.isa, total, total, NULL);
  run->measure_s = (lm_now_ns() - m0) / 1e9;
  t->r->measure_s = run->measure_s;
  t->r->measured = count;
  return st;
}

/* The verdicts of the cases: quiet (unstable among them), noisy after
 * re-measuring, unknown
 * (older records), and those whose plan pick was contended. */
static void verdicts(Target *t) {
  lm_evaluate_target *r = t->r;
  lm_eval_verdicts v;
  lm_eval_count_verdicts(&t->run, &v);
  r->quiet = v.quiet, r->unstable = v.unstable, r->noisy = v.noisy;
  r->unknown = v.unknown, r->contended = v.contended;
  lm_noise_clear(&r->noise);
  for (int i = 0; i < t->run.ncases; i++)
    if (t->run.cases[i].attempts > 0)
      lm_noise_merge(&r->noise, &t->run.cases[i].noise);
}

static lm_status score(Target *t, lm_error *err) {
  double *ratio = calloc((size_t)t->run.ncases + 1, sizeof *ratio);
  if (!ratio)
    return lm_error_set(err, LM_ESYS, "out of memory");
  lm_status st = LM_OK;
  for (int i = 0; i < t->run.ncases && st == LM_OK; i++) {
    const lm_eval_case *c = &t->run.cases[i];
    st = lm_eval_case_score(&t->run.cases[i], err);
    for (int v = 0; v < c->nvariants; v++)
      t->r->failures += c->v[v].verified == 0;
    if (isfinite(c->dispatch_ratio))
      ratio[t->r->dispatched++] = c->dispatch_ratio;
  }
  t->r->dispatch_ratio = lm_timing_median(ratio, t->r->dispatched);
  free(ratio);
  t->r->ncases = t->run.ncases;
  verdicts(t);
  t->r->bias = lm_eval_screening_bias(&t->run, &t->r->bias_n);
  for (int p = 0; p < LM_POLICY__COUNT && st == LM_OK; p++)
    st =
        lm_eval_policy_stats(&t->run, (lm_policy)p, NULL, &t->r->stats[p], err);
  if (st == LM_OK)
    st = lm_eval_policy_bootstrap(&t->run, LM_POLICY_PLAN, NULL, 0,
                                  LM_BOOTSTRAP_SEED, &t->r->plan_ci, err);
  return st;
}

static lm_status report(const Eval *e, Target *t, lm_error *err) {
  lm_status st = lm_eval_report_write(&t->run, t->dir, err);
  if (st != LM_OK)
    return st;
  lm_error perr = {0};
  if (lm_eval_plots(&t->run, t->dir, &perr) != LM_OK)
    note(e, 1, "no plots: %s", perr.msg);
  const lm_evaluate_target *r = t->r;
  note(e, 0,
       "evaluate  %-10s %d cases, %d measured now (compile %.1f s, of which "
       "the plan %.1f s; measure %.1f s), solve %.3f s -> %s/report.md",
       t->run.isa, r->ncases, r->measured, r->compile_s, r->plan_compile_s,
       r->measure_s - r->compile_s + r->plan_compile_s, r->solve_s, t->dir);
  return LM_OK;
}

static void close_target(Target *t) {
  lm_dispatch_free(t->dispatch);
  lm_eval_plans_free(&t->plans);
  lm_eval_run_free(&t->run);
  for (int k = 0; k < t->nk; k++)
    lm_eval_kernel_free(t->k[k]);
  free(t->k);
  free(t->k_of);
  free(t->first);
  free(t->done);
  lm_profile_free(t->defaults);
  lm_profile_free(t->prof);
  free(t->cases.c);
  free(t->idx);
  lm_file_unlock(t->lock);
}

/* ---- the pipeline of one target --------------------------------------- */

/* The cases of the list that machine type t evaluates: in[i] set. */
static lm_status pick_cases(const Eval *e, Target *t, const unsigned char *in,
                            lm_error *err) {
  t->cases = e->cases; /* the list's strings, a copy of the chosen cases */
  t->cases.c = calloc((size_t)e->cases.n + 1, sizeof *t->cases.c);
  t->idx = calloc((size_t)e->cases.n + 1, sizeof *t->idx);
  if (!t->cases.c || !t->idx)
    return lm_error_set(err, LM_ESYS, "out of memory");
  t->cases.n = 0;
  for (int c = 0; c < e->cases.n; c++)
    if (in[c]) {
      t->idx[t->cases.n] = c;
      t->cases.c[t->cases.n++] = e->cases.c[c];
    }
  return LM_OK;
}

/* clang-format off */
/* ISA target i on machine type m (this machine's when foreign is 0), over
 * the cases in[]; cases of another type it resumes are marked in taken. */
static lm_status evaluate_target(Eval *e, int i, const lm_eval_machine *m,
                                 int foreign, const unsigned char *in,
                                 unsigned char *taken, lm_error *err) {
  double t0 = lm_now_ns();
  if (e->res->ntargets == LM_EVALUATE_MAX_TARGETS)
    return lm_error_set(err, LM_EINPUT, "more than %d machine types and ISA "
                        "targets", LM_EVALUATE_MAX_TARGETS);
  Target t = {.r = &e->res->target[e->res->ntargets++], .lock = -1,
              .fp = m->fp, .foreign = foreign, .taken = taken};
  snprintf(t.r->node, sizeof t.r->node, "%.63s", m->nodes);
  lm_status st = pick_cases(e, &t, in, err);               /* its cases      */
  if (st == LM_OK) st = open_target(e, i, &t, err);        /* OUT/ISA        */
  if (st == LM_OK) st = load_kernels(&t, err);             /* variants       */
  if (st == LM_OK) st = predict(&t, err);                  /* predict        */
  if (st == LM_OK) st = resume(e, &t, err);                /* records        */
  if (st == LM_OK) st = solve(&t, err);                    /* workload, plan */
  if (st == LM_OK) st = write_plans(&t, err);              /* their files    */
  if (st == LM_OK) st = compile_plan(e, &t, err);          /* dispatch       */
  if (st == LM_OK) st = measure(e, &t, err);               /* oracle, picks  */
  if (st == LM_OK) st = score(&t, err);                    /* regrets        */
  t.run.total_s = (lm_now_ns() - t0) / 1e9 + e->calib_s[i];
  if (st == LM_OK) st = report(e, &t, err);                /* report, plots  */
  e->res->failures += t.r->failures;
  e->res->noisy += t.r->noisy;
  e->res->contended += t.r->contended;
  e->res->cases += t.r->ncases;
  lm_noise_merge(&e->res->noise, &t.r->noise);
  snprintf(t.r->dir, sizeof t.r->dir, "%s%s%s", lm_isa_name(e->isa[i]),
           foreign ? "/machine-" : "", foreign ? t.fp : "");
  close_target(&t);
  return st;
}

/* ISA target i on every machine type whose records OUT/ISA holds: the
 * other types' finished cases first, then this machine's -- the cases no
 * other type finished, and those it finished itself.  A folder of another
 * type's records alone is reported without measuring or calibrating. */
static lm_status evaluate_isa(Eval *e, int i, lm_error *err) {
  char dir[PATH_MAX], records[PATH_MAX + 64];
  int w = snprintf(dir, sizeof dir, "%s/%s", e->o->out, lm_isa_name(e->isa[i]));
  if (w < 0 || (size_t)w >= sizeof dir)
    return lm_error_set(err, LM_EINPUT,
                        "--out %s: the folder's path is longer than the %zu "
                        "bytes a path may have here",
                        e->o->out, sizeof dir - sizeof "/x86-64-v4");
  snprintf(records, sizeof records, "%s/records.jsonl", dir);
  lm_eval_machines ms = {0};
  int lock = -1; /* released before the targets take it in turn */
  lm_status st = lm_file_make_dirs(dir, err);
  if (st == LM_OK)
    st = lm_file_lock(records, &lock, err);
  if (st == LM_OK && e->o->fresh && unlink(records) != 0 && errno != ENOENT)
    st = lm_error_set(err, LM_ESYS, "%s: cannot remove: %s", records,
                      strerror(errno));
  if (st == LM_OK)
    st = lm_eval_machines_read(records, &e->cases, lm_isa_name(e->isa[i]),
                               e->host.hash, &ms, err);
  lm_file_unlock(lock);
  if (st != LM_OK)
    return st;
  int n = e->cases.n;
  unsigned char *taken = calloc((size_t)n + 1, 1), *here = malloc((size_t)n + 1);
  if (!taken || !here)
    st = lm_error_set(err, LM_ESYS, "out of memory");
  for (int k = 0; k < ms.n && st == LM_OK; k++)
    st = evaluate_target(e, i, &ms.m[k], 1, ms.m[k].has, taken, err);
  int nhere = 0;
  for (int c = 0; c < n && st == LM_OK; c++)
    nhere += here[c] = !taken[c] || (ms.here.has && ms.here.has[c]);
  snprintf(ms.here.nodes, sizeof ms.here.nodes, "%.63s", e->node);
  if (st == LM_OK && (nhere > 0 || ms.n == 0))
    st = evaluate_target(e, i, &ms.here, 0, here, taken, err);
  free(taken);
  free(here);
  lm_eval_machines_free(&ms);
  return st;
}
/* clang-format on */

/* ---- OUT/report.md ---------------------------------------------------- */

/* "5.8% [4.1, 7.9]" (ci NULL: "5.8%"), "-" when x is unknown. */
static const char *pct_ci(double x, const double *ci, char buf[64]) {
  if (isnan(x))
    snprintf(buf, 64, "-");
  else if (!ci || isnan(ci[0]))
    snprintf(buf, 64, "%.1f%%", 100 * x);
  else
    snprintf(buf, 64, "%.1f%% [%.1f, %.1f]", 100 * x, 100 * ci[0], 100 * ci[1]);
  return buf;
}

/* One line per ISA target, and what recalibrating bought. */
static lm_status summary(const Eval *e, lm_error *err) {
  const lm_evaluate_result *res = e->res;
  char path[PATH_MAX + 16], *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return lm_error_set(err, LM_ESYS, "out of memory");
  fprintf(f,
          "# lanemap evaluation\n\n%s protocol, %.0f s in all. Each ISA "
          "target has its own report: ",
          e->o->quick ? "Quick" : "Full", res->total_s);
  for (int i = 0; i < res->ntargets; i++)
    fprintf(f, "%s[%s](%s/report.md)", i ? ", " : "", res->target[i].dir,
            res->target[i].dir);
  fprintf(f, ".\n\nRegrets use each case's confirmation round; the "
             "brackets are bootstrap 95%% intervals over timing rounds.  "
             "Verdicts: cases quiet, still noisy after re-measuring, of "
             "unknown verdict (older records); contended cases (the plan's "
             "pick was measured while its cores were busy) are left out.\n\n"
             "Each machine type (fingerprint) has its own rows, planned with "
             "its own profile; \"here\" is the machine that ran this "
             "report.\n\n"
             "| ISA target | machine type | cases | plan geomean | p90 | max | "
             "score | best fixed policy | its geomean | quiet / noisy / "
             "unknown | contended | screening bias |\n|---|---|---:|---:|"
             "---:|---:|---:|---|---:|---:|---:|---:|\n");
  int any_cross = 0;
  for (int i = 0; i < res->ntargets; i++) {
    const lm_evaluate_target *t = &res->target[i];
    const lm_regret_stats *plan = &t->stats[LM_POLICY_PLAN];
    const lm_regret_interval *ci = &t->plan_ci;
    int best = -1; /* the best fixed policy by geomean */
    for (int p = LM_POLICY_PROGRAM; p < LM_POLICY__COUNT; p++)
      if (p != LM_POLICY_RANDOM && t->stats[p].n > 0 &&
          (best < 0 || t->stats[p].geomean < t->stats[best].geomean))
        best = p;
    char g[64], q[64], x[64], b[64];
    fprintf(f,
            "| %s | %s (%s%s) | %d | %s | %s | %s | %.3f | %s | %.1f%% | %d / "
            "%d / %d | %d | %s |\n",
            lm_isa_name(t->isa), t->fingerprint,
            t->foreign ? "" : "here: ", t->node[0] ? t->node : "?", t->ncases,
            pct_ci(plan->geomean, ci->geomean, g),
            pct_ci(plan->p90, ci->p90, q), pct_ci(plan->max, ci->max, x),
            plan->score, best >= 0 ? lm_policy_name((lm_policy)best) : "-",
            best >= 0 ? 100 * t->stats[best].geomean : 0.0, t->quiet, t->noisy,
            t->unknown, t->contended, pct_ci(t->bias, NULL, b));
    any_cross |= t->has_cross && t->stats[LM_POLICY_CROSS].n > 0;
  }
  if (isfinite(res->skew_before) || isfinite(res->skew_after))
    fprintf(f,
            "\nThe participants' skew, how much longer the slower of two "
            "cores took for equal work (docs/runtime.md, \"Unequal "
            "participants\"): %.2f before the cases were measured, %.2f "
            "after.  Parallel variants timed while it is high lose to "
            "their dynamic splits, and their repeats disagree.\n",
            res->skew_before, res->skew_after);
  if (any_cross) {
    fprintf(f, "\n## Leave one ISA target out\n\nThe cases of target B "
               "planned with target A's profile, then with B's own.\n\n"
               "| B | A | geomean with A's | with B's own | p90 A / B | "
               "max A / B |\n|---|---|---:|---:|---:|---:|\n");
    for (int i = 0; i < res->ntargets; i++) {
      const lm_evaluate_target *t = &res->target[i];
      const lm_regret_stats *a = &t->stats[LM_POLICY_CROSS],
                            *b = &t->stats[LM_POLICY_PLAN];
      if (t->has_cross && a->n > 0)
        fprintf(f,
                "| %s | %s | %.1f%% | %.1f%% | %.1f%% / %.1f%% | %.1f%% / "
                "%.1f%% |\n",
                lm_isa_name(t->isa), lm_isa_name(t->cross_isa),
                100 * a->geomean, 100 * b->geomean, 100 * a->p90, 100 * b->p90,
                100 * a->max, 100 * b->max);
    }
  }
  fclose(f);
  snprintf(path, sizeof path, "%s/report.md", e->o->out);
  lm_status st = lm_file_write_atomic(path, buf, len, err);
  free(buf);
  return st;
}

/* ---- the pipeline ----------------------------------------------------- */

/* clang-format off */
/* The participants' skew now (NAN if it cannot be measured): 40 launches
 * of the probe's ~25 us blocks, a few milliseconds. */
#define SKEW_LAUNCHES 40
static double skew_now(void) {
  double x = NAN;
  lm_error ignored = {0};
  if (lm_pool_threads(lm_pool_shared()) < 1 ||
      lm_pool_skew_probe(lm_pool_shared(), SKEW_LAUNCHES, &x, &ignored) != LM_OK)
    return NAN;
  return x;
}

/* The busiest other process since scan a (which it frees). */
static void busiest(lm_proc_scan *a, lm_proc_top *top) {
  lm_proc_scan *b = a ? lm_proc_scan_take() : NULL;
  memset(top, 0, sizeof *top);
  if (b)
    lm_proc_scan_top(a, b, top);
  lm_proc_scan_free(a);
  lm_proc_scan_free(b);
}

lm_status lm_evaluate(const lm_evaluate_options *o, lm_evaluate_result *out,
                      lm_error *err) {
  memset(out, 0, sizeof *out);
  if (!o->cases || !o->out)
    return lm_error_set(err, LM_EINPUT, "evaluate: no %s given",
                        o->cases ? "output folder" : "case list");
  double t0 = lm_now_ns();
  Eval e = {.o = o, .res = out};
  lm_noise_clear(&out->noise);
  lm_timing_defaults(&e.timing);
  lm_noise_limits_defaults(&e.limits);
  e.limits.busy_here = 1;
  e.timing.limits = &e.limits;
  e.timing.samples = o->quick ? LM_EVALUATE_QUICK_SAMPLES : LM_EVALUATE_SAMPLES;
  e.timing.sample_ms =
      o->quick ? LM_EVALUATE_QUICK_SAMPLE_MS : LM_EVALUATE_SAMPLE_MS;
  e.timing.warmup_ms =
      o->quick ? LM_EVALUATE_QUICK_WARMUP_MS : LM_EVALUATE_WARMUP_MS;
  if (o->timing)
    e.timing = *o->timing;
  lm_status st = lm_timing_opts_check(&e.timing, err);
  if (st == LM_OK) st = lm_fingerprint_host(&e.host, err);            /* machine   */
  if (st == LM_OK && gethostname(e.node, sizeof e.node - 1) != 0)
    snprintf(e.node, sizeof e.node, "?");
  if (st == LM_OK) st = targets(&e, err);                             /* targets   */
  if (st == LM_OK && o->learned) st = lm_learned_load(o->learned, &e.learned, err);
  if (st == LM_OK) st = lm_cases_load(o->cases, &e.cases, err);       /* cases     */
  if (st == LM_OK) st = lm_cases_shard(&e.cases, o->shard_i, o->shard_n, err);
  if (st == LM_OK) st = lm_file_make_dirs(o->out, err);
  lm_proc_scan *scan0 = lm_proc_scan_take();                          /* who else  */
  out->skew_before = st == LM_OK ? skew_now() : NAN;                  /* the cores */
  for (int i = 0; i < e.nisa && st == LM_OK; i++)
    st = evaluate_isa(&e, i, err);            /* each machine type: calibrate, evaluate */
  out->skew_after = st == LM_OK ? skew_now() : NAN;
  busiest(scan0, &out->busiest);
  out->total_s = (lm_now_ns() - t0) / 1e9;
  if (st == LM_OK) st = summary(&e, err);                             /* report    */
  for (int i = 0; i < e.nprof; i++)
    lm_profile_free(e.prof[i]);
  lm_learned_free(e.learned);
  lm_cases_free(&e.cases);
  return st;
}
/* clang-format on */
