/* lanemap learn: train the learned correction of a profile on evaluation
 * records of training cases, and cross-validate it (lm_learn,
 * heldout/learn.c; docs/learned.md). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lanemap/cases.h"
#include "lanemap/heldout.h"
#include "lanemap/profile.h"

static const char usage[] =
    "usage: lanemap learn --profile P [-o FILE] [--rounds N] [--depth N]\n"
    "                     [--eta X] [--calibration-rows] RECORDS...\n"
    "  Train the learned correction of profile P on records of `lanemap\n"
    "  evaluate` runs over training cases (OUT/ISA/records.jsonl of the\n"
    "  suite and its validation shapes; a held-out case is refused), and\n"
    "  cross-validate it leaving one kernel out at a time: each model's\n"
    "  pick per case against the measured best.\n"
    "  -o FILE      the trained model (default learned.json), written\n"
    "               atomically; `lanemap evaluate --profile P --learned\n"
    "               FILE` reports its plan beside the analytic one\n"
    "  --rounds N   boosting rounds (default 100)\n"
    "  --depth N    tree depth (default 6)\n"
    "  --eta X      learning rate in (0, 1] (default 0.3)\n"
    "  --calibration-rows\n"
    "               P's own calibration samples are rows too (each benchmark\n"
    "               source and shape timed under several variants is one\n"
    "               case, trained on in every fold, never scored); off by\n"
    "               default, which cross-validation chose\n"
    "exit codes: 0 ok, 2 bad input, 3 I/O\n";

/* The bundled held-out lists' (kernel file, R, C), kernel paths resolved
 * once (set 1 and set 2, where they are found).  Training on one of them
 * would make that set's figures not blind. */
typedef struct Held {
  char path[PATH_MAX];
  int64_t R, C;
} Held;

static int held_load(const char *list, Held **out, int n) {
  lm_cases cs = {0};
  lm_error ignore = {0};
  if (lm_cases_load(cli_data_path(list), &cs, &ignore) != LM_OK)
    return n;
  Held *h = realloc(*out, sizeof *h * (size_t)(n + cs.n));
  if (h) {
    *out = h;
    for (int i = 0; i < cs.n; i++)
      if (realpath(cs.c[i].kernel, h[n].path))
        h[n].R = cs.c[i].R, h[n].C = cs.c[i].C, n++;
  }
  lm_cases_free(&cs);
  return n;
}

static int held_out(const lm_eval_case *c, const Held *h, int nh) {
  char a[PATH_MAX];
  if (!realpath(c->kernel, a))
    return 0;
  for (int i = 0; i < nh; i++)
    if (h[i].R == c->R && h[i].C == c->C && strcmp(h[i].path, a) == 0)
      return 1;
  return 0;
}

/* The cases of every records file, appended to *cases. */
static lm_status read_cases(char **files, int nfiles, lm_eval_case **cases,
                            int *n, lm_error *err) {
  lm_status st = LM_OK;
  for (int f = 0; f < nfiles && st == LM_OK; f++) {
    lm_records rs = {0};
    lm_eval_case *got = NULL;
    int ngot = 0, incomplete = 0;
    st = lm_records_read(files[f], &rs, err);
    if (st == LM_OK)
      st = lm_eval_cases_from_records(&rs, &got, &ngot, &incomplete, err);
    lm_records_free(&rs);
    if (st == LM_OK && ngot == 0)
      st = lm_error_set(err, LM_EINPUT, "%s: no complete case", files[f]);
    lm_eval_case *all = NULL;
    if (st == LM_OK &&
        !(all = realloc(*cases, sizeof *all * (size_t)(*n + ngot))))
      st = lm_error_set(err, LM_ESYS, "out of memory");
    if (st == LM_OK) {
      memcpy(all + *n, got, sizeof *got * (size_t)ngot);
      *cases = all;
      *n += ngot;
      ngot = 0;
    }
    for (int i = 0; i < ngot; i++)
      lm_eval_case_free(&got[i]);
    free(got);
  }
  return st;
}

