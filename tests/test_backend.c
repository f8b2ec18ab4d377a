/* Backend claims: every legal variant of every kernel compiles, runs, and
 * matches the FP64 oracle on the suite shapes and on edge shapes, with the
 * guards around every output intact, on every ISA target this machine can
 * run.  LANEMAP_TEST_SAMPLE=N keeps one variant in N (seeded), for slow
 * builds such as the sanitizer preset; the full matrix is the default. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lanemap/runtime.h"
#include "lanemap/timing.h"
#include "lanemap/verify.h"

static char *path_of(const char *rel) {
  static char buf[4][1024];
  static int i;
  char *b = buf[i++ % 4];
  snprintf(b, 1024, "%s/%s", LANEMAP_SOURCE_DIR, rel);
  return b;
}

static lm_kernel *load(const char *rel) {
  lm_kernel *k = NULL;
  lm_error err = {0};
  lm_status s = lm_kernel_load(path_of(rel), &k, &err);
  cr_assert_eq(s, LM_OK, "%s: %s", rel, err.msg);
  return k;
}

typedef struct Shape {
  int64_t R, C;
} Shape;

/* Edge shapes (R, C): single rows, R < W, R not a multiple of W/L, C = 1,
 * C < L, C not a multiple of W, C just above a multiple of 16. */
static const Shape edges[] = {{1, 1},  {1, 65}, {3, 3},  {2, 17}, {17, 16},
                              {37, 33}, {5, 100}, {64, 8}, {9, 2}, {33, 31}};

static int col_coef(const lm_kernel *k) {
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind == LM_PARAM_BUFFER && k->params[i].rank == 2)
      return (int)(k->params[i].dims[1].coef > 0 ? k->params[i].dims[1].coef : 1);
  return 1;
}

/* The suite shapes of a bundled kernel file. */
static int suite_shapes(const char *file, Shape *out, int max) {
  char *text = NULL;
  lm_error err;
  if (lm_file_read(path_of("kernels/suite.json"), &text, NULL, &err) != LM_OK)
    return 0;
  cJSON *j = cJSON_Parse(text);
  free(text);
  int n = 0;
  cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) {
    const char *kf = cJSON_GetStringValue(cJSON_GetObjectItem(c, "kernel"));
    cJSON *sh = cJSON_GetObjectItem(c, "shape");
    if (kf && strcmp(kf, file) == 0 && n < max)
      out[n++] = (Shape){(int64_t)cJSON_GetArrayItem(sh, 0)->valuedouble,
                         (int64_t)cJSON_GetArrayItem(sh, 1)->valuedouble};
  }
  cJSON_Delete(j);
  return n;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static int sampled(void) {
  const char *s = getenv("LANEMAP_TEST_SAMPLE");
  int every = s ? atoi(s) : 1;
  if (every <= 1)
    return 1;
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng % (uint64_t)every == 0;
}

/* Verify every legal variant of `rel` on every runnable ISA target, in both
 * floating-point modes (relaxed where it applies). */
