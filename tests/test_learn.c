/* Claims about the learned correction's training (lm_learn, heldout/learn.c)
 * and `lanemap learn`:
 *   - rows carry the names and count the header promises, and apply()
 *     clamps the correction;
 *   - on cases whose measured times are the analytic model's times with a
 *     residual every kernel shares (packet-local variants 2.5x slower than
 *     predicted), the trees learn it: leave-one-kernel-out picks better
 *     than the analytic model and the log error shrinks; on cases the
 *     analytic model prices exactly, the correction stays near 1;
 *   - the profile's calibration samples are training rows, one case per
 *     source and shape timed under several variants, never scored: a
 *     provider they time at twice its price is corrected, which the
 *     records alone cannot teach;
 *   - one kernel is refused (nothing to leave out), and so are held-out
 *     cases and bad options on the command line, with exit 2. */
#include "tests/support/run.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/calibrate.h"
#include "lanemap/heldout.h"
#include "lanemap/profile.h"

TestSuite(learn, .init = run_tmp_make, .fini = run_tmp_remove, .timeout = 300);

static lm_profile *profile(void) {
  lm_profile *p = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_profile_default(LM_ISA_AVX2, &p, &err), LM_OK, "%s", err.msg);
  return p;
}

/* A case of kernel path at R x C: every one-worker variant on x86-64-v3,
 * measured = analytic * truth(v) (a deterministic wobble of 1% keeps the
 * targets from being constant). */
static lm_eval_case make_case(const lm_profile *prof, const char *path,
                              int64_t R, int64_t C,
                              double (*truth)(const lm_variant *)) {
  lm_kernel *k = NULL;
  lm_error err = {0};
  char full[512];
  snprintf(full, sizeof full, "%s/%s", LANEMAP_SOURCE_DIR, path);
  cr_assert_eq(lm_kernel_load(full, &k, &err), LM_OK, "%s", err.msg);
  lm_enum_opts eo;
  lm_enum_defaults(&eo);
  eo.isa = LM_ISA_AVX2;
  eo.workers[0] = 1, eo.workers[1] = 0;
  lm_variant *vs = NULL;
  int nv = lm_variant_enumerate(k, &eo, &vs, &err);
  cr_assert_gt(nv, 4, "%s: %s", path, err.msg);
  lm_shape sh;
  cr_assert_eq(lm_shape_bind(k, R, C, NULL, &sh, &err), LM_OK, "%s", err.msg);
  lm_eval_case c = {0};
  char id[64];
  snprintf(id, sizeof id, "%s-%lldx%lld", k->name, (long long)R, (long long)C);
  char hash[17];
  lm_kernel_hash(k, hash);
  c.id = strdup(id);
  c.kernel = strdup(full);
  c.kernel_hash = strdup(hash);
  c.isa = strdup(lm_isa_name(LM_ISA_AVX2));
  c.R = R, c.C = C;
  c.nvariants = nv;
  c.v = calloc((size_t)nv, sizeof *c.v);
  for (int i = 0; i < nv; i++) {
    char name[128];
    lm_prediction p;
    cr_assert_eq(lm_cost_predict(prof, k, &vs[i], &sh, &p, &err), LM_OK, "%s", err.msg);
    c.v[i].variant = strdup(lm_variant_format(&vs[i], name, sizeof name));
    c.v[i].verified = 1;
    c.v[i].predicted = p.ns;
    c.v[i].measured = p.ns * truth(&vs[i]) * (1 + 0.01 * ((i * 7) % 5 - 2) / 2.0);
  }
  free(vs);
  lm_kernel_free(k);
  return c;
}

static double packet_slow(const lm_variant *v) { return v->l == v->w ? 2.5 : 1.0; }
static double exact(const lm_variant *v) { (void)v; return 1.0; }

static const struct {
  const char *path;
  int64_t R, C;
} shapes[] = {
    {"kernels/rmsnorm.lk", 64, 256},      {"kernels/rmsnorm.lk", 3, 1000},
    {"kernels/layernorm.lk", 32, 512},    {"kernels/layernorm.lk", 200, 40},
    {"kernels/swiglu.lk", 16, 300},       {"kernels/swiglu.lk", 500, 24},
    {"kernels/gelu_residual.lk", 8, 800}, {"kernels/gelu_residual.lk", 100, 33},
};
#define NSHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static int make_cases(const lm_profile *prof, double (*truth)(const lm_variant *),
                      lm_eval_case *cs) {
  for (int i = 0; i < NSHAPES; i++)
    cs[i] = make_case(prof, shapes[i].path, shapes[i].R, shapes[i].C, truth);
  return NSHAPES;
}

