/* Claims about calibration profiles (include/lanemap/profile.h):
 * - a profile survives save and load with every field equal, doubles bit
 *   for bit;
 * - a failed save leaves the previous file as it was;
 * - every malformed file in tests/golden/profile/NAME.json is rejected with
 *   LM_EINPUT, no profile, and exactly the message in NAME.err;
 * - the same schema major version loads whatever fields it adds, and
 *   another major version is an error;
 * - this machine's fingerprint is filled and stable, and a profile from
 *   another machine loads with a warning that names the changed fields;
 * - the cache path follows LANEMAP_CACHE_DIR, then XDG_CACHE_HOME, then
 *   HOME. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <cjson/cJSON.h>

#include <dirent.h>
#include <float.h>
#include <ftw.h>
#include <glob.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lanemap/calibrate.h"
#include "lanemap/profile.h"
#include "lanemap/costmodel.h"
#include "lanemap/runtime.h"

#define GOLDEN_DIR "tests/golden/profile"
#define EXAMPLE GOLDEN_DIR "/ok/example.json"

/* ---- helpers ------------------------------------------------------------- */

static uint64_t bits(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}

#define EXPECT_BITS(a, b)                                                      \
  cr_expect_eq(bits(a), bits(b), "%s: %.17g != %.17g", #a, (double)(a),        \
               (double)(b))

static void make_tmpdir(char *dir) {
  strcpy(dir, "/tmp/lanemap-profile-XXXXXX");
  cr_assert_not_null(mkdtemp(dir));
}

static int rm_entry(const char *path, const struct stat *st, int flag,
                    struct FTW *ftw) {
  (void)st, (void)flag, (void)ftw;
  chmod(path, 0700);
  return remove(path);
}

static void rm_tree(const char *dir) {
  chmod(dir, 0700);
  nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static lm_fingerprint host_fingerprint(void) {
  lm_fingerprint fp;
  lm_error err = {0};
  cr_assert_eq(lm_fingerprint_host(&fp, &err), LM_OK, "%s", err.msg);
  return fp;
}

static char *slurp(const char *path) {
  char *text;
  lm_error err = {0};
  cr_assert_eq(lm_file_read(path, &text, NULL, &err), LM_OK, "%s", err.msg);
  return text;
}

/* A profile whose every field is set, with doubles that a printer keeping
 * 15 digits would get wrong. */
static lm_profile *rich_profile(const lm_fingerprint *fp) {
  lm_error err = {0};
  lm_profile *p = lm_profile_new("x86-64-v3", LM_PROFILE_FULL, &err);
  cr_assert_not_null(p, "%s", err.msg);
  cr_assert_eq(lm_profile_set_created(p, "2024-02-29T23:59:60Z", &err), LM_OK,
               "%s", err.msg);
  cr_assert_eq(lm_profile_set_units(p, "ns", &err), LM_OK);
  cr_assert_eq(lm_profile_set_fingerprint(p, fp, &err), LM_OK, "%s", err.msg);
  lm_profile_term t[3] = {
      {"valu", "ns/op", 0.1 + 0.2, DBL_TRUE_MIN, 0.1 + 0.2, 1.0 / 3, -0.0,
       DBL_MAX, false},
      {"gather", "ns/elem", 1e-300, 1e-300, 1e-300, 2e-300, 0, 1, true},
      {"dispatch", "ns/task", 123456.789012345678, 1, 2, 3, 0.5, 1e6, false},
  };
  for (int i = 0; i < 3; i++)
    cr_assert_eq(lm_profile_add_term(p, &t[i], &err), LM_OK, "%s", err.msg);
  double f[3][3] = {{1e300, 0, 7}, {1.0 / 7, 2.0 / 7, 0}, {0, 0, 1}};
  const char *bench[3] = {"load_l1", "gather_f32", "forkjoin_2"};
  for (int i = 0; i < 3; i++) {
    lm_profile_sample s = {bench[i],
                           i == 2 ? "dispatch" : "memory",
                           f[i],
                           2.0 / 3 + i,
                           0.6 + i,
                           0.01 * (i + 1),
                           (INT64_C(1) << 52) + i};
    cr_assert_eq(lm_profile_add_sample(p, &s, &err), LM_OK, "%s", err.msg);
  }
  double r[3] = {-7.0 / 3, 0, 1e-17};
  cr_assert_eq(lm_profile_set_residuals(p, r, 3, &err), LM_OK, "%s", err.msg);
  lm_profile_diagnostics d = {1.0 + DBL_EPSILON, 3, 0.1 + 0.7};
  cr_assert_eq(lm_profile_set_diagnostics(p, &d, &err), LM_OK, "%s", err.msg);
  for (int i = 0; i < 3; i++)
    cr_assert_eq(lm_profile_add_loo(p, bench[i], 0.1 * i, &err), LM_OK, "%s",
                 err.msg);
  cr_assert_eq(lm_profile_set_extra(p,
                                    "{\"composition\": {\"pairs\": 12, "
                                    "\"worst\": 0.30000000000000004, "
                                    "\"tiny\": [1e-310, -2.5], \"ok\": true, "
                                    "\"note\": \"adds\", \"none\": null}}",
                                    &err),
               LM_OK, "%s", err.msg);
  double boot[4 * 3];
  for (int i = 0; i < 12; i++)
    boot[i] = (i + 1) / 9.0;
  cr_assert_eq(lm_profile_set_bootstrap(p, boot, 4, &err), LM_OK, "%s",
               err.msg);
  return p;
}

/* Every field, through the getters, doubles bit for bit: the claim does
 * not rest on lm_profile_equal. */
static void expect_same(const lm_profile *a, const lm_profile *b) {
  cr_expect_str_eq(lm_profile_get_isa(a), lm_profile_get_isa(b));
  cr_expect_eq(lm_profile_get_mode(a), lm_profile_get_mode(b));
  cr_expect_str_eq(lm_profile_get_units(a), lm_profile_get_units(b));
  cr_expect_str_eq(lm_profile_get_created(a), lm_profile_get_created(b));
  const lm_fingerprint *fa = lm_profile_get_fingerprint(a),
                       *fb = lm_profile_get_fingerprint(b);
  cr_expect_str_eq(fa->cpu_name, fb->cpu_name);
  cr_expect_str_eq(fa->cpu_features, fb->cpu_features);
  cr_expect_str_eq(fa->llvm_version, fb->llvm_version);
  cr_expect_eq(fa->l1d_bytes, fb->l1d_bytes);
  cr_expect_eq(fa->l2_bytes, fb->l2_bytes);
  cr_expect_eq(fa->l3_bytes, fb->l3_bytes);
  cr_expect_eq(fa->cores, fb->cores);
  cr_expect_str_eq(fa->hash, fb->hash);
  int nt = lm_profile_nterms(a);
  cr_assert_eq(nt, lm_profile_nterms(b));
  for (int i = 0; i < nt; i++) {
    const lm_profile_term *s = lm_profile_term_at(a, i),
                          *t = lm_profile_term_at(b, i);
    cr_expect_str_eq(s->name, t->name);
    cr_expect_str_eq(s->unit, t->unit);
    EXPECT_BITS(s->coef, t->coef);
    EXPECT_BITS(s->p5, t->p5);
    EXPECT_BITS(s->p50, t->p50);
    EXPECT_BITS(s->p95, t->p95);
    EXPECT_BITS(s->lo, t->lo);
    EXPECT_BITS(s->hi, t->hi);
    cr_expect_eq(s->flagged, t->flagged);
  }
  int ns = lm_profile_nsamples(a);
  cr_assert_eq(ns, lm_profile_nsamples(b));
  const double *ra = lm_profile_get_residuals(a),
               *rb = lm_profile_get_residuals(b);
  for (int i = 0; i < ns; i++) {
    const lm_profile_sample *s = lm_profile_sample_at(a, i),
                            *t = lm_profile_sample_at(b, i);
    cr_expect_str_eq(s->bench, t->bench);
    cr_expect_str_eq(s->family, t->family);
    for (int k = 0; k < nt; k++)
      EXPECT_BITS(s->features[k], t->features[k]);
    EXPECT_BITS(s->ns, t->ns);
    EXPECT_BITS(s->min, t->min);
    EXPECT_BITS(s->spread, t->spread);
    cr_expect_eq(s->reps, t->reps);
    EXPECT_BITS(ra[i], rb[i]);
  }
  lm_profile_diagnostics da = lm_profile_get_diagnostics(a),
                         db = lm_profile_get_diagnostics(b);
  EXPECT_BITS(da.condition, db.condition);
  cr_expect_eq(da.rank, db.rank);
  EXPECT_BITS(da.rms_rel_err, db.rms_rel_err);
  cr_assert_eq(lm_profile_nloo(a), lm_profile_nloo(b));
  for (int i = 0; i < lm_profile_nloo(a); i++) {
    cr_expect_str_eq(lm_profile_loo_at(a, i)->bench,
                     lm_profile_loo_at(b, i)->bench);
    EXPECT_BITS(lm_profile_loo_at(a, i)->rel_err,
                lm_profile_loo_at(b, i)->rel_err);
  }
  cr_expect_str_eq(lm_profile_get_extra(a), lm_profile_get_extra(b));
  int ba, bb;
  const double *va = lm_profile_get_bootstrap(a, &ba),
               *vb = lm_profile_get_bootstrap(b, &bb);
  cr_assert_eq(ba, bb);
  for (int i = 0; i < ba * nt; i++)
    EXPECT_BITS(va[i], vb[i]);
}

static lm_profile *load_ok(const char *path, lm_profile_load_info *info) {
  lm_profile *p = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_profile_load(path, &p, info, &err), LM_OK, "%s", err.msg);
  cr_assert_not_null(p);
  return p;
}

