/* lanemap tune: measured autotuning of a workload, ending in a plan
 * (lm_tune, docs/tune.md).  Predict every variant of every bucket, measure
 * the model's top K and its near ties, solve on the measured costs, write
 * the plan and append the records. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/profiles.h"
#include "cli/progress.h"
#include "lanemap/tune.h"

static const char usage[] =
    "usage: lanemap tune WORKLOAD -o PLAN [--measure K] [--time-budget S]\n"
    "                    [--records R.jsonl] [--profile P | "
    "--default-profile]\n"
    "                    [--accept-noisy] [--cache-dir D] [--threshold]\n"
    "                    [--samples N] [--sample-ms MS] [--json]\n"
    "  Predict every (kernel, bucket, variant); compile, verify against the\n"
    "  FP64 oracle and time side by side the model's top K per bucket and\n"
    "  every variant it cannot tell from its best (near ties); solve on the\n"
    "  measured costs (predictions, on the measured scale, elsewhere) and\n"
    "  write the plan (lanemap.plan/1).\n"
    "  --measure K        the model's top K per bucket (default 3); 0: only\n"
    "                     the unsure buckets, whose near ties are measured\n"
    "  --time-budget S    stop measuring after S seconds, plan with what was\n"
    "                     measured (default: no budget)\n"
    "  --records R.jsonl  append every measurement; a later run resumes from\n"
    "                     them and measures nothing twice\n"
    "  --profile P, --default-profile, --cache-dir D, --accept-noisy: as for\n"
    "                     lanemap solve; --accept-noisy also exits 0 when a\n"
    "                     bucket was timed under interference\n"
    "  --threshold        dispatch by R thresholds\n"
    "  --samples N        timing rounds per bucket (default 5)\n"
    "  --sample-ms MS     length of one sample (default 10)\n"
    "  --json             the report as one JSON object on stdout\n"
    "exit codes: 0 plan written, 1 a bucket was timed under interference\n"
    "            (the plan is written), 2 bad input, 3 I/O\n";

static void on_progress(void *ctx, int done, int total, const char *what) {
  cli_progress *bar = ctx;
  if (done == 0 || !bar->label)
    cli_progress_start(bar, "tune", total);
  cli_progress_step(bar, done, what ? what : "");
}

/* The report as one object, schema lanemap.tune/1, for pipelines. */
static void print_json(const char *file, const char *plan,
                       const lm_tune_opts *o, const lm_tune_result *r) {
  cJSON *j = cJSON_CreateObject();
  cJSON_AddStringToObject(j, "schema", "lanemap.tune/1");
  cJSON_AddStringToObject(j, "workload", file);
  cJSON_AddStringToObject(j, "plan", plan);
  if (o->records)
    cJSON_AddStringToObject(j, "records", o->records);
  else
    cJSON_AddNullToObject(j, "records");
  cJSON_AddNumberToObject(j, "measure", o->measure);
  cJSON *b = cJSON_AddObjectToObject(j, "buckets");
  cJSON_AddNumberToObject(b, "total", r->buckets);
  cJSON_AddNumberToObject(b, "measured", r->measured_buckets);
  cJSON_AddNumberToObject(b, "resumed", r->resumed_buckets);
  cJSON_AddNumberToObject(b, "skipped", r->skipped_buckets);
  cJSON_AddNumberToObject(b, "sure", r->sure_buckets);
  cJSON_AddNumberToObject(b, "noisy", r->noisy_buckets);
  cJSON *c = cJSON_AddObjectToObject(j, "cells");
  cJSON_AddNumberToObject(c, "candidates", r->candidates);
  cJSON_AddNumberToObject(c, "near_ties", r->unsure);
  cJSON_AddNumberToObject(c, "measured", r->measured);
  cJSON_AddNumberToObject(c, "resumed", r->resumed);
  cJSON_AddNumberToObject(c, "failed", r->failed);
  cJSON *t = cJSON_AddObjectToObject(j, "time_s");
  cJSON_AddNumberToObject(t, "predict", r->predict_s);
  cJSON_AddNumberToObject(t, "compile", r->compile_s);
  cJSON_AddNumberToObject(t, "verify", r->verify_s);
  cJSON_AddNumberToObject(t, "measure", r->measure_s);
  cJSON_AddNumberToObject(t, "solve", r->solve_s);
  cJSON_AddNumberToObject(t, "total", r->total_s);
  cJSON_AddItemToObject(j, "noise", lm_noise_to_json(&r->noise));
  int ncomp = 0;
  for (int k = 0; k < r->plan->nkernels; k++)
    ncomp += r->plan->kernels[k].nvariants;
  cJSON_AddNumberToObject(j, "compiled", ncomp);
  cJSON_AddNumberToObject(j, "objective_ns", r->plan->objective);
  char *text = cJSON_PrintUnformatted(j);
  if (text)
    puts(text);
  free(text);
  cJSON_Delete(j);
}

