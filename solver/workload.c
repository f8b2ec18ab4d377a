/* Workload files (schema "lanemap.workload/1") and the in-code builder.
 *
 * Every check lives in the builder calls, so a workload built in code and
 * one read from JSON obey the same rules; the JSON reader only walks the
 * document, calls the builder and prefixes each message with the field's
 * JSON path.  A bucket entry is either one shape,
 *
 *   {"R": 64, "C": 4096, "weight": 3}
 *
 * or a group of shapes at one C, with R a list or a geometric series and
 * the weights a list of the same length or one number for all:
 *
 *   {"C": 4096, "R": [1, 8, 64], "weights": [10, 5, 1]}
 *   {"C": 4096, "R": {"from": 1, "to": 4096, "geometric": 16}, "weights": 1}
 *
 * docs/solver.md has the whole format. */
#include "lanemap/workload.h"

#include "lanemap/json.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

lm_workload *lm_workload_new(const char *name, const char *dir, lm_error *err) {
  lm_workload *w = calloc(1, sizeof *w);
  if (!w) {
    lm_error_set(err, LM_ESYS, "workload: out of memory");
    return NULL;
  }
  w->name = lm_strdup(name ? name : "<code>");
  w->dir = lm_strdup(dir && dir[0] ? dir : ".");
  w->isa[0] = LM_ISA_HOST;
  w->nisa = 1;
  w->workers[0] = 1;
  w->nworkers = 1;
  w->compile_budget_ms = -1;
  w->compile_budget_variants = -1;
  if (!w->name || !w->dir) {
    lm_workload_free(w);
    lm_error_set(err, LM_ESYS, "workload: out of memory");
    return NULL;
  }
  return w;
}

void lm_workload_free(lm_workload *w) {
  if (!w)
    return;
  for (int i = 0; i < w->nkernels; i++) {
    lm_workload_kernel *k = &w->kernels[i];
    free(k->path);
    free(k->resolved);
    free(k->extra);
    free(k->buckets);
    lm_kernel_free(k->k);
  }
  free(w->kernels);
  free(w->name);
  free(w->dir);
  free(w);
}

static int valid_extra(const char *s) {
  /* NAME=INT[,NAME=INT...]; lm_shape_bind checks the names later */
  const char *p = s;
  if (!*p)
    return 0;
  while (*p) {
    const char *n = p;
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || *p == '_' ||
           (p > n && *p >= '0' && *p <= '9'))
      p++;
    if (p == n || *p != '=')
      return 0;
    p++;
    const char *d = p;
    while (*p >= '0' && *p <= '9')
      p++;
    if (p == d || p - d > 12)
      return 0;
    if (*p == ',')
      p++;
    else if (*p)
      return 0;
    else
      break;
    if (!*p)
      return 0;
  }
  return 1;
}

/* The array a of n elements with room for one more.  Its capacity is the
 * power of two at or above n, so it grows by doubling (growing by one
 * element made a file of n entries cost n^2 copies) with no field to keep
 * it in. */
static void *room(void *a, int n, size_t size) {
  if (n > 0 && (n & (n - 1)) != 0)
    return a;
  return realloc(a, size * (n ? 2 * (size_t)n : 1));
}

lm_status lm_workload_add_kernel(lm_workload *w, const char *path,
                                 const char *extra, int *index, lm_error *err) {
  if (!path || !path[0])
    return lm_error_set(err, LM_EINPUT, "expected a non-empty .lk path");
  if (strlen(path) > 4000)
    return lm_error_set(err, LM_EINPUT, "path longer than 4000 bytes");
  if (extra && !valid_extra(extra))
    return lm_error_set(
        err, LM_EINPUT,
        "extra: expected symbols like \"H=64\" or \"H=64,K=4\"");
  lm_workload_kernel *ks = room(w->kernels, w->nkernels, sizeof *ks);
  if (!ks)
    return lm_error_set(err, LM_ESYS, "workload: out of memory");
  w->kernels = ks;
  lm_workload_kernel *k = &ks[w->nkernels];
  memset(k, 0, sizeof *k);
  k->compile_ms = -1;
  k->path = lm_strdup(path);
  size_t n = strlen(w->dir) + strlen(path) + 2;
  k->resolved = malloc(n);
  if (k->resolved) {
    if (path[0] == '/')
      snprintf(k->resolved, n, "%s", path);
    else
      snprintf(k->resolved, n, "%s/%s", w->dir, path);
  }
  k->extra = extra ? lm_strdup(extra) : NULL;
  w->nkernels++;
  if (!k->path || !k->resolved || (extra && !k->extra))
    return lm_error_set(err, LM_ESYS, "workload: out of memory");
  if (index)
    *index = w->nkernels - 1;
  return LM_OK;
}

