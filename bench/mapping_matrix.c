/* bench_mapping_matrix: every suite case, every legal single-threaded
 * variant on the host ISA, measured interleaved in one process.  Reports
 * per case the best variant of each mapping family (L=1 program, 1<L<W
 * partial, L=W packet-local) and the spread between the best and the
 * worst family.  For RMSNorm it also times a hand-written AVX-512 kernel
 * in TorchInductor's structure (one read-and-reduce loop, a re-read output
 * loop, masked tails, a horizontal reduce) and reports the paired ratio of
 * the best lanemap variant over it.  Every entry is verified against the
 * FP64 oracle before it is timed.
 *
 *   bench_mapping_matrix [--quick] [--case ID] [--samples N] [--sample-ms MS]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/json.h"

#include "bench/anchors/anchors.h"
#include "lanemap/verify.h"

/* The hand-written comparison kernel is bench/anchors' RMSNorm
 * (anchor_hand_rmsnorm: the same arithmetic as kernels/rmsnorm.lk, no
 * fast-math), so the comparison is about code generation. */

/* ---- timing items ---------------------------------------------------------- */

typedef struct Entry {
  lm_entry_fn fn;
  const uint64_t *args;
  int64_t R;
} Entry;

static void run_entry(void *ctx, int64_t reps) {
  Entry *e = ctx;
  for (int64_t i = 0; i < reps; i++)
    e->fn(e->args, 0, e->R);
}

static int family(const lm_variant *v) {
  return v->l == 1 ? 0 : v->l == v->w ? 2 : 1;
}
static const char *family_name[3] = {"L=1 program", "1<L<W partial", "L=W local"};

typedef struct Opts {
  int quick, samples;
  double sample_ms;
  const char *only;
} Opts;

static int bench_case(const char *id, const char *kfile, int64_t R, int64_t C,
                      const Opts *op) {
  lm_error err = {0};
  lm_kernel *k = NULL;
  lm_shape sh;
  lm_data *d = NULL;
  lm_oracle *o = NULL;
  if (lm_kernel_load(kfile, &k, &err) != LM_OK ||
      lm_shape_bind(k, R, C, NULL, &sh, &err) != LM_OK ||
      lm_data_gen(k, &sh, 1, &d, &err) != LM_OK ||
      lm_oracle_run(k, d, &o, &err) != LM_OK) {
    fprintf(stderr, "%s: %s\n", id, err.msg);
    return 2;
  }
  lm_enum_opts eo;
  lm_enum_defaults(&eo);
  lm_variant *vs;
  int nv = lm_variant_enumerate(k, &eo, &vs, &err);
  int hand = strcmp(k->name, "rmsnorm") == 0 && anchor_hand_runnable();
  lm_compiled **cs = calloc((size_t)nv, sizeof *cs);
  lm_timed *items = calloc((size_t)nv + 1, sizeof *items);
  Entry *ents = calloc((size_t)nv + 1, sizeof *ents);
  char (*names)[128] = calloc((size_t)nv + 1, sizeof *names);
  uint64_t *args = lm_args_pack(k, d);
  int n = 0, bad = 0;
  for (int i = 0; i < nv; i++) {
    lm_verify_result res;
    if (lm_compile(k, &vs[i], NULL, &cs[n], &err) != LM_OK ||
        lm_verify(k, cs[n], d, o, NULL, &res, &err) != LM_OK) {
      fprintf(stderr, "%s: variant failed: %s\n", id, err.msg);
      lm_compiled_free(cs[n]);
      bad++;
      continue;
    }
    lm_variant_format(&vs[i], names[n], sizeof names[n]);
    ents[n] = (Entry){lm_compiled_entry(cs[n]), args, R};
    items[n] = (lm_timed){names[n], run_entry, &ents[n]};
    n++;
  }
  int hi = -1;
  if (hand) {
    lm_verify_result res;
    if (lm_verify_entry(k, anchor_hand_rmsnorm, d, o, &res, &err) != LM_OK) {
      fprintf(stderr, "%s: hand-written kernel fails the oracle: %s\n", id, err.msg);
    } else {
      hi = n;
      snprintf(names[n], sizeof names[n], "hand-written AVX-512 (Inductor structure)");
      ents[n] = (Entry){anchor_hand_rmsnorm, args, R};
      items[n] = (lm_timed){names[n], run_entry, &ents[n]};
    }
  }
  int ni = n + (hi >= 0);
  lm_timing_opts to;
  lm_timing_defaults(&to);
  to.samples = op->samples;
  to.sample_ms = op->sample_ms;
  to.warmup_ms = op->quick ? 20 : 100;
  lm_timing_result tr = {0};
  if (lm_time_compare(&to, ni, items, &tr, &err) != LM_OK) {
    fprintf(stderr, "%s: %s\n", id, err.msg);
    return 2;
  }
  int best[3] = {-1, -1, -1}, worst = -1, all_best = -1;
  for (int i = 0; i < n; i++) {
    int f = family(lm_compiled_variant(cs[i]));
    if (best[f] < 0 || tr.stats[i].p50 < tr.stats[best[f]].p50)
      best[f] = i;
    if (all_best < 0 || tr.stats[i].p50 < tr.stats[all_best].p50)
      all_best = i;
  }
  for (int f = 0; f < 3; f++)
    if (best[f] >= 0 && (worst < 0 || tr.stats[best[f]].p50 > tr.stats[worst].p50))
      worst = best[f];
  printf("\n## %s  (%d variants verified and timed%s)\n", id, n,
         bad ? ", some FAILED" : "");
  printf("| family | best variant | p50 us | min us |\n|---|---|---:|---:|\n");
  for (int f = 0; f < 3; f++)
    if (best[f] >= 0)
      printf("| %s | `%s` | %.2f | %.2f |\n", family_name[f], names[best[f]],
             tr.stats[best[f]].p50 / 1e3, tr.stats[best[f]].min / 1e3);
  printf("\nfamily spread (worst best-of-family / best, paired): %.2fx\n",
         tr.ratio[worst * ni + all_best]);
  if (hi >= 0)
    printf("\nhand-written AVX-512: p50 %.2f us; best lanemap / hand-written "
           "(paired): %.3f\n",
           tr.stats[hi].p50 / 1e3, tr.ratio[all_best * ni + hi]);
  fflush(stdout);
  lm_timing_result_free(&tr);
  for (int i = 0; i < n; i++)
    lm_compiled_free(cs[i]);
  free(cs);
  free(items);
  free(ents);
  free(names);
  free(args);
  free(vs);
  lm_oracle_free(o);
  lm_data_free(d);
  lm_kernel_free(k);
  return bad ? 1 : 0;
}

