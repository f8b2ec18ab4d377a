/* lanemap calibrate: measure this machine for one ISA target and write a
 * profile (to --out, else to the per-fingerprint cache), then print the
 * fit's diagnostics: coefficients with bootstrap spreads, flags, condition
 * number, rank, leave-one-benchmark-out errors, the composition check, and
 * the noise verdict on the timing.  A noisy calibration is not written as
 * the machine's profile unless --accept-noisy (or LANEMAP_ACCEPT_NOISY=1)
 * says so: it goes beside, as NAME.noisy.json, and the command exits 1. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lanemap/json.h"
#include "lanemap/calibrate.h"

static const char usage[] =
    "usage: lanemap calibrate [--quick | --full] [--isa I] [--out F.json] [--json]\n"
    "                         [--accept-noisy] [--cache-dir D] [--keep-terms]\n"
    "  Run the micro-benchmark families through the backend, fit per-ISA costs,\n"
    "  write the profile (default: the cache, see docs/profile.md).\n"
    "  --quick         the quick suite (default), about 15 s\n"
    "  --full          the full suite with memory-sized working sets\n"
    "  --isa I         sse4.2, avx2, avx512 or host (default host); an AArch64\n"
    "                  target only on an AArch64 machine\n"
    "  --json          print the summary as JSON instead of tables\n"
    "  --cache-dir D   the profile cache (also LANEMAP_CACHE_DIR): a folder shared\n"
    "                  by a cluster's nodes keeps one profile per machine type\n"
    "  --accept-noisy  write the profile even when its timing was noisy (flagged\n"
    "                  inside); without it a noisy profile goes to F.noisy.json\n"
    "                  and is not the machine's profile (also LANEMAP_ACCEPT_NOISY=1)\n"
    "  --keep-terms    keep the terms on trial (mask_ins, spill) without\n"
    "                  cross-validating them; needs --out (never cached)\n"
    "exit codes: 0 ok, 1 noisy calibration not accepted, 2 bad input,\n"
    "  3 cannot write the profile\n";

static void bar(void *ctx, int done, int total, const char *what) {
  (void)ctx;
  if (!isatty(2))
    return;
  int w = 30, f = total ? done * w / total : w;
  fprintf(stderr, "\r[%.*s%*s] %3d/%d %-28.28s", f, "##############################",
          w - f, "", done, total, what);
  if (done == total)
    fputc('\n', stderr);
}

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec * 1e-9;
}

void cli_print_profile(const lm_profile *p, double seconds) {
  lm_profile_diagnostics d = lm_profile_get_diagnostics(p);
  printf("profile %s (%s) for %s, %d samples, %.1f s\n", lm_profile_get_isa(p),
         lm_profile_mode_name(lm_profile_get_mode(p)),
         lm_profile_get_fingerprint(p)->cpu_name, lm_profile_nsamples(p), seconds);
  printf("%-14s %12s %12s %12s  %s\n", "term", "coef", "p5", "p95", "unit");
  for (int i = 0; i < lm_profile_nterms(p); i++) {
    const lm_profile_term *t = lm_profile_term_at(p, i);
    printf("%-14s %12.5g %12.5g %12.5g  %s%s\n", t->name, t->coef, t->p5, t->p95,
           t->unit, t->flagged ? "  FLAGGED: outside plausible range" : "");
  }
  printf("condition number %.3g, rank %d of %d, rms relative error %.1f%%\n",
         d.condition, d.rank, lm_profile_nterms(p) - 1, 100 * d.rms_rel_err);
  double worst = 0;
  const char *wn = "-";
  for (int i = 0; i < lm_profile_nloo(p); i++)
    if (lm_profile_loo_at(p, i)->rel_err > worst)
      worst = lm_profile_loo_at(p, i)->rel_err, wn = lm_profile_loo_at(p, i)->bench;
  printf("leave-one-benchmark-out: worst %.1f%% (%s)\n", 100 * worst, wn);
  const char *extra = lm_profile_get_extra(p);
  cJSON *x = NULL;
  lm_error ignored = {0};
  if (extra) /* the profile's own text: valid JSON */
    lm_json_parse("diagnostics.extra", extra, strlen(extra), &x, &ignored);
  cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(x, "composition")) {
    double m = cJSON_GetNumberValue(cJSON_GetObjectItem(c, "measured_ns"));
    double a = cJSON_GetNumberValue(cJSON_GetObjectItem(c, "additive_ns"));
    double b = cJSON_GetNumberValue(cJSON_GetObjectItem(c, "bottleneck_ns"));
    printf("composition %-18s measured %10.0f ns, additive %10.0f (%+.0f%%), "
           "bottleneck %10.0f (%+.0f%%)\n",
           cJSON_GetStringValue(cJSON_GetObjectItem(c, "bench")), m, a,
           100 * (a / m - 1), b, 100 * (b / m - 1));
  }
  printf("overlap (t = max + overlap*min): %.2f\n",
         cJSON_GetNumberValue(cJSON_GetObjectItem(x, "overlap")));
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(x, "term_trials")) {
    double w = cJSON_GetNumberValue(cJSON_GetObjectItem(c, "lofo_with"));
    double wo = cJSON_GetNumberValue(cJSON_GetObjectItem(c, "lofo_without"));
    /* the paired rise per family and its standard error (profiles
     * written before the paired rule have neither) */
    cJSON *g = cJSON_GetObjectItem(c, "lofo_gain"), *se = cJSON_GetObjectItem(c, "lofo_gain_se");
    char paired[96] = "";
    if (cJSON_IsNumber(g) && cJSON_IsNumber(se))
      snprintf(paired, sizeof paired, ", rise per family %+.2f +- %.2f points",
               100 * g->valuedouble, 100 * se->valuedouble);
    printf("term on trial %-10s leave-one-family-out error %.1f%% with it, "
           "%.1f%% without%s: %s\n",
           cJSON_GetStringValue(cJSON_GetObjectItem(c, "term")), 100 * w, 100 * wo, paired,
           cJSON_IsTrue(cJSON_GetObjectItem(c, "kept")) ? "kept" : "fixed at 0");
  }
  cJSON_Delete(x);
}