static lm_status check_ki(const lm_workload *w, int ki, lm_error *err) {
  if (ki < 0 || ki >= w->nkernels)
    return lm_error_set(err, LM_EINPUT, "no kernel %d (workload has %d)", ki,
                        w->nkernels);
  return LM_OK;
}

lm_status lm_workload_add_bucket(lm_workload *w, int ki, int64_t R, int64_t C,
                                 double weight, lm_error *err) {
  if (check_ki(w, ki, err) != LM_OK)
    return LM_EINPUT;
  lm_workload_kernel *k = &w->kernels[ki];
  if (R < 1 || R > LM_WORKLOAD_MAX_EXTENT)
    return lm_error_set(err, LM_EINPUT,
                        "R: expected an integer in [1, 2^40], got %lld",
                        (long long)R);
  if (C < 1 || C > LM_WORKLOAD_MAX_EXTENT)
    return lm_error_set(err, LM_EINPUT,
                        "C: expected an integer in [1, 2^40], got %lld",
                        (long long)C);
  if (!isfinite(weight) || weight < 0)
    return lm_error_set(err, LM_EINPUT,
                        "weight: expected a finite number >= 0");
  if (k->nbuckets >= LM_WORKLOAD_MAX_BUCKETS)
    return lm_error_set(err, LM_EINPUT, "more than %d buckets in one kernel",
                        LM_WORKLOAD_MAX_BUCKETS);
  for (int b = 0; b < k->nbuckets; b++)
    if (k->buckets[b].R == R && k->buckets[b].C == C)
      return lm_error_set(err, LM_EINPUT,
                          "shape (R=%lld, C=%lld) repeats bucket %d",
                          (long long)R, (long long)C, b);
  lm_workload_bucket *bs = room(k->buckets, k->nbuckets, sizeof *bs);
  if (!bs)
    return lm_error_set(err, LM_ESYS, "workload: out of memory");
  k->buckets = bs;
  bs[k->nbuckets++] = (lm_workload_bucket){R, C, weight};
  return LM_OK;
}

lm_status lm_workload_add_geometric(lm_workload *w, int ki, int64_t C,
                                    int64_t from, int64_t to, int n,
                                    const double *weights, lm_error *err) {
  if (check_ki(w, ki, err) != LM_OK)
    return LM_EINPUT;
  if (from < 1 || from > LM_WORKLOAD_MAX_EXTENT)
    return lm_error_set(err, LM_EINPUT,
                        "R.from: expected an integer in [1, 2^40]");
  if (to < from || to > LM_WORKLOAD_MAX_EXTENT)
    return lm_error_set(err, LM_EINPUT,
                        "R.to: expected an integer in [R.from, 2^40]");
  if (n < 2 || n > LM_WORKLOAD_MAX_BUCKETS)
    return lm_error_set(err, LM_EINPUT,
                        "R.geometric: expected a count in [2, %d]",
                        LM_WORKLOAD_MAX_BUCKETS);
  int64_t prev = 0;
  for (int i = 0; i < n; i++) {
    int64_t R =
        i == n - 1
            ? to
            : (int64_t)llround((double)from * pow((double)to / (double)from,
                                                  (double)i / (n - 1)));
    if (R <= prev)
      return lm_error_set(
          err, LM_EINPUT,
          "R: %d geometric steps from %lld to %lld repeat R=%lld "
          "(use fewer steps)",
          n, (long long)from, (long long)to, (long long)R);
    prev = R;
  }
  lm_status s = LM_OK;
  for (int i = 0; i < n && s == LM_OK; i++) {
    int64_t R =
        i == n - 1
            ? to
            : (int64_t)llround((double)from * pow((double)to / (double)from,
                                                  (double)i / (n - 1)));
    s = lm_workload_add_bucket(w, ki, R, C, weights ? weights[i] : 1, err);
    if (s != LM_OK && weights) {
      lm_error e2 = *err;
      lm_error_set(err, s, "weights[%d]: %s", i, e2.msg);
    }
  }
  return s;
}

