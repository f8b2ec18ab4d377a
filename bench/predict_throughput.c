/* bench_predict_throughput: predictions per second, for every legal
 * variant of each suite kernel over a sweep of shapes: counting
 * (lm_cost_features) plus evaluation (lm_cost_eval), evaluation alone on
 * precomputed counts, and the compiled predictor (lm_predictor_eval: a
 * new shape for every variant of the kernel at once).  Checks on the way
 * that the predictor gives lm_cost_eval's numbers (to 1e-12 relative). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/calibrate.h"
#include "lanemap/timing.h"

enum { TRIALS = 7 };

int main(void) {
  const char *ks[] = {"rmsnorm", "layernorm", "masked_softmax", "swiglu", "gelu_residual", "rope"};
  lm_profile *p;
  lm_error err = {0};
  if (lm_profile_default(LM_ISA_AVX512, &p, &err)) {
    fprintf(stderr, "%s\n", err.msg);
    return 2;
  }
  lm_coefs c;
  lm_coefs_from_profile(p, &c, &err);
  printf("| kernel | variants x shapes | features+eval per s | eval per s | compiled predictor "
         "per s |\n|---|---:|---:|---:|---:|\n");
  int status = 0;
  for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/kernels/%s.lk", LANEMAP_SOURCE_DIR, ks[i]);
    lm_kernel *k;
    if (lm_kernel_load(path, &k, &err)) {
      fprintf(stderr, "%s\n", err.msg);
      return 2;
    }
    lm_enum_opts eo;
    lm_enum_defaults(&eo);
    eo.isa = LM_ISA_AVX512;
    lm_variant *vs;
    int nv = lm_variant_enumerate(k, &eo, &vs, &err);
    enum { NS = 16 };
    lm_shape sh[NS];
    for (int s = 0; s < NS; s++)
      lm_shape_bind(k, 1 + 97 * s, 66 + 256 * s, NULL, &sh[s], &err);
    lm_features *f = malloc(sizeof *f * (size_t)nv * NS);
    /* each rate is the best of TRIALS passes: the least disturbed by
     * other load on a shared machine */
    double full = 0, ev = 0, cp = 0, sink = 0;
    for (int trial = 0; trial < TRIALS; trial++) {
      int64_t n = 0;
      double t0 = lm_now_ns();
      for (int rep = 0; rep < 4; rep++)
        for (int v = 0; v < nv; v++)
          for (int s = 0; s < NS; s++) {
            lm_prediction pr;
            lm_cost_features(k, &vs[v], &sh[s], &c.caches, NULL, &f[v * NS + s], &err);
            lm_cost_eval(&c, &f[v * NS + s], &vs[v], &pr);
            sink += pr.ns;
            n++;
          }
      full = fmax(full, n / ((lm_now_ns() - t0) * 1e-9));
    }
    for (int trial = 0; trial < TRIALS; trial++) {
      double t0 = lm_now_ns();
      int64_t m = 0;
      for (int rep = 0; rep < 40; rep++)
        for (int j = 0; j < nv * NS; j++) {
          lm_prediction pr;
          lm_cost_eval(&c, &f[j], &vs[j / NS], &pr);
          sink += pr.ns;
          m++;
        }
      ev = fmax(ev, m / ((lm_now_ns() - t0) * 1e-9));
    }
    lm_predictor *pr;
    if (lm_predictor_new(p, k, vs, nv, &pr, &err)) {
      fprintf(stderr, "%s\n", err.msg);
      return 2;
    }
    double *ns = malloc(sizeof *ns * (size_t)nv);
    for (int s = 0; s < NS; s++) { /* same numbers as the slow path */
      lm_predictor_eval(pr, &sh[s], ns);
      for (int v = 0; v < nv; v++) {
        lm_prediction pe;
        lm_cost_eval(&c, &f[v * NS + s], &vs[v], &pe);
        if (fabs(ns[v] - pe.ns) > 1e-12 * pe.ns) {
          fprintf(stderr, "%s: predictor %.17g != eval %.17g\n", ks[i], ns[v], pe.ns);
          status = 1;
        }
      }
    }
    for (int trial = 0; trial < TRIALS; trial++) {
      double t0 = lm_now_ns();
      int64_t q = 0;
      for (int rep = 0; rep < 40; rep++)
        for (int s = 0; s < NS; s++) {
          lm_predictor_eval(pr, &sh[s], ns);
          sink += ns[rep % nv];
          q += nv;
        }
      cp = fmax(cp, q / ((lm_now_ns() - t0) * 1e-9));
    }
    printf("| %s | %d | %.2fM | %.2fM | %.2fM |\n", ks[i], nv * NS, full / 1e6, ev / 1e6,
           cp / 1e6);
    free(ns);
    lm_predictor_free(pr);
    if (sink < 0)
      puts("");
    free(f);
    free(vs);
    lm_kernel_free(k);
  }
  lm_profile_free(p);
  return status;
}
