/* lanemap run: compile variants of one kernel and run them on seeded
 * inputs; with --verify, check every output against the FP64 oracle with
 * guards.  Exit 1 if any variant fails verification.
 *
 * With --plan P --workload W, compile the plan instead (lanemap/dispatch.h)
 * and run every bucket of every kernel of W through the variant the plan
 * dispatches it to, one line per bucket; a shape outside the plan's
 * buckets runs the nearest bucket's variant and the line says so.
 *
 * stdout holds the verdicts, one line per variant or bucket; why one
 * FAILED (a compile error, a mismatch) is said on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lanemap/dispatch.h"
#include "lanemap/verify.h"
#include "lanemap/workload.h"

static const char usage[] =
    "usage: lanemap run KERNEL --shape R,C (--variant V[,V...] | --all-variants [--isa I] [--fp M])\n"
    "                  [--verify] [--seed N] [--json] [--dump DIR]\n"
    "       lanemap run --plan PLAN --workload W [--verify] [--seed N] [--json]\n"
    "  Compile each variant, run it over all R instances of seeded inputs.\n"
    "  --verify      compare every output with the FP64 oracle (guards, sentinels)\n"
    "  --all-variants every legal variant on each ISA target this machine runs\n"
    "  --isa I       with --all-variants: only sse4.2, avx2, avx512 or host (an\n"
    "                AArch64 target is refused: its code cannot run here)\n"
    "  --fp M        with --all-variants: floating-point modes strict (default),\n"
    "                relaxed or both (docs/language.md \"Relaxed floating point\")\n"
    "  --json        one JSON object per variant (or bucket) on stdout\n"
    "  --dump DIR    with one variant: write its inputs and outputs after the\n"
    "                run as DIR/NAME.npy, one per buffer (NumPy's format)\n"
    "  --plan PLAN   compile the plan and run every bucket of --workload W through\n"
    "                its dispatched variant (a plan of another machine warns)\n"
    "exit codes: 0 ok, 1 a variant or bucket failed verification, 2 bad input\n";

typedef struct run_opts {
  const char *file, *shape, *variants, *isa, *fp, *plan, *workload, *dump;
  int all, verify, json;
  uint64_t seed;
} run_opts;

static int parse(int argc, char **argv, run_opts *o) {
  lm_error err = {0};
  o->seed = CLI_SEED_DEFAULT;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val;
    int r;
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return -1;
    }
    if ((r = cli_arg_value(argc, argv, &i, "--shape", &val)))
      o->shape = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--variant", &val)))
      o->variants = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--isa", &val)))
      o->isa = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--fp", &val)))
      o->fp = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--plan", &val)))
      o->plan = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--workload", &val)))
      o->workload = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--dump", &val)))
      o->dump = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--seed", &val))) {
      if (r > 0 && cli_parse_u64("--seed", val, CLI_SEED_MAX, &o->seed, &err) != LM_OK)
        return cli_usage_error(usage, "run", "%s", err.msg);
    } else if (cli_arg_flag(a, "--all-variants"))
      o->all = 1, r = 1;
    else if (cli_arg_flag(a, "--verify"))
      o->verify = 1, r = 1;
    else if (cli_arg_flag(a, "--json"))
      o->json = 1, r = 1;
    else if (a[0] == '-' && a[1])
      return cli_usage_error(usage, "run", "unknown option '%s'", a);
    else if (!o->file)
      o->file = a, r = 1;
    else
      return cli_usage_error(usage, "run", "more than one kernel file");
    if (r < 0)
      return LM_EINPUT;
  }
  if (o->plan || o->workload) {
    if (!o->plan || !o->workload)
      return cli_usage_error(usage, "run", "--plan and --workload go together");
    if (o->file || o->shape || o->variants || o->all || o->dump || o->fp)
      return cli_usage_error(usage, "run",
                             "--plan takes its kernels, shapes and variants from the"
                             " workload and the plan (and dumps nothing)");
    return LM_OK;
  }
  if (!o->file)
    return cli_usage_error(usage, "run", "no kernel file given");
  if (!o->shape)
    return cli_usage_error(usage, "run", "--shape R,C is required");
  if (!o->all && !o->variants)
    return cli_usage_error(usage, "run", "give --variant V or --all-variants");
  if (o->dump && (o->all || strchr(o->variants, ',')))
    return cli_usage_error(usage, "run", "--dump takes one --variant");
  return LM_OK;
}

/* Compile, run and (optionally) verify one variant; print its line. */
static lm_status run_one(const run_opts *o, const lm_kernel *k, const lm_variant *v,
                         lm_data *d, const lm_oracle *orc) {
  char name[128];
  lm_variant_format(v, name, sizeof name);
  lm_error err = {0};
  lm_compiled *c = NULL;
  lm_status s = lm_compile(k, v, NULL, &c, &err);
  lm_verify_result res = {0};
  if (s == LM_OK) {
    if (o->verify) {
      s = lm_verify(k, c, d, orc, NULL, &res, &err);
    } else {
      uint64_t *args = lm_args_pack(k, d);
      s = lm_compiled_launch(c, NULL, args, d->shape.dims[0], &err);
      free(args);
    }
  }
  if (o->json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "schema", "lanemap.run/1");
    cJSON_AddStringToObject(j, "kernel", k->name);
    cJSON_AddStringToObject(j, "variant", name);
    cJSON_AddStringToObject(j, "status", s == LM_OK ? "ok" : "failed");
    if (c)
      cJSON_AddNumberToObject(j, "compile_ms", lm_compiled_ms(c));
    if (o->verify && c) {
      cJSON_AddNumberToObject(j, "checked", (double)res.cmp.checked);
      cJSON_AddNumberToObject(j, "mismatches", (double)res.mismatches);
      cJSON_AddNumberToObject(j, "guard_bad", (double)res.guard_bad);
      cJSON_AddNumberToObject(j, "max_abs_err", res.cmp.max_abs_err);
    }
    if (s != LM_OK)
      cJSON_AddStringToObject(j, "error", err.msg);
    char *t = cJSON_PrintUnformatted(j);
    puts(t);
    free(t);
    cJSON_Delete(j);
  } else if (s == LM_OK) {
    printf("%-64s ok%s (compile %.1f ms%s)\n", name, o->verify ? ", verified" : "",
           lm_compiled_ms(c), o->verify ? "" : ", not verified");
  } else {
    printf("%-64s FAILED\n", name);
    fprintf(stderr, "lanemap run: %s: %s\n", name, err.msg);
  }
  lm_compiled_free(c);
  return s;
}

