/* lanemap evaluate: the main job.  For every ISA target it calibrates (or
 * takes the cached profile), predicts every variant of every held-out case,
 * lets every policy choose, compiles, measures the oracle, and reports the
 * regrets.  Each ISA target's profile also plans the next target's cases,
 * which is the leave-one-ISA-out comparison.  Finished cases are appended
 * to OUT/ISA/records.jsonl as they finish, so an interrupted run resumes
 * where it stopped. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "lanemap/calibrate.h"
#include "lanemap/cases.h"
#include "lanemap/heldout.h"
#include "lanemap/profile.h"

static const char usage[] =
    "usage: lanemap evaluate [--quick] [--cases FILE] [--out DIR] [--isa I,J]\n"
    "                        [--cross J] [--shard i/N] [--fresh] [--seed N]\n"
    "                        [--profile P] [--list]\n"
    "  Calibrate (or take the cached profile), predict, solve, compile and\n"
    "  measure every legal variant of every case, then report the regret of\n"
    "  the plan and of the baseline policies: DIR/report.md, DIR/ISA/\n"
    "  {report.md,records.jsonl,*.png}.\n"
    "  --quick      quick calibration and a short timing protocol\n"
    "  --cases F    case list (default $LANEMAP_HELDOUT, else the bundled\n"
    "               heldout/cases.json)\n"
    "  --list       print the cases (of the shard) and their kernel files,\n"
    "               then stop\n"
    "  --out D      output folder (default lanemap-evaluate)\n"
    "  --isa I,J    ISA targets measured; each one's profile also plans the\n"
    "               next one's cases (leave one ISA target out).  Default:\n"
    "               avx512,avx2 where runnable, else host; --quick: avx512\n"
    "  --cross J    with one target: whose profile also plans its cases\n"
    "               (default: avx2 for avx512, avx512 for avx2; none = off)\n"
    "  --shard i/N  only the i-th of N blocks of cases (see lanemap merge)\n"
    "  --fresh      ignore records of an earlier run in DIR\n"
    "  --seed N     input generator seed (default 1)\n"
    "  --profile P  the calibrated profile to use (one ISA target only)\n"
    "exit codes: 0 ok, 1 a variant failed the oracle check, 2 bad input,\n"
    "3 system error\n";

#define MAX_ISAS 4

typedef struct eval_cli {
  const char *cases, *out, *profile;
  lm_isa isa[MAX_ISAS]; /* measured targets, then the cross target if any */
  int nisa;             /* measured targets */
  int ncross;           /* 1: isa[nisa] is the cross target of a lone target */
  int quick, fresh, list, shard_i, shard_n;
  uint64_t seed;
} eval_cli;

/* ---- stages ------------------------------------------------------------------ */

/* The given profile, else the cached calibrated profile of isa, calibrating
 * (and caching) if there is none. */
static lm_status calibrated(const char *given, lm_isa isa, int quick,
                            lm_profile **out, double *secs, lm_error *err) {
  char path[1024];
  lm_profile_mode mode = quick ? LM_PROFILE_QUICK : LM_PROFILE_FULL;
  *secs = 0;
  lm_status st = LM_OK;
  if (given)
    snprintf(path, sizeof path, "%s", given);
  else
    st = lm_profile_cache_path(lm_isa_name(isa), mode, path, sizeof path, err);
  if (st != LM_OK)
    return st;
  if (given || access(path, R_OK) == 0) {
    lm_profile_load_info info;
    st = lm_profile_load(path, out, &info, err);
    if (st == LM_OK && info.fingerprint_diffs > 0)
      fprintf(stderr, "lanemap evaluate: warning: %s\n", info.warning);
    if (st == LM_OK && strcmp(lm_profile_get_isa(*out), lm_isa_name(isa)) != 0) {
      st = lm_error_set(err, LM_EINPUT,
                        "%s: a profile of ISA target %s, not %s (calibrate "
                        "with --isa %s)",
                        path, lm_profile_get_isa(*out), lm_isa_name(isa),
                        lm_isa_name(isa));
      lm_profile_free(*out);
      *out = NULL;
    }
    if (st == LM_OK)
      printf("calibrate %-10s %s %s\n", lm_isa_name(isa),
             given ? "given" : "cached", path);
    return st;
  }
  lm_calib_opts co;
  lm_calib_defaults(&co);
  co.isa = isa;
  co.quick = quick;
  cli_progress bar;
  cli_progress_start(&bar, "calibrate", 1);
  co.progress = cli_progress_calib;
  co.progress_ctx = &bar;
  double t0 = cli_now_s();
  st = lm_calibrate(&co, out, err);
  cli_progress_end(&bar);
  *secs = cli_now_s() - t0;
  if (st == LM_OK)
    st = lm_profile_save(*out, path, err);
  if (st == LM_OK)
    printf("calibrate %-10s %.1f s -> %s\n", lm_isa_name(isa), *secs, path);
  return st;
}