static void check_all(const char *rel, const char *suite_name) {
  lm_kernel *k = load(rel);
  Shape shapes[32];
  int ns = suite_name ? suite_shapes(suite_name, shapes, 16) : 0;
  int coef = col_coef(k);
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++)
    shapes[ns++] = (Shape){edges[i].R, edges[i].C * coef};
  /* bind, generate and run the oracle once per shape */
  lm_data *data[32];
  lm_oracle *orc[32];
  for (int s = 0; s < ns; s++) {
    lm_shape sh;
    lm_error err = {0};
    cr_assert_eq(lm_shape_bind(k, shapes[s].R, shapes[s].C, NULL, &sh, &err),
                 LM_OK, "%s %lldx%lld: %s", rel, (long long)shapes[s].R,
                 (long long)shapes[s].C, err.msg);
    cr_assert_eq(lm_data_gen(k, &sh, 7, &data[s], &err), LM_OK, "%s", err.msg);
    cr_assert_eq(lm_oracle_run(k, data[s], &orc[s], &err), LM_OK, "%s", err.msg);
  }
  int checked = 0, failed = 0, variants = 0;
  const lm_isa isas[] = {LM_ISA_SSE42, LM_ISA_AVX2, LM_ISA_AVX512};
  for (size_t ii = 0; ii < 3; ii++) {
    if (!lm_isa_runnable(isas[ii]))
      continue;
    lm_enum_opts eo;
    lm_enum_defaults(&eo);
    eo.isa = isas[ii];
    eo.fps = 1u << LM_FP_STRICT | 1u << LM_FP_RELAXED; /* both modes */
    lm_variant *vs;
    lm_error err = {0};
    int nv = lm_variant_enumerate(k, &eo, &vs, &err);
    cr_assert_gt(nv, 0, "%s: no variants: %s", rel, err.msg);
    for (int vi = 0; vi < nv; vi++) {
      if (!sampled())
        continue;
      char name[128];
      lm_variant_format(&vs[vi], name, sizeof name);
      lm_compiled *c = NULL;
      lm_status st = lm_compile(k, &vs[vi], NULL, &c, &err);
      cr_expect_eq(st, LM_OK, "%s %s: compile: %s", rel, name, err.msg);
      if (st != LM_OK) {
        failed++;
        continue;
      }
      variants++;
      for (int s = 0; s < ns; s++) {
        lm_verify_result res;
        st = lm_verify(k, c, data[s], orc[s], NULL, &res, &err);
        checked++;
        if (st != LM_OK)
          failed++;
        cr_expect_eq(st, LM_OK, "%s %s %lldx%lld: %s", rel, name,
                     (long long)shapes[s].R, (long long)shapes[s].C, err.msg);
      }
      lm_compiled_free(c);
    }
    free(vs);
  }
  printf("%s: %d variants x shapes checked, %d failed (%d variants)\n", rel,
         checked, failed, variants);
  for (int s = 0; s < ns; s++) {
    lm_oracle_free(orc[s]);
    lm_data_free(data[s]);
  }
  lm_kernel_free(k);
}

Test(backend, every_rmsnorm_variant_matches_the_oracle) {
  check_all("kernels/rmsnorm.lk", "rmsnorm.lk");
}
Test(backend, every_layernorm_variant_matches_the_oracle) {
  check_all("kernels/layernorm.lk", "layernorm.lk");
}
Test(backend, every_masked_softmax_variant_matches_the_oracle) {
  check_all("kernels/masked_softmax.lk", "masked_softmax.lk");
}
Test(backend, every_swiglu_variant_matches_the_oracle) {
  check_all("kernels/swiglu.lk", "swiglu.lk");
}
Test(backend, every_gelu_residual_variant_matches_the_oracle) {
  check_all("kernels/gelu_residual.lk", "gelu_residual.lk");
}
Test(backend, every_rope_variant_matches_the_oracle) {
  check_all("kernels/rope.lk", "rope.lk");
}
Test(backend, ragged_rows_including_empty_ones_match_in_every_variant) {
  check_all("tests/kernels/ragged_softmax.lk", NULL);
}
Test(backend, per_row_scalar_outputs_match_in_every_variant) {
  check_all("tests/kernels/logsumexp.lk", NULL);
}
Test(backend, f64_kernels_match_in_every_variant) {
  check_all("tests/kernels/rmsnorm_f64.lk", NULL);
}
Test(backend, branches_excluding_lane_zero_and_index_values_match) {
  check_all("tests/kernels/lane_branch.lk", NULL);
}
Test(backend, bool_private_arrays_fall_back_and_still_match) {
  check_all("tests/kernels/snap_bool.lk", NULL);
}
Test(backend, strided_views_with_partial_coverage_keep_unwritten_sentinels) {
  check_all("tests/kernels/stride_partial.lk", NULL);
}
Test(backend, every_math_function_is_within_tolerance) {
  check_all("tests/kernels/math_all.lk", NULL);
}

/* ---- static counts and realizations ---------------------------------- */

static lm_counts counts_of(const char *rel, const char *variant) {
  lm_kernel *k = load(rel);
  lm_variant v;
  lm_error err = {0};
  cr_assert_eq(lm_variant_parse(variant, &v, &err), LM_OK, "%s", err.msg);
  lm_compiled *c;
  lm_compile_opts o;
  lm_compile_defaults(&o);
  o.want_asm = 1;
  cr_assert_eq(lm_compile(k, &v, &o, &c, &err), LM_OK, "%s", err.msg);
  lm_counts n = *lm_compiled_counts(c);
  lm_compiled_free(c);
  lm_kernel_free(k);
  return n;
}

