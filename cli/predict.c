/* lanemap predict: rank variants of a kernel at a shape by predicted time,
 * with the bootstrap interval and, with --explain, each term's share. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lanemap/calibrate.h"
#include "lanemap/json.h"
#include "lanemap/learned.h"

static const char usage[] =
    "usage: lanemap predict KERNEL --shape R,C [--variant V[,V...] | --all]\n"
    "                      [--isa I] [--fp M] [--profile P | --default-profile] [--accept-noisy]\n"
    "                      [--explain] [--json] [--cache-dir D] [--learned M]\n"
    "  Predict every variant's time (ns per launch) and rank them.\n"
    "  --fp M             with --all: strict (default), relaxed or both\n"
    "  --profile P        a profile file (default: the cached one for the ISA)\n"
    "  --default-profile  the uncalibrated named defaults\n"
    "  --cache-dir D      the profile cache (also LANEMAP_CACHE_DIR)\n"
    "  --accept-noisy     use a profile whose calibration timing was noisy (else\n"
    "                     refused, exit 1; also LANEMAP_ACCEPT_NOISY=1)\n"
    "  --explain          per-term breakdown of each prediction\n"
    "  --learned M        a learned correction of the profile (lanemap learn):\n"
    "                     rank by the corrected time; the correction shows as\n"
    "                     one factor beside the terms\n"
    "exit codes: 0 ok, 1 a noisy profile refused, 2 bad input (no profile, bad\n"
    "            kernel, shape or variant)\n";

/* The profile given, else the defaults (--default-profile), else the
 * cached one for the ISA (quick, then full); its fingerprint warning, and
 * the verdict of a noisy profile accepted. */
static lm_status profile_for(const char *path, int use_default, lm_isa isa,
                             int accept_noisy, lm_profile **out, lm_error *err) {
  lm_profile_lookup_opts lo;
  lm_profile_lookup_defaults(&lo);
  lo.path = path;
  lo.use_defaults = use_default;
  lo.isa = isa;
  lo.accept_noisy = accept_noisy;
  lm_profile_found found;
  lm_status s = lm_profile_lookup(&lo, out, &found, err);
  if (s == LM_OK && found.info.fingerprint_diffs > 0)
    fprintf(stderr, "lanemap: warning: %s\n", found.info.warning);
  if (s == LM_OK && found.noisy) {
    char why[1200];
    fprintf(stderr, "lanemap: warning: %s: accepted a noisy profile: %s\n", found.path,
            lm_profile_describe_noise(*out, why, sizeof why));
  }
  return s;
}

typedef struct Ranked {
  lm_variant v;
  lm_prediction p;
  double ns; /* p.ns, times the learned correction when one is given */
} Ranked;

static int by_ns(const void *a, const void *b) {
  double x = ((const Ranked *)a)->ns, y = ((const Ranked *)b)->ns;
  return x < y ? -1 : x > y;
}

/* rk[i].ns = the learned correction of rk[i].p (lm_learned_apply). */
static lm_status correct(const char *path, const lm_kernel *k, const lm_shape *sh,
                         Ranked *rk, int n, lm_error *err) {
  lm_learned *l = NULL;
  double *x = malloc(sizeof *x * (size_t)(n ? n : 1) * LM_LEARNED_NFEAT);
  double *d = malloc(sizeof *d * (size_t)(n ? n : 1));
  lm_status s = LM_OK;
  if (!x || !d)
    s = lm_error_set(err, LM_ESYS, "out of memory");
  else
    s = lm_learned_load(path, &l, err);
  if (s == LM_OK)
    s = lm_learned_check_features(l, LM_LEARNED_NFEAT, lm_learned_row_names(), err);
  for (int i = 0; s == LM_OK && i < n; i++)
    lm_learned_row(k, &rk[i].v, sh, &rk[i].p, x + (size_t)i * LM_LEARNED_NFEAT);
  if (s == LM_OK)
    s = lm_learned_predict(l, x, n, d, err);
  for (int i = 0; s == LM_OK && i < n; i++)
    rk[i].ns = lm_learned_apply(rk[i].p.ns, d[i]);
  lm_learned_free(l);
  free(x);
  free(d);
  return s;
}

static void explain(const lm_prediction *p, double corrected) {
  int order[LM_T__COUNT];
  for (int i = 0; i < LM_T__COUNT; i++)
    order[i] = i;
  for (int i = 0; i < LM_T__COUNT; i++) /* by share, descending */
    for (int j = i + 1; j < LM_T__COUNT; j++)
      if (p->term_ns[order[j]] > p->term_ns[order[i]]) {
        int t = order[i];
        order[i] = order[j];
        order[j] = t;
      }
  printf("    %s-bound: compute %.0f ns, memory %.0f ns, fork %.0f ns",
         p->memory_bound ? "memory" : "compute", p->compute_ns, p->memory_ns, p->fork_ns);
  if (p->join_ns > 0)
    printf(", late join %.0f ns", p->join_ns);
  printf("\n");
  for (int i = 0; i < LM_T__COUNT; i++) {
    int t = order[i];
    if (p->term_ns[t] <= 0 || p->term_ns[t] < 0.01 * p->ns)
      continue;
    printf("    %-13s %12.0f x -> %10.1f ns (%4.1f%%)  %s\n", lm_term_name(t), p->f.n[t],
           p->term_ns[t], 100 * p->term_ns[t] / p->ns, lm_term_doc(t));
  }
  if (corrected != p->ns)
    printf("    %-13s %12.3f x -> %10.1f ns         the learned correction of "
           "the %.1f ns above\n",
           "learned", corrected / p->ns, corrected, p->ns);
}