static void print(const lm_learn_result *r) {
  printf("%-16s %6s %6s %10s %10s %9s %9s\n", "left out", "cases", "rows",
         "analytic", "learned", "rms(an.)", "rms(le.)");
  for (int i = 0; i < r->nfolds; i++) {
    const lm_learn_fold *f = &r->folds[i];
    printf("%-16s %6d %6d %9.1f%% %9.1f%% %9.3f %9.3f\n", f->kernel, f->cases,
           f->rows, 100 * f->geo_analytic, 100 * f->geo_learned,
           f->rms_analytic, f->rms_learned);
  }
  printf("%-16s %6d %6d %9.1f%% %9.1f%% %9.3f %9.3f\n", "all",
         r->ncases - r->calib_cases, r->rows - r->calib_rows,
         100 * r->cv_geo_analytic, 100 * r->cv_geo_learned,
         r->cv_rms_analytic, r->cv_rms_learned);
  if (r->calib_cases)
    printf("trained in every fold also on %d calibration cases (%d rows) of "
           "the profile, never scored\n",
           r->calib_cases, r->calib_rows);
  if (r->skipped_ragged)
    printf("%d cases of kernels with per-row lengths left out\n",
           r->skipped_ragged);
  if (r->skipped_noisy)
    printf("%d cases measured under interference left out\n", r->skipped_noisy);
  printf("by leave-one-kernel-out cross-validation, the %s model picks "
         "better (geomean top-1 regret %.1f%% against %.1f%%)\n",
         r->learned_better ? "learned" : "analytic",
         100 * (r->learned_better ? r->cv_geo_learned : r->cv_geo_analytic),
         100 * (r->learned_better ? r->cv_geo_analytic : r->cv_geo_learned));
}

int cmd_learn(int argc, char **argv) {
  lm_learn_opts o;
  lm_learn_defaults(&o);
  const char *profile = NULL, *out = "learned.json", *v = NULL;
  char **files = calloc((size_t)argc + 1, sizeof *files);
  int nfiles = 0, r;
  lm_error err = {0};
  if (!files)
    return LM_ESYS;
  for (int i = 1; i < argc; i++) {
    uint64_t u = 0;
    if (cli_arg_is_help(argv[i])) {
      fputs(usage, stdout);
      free(files);
      return 0;
    } else if ((r = cli_arg_value(argc, argv, &i, "--profile", &v))) {
      profile = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "-o", &v))) {
      out = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "--rounds", &v))) {
      if (r > 0 && cli_parse_u64("--rounds", v, 100000, &u, &err) == LM_OK &&
          u == 0)
        lm_error_set(&err, LM_EINPUT, "--rounds: at least 1");
      o.model.rounds = (int)u;
    } else if ((r = cli_arg_value(argc, argv, &i, "--depth", &v))) {
      if (r > 0 && cli_parse_u64("--depth", v, 32, &u, &err) == LM_OK && u == 0)
        lm_error_set(&err, LM_EINPUT, "--depth: at least 1");
      o.model.max_depth = (int)u;
    } else if ((r = cli_arg_value(argc, argv, &i, "--eta", &v))) {
      if (r > 0)
        cli_parse_nonneg("--eta", v, &o.model.eta, 0, &err);
    } else if (strcmp(argv[i], "--calibration-rows") == 0) {
      o.calib = 1;
      r = 1;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      free(files);
      return cli_usage_error(usage, "learn", "unknown option %s", argv[i]);
    } else {
      files[nfiles++] = argv[i];
      r = 1;
    }
    if (r < 0 || err.status != LM_OK) {
      free(files);
      return r < 0 ? LM_EINPUT
                   : cli_usage_error(usage, "learn", "%s", err.msg);
    }
  }
  if (!profile || nfiles == 0) {
    free(files);
    return cli_usage_error(usage, "learn", "%s",
                           profile ? "no records given" : "--profile is required");
  }
  lm_profile *prof = NULL;
  lm_eval_case *cases = NULL;
  int n = 0;
  lm_learn_result res = {0};
  Held *held = NULL;
  int nheld = 0;
  lm_status st = lm_learned_opts_check(&o.model, &err);
  if (st == LM_OK)
    st = lm_profile_load(profile, &prof, NULL, &err);
  if (st == LM_OK)
    st = read_cases(files, nfiles, &cases, &n, &err);
  if (st == LM_OK) {
    nheld = held_load("heldout/cases.json", &held, nheld);
    nheld = held_load("heldout/set2/cases.json", &held, nheld);
  }
  for (int i = 0; i < n && st == LM_OK; i++)
    if (held_out(&cases[i], held, nheld))
      st = lm_error_set(&err, LM_EINPUT,
                        "case %s (%s at %lldx%lld) is a held-out case: train "
                        "on the suite and validation cases only",
                        cases[i].id, cases[i].kernel, (long long)cases[i].R,
                        (long long)cases[i].C);
  o.profile = prof;
  if (st == LM_OK)
    st = lm_learn(&o, cases, n, &res, &err);
  if (st == LM_OK)
    st = lm_learned_save(res.model, out, &err);
  if (st == LM_OK) {
    print(&res);
    printf("wrote %s (%d rows, %d cases)\n", out, res.rows, res.ncases);
  } else {
    fprintf(stderr, "lanemap learn: %s\n", err.msg);
  }
  lm_learn_result_free(&res);
  for (int i = 0; i < n; i++)
    lm_eval_case_free(&cases[i]);
  free(cases);
  free(held);
  lm_profile_free(prof);
  free(files);
  return st;
}