Test(backend, slot_realization_emits_contiguous_slot_accesses_and_blends) {
  lm_counts n = counts_of("kernels/rmsnorm.lk",
                          "x86-64-v3/w8/l1/priv=slot/glob=gather/phase=snapshot/t1");
  cr_expect_gt(n.emit_slot_reads, 0);
  cr_expect_gt(n.emit_slot_writes, 0);
  cr_expect_gt(n.emit_priv_blends, 0, "masked slot writes blend with the old value");
  cr_expect_eq(n.emit_priv_gathers, 0);
  cr_expect_eq(n.emit_priv_scatters, 0);
  cr_expect_eq(n.emit_fallbacks, 0);
}

Test(backend, gather_realization_emits_gathers_for_private_arrays) {
  lm_counts n = counts_of("kernels/rmsnorm.lk",
                          "x86-64-v4/w16/l1/priv=gather/glob=gather/phase=snapshot/t1");
  cr_expect_gt(n.emit_priv_gathers, 0);
  cr_expect_gt(n.emit_priv_scatters, 0);
  cr_expect_eq(n.emit_slot_reads, 0);
  cr_expect_gt(n.ir_gathers, 0);
  cr_expect_gt(n.asm_gathers, 0, "AVX-512 gathers survive to machine code");
}

Test(backend, masked_realization_emits_native_masked_private_ops) {
  lm_counts n = counts_of("kernels/rmsnorm.lk",
                          "x86-64-v4/w16/l16/priv=masked/phase=snapshot/t1");
  cr_expect_gt(n.emit_priv_masked_loads + n.emit_priv_masked_stores, 0);
  cr_expect_eq(n.emit_priv_blends, 0);
  cr_expect_gt(n.asm_kmasked, 0, "AVX-512 uses k-masks");
}

Test(backend, packet_local_uses_contiguous_loads_and_horizontal_reduction) {
  lm_counts n = counts_of("kernels/rmsnorm.lk",
                          "x86-64-v4/w16/l16/phase=reread/t1");
  cr_expect_gt(n.emit_glob_vector_loads, 0);
  cr_expect_eq(n.emit_glob_gathers, 0);
  cr_expect_eq(n.emit_hreduce_steps, 4, "log2(16) butterfly steps");
}

Test(backend, transposed_program_mapping_has_no_gathers_in_its_main_loop) {
  lm_counts n = counts_of("kernels/swiglu.lk", "x86-64-v4/w16/l1/glob=transpose/t1");
  cr_expect_gt(n.emit_transposes, 0);
  cr_expect_gt(n.emit_glob_vector_loads, 0);
}

Test(backend, bool_private_arrays_are_counted_as_fallbacks_with_a_reason) {
  lm_counts n = counts_of("tests/kernels/snap_bool.lk",
                          "x86-64-v4/w16/l4/priv=slot/glob=gather/phase=snapshot/t1");
  cr_expect_gt(n.emit_fallbacks, 0);
  cr_expect(strstr(n.fallback_reason, "4- or 8-byte") != NULL, "%s",
            n.fallback_reason);
}

/* ---- multi-worker launches ----------------------------------------------- */

Test(backend, multi_worker_launches_match_the_oracle) {
  lm_kernel *k = load("kernels/layernorm.lk");
  lm_shape sh;
  lm_error err = {0};
  cr_assert_eq(lm_shape_bind(k, 203, 77, NULL, &sh, &err), LM_OK, "%s", err.msg);
  lm_data *d;
  lm_oracle *o;
  cr_assert_eq(lm_data_gen(k, &sh, 3, &d, &err), LM_OK);
  cr_assert_eq(lm_oracle_run(k, d, &o, &err), LM_OK);
  const char *vs[] = {"host/w16/l1/priv=slot/glob=gather/phase=snapshot/t2/g16",
                      "host/w16/l16/phase=reread/t2/g1",
                      "host/w16/l4/priv=masked/glob=transpose/phase=snapshot/t2/g8"};
  for (size_t i = 0; i < 3; i++) {
    lm_variant v;
    if (lm_variant_parse(vs[i], &v, &err) != LM_OK || lm_variant_check(k, &v, NULL) != LM_OK)
      continue; /* a host without AVX-512 has other widths */
    lm_compiled *c;
    cr_assert_eq(lm_compile(k, &v, NULL, &c, &err), LM_OK, "%s", err.msg);
    lm_verify_result res;
    cr_expect_eq(lm_verify(k, c, d, o, NULL, &res, &err), LM_OK, "%s: %s", vs[i], err.msg);
    lm_compiled_free(c);
  }
  lm_oracle_free(o);
  lm_data_free(d);
  lm_kernel_free(k);
}

