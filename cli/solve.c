/* lanemap solve: price every variant of every kernel of a workload at
 * every bucket, choose the variants to compile and each bucket's variant
 * within the budgets (solver/), and write the plan. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/profiles.h"
#include "cli/commands.h"
#include "lanemap/calibrate.h"
#include "lanemap/plan.h"

/* the default share, as the header defines it */
#define STR_(x) #x
#define STR(x) STR_(x)

static const char usage[] =
    "usage: lanemap solve WORKLOAD -o PLAN [--profile P | --default-profile]\n"
    "                    [--accept-noisy] [--threshold] [--robust | --point | --settle A]\n"
    "                    [--time-limit S] [--mip-gap G] [--cache-dir D]\n"
    "                    [--method auto|joint] [--presolve] [--no-prune]\n"
    "                    [--json] [--verbose]\n"
    "  Predict every (kernel, bucket, variant), choose what to compile and which\n"
    "  variant each bucket runs, and write the plan (lanemap.plan/1).\n"
    "  --profile P        price with this profile (default: the cached profile of\n"
    "                     this machine for each ISA of the workload).  With\n"
    "                     several ISA targets, give one --profile per target:\n"
    "                     each prices the target it was calibrated for, and a\n"
    "                     target without one takes its cached profile\n"
    "  --default-profile  the uncalibrated named defaults\n"
    "  --cache-dir D      the profile cache (also LANEMAP_CACHE_DIR)\n"
    "  --accept-noisy     use a profile whose calibration timing was noisy (else\n"
    "                     refused, exit 1; also LANEMAP_ACCEPT_NOISY=1)\n"
    "  --threshold        dispatch by R thresholds (contiguous runs per variant)\n"
    "  --robust           minimise the worst case over the bootstrap profiles\n"
    "  --settle A         decide near ties by a fixed rule (the fewest chunks per\n"
    "                     worker, then the named defaults): a variant the\n"
    "                     bootstrap finds at least as fast as the point best in\n"
    "                     a share >= A of its resamples is a near tie (default\n"
    "                     " STR(LM_SETTLE_ALPHA) "; docs/solver.md)\n"
    "  --point            decide on the point predictions alone (no settling)\n"
    "  --time-limit S     seconds for the whole solve (default 10)\n"
    "  --mip-gap G        relative gap at which a MIP stops (default 0)\n"
    "  --method joint     one MIP over all kernels (reference formulation)\n"
    "  --presolve         GLPK's LP presolver on the root relaxation (it does\n"
    "                     not stop at the time limit; --no-presolve: off, the\n"
    "                     default)\n"
    "  --no-prune         keep dominated variants\n"
    "  --json             the report as one JSON object on stdout\n"
    "  --verbose          GLPK's terminal output\n"
    "exit codes: 0 plan written, 1 no plan within the time limit or a noisy\n"
    "            profile refused, 2 bad input or budgets no plan meets, 3 I/O\n";

