/* lanemap evaluate: the main job, lm_evaluate (heldout/evaluate.c) with
 * its options from the command line and its progress on a bar. */
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "lanemap/calibrate.h"
#include "lanemap/cases.h"
#include "lanemap/heldout.h"

static const char usage[] =
    "usage: lanemap evaluate [--quick] [--cases FILE] [--out DIR] [--isa I,J]\n"
    "                        [--cross J] [--shard i/N] [--fresh] [--seed N]\n"
    "                        [--profile P] [--cache-dir D] [--accept-noisy]\n"
    "                        [--all-splits] [--fp strict|relaxed] [--list]\n"
    "                        [--learned M]\n"
    "       lanemap evaluate --deploy [--spec F] [--budgets K,...] [--shapes N]\n"
    "                        [--quick] [--out DIR] [--isa I] [--profile P] ...\n"
    "  Calibrate (or take the cached profile), predict, solve, compile and\n"
    "  measure every legal variant of every case, then report the regret of\n"
    "  the plan and of the baseline policies: DIR/report.md, DIR/ISA/\n"
    "  {report.md,records.jsonl,workload.json,plan*.json,*.png}.\n"
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
    "  --all-splits screen every split and math provider of every code\n"
    "               variant (default: the dynK splits of the 3 fastest\n"
    "               parallel code variants and the other providers of the 3\n"
    "               fastest mappings; docs/evaluation.md, Split pruning)\n"
    "  --fp M       floating-point mode: strict (default) or relaxed, the\n"
    "               fp=relaxed variants of every kernel it changes, judged in\n"
    "               a run of their own (docs/language.md); relaxed writes to\n"
    "               lanemap-evaluate-relaxed unless --out is given\n"
    "  --profile P  the calibrated profile to use (one ISA target only)\n"
    "  --learned M  a learned correction of that profile (lanemap learn):\n"
    "               the plan-learned policy beside the plan\n"
    "  --cache-dir D  the profile cache (also LANEMAP_CACHE_DIR), shared by\n"
    "               the nodes of a cluster: one profile per machine type\n"
    "  --accept-noisy  exit 0 even when cases were measured under\n"
    "               interference, and take a cached profile calibration\n"
    "               flagged noisy (also env LANEMAP_ACCEPT_NOISY=1)\n"
    "  --deploy     the deployment evaluation instead: plans under compile\n"
    "               budgets, judged on held-out shapes between the buckets\n"
    "               (DIR/deploy.md; docs/evaluation.md, Deployment)\n"
    "  --spec F     its deployment spec (default: the bundled\n"
    "               heldout/deploy.json)\n"
    "  --budgets L  variants per kernel, comma-separated, 0 or all for no\n"
    "               cap (default 1,2,4,all)\n"
    "  --shapes N   held-out shapes per kernel (default: the spec's)\n"
    "exit codes: 0 ok, 1 a variant failed the oracle check or cases were\n"
    "measured under interference, 2 bad input, 3 system error\n";

#define MAX_ISAS LM_EVALUATE_MAX_ISAS

typedef struct eval_cli {
  lm_evaluate_options o;
  int list;
  int deploy; /* --deploy and its options */
  const char *spec;
  int budgets[LM_DEPLOY_MAX_BUDGETS], nbudgets, shapes;
  int given_cases, given_shard, given_cross, given_out, given_fp;
} eval_cli;

static void print_stats(const lm_evaluate_target *t) {
  printf("%s, machine type %s (%s%s)\n%-16s %7s %7s %7s %7s %7s %6s\n",
         lm_isa_name(t->isa), t->fingerprint, t->foreign ? "" : "here: ",
         t->node, "policy", "score", "geomean", "median", "p90", "max",
         "<=3%");
  for (int p = 0; p < LM_POLICY__COUNT; p++) {
    const lm_regret_stats *s = &t->stats[p];
    if (s->n > 0)
      printf("%-16s %7.3f %6.1f%% %6.1f%% %6.1f%% %6.1f%% %5.0f%%\n",
             lm_policy_name((lm_policy)p), s->score, 100 * s->geomean,
             100 * s->median, 100 * s->p90, 100 * s->max, 100 * s->within);
  }
  const lm_regret_interval *ci = &t->plan_ci;
  if (ci->n > 0)
    printf("plan 95%% intervals (bootstrap over timing rounds): geomean "
           "[%.1f%%, %.1f%%], p90 [%.1f%%, %.1f%%], max [%.1f%%, %.1f%%]\n",
           100 * ci->geomean[0], 100 * ci->geomean[1], 100 * ci->p90[0],
           100 * ci->p90[1], 100 * ci->max[0], 100 * ci->max[1]);
  if (t->bias_n > 0)
    printf("screening best against confirmed best: %+.1f%% (geomean over %d "
           "cases)\n",
           100 * t->bias, t->bias_n);
  printf("verdicts: %d quiet (%d of them unstable: spread only), %d noisy "
         "after re-measuring, %d unknown; %d contended, left out\n",
         t->quiet, t->unstable, t->noisy, t->unknown, t->contended);
  if (t->dispatched > 0)
    printf("plan picks launched through the plan's dispatch: %d cases, median "
           "time %.3f of the direct launch\n",
           t->dispatched, t->dispatch_ratio);
}