/* lm_time_variants with no pool times the launches on the shared pool, and
 * watches that pool: the verdict counts its workers' joins, and the pinned
 * timing thread keeps them off its CPU (a worker left beside the timing
 * thread joins a launch only when the scheduler preempts the caller, and a
 * t2 variant then times as t1). */
Test(backend, timing_variants_without_a_pool_watches_the_shared_pool) {
  if (lm_pool_threads(lm_pool_shared()) < 1)
    cr_skip_test("one CPU: the shared pool has no threads");
  lm_kernel *k = load("kernels/rmsnorm.lk");
  lm_shape sh;
  lm_error err = {0};
  cr_assert_eq(lm_shape_bind(k, 64, 256, NULL, &sh, &err), LM_OK, "%s", err.msg);
  lm_data *d;
  cr_assert_eq(lm_data_gen(k, &sh, 3, &d, &err), LM_OK);
  lm_variant v;
  cr_assert_eq(lm_variant_parse("host/w8/l8/phase=reread/t2/static", &v, &err),
               LM_OK, "%s", err.msg);
  lm_compiled *c;
  cr_assert_eq(lm_compile(k, &v, NULL, &c, &err), LM_OK, "%s", err.msg);
  lm_timing_opts to;
  lm_timing_defaults(&to);
  to.samples = 3;
  to.sample_ms = 1;
  to.warmup_ms = 1;
  cr_assert_null(to.pool);
  lm_timing_result tr = {0};
  cr_assert_eq(lm_time_variants(k, &c, 1, d, NULL, &to, &tr, &err), LM_OK,
               "%s", err.msg);
  cr_expect_gt(tr.noise.wanted, 0, "the shared pool's launches were not watched");
  lm_timing_result_free(&tr);
  lm_compiled_free(c);
  lm_data_free(d);
  lm_kernel_free(k);
}

/* Eight workers on a machine with two cores (a pool of 7 threads and the
 * caller): every legal t8 variant of each bundled kernel, at the
 * smallest grain (one packet per chunk), on shapes with a short last
 * chunk, few chunks, and fewer rows than workers.  Preempted workers
 * leave their chunks to the others; the answer must not change
 * (docs/runtime.md). */
Test(backend, eight_workers_on_two_cores_match_the_oracle_in_every_variant,
     .timeout = 600) {
  static const char *files[] = {"kernels/rmsnorm.lk", "kernels/layernorm.lk",
                                "kernels/masked_softmax.lk", "kernels/swiglu.lk",
                                "kernels/gelu_residual.lk", "kernels/rope.lk"};
  static const Shape shapes[] = {{203, 77}, {16, 33}, {5, 65}};
  lm_error err = {0};
  lm_pool *pool = lm_pool_new(7, &err);
  cr_assert_not_null(pool, "%s", err.msg);
  int checked = 0;
  for (size_t f = 0; f < sizeof files / sizeof *files; f++) {
    lm_kernel *k = load(files[f]);
    int coef = col_coef(k);
    lm_data *d[3];
    lm_oracle *o[3];
    for (int s = 0; s < 3; s++) {
      lm_shape sh;
      cr_assert_eq(lm_shape_bind(k, shapes[s].R, shapes[s].C * coef, NULL, &sh, &err),
                   LM_OK, "%s: %s", files[f], err.msg);
      cr_assert_eq(lm_data_gen(k, &sh, 5, &d[s], &err), LM_OK, "%s", err.msg);
      cr_assert_eq(lm_oracle_run(k, d[s], &o[s], &err), LM_OK, "%s", err.msg);
    }
    lm_enum_opts eo;
    lm_enum_defaults(&eo);
    eo.workers[0] = 8;
    eo.grains[0] = 1; /* the smallest chunks: the most claims */
    lm_variant *vs;
    int nv = lm_variant_enumerate(k, &eo, &vs, &err);
    cr_assert_gt(nv, 0, "%s: %s", files[f], err.msg);
    for (int v = 0; v < nv; v++) {
      char name[128];
      lm_variant_format(&vs[v], name, sizeof name);
      cr_assert_eq(vs[v].workers, 8, "%s", name);
      lm_compiled *c = NULL;
      cr_assert_eq(lm_compile(k, &vs[v], NULL, &c, &err), LM_OK, "%s: %s", name, err.msg);
      for (int s = 0; s < 3; s++) {
        lm_verify_result res;
        cr_expect_eq(lm_verify(k, c, d[s], o[s], pool, &res, &err), LM_OK, "%s %s %lldx%lld: %s",
                     files[f], name, (long long)shapes[s].R, (long long)shapes[s].C, err.msg);
        checked++;
      }
      lm_compiled_free(c);
    }
    free(vs);
    for (int s = 0; s < 3; s++) {
      lm_oracle_free(o[s]);
      lm_data_free(d[s]);
    }
    lm_kernel_free(k);
  }
  printf("eight workers: %d variant x shape checks\n", checked);
  lm_pool_free(pool);
}

