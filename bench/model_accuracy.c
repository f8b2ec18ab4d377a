/* bench_model_accuracy: predict and measure every legal variant of the 15
 * suite cases (single thread, and 2 workers), interleaved, and report per
 * case the mean absolute percentage error, Kendall's tau between predicted
 * and measured rankings, and the top-1 regret: t(predicted best) /
 * t(measured best) - 1.
 *
 *   bench_model_accuracy [--profile P] [--quick] [--case ID] [--workers 1|2|both]
 *                        [--detail] [--stat min|p50]
 *
 * The measured time of a variant is the minimum over its interleaved
 * samples (the statistic the calibration fits, and the one least
 * disturbed by other load on a shared machine); --stat p50 uses the
 * median and the per-round paired ratio for the regret instead.
 * --detail adds, per case, every variant's predicted and measured time
 * (p50 and min) and the prediction's compute and memory sides, so the
 * terms that mispredict can be found.
 * Without --profile it uses the cached quick profile of the host ISA, and
 * calibrates one (quick) if there is none. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lanemap/json.h"

#include "lanemap/calibrate.h"
#include "lanemap/timing.h"
#include "lanemap/verify.h"

static double kendall(const double *a, const double *b, int n) {
  long conc = 0, disc = 0;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++) {
      double x = (a[i] - a[j]) * (b[i] - b[j]);
      conc += x > 0;
      disc += x < 0;
    }
  return conc + disc ? (double)(conc - disc) / (double)(conc + disc) : 1;
}

typedef struct Acc {
  double log_regret_sum, tau[64], max_regret;
  int n, over20;
} Acc;

static int detail, use_p50;

static void one_case(const char *id, const char *kpath, int64_t R, int64_t C,
                     const lm_profile *prof, int workers, int quick, Acc *acc) {
  lm_error err = {0};
  lm_kernel *k = NULL;
  lm_shape sh;
  lm_data *d = NULL;
  lm_oracle *o = NULL;
  if (lm_kernel_load(kpath, &k, &err) || lm_shape_bind(k, R, C, NULL, &sh, &err) ||
      lm_data_gen(k, &sh, 1, &d, &err) || lm_oracle_run(k, d, &o, &err)) {
    fprintf(stderr, "%s: %s\n", id, err.msg);
    exit(2);
  }
  lm_enum_opts eo;
  lm_enum_defaults(&eo);
  eo.workers[0] = workers;
  /* one split per parallel code variant: static, one block per worker
   * (the split settling prefers; the enumeration's default splits add
   * dyn2..dyn16 beside it).  Runs before 2026-12-06 measured chunks of 4
   * packets (g4), which the enumeration no longer offers by default. */
  eo.split_static = 1;
  eo.dynamic[0] = 0;
  eo.grains[0] = 0;
  lm_variant *vs;
  int nv = lm_variant_enumerate(k, &eo, &vs, &err);
  lm_compiled **cs = calloc((size_t)nv, sizeof *cs);
  double *pred = calloc((size_t)nv, sizeof *pred), *meas = calloc((size_t)nv, sizeof *meas);
  lm_prediction *pp = calloc((size_t)(nv > 0 ? nv : 1), sizeof *pp);
  int n = 0;
  for (int i = 0; i < nv; i++) {
    lm_verify_result res;
    lm_prediction p;
    if (lm_compile(k, &vs[i], NULL, &cs[n], &err) || lm_verify(k, cs[n], d, o, NULL, &res, &err) ||
        lm_cost_predict(prof, k, &vs[i], &sh, &p, &err)) {
      fprintf(stderr, "%s: %s\n", id, err.msg);
      lm_compiled_free(cs[n]);
      continue;
    }
    pp[n] = p;
    pred[n++] = p.ns;
  }
  lm_timing_opts to;
  lm_timing_defaults(&to);
  /* many short samples: on a shared machine the min of 31 x 2 ms finds a
   * sample between two preemptions more often than the min of 7 x 10 ms */
  to.samples = quick ? 5 : 31;
  to.sample_ms = quick ? 3 : 2;
  to.warmup_ms = quick ? 20 : 100;
  lm_timing_result tr = {0};
  if (lm_time_variants(k, cs, n, d, NULL, &to, &tr, &err)) {
    fprintf(stderr, "%s: %s\n", id, err.msg);
    exit(2);
  }
  double mape = 0;
  int pb = 0, mb = 0;
  for (int i = 0; i < n; i++) {
    meas[i] = use_p50 ? tr.stats[i].p50 : tr.stats[i].min;
    mape += fabs(pred[i] - meas[i]) / meas[i];
    if (pred[i] < pred[pb])
      pb = i;
    if (meas[i] < meas[mb])
      mb = i;
  }
  mape /= n;
  if (detail) {
    printf("\n%s t%d: variant, predicted ns, measured p50, measured min, compute, memory\n", id,
           workers);
    for (int i = 0; i < n; i++)
      printf("  %-62s %11.0f %11.0f %11.0f %11.0f %11.0f\n", tr.stats[i].name, pred[i], meas[i],
             tr.stats[i].min, pp[i].compute_ns, pp[i].memory_ns);
  }
  double tau = kendall(pred, meas, n);
  /* p50: the paired ratio per round; min: the ratio of the minima */
  double regret = use_p50 ? tr.ratio[pb * n + mb] - 1 : meas[pb] / meas[mb] - 1;
  if (regret < 0)
    regret = 0;
  printf("| %s | t%d | %d | %.0f%% | %.2f | %.1f%% | `%s` | `%s` |\n", id, workers, n,
         100 * mape, tau, 100 * regret, tr.stats[pb].name, tr.stats[mb].name);
  fflush(stdout);
  acc->log_regret_sum += log1p(regret);
  if (acc->n < 64)
    acc->tau[acc->n] = tau;
  acc->n++;
  acc->max_regret = fmax(acc->max_regret, regret);
  acc->over20 += regret > 0.20;
  lm_timing_result_free(&tr);
  for (int i = 0; i < n; i++)
    lm_compiled_free(cs[i]);
  free(cs), free(pred), free(meas), free(pp), free(vs);
  lm_oracle_free(o);
  lm_data_free(d);
  lm_kernel_free(k);
}