/* A participants' skew named on a noisy verdict's line: a fifth, where
 * static splits lose 10% and more to dynamic ones (docs/runtime.md). */
#define SKEW_NOTED 0.2

/* The last line: whether the figures can be trusted.  1 if they cannot. */
static int print_verdict(const lm_evaluate_result *res) {
  char cpus[96] = "unknown";
  if (res->noise.other_here == res->noise.other_here) /* not NAN */
    snprintf(cpus, sizeof cpus, "%.2f of the timing core, %.2f CPU in all",
             res->noise.other_here, res->noise.other_cpus);
  else if (res->noise.other_cpus == res->noise.other_cpus)
    snprintf(cpus, sizeof cpus, "%.2f CPU", res->noise.other_cpus);
  int unknown = 0;
  for (int i = 0; i < res->ntargets; i++)
    unknown += res->target[i].unknown;
  if (res->noisy == 0 && res->contended == 0) {
    if (unknown > 0)
      printf("quiet: %d of %d cases were measured without interference "
             "(other processes at most %s), %d from older records without a "
             "verdict\n",
             res->cases - unknown, res->cases, cpus, unknown);
    else
      printf("quiet: the %d cases were measured without interference (other "
             "processes at most %s)\n",
             res->cases, cpus);
    return 0;
  }
  char left[64] = "";
  if (res->contended > 0)
    snprintf(left, sizeof left, ", %d left out with a contended plan pick",
             res->contended);
  char who[160] = "";
  if (res->busiest.pid > 0 && res->busiest.cpus >= 0.01)
    snprintf(who, sizeof who, "; the busiest: pid %d (%s), %.2f CPU",
             res->busiest.pid, res->busiest.comm, res->busiest.cpus);
  /* cores of unequal speed (docs/runtime.md, "Unequal participants") */
  double sk = fmax(isfinite(res->skew_before) ? res->skew_before : 0,
                   isfinite(res->skew_after) ? res->skew_after : 0);
  size_t ww = strlen(who);
  if (sk >= SKEW_NOTED && ww < sizeof who)
    snprintf(who + ww, sizeof who - ww, "; the cores' speeds differed by %.0f%%",
             100 * sk);
  /* the measures that flagged them, e.g. "steal, discord; " */
  char by[96] = "";
  size_t w = 0;
  for (unsigned b = 1; (b & LM_NOISE_ALL) && w < sizeof by; b <<= 1)
    if (b & res->noise.reasons & LM_NOISE_INTERFERENCE)
      w += (size_t)snprintf(by + w, sizeof by - w, "%s%s", w ? ", " : "",
                            lm_noise_reason_name(b));
  if (w > 0 && w < sizeof by - 2)
    snprintf(by + w, sizeof by - w, "; ");
  printf("noisy: %d of %d cases measured under interference%s (%sother "
         "processes %s%s); regret figures are not trustworthy, rerun on a "
         "quiet machine\n",
         res->noisy, res->cases, left, by, cpus, who);
  return 1;
}

/* ---- options ------------------------------------------------------------ */