/* ---- variants ------------------------------------------------------------- */

Test(variant, strings_round_trip) {
  const char *s[] = {"x86-64-v4/w16/l1/priv=slot/glob=transpose/phase=snapshot/t2/g64",
                     "x86-64-v3/w8/l8/phase=reread/t1", "x86-64-v2/w4/l2/glob=gather/t1",
                     "host/w16/l16/t4/g1", "x86-64-v4/w16/l16/t2/static",
                     "x86-64-v3/w8/l1/glob=transpose/t8/dyn16"};
  for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
    lm_variant v;
    lm_error err = {0};
    cr_assert_eq(lm_variant_parse(s[i], &v, &err), LM_OK, "%s: %s", s[i], err.msg);
    char buf[128];
    cr_expect_str_eq(lm_variant_format(&v, buf, sizeof buf), s[i]);
  }
}

Test(variant, malformed_strings_are_rejected_with_the_field) {
  const char *bad[] = {"", "x86-64-v9/w16/l1/t1", "x86-64-v4/w16/l3/glob=gather/t1",
                       "x86-64-v4/w32/l1/glob=gather/t1", "x86-64-v4/w16/l16/glob=gather/t1",
                       "x86-64-v4/w16/l1/t1", "x86-64-v4/w16/l16/priv=slot/t1",
                       "x86-64-v4/w16/l16/t2", "x86-64-v4/w16/l16/t1/g4",
                       "x86-64-v4/w16/l4/glob=gather/t2/g3", "x86-64-v4/w16/l16/t0",
                       "x86-64-v4/l16/w16/t1", "x86-64-v4/w16/l16/t1/extra",
                       "x86-64-v4/w16/l16/phase=later/t1", "x86-64-v2/w16/l16/t1",
                       "x86-64-v4/w16/l16/t1/static", "x86-64-v4/w16/l16/t2/dyn0",
                       "x86-64-v4/w16/l16/t2/dyn4/g16", "x86-64-v4/w16/l16/t2/static/static",
                       "x86-64-v4/w16/l16/t2/dyn-1", "x86-64-v4/w16/l16/t2/Static"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    lm_variant v;
    lm_error err = {0};
    cr_expect_eq(lm_variant_parse(bad[i], &v, &err), LM_EINPUT, "'%s' accepted", bad[i]);
    cr_expect(err.msg[0] != 0, "'%s' has no message", bad[i]);
  }
}

/* The cut of a launch, worked by hand: rows per chunk are whole packets,
 * static gives each worker one block, dynK about K chunks per worker, gG
 * fixed chunks claimed in batches; busiest is in packets. */