int main(int argc, char **argv) {
  const char *ppath = NULL, *only = NULL, *wsel = "both";
  int quick = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--profile") && i + 1 < argc)
      ppath = argv[++i];
    else if (!strcmp(argv[i], "--case") && i + 1 < argc)
      only = argv[++i];
    else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
      wsel = argv[++i];
    else if (!strcmp(argv[i], "--quick"))
      quick = 1;
    else if (!strcmp(argv[i], "--detail"))
      detail = 1;
    else if (!strcmp(argv[i], "--stat") && i + 1 < argc && !strcmp(argv[i + 1], "p50"))
      use_p50 = 1, i++;
    else if (!strcmp(argv[i], "--stat") && i + 1 < argc && !strcmp(argv[i + 1], "min"))
      use_p50 = 0, i++;
    else {
      fprintf(stderr, "usage: bench_model_accuracy [--profile P] [--quick] [--case ID] "
                      "[--workers 1|2|both] [--detail] [--stat min|p50]\n");
      return 2;
    }
  }
  lm_error err = {0};
  lm_profile *prof = NULL;
  char cache[1024];
  if (!ppath && lm_profile_cache_path(lm_isa_name(LM_ISA_HOST), LM_PROFILE_QUICK, cache,
                                      sizeof cache, &err) == LM_OK) {
    ppath = cache;
    if (access(cache, R_OK) != 0) {
      lm_calib_opts co;
      lm_calib_defaults(&co);
      fprintf(stderr, "calibrating (quick) into %s\n", cache);
      /* a noisy calibration is not cached (LANEMAP_ACCEPT_NOISY=1 accepts
       * it), as for every lookup */
      char wrote[1100];
      if (lm_calibrate(&co, &prof, &err) ||
          lm_profile_save_calibrated(prof, cache, 1, 0, wrote, sizeof wrote, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
      }
      lm_profile_free(prof);
      prof = NULL;
    }
  }
  lm_profile_load_info info;
  if (!ppath || lm_profile_load(ppath, &prof, &info, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 2;
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/kernels/suite.json", LANEMAP_SOURCE_DIR);
  cJSON *suite = NULL;
  if (lm_json_load(path, &suite, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 2;
  }
  printf("# model accuracy (profile %s, measured %s)\n\n", ppath, use_p50 ? "p50" : "min");
  printf("| case | workers | variants | MAPE | Kendall tau | top-1 regret | predicted best | "
         "measured best |\n|---|---|---:|---:|---:|---:|---|---|\n");
  Acc acc = {0};
  for (int w = 1; w <= 2; w++) {
    if ((w == 1 && !strcmp(wsel, "2")) || (w == 2 && !strcmp(wsel, "1")))
      continue;
    cJSON *c;
    cJSON_ArrayForEach(c, cJSON_GetObjectItem(suite, "cases")) {
      const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(c, "id"));
      const char *kf = cJSON_GetStringValue(cJSON_GetObjectItem(c, "kernel"));
      cJSON *sh = cJSON_GetObjectItem(c, "shape");
      if (!id || !kf || (only && strcmp(only, id)))
        continue;
      char kp[1024];
      snprintf(kp, sizeof kp, "%s/kernels/%s", LANEMAP_SOURCE_DIR, kf);
      one_case(id, kp, (int64_t)cJSON_GetArrayItem(sh, 0)->valuedouble,
               (int64_t)cJSON_GetArrayItem(sh, 1)->valuedouble, prof, w, quick, &acc);
    }
  }
  int nt = acc.n < 64 ? acc.n : 64;
  lm_timing_sort(acc.tau, nt);
  printf("\ncases %d: median tau %.2f, geometric-mean top-1 regret %.1f%%, max %.1f%%, "
         "%d cases above 20%%\n",
         acc.n, nt ? acc.tau[nt / 2] : 0, 100 * expm1(acc.log_regret_sum / (acc.n ? acc.n : 1)),
         100 * acc.max_regret, acc.over20);
  cJSON_Delete(suite);
  lm_profile_free(prof);
  return 0;
}