static void free_cases(lm_eval_case *cs, int n) {
  for (int i = 0; i < n; i++)
    lm_eval_case_free(&cs[i]);
}

static lm_learn_opts opts(const lm_profile *prof) {
  lm_learn_opts o;
  lm_learn_defaults(&o);
  o.profile = prof;
  return o;
}

Test(learn, rows_have_their_names_and_apply_clamps) {
  for (int i = 0; i < LM_LEARNED_NFEAT; i++) {
    const char *n = lm_learned_row_name(i);
    cr_assert(n && *n, "feature %d has no name", i);
    for (int j = 0; j < i; j++)
      cr_expect_str_neq(n, lm_learned_row_name(j), "features %d and %d share a name", i, j);
  }
  for (int i = 0; i < LM_LEARNED_NFEAT; i++)
    cr_expect_eq(lm_learned_row_names()[i], lm_learned_row_name(i));
  cr_expect_null(lm_learned_row_name(LM_LEARNED_NFEAT));
  cr_expect_null(lm_learned_row_name(-1));
  cr_expect_float_eq(lm_learned_apply(100, 0), 100, 1e-12);
  cr_expect_float_eq(lm_learned_apply(100, log(2)), 200, 1e-9);
  cr_expect_float_eq(lm_learned_apply(100, 50), 100 * exp(LM_LEARNED_MAX_LOG), 1e-6);
  cr_expect_float_eq(lm_learned_apply(100, -50), 100 * exp(-LM_LEARNED_MAX_LOG), 1e-9);
  cr_expect_float_eq(lm_learned_apply(100, NAN), 100, 1e-12);
}

/* A row states the shape as the suite writes it: RoPE at 4 x 66 has C = 66
 * (the buffer's 2*H), not H = 33, whoever bound the shape. */
