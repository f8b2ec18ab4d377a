/* lanemap run: compile variants of one kernel and run them on seeded
 * inputs; with --verify, check every output against the FP64 oracle with
 * guards.  Exit 1 if any variant fails verification. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lanemap/verify.h"

static const char usage[] =
    "usage: lanemap run KERNEL --shape R,C (--variant V[,V...] | --all-variants [--isa I])\n"
    "                  [--verify] [--seed N] [--json]\n"
    "  Compile each variant, run it over all R instances of seeded inputs.\n"
    "  --verify      compare every output with the FP64 oracle (guards, sentinels)\n"
    "  --all-variants every legal variant on each ISA target this machine runs\n"
    "  --isa I       with --all-variants: only sse4.2, avx2, avx512 or host\n"
    "  --json        one JSON object per variant on stdout\n"
    "exit codes: 0 ok, 1 a variant failed verification, 2 bad input\n";

typedef struct run_opts {
  const char *file, *shape, *variants, *isa;
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
  if (!o->file)
    return cli_usage_error(usage, "run", "no kernel file given");
  if (!o->shape)
    return cli_usage_error(usage, "run", "--shape R,C is required");
  if (!o->all && !o->variants)
    return cli_usage_error(usage, "run", "give --variant V or --all-variants");
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
    printf("%-64s FAILED: %s\n", name, err.msg);
  }
  lm_compiled_free(c);
  return s;
}

int cmd_run(int argc, char **argv) {
  run_opts o = {0};
  int r = parse(argc, argv, &o);
  if (r)
    return r < 0 ? LM_OK : r;
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
    s = cli_variants(k, o.variants, o.all, o.isa, &vs, &nv, &err);
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