Test(variant, cuts_are_whole_packets_and_name_the_busiest_share) {
  struct {
    const char *v;
    int64_t R;
    int64_t grain, chunks, batch, claims;
    double busiest;
  } cases[] = {
      /* 3 packets of 16 rows over 2 workers: blocks of 2 and 1 packets */
      {"x86-64-v4/w16/l1/glob=transpose/t2/static", 33, 32, 2, 1, 0, 2},
      {"x86-64-v4/w16/l16/t2/static", 1000, 500, 2, 1, 0, 500},
      /* 8 chunks of 125 rows, one claim each */
      {"x86-64-v4/w16/l16/t2/dyn4", 1000, 125, 8, 1, 8, 500},
      /* 7 packets, 4 wanted per worker: 7 chunks of 1, claims 0,2,4,6 on worker 0 */
      {"x86-64-v4/w16/l1/glob=gather/t2/dyn4", 100, 16, 7, 1, 7, 4},
      /* 256 chunks of 1 row in batches of 256/(2*8) = 16: 16 claims, 8 each */
      {"x86-64-v4/w16/l16/t2/g1", 256, 1, 256, 16, 16, 128},
      /* one row: one chunk, run inline */
      {"x86-64-v4/w16/l16/t2/dyn16", 1, 1, 1, 1, 1, 1},
      {"x86-64-v4/w16/l16/t1", 1000, 1000, 1, 1, 0, 1000},
      /* 4 workers, 10 packets: static blocks of 3, the last of 1 */
      {"x86-64-v4/w16/l16/t4/static", 10, 3, 4, 1, 0, 3},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lm_variant v;
    lm_error err = {0};
    cr_assert_eq(lm_variant_parse(cases[i].v, &v, &err), LM_OK, "%s", err.msg);
    lm_cut c;
    lm_variant_cut(&v, cases[i].R, &c);
    cr_expect_eq(c.grain, cases[i].grain, "%s: grain %lld", cases[i].v, (long long)c.grain);
    cr_expect_eq(c.chunks, cases[i].chunks, "%s: chunks %lld", cases[i].v, (long long)c.chunks);
    cr_expect_eq(c.batch, cases[i].batch, "%s: batch %lld", cases[i].v, (long long)c.batch);
    cr_expect_eq(c.claims, cases[i].claims, "%s: claims %lld", cases[i].v, (long long)c.claims);
    cr_expect_eq(c.busiest, cases[i].busiest, "%s: busiest %g", cases[i].v, c.busiest);
  }
}

Test(variant, phase_must_match_whether_the_kernel_reuses_tiles) {
  lm_kernel *rms = load("kernels/rmsnorm.lk"), *glu = load("kernels/swiglu.lk");
  lm_variant v;
  lm_error err = {0};
  cr_assert_eq(lm_variant_parse("x86-64-v4/w16/l16/t1", &v, &err), LM_OK);
  cr_expect_eq(lm_variant_check(rms, &v, &err), LM_EINPUT);
  cr_expect_eq(lm_variant_check(glu, &v, &err), LM_OK);
  cr_assert_eq(lm_variant_parse("x86-64-v4/w16/l16/phase=reread/t1", &v, &err), LM_OK);
  cr_expect_eq(lm_variant_check(rms, &v, &err), LM_OK);
  cr_expect_eq(lm_variant_check(glu, &v, &err), LM_EINPUT);
  lm_kernel_free(rms);
  lm_kernel_free(glu);
}

Test(variant, enumeration_lists_only_legal_variants_with_both_avx512_widths) {
  lm_kernel *k = load("kernels/rmsnorm.lk");
  lm_enum_opts o;
  lm_enum_defaults(&o);
  o.isa = LM_ISA_AVX512;
  lm_variant *vs;
  lm_error err = {0};
  int n = lm_variant_enumerate(k, &o, &vs, &err);
  /* (W,L) pairs: w16 x 5 L + w8 x 4 L; L<W doubles for glob; x4 phase/priv */
  cr_expect_eq(n, (7 * 2 + 2) * 4);
  int w8 = 0;
  for (int i = 0; i < n; i++) {
    cr_expect_eq(lm_variant_check(k, &vs[i], NULL), LM_OK);
    w8 += vs[i].w == 8;
  }
  cr_expect_gt(w8, 0);
  free(vs);
  lm_kernel_free(k);
}

/* ---- the verifier itself can fail -------------------------------------- */

/* Hand-written swiglu entries with the lanemap ABI: one correct, one that
 * writes one element past the output, one that is off by 1e-3. */