Test(learn, a_row_states_r_and_c_as_the_suite_writes_them) {
  lm_kernel *k = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_load(LANEMAP_SOURCE_DIR "/kernels/rope.lk", &k, &err), LM_OK,
               "%s", err.msg);
  lm_shape a, b;
  cr_assert_eq(lm_shape_bind(k, 4, 66, NULL, &a, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_shape_parse(k, "4,66", &b, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(lm_shape_c(k, &a), 66);
  lm_profile *prof = profile();
  lm_variant v;
  cr_assert_eq(lm_variant_parse("x86-64-v3/w8/l8/t1", &v, &err), LM_OK, "%s", err.msg);
  lm_prediction p;
  cr_assert_eq(lm_cost_predict(prof, k, &v, &a, &p, &err), LM_OK, "%s", err.msg);
  double xa[LM_LEARNED_NFEAT], xb[LM_LEARNED_NFEAT];
  lm_learned_row(k, &v, &a, &p, xa);
  lm_learned_row(k, &v, &b, &p, xb);
  int ir = -1, ic = -1;
  for (int i = 0; i < LM_LEARNED_NFEAT; i++) {
    ir = strcmp(lm_learned_row_name(i), "log_r") == 0 ? i : ir;
    ic = strcmp(lm_learned_row_name(i), "log_c") == 0 ? i : ic;
    cr_expect_eq(xa[i], xb[i], "feature %s", lm_learned_row_name(i));
  }
  cr_assert(ir >= 0 && ic >= 0);
  cr_expect_float_eq(xa[ir], log(4), 1e-12);
  cr_expect_float_eq(xa[ic], log(66), 1e-12);
  lm_profile_free(prof);
  lm_kernel_free(k);
}

Test(learn, learns_a_residual_every_kernel_shares) {
  lm_profile *prof = profile();
  lm_eval_case cs[NSHAPES];
  int n = make_cases(prof, packet_slow, cs);
  lm_learn_opts o = opts(prof);
  lm_learn_result r;
  lm_error err = {0};
  cr_assert_eq(lm_learn(&o, cs, n, &r, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(r.nfolds, 4, "four kernels, four folds");
  cr_expect_eq(r.ncases, NSHAPES);
  cr_expect_gt(r.rows, NSHAPES * 4);
  cr_expect_lt(r.cv_rms_learned, 0.5 * r.cv_rms_analytic,
               "the residual is learned: rms %g against %g", r.cv_rms_learned,
               r.cv_rms_analytic);
  cr_expect_leq(r.cv_geo_learned, r.cv_geo_analytic, "picks %g against %g",
                r.cv_geo_learned, r.cv_geo_analytic);
  cr_expect_lt(r.cv_geo_learned, 0.5 * r.cv_geo_analytic,
               "the learned picks lose less than half of the analytic's: %g against %g",
               r.cv_geo_learned, r.cv_geo_analytic);
  cr_assert_not_null(r.model);
  lm_learn_result_free(&r);
  free_cases(cs, n);
  lm_profile_free(prof);
}

Test(learn, an_exact_model_needs_no_correction) {
  lm_profile *prof = profile();
  lm_eval_case cs[NSHAPES];
  int n = make_cases(prof, exact, cs);
  lm_learn_opts o = opts(prof);
  lm_learn_result r;
  lm_error err = {0};
  cr_assert_eq(lm_learn(&o, cs, n, &r, &err), LM_OK, "%s", err.msg);
  cr_expect_lt(r.cv_rms_analytic, 0.02);
  cr_expect_lt(r.cv_rms_learned, 0.05, "a correction appeared from nothing: rms %g",
               r.cv_rms_learned);
  lm_learn_result_free(&r);
  free_cases(cs, n);
  lm_profile_free(prof);
}

/* Both sizes of every calibration benchmark the profile's mode and caches
 * give, added to p as samples timed at the profile's prediction times
 * truth(v); returns how many were added. */
static int add_calib_samples(lm_profile *p, double (*truth)(const lm_variant *)) {
  lm_caches cc;
  lm_caches_from_fingerprint(lm_profile_get_fingerprint(p), &cc);
  lm_calib_bench *b = NULL;
  int nb = lm_calib_benches(LM_ISA_AVX2, 0, &cc, &b), added = 0;
  cr_assert_gt(nb, 0);
  double *f = calloc((size_t)lm_profile_nterms(p), sizeof *f);
  for (int i = 0; i < nb; i++) {
    lm_kernel *k = NULL;
    lm_variant v;
    lm_error err = {0};
    if (b[i].mixed || b[i].density > 0 ||
        lm_kernel_parse("calibration", b[i].source, strlen(b[i].source), &k,
                        &err) != LM_OK ||
        lm_variant_parse(b[i].variant, &v, &err) != LM_OK ||
        lm_variant_check(k, &v, &err) != LM_OK) {
      lm_kernel_free(k);
      continue;
    }
    for (int s = 0; s < 2; s++) {
      lm_shape sh;
      lm_prediction pr;
      cr_assert_eq(lm_shape_bind(k, b[i].R * (s + 1), b[i].C, NULL, &sh, &err),
                   LM_OK, "%s", err.msg);
      cr_assert_eq(lm_cost_predict(p, k, &v, &sh, &pr, &err), LM_OK, "%s", err.msg);
      f[0] = (double)(b[i].R * (s + 1)); /* the larger size counts more */
      double t = pr.ns * truth(&v);
      lm_profile_sample smp = {b[i].name, b[i].family, f, t, t, 0.01, 1};
      cr_assert_eq(lm_profile_add_sample(p, &smp, &err), LM_OK, "%s", err.msg);
      added++;
    }
    lm_kernel_free(k);
  }
  free(f);
  lm_calib_benches_free(b, nb);
  return added;
}

static double mvec_slow(const lm_variant *v) { return v->math == LM_MATH_MVEC ? 2.0 : 1.0; }

/* The learned correction of x86-64-v3 variant text on gelu_residual at
 * 64x256, in logs. */
static double correction(const lm_profile *p, const lm_learned *m, const char *text) {
  lm_kernel *k = NULL;
  lm_variant v;
  lm_shape sh;
  lm_prediction pr;
  lm_error err = {0};
  char full[512];
  snprintf(full, sizeof full, "%s/kernels/gelu_residual.lk", LANEMAP_SOURCE_DIR);
  cr_assert_eq(lm_kernel_load(full, &k, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_variant_parse(text, &v, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_shape_bind(k, 64, 256, NULL, &sh, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_cost_predict(p, k, &v, &sh, &pr, &err), LM_OK, "%s", err.msg);
  double x[LM_LEARNED_NFEAT], d = 0;
  lm_learned_row(k, &v, &sh, &pr, x);
  cr_assert_eq(lm_learned_predict(m, x, 1, &d, &err), LM_OK, "%s", err.msg);
  lm_kernel_free(k);
  return d;
}

Test(learn, calibration_samples_teach_what_the_records_do_not_show) {
  /* The records (rmsnorm and layernorm, no vector math) are priced
   * exactly; the calibration samples time libmvec's routines at twice
   * their price.  Only the samples can teach the trees that. */
  lm_profile *prof = profile();
  cr_assert_gt(add_calib_samples(prof, mvec_slow), 40);
  lm_eval_case cs[4];
  for (int i = 0; i < 4; i++)
    cs[i] = make_case(prof, shapes[i].path, shapes[i].R, shapes[i].C, exact);
  lm_learn_opts o = opts(prof);
  lm_learn_result with, without;
  lm_error err = {0};
  cr_assert_eq(o.calib, 0, "off by default");
  cr_assert_eq(lm_learn(&o, cs, 4, &without, &err), LM_OK, "%s", err.msg);
  o.calib = 1;
  cr_assert_eq(lm_learn(&o, cs, 4, &with, &err), LM_OK, "%s", err.msg);
  cr_expect_geq(with.calib_cases, 4, "exp, erf, tanh and log each under three "
                "providers: %d cases", with.calib_cases);
  cr_expect_geq(with.calib_rows, 2 * with.calib_cases);
  cr_expect_eq(with.ncases, 4 + with.calib_cases);
  cr_expect_eq(without.calib_cases, 0);
  cr_expect_eq(with.nfolds, 2, "calibration cases are not a fold");
  cr_expect_float_eq(with.cv_geo_analytic, without.cv_geo_analytic, 1e-12,
                     "calibration cases are never scored");
  double sleef = correction(prof, with.model, "x86-64-v3/w8/l8/t1");
  double mvec = correction(prof, with.model, "x86-64-v3/w8/l8/math=mvec/t1");
  cr_expect_gt(mvec - sleef, log(1.5), "libmvec corrected by %g against SLEEF",
               exp(mvec - sleef));
  sleef = correction(prof, without.model, "x86-64-v3/w8/l8/t1");
  mvec = correction(prof, without.model, "x86-64-v3/w8/l8/math=mvec/t1");
  cr_expect_lt(fabs(mvec - sleef), log(1.2), "a correction from nothing: %g",
               exp(mvec - sleef));
  lm_learn_result_free(&with);
  lm_learn_result_free(&without);
  free_cases(cs, 4);
  lm_profile_free(prof);
}

Test(learn, one_kernel_is_refused) {
  lm_profile *prof = profile();
  lm_eval_case cs[2] = {make_case(prof, "kernels/rmsnorm.lk", 4, 64, exact),
                        make_case(prof, "kernels/rmsnorm.lk", 40, 64, exact)};
  lm_learn_opts o = opts(prof);
  lm_learn_result r;
  lm_error err = {0};
  cr_expect_eq(lm_learn(&o, cs, 2, &r, &err), LM_EINPUT);
  cr_expect(strstr(err.msg, "at least 2"), "%s", err.msg);
  o.profile = NULL;
  cr_expect_eq(lm_learn(&o, cs, 2, &r, &err), LM_EINPUT);
  free_cases(cs, 2);
  lm_profile_free(prof);
}

/* ---- the command ---------------------------------------------------------- */

static char *save_profile(const lm_profile *p) { /* free it */
  char *path = strdup(run_tmp("profile.json")); /* run_tmp's buffers rotate */
  lm_error err = {0};
  cr_assert_eq(lm_profile_save(p, path, &err), LM_OK, "%s", err.msg);
  return path;
}

/* The records of cases, as lanemap evaluate appends them. */
static char *save_records(const lm_eval_case *cs, int n, const char *name) { /* free it */
  char *path = strdup(run_tmp(name)); /* run_tmp's buffers rotate */
  lm_eval_run run = {0};
  lm_error err = {0};
  cr_assert_eq(lm_eval_run_init(&run, LM_ISA_AVX2, &err), LM_OK, "%s", err.msg);
  for (int i = 0; i < n; i++) {
    lm_record *rs = NULL;
    int nr = 0;
    cr_assert_eq(lm_eval_case_records(&cs[i], &run, "0123456789abcdef", &rs, &nr, &err),
                 LM_OK, "%s", err.msg);
    for (int j = 0; j < nr; j++) {
      cr_assert_eq(lm_records_append(path, &rs[j], &err), LM_OK, "%s", err.msg);
      lm_record_free(&rs[j]);
    }
    free(rs);
  }
  lm_eval_run_free(&run);
  return path;
}

Test(learn, cli_trains_and_writes_a_model) {
  lm_profile *prof = profile();
  lm_eval_case cs[NSHAPES];
  int n = make_cases(prof, packet_slow, cs);
  char *recs = save_records(cs, n, "records.jsonl");
  char *pf = save_profile(prof);
  char *model = strdup(run_tmp("learned.json"));
  run_result r = RUN("learn", "--profile", pf, "-o", model, "--rounds", "40", recs);
  cr_expect_eq(r.code, 0, "%s%s", r.out, r.err);
  cr_expect(strstr(r.out, "the learned model picks better"), "%s", r.out);
  cr_expect(strstr(r.out, "rmsnorm"), "a fold per kernel: %s", r.out);
  lm_learned *l = NULL;
  lm_error err = {0};
  cr_expect_eq(lm_learned_load(model, &l, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(lm_learned_nfeat(l), LM_LEARNED_NFEAT);
  lm_learned_free(l);
  run_free(&r);
  /* predict ranks by the corrected time and explains it as one factor:
   * packet-local variants were learned 2.5x slower */
  char kernel[600];
  snprintf(kernel, sizeof kernel, "%s/kernels/rmsnorm.lk", LANEMAP_SOURCE_DIR);
  r = RUN("predict", kernel, "--shape", "64,256", "--isa", "avx2", "--profile", pf,
          "--learned", model, "--explain");
  cr_expect_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "learned correction of"), "%s", r.out);
  char first[256] = "", name[128] = "";
  sscanf(r.out, "%255[^\n]", first);
  sscanf(first, "%*d %127s", name);
  lm_variant best;
  cr_expect_eq(lm_variant_parse(name, &best, &err), LM_OK, "%s: %s", first, err.msg);
  cr_expect_neq(best.l, best.w, "the corrected best is not packet-local: %s", first);
  run_free(&r);
  r = RUN("predict", kernel, "--shape", "64,256", "--isa", "avx2", "--profile", pf,
          "--learned", pf);
  cr_expect_eq(r.code, 2, "a profile is not a learned model: %s", r.err);
  run_free(&r);
  free(recs);
  free(pf);
  free(model);
  free_cases(cs, n);
  lm_profile_free(prof);
}

Test(learn, cli_refuses_bad_input) {
  lm_profile *prof = profile();
  char *pf = save_profile(prof);
  /* a held-out case: set 1's sqrelu_scale at one of its shapes */
  lm_eval_case held[2] = {make_case(prof, "heldout/kernels/sqrelu_scale.lk", 65536, 16, exact),
                          make_case(prof, "kernels/rmsnorm.lk", 4, 64, exact)};
  char *recs = save_records(held, 2, "held.jsonl");
  char *missing = strdup(run_tmp("missing.jsonl"));
  struct {
    const char *args[8];
    const char *says;
  } bad[] = {
      {{"learn", recs, NULL}, "--profile is required"},
      {{"learn", "--profile", pf, NULL}, "no records given"},
      {{"learn", "--profile", pf, "--eta", "-1", recs, NULL}, "--eta"},
      {{"learn", "--profile", pf, "--rounds", "0", recs, NULL}, "--rounds"},
      {{"learn", "--profile", pf, "--bogus", recs, NULL}, "unknown option"},
      {{"learn", "--profile", pf, missing, NULL}, "missing.jsonl"},
      {{"learn", "--profile", pf, recs, NULL}, "held-out case"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    run_result r = run_cli(bad[i].args);
    cr_expect_eq(r.code, 2, "case %zu: exit %d: %s", i, r.code, r.err);
    cr_expect(strstr(r.err, bad[i].says), "case %zu: %s", i, r.err);
    run_free(&r);
  }
  free(pf);
  free(recs);
  free(missing);
  free_cases(held, 2);
  lm_profile_free(prof);
}