int cmd_solve(int argc, char **argv) {
  const char *file = NULL, *outp = NULL;
  const char *profpath[LM_ISA__COUNT]; /* --profile, once per ISA target */
  int nprof = 0;
  int dflt = 0, json = 0, accept = 0, settle = 1;
  double alpha = LM_SETTLE_ALPHA;
  lm_error err = {0};
  lm_solve_opts so;
  lm_solve_defaults(&so);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val;
    int r = 0;
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return LM_OK;
    }
    if ((r = cli_arg_value(argc, argv, &i, "-o", &val)) ||
        (r = cli_arg_value(argc, argv, &i, "--output", &val)))
      outp = val;
    else if ((r = cli_arg_profile(argc, argv, &i, profpath, &nprof, usage, "solve")))
      ;
    else if ((r = cli_arg_cache_dir(argc, argv, &i)))
      ;
    else if ((r = cli_arg_value(argc, argv, &i, "--time-limit", &val))) {
      if (r > 0 && cli_parse_nonneg("--time-limit", val, &so.time_limit, 0, &err) != LM_OK)
        return cli_usage_error(usage, "solve", "%s", err.msg);
    } else if ((r = cli_arg_value(argc, argv, &i, "--mip-gap", &val))) {
      if (r > 0 && cli_parse_nonneg("--mip-gap", val, &so.mip_gap, 1, &err) != LM_OK)
        return cli_usage_error(usage, "solve", "%s", err.msg);
    } else if ((r = cli_arg_value(argc, argv, &i, "--method", &val))) {
      if (r > 0 && strcmp(val, "auto") == 0)
        so.method = LM_SOLVE_AUTO;
      else if (r > 0 && strcmp(val, "joint") == 0)
        so.method = LM_SOLVE_JOINT_MIP;
      else if (r > 0)
        return cli_usage_error(usage, "solve", "--method: expected auto or joint, got '%s'",
                               val);
    } else if (cli_arg_flag(a, "--default-profile"))
      dflt = r = 1;
    else if (cli_arg_flag(a, "--accept-noisy"))
      accept = r = 1;
    else if (cli_arg_flag(a, "--threshold"))
      so.threshold = r = 1;
    else if (cli_arg_flag(a, "--robust"))
      so.robust = r = 1;
    else if (cli_arg_flag(a, "--point"))
      settle = 0, r = 1;
    else if ((r = cli_arg_value(argc, argv, &i, "--settle", &val))) {
      if (r > 0 && (cli_parse_nonneg("--settle", val, &alpha, 0, &err) != LM_OK || alpha > 1))
        return cli_usage_error(usage, "solve", "--settle: expected a share in (0, 1], got '%s'",
                               val);
    }
    else if (cli_arg_flag(a, "--no-presolve"))
      so.presolve = 0, r = 1;
    else if (cli_arg_flag(a, "--presolve"))
      so.presolve = 1, r = 1;
    else if (cli_arg_flag(a, "--no-prune"))
      so.prune = 0, r = 1;
    else if (cli_arg_flag(a, "--json"))
      json = r = 1;
    else if (cli_arg_flag(a, "--verbose"))
      so.verbose = r = 1;
    else if (a[0] == '-' && a[1])
      return cli_usage_error(usage, "solve", "unknown option '%s'", a);
    else if (!file)
      file = a, r = 1;
    else
      return cli_usage_error(usage, "solve", "more than one workload file");
    if (r < 0)
      return LM_EINPUT;
  }
  if (!file)
    return cli_usage_error(usage, "solve", "no workload file given");
  if (!outp)
    return cli_usage_error(usage, "solve", "-o PLAN is required");
  if (nprof && dflt)
    return cli_usage_error(usage, "solve", "--profile and --default-profile exclude each other");

  lm_workload *w = NULL;
  lm_profile *owned[LM_ISA__COUNT] = {0};
  const lm_profile *profs[LM_ISA__COUNT] = {0};
  lm_plan_problem pp = {0};
  lm_solve_result res = {0};
  int have_res = 0;
  lm_plan *plan = NULL;
  lm_status s = lm_workload_load(file, &w, &err);
  if (s != LM_OK)
    goto done;
  s = cli_workload_profiles("solve", w, profpath, nprof, dflt, accept, owned,
                              &err);
  for (int i = 0; w && i < w->nisa; i++)
    profs[i] = owned[i];
  if (s != LM_OK)
    goto done;
  lm_plan_build_opts bo = {so.robust, settle};
  if ((s = lm_plan_problem_build(w, profs, &bo, &pp, &err)) != LM_OK ||
      (s = lm_plan_problem_settle(&pp, alpha, &err)) != LM_OK)
    goto done;
  int nb = 0, nv = 0;
  for (int k = 0; k < w->nkernels; k++)
    nb += pp.k[k].nbuckets, nv += pp.k[k].nvariants;
  if (!json)
    printf("workload %s: %d kernels, %d buckets, %d candidate variants, %d cost "
           "scenario%s%s\n",
           file, w->nkernels, nb, nv, pp.p.nscenarios, pp.p.nscenarios > 1 ? "s" : "",
           pp.unpredictable ? " (some cells unpredictable: not allowed)" : "");
  if (!json && pp.settle)
    printf("near ties: %d of %d buckets have more than one variant within the "
           "bootstrap's reach (the plan lists them as unsure); %d settle on "
           "another than the point best\n",
           pp.ties, nb, pp.settled);
  s = lm_solve(&pp.p, &so, &res, &err);
  if (s != LM_OK) {
    if (s == LM_EINPUT) {
      lm_error e = err;
      int n = snprintf(err.msg, sizeof err.msg, "%s; kernels:", e.msg);
      for (int k = 0; k < w->nkernels && n < (int)sizeof err.msg - 80; k++)
        n += snprintf(err.msg + n, sizeof err.msg - (size_t)n, " %d = %s%s", k,
                      w->kernels[k].k->name, k + 1 < w->nkernels ? "," : "");
    }
    goto done;
  }
  have_res = 1;
  if ((s = lm_plan_from_result(w, profs, &pp, &so, &res, &plan, &err)) != LM_OK)
    goto done;
  if ((s = lm_plan_save(plan, outp, &err)) != LM_OK)
    goto done;
  int ncomp = 0;
  for (int k = 0; k < plan->nkernels; k++)
    ncomp += plan->kernels[k].nvariants;
  double excess = isfinite(res.greedy_objective) && res.objective > 0
                      ? 100 * (res.greedy_objective / res.objective - 1)
                      : INFINITY;
  if (json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "schema", "lanemap.solve/1");
    cJSON_AddStringToObject(j, "workload", file);
    cJSON_AddStringToObject(j, "plan", outp);
    cJSON_AddStringToObject(j, "status", lm_solve_status_name(res.status));
    cJSON_AddNumberToObject(j, "time_s", res.time_s);
    cJSON_AddNumberToObject(j, "objective_ns", res.objective);
    if (isfinite(res.greedy_objective))
      cJSON_AddNumberToObject(j, "greedy_objective_ns", res.greedy_objective);
    else
      cJSON_AddNullToObject(j, "greedy_objective_ns");
    if (isfinite(res.gap))
      cJSON_AddNumberToObject(j, "gap", res.gap);
    else
      cJSON_AddNullToObject(j, "gap");
    if (isfinite(res.bound))
      cJSON_AddNumberToObject(j, "bound_ns", res.bound);
    else
      cJSON_AddNullToObject(j, "bound_ns");
    cJSON_AddNumberToObject(j, "kernels", w->nkernels);
    cJSON_AddNumberToObject(j, "buckets", nb);
    cJSON_AddNumberToObject(j, "candidates", nv);
    cJSON_AddNumberToObject(j, "compiled", ncomp);
    cJSON_AddNumberToObject(j, "compile_total_ms", res.compile_total);
    cJSON_AddNumberToObject(j, "mip_solves", res.mip_solves);
    cJSON_AddNumberToObject(j, "nodes", (double)res.nodes);
    cJSON_AddNumberToObject(j, "pruned", res.pruned);
    cJSON_AddBoolToObject(j, "settle", pp.settle);
    cJSON_AddNumberToObject(j, "near_ties", pp.ties);
    cJSON_AddNumberToObject(j, "settled", pp.settled);
    char *t = cJSON_PrintUnformatted(j);
    puts(t);
    free(t);
    cJSON_Delete(j);
  } else {
    if (res.status == LM_SOLVE_OPTIMAL)
      printf("status: optimal (gap 0)\n");
    else if (res.status == LM_SOLVE_FEASIBLE)
      printf("status: feasible, MIP gap %.4g%% (bound %.6g ns)\n", 100 * res.gap,
             res.bound);
    else if (isfinite(res.gap))
      printf("status: time limit hit after %.3g s: the plan is the incumbent, gap "
             "%.4g%% (bound %.6g ns)\n",
             so.time_limit, 100 * res.gap, res.bound);
    else
      printf("status: time limit hit after %.3g s: the plan is the incumbent, no "
             "bound proven\n",
             so.time_limit);
    printf("solve time %.3g ms (%d MIPs, %ld nodes, %d variants pruned)\n", 1e3 * res.time_s,
           res.mip_solves, res.nodes, res.pruned);
    printf("objective %.6g (sum of weight x predicted ns); greedy %.6g (%+.2f%%)\n", res.objective,
           res.greedy_objective, excess);
    printf("compile: %d variants, %.0f ms predicted%s\n", ncomp, res.compile_total,
           w->compile_budget_variants >= 0 ? " (budget in variants: 1 per variant)" : "");
    for (int k = 0; k < plan->nkernels; k++) {
      const lm_plan_kernel *pk = &plan->kernels[k];
      printf("  %s: %d bucket%s -> %d variant%s\n", pk->name, pk->nbuckets,
             pk->nbuckets == 1 ? "" : "s", pk->nvariants, pk->nvariants == 1 ? "" : "s");
      for (int v = 0; v < pk->nvariants; v++) {
        int cnt = 0;
        for (int b = 0; b < pk->nbuckets; b++)
          cnt += pk->buckets[b].variant == v;
        printf("    [%d] %-60s %d bucket%s\n", v, pk->variants[v], cnt, cnt == 1 ? "" : "s");
      }
    }
    printf("wrote %s\n", outp);
  }
done:
  if (s != LM_OK)
    fprintf(stderr, "lanemap solve: %s\n", err.msg);
  lm_plan_free(plan);
  if (have_res)
    lm_solve_result_free(&res);
  lm_plan_problem_free(&pp);
  for (int i = 0; i < LM_ISA__COUNT; i++)
    lm_profile_free(owned[i]);
  lm_workload_free(w);
  return s;
}