lm_status lm_workload_set_kernel_opts(lm_workload *w, int ki, int max_variants,
                                      double compile_ms, lm_error *err) {
  if (check_ki(w, ki, err) != LM_OK)
    return LM_EINPUT;
  if (max_variants < 0 || max_variants > 1000000)
    return lm_error_set(err, LM_EINPUT,
                        "max_variants: expected an integer in [0, 1000000]");
  if (isnan(compile_ms) || isinf(compile_ms) || compile_ms > 1e9)
    return lm_error_set(err, LM_EINPUT,
                        "compile_ms: expected a finite number >= 0");
  w->kernels[ki].max_variants = max_variants;
  w->kernels[ki].compile_ms = compile_ms < 0 ? -1 : compile_ms;
  return LM_OK;
}

lm_status lm_workload_set_isas(lm_workload *w, const lm_isa *isa, int n,
                               lm_error *err) {
  if (n < 1 || n > LM_ISA__COUNT)
    return lm_error_set(err, LM_EINPUT, "isa: expected 1 to %d targets",
                        LM_ISA__COUNT);
  for (int i = 0; i < n; i++) {
    if ((int)isa[i] < 0 || isa[i] >= LM_ISA__COUNT)
      return lm_error_set(err, LM_EINPUT, "isa[%d]: not an ISA target", i);
    for (int j = 0; j < i; j++)
      if (isa[j] == isa[i])
        return lm_error_set(err, LM_EINPUT, "isa[%d]: %s repeats isa[%d]", i,
                            lm_isa_name(isa[i]), j);
  }
  memcpy(w->isa, isa, sizeof *isa * (size_t)n);
  w->nisa = n;
  return LM_OK;
}

lm_status lm_workload_set_workers(lm_workload *w, const int *workers, int n,
                                  lm_error *err) {
  if (n < 1 || n > 8)
    return lm_error_set(err, LM_EINPUT,
                        "workers: expected 1 to 8 worker counts");
  for (int i = 0; i < n; i++) {
    if (workers[i] < 1 || workers[i] > LM_MAX_WORKERS)
      return lm_error_set(err, LM_EINPUT,
                          "workers[%d]: expected an integer in [1, %d]", i,
                          LM_MAX_WORKERS);
    for (int j = 0; j < i; j++)
      if (workers[j] == workers[i])
        return lm_error_set(err, LM_EINPUT,
                            "workers[%d]: %d repeats workers[%d]", i,
                            workers[i], j);
  }
  memcpy(w->workers, workers, sizeof *workers * (size_t)n);
  w->nworkers = n;
  return LM_OK;
}

lm_status lm_workload_set_budgets(lm_workload *w, int cap, double budget_ms,
                                  int budget_variants, lm_error *err) {
  if (cap < 0 || cap > 1000000)
    return lm_error_set(
        err, LM_EINPUT,
        "max_variants_per_kernel: expected an integer in [0, 1000000]");
  if (isnan(budget_ms) || isinf(budget_ms) || budget_ms > 1e12)
    return lm_error_set(err, LM_EINPUT,
                        "compile_budget_ms: expected a finite number >= 0");
  if (budget_variants > 100000000)
    return lm_error_set(err, LM_EINPUT,
                        "compile_budget_variants: expected an integer >= 0");
  if (budget_ms >= 0 && budget_variants >= 0)
    return lm_error_set(err, LM_EINPUT,
                        "compile_budget_variants: give a budget in ms or in "
                        "variants, not both");
  w->max_variants_per_kernel = cap;
  w->compile_budget_ms = budget_ms < 0 ? -1 : budget_ms;
  w->compile_budget_variants = budget_variants < 0 ? -1 : budget_variants;
  return LM_OK;
}

/* ---- JSON ---------------------------------------------------------------- */

typedef lm_json_rd rd;

/* A builder call failed on the value at (parent, key): name it. */
static lm_status at(rd *r, const cJSON *parent, const char *key) {
  lm_error inner = *r->err;
  return lm_json_error(r, parent, key, "%s", inner.msg);
}

#define MAXEXT LM_WORKLOAD_MAX_EXTENT

/* Unknown fields are errors: a misspelt budget must not pass silently. */
static const char *const top_keys[] = {"schema",
                                       "about",
                                       "isa",
                                       "workers",
                                       "fp",
                                       "max_variants_per_kernel",
                                       "compile_budget_ms",
                                       "compile_budget_variants",
                                       "kernels",
                                       NULL};