static int parse_isas(const char *text, lm_evaluate_options *o, lm_error *err) {
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

static int parse_shard(const char *text, lm_evaluate_options *o,
                       lm_error *err) {
  const char *slash = strchr(text, '/');
  char first[32];
  uint64_t i = 0, n = 0;
  if (!slash || (size_t)(slash - text) >= sizeof first)
    return lm_error_set(err, LM_EINPUT,
                        "--shard: expected i/N with 0 <= i < N, got '%s'",
                        text);
  memcpy(first, text, (size_t)(slash - text));
  first[slash - text] = 0;
  if (cli_parse_u64("--shard i", first, INT_MAX, &i, err) != LM_OK ||
      cli_parse_u64("--shard N", slash + 1, INT_MAX, &n, err) != LM_OK)
    return LM_EINPUT;
  if (n < 1 || i >= n)
    return lm_error_set(err, LM_EINPUT,
                        "--shard: expected i/N with 0 <= i < N, got '%s'",
                        text);
  o->shard_i = (int)i;
  o->shard_n = (int)n;
  return LM_OK;
}

static int parse_opts(int argc, char **argv, eval_cli *a) {
  memset(a, 0, sizeof *a);
  lm_evaluate_options *o = &a->o;
  lm_evaluate_options_defaults(o);
  const char *env = getenv("LANEMAP_HELDOUT");
  o->cases = env && env[0] ? env : cli_data_path("heldout/cases.json");
  o->out = "lanemap-evaluate";
  o->seed = CLI_SEED_DEFAULT;
  o->accept_noisy = lm_profile_accept_noisy(0);
  const char *cross = NULL;
  lm_error err = {0};
  for (int i = 1; i < argc; i++) {
    const char *s = argv[i], *v = NULL;
    int r = 0;
    if (cli_arg_is_help(s)) {
      fputs(usage, stdout);
      return -1;
    } else if (cli_arg_flag(s, "--quick")) {
      o->quick = 1;
    } else if (cli_arg_flag(s, "--fresh")) {
      o->fresh = 1;
    } else if (cli_arg_flag(s, "--all-splits")) {
      o->all_splits = 1;
    } else if (cli_arg_flag(s, "--list")) {
      a->list = 1;
    } else if (cli_arg_flag(s, "--deploy")) {
      a->deploy = 1;
    } else if ((r = cli_arg_value(argc, argv, &i, "--spec", &v))) {
      a->spec = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "--budgets", &v))) {
      if (r > 0 && cli_parse_budgets(v, a->budgets, &a->nbudgets, &err))
        return cli_usage_error(usage, "evaluate", "%s", err.msg);
    } else if ((r = cli_arg_value(argc, argv, &i, "--shapes", &v))) {
      uint64_t n = 0;
      if (r > 0 && (cli_parse_u64("--shapes", v, 64, &n, &err) || n < 1))
        return cli_usage_error(usage, "evaluate",
                               "--shapes: expected 1 to 64, got '%s'", v);
      a->shapes = (int)n;
    } else if (cli_arg_flag(s, "--accept-noisy")) {
      o->accept_noisy = 1;
    } else if ((r = cli_arg_value(argc, argv, &i, "--cases", &v))) {
      o->cases = v;
      a->given_cases = 1;
    } else if ((r = cli_arg_value(argc, argv, &i, "--out", &v)) ||
               (r = cli_arg_value(argc, argv, &i, "-o", &v))) {
      o->out = v;
      a->given_out = 1;
    } else if ((r = cli_arg_value(argc, argv, &i, "--isa", &v))) {
      if (r > 0 && parse_isas(v, o, &err) != LM_OK)
        return cli_usage_error(usage, "evaluate", "%s", err.msg);
    } else if ((r = cli_arg_value(argc, argv, &i, "--cross", &v))) {
      cross = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "--profile", &v))) {
      o->profile = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "--learned", &v))) {
      o->learned = v;
    } else if ((r = cli_arg_cache_dir(argc, argv, &i))) {
    } else if ((r = cli_arg_value(argc, argv, &i, "--shard", &v))) {
      if (r > 0 && parse_shard(v, o, &err) != LM_OK)
        return cli_usage_error(usage, "evaluate", "%s", err.msg);
      a->given_shard = 1;
    } else if ((r = cli_arg_value(argc, argv, &i, "--seed", &v))) {
      if (r > 0 && cli_parse_u64("--seed", v, CLI_SEED_MAX, &o->seed, &err))
        return cli_usage_error(usage, "evaluate", "%s", err.msg);
    } else if ((r = cli_arg_value(argc, argv, &i, "--fp", &v))) {
      unsigned fps = 0; /* one mode: its bit */
      if (r > 0 && cli_fp_modes(v, 0, &fps, &err) != LM_OK)
        return cli_usage_error(usage, "evaluate", "%s", err.msg);
      if (r > 0)
        o->fp = (lm_fp)lm_fp_lookup(v);
      a->given_fp = 1;
    } else {
      return cli_usage_error(usage, "evaluate", "unexpected argument '%s'", s);
    }
    if (r < 0)
      return LM_EINPUT;
  }
  if (!a->deploy && (a->spec || a->nbudgets || a->shapes))
    return cli_usage_error(usage, "evaluate",
                           "--spec, --budgets and --shapes go with --deploy");
  if (a->deploy && (a->given_cases || a->given_shard || cross || a->list ||
                    o->nisa > 1 || a->given_fp))
    return cli_usage_error(usage, "evaluate",
                           "--deploy takes one --isa target and no --cases, "
                           "--shard, --cross, --list or --fp");
  /* a relaxed run keeps its records apart: in one folder, a run of the
   * other mode would measure every case again and replace them */
  if (o->fp == LM_FP_RELAXED && !a->given_out)
    o->out = "lanemap-evaluate-relaxed";
  if (cross && o->nisa > 1)
    return cli_usage_error(usage, "evaluate",
                           "--cross applies to one --isa target only");
  if (cross && strcmp(cross, "none") == 0) {
    o->cross = 0;
  } else if (cross) {
    if (lm_isa_parse(cross, &o->cross_isa, &err) != LM_OK)
      return cli_usage_error(usage, "evaluate", "--cross: %s", err.msg);
    if (!lm_isa_runnable(o->cross_isa) ||
        (o->nisa == 1 && o->cross_isa == o->isa[0]))
      return cli_usage_error(usage, "evaluate",
                             "--cross: %s is not another runnable target",
                             cross);
    o->cross = 1;
  }
  if (o->profile && o->nisa > 1)
    return cli_usage_error(usage, "evaluate",
                           "--profile needs exactly one --isa target");
  return LM_OK;
}