static void swiglu_ref(const void *args, int64_t first, int64_t count, int mode) {
  const uint64_t *a = args;
  const float *x = (const float *)(uintptr_t)a[0], *b = (const float *)(uintptr_t)a[1];
  float *y = (float *)(uintptr_t)a[2];
  int64_t C = (int64_t)a[3 + 1];
  for (int64_t r = first; r < first + count; r++)
    for (int64_t j = 0; j < C; j++) {
      float v = x[r * C + j];
      y[r * C + j] = v / (1 + expf(-v)) * b[r * C + j] + (mode == 2 ? 1e-3f : 0);
    }
  if (mode == 1 && first + count == (int64_t)a[3])
    y[(first + count) * C] = 0; /* one element past the end */
}
static void swiglu_ok(const void *a, int64_t f, int64_t n) { swiglu_ref(a, f, n, 0); }
/* correct outputs, but it scribbles on its first input */
static void swiglu_writes_input(const void *a, int64_t f, int64_t n) {
  swiglu_ref(a, f, n, 0);
  ((float *)(uintptr_t)((const uint64_t *)a)[0])[0] = 42;
}
static void swiglu_overrun(const void *a, int64_t f, int64_t n) { swiglu_ref(a, f, n, 1); }
static void swiglu_off(const void *a, int64_t f, int64_t n) { swiglu_ref(a, f, n, 2); }

Test(verify, catches_guard_overruns_and_tolerance_misses) {
  lm_kernel *k = load("kernels/swiglu.lk");
  cr_assert_eq(k->nparams, 3, "a, b, y");
  lm_shape sh;
  lm_error err = {0};
  cr_assert_eq(lm_shape_bind(k, 5, 13, NULL, &sh, &err), LM_OK);
  lm_data *d;
  lm_oracle *o;
  cr_assert_eq(lm_data_gen(k, &sh, 1, &d, &err), LM_OK);
  cr_assert_eq(lm_oracle_run(k, d, &o, &err), LM_OK);
  lm_verify_result res;
  cr_expect_eq(lm_verify_entry(k, swiglu_ok, d, o, &res, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(lm_verify_entry(k, swiglu_overrun, d, o, &res, &err), LM_EFAIL);
  cr_expect_gt(res.guard_bad, 0);
  cr_expect_eq(lm_verify_entry(k, swiglu_off, d, o, &res, &err), LM_EFAIL);
  cr_expect_eq(res.mismatches, 5 * 13);
  lm_oracle_free(o);
  lm_data_free(d);
  lm_kernel_free(k);
}

/* One verifier, many runs on one data set: each run is judged alone, and
 * an input a run wrote is restored before the next. */
Test(verify, a_verifier_judges_each_run_alone_and_restores_written_inputs) {
  lm_kernel *k = load("kernels/swiglu.lk");
  lm_shape sh;
  lm_error err = {0};
  cr_assert_eq(lm_shape_bind(k, 5, 13, NULL, &sh, &err), LM_OK);
  lm_data *d;
  lm_oracle *o;
  lm_verifier *v = NULL;
  cr_assert_eq(lm_data_gen(k, &sh, 1, &d, &err), LM_OK);
  cr_assert_eq(lm_oracle_run(k, d, &o, &err), LM_OK);
  float x0 = ((const float *)d->buf[0])[0];
  cr_assert_eq(lm_verifier_new(k, d, o, &v, &err), LM_OK, "%s", err.msg);
  lm_verify_result res;
  for (int round = 0; round < 2; round++) {
    cr_expect_eq(lm_verifier_run_entry(v, swiglu_ok, &res, &err), LM_OK, "%s", err.msg);
    cr_expect_eq(lm_verifier_run_entry(v, swiglu_writes_input, &res, &err), LM_EFAIL);
    cr_expect_eq(res.inputs_changed, 1);
    cr_expect_eq(((const float *)d->buf[0])[0], x0, "the input is restored");
    cr_expect_eq(lm_verifier_run_entry(v, swiglu_ok, &res, &err), LM_OK, "%s", err.msg);
    cr_expect_eq(lm_verifier_run_entry(v, swiglu_overrun, &res, &err), LM_EFAIL);
    cr_expect_gt(res.guard_bad, 0);
    cr_expect_eq(lm_verifier_run_entry(v, swiglu_off, &res, &err), LM_EFAIL);
    cr_expect_eq(res.mismatches, 5 * 13);
    cr_expect_eq(res.guard_bad, 0, "the guards are set afresh");
  }
  lm_verifier_free(v);
  lm_oracle_free(o);
  lm_data_free(d);
  lm_kernel_free(k);
}

Test(backend, math_on_f64_tiles_in_f32_kernels_splits_or_pads_the_calls) {
  check_all("tests/kernels/f64_math_in_f32.lk", NULL);
}