static const char *const kernel_keys[] = {
    "kernel", "about", "extra", "max_variants", "compile_ms", "buckets", NULL};
static const char *const bucket_keys[] = {"R",       "C",     "weight",
                                          "weights", "about", NULL};
static const char *const series_keys[] = {"from", "to", "geometric", NULL};

/* The weights of a group of n shapes: a list of n, or one number for all. */
static lm_status group_weights(rd *r, const cJSON *b, int n, double *ws) {
  const cJSON *jws = lm_json_get(b, "weights");
  char what[96];
  snprintf(what, sizeof what, "a list of %d weights (one per R) or one number",
           n);
  if (cJSON_IsNumber(jws)) {
    lm_status s = lm_json_number(r, b, "weights", 0, 0, DBL_MAX, &ws[0]);
    for (int i = 1; i < n && s == LM_OK; i++)
      ws[i] = ws[0];
    return s;
  }
  if (!cJSON_IsArray(jws) || cJSON_GetArraySize(jws) != n)
    return lm_json_expected(r, b, "weights", what);
  int i = 0;
  const cJSON *c;
  cJSON_ArrayForEach(c, jws) {
    lm_status s = lm_json_number(r, c, NULL, 0, 0, DBL_MAX, &ws[i++]);
    if (s)
      return s;
  }
  return LM_OK;
}

static lm_status parse_bucket(rd *r, lm_workload *w, int ki, const cJSON *b) {
  int64_t R = 0, C = 0, g = 0, from = 0, to = 0;
  double wt = 0;
  lm_status s;
  if ((s = lm_json_object(r, b, NULL, 0, &b)) ||
      (s = lm_json_fields(r, b, bucket_keys)) ||
      (s = lm_json_int(r, b, "C", 0, 1, MAXEXT, &C)))
    return s;
  const cJSON *jR = lm_json_get(b, "R");
  if (!jR || cJSON_IsNumber(jR)) { /* one shape */
    if (lm_json_get(b, "weights"))
      return lm_json_error(r, b, "weights",
                           "a single-R bucket takes \"weight\"");
    if ((s = lm_json_int(r, b, "R", 0, 1, MAXEXT, &R)) ||
        (s = lm_json_number(r, b, "weight", 0, 0, DBL_MAX, &wt)))
      return s;
    return lm_workload_add_bucket(w, ki, R, C, wt, r->err) ? at(r, b, NULL)
                                                           : LM_OK;
  }
  if (!cJSON_IsArray(jR) && !cJSON_IsObject(jR))
    return lm_json_expected(
        r, b, "R", "an integer, a list, or {\"from\", \"to\", \"geometric\"}");
  if (lm_json_get(b, "weight"))
    return lm_json_error(
        r, b, "weight",
        "a bucket group takes \"weights\" (a list or one number)");
  int n;
  if (cJSON_IsArray(jR)) {
    if ((s = lm_json_array(r, b, "R", 0, 1, LM_WORKLOAD_MAX_BUCKETS, &jR)))
      return s;
    n = cJSON_GetArraySize(jR);
  } else {
    if ((s = lm_json_fields(r, jR, series_keys)) ||
        (s = lm_json_int(r, jR, "geometric", 0, 2, LM_WORKLOAD_MAX_BUCKETS,
                         &g)))
      return s;
    n = (int)g;
  }
  double *ws = malloc(sizeof *ws * (size_t)n);
  if (!ws)
    return lm_error_set(r->err, LM_ESYS, "workload: out of memory");
  s = group_weights(r, b, n, ws);
  if (s == LM_OK && cJSON_IsArray(jR)) {
    int i = 0;
    const cJSON *c;
    cJSON_ArrayForEach(c, jR) {
      if ((s = lm_json_int(r, c, NULL, 0, 1, MAXEXT, &R)))
        break;
      if (lm_workload_add_bucket(w, ki, R, C, ws[i++], r->err) != LM_OK) {
        s = at(r, c, NULL);
        break;
      }
    }
  } else if (s == LM_OK) {
    if (!(s = lm_json_int(r, jR, "from", 0, 1, MAXEXT, &from)) &&
        !(s = lm_json_int(r, jR, "to", 0, from, MAXEXT, &to)) &&
        lm_workload_add_geometric(w, ki, C, from, to, n, ws, r->err) != LM_OK)
      s = at(r, b, NULL);
  }
  free(ws);
  return s;
}