/* One loaded kernel per distinct kernel path of the cases. */
typedef struct Kernels {
  lm_eval_kernel **k; /* [n] */
  const char **path;  /* [n] borrowed from the cases */
  int n;
  int *of_case; /* [ncases] index into k */
} Kernels;

static lm_status load_kernels(const lm_eval_opts *o, const lm_cases *cs,
                              Kernels *ks, lm_error *err) {
  memset(ks, 0, sizeof *ks);
  ks->k = calloc((size_t)cs->n, sizeof *ks->k);
  ks->path = calloc((size_t)cs->n, sizeof *ks->path);
  ks->of_case = calloc((size_t)cs->n, sizeof *ks->of_case);
  if (!ks->k || !ks->path || !ks->of_case)
    return lm_error_set(err, LM_ESYS, "out of memory");
  for (int i = 0; i < cs->n; i++) {
    int j = 0;
    while (j < ks->n && strcmp(ks->path[j], cs->c[i].kernel) != 0)
      j++;
    if (j == ks->n) {
      lm_status st = lm_eval_kernel_new(o, cs->c[i].kernel, &ks->k[j], err);
      if (st != LM_OK)
        return st;
      ks->path[ks->n++] = cs->c[i].kernel;
    }
    ks->of_case[i] = j;
  }
  return LM_OK;
}

static void free_kernels(Kernels *ks) {
  for (int i = 0; i < ks->n; i++)
    lm_eval_kernel_free(ks->k[i]);
  free(ks->k);
  free(ks->path);
  free(ks->of_case);
}

static lm_status predict(const lm_eval_opts *o, const lm_cases *cs,
                         const Kernels *ks, lm_eval_run *run, lm_error *err) {
  run->cases = calloc((size_t)cs->n, sizeof *run->cases);
  if (!run->cases)
    return lm_error_set(err, LM_ESYS, "out of memory");
  for (int i = 0; i < cs->n; i++) {
    lm_status st = lm_eval_case_predict(o, ks->k[ks->of_case[i]], &cs->c[i],
                                        run, &run->cases[i], err);
    run->ncases = i + 1;
    if (st != LM_OK)
      return st;
  }
  return LM_OK;
}

/* Take the measurements of cases an earlier run finished; returns how many
 * cases are done in *done (a flag per case). */