/* The noise verdict: which families were noisy by what measure, and the
 * load around the timing. */
static void print_noise(const lm_profile *p) {
  char why[1200];
  printf("noise: %s\n", lm_profile_describe_noise(p, why, sizeof why));
  const lm_noise *n = lm_profile_get_noise(p);
  if (!n)
    return;
  char other[32] = "unknown", steal[32] = "unknown";
  if (!isnan(n->other_cpus))
    snprintf(other, sizeof other, "%.2f CPU", n->other_cpus);
  if (!isnan(n->steal))
    snprintf(steal, sizeof steal, "%.1f%%", 100 * n->steal);
  printf("load average %.2f -> %.2f, other processes %s, steal %s\n",
         n->load_start, n->load_end, other, steal);
}

/* The verdict for --json: lm_noise_to_json's object and the families. */
static void add_noise_json(cJSON *j, const lm_profile *p) {
  const lm_noise *n = lm_profile_get_noise(p);
  cJSON_AddBoolToObject(j, "noisy", lm_profile_noisy(p));
  if (n)
    cJSON_AddItemToObject(j, "noise", lm_noise_to_json(n));
  cJSON *a = cJSON_AddArrayToObject(j, "noisy_families");
  for (int i = 0; i < lm_profile_nnoisy_families(p); i++) {
    const lm_profile_noisy_family *f = lm_profile_noisy_family_at(p, i);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "family", f->family);
    cJSON *r = cJSON_AddArrayToObject(o, "reasons");
    for (unsigned bit = LM_NOISE_SPREAD; bit <= LM_NOISE_WORKERS; bit <<= 1)
      if (f->reasons & bit)
        cJSON_AddItemToArray(r, cJSON_CreateString(lm_noise_reason_name(bit)));
    cJSON_AddNumberToObject(o, "spread", f->spread);
    cJSON_AddItemToArray(a, o);
  }
}