/* ---- round trip ---------------------------------------------------------- */

Test(profile, save_then_load_keeps_every_field_bit_for_bit) {
  char dir[64], path[128];
  make_tmpdir(dir);
  snprintf(path, sizeof path, "%s/p.json", dir);
  lm_fingerprint fp = host_fingerprint();
  lm_profile *p = rich_profile(&fp);
  lm_error err = {0};
  cr_assert_eq(lm_profile_save(p, path, &err), LM_OK, "%s", err.msg);
  lm_profile *q = load_ok(path, NULL);
  expect_same(p, q);
  cr_expect(lm_profile_equal(p, q));
  cr_expect_str_eq(lm_profile_get_extra(q),
                   "{\"composition\":{\"pairs\":12,\"worst\":"
                   "0.30000000000000004,\"tiny\":[1e-310,-2.5],\"ok\":true,"
                   "\"note\":\"adds\",\"none\":null}}");
  lm_profile_free(p);
  lm_profile_free(q);
  rm_tree(dir);
}

Test(profile, saving_a_loaded_profile_writes_the_same_bytes) {
  char dir[64], a[128], b[128];
  make_tmpdir(dir);
  snprintf(a, sizeof a, "%s/a.json", dir);
  snprintf(b, sizeof b, "%s/b.json", dir);
  lm_fingerprint fp = host_fingerprint();
  lm_profile *p = rich_profile(&fp);
  lm_error err = {0};
  cr_assert_eq(lm_profile_save(p, a, &err), LM_OK, "%s", err.msg);
  lm_profile *q = load_ok(a, NULL);
  cr_assert_eq(lm_profile_save(q, b, &err), LM_OK, "%s", err.msg);
  char *ta = slurp(a), *tb = slurp(b);
  cr_expect_str_eq(ta, tb);
  free(ta);
  free(tb);
  lm_profile_free(p);
  lm_profile_free(q);
  rm_tree(dir);
}

/* 2000 doubles drawn from random bit patterns (every exponent, every
 * mantissa) come back exactly. */