static lm_status parse_kernel(rd *r, lm_workload *w, const cJSON *jk) {
  const char *file = NULL, *extra = NULL;
  const cJSON *bs = NULL, *jb;
  int64_t cap = 0;
  double ms = -1;
  int ki;
  lm_status s;
  if ((s = lm_json_object(r, jk, NULL, 0, &jk)) ||
      (s = lm_json_fields(r, jk, kernel_keys)) ||
      (s = lm_json_string(r, jk, "kernel", 0, 4000, &file)) ||
      (s = lm_json_string(r, jk, "extra", LM_JSON_OPTIONAL, 0, &extra)))
    return s;
  if (lm_workload_add_kernel(w, file, extra, &ki, r->err) != LM_OK)
    return at(r, jk, NULL);
  if ((s = lm_json_int(r, jk, "max_variants", LM_JSON_OPTIONAL, 0, 1000000,
                       &cap)) ||
      (s = lm_json_number(r, jk, "compile_ms", LM_JSON_OPTIONAL, 0, 1e9, &ms)))
    return s;
  if (lm_workload_set_kernel_opts(w, ki, (int)cap, ms, r->err) != LM_OK)
    return at(r, jk, NULL);
  if ((s = lm_json_array(r, jk, "buckets", 0, 1, INT32_MAX, &bs)))
    return s;
  cJSON_ArrayForEach(jb, bs) {
    if ((s = parse_bucket(r, w, ki, jb)))
      return s;
  }
  return LM_OK;
}

static lm_status parse_doc(rd *r, lm_workload *w, const cJSON *root) {
  const char *schema = NULL;
  const cJSON *isa = NULL, *wk = NULL, *ks = NULL, *c;
  lm_status s;
  if (!cJSON_IsObject(root))
    return lm_json_expected(r, root, NULL, "a JSON object");
  if ((s = lm_json_string(r, root, "schema", 0, 0, &schema)))
    return s;
  if (strncmp(schema, "lanemap.workload/", 17) != 0 || atoi(schema + 17) != 1 ||
      !isdigit((unsigned char)schema[17]))
    return lm_json_expected(r, root, "schema", "\"" LM_WORKLOAD_SCHEMA "\"");
  if ((s = lm_json_fields(r, root, top_keys)) ||
      (s = lm_json_array(r, root, "isa", LM_JSON_OPTIONAL, 1, LM_ISA__COUNT,
                         &isa)))
    return s;
  if (isa) {
    lm_isa v[LM_ISA__COUNT];
    int n = 0;
    cJSON_ArrayForEach(c, isa) {
      if (!cJSON_IsString(c))
        return lm_json_expected(r, c, NULL,
                                "a target name (sse4.2, avx2, avx512, host, aarch64-neon, aarch64-sve128/256/512)");
      if (lm_isa_parse(c->valuestring, &v[n++], r->err) != LM_OK)
        return at(r, c, NULL);
    }
    if (lm_workload_set_isas(w, v, n, r->err) != LM_OK)
      return at(r, root, "isa");
  }
  if ((s = lm_json_array(r, root, "workers", LM_JSON_OPTIONAL, 1, 8, &wk)))
    return s;
  if (wk) {
    int v[8], n = 0;
    cJSON_ArrayForEach(c, wk) {
      int64_t x = 0;
      if ((s = lm_json_int(r, c, NULL, 0, 1, LM_MAX_WORKERS, &x)))
        return s;
      v[n++] = (int)x;
    }
    if (lm_workload_set_workers(w, v, n, r->err) != LM_OK)
      return at(r, root, "workers");
  }
  const char *fp = NULL;
  if ((s = lm_json_string(r, root, "fp", LM_JSON_OPTIONAL, 16, &fp)))
    return s;
  int mode = fp ? lm_fp_lookup(fp) : LM_FP_STRICT;
  if (mode < 0)
    return lm_json_expected(r, root, "fp", "\"strict\" or \"relaxed\"");
  w->fp = (lm_fp)mode;
  int64_t cap = 0, bv = -1;
  double bms = -1;
  if ((s = lm_json_int(r, root, "max_variants_per_kernel", LM_JSON_OPTIONAL, 0,
                       1000000, &cap)) ||
      (s = lm_json_number(r, root, "compile_budget_ms", LM_JSON_OPTIONAL, 0,
                          1e12, &bms)) ||
      (s = lm_json_int(r, root, "compile_budget_variants", LM_JSON_OPTIONAL, 0,
                       100000000, &bv)))
    return s;
  if (lm_workload_set_budgets(w, (int)cap, bms, (int)bv, r->err) != LM_OK) {
    lm_error inner = *r->err;
    return lm_error_set(r->err, LM_EINPUT, "%s: $.%s", r->file, inner.msg);
  }
  if ((s = lm_json_array(r, root, "kernels", 0, 1, INT32_MAX, &ks)))
    return s;
  cJSON_ArrayForEach(c, ks) {
    if ((s = parse_kernel(r, w, c)))
      return s;
  }
  return LM_OK;
}

