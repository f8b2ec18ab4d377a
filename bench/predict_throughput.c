/* bench_predict_throughput: predictions per second, for every legal
 * variant of each suite kernel over a sweep of shapes: counting
 * (lm_cost_features) plus evaluation (lm_cost_eval), and evaluation alone
 * on precomputed counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/calibrate.h"
#include "lanemap/timing.h"

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
  printf("| kernel | variants x shapes | features+eval per s | eval per s |\n|---|---:|---:|---:|\n");
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
    int64_t n = 0;
    double t0 = lm_now_ns(), sink = 0;
    for (int rep = 0; rep < 20; rep++)
      for (int v = 0; v < nv; v++)
        for (int s = 0; s < NS; s++) {
          lm_prediction pr;
          lm_cost_features(k, &vs[v], &sh[s], &c.caches, NULL, &f[v * NS + s], &err);
          lm_cost_eval(&c, &f[v * NS + s], &vs[v], &pr);
          sink += pr.ns;
          n++;
        }
    double full = n / ((lm_now_ns() - t0) * 1e-9);
    t0 = lm_now_ns();
    int64_t m = 0;
    for (int rep = 0; rep < 200; rep++)
      for (int j = 0; j < nv * NS; j++) {
        lm_prediction pr;
        lm_cost_eval(&c, &f[j], &vs[j / NS], &pr);
        sink += pr.ns;
        m++;
      }
    double ev = m / ((lm_now_ns() - t0) * 1e-9);
    printf("| %s | %d | %.2fM | %.2fM |\n", ks[i], nv * NS, full / 1e6, ev / 1e6);
    if (sink < 0)
      puts("");
    free(f);
    free(vs);
    lm_kernel_free(k);
  }
  lm_profile_free(p);
  return 0;
}