Test(profile, random_doubles_come_back_exactly) {
  enum { B = 500, NT = 4 };
  lm_fingerprint fp = host_fingerprint();
  lm_error err = {0};
  lm_profile *p = lm_profile_new("x86-64-v4", LM_PROFILE_QUICK, &err);
  cr_assert_eq(lm_profile_set_fingerprint(p, &fp, &err), LM_OK);
  for (int k = 0; k < NT; k++) {
    char name[8];
    snprintf(name, sizeof name, "t%d", k);
    lm_profile_term t = {name, "ns", 1, 1, 1, 1, 0, 1, false};
    cr_assert_eq(lm_profile_add_term(p, &t, &err), LM_OK, "%s", err.msg);
  }
  static double v[B * NT];
  uint64_t x = 0x9e3779b97f4a7c15u;
  for (int i = 0; i < B * NT;) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17; /* xorshift64 */
    uint64_t u = x & ~(UINT64_C(1) << 63);   /* non-negative */
    double d;
    memcpy(&d, &u, sizeof d);
    if (isfinite(d))
      v[i++] = d;
  }
  cr_assert_eq(lm_profile_set_bootstrap(p, v, B, &err), LM_OK, "%s", err.msg);
  char *text;
  cr_assert_eq(lm_profile_to_json_text(p, &text, &err), LM_OK, "%s", err.msg);
  lm_profile *q = NULL;
  cr_assert_eq(
      lm_profile_from_json_text("mem", text, strlen(text), &q, NULL, &err),
      LM_OK, "%s", err.msg);
  int b;
  const double *w = lm_profile_get_bootstrap(q, &b);
  cr_assert_eq(b, B);
  int bad = 0;
  for (int i = 0; i < B * NT; i++)
    bad += bits(v[i]) != bits(w[i]);
  cr_expect_eq(bad, 0, "%d of %d doubles changed", bad, B * NT);
  free(text);
  lm_profile_free(p);
  lm_profile_free(q);
}

Test(profile, equal_sees_a_one_ulp_change) {
  lm_fingerprint fp = host_fingerprint();
  lm_profile *p = rich_profile(&fp), *q = rich_profile(&fp);
  cr_expect(lm_profile_equal(p, q));
  lm_profile_term t = *lm_profile_term_at(q, 2);
  t.coef = nextafter(t.coef, INFINITY);
  lm_error err = {0};
  cr_assert_eq(lm_profile_set_term(q, 2, &t, &err), LM_OK, "%s", err.msg);
  cr_expect_not(lm_profile_equal(p, q));
  lm_profile_free(p);
  lm_profile_free(q);
}

Test(profile, text_need_not_be_nul_terminated) {
  char *text = slurp(LANEMAP_SOURCE_DIR "/" EXAMPLE);
  size_t n = strlen(text);
  char *buf = malloc(n + 8);
  memcpy(buf, text, n);
  memcpy(buf + n, "garbage", 8);
  lm_profile *p = NULL;
  lm_error err = {0};
  cr_expect_eq(lm_profile_from_json_text("mem", buf, n, &p, NULL, &err), LM_OK,
               "%s", err.msg);
  lm_profile_free(p);
  free(buf);
  free(text);
}

