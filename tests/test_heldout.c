/* Held-out set claims (DESIGN.md §12), for both sets (heldout/ and
 * heldout/set2/): the kernels parse and check; none of them is a suite
 * kernel or a calibration benchmark, under its own name or renamed (the
 * canonical IR is compared with the kernel name blanked), and no set-2
 * kernel is a set-1 kernel; no case repeats a suite (kernel, shape) pair;
 * each cases.json is well-formed, with every kernel path resolving to a
 * file that parses and binds the case's shape; set 2 has the forms it
 * was written to cover; and no validation list (kernels/validation*.json,
 * where rules are chosen) holds a held-out case. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lanemap/calibrate.h"
#include "lanemap/ir.h"

#define MAXK 128

/* The held-out sets: where their kernels and case lists live, and what
 * each must hold (heldout/README.md, heldout/set2/README.md). */
typedef struct HeldSet {
  const char *dir;     /* the folder of cases.json; kernel paths are relative to it */
  const char *kernels; /* the folder of the set's own operator kernels */
  const char *cases;
  int min_families, min_cases, min_shape_cases;
} HeldSet;

static const HeldSet SETS[] = {
    {"heldout", "heldout/kernels", "heldout/cases.json", 8, 30, 12},
    {"heldout/set2", "heldout/set2/kernels", "heldout/set2/cases.json", 10, 30, 0},
};
#define NSETS ((int)(sizeof SETS / sizeof SETS[0]))

static char *path_of(const char *rel) {
  static char buf[8][PATH_MAX];
  static int i;
  char *b = buf[i++ % 8];
  snprintf(b, PATH_MAX, "%s/%s", LANEMAP_SOURCE_DIR, rel);
  return b;
}

/* A parsed kernel with where it came from. */
typedef struct Named {
  char what[600];
  lm_kernel *k;
} Named;

static lm_kernel *parse_text(const char *what, const char *src) {
  lm_kernel *k = NULL;
  lm_error err = {0};
  lm_status s = lm_kernel_parse(what, src, strlen(src), &k, &err);
  cr_assert_eq(s, LM_OK, "%s does not parse: %s", what, err.msg);
  return k;
}

static lm_kernel *load_path(const char *path) {
  lm_kernel *k = NULL;
  lm_error err = {0};
  lm_status s = lm_kernel_load(path, &k, &err);
  cr_assert_eq(s, LM_OK, "%s does not load: %s", path, err.msg);
  return k;
}

static int ends_with(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && strcmp(s + n - m, suf) == 0;
}

static int cmp_str(const void *a, const void *b) {
  return strcmp((const char *)a, (const char *)b);
}

/* Every *.lk file in a source folder, parsed (sorted by file name). */
static int load_dir(const char *rel, Named *out, int max) {
  DIR *d = opendir(path_of(rel));
  cr_assert(d != NULL, "cannot open %s", path_of(rel));
  static char names[MAXK][256];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)) != NULL)
    if (ends_with(e->d_name, ".lk") && n < MAXK)
      snprintf(names[n++], sizeof names[0], "%s", e->d_name);
  closedir(d);
  qsort(names, (size_t)n, sizeof names[0], cmp_str);
  cr_assert_leq(n, max);
  for (int i = 0; i < n; i++) {
    snprintf(out[i].what, sizeof out[i].what, "%.200s/%.255s", rel, names[i]);
    out[i].k = load_path(path_of(out[i].what));
  }
  return n;
}

static void free_all(Named *v, int n) {
  for (int i = 0; i < n; i++)
    lm_kernel_free(v[i].k);
}

/* Canonical text with the kernel's name blanked, so that a renamed copy
 * prints the same as its original. */
static char *body_of(lm_kernel *k) {
  const char *name = k->name;
  k->name = "_";
  char *t = lm_kernel_print(k);
  k->name = name;
  cr_assert(t != NULL);
  return t;
}

/* Same kernel, under any name: canonical text or IR equal. */
static int same_kernel(lm_kernel *a, lm_kernel *b) {
  char *ta = body_of(a), *tb = body_of(b);
  int same = strcmp(ta, tb) == 0;
  free(ta);
  free(tb);
  const char *na = a->name, *nb = b->name;
  a->name = b->name = "_";
  same = same || lm_kernel_equal(a, b);
  a->name = na;
  b->name = nb;
  return same;
}

/* Calibration benchmark kernels over every ISA target and both modes
 * (the lists follow the target's lane count and the quick flag). */