lm_status lm_workload_from_json_text(const char *name, const char *dir,
                                     const char *text, size_t n,
                                     lm_workload **out, lm_error *err) {
  *out = NULL;
  lm_workload *w = lm_workload_new(name, dir, err);
  if (!w)
    return LM_ESYS;
  cJSON *root = NULL;
  lm_status s = lm_json_parse(w->name, text, n, &root, err);
  if (s == LM_OK) {
    rd r = {w->name, root, err};
    s = parse_doc(&r, w, root);
  }
  cJSON_Delete(root);
  if (s != LM_OK) {
    lm_workload_free(w);
    return s;
  }
  *out = w;
  return LM_OK;
}

lm_status lm_workload_shape(const lm_workload *w, int ki, int b, lm_shape *out,
                            lm_error *err) {
  if (check_ki(w, ki, err) != LM_OK)
    return LM_EINPUT;
  const lm_workload_kernel *k = &w->kernels[ki];
  if (!k->k)
    return lm_error_set(err, LM_EINPUT,
                        "kernel %d is not loaded (lm_workload_bind)", ki);
  if (b < 0 || b >= k->nbuckets)
    return lm_error_set(err, LM_EINPUT, "kernel %d has no bucket %d", ki, b);
  return lm_shape_bind(k->k, k->buckets[b].R, k->buckets[b].C, k->extra, out,
                       err);
}

lm_status lm_workload_bind(lm_workload *w, lm_error *err) {
  for (int i = 0; i < w->nkernels; i++) {
    lm_workload_kernel *k = &w->kernels[i];
    lm_error inner;
    if (k->nbuckets == 0)
      return lm_error_set(err, LM_EINPUT,
                          "%s: $.kernels[%d].buckets: no buckets", w->name, i);
    if (!k->k && lm_kernel_load(k->resolved, &k->k, err) != LM_OK) {
      inner = *err;
      return lm_error_set(err, inner.status, "%s: $.kernels[%d].kernel: %s",
                          w->name, i, inner.msg);
    }
    /* compiled entries, AOT symbols and dispatch go by kernel name */
    for (int j = 0; j < i; j++)
      if (strcmp(w->kernels[j].k->name, k->k->name) == 0)
        return lm_error_set(
            err, LM_EINPUT,
            "%s: $.kernels[%d].kernel: %s holds kernel %.64s, as "
            "kernels[%d] (%s) does: a workload names each kernel "
            "once (put all its shapes in one entry's buckets)",
            w->name, i, k->path, k->k->name, j, w->kernels[j].path);
    for (int b = 0; b < k->nbuckets; b++) {
      lm_shape sh;
      if (lm_workload_shape(w, i, b, &sh, err) != LM_OK) {
        inner = *err;
        return lm_error_set(err, LM_EINPUT, "%s: $.kernels[%d].buckets[%d]: %s",
                            w->name, i, b, inner.msg);
      }
    }
  }
  return LM_OK;
}

lm_status lm_workload_load(const char *path, lm_workload **out, lm_error *err) {
  *out = NULL;
  char *text = NULL;
  size_t n = 0;
  lm_status s = lm_json_read_file(path, &text, &n, err);
  if (s != LM_OK)
    return s;
  /* the folder, whole: kernels are found relative to it */
  const char *slash = strrchr(path, '/');
  char *dir = slash ? strndup(path, (size_t)(slash - path) + (slash == path))
                    : strdup(".");
  lm_workload *w = NULL;
  s = dir ? lm_workload_from_json_text(path, dir, text, n, &w, err)
          : lm_error_set(err, LM_ESYS, "workload: out of memory");
  free(dir);
  free(text);
  if (s == LM_OK && (s = lm_workload_bind(w, err)) != LM_OK) {
    lm_workload_free(w);
    w = NULL;
  }
  *out = w;
  return s;
}

