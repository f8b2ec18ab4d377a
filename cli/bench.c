/* lanemap bench: time variants of one kernel side by side, interleaved in
 * one process with the timing harness; every variant is verified against
 * the oracle before it is timed.  Prints the p50 and min per variant and
 * the paired ratio of each against the first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lanemap/verify.h"

static const char usage[] =
    "usage: lanemap bench KERNEL --shape R,C (--variants V1,V2,... | --all-variants [--isa I] [--fp M])\n"
    "                    [--seed N] [--samples N] [--sample-ms MS] [--warmup-ms MS] [--json]\n"
    "  Verify, then time the variants interleaved (all orders), single process.\n"
    "  Ratios are medians of per-round ratios against the first variant.\n"
    "  --fp M  with --all-variants: strict (default), relaxed or both\n"
    "exit codes: 0 ok, 1 a variant failed verification, 2 bad input\n";

/* A numeric option: 1 parsed, 0 not this option, -1 missing value, -2 bad
 * number (message in err). */
static int number_opt(int argc, char **argv, int *i, const char *name,
                      uint64_t max, uint64_t *out, lm_error *err) {
  const char *val;
  int r = cli_arg_value(argc, argv, i, name, &val);
  if (r <= 0)
    return r;
  return cli_parse_u64(name, val, max, out, err) == LM_OK ? 1 : -2;
}

int cmd_bench(int argc, char **argv) {
  const char *file = NULL, *shape_s = NULL, *list = NULL, *isa = NULL, *fp = NULL;
  int all = 0, json = 0;
  uint64_t seed = CLI_SEED_DEFAULT, samples = 0, sample_ms = 0, warm_ms = 0;
  lm_error err = {0};
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val;
    int r;
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return LM_OK;
    }
    if ((r = cli_arg_value(argc, argv, &i, "--shape", &val)))
      shape_s = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--variants", &val)))
      list = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--isa", &val)))
      isa = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--fp", &val)))
      fp = val;
    else if ((r = number_opt(argc, argv, &i, "--seed", CLI_SEED_MAX, &seed, &err)) ||
             (r = number_opt(argc, argv, &i, "--samples", 100000, &samples, &err)) ||
             (r = number_opt(argc, argv, &i, "--sample-ms", 100000, &sample_ms, &err)) ||
             (r = number_opt(argc, argv, &i, "--warmup-ms", 100000, &warm_ms, &err))) {
      if (r == -2)
        return cli_usage_error(usage, "bench", "%s", err.msg);
    } else if (cli_arg_flag(a, "--all-variants"))
      all = r = 1;
    else if (cli_arg_flag(a, "--json"))
      json = r = 1;
    else if (a[0] == '-' && a[1])
      return cli_usage_error(usage, "bench", "unknown option '%s'", a);
    else if (!file)
      file = a, r = 1;
    else
      return cli_usage_error(usage, "bench", "more than one kernel file");
    if (r < 0)
      return LM_EINPUT;
  }
  if (!file || !shape_s || (!list && !all))
    return cli_usage_error(usage, "bench", "KERNEL, --shape and --variants are required");
  lm_kernel *k = NULL;
  lm_variant *vs = NULL;
  lm_data *d = NULL;
  lm_oracle *orc = NULL;
  lm_compiled **cs = NULL;
  lm_timing_result tr = {0};
  int nv = 0, nc = 0;
  lm_shape shape;
  lm_status s = lm_kernel_load(file, &k, &err);
  if (s == LM_OK)
    s = lm_shape_parse(k, shape_s, &shape, &err);
  if (s == LM_OK)
    s = cli_variants(k, list, all, isa, fp, 1, &vs, &nv, &err);
  if (s == LM_OK)
    s = lm_data_gen(k, &shape, seed, &d, &err);
  if (s == LM_OK)
    s = lm_oracle_run(k, d, &orc, &err);
  if (s != LM_OK)
    goto done;
  cs = calloc((size_t)nv, sizeof *cs);
  for (int i = 0; i < nv && s == LM_OK; i++) {
    lm_verify_result res;
    if ((s = lm_compile(k, &vs[i], NULL, &cs[nc], &err)) != LM_OK)
      break;
    nc++;
    s = lm_verify(k, cs[nc - 1], d, orc, NULL, &res, &err);
  }
  if (s != LM_OK)
    goto done;
  lm_timing_opts to;
  lm_timing_defaults(&to);
  if (samples)
    to.samples = (int)samples;
  if (sample_ms)
    to.sample_ms = (double)sample_ms;
  if (warm_ms)
    to.warmup_ms = (double)warm_ms;
  if ((s = lm_time_variants(k, cs, nc, d, NULL, &to, &tr, &err)) != LM_OK)
    goto done;
  for (int i = 0; i < nc; i++) {
    const lm_timing_stats *st = &tr.stats[i];
    double ratio = tr.ratio[i * nc + 0];
    if (json) {
      cJSON *j = cJSON_CreateObject();
      cJSON_AddStringToObject(j, "schema", "lanemap.bench/1");
      cJSON_AddStringToObject(j, "kernel", k->name);
      cJSON_AddStringToObject(j, "variant", st->name);
      cJSON_AddNumberToObject(j, "median", st->p50 * 1e-9);
      cJSON_AddNumberToObject(j, "min", st->min * 1e-9);
      cJSON_AddNumberToObject(j, "max", st->max * 1e-9);
      cJSON_AddNumberToObject(j, "mean", st->mean * 1e-9);
      cJSON_AddNumberToObject(j, "spread", st->spread);
      cJSON_AddNumberToObject(j, "ratio_to_first", ratio);
      cJSON *t = cJSON_AddArrayToObject(j, "times");
      for (int r = 0; r < tr.nsamples; r++)
        cJSON_AddItemToArray(t, cJSON_CreateNumber(st->samples[r] * 1e-9));
      char *txt = cJSON_PrintUnformatted(j);
      puts(txt);
      free(txt);
      cJSON_Delete(j);
    } else {
      if (i == 0)
        printf("%-64s %10s %10s %8s %8s\n", "variant", "p50 us", "min us", "spread",
               "ratio");
      printf("%-64s %10.2f %10.2f %7.1f%% %8.3f\n", st->name, st->p50 / 1e3,
             st->min / 1e3, 100 * st->spread, ratio);
    }
  }
done:
  if (s != LM_OK)
    fprintf(stderr, "lanemap bench: %s\n", err.msg);
  lm_timing_result_free(&tr);
  for (int i = 0; i < nc; i++)
    lm_compiled_free(cs[i]);
  free(cs);
  lm_oracle_free(orc);
  lm_data_free(d);
  free(vs);
  lm_kernel_free(k);
  return s;
}