static int load_calib(Named *out, int max) {
  lm_caches c;
  lm_caches_default(&c);
  int n = 0;
  for (int isa = 0; isa < LM_ISA__COUNT; isa++)
    for (int quick = 0; quick <= 1; quick++) {
      lm_calib_bench *b = NULL;
      int nb = lm_calib_benches((lm_isa)isa, quick, &c, &b);
      cr_assert_gt(nb, 0, "no calibration benchmarks for ISA %d", isa);
      for (int i = 0; i < nb; i++) {
        lm_kernel *k = parse_text(b[i].name, b[i].source);
        int dup = 0;
        for (int j = 0; j < n && !dup; j++)
          dup = strcmp(out[j].k->name, k->name) == 0 && same_kernel(out[j].k, k);
        if (dup || n >= max) {
          cr_assert(dup, "too many calibration kernels");
          lm_kernel_free(k);
          continue;
        }
        snprintf(out[n].what, sizeof out[n].what, "calibration benchmark %.200s", b[i].name);
        out[n++].k = k;
      }
      lm_calib_benches_free(b, nb);
    }
  return n;
}

/* ---- (a) every held-out kernel parses and checks ------------------------- */

Test(heldout, kernels_parse_and_check) {
  for (int si = 0; si < NSETS; si++) {
    Named h[MAXK];
    int n = load_dir(SETS[si].kernels, h, MAXK);
    cr_assert_geq(n, SETS[si].min_families, "%s needs at least %d operator families, found %d",
                  SETS[si].kernels, SETS[si].min_families, n);
    for (int i = 0; i < n; i++) {
      lm_kernel *k = h[i].k;
      cr_expect_gt(k->nloops, 0, "%s: no column loop", h[i].what);
      cr_expect_gt(k->nstores, 0, "%s: no store", h[i].what);
      /* the canonical text round-trips to the same IR */
      char *t = lm_kernel_print(k);
      lm_kernel *k2 = parse_text(h[i].what, t);
      cr_expect(lm_kernel_equal(k, k2), "%s: printed text parses to another IR", h[i].what);
      lm_kernel_free(k2);
      free(t);
      /* kernel names are distinct within the set */
      for (int j = 0; j < i; j++)
        cr_expect_str_neq(k->name, h[j].k->name, "%s and %s share the kernel name",
                          h[i].what, h[j].what);
    }
    free_all(h, n);
  }
}

/* ---- (b) no held-out kernel is a suite or calibration kernel ------------- */

static void expect_disjoint(Named *h, int nh, Named *o, int no) {
  for (int i = 0; i < nh; i++)
    for (int j = 0; j < no; j++) {
      cr_expect_str_neq(h[i].k->name, o[j].k->name, "%s has the name of %s (%s)",
                        h[i].what, o[j].what, o[j].k->name);
      cr_expect(!same_kernel(h[i].k, o[j].k), "%s is a copy of %s (kernel %s)",
                h[i].what, o[j].what, o[j].k->name);
    }
}

Test(heldout, kernels_are_not_suite_kernels) {
  Named h[MAXK], s[MAXK];
  int ns = load_dir("kernels", s, MAXK);
  cr_assert_geq(ns, 6, "expected the suite kernels in kernels/, found %d", ns);
  for (int si = 0; si < NSETS; si++) {
    int nh = load_dir(SETS[si].kernels, h, MAXK);
    expect_disjoint(h, nh, s, ns);
    free_all(h, nh);
  }
  free_all(s, ns);
}

Test(heldout, kernels_are_not_calibration_kernels) {
  Named h[MAXK], c[MAXK];
  int nc = load_calib(c, MAXK);
  cr_assert_geq(nc, 10, "expected the calibration kernels, found %d", nc);
  for (int si = 0; si < NSETS; si++) {
    int nh = load_dir(SETS[si].kernels, h, MAXK);
    expect_disjoint(h, nh, c, nc);
    free_all(h, nh);
  }
  free_all(c, nc);
}

/* Set 2 is written after set 1 and must not reuse its families. */
Test(heldout, set2_kernels_are_not_set1_kernels) {
  Named a[MAXK], b[MAXK];
  int na = load_dir(SETS[1].kernels, a, MAXK);
  int nb = load_dir(SETS[0].kernels, b, MAXK);
  expect_disjoint(a, na, b, nb);
  free_all(a, na);
  free_all(b, nb);
}

/* ---- cases.json --------------------------------------------------------- */

