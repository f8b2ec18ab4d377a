/* Random differential testing claims: kernels from the seeded generator
 * parse, cover the language (f64, strides, ragged rows, masks, several
 * loops, snapshot tiles, every math function, where, every reduction,
 * per-row outputs), and every sampled legal variant of each matches the
 * FP64 oracle on random and edge shapes; every case kept in
 * tests/difftest/regress/ replays without a mismatch. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/difftest/gen.h"

Test(difftest, generated_kernels_always_parse_and_cover_the_language) {
  enum { N = 300 };
  int f64 = 0, strided = 0, ragged = 0, masked = 0, multiloop = 0, snap = 0;
  int per_row = 0, multi_out = 0, col_vec = 0, inst = 0, scalar = 0;
  int ops[LM_OP__COUNT] = {0};
  for (uint64_t seed = 1; seed <= N; seed++) {
    dt_info info;
    char *src = dt_gen_kernel(seed, &info);
    lm_kernel *k = NULL;
    lm_error err = {0};
    cr_assert_eq(lm_kernel_parse("gen.lk", src, strlen(src), &k, &err), LM_OK,
                 "seed %llu: %s\n%s", (unsigned long long)seed, err.msg, src);
    f64 += k->elem == LM_F64;
    ragged += k->rowlen_param >= 0;
    multiloop += k->nloops >= 2;
    multi_out += k->nstores >= 2;
    for (int i = 0; i < k->nnodes; i++) {
      const lm_node *n = &k->nodes[i];
      ops[n->op]++;
      snap += n->snap;
      strided += n->op == LM_OP_LOAD_ROW && n->step > 1;
      col_vec += n->op == LM_OP_LOAD_COL;
      inst += n->op == LM_OP_LOAD_INST;
      scalar += n->op == LM_OP_SCALAR;
    }
    for (int i = 0; i < k->nparams; i++)
      masked += k->params[i].gen == LM_GEN_MASK;
    for (int i = 0; i < k->nstores; i++)
      per_row += k->stores[i].kind == LM_STORE_INST;
    cr_assert_eq(info.elem, k->elem);
    lm_kernel_free(k);
    free(src);
  }
  cr_expect_gt(f64, N / 10, "f64 kernels: %d", f64);
  cr_expect_gt(strided, 0);
  cr_expect_gt(ragged, N / 10, "ragged kernels: %d", ragged);
  cr_expect_gt(masked, 0);
  cr_expect_gt(multiloop, N / 4, "multi-loop kernels: %d", multiloop);
  cr_expect_gt(snap, 0);
  cr_expect_gt(per_row, 0);
  cr_expect_gt(multi_out, N / 4);
  cr_expect_gt(col_vec, 0);
  cr_expect_gt(inst, 0);
  cr_expect_gt(scalar, 0);
  const lm_op want[] = {LM_OP_EXP,   LM_OP_LOG,  LM_OP_SQRT, LM_OP_RSQRT, LM_OP_TANH,
                        LM_OP_ERF,   LM_OP_SIGMOID, LM_OP_SIN, LM_OP_COS, LM_OP_POWI,
                        LM_OP_FMA,   LM_OP_WHERE, LM_OP_RSUM, LM_OP_RMAX, LM_OP_RMIN,
                        LM_OP_DIV,   LM_OP_MIN,  LM_OP_MAX,  LM_OP_ABS,  LM_OP_NEG,
                        LM_OP_AND,   LM_OP_OR,   LM_OP_NOT,  LM_OP_LT,   LM_OP_GE,
                        LM_OP_COLIDX, LM_OP_CAST};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    cr_expect_gt(ops[want[i]], 0, "no %s node in %d kernels", lm_op_name(want[i]), N);
}

Test(difftest, the_generator_is_deterministic_per_seed) {
  char *a = dt_gen_kernel(12345, NULL), *b = dt_gen_kernel(12345, NULL);
  char *c = dt_gen_kernel(12346, NULL);
  cr_expect_str_eq(a, b);
  cr_expect_str_neq(a, c);
  free(a), free(b), free(c);
}

Test(difftest, sampled_variants_of_generated_kernels_match_the_oracle) {
  dt_opts o = {0};
  o.variants_per_kernel = 6;
  o.seed = 2024;
  o.log = stderr;
  dt_stats st = {0};
  const int n = 45;
  for (uint64_t seed = 1; seed <= (uint64_t)n; seed++) {
    char *src = dt_gen_kernel(seed, NULL);
    lm_error err = {0};
    cr_assert_eq(dt_check_source("gen.lk", src, &o, &st, &err), LM_OK,
                 "seed %llu: %s\n%s", (unsigned long long)seed, err.msg, src);
    free(src);
  }
  printf("difftest: %lld kernels, %lld kernel x variant checks, %lld shape "
         "verifications, %lld mismatches, %lld compile errors\n",
         (long long)st.kernels, (long long)st.variants, (long long)st.shape_checks,
         (long long)st.mismatches, (long long)st.compile_errors);
  cr_expect_eq(st.kernels, n);
  cr_expect_geq(st.variants, 200, "only %lld kernel x variant checks",
                (long long)st.variants);
  cr_expect_eq(st.shape_checks, 3 * st.variants);
  cr_expect_eq(st.mismatches, 0);
  cr_expect_eq(st.compile_errors, 0);
}

/* A pinned case file checks exactly its variants and shapes. */
Test(difftest, a_case_file_pins_its_variants_and_shapes) {
  const char *src =
      "# difftest-variant: x86-64-v2/w4/l1/priv=slot/glob=transpose/phase=snapshot/t1\n"
      "# difftest-variant: x86-64-v2/w4/l4/phase=reread/t1\n"
      "# difftest-shape: 5,9\n"
      "# difftest-shape: 1,1\n"
      "kernel pinned(x: f32[R, C]) -> (y: f32[R, C]) {\n"
      "  xs = x[r, :]\n"
      "  y[r, :] = xs - max(xs)\n"
      "}\n";
  dt_opts o = {0};
  dt_stats st = {0};
  lm_error err = {0};
  cr_assert_eq(dt_check_source("pinned.lk", src, &o, &st, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(st.variants, 2);
  cr_expect_eq(st.shape_checks, 4);
  cr_expect_eq(st.mismatches, 0);
  /* an illegal pinned variant is bad input, not a silent skip */
  const char *bad = "# difftest-variant: x86-64-v2/w4/l1/t1\n"
                    "kernel pinned(x: f32[R, C]) -> (y: f32[R, C]) {\n"
                    "  xs = x[r, :]\n  y[r, :] = xs - max(xs)\n}\n";
  cr_expect_eq(dt_check_source("bad.lk", bad, &o, &st, &err), LM_EINPUT);
}

/* The check can fail: an ill-conditioned kernel (f32 rounding of x + 2^14
 * is far above the tolerance, the FP64 oracle has none) is reported, and
 * its case file replays to the same mismatch. */
Test(difftest, a_mismatch_is_counted_and_written_as_a_replayable_case) {
  const char *src =
      "# difftest-variant: x86-64-v2/w4/l4/t1\n"
      "# difftest-shape: 3,5\n"
      "kernel cancel(x: f32[R, C] in(0.5, 2)) -> (y: f32[R, C]) {\n"
      "  y[r, :] = (x[r, :] + 16384) - 16384\n"
      "}\n";
  char dir[] = "/tmp/lanemap-difftest-XXXXXX";
  cr_assert(mkdtemp(dir));
  dt_opts o = {0};
  o.out_dir = dir;
  dt_stats st = {0};
  lm_error err = {0};
  cr_assert_eq(dt_check_source("cancel.lk", src, &o, &st, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(st.variants, 1);
  cr_expect_eq(st.mismatches, 1);
  DIR *d = opendir(dir);
  cr_assert(d);
  struct dirent *e;
  int files = 0;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    char *text = NULL;
    cr_assert_eq(lm_file_read(path, &text, NULL, &err), LM_OK, "%s", err.msg);
    cr_expect(strstr(text, "# difftest-variant: x86-64-v2/w4/l4/t1\n"), "%s", text);
    cr_expect(strstr(text, "# difftest-shape: 3,5\n"), "%s", text);
    dt_stats again = {0};
    dt_opts quiet = {0};
    cr_expect_eq(dt_check_source(path, text, &quiet, &again, &err), LM_OK, "%s", err.msg);
    cr_expect_eq(again.mismatches, 1);
    free(text);
    unlink(path);
    files++;
  }
  closedir(d);
  rmdir(dir);
  cr_expect_eq(files, 1);
}

Test(difftest, every_kept_regression_case_replays_without_a_mismatch) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/difftest/regress", LANEMAP_SOURCE_DIR);
  DIR *d = opendir(dir);
  cr_assert(d, "cannot open %s", dir);
  dt_opts o = {0};
  o.log = stderr;
  dt_stats st = {0};
  int files = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 3, ".lk") != 0)
      continue;
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    char *src = NULL;
    lm_error err = {0};
    cr_assert_eq(lm_file_read(path, &src, NULL, &err), LM_OK, "%s", err.msg);
    int64_t before = st.mismatches + st.compile_errors;
    cr_expect_eq(dt_check_source(path, src, &o, &st, &err), LM_OK, "%s", err.msg);
    cr_expect_eq(st.mismatches + st.compile_errors, before, "%s mismatches", path);
    free(src);
    files++;
  }
  closedir(d);
  printf("difftest regressions: %d files, %lld kernel x variant checks\n", files,
         (long long)st.variants);
  cr_expect_gt(files, 0);
  cr_expect_gt(st.variants, 0);
}
