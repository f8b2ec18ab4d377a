/* A minimal autotuning loop on top of liblanemap, the way a pipeline would
 * use the library (docs/library.md walks through it).
 *
 *   pipeline [--default-profile | --profile P] [--records OUT.jsonl]
 *            [--samples N] [--sample-ms MS] KERNEL.lk R,C [KERNEL.lk R,C]...
 *
 * For every (kernel, shape):
 *   1. load and check the kernel, bind the shape;
 *   2. enumerate the legal variants for this machine;
 *   3. predict every one with the cost model (the cached calibrated
 *      profile of this machine, calibrated quickly and cached on first use,
 *      or the uncalibrated defaults with --default-profile);
 *   4. compile only the model's top 3, verify each against the FP64
 *      oracle, and time the verified ones side by side with the library's
 *      timing harness;
 *   5. keep the fastest measured one and append one record per measured
 *      variant to the records file (schema lanemap.record/1).
 * It prints one line per (kernel, shape): the chosen variant, its measured
 * median and the model's rank of it.  Exit 0 ok, 1 no top variant
 * verified, 2 bad input, 3 system error. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lanemap/lanemap.h>

#define TOP 3

typedef struct pipeline_opts {
  int default_profile;
  const char *profile;  /* NULL: the cached calibrated one */
  const char *records;  /* where records go */
  lm_timing_opts timing;
} pipeline_opts;

typedef struct ranked {
  int index;  /* into the enumerated variants */
  double ns;  /* predicted ns per launch */
} ranked;

static int by_ns(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  return (x->ns > y->ns) - (x->ns < y->ns);
}

/* The profile the model predicts with: given, cached, or calibrated now. */
static lm_status get_profile(const pipeline_opts *o, lm_isa isa,
                             lm_profile **out, lm_error *err) {
  lm_profile_lookup_opts lo;
  lm_profile_lookup_defaults(&lo);
  lo.path = o->profile;
  lo.use_defaults = o->default_profile;
  lo.isa = isa;
  lo.mode = LM_PROFILE_QUICK;
  lo.missing = LM_PROFILE_MISSING_CALIBRATE;
  lm_profile_found found;
  lm_status st = lm_profile_lookup(&lo, out, &found, err);
  if (st == LM_OK && found.info.warning[0])
    fprintf(stderr, "pipeline: warning: %s\n", found.info.warning);
  if (st == LM_OK && found.source == LM_PROFILE_SOURCE_CALIBRATED)
    fprintf(stderr, "pipeline: no cached profile, quick calibration...\n");
  return st;
}

/* Append one record for a measured variant. */
static lm_status add_record(const pipeline_opts *o, const char *file,
                            const lm_kernel *k, long long R, long long C,
                            const lm_variant *v, const lm_profile *p,
                            double predicted_ns, const lm_timing_stats *s,
                            int nsamples, int model_rank, lm_error *err) {
  lm_record r;
  char vbuf[128], hash[17];
  lm_record_init(&r);
  lm_kernel_hash(k, hash);
  /* The record borrows these strings; only times, timestamp and extra are
   * allocated here, and released below. */
  r.kernel = (char *)file;
  r.kernel_hash = hash;
  r.R = R;
  r.C = C;
  r.variant = lm_variant_format(v, vbuf, sizeof vbuf);
  r.isa = (char *)lm_isa_name(v->isa);
  r.fingerprint = (char *)lm_profile_get_fingerprint(p)->hash;
  r.predicted = predicted_ns * 1e-9;
  r.verified = 1;
  lm_status st = lm_record_set_samples(&r, s->samples, nsamples, err);
  if (st == LM_OK)
    st = lm_record_stamp(&r, err);
  if (st == LM_OK) {
    r.extra = cJSON_CreateObject();
    cJSON_AddStringToObject(r.extra, "source", "examples/pipeline");
    cJSON_AddNumberToObject(r.extra, "model_rank", model_rank);
    st = lm_records_append(o->records, &r, err);
  }
  r.kernel = r.kernel_hash = r.variant = r.isa = r.fingerprint = NULL;
  lm_record_free(&r);
  return st;
}