Test(profile, saved_file_is_pretty_json_with_the_schema_first) {
  lm_fingerprint fp = host_fingerprint();
  lm_profile *p = rich_profile(&fp);
  char *text;
  lm_error err = {0};
  cr_assert_eq(lm_profile_to_json_text(p, &text, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(strncmp(text, "{\n\t\"schema\":\t\"lanemap.profile/1\",\n", 34),
               0, "%.60s", text);
  cr_expect_eq(text[strlen(text) - 1], '\n');
  free(text);
  lm_profile_free(p);
}

/* ---- atomic save --------------------------------------------------------- */

static int count_temp_files(const char *dir) {
  DIR *d = opendir(dir);
  cr_assert_not_null(d);
  int n = 0;
  for (struct dirent *e; (e = readdir(d));)
    n += strncmp(e->d_name, ".lm-", 4) == 0;
  closedir(d);
  return n;
}

Test(profile, failed_save_into_unwritable_directory_keeps_the_old_file) {
  char dir[64], path[128];
  make_tmpdir(dir);
  snprintf(path, sizeof path, "%s/p.json", dir);
  lm_fingerprint fp = host_fingerprint();
  lm_profile *p = rich_profile(&fp);
  lm_error err = {0};
  cr_assert_eq(lm_profile_save(p, path, &err), LM_OK, "%s", err.msg);
  char *before = slurp(path);
  cr_assert_eq(lm_profile_set_isa(p, "x86-64-v2", &err), LM_OK);
  cr_assert_eq(chmod(dir, 0555), 0);
  /* root writes anywhere: drop to an unprivileged user for the save */
  bool root = geteuid() == 0;
  if (root)
    cr_assert_eq(seteuid(65534), 0, "cannot drop privileges");
  lm_status s = lm_profile_save(p, path, &err);
  if (root)
    cr_assert_eq(seteuid(0), 0);
  cr_expect_eq(s, LM_ESYS, "status %d: %s", s, err.msg);
  cr_expect(strstr(err.msg, path) == err.msg, "%s", err.msg);
  char *after = slurp(path);
  cr_expect_str_eq(after, before);
  cr_expect_eq(count_temp_files(dir), 0);
  free(before);
  free(after);
  lm_profile_free(p);
  rm_tree(dir);
}

Test(profile, failed_save_onto_a_directory_leaves_it_and_no_temp_file) {
  char dir[64], path[128], inner[160];
  make_tmpdir(dir);
  snprintf(path, sizeof path, "%s/p.json", dir);
  snprintf(inner, sizeof inner, "%s/keep", path);
  cr_assert_eq(mkdir(path, 0755), 0);
  FILE *f = fopen(inner, "w");
  cr_assert_not_null(f);
  fputs("old", f);
  fclose(f);
  lm_fingerprint fp = host_fingerprint();
  lm_profile *p = rich_profile(&fp);
  lm_error err = {0};
  cr_expect_eq(lm_profile_save(p, path, &err), LM_ESYS, "%s", err.msg);
  struct stat st;
  cr_expect(stat(path, &st) == 0 && S_ISDIR(st.st_mode));
  char *kept = slurp(inner);
  cr_expect_str_eq(kept, "old");
  cr_expect_eq(count_temp_files(dir), 0);
  free(kept);
  lm_profile_free(p);
  rm_tree(dir);
}

Test(profile, save_without_a_fingerprint_is_refused_and_writes_nothing) {
  char dir[64], path[128];
  make_tmpdir(dir);
  snprintf(path, sizeof path, "%s/p.json", dir);
  lm_error err = {0};
  lm_profile *p = lm_profile_new("x86-64-v4", LM_PROFILE_DEFAULT, &err);
  cr_expect_eq(lm_profile_save(p, path, &err), LM_EINPUT);
  char want[256];
  snprintf(want, sizeof want,
           "%s: fingerprint: not set (lm_profile_set_fingerprint)", path);
  cr_expect_str_eq(err.msg, want);
  cr_expect_neq(access(path, F_OK), 0);
  lm_profile_free(p);
  rm_tree(dir);
}

/* ---- malformed files ----------------------------------------------------- */

typedef struct golden_case {
  char name[96];
} golden_case;

static int list_cases(golden_case *out, int max) {
  glob_t g;
  int n = 0;
  if (glob(LANEMAP_SOURCE_DIR "/" GOLDEN_DIR "/*.json", 0, NULL, &g) != 0)
    return 0;
  for (size_t i = 0; i < g.gl_pathc && n < max; i++) {
    const char *base = strrchr(g.gl_pathv[i], '/') + 1;
    snprintf(out[n].name, sizeof out[n].name, "%.*s", (int)(strlen(base) - 5),
             base);
    n++;
  }
  globfree(&g);
  return n;
}

ParameterizedTestParameters(profile, malformed_file_gives_the_golden_message) {
  static golden_case cases[128];
  int n = list_cases(cases, 128);
  return cr_make_param_array(golden_case, cases, (size_t)n);
}

ParameterizedTest(golden_case *c, profile,
                  malformed_file_gives_the_golden_message) {
  /* messages name the file as given: relative to the source tree */
  cr_assert_eq(chdir(LANEMAP_SOURCE_DIR), 0);
  char path[256], errpath[256];
  snprintf(path, sizeof path, GOLDEN_DIR "/%s.json", c->name);
  snprintf(errpath, sizeof errpath, GOLDEN_DIR "/%s.err", c->name);
  char *want = slurp(errpath);
  want[strcspn(want, "\n")] = 0;
  lm_profile *p = (lm_profile *)&want; /* must be reset to NULL */
  lm_profile_load_info info;
  lm_error err = {0};
  lm_status s = lm_profile_load(path, &p, &info, &err);
  cr_expect_eq(s, LM_EINPUT, "%s: status %d", c->name, s);
  cr_expect_null(p, "%s: a profile was returned", c->name);
  cr_expect_str_eq(err.msg, want, "%s:\n got: %s\nwant: %s", c->name, err.msg,
                   want);
  free(want);
}

Test(profile, golden_set_has_at_least_12_files_each_with_an_err) {
  static golden_case cases[128];
  int n = list_cases(cases, 128);
  cr_expect_geq(n, 12, "only %d malformed profiles", n);
  for (int i = 0; i < n; i++) {
    char path[512];
    snprintf(path, sizeof path, LANEMAP_SOURCE_DIR "/" GOLDEN_DIR "/%s.err",
             cases[i].name);
    cr_expect_eq(access(path, R_OK), 0, "missing %s", path);
  }
}

Test(profile, the_documented_example_loads_and_is_canonical) {
  lm_profile *p = load_ok(LANEMAP_SOURCE_DIR "/" EXAMPLE, NULL);
  cr_expect_str_eq(lm_profile_get_isa(p), "x86-64-v4");
  cr_expect_eq(lm_profile_get_mode(p), LM_PROFILE_QUICK);
  cr_expect_eq(lm_profile_nterms(p), 3);
  cr_expect_eq(lm_profile_term_index(p, "gather"), 2);
  cr_expect(lm_profile_term_at(p, 2)->flagged);
  cr_expect_eq(lm_profile_nsamples(p), 2);
  int b;
  cr_expect_not_null(lm_profile_get_bootstrap(p, &b));
  cr_expect_eq(b, 2);
  /* and it is exactly what lm_profile_save writes */
  char *text, *file = slurp(LANEMAP_SOURCE_DIR "/" EXAMPLE);
  lm_error err = {0};
  cr_assert_eq(lm_profile_to_json_text(p, &text, &err), LM_OK, "%s", err.msg);
  cr_expect_str_eq(text, file);
  free(text);
  free(file);
  lm_profile_free(p);
}

Test(profile, missing_file_is_bad_input_naming_the_file) {
  lm_profile *p = NULL;
  lm_error err = {0};
  cr_expect_eq(lm_profile_load("/nonexistent/p.json", &p, NULL, &err),
               LM_EINPUT);
  cr_expect_null(p);
  cr_expect(strncmp(err.msg, "/nonexistent/p.json: ", 21) == 0, "%s", err.msg);
}

/* ---- schema versions ----------------------------------------------------- */

static char *replace(const char *s, const char *old, const char *new) {
  const char *at = strstr(s, old);
  cr_assert_not_null(at, "no \"%s\"", old);
  size_t n = strlen(s) + strlen(new);
  char *r = malloc(n + 1);
  snprintf(r, n + 1, "%.*s%s%s", (int)(at - s), s, new, at + strlen(old));
  return r;
}

Test(profile, same_major_version_with_unknown_fields_loads_the_same) {
  char *text = slurp(LANEMAP_SOURCE_DIR "/" EXAMPLE);
  char *a = replace(text, "\"lanemap.profile/1\"", "\"lanemap.profile/1.4\"");
  char *b = replace(a, "\"isa\":", "\"future\": {\"x\": [1, 2]},\n\t\"isa\":");
  char *c = replace(b, "\"coef\":", "\"confidence\": 0.9, \"coef\":");
  char *d = replace(c, "\"cores\":", "\"numa_nodes\": 1, \"cores\":");
  lm_profile *want = load_ok(LANEMAP_SOURCE_DIR "/" EXAMPLE, NULL), *got;
  lm_profile_load_info info;
  lm_error err = {0};
  cr_assert_eq(
      lm_profile_from_json_text("v1.4.json", d, strlen(d), &got, &info, &err),
      LM_OK, "%s", err.msg);
  cr_expect_str_eq(info.schema, "lanemap.profile/1.4");
  expect_same(want, got);
  cr_expect(lm_profile_equal(want, got));
  lm_profile_free(want);
  lm_profile_free(got);
  free(text), free(a), free(b), free(c), free(d);
}

Test(profile, another_major_version_names_both_versions) {
  char *text = slurp(LANEMAP_SOURCE_DIR "/" EXAMPLE);
  char *a = replace(text, "\"lanemap.profile/1\"", "\"lanemap.profile/3.1\"");
  lm_profile *p = NULL;
  lm_error err = {0};
  cr_expect_eq(
      lm_profile_from_json_text("v3.json", a, strlen(a), &p, NULL, &err),
      LM_EINPUT);
  cr_expect_null(p);
  cr_expect_str_eq(err.msg, "v3.json: $.schema: lanemap.profile/3.1 is not "
                            "supported: this build reads lanemap.profile/1 "
                            "(major version 1)");
  free(text);
  free(a);
}

/* ---- setters ------------------------------------------------------------- */

Test(profile, setters_reject_what_the_loader_would_reject) {
  lm_error err = {0};
  lm_profile *p = lm_profile_new("x86-64-v4", LM_PROFILE_QUICK, &err);
  lm_profile_term t = {"valu", "ns/op", -1, 0, 0, 0, 0, 1, false};
  cr_expect_eq(lm_profile_add_term(p, &t, &err), LM_EINPUT);
  cr_expect_str_eq(err.msg, "lm_profile_add_term: terms[0].coef: expected a "
                            "non-negative number, got -1");
  t.coef = 1, t.p50 = NAN;
  cr_expect_eq(lm_profile_add_term(p, &t, &err), LM_EINPUT);
  cr_expect_str_eq(err.msg, "lm_profile_add_term: terms[0].p50: expected a "
                            "non-negative number, got nan");
  t.p50 = 0, t.hi = INFINITY;
  cr_expect_eq(lm_profile_add_term(p, &t, &err), LM_EINPUT);
  t.hi = 1;
  cr_assert_eq(lm_profile_add_term(p, &t, &err), LM_OK, "%s", err.msg);
  cr_expect_eq(lm_profile_add_term(p, &t, &err), LM_EINPUT, "duplicate name");
  double f[1] = {3};
  lm_profile_sample s = {"b", "fam", f, 1, 1, 0, 0};
  cr_expect_eq(lm_profile_add_sample(p, &s, &err), LM_EINPUT);
  cr_expect_str_eq(err.msg, "lm_profile_add_sample: samples[0].reps: expected "
                            "an integer >= 1, got 0");
  s.reps = 1;
  cr_assert_eq(lm_profile_add_sample(p, &s, &err), LM_OK, "%s", err.msg);
  lm_profile_term u = {"late", "ns", 1, 1, 1, 1, 0, 1, false};
  cr_expect_eq(lm_profile_add_term(p, &u, &err), LM_EINPUT,
               "a term added after the samples");
  double r[2] = {0, 0};
  cr_expect_eq(lm_profile_set_residuals(p, r, 2, &err), LM_EINPUT);
  cr_expect_eq(lm_profile_add_loo(p, "nope", 0.1, &err), LM_EINPUT);
  cr_expect_eq(lm_profile_set_extra(p, "[1]", &err), LM_EINPUT);
  cr_expect_eq(lm_profile_set_extra(p, "{\"x\": 1e999}", &err), LM_EINPUT);
  cr_expect_str_eq(lm_profile_get_extra(p), "{}");
  lm_profile_diagnostics d = {0.5, 1, 0};
  cr_expect_eq(lm_profile_set_diagnostics(p, &d, &err), LM_EINPUT);
  d.condition = 2, d.rank = 2;
  cr_expect_eq(lm_profile_set_diagnostics(p, &d, &err), LM_EINPUT,
               "rank above the number of terms");
  cr_expect_eq(lm_profile_set_created(p, "2025-13-01T00:00:00Z", &err),
               LM_EINPUT);
  lm_fingerprint fp = host_fingerprint();
  fp.cores++;
  cr_expect_eq(lm_profile_set_fingerprint(p, &fp, &err), LM_EINPUT,
               "a stale hash");
  cr_expect_null(lm_profile_new("x86/64", LM_PROFILE_QUICK, &err));
  lm_profile_free(p);
}

Test(profile, mode_names_parse_back) {
  for (int m = LM_PROFILE_DEFAULT; m <= LM_PROFILE_FULL; m++) {
    lm_profile_mode got;
    cr_expect_eq(lm_profile_mode_parse(lm_profile_mode_name(m), &got, NULL),
                 LM_OK);
    cr_expect_eq(got, m);
  }
  lm_profile_mode got;
  cr_expect_eq(lm_profile_mode_parse("fast", &got, NULL), LM_EINPUT);
}

/* ---- fingerprint --------------------------------------------------------- */

Test(profile, host_fingerprint_is_filled) {
  lm_fingerprint fp = host_fingerprint();
  cr_expect_neq(fp.cpu_name[0], 0);
  cr_expect_gt(fp.l1d_bytes, 0);
  cr_expect_geq(fp.cores, 1);
  cr_expect_eq(strncmp(fp.llvm_version, "19.", 3), 0, "%s", fp.llvm_version);
  cr_expect_eq(strlen(fp.hash), 16);
  cr_expect_eq(strspn(fp.hash, "0123456789abcdef"), 16, "%s", fp.hash);
  /* enabled features only, sorted */
  cr_expect_eq(fp.cpu_features[0], '+', "%.40s", fp.cpu_features);
  cr_expect_null(strstr(fp.cpu_features, ",-"));
  char prev[64] = "";
  for (char *s = fp.cpu_features; *s;) {
    size_t l = strcspn(s, ",");
    char cur[64];
    snprintf(cur, sizeof cur, "%.*s", (int)l, s);
    cr_expect_lt(strcmp(prev, cur), 0, "%s before %s", prev, cur);
    strcpy(prev, cur);
    s += l + (s[l] == ',');
  }
}

Test(profile, host_fingerprint_is_stable_across_calls) {
  lm_fingerprint a = host_fingerprint(), b = host_fingerprint();
  cr_expect(lm_fingerprint_equal(&a, &b));
  char diff[256];
  cr_expect_eq(lm_fingerprint_diff(&a, &b, diff, sizeof diff), 0, "%s", diff);
  cr_expect_str_eq(diff, "");
}

Test(profile, hash_changes_with_every_field) {
  lm_fingerprint base = host_fingerprint();
  for (int field = 0; field < 7; field++) {
    lm_fingerprint fp = base;
    switch (field) {
    case 0:
      strcat(fp.cpu_name, "x");
      break;
    case 1:
      strcat(fp.cpu_features, ",+zz");
      break;
    case 2:
      strcat(fp.llvm_version, "git");
      break;
    case 3:
      fp.l1d_bytes++;
      break;
    case 4:
      fp.l2_bytes++;
      break;
    case 5:
      fp.l3_bytes++;
      break;
    case 6:
      fp.cores++;
      break;
    }
    lm_fingerprint_rehash(&fp);
    cr_expect_str_neq(fp.hash, base.hash, "field %d", field);
    cr_expect_not(lm_fingerprint_equal(&fp, &base));
  }
}

Test(profile, diff_lists_exactly_the_changed_fields) {
  lm_fingerprint a = {0};
  strcpy(a.cpu_name, "skylake");
  strcpy(a.cpu_features, "+avx,+avx2,+sse4.2");
  strcpy(a.llvm_version, "19.1.7");
  a.l1d_bytes = 32768, a.l2_bytes = 1048576, a.l3_bytes = 0, a.cores = 4;
  lm_fingerprint_rehash(&a);
  lm_fingerprint b = a;
  strcpy(b.cpu_name, "znver4");
  strcpy(b.cpu_features, "+avx,+avx512f,+sse4.2");
  b.l2_bytes = 2097152;
  lm_fingerprint_rehash(&b);
  char diff[512];
  cr_expect_eq(lm_fingerprint_diff(&a, &b, diff, sizeof diff), 3);
  cr_expect_str_eq(diff, "cpu_name (\"skylake\" -> \"znver4\"), cpu_features "
                         "(-avx2 +avx512f), l2_bytes (1048576 -> 2097152)");
  char tiny[8];
  cr_expect_eq(lm_fingerprint_diff(&a, &b, tiny, sizeof tiny), 3);
  cr_expect_eq(strlen(tiny), 7);
}

Test(profile, profile_from_another_machine_loads_with_a_warning) {
  char dir[64], path[128];
  make_tmpdir(dir);
  snprintf(path, sizeof path, "%s/p.json", dir);
  lm_fingerprint host = host_fingerprint(), fp = host;
  strcpy(fp.cpu_name, "other-cpu");
  fp.l2_bytes += 4096;
  lm_fingerprint_rehash(&fp);
  lm_profile *p = rich_profile(&fp);
  lm_error err = {0};
  cr_assert_eq(lm_profile_save(p, path, &err), LM_OK, "%s", err.msg);
  lm_profile_load_info info;
  lm_profile *q = load_ok(path, &info);
  cr_expect(info.fingerprint_checked);
  cr_expect_eq(info.fingerprint_diffs, 2, "%s", info.warning);
  char name[160], l2[96];
  snprintf(name, sizeof name, "cpu_name (\"other-cpu\" -> \"%s\")",
           host.cpu_name);
  snprintf(l2, sizeof l2, "l2_bytes (%" PRIu64 " -> %" PRIu64 ")", fp.l2_bytes,
           host.l2_bytes);
  cr_expect_not_null(strstr(info.warning, name), "%s", info.warning);
  cr_expect_not_null(strstr(info.warning, l2), "%s", info.warning);
  cr_expect_not_null(strstr(info.warning, "higher regret"), "%s", info.warning);
  cr_expect_null(strstr(info.warning, "cores"), "%s", info.warning);
  cr_expect(strncmp(info.warning, path, strlen(path)) == 0, "%s", info.warning);
  lm_profile_free(p);
  lm_profile_free(q);
  rm_tree(dir);
}

Test(profile, profile_from_this_machine_loads_without_a_warning) {
  char dir[64], path[128];
  make_tmpdir(dir);
  snprintf(path, sizeof path, "%s/p.json", dir);
  lm_fingerprint host = host_fingerprint();
  lm_profile *p = rich_profile(&host);
  lm_error err = {0};
  cr_assert_eq(lm_profile_save(p, path, &err), LM_OK, "%s", err.msg);
  lm_profile_load_info info;
  lm_profile *q = load_ok(path, &info);
  cr_expect(info.fingerprint_checked);
  cr_expect_eq(info.fingerprint_diffs, 0);
  cr_expect_str_eq(info.warning, "");
  lm_profile_free(p);
  lm_profile_free(q);
  rm_tree(dir);
}

/* ---- cache path ---------------------------------------------------------- */

static void expect_cache_path(const char *dir) {
  lm_fingerprint fp = host_fingerprint();
  char got[4096], want[4096];
  lm_error err = {0};
  cr_assert_eq(lm_profile_cache_path("x86-64-v4", LM_PROFILE_QUICK, got,
                                     sizeof got, &err),
               LM_OK, "%s", err.msg);
  snprintf(want, sizeof want, "%s/profile-%s-x86-64-v4-quick-%s.json", dir,
           fp.hash, lm_model_id());
  cr_expect_str_eq(got, want);
  struct stat st;
  cr_expect(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), "%s not created", dir);
}

Test(profile, cache_path_honours_LANEMAP_CACHE_DIR_first) {
  char tmp[64], dir[160], xdg[128];
  make_tmpdir(tmp);
  snprintf(dir, sizeof dir, "%s/a/b", tmp);
  snprintf(xdg, sizeof xdg, "%s/xdg", tmp);
  setenv("LANEMAP_CACHE_DIR", dir, 1);
  setenv("XDG_CACHE_HOME", xdg, 1);
  expect_cache_path(dir);
  rm_tree(tmp);
}

Test(profile, cache_path_uses_XDG_CACHE_HOME_without_the_override) {
  char tmp[64], dir[160], xdg[128];
  make_tmpdir(tmp);
  snprintf(xdg, sizeof xdg, "%s/xdg", tmp);
  snprintf(dir, sizeof dir, "%s/lanemap", xdg);
  unsetenv("LANEMAP_CACHE_DIR");
  setenv("XDG_CACHE_HOME", xdg, 1);
  expect_cache_path(dir);
  rm_tree(tmp);
}

Test(profile, cache_path_falls_back_to_home_and_ignores_relative_xdg) {
  char tmp[64], dir[128];
  make_tmpdir(tmp);
  snprintf(dir, sizeof dir, "%s/.cache/lanemap", tmp);
  unsetenv("LANEMAP_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "relative/cache", 1);
  setenv("HOME", tmp, 1);
  expect_cache_path(dir);
  cr_expect_neq(access("relative", F_OK), 0);
  rm_tree(tmp);
}

Test(profile, cache_path_rejects_an_isa_that_is_not_a_plain_name) {
  char tmp[64], got[256];
  make_tmpdir(tmp);
  setenv("LANEMAP_CACHE_DIR", tmp, 1);
  lm_error err = {0};
  cr_expect_eq(
      lm_profile_cache_path("../v4", LM_PROFILE_FULL, got, sizeof got, &err),
      LM_EINPUT);
  cr_expect_eq(
      lm_profile_cache_path("x86-64-v4", LM_PROFILE_FULL, got, 8, &err),
      LM_EINPUT, "a buffer too small");
  rm_tree(tmp);
}

/* A process that finds no cached profile calibrates and caches one while
 * holding the cache entry's lock; a second process that wants the same
 * entry waits for the lock, then loads what the first one wrote instead
 * of calibrating beside it. */
Test(profile, a_lookup_waits_for_a_calibration_in_progress_and_loads_its_result) {
  char tmp[64], path[512];
  make_tmpdir(tmp);
  setenv("LANEMAP_CACHE_DIR", tmp, 1);
  lm_error err = {0};
  cr_assert_eq(lm_profile_cache_path(lm_isa_name(LM_ISA_SSE42), LM_PROFILE_QUICK, path,
                                     sizeof path, &err),
               LM_OK, "%s", err.msg);
  int lock = -1;
  cr_assert_eq(lm_file_lock(path, &lock, &err), LM_OK, "%s", err.msg);
  pid_t c = fork();
  cr_assert_geq(c, 0);
  if (c == 0) { /* the second process: source 1 when it loaded the cache */
    close(lock); /* the lock belongs to the first process */
    lm_profile_lookup_opts o;
    lm_profile_lookup_defaults(&o);
    o.isa = LM_ISA_SSE42;
    o.mode = LM_PROFILE_QUICK;
    o.missing = LM_PROFILE_MISSING_CALIBRATE;
    lm_profile *p = NULL;
    lm_profile_found f;
    lm_error e = {0};
    lm_status st = lm_profile_lookup(&o, &p, &f, &e);
    lm_profile_free(p);
    _exit(st != LM_OK ? 2 : f.source == LM_PROFILE_SOURCE_CACHE ? 1 : 0);
  }
  usleep(300 * 1000);
  int status;
  cr_expect_eq(waitpid(c, &status, WNOHANG), 0, "the lookup did not wait for the lock");
  lm_profile *p = NULL;
  cr_assert_eq(lm_profile_default(LM_ISA_SSE42, &p, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_profile_save(p, path, &err), LM_OK, "%s", err.msg);
  lm_profile_free(p);
  lm_file_unlock(lock);
  cr_assert_eq(waitpid(c, &status, 0), c);
  cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 1,
            "the waiting lookup calibrated again (status %d)", status);
  rm_tree(tmp);
}

/* Equal to the 15 significant digits the diagnostics' JSON keeps. */
static bool near(double a, double b) { return fabs(a - b) <= 1e-12 * fmax(fabs(a), fabs(b)); }

/* A quick calibration takes the fork-join round as measured, not fitted:
 * the fork term is the median of the round's repeats, their least and
 * greatest are its p5 and p95, every bootstrap resample carries the
 * median, the diagnostics record the repeats, and the rows the round
 * explains to more than half are counted apart from the rms. */
Test(profile, a_calibration_takes_the_measured_fork_join_round_as_known) {
  lm_calib_opts o;
  lm_calib_defaults(&o);
  o.isa = LM_ISA_SSE42;
  o.quick = 1;
  lm_profile *p = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_calibrate(&o, &p, &err), LM_OK, "%s", err.msg);
  cr_assert_gt(lm_pool_threads(lm_pool_shared()), 0, "the test needs a pool thread");
  cJSON *extra = cJSON_Parse(lm_profile_get_extra(p));
  cr_assert_not_null(extra);
  const cJSON *fj = cJSON_GetObjectItemCaseSensitive(extra, "fork_ns");
  const cJSON *left = cJSON_GetObjectItemCaseSensitive(extra, "rows_left_out");
  cr_assert(cJSON_IsNumber(fj), "no fork_ns: the fork-join round was fitted");
  cr_assert(cJSON_IsNumber(left), "no rows_left_out");
  double nleft = left->valuedouble;
  double F = fj->valuedouble;
  const cJSON *rj = cJSON_GetObjectItemCaseSensitive(extra, "forkjoin_round");
  cr_assert(cJSON_IsObject(rj), "no forkjoin_round in the diagnostics");
  double want_r = cJSON_GetObjectItemCaseSensitive(rj, "repeats_wanted")->valuedouble;
  double calls = cJSON_GetObjectItemCaseSensitive(rj, "calls")->valuedouble;
  double kept = cJSON_GetObjectItemCaseSensitive(rj, "kept")->valuedouble;
  double fmin_ns = cJSON_GetObjectItemCaseSensitive(rj, "fork_min_ns")->valuedouble;
  double fmax_ns = cJSON_GetObjectItemCaseSensitive(rj, "fork_max_ns")->valuedouble;
  double jmin_ns = cJSON_GetObjectItemCaseSensitive(rj, "join_min_ns")->valuedouble;
  double jmax_ns = cJSON_GetObjectItemCaseSensitive(rj, "join_max_ns")->valuedouble;
  /* the participants' skew, measured beside each repeat of the round on
   * the ALU benchmark: a fraction in [0, 1] within its repeats */
  const cJSON *skr = cJSON_GetObjectItemCaseSensitive(rj, "skew_repeats");
  cr_assert(cJSON_IsNumber(skr), "no skew_repeats in forkjoin_round");
  cr_expect(skr->valuedouble >= 1 && skr->valuedouble <= calls, "skew measured %g times in %g calls",
            skr->valuedouble, calls);
  const cJSON *skm = cJSON_GetObjectItemCaseSensitive(rj, "skew");
  const cJSON *sklo = cJSON_GetObjectItemCaseSensitive(rj, "skew_min");
  const cJSON *skhi = cJSON_GetObjectItemCaseSensitive(rj, "skew_max");
  cr_assert(cJSON_IsNumber(skm) && cJSON_IsNumber(sklo) && cJSON_IsNumber(skhi),
            "no skew figures in forkjoin_round");
  cr_expect(sklo->valuedouble >= 0 && sklo->valuedouble <= skm->valuedouble &&
                skm->valuedouble <= skhi->valuedouble && skhi->valuedouble <= 1,
            "skew %g [%g, %g]", skm->valuedouble, sklo->valuedouble, skhi->valuedouble);
  cJSON_Delete(extra);
  /* repeated: the quick suite wants 7, replaces a disturbed one, and
   * stops at twice as many calls */
  cr_expect_eq(want_r, 7);
  cr_expect(kept <= want_r && calls >= kept && calls <= 2 * want_r && calls >= want_r,
            "kept %g of %g calls", kept, calls);
  /* fork_ns is the repeats' median clamped to the term's range (below) */
  double lo_r, hi_r, d_r;
  const char *u_r;
  lm_term_default(LM_T_FORK, &d_r, &lo_r, &hi_r, &u_r);
  cr_expect(fmin(fmax(fmin_ns, lo_r), hi_r) <= F && F <= fmin(fmax(fmax_ns, lo_r), hi_r),
            "fork %g outside its repeats [%g, %g]", F, fmin_ns, fmax_ns);
  int n = lm_profile_nterms(p), fork = -1;
  for (int i = 0; i < n; i++)
    if (strcmp(lm_profile_term_at(p, i)->name, "fork") == 0)
      fork = i;
  cr_assert_geq(fork, 0);
  const lm_profile_term *t = lm_profile_term_at(p, fork);
  double lo_b, hi_b, d;
  const char *u;
  lm_term_default(LM_T_FORK, &d, &lo_b, &hi_b, &u);
  /* measured, then clamped to the plausible range (the diagnostics' JSON
   * keeps 15 significant digits where they read back within DBL_EPSILON,
   * so the measured value is compared to that precision) */
  double want = t->coef, clamped = fmin(fmax(F, lo_b), hi_b);
  cr_expect(F >= 0 && isfinite(F), "fork_ns %g", F);
  cr_expect(fabs(want - clamped) <= 1e-12 * clamped, "fork %.17g, measured %.17g", want, F);
  cr_expect(t->p50 == want, "p50 %g, coef %g", t->p50, want);
  cr_expect(near(t->p5, fmin(fmax(fmin_ns, lo_b), hi_b)) &&
                near(t->p95, fmin(fmax(fmax_ns, lo_b), hi_b)),
            "p5 %g, p95 %g: not the repeats' [%g, %g]", t->p5, t->p95, fmin_ns, fmax_ns);
  int jt = -1;
  for (int i = 0; i < n; i++)
    if (strcmp(lm_profile_term_at(p, i)->name, "join") == 0)
      jt = i;
  cr_assert_geq(jt, 0);
  const lm_profile_term *j = lm_profile_term_at(p, jt);
  cr_expect(near(j->p5, fmin(jmin_ns, LM_JOIN_MAX_NS)) &&
                near(j->p95, fmin(jmax_ns, LM_JOIN_MAX_NS)) &&
                j->p5 <= j->coef && j->coef <= j->p95,
            "join %g [%g, %g], repeats [%g, %g]", j->coef, j->p5, j->p95, jmin_ns, jmax_ns);
  int nb = 0;
  const double *bs = lm_profile_get_bootstrap(p, &nb);
  cr_assert_gt(nb, 0);
  for (int r = 0; r < nb; r++)
    cr_expect_eq(bs[(size_t)r * (size_t)n + (size_t)fork], want, "resample %d", r);
  /* a count of the profile's sample rows */
  cr_expect(nleft >= 0 && nleft == floor(nleft) && nleft <= lm_profile_nsamples(p),
            "rows_left_out %g of %d samples", nleft, lm_profile_nsamples(p));
  lm_profile_diagnostics dg = lm_profile_get_diagnostics(p);
  cr_expect(isfinite(dg.rms_rel_err) && dg.rms_rel_err > 0, "rms %g", dg.rms_rel_err);
  lm_profile_free(p);
}