lm_status lm_workload_to_json_text(const lm_workload *w, char **out,
                                   lm_error *err) {
  *out = NULL;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "schema", LM_WORKLOAD_SCHEMA);
  cJSON *isa = cJSON_AddArrayToObject(root, "isa");
  for (int i = 0; i < w->nisa; i++)
    cJSON_AddItemToArray(isa, cJSON_CreateString(lm_isa_name(w->isa[i])));
  cJSON *wk = cJSON_AddArrayToObject(root, "workers");
  for (int i = 0; i < w->nworkers; i++)
    cJSON_AddItemToArray(wk, cJSON_CreateNumber(w->workers[i]));
  if (w->fp != LM_FP_STRICT) /* strict is the default: older files unchanged */
    cJSON_AddStringToObject(root, "fp", lm_fp_name(w->fp));
  cJSON_AddNumberToObject(root, "max_variants_per_kernel",
                          w->max_variants_per_kernel);
  if (w->compile_budget_ms >= 0)
    cJSON_AddItemToObject(root, "compile_budget_ms",
                          cJSON_CreateNumber(w->compile_budget_ms));
  if (w->compile_budget_variants >= 0)
    cJSON_AddNumberToObject(root, "compile_budget_variants",
                            w->compile_budget_variants);
  cJSON *ks = cJSON_AddArrayToObject(root, "kernels");
  for (int i = 0; i < w->nkernels; i++) {
    const lm_workload_kernel *k = &w->kernels[i];
    cJSON *jk = cJSON_CreateObject();
    cJSON_AddStringToObject(jk, "kernel", k->path);
    if (k->extra)
      cJSON_AddStringToObject(jk, "extra", k->extra);
    if (k->max_variants)
      cJSON_AddNumberToObject(jk, "max_variants", k->max_variants);
    if (k->compile_ms >= 0)
      cJSON_AddItemToObject(jk, "compile_ms",
                            cJSON_CreateNumber(k->compile_ms));
    cJSON *bs = cJSON_AddArrayToObject(jk, "buckets");
    for (int b = 0; b < k->nbuckets; b++) {
      cJSON *jb = cJSON_CreateObject();
      cJSON_AddNumberToObject(jb, "R", (double)k->buckets[b].R);
      cJSON_AddNumberToObject(jb, "C", (double)k->buckets[b].C);
      cJSON_AddItemToObject(jb, "weight",
                            cJSON_CreateNumber(k->buckets[b].weight));
      cJSON_AddItemToArray(bs, jb);
    }
    cJSON_AddItemToArray(ks, jk);
  }
  lm_status s = lm_json_exact(root, err);
  if (s == LM_OK)
    s = lm_json_print(root, true, out, NULL, err);
  cJSON_Delete(root);
  return s;
}

static int streq(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

int lm_workload_equal(const lm_workload *a, const lm_workload *b) {
  if (a->nkernels != b->nkernels || a->nisa != b->nisa ||
      a->nworkers != b->nworkers || a->fp != b->fp ||
      a->max_variants_per_kernel != b->max_variants_per_kernel ||
      a->compile_budget_ms != b->compile_budget_ms ||
      a->compile_budget_variants != b->compile_budget_variants)
    return 0;
  for (int i = 0; i < a->nisa; i++)
    if (a->isa[i] != b->isa[i])
      return 0;
  for (int i = 0; i < a->nworkers; i++)
    if (a->workers[i] != b->workers[i])
      return 0;
  for (int i = 0; i < a->nkernels; i++) {
    const lm_workload_kernel *x = &a->kernels[i], *y = &b->kernels[i];
    if (!streq(x->path, y->path) || !streq(x->extra, y->extra) ||
        x->max_variants != y->max_variants || x->compile_ms != y->compile_ms ||
        x->nbuckets != y->nbuckets)
      return 0;
    for (int s = 0; s < x->nbuckets; s++)
      if (x->buckets[s].R != y->buckets[s].R ||
          x->buckets[s].C != y->buckets[s].C ||
          x->buckets[s].weight != y->buckets[s].weight)
        return 0;
  }
  return 1;
}