int cmd_predict(int argc, char **argv) {
  const char *file = NULL, *shape_s = NULL, *list = NULL, *isa_s = "host", *prof = NULL,
             *fp = NULL, *learned = NULL;
  int all = 0, expl = 0, json = 0, dflt = 0, accept = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val;
    int r = 0;
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return LM_OK;
    }
    if ((r = cli_arg_value(argc, argv, &i, "--shape", &val)))
      shape_s = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--variant", &val)))
      list = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--isa", &val)))
      isa_s = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--fp", &val)))
      fp = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--profile", &val)))
      prof = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--learned", &val)))
      learned = val;
    else if ((r = cli_arg_cache_dir(argc, argv, &i)))
      ;
    else if (cli_arg_flag(a, "--all"))
      all = r = 1;
    else if (cli_arg_flag(a, "--explain"))
      expl = r = 1;
    else if (cli_arg_flag(a, "--json"))
      json = r = 1;
    else if (cli_arg_flag(a, "--default-profile"))
      dflt = r = 1;
    else if (cli_arg_flag(a, "--accept-noisy"))
      accept = r = 1;
    else if (a[0] == '-' && a[1])
      return cli_usage_error(usage, "predict", "unknown option '%s'", a);
    else if (!file)
      file = a, r = 1;
    else
      return cli_usage_error(usage, "predict", "more than one kernel file");
    if (r < 0)
      return LM_EINPUT;
  }
  if (!file || !shape_s)
    return cli_usage_error(usage, "predict", "KERNEL and --shape are required");
  if (!list)
    all = 1;
  lm_error err = {0};
  lm_isa isa;
  lm_kernel *k = NULL;
  lm_profile *p = NULL;
  lm_variant *vs = NULL;
  Ranked *rk = NULL;
  int nv = 0;
  lm_shape sh;
  lm_status s = lm_isa_parse(isa_s, &isa, &err);
  if (s == LM_OK)
    s = lm_kernel_load(file, &k, &err);
  if (s == LM_OK)
    s = lm_shape_parse(k, shape_s, &sh, &err);
  if (s == LM_OK)
    s = cli_variants(k, list, all, all ? isa_s : NULL, fp, 0, &vs, &nv, &err);
  /* an AArch64 variant is priced by its own target's profile, never by
   * this machine's */
  for (int i = 0; s == LM_OK && i < nv; i++)
    if ((lm_isa_is_aarch64(vs[i].isa) || lm_isa_is_aarch64(isa)) && vs[i].isa != isa)
      s = lm_error_set(&err, LM_EINPUT,
                       "variant %d targets %s, the profile %s: give --isa %s", i + 1,
                       lm_isa_name(vs[i].isa), lm_isa_name(isa), lm_isa_name(vs[i].isa));
  if (s == LM_OK)
    s = profile_for(prof, dflt, isa, accept, &p, &err);
  if (s != LM_OK)
    goto done;
  rk = calloc((size_t)nv, sizeof *rk);
  if (!rk)
    s = lm_error_set(&err, LM_ESYS, "out of memory");
  for (int i = 0; i < nv && s == LM_OK; i++) {
    rk[i].v = vs[i];
    s = lm_cost_predict(p, k, &vs[i], &sh, &rk[i].p, &err);
    rk[i].ns = rk[i].p.ns;
  }
  if (s == LM_OK && learned)
    s = correct(learned, k, &sh, rk, nv, &err);
  if (s != LM_OK)
    goto done;
  qsort(rk, (size_t)nv, sizeof *rk, by_ns);
  for (int i = 0; i < nv; i++) {
    char name[128];
    lm_variant_format(&rk[i].v, name, sizeof name);
    if (json) {
      cJSON *j = cJSON_CreateObject();
      cJSON_AddStringToObject(j, "schema", "lanemap.predict/1");
      cJSON_AddStringToObject(j, "kernel", k->name);
      cJSON_AddStringToObject(j, "variant", name);
      cJSON_AddNumberToObject(j, "rank", i + 1);
      cJSON_AddNumberToObject(j, "predicted_ns", rk[i].p.ns);
      cJSON_AddNumberToObject(j, "p5_ns", rk[i].p.p5);
      cJSON_AddNumberToObject(j, "p95_ns", rk[i].p.p95);
      if (learned)
        cJSON_AddNumberToObject(j, "learned_ns", rk[i].ns);
      cJSON *terms = cJSON_AddObjectToObject(j, "terms");
      for (int t = 0; t < LM_T__COUNT; t++)
        if (rk[i].p.f.n[t] > 0) {
          cJSON *o = cJSON_AddObjectToObject(terms, lm_term_name(t));
          cJSON_AddNumberToObject(o, "count", rk[i].p.f.n[t]);
          cJSON_AddNumberToObject(o, "ns", rk[i].p.term_ns[t]);
        }
      /* numbers as the shortest text that reads back exactly */
      char *txt = lm_json_exact(j, &err) == LM_OK ? cJSON_PrintUnformatted(j) : NULL;
      if (!txt) {
        cJSON_Delete(j);
        s = err.msg[0] ? err.status : lm_error_set(&err, LM_ESYS, "out of memory");
        goto done;
      }
      puts(txt);
      free(txt);
      cJSON_Delete(j);
    } else {
      printf("%3d  %-64s %12.2f us  [%.2f, %.2f]", i + 1, name, rk[i].p.ns / 1e3,
             rk[i].p.p5 / 1e3, rk[i].p.p95 / 1e3);
      if (learned)
        printf("  learned %.2f us", rk[i].ns / 1e3);
      printf("\n");
      if (expl)
        explain(&rk[i].p, rk[i].ns);
    }
  }
done:
  if (s != LM_OK)
    fprintf(stderr, "lanemap predict: %s\n", err.msg);
  free(rk);
  free(vs);
  lm_profile_free(p);
  lm_kernel_free(k);
  return s;
}