/* Run one bucket of workload kernel ki through the dispatch; print its
 * line.  LM_EFAIL if verification fails. */
static lm_status run_bucket(const run_opts *o, const lm_workload *w, int ki, int b,
                            const lm_dispatch *d, int di, int *fallbacks) {
  const lm_workload_kernel *wk = &w->kernels[ki];
  const lm_kernel *k = lm_dispatch_kernel(d, di);
  lm_error err = {0};
  lm_shape sh;
  lm_data *data = NULL;
  lm_oracle *orc = NULL;
  lm_dispatch_info info = {0};
  lm_verify_result res = {0};
  int64_t R = wk->buckets[b].R, C = wk->buckets[b].C;
  lm_status s = lm_shape_bind(k, R, C, wk->extra, &sh, &err);
  if (s == LM_OK)
    s = lm_dispatch_lookup(d, di, R, C, &info, &err);
  if (s == LM_OK)
    s = lm_data_gen(k, &sh, o->seed, &data, &err);
  if (s == LM_OK && o->verify && (s = lm_oracle_run(k, data, &orc, &err)) == LM_OK)
    s = lm_verify(k, lm_dispatch_compiled(d, di, info.variant), data, orc, NULL, &res,
                  &err);
  else if (s == LM_OK) {
    uint64_t *args = lm_args_pack(k, data);
    s = args ? lm_dispatch_launch(d, di, R, C, args, &info, &err)
             : lm_error_set(&err, LM_ESYS, "out of memory");
    free(args);
  }
  if (s == LM_OK && info.match == LM_DISPATCH_FALLBACK)
    (*fallbacks)++;
  char where[96] = "";
  if (s == LM_OK && info.match != LM_DISPATCH_EXACT)
    snprintf(where, sizeof where, " [%s: bucket R=%lld C=%lld]",
             lm_dispatch_match_name(info.match), (long long)info.bucket_R,
             (long long)info.bucket_C);
  if (o->json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "schema", "lanemap.run/1");
    cJSON_AddStringToObject(j, "kernel", k->name);
    cJSON_AddNumberToObject(j, "R", (double)R);
    cJSON_AddNumberToObject(j, "C", (double)C);
    if (info.variant_name) {
      cJSON_AddStringToObject(j, "variant", info.variant_name);
      cJSON_AddStringToObject(j, "match", lm_dispatch_match_name(info.match));
    }
    cJSON_AddStringToObject(j, "status", s == LM_OK ? "ok" : "failed");
    if (o->verify) {
      cJSON_AddNumberToObject(j, "checked", (double)res.cmp.checked);
      cJSON_AddNumberToObject(j, "mismatches", (double)res.mismatches);
      cJSON_AddNumberToObject(j, "guard_bad", (double)res.guard_bad);
      cJSON_AddNumberToObject(j, "max_abs_err", res.cmp.max_abs_err);
    }
    if (s != LM_OK)
      cJSON_AddStringToObject(j, "error", err.msg);
    char *t = cJSON_PrintUnformatted(j);
    puts(t);
    free(t);
    cJSON_Delete(j);
  } else if (s == LM_OK) {
    printf("%-16s R=%-7lld C=%-6lld %-56s ok%s%s\n", k->name, (long long)R, (long long)C,
           info.variant_name, o->verify ? ", verified" : ", not verified", where);
  } else {
    printf("%-16s R=%-7lld C=%-6lld %-56s FAILED\n", k->name, (long long)R,
           (long long)C, info.variant_name ? info.variant_name : "-");
    fprintf(stderr, "lanemap run: %s R=%lld C=%lld: %s\n", k->name,
            (long long)R, (long long)C, err.msg);
  }
  lm_oracle_free(orc);
  lm_data_free(data);
  return s;
}