int cmd_tune(int argc, char **argv) {
  const char *file = NULL, *outp = NULL;
  const char *profpath[LM_ISA__COUNT];
  int nprof = 0, dflt = 0, accept = 0, json = 0;
  lm_error err = {0};
  lm_tune_opts o;
  lm_tune_defaults(&o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val;
    int r = 0;
    double x = 0;
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return LM_OK;
    }
    if ((r = cli_arg_value(argc, argv, &i, "-o", &val)) ||
        (r = cli_arg_value(argc, argv, &i, "--output", &val)))
      outp = val;
    else if ((r = cli_arg_profile(argc, argv, &i, profpath, &nprof, usage,
                                  "tune")))
      ;
    else if ((r = cli_arg_value(argc, argv, &i, "--records", &val)))
      o.records = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--measure", &val))) {
      uint64_t k;
      if (r > 0 && cli_parse_u64("--measure", val, 1000, &k, &err) != LM_OK)
        return cli_usage_error(usage, "tune", "%s", err.msg);
      o.measure = (int)k;
    } else if ((r = cli_arg_value(argc, argv, &i, "--time-budget", &val))) {
      if (r > 0 && cli_parse_nonneg("--time-budget", val, &o.time_budget_s, 1,
                                    &err) != LM_OK)
        return cli_usage_error(usage, "tune", "%s", err.msg);
    } else if ((r = cli_arg_value(argc, argv, &i, "--samples", &val))) {
      uint64_t n;
      if (r > 0 && cli_parse_u64("--samples", val, 1000, &n, &err) != LM_OK)
        return cli_usage_error(usage, "tune", "%s", err.msg);
      o.timing.samples = (int)n;
    } else if ((r = cli_arg_value(argc, argv, &i, "--sample-ms", &val))) {
      if (r > 0 && cli_parse_nonneg("--sample-ms", val, &x, 0, &err) != LM_OK)
        return cli_usage_error(usage, "tune", "%s", err.msg);
      if (r > 0)
        o.timing.sample_ms = x;
    } else if ((r = cli_arg_cache_dir(argc, argv, &i)))
      ;
    else if (cli_arg_flag(a, "--default-profile"))
      dflt = r = 1;
    else if (cli_arg_flag(a, "--accept-noisy"))
      accept = r = 1;
    else if (cli_arg_flag(a, "--json"))
      json = r = 1;
    else if (cli_arg_flag(a, "--threshold"))
      o.solve.threshold = r = 1;
    else if (a[0] == '-' && a[1])
      return cli_usage_error(usage, "tune", "unknown option '%s'", a);
    else if (!file)
      file = a, r = 1;
    else
      return cli_usage_error(usage, "tune", "more than one workload file");
    if (r < 0)
      return LM_EINPUT;
  }
  if (!file)
    return cli_usage_error(usage, "tune", "no workload file given");
  if (!outp)
    return cli_usage_error(usage, "tune", "-o PLAN is required");
  if (nprof && dflt)
    return cli_usage_error(
        usage, "tune", "--profile and --default-profile exclude each other");
  if (lm_timing_opts_check(&o.timing, &err) != LM_OK)
    return cli_usage_error(usage, "tune", "%s", err.msg);
  if (o.records && lm_file_check_writable(o.records, &err) != LM_OK) {
    fprintf(stderr, "lanemap tune: %s\n", err.msg);
    return LM_ESYS;
  }
  if (lm_file_check_writable(outp, &err) != LM_OK) {
    fprintf(stderr, "lanemap tune: %s\n", err.msg);
    return LM_ESYS;
  }

  lm_workload *w = NULL;
  lm_profile *owned[LM_ISA__COUNT] = {0};
  const lm_profile *profs[LM_ISA__COUNT] = {0};
  lm_tune_result res = {0};
  cli_progress bar = {0};
  lm_status s = lm_workload_load(file, &w, &err);
  if (s == LM_OK)
    s = cli_workload_profiles("tune", w, profpath, nprof, dflt, accept, owned,
                              &err);
  for (int i = 0; s == LM_OK && i < w->nisa; i++)
    profs[i] = owned[i];
  o.progress = on_progress;
  o.ctx = &bar;
  if (s == LM_OK)
    s = lm_tune(w, profs, &o, &res, &err);
  if (bar.label)
    cli_progress_end(&bar);
  if (s == LM_OK)
    s = lm_plan_save(res.plan, outp, &err);
  if (s != LM_OK) {
    fprintf(stderr, "lanemap tune: %s\n", err.msg);
    goto done;
  }
  if (json) {
    print_json(file, outp, &o, &res);
    goto verdict;
  }
  printf("workload %s: %d buckets: %d measured, %d from the records, %d "
         "skipped (time budget), %d sure (not measured)\n",
         file, res.buckets, res.measured_buckets, res.resumed_buckets,
         res.skipped_buckets, res.sure_buckets);
  printf("candidates: %d (top %d per bucket, %d near ties beyond them); "
         "timed now %d, from the records %d, failed %d\n",
         res.candidates, o.measure, res.unsure, res.measured, res.resumed,
         res.failed);
  printf("time: predict %.2f s, compile %.2f s, oracle and verify %.2f s, "
         "measure %.2f s, solve %.3f s; %.1f s in all\n",
         res.predict_s, res.compile_s, res.verify_s, res.measure_s, res.solve_s,
         res.total_s);
  for (int k = 0; k < res.plan->nkernels; k++) {
    const lm_plan_kernel *pk = &res.plan->kernels[k];
    printf("  %s: %d bucket%s -> %d variant%s\n", pk->name, pk->nbuckets,
           pk->nbuckets == 1 ? "" : "s", pk->nvariants,
           pk->nvariants == 1 ? "" : "s");
    for (int v = 0; v < pk->nvariants; v++) {
      int cnt = 0;
      for (int b = 0; b < pk->nbuckets; b++)
        cnt += pk->buckets[b].variant == v;
      printf("    [%d] %-60s %d bucket%s\n", v, pk->variants[v], cnt,
             cnt == 1 ? "" : "s");
    }
  }
  printf("wrote %s%s%s\n", outp, o.records ? ", records appended to " : "",
         o.records ? o.records : "");
  char why[600];
  printf("%s: %d of %d bucket comparisons timed under interference (%s)\n",
         res.noisy_buckets ? "noisy" : "quiet", res.noisy_buckets,
         res.measured_buckets,
         lm_noise_describe(&res.noise, NULL, why, sizeof why));
verdict:
  if (res.noisy_buckets && !lm_profile_accept_noisy(accept))
    s = LM_EFAIL;
done:
  lm_tune_result_free(&res);
  for (int i = 0; i < LM_ISA__COUNT; i++)
    lm_profile_free(owned[i]);
  lm_workload_free(w);
  fflush(stdout);
  return s;
}