static cJSON *load_json(const char *rel) {
  char *text = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_file_read(path_of(rel), &text, NULL, &err), LM_OK, "%s: %s", rel,
               err.msg);
  cJSON *j = cJSON_Parse(text);
  cr_assert(j != NULL, "%s is not valid JSON (near: %.40s)", rel,
            cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() : "?");
  free(text);
  return j;
}

/* A case's kernel path, resolved against the folder of its JSON file. */
static int resolve(const char *jsondir, const char *kernel, char out[PATH_MAX]) {
  char p[PATH_MAX];
  snprintf(p, sizeof p, "%s/%s", path_of(jsondir), kernel);
  return realpath(p, out) != NULL;
}

static int is_count(const cJSON *v) {
  return cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble <= 2147483647.0 &&
         v->valuedouble == (double)(int64_t)v->valuedouble;
}

/* (d) well-formed, every kernel path resolves, parses and binds its shape */
static void check_cases(const HeldSet *set) {
  cJSON *j = load_json(set->cases);
  cr_assert(cJSON_IsObject(j));
  const char *schema = cJSON_GetStringValue(cJSON_GetObjectItem(j, "schema"));
  cr_expect_str_eq(schema ? schema : "(none)", "lanemap.cases/1");
  cr_expect(cJSON_IsString(cJSON_GetObjectItem(j, "about")), "cases.json needs an about");
  cJSON *cases = cJSON_GetObjectItem(j, "cases");
  cr_assert(cJSON_IsArray(cases) && cJSON_GetArraySize(cases) > 0, "no cases array");

  char heldout_dir[PATH_MAX], suite_dir[PATH_MAX];
  cr_assert(realpath(path_of(set->kernels), heldout_dir));
  cr_assert(realpath(path_of("kernels"), suite_dir));

  Named h[MAXK];
  int nh = load_dir(set->kernels, h, MAXK);
  int uses[MAXK] = {0};
  int nshape = 0, idx = 0;
  cJSON *c;
  cJSON_ArrayForEach(c, cases) {
    const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(c, "id"));
    const char *kf = cJSON_GetStringValue(cJSON_GetObjectItem(c, "kernel"));
    const char *split = cJSON_GetStringValue(cJSON_GetObjectItem(c, "split"));
    cJSON *sh = cJSON_GetObjectItem(c, "shape");
    cr_assert(cJSON_IsObject(c), "case %d is not an object", idx);
    cr_assert(id && *id, "case %d has no id", idx);
    cr_assert(kf && *kf, "case %s has no kernel", id);
    cr_assert(split, "case %s has no split", id);
    cr_expect(strcmp(split, "operator") == 0 || strcmp(split, "shape") == 0,
              "case %s: split '%s' is neither operator nor shape", id, split);
    cr_assert(cJSON_IsArray(sh) && cJSON_GetArraySize(sh) == 2 &&
                  is_count(cJSON_GetArrayItem(sh, 0)) && is_count(cJSON_GetArrayItem(sh, 1)),
              "case %s: shape must be [R, C] with positive integers", id);
    /* ids are unique */
    int k2 = 0;
    cJSON *o;
    cJSON_ArrayForEach(o, cases) {
      if (k2++ >= idx)
        break;
      const char *oid = cJSON_GetStringValue(cJSON_GetObjectItem(o, "id"));
      cr_expect(!oid || strcmp(oid, id) != 0, "case id %s appears twice", id);
    }
    /* the kernel path resolves, parses, and binds the shape */
    char real[PATH_MAX];
    cr_assert(resolve(set->dir, kf, real), "case %s: kernel %s does not resolve", id, kf);
    lm_kernel *k = load_path(real);
    int64_t R = (int64_t)cJSON_GetArrayItem(sh, 0)->valuedouble;
    int64_t C = (int64_t)cJSON_GetArrayItem(sh, 1)->valuedouble;
    lm_shape s;
    lm_error err = {0};
    cr_expect_eq(lm_shape_bind(k, R, C, NULL, &s, &err), LM_OK, "case %s: %s", id, err.msg);
    cr_expect_leq(R * C, (int64_t)1 << 23, "case %s: %lldx%lld is too large to measure quickly",
                  id, (long long)R, (long long)C);
    /* the split matches where the kernel lives */
    size_t hl = strlen(heldout_dir), sl = strlen(suite_dir);
    if (strcmp(split, "operator") == 0) {
      cr_expect(strncmp(real, heldout_dir, hl) == 0 && real[hl] == '/',
                "case %s: an operator case must use a kernel in %s/", id, set->kernels);
      for (int i = 0; i < nh; i++)
        if (strcmp(h[i].k->name, k->name) == 0)
          uses[i]++;
    } else {
      cr_expect(strncmp(real, suite_dir, sl) == 0 && real[sl] == '/',
                "case %s: a shape case must use a suite kernel in kernels/", id);
      nshape++;
    }
    lm_kernel_free(k);
    idx++;
  }
  for (int i = 0; i < nh; i++)
    cr_expect_geq(uses[i], 2, "%s has %d cases (at least 2 shapes per family)", h[i].what,
                  uses[i]);
  cr_expect_geq(nshape, set->min_shape_cases, "%s: only %d new shapes for the suite kernels",
                set->cases, nshape);
  cr_expect_geq(idx, set->min_cases, "%s: %d cases, at least %d wanted", set->cases, idx,
                set->min_cases);
  free_all(h, nh);
  cJSON_Delete(j);
}