/* Steps 1-5 for one (kernel, shape). */
static lm_status tune(const pipeline_opts *o, const char *file,
                      const char *shape_text, lm_error *err) {
  lm_kernel *k = NULL;
  lm_variant *vs = NULL;
  lm_profile *prof = NULL;
  ranked *rank = NULL;
  lm_compiled *cs[TOP] = {0};
  int model_rank[TOP];
  double predicted[TOP];
  lm_data *d = NULL;
  lm_oracle *orc = NULL;
  lm_timing_result tr = {0};
  lm_shape shape;
  lm_enum_opts eo;
  int n = 0, ncs = 0;
  long long R = 0, C = 0;
  lm_status st;

  if (sscanf(shape_text, "%lld,%lld", &R, &C) != 2) {
    st = lm_error_set(err, LM_EINPUT, "%s: shape: expected R,C", shape_text);
    goto done;
  }
  if ((st = lm_kernel_load(file, &k, err)) != LM_OK ||
      (st = lm_shape_parse(k, shape_text, &shape, err)) != LM_OK)
    goto done;
  lm_enum_defaults(&eo);
  if ((n = lm_variant_enumerate(k, &eo, &vs, err)) < 0) {
    st = err->status;
    goto done;
  }
  if ((st = get_profile(o, eo.isa, &prof, err)) != LM_OK)
    goto done;
  rank = calloc((size_t)n + 1, sizeof *rank);
  if (!rank) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto done;
  }
  for (int i = 0; i < n; i++) {
    lm_prediction pr;
    if ((st = lm_cost_predict(prof, k, &vs[i], &shape, &pr, err)) != LM_OK)
      goto done;
    rank[i] = (ranked){i, pr.ns};
  }
  qsort(rank, (size_t)n, sizeof *rank, by_ns);

  if ((st = lm_data_gen(k, &shape, 1, &d, err)) != LM_OK ||
      (st = lm_oracle_run(k, d, &orc, err)) != LM_OK)
    goto done;
  lm_compile_opts co;
  lm_compile_defaults(&co);
  for (int t = 0; t < n && t < TOP; t++) {
    lm_compiled *c = NULL;
    lm_verify_result vr;
    lm_error e = {0};
    const lm_variant *v = &vs[rank[t].index];
    char vbuf[128];
    if (lm_compile(k, v, &co, &c, &e) != LM_OK ||
        lm_verify(k, c, d, orc, NULL, &vr, &e) != LM_OK) {
      /* A variant that does not verify is never timed nor kept. */
      fprintf(stderr, "pipeline: %s %s: %s: skipped\n", file,
              lm_variant_format(v, vbuf, sizeof vbuf), e.msg);
      lm_compiled_free(c);
      continue;
    }
    model_rank[ncs] = t + 1;
    predicted[ncs] = rank[t].ns;
    cs[ncs++] = c;
  }
  if (ncs == 0) {
    st = lm_error_set(err, LM_EFAIL, "%s: none of the model's top %d "
                                     "variants verified", file, TOP);
    goto done;
  }
  if ((st = lm_time_variants(k, cs, ncs, d, NULL, &o->timing, &tr, err)) !=
      LM_OK)
    goto done;
  int best = 0;
  for (int i = 0; i < ncs; i++) {
    if (tr.stats[i].p50 < tr.stats[best].p50)
      best = i;
    if ((st = add_record(o, file, k, R, C, lm_compiled_variant(cs[i]), prof,
                         predicted[i], &tr.stats[i], tr.nsamples,
                         model_rank[i], err)) != LM_OK)
      goto done;
  }
  char vbuf[128];
  printf("%s %lldx%lld: %d variants, measured %d, best %s %.3f us "
         "(model rank %d, predicted %.3f us)\n",
         file, R, C, n, ncs,
         lm_variant_format(lm_compiled_variant(cs[best]), vbuf, sizeof vbuf),
         tr.stats[best].p50 * 1e-3, model_rank[best], predicted[best] * 1e-3);

done:
  lm_timing_result_free(&tr);
  for (int i = 0; i < ncs; i++)
    lm_compiled_free(cs[i]);
  lm_oracle_free(orc);
  lm_data_free(d);
  free(rank);
  lm_profile_free(prof);
  free(vs);
  lm_kernel_free(k);
  return st;
}

static int usage(void) {
  fprintf(stderr,
          "usage: pipeline [--default-profile | --profile P] "
          "[--records OUT.jsonl]\n"
          "                [--samples N] [--sample-ms MS] KERNEL.lk R,C "
          "[KERNEL.lk R,C]...\n");
  return LM_EINPUT;
}

int main(int argc, char **argv) {
  pipeline_opts o = {.records = "pipeline-records.jsonl"};
  lm_timing_defaults(&o.timing);
  int i = 1;
  for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
    if (strcmp(argv[i], "--default-profile") == 0)
      o.default_profile = 1;
    else if (strcmp(argv[i], "--profile") == 0 && i + 1 < argc)
      o.profile = argv[++i];
    else if (strcmp(argv[i], "--records") == 0 && i + 1 < argc)
      o.records = argv[++i];
    else if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc)
      o.timing.samples = atoi(argv[++i]);
    else if (strcmp(argv[i], "--sample-ms") == 0 && i + 1 < argc)
      o.timing.sample_ms = atof(argv[++i]);
    else
      return usage();
  }
  if (i == argc || (argc - i) % 2 != 0)
    return usage();
  lm_error err = {0};
  if (lm_timing_opts_check(&o.timing, &err) != LM_OK) {
    fprintf(stderr, "pipeline: %s\n", err.msg);
    return LM_EINPUT;
  }
  o.timing.warmup_ms = fmin(o.timing.warmup_ms, 10 * o.timing.sample_ms);
  for (; i < argc; i += 2) {
    lm_status st = tune(&o, argv[i], argv[i + 1], &err);
    if (st != LM_OK) {
      fprintf(stderr, "pipeline: %s\n", err.msg);
      return (int)st;
    }
  }
  return LM_OK;
}