int main(int argc, char **argv) {
  Opts op = {0, 7, 30, NULL};
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--quick") == 0)
      op.quick = 1, op.samples = 5, op.sample_ms = 5;
    else if (strcmp(argv[i], "--case") == 0 && i + 1 < argc)
      op.only = argv[++i];
    else if (strcmp(argv[i], "--samples") == 0 && i + 1 < argc)
      op.samples = atoi(argv[++i]);
    else if (strcmp(argv[i], "--sample-ms") == 0 && i + 1 < argc)
      op.sample_ms = atof(argv[++i]);
    else {
      fprintf(stderr, "usage: bench_mapping_matrix [--quick] [--case ID] "
                      "[--samples N] [--sample-ms MS]\n");
      return 2;
    }
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/kernels/suite.json", LANEMAP_SOURCE_DIR);
  cJSON *suite = NULL;
  lm_error err;
  if (lm_json_load(path, &suite, &err) != LM_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return 2;
  }
  printf("# mapping matrix: single-threaded, host ISA, %d samples x %.0f ms\n",
         op.samples, op.sample_ms);
  int rc = 0;
  cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(suite, "cases")) {
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(c, "id"));
    const char *kf = cJSON_GetStringValue(cJSON_GetObjectItem(c, "kernel"));
    cJSON *sh = cJSON_GetObjectItem(c, "shape");
    if (!id || !kf || cJSON_GetArraySize(sh) != 2)
      continue;
    if (op.only && strcmp(op.only, id) != 0)
      continue;
    char kpath[1024];
    snprintf(kpath, sizeof kpath, "%s/kernels/%s", LANEMAP_SOURCE_DIR, kf);
    int r = bench_case(id, kpath, (int64_t)cJSON_GetArrayItem(sh, 0)->valuedouble,
                       (int64_t)cJSON_GetArrayItem(sh, 1)->valuedouble, &op);
    if (r > rc)
      rc = r;
  }
  cJSON_Delete(suite);
  return rc;
}