Test(heldout, cases_json_well_formed) {
  check_cases(&SETS[0]);
}

Test(heldout, set2_cases_json_well_formed) {
  check_cases(&SETS[1]);
}

/* (c) no held-out case repeats a suite (kernel, shape) pair */
static void check_avoids_suite(const HeldSet *set) {
  cJSON *suite = load_json("kernels/suite.json");
  cJSON *held = load_json(set->cases);
  int nsuite = 0;
  cJSON *a, *b;
  cJSON_ArrayForEach(a, cJSON_GetObjectItem(suite, "cases")) {
    char ra[PATH_MAX];
    const char *ka = cJSON_GetStringValue(cJSON_GetObjectItem(a, "kernel"));
    cr_assert(ka && resolve("kernels", ka, ra), "suite kernel %s does not resolve",
              ka ? ka : "(none)");
    lm_kernel *kA = load_path(ra);
    cJSON *sa = cJSON_GetObjectItem(a, "shape");
    double Ra = cJSON_GetArrayItem(sa, 0)->valuedouble;
    double Ca = cJSON_GetArrayItem(sa, 1)->valuedouble;
    nsuite++;
    cJSON_ArrayForEach(b, cJSON_GetObjectItem(held, "cases")) {
      char rb[PATH_MAX];
      const char *kb = cJSON_GetStringValue(cJSON_GetObjectItem(b, "kernel"));
      const char *id = cJSON_GetStringValue(cJSON_GetObjectItem(b, "id"));
      cr_assert(kb && resolve(set->dir, kb, rb), "held-out kernel %s does not resolve",
                kb ? kb : "(none)");
      cJSON *sb = cJSON_GetObjectItem(b, "shape");
      if (cJSON_GetArrayItem(sb, 0)->valuedouble != Ra ||
          cJSON_GetArrayItem(sb, 1)->valuedouble != Ca)
        continue;
      /* same shape: the kernel must differ by file, by name and by IR */
      lm_kernel *kB = load_path(rb);
      int same = strcmp(ra, rb) == 0 || strcmp(kA->name, kB->name) == 0 ||
                 same_kernel(kA, kB);
      cr_expect(!same, "held-out case %s repeats the suite case %s (%s at %gx%g)",
                id ? id : "?", cJSON_GetStringValue(cJSON_GetObjectItem(a, "id")), ka, Ra, Ca);
      lm_kernel_free(kB);
    }
    lm_kernel_free(kA);
  }
  cr_assert_geq(nsuite, 15, "expected the 15 suite cases, found %d", nsuite);
  cJSON_Delete(suite);
  cJSON_Delete(held);
}

Test(heldout, cases_avoid_suite_pairs) {
  for (int si = 0; si < NSETS; si++)
    check_avoids_suite(&SETS[si]);
}

/* The validation lists (kernels/validation*.json) are where decision rules
 * and terms are chosen; a held-out result is blind only if none of its
 * (kernel, shape) pairs is among them.  Every validation case resolves
 * to a kernel and is no held-out case of either set. */
static const char *const VALIDATION[] = {"kernels/validation.json",
                                         "kernels/validation-short.json"};