static int run_plan(const run_opts *o) {
  lm_error err = {0};
  lm_plan *plan = NULL;
  lm_workload *w = NULL;
  lm_dispatch *d = NULL;
  lm_plan_load_info info;
  int total = 0, failed = 0, fallbacks = 0;
  lm_status s = lm_plan_load(o->plan, &plan, &info, &err);
  if (s == LM_OK && info.fingerprint_differs)
    fprintf(stderr, "lanemap run: warning: %s\n", info.warning);
  if (s == LM_OK)
    s = lm_workload_load(o->workload, &w, &err);
  if (s == LM_OK)
    s = lm_dispatch_new(plan, NULL, &d, &err);
  int *map = NULL;
  if (s == LM_OK && !(map = calloc((size_t)w->nkernels, sizeof *map)))
    s = lm_error_set(&err, LM_ESYS, "out of memory");
  for (int i = 0; s == LM_OK && i < w->nkernels; i++)
    if ((map[i] = lm_dispatch_find(d, w->kernels[i].k->name)) < 0)
      s = lm_error_set(&err, LM_EINPUT, "%s: kernels[%d]: the plan has no kernel %s",
                       o->workload, i, w->kernels[i].k->name);
  if (s != LM_OK) {
    fprintf(stderr, "lanemap run: %s\n", err.msg);
    goto done;
  }
  if (!o->json) {
    int n = 0;
    double ms = lm_dispatch_compile_ms(d, &n);
    printf("plan %s: %d variants compiled in %.1f ms\n", o->plan, n, ms);
  }
  for (int i = 0; i < w->nkernels; i++)
    for (int b = 0; b < w->kernels[i].nbuckets; b++) {
      lm_status bs = run_bucket(o, w, i, b, d, map[i], &fallbacks);
      total++;
      if (bs != LM_OK)
        failed++;
      if (bs != LM_OK && bs != LM_EFAIL && (int)bs > (int)s)
        s = bs;
    }
  if (!o->json)
    printf("%d buckets: %d ok%s, %d failed, %d outside the plan's buckets (fallback)\n",
           total, total - failed, o->verify ? " and verified" : "", failed, fallbacks);
  if (failed && s == LM_OK)
    s = LM_EFAIL;
done:
  free(map);
  lm_dispatch_free(d);
  lm_workload_free(w);
  lm_plan_free(plan);
  return s;
}

int cmd_run(int argc, char **argv) {
  run_opts o = {0};
  int r = parse(argc, argv, &o);
  if (r)
    return r < 0 ? LM_OK : r;
  if (o.plan)
    return run_plan(&o);
  lm_error err = {0};
  lm_kernel *k = NULL;
  lm_variant *vs = NULL;
  lm_data *d = NULL;
  lm_oracle *orc = NULL;
  int nv = 0, failed = 0;
  lm_shape shape;
  lm_status s = lm_kernel_load(o.file, &k, &err);
  if (s == LM_OK)
    s = lm_shape_parse(k, o.shape, &shape, &err);
  if (s == LM_OK)
    s = cli_variants(k, o.variants, o.all, o.isa, o.fp, 1, &vs, &nv, &err);
  if (s == LM_OK)
    s = lm_data_gen(k, &shape, o.seed, &d, &err);
  if (s == LM_OK && o.verify)
    s = lm_oracle_run(k, d, &orc, &err);
  if (s != LM_OK) {
    fprintf(stderr, "lanemap run: %s\n", err.msg);
    goto done;
  }
  for (int i = 0; i < nv; i++) {
    lm_status vs_s = run_one(&o, k, &vs[i], d, orc);
    if (vs_s != LM_OK)
      failed++;
    if (vs_s != LM_OK && vs_s != LM_EFAIL && (int)vs_s > (int)s)
      s = vs_s;
  }
  if (o.dump && !failed && (s = cli_dump_data(o.dump, k, d, NULL, &err)) != LM_OK)
    fprintf(stderr, "lanemap run: %s\n", err.msg);
  if (!o.json)
    printf("%d variants: %d ok, %d failed\n", nv, nv - failed, failed);
  if (failed && s == LM_OK)
    s = LM_EFAIL;
done:
  lm_oracle_free(orc);
  lm_data_free(d);
  free(vs);
  lm_kernel_free(k);
  return s;
}