int cmd_calibrate(int argc, char **argv) {
  lm_calib_opts o;
  lm_calib_defaults(&o);
  const char *out = NULL, *isa = "host";
  int json = 0, accept = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val;
    int r = 0;
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return LM_OK;
    }
    if ((r = cli_arg_value(argc, argv, &i, "--out", &val)) ||
        (r = cli_arg_value(argc, argv, &i, "-o", &val)))
      out = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--isa", &val)))
      isa = val;
    else if ((r = cli_arg_cache_dir(argc, argv, &i)))
      ;
    else if (cli_arg_flag(a, "--quick"))
      o.quick = 1, r = 1;
    else if (cli_arg_flag(a, "--full"))
      o.quick = 0, r = 1;
    else if (cli_arg_flag(a, "--json"))
      json = r = 1;
    else if (cli_arg_flag(a, "--accept-noisy"))
      accept = r = 1;
    else if (cli_arg_flag(a, "--keep-terms"))
      o.keep_terms = r = 1;
    else
      return cli_usage_error(usage, "calibrate", "unexpected argument '%s'", a);
    if (r < 0)
      return LM_EINPUT;
  }
  lm_error err = {0};
  if (lm_isa_parse(isa, &o.isa, &err) != LM_OK)
    return cli_usage_error(usage, "calibrate", "%s", err.msg);
  if (o.keep_terms && !out)
    return cli_usage_error(usage, "calibrate",
                           "--keep-terms needs --out F.json: a profile whose terms "
                           "were not tried is never cached as the machine's");
  char path[1024], wrote[1100] = "";
  int cache = !out;
  if (!out) {
    if (lm_profile_cache_path(lm_isa_name(o.isa), o.quick ? LM_PROFILE_QUICK : LM_PROFILE_FULL,
                              path, sizeof path, &err) != LM_OK) {
      fprintf(stderr, "lanemap calibrate: %s\n", err.msg);
      return err.status;
    }
    out = path;
  }
  if (lm_file_check_writable(out, &err) != LM_OK) { /* before minutes of measuring */
    fprintf(stderr, "lanemap calibrate: %s\n", err.msg);
    return err.status;
  }
  if (!json)
    o.progress = bar;
  double t0 = now_s();
  lm_profile *p = NULL;
  lm_status s = lm_calibrate(&o, &p, &err);
  double secs = now_s() - t0;
  if (s == LM_OK)
    s = lm_profile_save_calibrated(p, out, cache, accept, wrote, sizeof wrote,
                                   &err);
  if (s != LM_OK && !wrote[0]) {
    fprintf(stderr, "lanemap calibrate: %s\n", err.msg);
    lm_profile_free(p);
    return s;
  }
  /* written: as the machine's profile, or refused and kept beside it */
  if (json) {
    cJSON *j = cJSON_CreateObject();
    lm_profile_diagnostics d = lm_profile_get_diagnostics(p);
    cJSON_AddStringToObject(j, "schema", "lanemap.calibrate/1");
    cJSON_AddStringToObject(j, "profile", wrote);
    cJSON_AddNumberToObject(j, "seconds", secs);
    cJSON_AddNumberToObject(j, "condition", isfinite(d.condition) ? d.condition : -1);
    cJSON_AddNumberToObject(j, "rank", d.rank);
    cJSON_AddNumberToObject(j, "rms_rel_err", d.rms_rel_err);
    add_noise_json(j, p);
    cJSON_AddBoolToObject(j, "accepted", s == LM_OK);
    char *t = cJSON_PrintUnformatted(j);
    puts(t);
    free(t);
    cJSON_Delete(j);
  } else {
    cli_print_profile(p, secs);
    print_noise(p);
    printf("wrote %s%s\n", wrote,
           s != LM_OK                ? " (noisy, not accepted)"
           : lm_profile_noisy(p)     ? " (noisy, accepted)"
                                     : "");
  }
  fflush(stdout);
  if (s != LM_OK) /* the refusal is the last line */
    fprintf(stderr, "lanemap calibrate: %s\n", err.msg);
  lm_profile_free(p);
  return s;
}