static int same_str(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Keep the records of complete cases old[j] that this run takes over
 * (used[j]) or does not run at all (another shard's); drop incomplete cases
 * and cases this run measures again (after an interruption, or with another
 * protocol), so a case is never mixed from two runs. */
static int keep_used(lm_records *rs, const lm_eval_case *old,
                     const unsigned char *used, int n,
                     const lm_eval_run *run) {
  int kept = 0;
  for (int i = 0; i < rs->n; i++) {
    const cJSON *id =
        rs->r[i].extra ? cJSON_GetObjectItemCaseSensitive(rs->r[i].extra, "case")
                       : NULL;
    int keep = 0;
    for (int j = 0; j < n && !keep && cJSON_IsString(id); j++) {
      if (strcmp(old[j].id, id->valuestring) != 0)
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

static lm_status resume(const char *records, lm_eval_run *run,
                        unsigned char *done, int *ndone, lm_error *err) {
  *ndone = 0;
  if (access(records, F_OK) != 0)
    return LM_OK;
  lm_records rs = {0};
  lm_eval_case *old = NULL;
  int nold = 0, incomplete = 0;
  lm_status st = lm_records_read(records, &rs, err);
  if (st == LM_OK)
    st = lm_eval_cases_from_records(&rs, &old, &nold, &incomplete, err);
  unsigned char *used = calloc((size_t)(nold > 0 ? nold : 1), 1);
  if (st == LM_OK && !used)
    st = lm_error_set(err, LM_ESYS, "out of memory");
  for (int i = 0; i < run->ncases && st == LM_OK; i++) {
    lm_eval_case *c = &run->cases[i];
    for (int j = 0; j < nold; j++) {
      const lm_eval_case *p = &old[j];
      if (strcmp(p->id, c->id) != 0 || p->nvariants != c->nvariants ||
          strcmp(p->kernel_hash, c->kernel_hash) != 0 || p->R != c->R ||
          p->C != c->C || !same_str(p->extra, c->extra) ||
          !same_str(p->protocol, c->protocol))
        continue; /* another kernel, shape, seed or protocol: measure again */
      int same = 1;
      for (int v = 0; v < c->nvariants && same; v++)
        same = strcmp(p->v[v].variant, c->v[v].variant) == 0;
      if (!same)
        continue;
      for (int v = 0; v < c->nvariants; v++) {
        c->v[v].verified = p->v[v].verified;
        c->v[v].measured = p->v[v].measured;
        c->v[v].spread = p->v[v].spread;
        c->v[v].times = p->v[v].times; /* moved */
        c->v[v].ntimes = p->v[v].ntimes;
        p->v[v].times = NULL;
      }
      done[i] = 1;
      used[j] = 1;
      ++*ndone;
      break;
    }
  }
  /* Half a line, half a case or a stale case of an earlier run: drop them
   * before appending, so every case in the file is one measurement. */
  if (st == LM_OK && (keep_used(&rs, old, used, nold, run) > 0 || rs.truncated))
    st = lm_records_write(records, &rs, err);
  free(used);
  for (int j = 0; j < nold; j++)
    lm_eval_case_free(&old[j]);
  free(old);
  lm_records_free(&rs);
  return st;
}

static lm_status append_case(const char *records, const lm_eval_case *c,
                             const lm_eval_run *run, lm_error *err) {
  lm_record *rs = NULL;
  int n = 0;
  lm_status st = lm_eval_case_records(c, run, run->fingerprint, &rs, &n, err);
  for (int i = 0; i < n && st == LM_OK; i++)
    st = lm_records_append(records, &rs[i], err);
  for (int i = 0; i < n; i++)
    lm_record_free(&rs[i]);
  free(rs);
  return st;
}

/* Compile each kernel with cases left, then measure those cases. */
static lm_status measure(const lm_eval_opts *o, const Kernels *ks,
                         lm_eval_run *run, const unsigned char *done,
                         int ndone, const char *records, int *failures,
                         double *compile_s, lm_error *err) {
  cli_progress bar;
  cli_progress_start(&bar, "measure", run->ncases - ndone);
  int count = 0;
  lm_status st = LM_OK;
  *failures = 0;
  *compile_s = 0;
  for (int k = 0; k < ks->n && st == LM_OK; k++) {
    int left = 0;
    for (int i = 0; i < run->ncases; i++)
      left += ks->of_case[i] == k && !done[i];
    if (!left)
      continue;
    double ms = 0;
    cli_progress_step(&bar, count, "compiling");
    if ((st = lm_eval_kernel_compile(ks->k[k], &ms, err)) != LM_OK)
      break;
    *compile_s += ms / 1e3;
    for (int i = 0; i < run->ncases && st == LM_OK; i++) {
      if (ks->of_case[i] != k || done[i])
        continue;
      cli_progress_step(&bar, count, run->cases[i].id);
      int bad = 0;
      st = lm_eval_case_measure(o, ks->k[k], &run->cases[i], &bad, err);
      if (st == LM_OK)
        st = append_case(records, &run->cases[i], run, err);
      *failures += bad;
      if (bad)
        fprintf(stderr, "\nlanemap evaluate: %s: %d variants failed the oracle "
                        "check\n",
                run->cases[i].id, bad);
      cli_progress_step(&bar, ++count, run->cases[i].id);
    }
  }
  cli_progress_end(&bar);
  return st;
}

static lm_status score(lm_eval_run *run, lm_error *err) {
  for (int i = 0; i < run->ncases; i++) {
    lm_status st = lm_eval_case_score(&run->cases[i], err);
    if (st != LM_OK)
      return st;
  }
  return LM_OK;
}

static lm_status report(const char *dir, const lm_eval_run *run,
                        lm_error *err) {
  lm_status st = lm_eval_report_write(run, dir, err);
  if (st != LM_OK)
    return st;
  lm_error perr = {0};
  if (lm_eval_plots(run, dir, &perr) != LM_OK)
    fprintf(stderr, "lanemap evaluate: no plots: %s\n", perr.msg);
  return LM_OK;
}

/* ---- one ISA target ----------------------------------------------------------- */

typedef struct Outcome {
  lm_regret_stats plan, cross, best_fixed;
  const char *best_fixed_name;
  int ncases, failures;
  lm_isa cross_isa;
  int has_cross;
} Outcome;

static void print_stats(const lm_eval_run *run, Outcome *oc) {
  printf("%-16s %7s %7s %7s %7s %7s %6s\n", "policy", "score", "geomean",
         "median", "p90", "max", "<=3%");
  double best_fixed = INFINITY;
  for (int p = 0; p < LM_POLICY__COUNT; p++) {
    lm_regret_stats s;
    lm_error e = {0};
    if (lm_eval_policy_stats(run, (lm_policy)p, NULL, &s, &e) != LM_OK ||
        s.n == 0)
      continue;
    printf("%-16s %7.3f %6.1f%% %6.1f%% %6.1f%% %6.1f%% %5.0f%%\n",
           lm_policy_name((lm_policy)p), s.score, 100 * s.geomean,
           100 * s.median, 100 * s.p90, 100 * s.max, 100 * s.within);
    if (p == LM_POLICY_PLAN)
      oc->plan = s;
    else if (p == LM_POLICY_CROSS)
      oc->cross = s, oc->has_cross = 1;
    else if (p != LM_POLICY_RANDOM && s.geomean < best_fixed &&
             p != LM_POLICY_DEFAULT && p != LM_POLICY_ROOFLINE) {
      best_fixed = s.geomean;
      oc->best_fixed = s;
      oc->best_fixed_name = lm_policy_name((lm_policy)p);
    }
  }
}

static lm_status evaluate_isa(const eval_cli *a, const lm_cases *cs,
                              lm_isa isa, const lm_profile *cross,
                              lm_isa cross_isa, lm_profile *prof,
                              double calib_s, Outcome *oc, lm_error *err) {
  char dir[4096], records[4200];
  snprintf(dir, sizeof dir, "%s/%s", a->out, lm_isa_name(isa));
  snprintf(records, sizeof records, "%s/records.jsonl", dir);
  if (mkdir(dir, 0777) != 0 && errno != EEXIST)
    return lm_error_set(err, LM_ESYS, "%s: cannot create: %s", dir,
                        strerror(errno));
  if (a->fresh && unlink(records) != 0 && errno != ENOENT)
    return lm_error_set(err, LM_ESYS, "%s: cannot remove: %s", records,
                        strerror(errno));
  lm_eval_opts o;
  lm_eval_defaults(&o);
  o.isa = isa;
  o.seed = a->seed;
  o.profile = prof;
  o.cross = cross;
  if (!a->quick) {
    o.timing.samples = 7;
    o.timing.sample_ms = 10;
    o.timing.warmup_ms = 50;
  }
  lm_profile *dflt = NULL;
  Kernels ks = {0};
  lm_eval_run run;
  unsigned char *done = calloc((size_t)cs->n, 1);
  int ndone = 0;
  double t0 = cli_now_s(), solve_s = 0, compile_s = 0;
  lm_status st = lm_eval_run_init(&run, isa, err);
  if (st == LM_OK && !done)
    st = lm_error_set(err, LM_ESYS, "out of memory");
  if (st == LM_OK)
    st = lm_profile_default(isa, &dflt, err);
  o.defaults = dflt;
  run.fingerprint = strdup(lm_profile_get_fingerprint(prof)->hash);
  run.profile_mode = strdup(lm_profile_mode_name(lm_profile_get_mode(prof)));
  run.cross_isa = cross ? strdup(lm_isa_name(cross_isa)) : NULL;
  run.calibrate_s = calib_s;
  if (st == LM_OK) st = load_kernels(&o, cs, &ks, err);                /* load     */
  if (st == LM_OK) st = predict(&o, cs, &ks, &run, err);               /* predict  */
  if (st == LM_OK) st = lm_eval_choose(&o, &run, &solve_s, err);       /* solve    */
  if (st == LM_OK && !a->fresh)
    st = resume(records, &run, done, &ndone, err);                     /* resume   */
  if (st == LM_OK && ndone)
    printf("resume    %-10s %d of %d cases from %s\n", lm_isa_name(isa), ndone,
           run.ncases, records);
  double m0 = cli_now_s();
  if (st == LM_OK)                                                     /* compile, */
    st = measure(&o, &ks, &run, done, ndone, records, &oc->failures,   /* measure  */
                 &compile_s, err);
  run.measure_s = cli_now_s() - m0;
  oc->failures = 0; /* over every case, resumed ones included */
  for (int i = 0; i < run.ncases; i++)
    for (int v = 0; v < run.cases[i].nvariants; v++)
      oc->failures += run.cases[i].v[v].verified == 0;
  if (st == LM_OK) st = score(&run, err);                              /* score    */
  run.total_s = cli_now_s() - t0 + calib_s;
  if (st == LM_OK) st = report(dir, &run, err);                        /* report   */
  if (st == LM_OK) {
    printf("evaluate  %-10s %d cases, %d measured now (compile %.1f s, "
           "measure %.1f s), solve %.3f s -> %s/report.md\n",
           lm_isa_name(isa), run.ncases, run.ncases - ndone, compile_s,
           run.measure_s - compile_s, solve_s, dir);
    print_stats(&run, oc);
    oc->ncases = run.ncases;
    oc->cross_isa = cross_isa;
  }
  lm_eval_run_free(&run);
  free_kernels(&ks);
  lm_profile_free(dflt);
  free(done);
  return st;
}

/* OUT/report.md: one line per ISA target, and what recalibrating bought. */
static lm_status summary(const eval_cli *a, const Outcome *oc, double total_s,
                         lm_error *err) {
  char path[4200], *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return lm_error_set(err, LM_ESYS, "out of memory");
  fprintf(f, "# lanemap evaluation\n\n%s protocol, %.0f s in all. Each ISA "
             "target has its own report: ",
          a->quick ? "Quick" : "Full", total_s);
  for (int i = 0; i < a->nisa; i++)
    fprintf(f, "%s[%s](%s/report.md)", i ? ", " : "", lm_isa_name(a->isa[i]),
            lm_isa_name(a->isa[i]));
  fprintf(f, ".\n\n| ISA target | cases | plan geomean | p90 | max | score | "
             "best fixed policy | its geomean |\n|---|---:|---:|---:|---:|---:|"
             "---|---:|\n");
  for (int i = 0; i < a->nisa; i++)
    fprintf(f, "| %s | %d | %.1f%% | %.1f%% | %.1f%% | %.3f | %s | %.1f%% |\n",
            lm_isa_name(a->isa[i]), oc[i].ncases, 100 * oc[i].plan.geomean,
            100 * oc[i].plan.p90, 100 * oc[i].plan.max, oc[i].plan.score,
            oc[i].best_fixed_name ? oc[i].best_fixed_name : "-",
            100 * oc[i].best_fixed.geomean);
  int any = 0;
  for (int i = 0; i < a->nisa; i++)
    any |= oc[i].has_cross;
  if (any) {
    fprintf(f, "\n## Leave one ISA target out\n\nThe cases of target B "
               "planned with target A's profile, then with B's own.\n\n"
               "| B | A | geomean with A's | with B's own | p90 A / B | "
               "max A / B |\n|---|---|---:|---:|---:|---:|\n");
    for (int i = 0; i < a->nisa; i++)
      if (oc[i].has_cross)
        fprintf(f, "| %s | %s | %.1f%% | %.1f%% | %.1f%% / %.1f%% | %.1f%% / "
                   "%.1f%% |\n",
                lm_isa_name(a->isa[i]), lm_isa_name(oc[i].cross_isa),
                100 * oc[i].cross.geomean, 100 * oc[i].plan.geomean,
                100 * oc[i].cross.p90, 100 * oc[i].plan.p90,
                100 * oc[i].cross.max, 100 * oc[i].plan.max);
  }
  fclose(f);
  snprintf(path, sizeof path, "%s/report.md", a->out);
  lm_status st = lm_file_write_atomic(path, buf, len, err);
  free(buf);
  return st;
}

/* ---- options -------------------------------------------------------------------- */

static int parse_isas(const char *text, eval_cli *o, lm_error *err) {
  char buf[256];
  snprintf(buf, sizeof buf, "%s", text);
  o->nisa = 0;
  for (char *save = NULL, *t = strtok_r(buf, ",", &save); t;
       t = strtok_r(NULL, ",", &save)) {
    if (o->nisa == MAX_ISAS)
      return lm_error_set(err, LM_EINPUT, "--isa: at most %d targets",
                          MAX_ISAS);
    if (lm_isa_parse(t, &o->isa[o->nisa], err) != LM_OK)
      return LM_EINPUT;
    if (!lm_isa_runnable(o->isa[o->nisa]))
      return lm_error_set(err, LM_EINPUT,
                          "--isa: %s cannot run on this machine", t);
    for (int j = 0; j < o->nisa; j++)
      if (o->isa[j] == o->isa[o->nisa])
        return lm_error_set(err, LM_EINPUT, "--isa: %s given twice", t);
    o->nisa++;
  }
  if (o->nisa == 0)
    return lm_error_set(err, LM_EINPUT, "--isa: expected I[,J...]");
  return LM_OK;
}

static int parse_shard(const char *text, eval_cli *o, lm_error *err) {
  int i, n, end = 0;
  if (sscanf(text, "%d/%d%n", &i, &n, &end) != 2 || text[end] || n < 1 ||
      i < 0 || i >= n)
    return lm_error_set(err, LM_EINPUT,
                        "--shard: expected i/N with 0 <= i < N, got '%s'",
                        text);
  o->shard_i = i;
  o->shard_n = n;
  return LM_OK;
}

static int parse_opts(int argc, char **argv, eval_cli *o) {
  memset(o, 0, sizeof *o);
  const char *env = getenv("LANEMAP_HELDOUT");
  o->cases = env && env[0] ? env : cli_data_path("heldout/cases.json");
  o->out = "lanemap-evaluate";
  o->seed = CLI_SEED_DEFAULT;
  o->shard_n = 1;
  const char *isas = NULL, *cross = NULL;
  lm_error err = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r = 0;
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return -1;
    } else if (cli_arg_flag(a, "--quick")) {
      o->quick = 1;
    } else if (cli_arg_flag(a, "--fresh")) {
      o->fresh = 1;
    } else if (cli_arg_flag(a, "--list")) {
      o->list = 1;
    } else if ((r = cli_arg_value(argc, argv, &i, "--cases", &v))) {
      o->cases = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "--out", &v)) ||
               (r = cli_arg_value(argc, argv, &i, "-o", &v))) {
      o->out = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "--isa", &v))) {
      isas = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "--cross", &v))) {
      cross = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "--profile", &v))) {
      o->profile = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "--shard", &v))) {
      if (r > 0 && parse_shard(v, o, &err) != LM_OK)
        return cli_usage_error(usage, "evaluate", "%s", err.msg);
    } else if ((r = cli_arg_value(argc, argv, &i, "--seed", &v))) {
      if (r > 0 && cli_parse_u64("--seed", v, CLI_SEED_MAX, &o->seed, &err))
        return cli_usage_error(usage, "evaluate", "%s", err.msg);
    } else {
      return cli_usage_error(usage, "evaluate", "unexpected argument '%s'", a);
    }
    if (r < 0)
      return LM_EINPUT;
  }
  int v4 = lm_isa_runnable(LM_ISA_AVX512), v3 = lm_isa_runnable(LM_ISA_AVX2);
  if (!isas)
    isas = v4 ? (o->quick ? "avx512" : "avx512,avx2")
           : v3 ? (o->quick ? "avx2" : "avx2,sse4.2")
                : "host";
  if (parse_isas(isas, o, &err) != LM_OK)
    return cli_usage_error(usage, "evaluate", "%s", err.msg);
  if (cross && o->nisa > 1)
    return cli_usage_error(usage, "evaluate",
                           "--cross applies to one --isa target only");
  if (!cross && o->nisa == 1)
    cross = o->isa[0] == LM_ISA_AVX512 && v3   ? "avx2"
            : o->isa[0] == LM_ISA_AVX2 && v4   ? "avx512"
            : o->isa[0] == LM_ISA_AVX2         ? "sse4.2"
                                               : "none";
  if (o->nisa == 1 && strcmp(cross, "none") != 0) {
    if (lm_isa_parse(cross, &o->isa[1], &err) != LM_OK)
      return cli_usage_error(usage, "evaluate", "--cross: %s", err.msg);
    if (!lm_isa_runnable(o->isa[1]) || o->isa[1] == o->isa[0])
      return cli_usage_error(usage, "evaluate",
                             "--cross: %s is not another runnable target",
                             cross);
    o->ncross = 1;
  }
  if (o->profile && o->nisa != 1)
    return cli_usage_error(usage, "evaluate",
                           "--profile needs exactly one --isa target");
  return LM_OK;
}