Test(heldout, validation_lists_hold_no_held_out_case) {
  cJSON *held[NSETS];
  for (int si = 0; si < NSETS; si++)
    held[si] = load_json(SETS[si].cases);
  for (size_t vi = 0; vi < sizeof VALIDATION / sizeof VALIDATION[0]; vi++) {
    cJSON *val = load_json(VALIDATION[vi]);
    int nval = 0;
    cJSON *a, *b;
    cJSON_ArrayForEach(a, cJSON_GetObjectItem(val, "cases")) {
      char ra[PATH_MAX];
      const char *ka = cJSON_GetStringValue(cJSON_GetObjectItem(a, "kernel"));
      const char *ida = cJSON_GetStringValue(cJSON_GetObjectItem(a, "id"));
      cr_assert(ka && resolve("kernels", ka, ra), "%s: kernel %s does not resolve",
                VALIDATION[vi], ka ? ka : "(none)");
      cJSON *sa = cJSON_GetObjectItem(a, "shape");
      double Ra = cJSON_GetArrayItem(sa, 0)->valuedouble;
      double Ca = cJSON_GetArrayItem(sa, 1)->valuedouble;
      nval++;
      for (int si = 0; si < NSETS; si++)
        cJSON_ArrayForEach(b, cJSON_GetObjectItem(held[si], "cases")) {
          char rb[PATH_MAX];
          const char *kb = cJSON_GetStringValue(cJSON_GetObjectItem(b, "kernel"));
          cJSON *sb = cJSON_GetObjectItem(b, "shape");
          cr_assert(kb && resolve(SETS[si].dir, kb, rb));
          cr_expect(strcmp(ra, rb) != 0 || cJSON_GetArrayItem(sb, 0)->valuedouble != Ra ||
                        cJSON_GetArrayItem(sb, 1)->valuedouble != Ca,
                    "%s: %s is the held-out case %s of %s", VALIDATION[vi],
                    ida ? ida : "?", cJSON_GetStringValue(cJSON_GetObjectItem(b, "id")),
                    SETS[si].cases);
        }
    }
    cr_expect_geq(nval, 30, "%s: %d cases", VALIDATION[vi], nval);
    cJSON_Delete(val);
  }
  for (int si = 0; si < NSETS; si++)
    cJSON_Delete(held[si]);
}

/* Set 2 covers the forms it was written for (heldout/set2/README.md): an
 * f64 kernel, ragged rows, a kernel with two or more outputs, a kernel
 * needing three or more column loops, single rows, tall and narrow
 * shapes, and C one off a multiple of 8 and of 16 lanes, each with at
 * least one case. */
Test(heldout, set2_covers_its_forms) {
  const HeldSet *set = &SETS[1];
  cJSON *j = load_json(set->cases);
  int f64 = 0, ragged = 0, outputs2 = 0, loops3 = 0, single = 0, tall = 0;
  int off16 = 0, off8 = 0, f64_off8 = 0;
  cJSON *c;
  cJSON_ArrayForEach(c, cJSON_GetObjectItem(j, "cases")) {
    const char *kf = cJSON_GetStringValue(cJSON_GetObjectItem(c, "kernel"));
    cJSON *sh = cJSON_GetObjectItem(c, "shape");
    char real[PATH_MAX];
    cr_assert(kf && resolve(set->dir, kf, real), "a set-2 case's kernel does not resolve");
    lm_kernel *k = load_path(real);
    int64_t R = (int64_t)cJSON_GetArrayItem(sh, 0)->valuedouble;
    int64_t C = (int64_t)cJSON_GetArrayItem(sh, 1)->valuedouble;
    int nout = 0;
    for (int p = 0; p < k->nparams; p++)
      nout += k->params[p].is_output;
    int is_f64 = k->elem == LM_F64;
    int c16 = C > 16 && (C % 16 == 1 || C % 16 == 15);
    int c8 = C > 8 && (C % 8 == 1 || C % 8 == 7);
    f64 += is_f64;
    ragged += k->rowlen_param >= 0;
    outputs2 += nout >= 2;
    loops3 += k->nloops >= 3;
    single += R == 1;
    tall += R >= 10000 && C <= 32;
    off16 += c16;
    off8 += c8 && !c16;
    f64_off8 += is_f64 && c8;
    lm_kernel_free(k);
  }
  cr_expect_gt(f64, 0, "no f64 case");
  cr_expect_gt(ragged, 0, "no ragged-row case");
  cr_expect_gt(outputs2, 0, "no case of a kernel with two or more outputs");
  cr_expect_gt(loops3, 0, "no case of a kernel with three or more column loops");
  cr_expect_gt(single, 0, "no single-row case");
  cr_expect_gt(tall, 0, "no tall and narrow case (R >= 10000, C <= 32)");
  cr_expect_gt(off16, 0, "no case with C = 16k +- 1");
  cr_expect_gt(off8, 0, "no case with C = 8k +- 1 that is not 16k +- 1");
  cr_expect_gt(f64_off8, 0, "no f64 case with C = 8k +- 1 (8 f64 lanes in AVX-512)");
  cJSON_Delete(j);
}