/* --list: one line per case, "ID RxC SPLIT KERNEL-PATH". */
static int list_cases(const lm_evaluate_options *o) {
  lm_cases cs = {0};
  lm_error err = {0};
  lm_status st = lm_cases_load(o->cases, &cs, &err);
  if (st == LM_OK)
    st = lm_cases_shard(&cs, o->shard_i, o->shard_n, &err);
  for (int i = 0; i < cs.n && st == LM_OK; i++)
    printf("%s %lldx%lld %s %s\n", cs.c[i].id, (long long)cs.c[i].R,
           (long long)cs.c[i].C, cs.c[i].split ? cs.c[i].split : "-",
           cs.c[i].kernel);
  if (st != LM_OK)
    fprintf(stderr, "lanemap evaluate: %s\n", err.msg);
  lm_cases_free(&cs);
  return st;
}

int cmd_evaluate(int argc, char **argv) {
  eval_cli a;
  int r = parse_opts(argc, argv, &a);
  if (r != LM_OK)
    return r < 0 ? LM_OK : r;
  if (a.list)
    return list_cases(&a.o);
  if (a.deploy)
    return cli_deploy(&a.o, a.spec ? a.spec : cli_data_path("heldout/deploy.json"),
                      a.budgets, a.nbudgets, a.shapes);
  cli_eval_bar bar = {0};
  a.o.progress = cli_eval_progress;
  a.o.note = cli_eval_note;
  a.o.ctx = &bar;
  lm_evaluate_result res;
  lm_error err = {0};
  lm_status st = lm_evaluate(&a.o, &res, &err);
  if (bar.on)
    cli_progress_end(&bar.bar);
  for (int i = 0; i < res.ntargets && st == LM_OK; i++)
    print_stats(&res.target[i]);
  if (st != LM_OK) {
    fprintf(stderr, "lanemap evaluate: %s\n", err.msg);
    return st;
  }
  printf("report    %s/report.md (%.0f s)%s\n", a.o.out, res.total_s,
         a.o.fp == LM_FP_RELAXED ? ", floating point relaxed (--fp relaxed)" : "");
  if (isfinite(res.skew_before) || isfinite(res.skew_after))
    printf("cores     participants' skew %.2f before measuring, %.2f after\n",
           res.skew_before, res.skew_after);
  int noisy = print_verdict(&res);
  return res.failures || (noisy && !a.o.accept_noisy) ? LM_EFAIL : LM_OK;
}