/* --list: one line per case, "ID RxC SPLIT KERNEL-PATH". */
static void list_cases(const lm_cases *cs) {
  for (int i = 0; i < cs->n; i++)
    printf("%s %lldx%lld %s %s\n", cs->c[i].id, (long long)cs->c[i].R,
           (long long)cs->c[i].C, cs->c[i].split ? cs->c[i].split : "-",
           cs->c[i].kernel);
}

/* ---- the pipeline ---------------------------------------------------------------- */

int cmd_evaluate(int argc, char **argv) {
  eval_cli a;
  int r = parse_opts(argc, argv, &a);
  if (r != LM_OK)
    return r < 0 ? LM_OK : r;
  lm_error err = {0};
  lm_cases cs = {0};
  lm_profile *prof[MAX_ISAS] = {0};
  double calib_s[MAX_ISAS] = {0}, t0 = cli_now_s();
  Outcome oc[MAX_ISAS];
  memset(oc, 0, sizeof oc);
  int failures = 0;
  lm_status st = lm_cases_load(a.cases, &cs, &err);                      /* cases     */
  if (st == LM_OK)
    st = lm_cases_shard(&cs, a.shard_i, a.shard_n, &err);
  if (st == LM_OK && a.list) {
    list_cases(&cs);
    lm_cases_free(&cs);
    return LM_OK;
  }
  if (st == LM_OK && mkdir(a.out, 0777) != 0 && errno != EEXIST)
    st = lm_error_set(&err, LM_ESYS, "%s: cannot create: %s", a.out,
                      strerror(errno));
  int nprof = a.nisa + a.ncross;
  for (int i = 0; i < nprof && st == LM_OK; i++)                         /* calibrate */
    st = calibrated(i == 0 ? a.profile : NULL, a.isa[i], a.quick, &prof[i],
                    &calib_s[i], &err);
  for (int i = 0; i < a.nisa && st == LM_OK; i++) {                      /* evaluate  */
    int j = (i + 1) % nprof; /* the other target whose profile plans i */
    st = evaluate_isa(&a, &cs, a.isa[i], nprof > 1 ? prof[j] : NULL,
                      a.isa[j], prof[i], calib_s[i], &oc[i], &err);
    failures += oc[i].failures;
  }
  if (st == LM_OK)
    st = summary(&a, oc, cli_now_s() - t0, &err);                        /* report    */
  if (st == LM_OK)
    printf("report    %s/report.md (%.0f s)\n", a.out, cli_now_s() - t0);
  else
    fprintf(stderr, "lanemap evaluate: %s\n", err.msg);
  for (int i = 0; i < MAX_ISAS; i++)
    lm_profile_free(prof[i]);
  lm_cases_free(&cs);
  if (st == LM_OK && failures)
    return LM_EFAIL;
  return st;
}
