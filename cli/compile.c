/* lanemap compile: build what a plan names -- JIT every planned variant
 * (and report the compile time), or with --aot DIR write one object file
 * holding every variant and one C header with a dispatch function by
 * shape per kernel. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lanemap/dispatch.h"

static const char usage[] =
    "usage: lanemap compile --plan PLAN [--aot DIR [--prefix NAME]] [--json]\n"
    "  Without --aot: JIT every variant of the plan, report count and compile ms.\n"
    "  --aot DIR      write DIR/NAME.o (every planned variant) and DIR/NAME.h\n"
    "                 (declarations and NAME_<kernel>_dispatch(R, C, &match))\n"
    "  --prefix NAME  symbol and file prefix (default lanemap_plan)\n"
    "exit codes: 0 ok, 2 bad plan or kernel changed since the plan, 3 LLVM or I/O\n";

int cmd_compile(int argc, char **argv) {
  const char *planp = NULL, *aot = NULL, *prefix = "lanemap_plan";
  int json = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val;
    int r = 0;
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return LM_OK;
    }
    if ((r = cli_arg_value(argc, argv, &i, "--plan", &val)))
      planp = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--aot", &val)))
      aot = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--prefix", &val)))
      prefix = val;
    else if (cli_arg_flag(a, "--json"))
      json = r = 1;
    else if (a[0] == '-' && a[1])
      return cli_usage_error(usage, "compile", "unknown option '%s'", a);
    else
      return cli_usage_error(usage, "compile", "unexpected argument '%s'", a);
    if (r < 0)
      return LM_EINPUT;
  }
  if (!planp)
    return cli_usage_error(usage, "compile", "--plan PLAN is required");
  lm_error err = {0};
  lm_plan *plan = NULL;
  lm_dispatch *d = NULL;
  lm_plan_load_info info;
  lm_status s = lm_plan_load(planp, &plan, &info, &err);
  if (s != LM_OK)
    goto done;
  if (info.fingerprint_differs)
    fprintf(stderr, "lanemap compile: warning: %s\n", info.warning);
  if (aot) {
    char obj[4096], hdr[4096];
    if (snprintf(obj, sizeof obj, "%s/%s.o", aot, prefix) >= (int)sizeof obj ||
        snprintf(hdr, sizeof hdr, "%s/%s.h", aot, prefix) >= (int)sizeof hdr) {
      s = lm_error_set(&err, LM_EINPUT, "--aot folder and --prefix: the paths are longer than %d bytes",
                       (int)sizeof obj - 1);
      goto done;
    }
    /* a failed emission leaves nothing behind: not the folder it made,
     * not an object or header that was not there before */
    int made = mkdir(aot, 0777) == 0;
    if (!made && errno != EEXIST) {
      s = lm_error_set(&err, LM_ESYS, "cannot create %s: %s", aot, strerror(errno));
      goto done;
    }
    int had_obj = access(obj, F_OK) == 0, had_hdr = access(hdr, F_OK) == 0;
    if ((s = lm_dispatch_emit(plan, prefix, obj, hdr, &err)) != LM_OK) {
      if (!had_obj)
        unlink(obj);
      if (!had_hdr)
        unlink(hdr);
      if (made)
        rmdir(aot);
      goto done;
    }
    int n = 0;
    for (int k = 0; k < plan->nkernels; k++)
      n += plan->kernels[k].nvariants;
    if (json)
      printf("{\"schema\":\"lanemap.compile/1\",\"object\":\"%s\",\"header\":\"%s\","
             "\"variants\":%d}\n",
             obj, hdr, n);
    else
      printf("wrote %s (%d variants of %d kernels) and %s\n", obj, n, plan->nkernels, hdr);
    goto done;
  }
  lm_dispatch_opts o;
  lm_dispatch_defaults(&o);
  if ((s = lm_dispatch_new(plan, &o, &d, &err)) != LM_OK)
    goto done;
  int n = 0;
  double ms = lm_dispatch_compile_ms(d, &n);
  if (json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "schema", "lanemap.compile/1");
    cJSON_AddStringToObject(j, "plan", planp);
    cJSON_AddNumberToObject(j, "variants", n);
    cJSON_AddNumberToObject(j, "compile_ms", ms);
    cJSON_AddNumberToObject(j, "predicted_compile_ms", plan->compile_total_ms);
    char *t = cJSON_PrintUnformatted(j);
    puts(t);
    free(t);
    cJSON_Delete(j);
  } else {
    for (int k = 0; k < lm_dispatch_nkernels(d); k++)
      for (int v = 0; v < lm_dispatch_nvariants(d, k); v++) {
        const lm_compiled *c = lm_dispatch_compiled(d, k, v);
        char name[128];
        lm_variant_format(lm_compiled_variant(c), name, sizeof name);
        printf("%-16s %-60s %8.1f ms\n", lm_dispatch_kernel(d, k)->name, name,
               lm_compiled_ms(c));
      }
    printf("compiled %d variants of %d kernels in %.1f ms (the plan predicted %.0f ms)\n",
           n, lm_dispatch_nkernels(d), ms, plan->compile_total_ms);
  }
done:
  if (s != LM_OK)
    fprintf(stderr, "lanemap compile: %s\n", err.msg);
  lm_dispatch_free(d);
  lm_plan_free(plan);
  return s;
}
