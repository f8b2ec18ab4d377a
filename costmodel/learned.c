/* A learned cost model: gradient-boosted regression trees from XGBoost's C
 * API, behind lanemap's conventions (status and message, never a print or
 * an abort, atomic files, loaders that name the bad field).
 *
 * The model is XGBoost's booster plus what XGBoost does not keep: the
 * options it was trained with, the number of training rows and the
 * feature names.  Determinism is bought with three settings: nthread 1,
 * tree_method "exact" (the exact greedy split search, which sees every
 * value instead of a quantile sketch, so there is no bin count to
 * choose, and which XGBoost 1.7's "auto" picks for small and medium data
 * sets anyway) and the caller's seed for row subsampling.
 *
 * The file embeds XGBoost's JSON model as a string, not as a JSON object:
 * XGBoost's reader types a number by its spelling, so a float leaf that
 * cJSON would re-print as "2" instead of "2E0" reads back as an integer
 * and the load fails ("Invalid cast, from Integer to Number").  A string
 * keeps XGBoost's bytes exactly.
 *
 * XGBoost 1.7 trusts the structure of a model it loads: a child index
 * outside the tree, a cycle, or a tree count that disagrees with the
 * arrays crashes or hangs the process at load or predict time (each
 * found by trying).  So a loaded model is parsed and checked here first
 * (check_xgb), and so is every model before it is saved, so that a file this
 * code writes is one it reads. */
#include "lanemap/learned.h"

#include "lanemap/json.h"

#include <xgboost/c_api.h>

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct lm_learned {
  BoosterHandle bst;
  lm_learned_opts opts;
  int nfeat;
  int rows;     /* training rows */
  char **names; /* [nfeat] */
};

/* The only objective and booster this module trains, and so loads. */
#define OBJECTIVE "reg:squarederror"
#define TREE_METHOD "exact"
/* XGBoost's JSON model, by XGBoosterSaveModelToBuffer's config. */
#define XGB_JSON "{\"format\":\"json\"}"
/* Plain prediction of every tree (XGBoosterPredictFromDMatrix). */
#define XGB_PREDICT                                                            \
  "{\"type\":0,\"training\":false,\"iteration_begin\":0,"                      \
  "\"iteration_end\":0,\"strict_shape\":false}"
/* How much of an XGBoost message is kept: its first line, without the
 * time stamp and stack trace, fits here. */
#define XGB_MSG_MAX 600

/* ---- XGBoost errors ------------------------------------------------------ */

/* XGBoost's last error as one line: "[19:35:45] src/x.cc:81: Check
 * failed: ...\nStack trace: ..." loses the time stamp and the trace. */
static void xgb_message(char *buf, size_t n) {
  const char *s = XGBGetLastError();
  if (!s || !*s)
    s = "no message";
  if (s[0] == '[') {
    const char *close = strchr(s, ']');
    if (close && close - s < 16)
      s = close + 1 + (close[1] == ' ');
  }
  const char *trace = strstr(s, "Stack trace:");
  size_t len = trace ? (size_t)(trace - s) : strlen(s);
  if (len > n - 1)
    len = n - 1;
  memcpy(buf, s, len);
  buf[len] = 0;
  for (char *p = buf; *p; p++)
    if (*p == '\n' || *p == '\r' || *p == '\t')
      *p = ' ';
  while (len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == ':'))
    buf[--len] = 0;
}

/* Fail with XGBoost's message: "learned: WHAT: XGBoost: MESSAGE". */
static lm_status xgb_fail(lm_error *err, lm_status status, const char *what) {
  char m[XGB_MSG_MAX];
  xgb_message(m, sizeof m);
  return lm_error_set(err, status, "learned: %s: XGBoost: %s", what, m);
}

static lm_status oom(lm_error *err) {
  return lm_error_set(err, LM_ESYS, "learned: out of memory");
}

/* ---- options ------------------------------------------------------------- */

void lm_learned_defaults(lm_learned_opts *o) {
  o->rounds = LM_LEARNED_ROUNDS;
  o->max_depth = LM_LEARNED_MAX_DEPTH;
  o->eta = LM_LEARNED_ETA;
  o->subsample = LM_LEARNED_SUBSAMPLE;
  o->min_child_weight = LM_LEARNED_MIN_CHILD_WEIGHT;
  o->lambda = LM_LEARNED_LAMBDA;
  o->seed = LM_LEARNED_SEED;
}

lm_status lm_learned_opts_check(const lm_learned_opts *o, lm_error *err) {
  if (o->rounds < 1)
    return lm_error_set(err, LM_EINPUT, "rounds: must be >= 1, got %d",
                        o->rounds);
  if (o->max_depth < 1)
    return lm_error_set(err, LM_EINPUT, "max_depth: must be >= 1, got %d",
                        o->max_depth);
  /* a step beyond the Newton step (eta 1) only overshoots */
  if (!(o->eta > 0 && o->eta <= 1))
    return lm_error_set(err, LM_EINPUT, "eta: must be in (0, 1], got %g",
                        o->eta);
  if (!(o->subsample > 0 && o->subsample <= 1))
    return lm_error_set(err, LM_EINPUT, "subsample: must be in (0, 1], got %g",
                        o->subsample);
  if (!(o->min_child_weight >= 0 && isfinite(o->min_child_weight)))
    return lm_error_set(err, LM_EINPUT,
                        "min_child_weight: must be finite and >= 0, got %g",
                        o->min_child_weight);
  if (!(o->lambda >= 0 && isfinite(o->lambda)))
    return lm_error_set(err, LM_EINPUT,
                        "lambda: must be finite and >= 0, got %g", o->lambda);
  return LM_OK;
}

/* ---- the object ---------------------------------------------------------- */

void lm_learned_free(lm_learned *l) {
  if (!l)
    return;
  if (l->bst)
    XGBoosterFree(l->bst);
  if (l->names)
    for (int i = 0; i < l->nfeat; i++)
      free(l->names[i]);
  free(l->names);
  free(l);
}

/* A model without a booster: nfeat names copied from names, or "f0",
 * "f1", ... when names is NULL. */
static lm_learned *learned_new(int nfeat, const char *const *names) {
  lm_learned *l = calloc(1, sizeof *l);
  if (!l)
    return NULL;
  l->nfeat = nfeat;
  l->names = calloc((size_t)nfeat, sizeof *l->names);
  if (!l->names) {
    lm_learned_free(l);
    return NULL;
  }
  for (int i = 0; i < nfeat; i++) {
    char dflt[16];
    snprintf(dflt, sizeof dflt, "f%d", i);
    if (!(l->names[i] = lm_strdup(names ? names[i] : dflt))) {
      lm_learned_free(l);
      return NULL;
    }
  }
  return l;
}

int lm_learned_nfeat(const lm_learned *l) { return l->nfeat; }

const char *lm_learned_feature_name(const lm_learned *l, int i) {
  return i >= 0 && i < l->nfeat ? l->names[i] : NULL;
}

lm_learned_opts lm_learned_options(const lm_learned *l) { return l->opts; }

int lm_learned_rows(const lm_learned *l) { return l->rows; }

/* ---- inputs -------------------------------------------------------------- */

/* names (of training): NULL, or nfeat distinct non-empty strings. */
static lm_status check_names(const char *const *names, int nfeat,
                             lm_error *err) {
  if (!names)
    return LM_OK;
  lm_strset *seen = lm_strset_new();
  if (!seen)
    return oom(err);
  lm_status s = LM_OK;
  for (int i = 0; i < nfeat && s == LM_OK; i++) {
    int64_t prior = -1;
    if (!names[i] || !names[i][0])
      s = lm_error_set(err, LM_EINPUT, "names[%d]: %s; a feature needs a name",
                       i, names[i] ? "empty" : "NULL");
    else if (lm_strset_add_str(seen, names[i], i, &prior) != LM_OK)
      s = oom(err);
    else if (prior >= 0)
      s = lm_error_set(err, LM_EINPUT,
                       "names[%d]: \"%.80s\" names feature %d too; feature "
                       "names must be distinct",
                       i, names[i], (int)prior);
  }
  lm_strset_free(seen);
  return s;
}

/* X (m rows of nfeat) as floats for XGBoost: every value finite or NAN
 * (missing), and within float's range.  The message names the row, the
 * feature and its name. */
static lm_status floats_of_X(const double *X, int m, int nfeat,
                             const char *const *names, float **out,
                             lm_error *err) {
  *out = NULL;
  if ((size_t)m > SIZE_MAX / sizeof(float) / (size_t)nfeat)
    return lm_error_set(
        err, LM_EINPUT,
        "X: %d rows of %d features are more than memory can address", m, nfeat);
  size_t n = (size_t)m * (size_t)nfeat;
  float *f = malloc(n ? n * sizeof *f : 1);
  if (!f)
    return oom(err);
  for (size_t k = 0; k < n; k++) {
    double v = X[k];
    if (isnan(v) || fabs(v) <= FLT_MAX) {
      f[k] = (float)v;
      continue;
    }
    int i = (int)(k / (size_t)nfeat), j = (int)(k % (size_t)nfeat);
    char dflt[16];
    snprintf(dflt, sizeof dflt, "f%d", j);
    free(f);
    return lm_error_set(
        err, LM_EINPUT,
        "X[%d][%d] (row %d, feature \"%.80s\"): %g is %s (NAN marks a missing "
        "value)",
        i, j, i, names ? names[j] : dflt, v,
        isinf(v) ? "infinite"
                 : "outside float's range, which XGBoost stores features in");
  }
  *out = f;
  return LM_OK;
}

/* A finite array v[m] that fits a float, as floats; w (weights) also
 * non-negative with some weight > 0.  arg names it ("y", "w"). */
static lm_status floats_of(const double *v, int m, const char *arg, int weights,
                           float **out, lm_error *err) {
  *out = NULL;
  float *f = malloc((size_t)m * sizeof *f);
  if (!f)
    return oom(err);
  int any = 0;
  for (int i = 0; i < m; i++) {
    const char *bad = !isfinite(v[i])        ? "not finite"
                      : fabs(v[i]) > FLT_MAX ? "outside float's range"
                      : weights && v[i] < 0  ? "negative"
                                             : NULL;
    if (bad) {
      free(f);
      return lm_error_set(err, LM_EINPUT, "%s[%d]: %g is %s", arg, i, v[i],
                          bad);
    }
    f[i] = (float)v[i];
    any |= v[i] > 0;
  }
  if (weights && !any) {
    free(f);
    return lm_error_set(err, LM_EINPUT, "%s: every weight is 0", arg);
  }
  *out = f;
  return LM_OK;
}

/* A DMatrix of the m rows of f, NAN missing, built on this thread. */
static lm_status dmatrix(const float *f, int m, int nfeat, DMatrixHandle *out,
                         lm_error *err) {
  *out = NULL;
  if (XGDMatrixCreateFromMat_omp(f, (bst_ulong)m, (bst_ulong)nfeat, NAN, out,
                                 1) != 0) {
    *out = NULL;
    return xgb_fail(err, LM_EFAIL, "making the data matrix");
  }
  return LM_OK;
}

/* ---- booster parameters -------------------------------------------------- */

/* A parameter every booster gets: one thread (the library's callers run
 * their own), and no log output (the library never prints). */
static lm_status set_param(BoosterHandle b, const char *key, const char *value,
                           lm_error *err) {
  if (XGBoosterSetParam(b, key, value) == 0)
    return LM_OK;
  char what[96];
  snprintf(what, sizeof what, "setting %s=%s", key, value);
  return xgb_fail(err, LM_EFAIL, what);
}

static lm_status set_common(BoosterHandle b, lm_error *err) {
  lm_status s;
  if ((s = set_param(b, "nthread", "1", err)) ||
      (s = set_param(b, "verbosity", "0", err)))
    return s;
  return LM_OK;
}

static lm_status set_training(BoosterHandle b, const lm_learned_opts *o,
                              lm_error *err) {
  char depth[16], seed[16], eta[LM_JSON_NUM_LEN], sub[LM_JSON_NUM_LEN],
      mcw[LM_JSON_NUM_LEN], lambda[LM_JSON_NUM_LEN];
  snprintf(depth, sizeof depth, "%d", o->max_depth);
  snprintf(seed, sizeof seed, "%u", o->seed);
  lm_json_fmt_double(o->eta, eta);
  lm_json_fmt_double(o->subsample, sub);
  lm_json_fmt_double(o->min_child_weight, mcw);
  lm_json_fmt_double(o->lambda, lambda);
  const char *kv[][2] = {
      {"booster", "gbtree"},
      {"objective", OBJECTIVE},
      {"tree_method", TREE_METHOD},
      {"max_depth", depth},
      {"eta", eta},
      {"subsample", sub},
      {"min_child_weight", mcw},
      {"lambda", lambda},
      {"seed", seed},
  };
  lm_status s = set_common(b, err);
  for (size_t i = 0; s == LM_OK && i < sizeof kv / sizeof kv[0]; i++)
    s = set_param(b, kv[i][0], kv[i][1], err);
  return s;
}

/* ---- training and prediction --------------------------------------------- */

lm_status lm_learned_train(const lm_learned_opts *o, const double *X, int m,
                           int nfeat, const double *y, const double *w,
                           const char *const *names, lm_learned **out,
                           lm_error *err) {
  *out = NULL;
  lm_learned_opts dflt;
  if (!o) {
    lm_learned_defaults(&dflt);
    o = &dflt;
  }
  if (m <= 0)
    return lm_error_set(err, LM_EINPUT,
                        "m: %d rows; training needs at least one", m);
  if (nfeat <= 0)
    return lm_error_set(err, LM_EINPUT,
                        "nfeat: %d features; a model needs at least one",
                        nfeat);
  if (!X || !y)
    return lm_error_set(err, LM_EINPUT, "%s: NULL", !X ? "X" : "y");
  lm_status s;
  if ((s = lm_learned_opts_check(o, err)) ||
      (s = check_names(names, nfeat, err)))
    return s;

  float *xf = NULL, *yf = NULL, *wf = NULL;
  DMatrixHandle d = NULL;
  lm_learned *l = NULL;
  if ((s = floats_of_X(X, m, nfeat, names, &xf, err)) ||
      (s = floats_of(y, m, "y", 0, &yf, err)) ||
      (w && (s = floats_of(w, m, "w", 1, &wf, err))) ||
      (s = dmatrix(xf, m, nfeat, &d, err)))
    goto error;
  if (XGDMatrixSetFloatInfo(d, "label", yf, (bst_ulong)m) != 0 ||
      (wf && XGDMatrixSetFloatInfo(d, "weight", wf, (bst_ulong)m) != 0)) {
    s = xgb_fail(err, LM_EFAIL, "setting the targets and weights");
    goto error;
  }
  if (!(l = learned_new(nfeat, names))) {
    s = oom(err);
    goto error;
  }
  l->opts = *o;
  l->rows = m;
  if (XGBoosterCreate(&d, 1, &l->bst) != 0) {
    l->bst = NULL;
    s = xgb_fail(err, LM_EFAIL, "creating the booster");
    goto error;
  }
  if ((s = set_training(l->bst, o, err)))
    goto error;
  for (int r = 0; r < o->rounds; r++)
    if (XGBoosterUpdateOneIter(l->bst, r, d) != 0) {
      char what[64];
      snprintf(what, sizeof what, "boosting round %d", r);
      s = xgb_fail(err, LM_EFAIL, what);
      goto error;
    }
  XGDMatrixFree(d);
  free(xf);
  free(yf);
  free(wf);
  *out = l;
  return LM_OK;
error:
  lm_learned_free(l);
  if (d)
    XGDMatrixFree(d);
  free(xf);
  free(yf);
  free(wf);
  return s;
}

lm_status lm_learned_check_features(const lm_learned *l, int nfeat,
                                    const char *const *names, lm_error *err) {
  if (nfeat != l->nfeat)
    return lm_error_set(
        err, LM_EINPUT,
        "nfeat: rows of %d features, but the model takes %d (%s, ...)", nfeat,
        l->nfeat, l->names[0]);
  if (names)
    for (int i = 0; i < nfeat; i++)
      if (!names[i] || strcmp(names[i], l->names[i]) != 0)
        return lm_error_set(err, LM_EINPUT,
                            "names[%d]: feature %d is \"%.80s\" here but "
                            "\"%.80s\" in the model",
                            i, i, names[i] ? names[i] : "(NULL)", l->names[i]);
  return LM_OK;
}

lm_status lm_learned_predict(const lm_learned *l, const double *X, int m,
                             double *out, lm_error *err) {
  int nfeat = l->nfeat;
  if (m < 0)
    return lm_error_set(err, LM_EINPUT, "m: %d rows", m);
  if (m == 0)
    return LM_OK;
  if (!X || !out)
    return lm_error_set(err, LM_EINPUT, "%s: NULL", !X ? "X" : "out");
  float *xf = NULL;
  DMatrixHandle d = NULL;
  lm_status s;
  if ((s = floats_of_X(X, m, nfeat, (const char *const *)l->names, &xf, err)) ||
      (s = dmatrix(xf, m, nfeat, &d, err))) {
    free(xf);
    return s;
  }
  bst_ulong const *shape = NULL;
  bst_ulong dim = 0;
  float const *res = NULL;
  if (XGBoosterPredictFromDMatrix(l->bst, d, XGB_PREDICT, &shape, &dim, &res) !=
      0)
    s = xgb_fail(err, LM_EFAIL, "predicting");
  else if (dim != 1 || shape[0] != (bst_ulong)m)
    s = lm_error_set(err, LM_EFAIL,
                     "learned: predicting: XGBoost answered %d dimensions for "
                     "%d rows, not one value a row",
                     (int)dim, m);
  else
    for (int i = 0; i < m; i++)
      out[i] = res[i];
  XGDMatrixFree(d);
  free(xf);
  return s;
}

/* ---- XGBoost's model, checked -------------------------------------------- */

typedef lm_json_rd rd;

/* A parameter XGBoost writes as a string holding an integer ("85"), in
 * [lo, hi]. */
static lm_status xint(rd *r, const cJSON *parent, const char *key, long lo,
                      long hi, long *out) {
  const cJSON *j = lm_json_get(parent, key);
  if (cJSON_IsString(j) && j->valuestring[0]) {
    char *end;
    errno = 0;
    long v = strtol(j->valuestring, &end, 10);
    if (!*end && !errno && v >= lo && v <= hi) {
      *out = v;
      return LM_OK;
    }
  }
  char what[96];
  if (lo == hi)
    snprintf(what, sizeof what, "\"%ld\"", lo);
  else
    snprintf(what, sizeof what, "a string holding an integer from %ld to %ld",
             lo, hi);
  return lm_json_expected(r, parent, key, what);
}

/* The n integers of the array parent.key, each in [lo, hi], into a[n]. */
static lm_status int_array(rd *r, const cJSON *parent, const char *key, int n,
                           long lo, long hi, int *a) {
  const cJSON *arr = NULL, *c;
  lm_status s = lm_json_array(r, parent, key, 0, n, n, &arr);
  int i = 0;
  cJSON_ArrayForEach(c, arr) {
    int64_t v = 0;
    if (s || (s = lm_json_int(r, c, NULL, 0, lo, hi, &v)))
      return s;
    a[i++] = (int)v;
  }
  return s;
}

/* An optional array that must be empty: the categorical-split tables
 * (lanemap trains numerical splits only). */
static lm_status empty_array(rd *r, const cJSON *parent, const char *key) {
  const cJSON *a = NULL;
  lm_status s =
      lm_json_array(r, parent, key, LM_JSON_OPTIONAL, 0, INT32_MAX, &a);
  if (s == LM_OK && a && cJSON_GetArraySize(a) > 0)
    return lm_json_error(
        r, parent, key,
        "a categorical split; lanemap's models split numerical features only");
  return s;
}

/* Node i's child c (left or right, in array key) is a node of the tree
 * not reached before, and its parent entry says i. */
static lm_status check_child(rd *r, const cJSON *t, const char *key, int i,
                             int c, int n, const int *parents,
                             const char *seen) {
  const cJSON *at = cJSON_GetArrayItem(lm_json_get(t, key), i);
  if (c < 0 || c >= n)
    return lm_json_error(
        r, at, NULL, "node %d's child %d is not a node of this tree (%d nodes)",
        i, c, n);
  if (seen[c])
    return lm_json_error(
        r, at, NULL,
        "node %d's child %d is reached twice: the nodes do not form a tree", i,
        c);
  if (parents[c] != i)
    return lm_json_error(
        r, cJSON_GetArrayItem(lm_json_get(t, "parents"), c), NULL,
        "node %d's parent is %d, but node %d names it as a child", c,
        parents[c], i);
  return LM_OK;
}

/* One tree of nfeat features: the arrays XGBoost indexes by have one entry
 * a node, and the nodes reached from the root form a tree whose splits
 * name features of the model.  Nodes not reached (deleted by pruning) are
 * never visited by prediction, and are not checked. */
static lm_status check_tree(rd *r, const cJSON *t, int id, int nfeat) {
  const cJSON *param = NULL, *types = NULL, *c;
  long n = 0, nf = 0, v = 0;
  int64_t tid = 0;
  lm_status s;
  if (!cJSON_IsObject(t))
    return lm_json_expected(r, t, NULL, "a tree (an object)");
  if ((s = lm_json_int(r, t, "id", 0, id, id, &tid)) ||
      (s = lm_json_object(r, t, "tree_param", 0, &param)) ||
      (s = xint(r, param, "num_nodes", 1, INT32_MAX, &n)) ||
      (s = xint(r, param, "num_feature", 1, INT32_MAX, &nf)) ||
      (nf != nfeat &&
       (s = lm_json_error(r, param, "num_feature",
                          "a tree of %ld features, but $.features names %d", nf,
                          nfeat))) ||
      /* 1.7 writes 0 for one value a leaf; later versions 1 */
      (s = xint(r, param, "size_leaf_vector", 0, 1, &v)) ||
      (s = lm_json_array(r, t, "split_type", 0, (int)n, (int)n, &types)) ||
      (s = empty_array(r, t, "categories")) ||
      (s = empty_array(r, t, "categories_nodes")) ||
      (s = empty_array(r, t, "categories_segments")) ||
      (s = empty_array(r, t, "categories_sizes")))
    return s;
  cJSON_ArrayForEach(c, types) {
    if (!cJSON_IsNumber(c) || c->valuedouble != 0)
      return lm_json_expected(r, c, NULL, "0, a numerical split");
  }
  int *left = malloc((size_t)n * 4 * sizeof *left);
  char *seen = calloc((size_t)n, 1);
  if (!left || !seen) {
    free(left);
    free(seen);
    return oom(r->err);
  }
  int *right = left + n, *parents = right + n, *split = parents + n;
  int *stack = NULL;
  if ((s = int_array(r, t, "left_children", (int)n, INT32_MIN, INT32_MAX,
                     left)) ||
      (s = int_array(r, t, "right_children", (int)n, INT32_MIN, INT32_MAX,
                     right)) ||
      (s = int_array(r, t, "parents", (int)n, INT32_MIN, INT32_MAX, parents)) ||
      (s = int_array(r, t, "split_indices", (int)n, 0, INT32_MAX, split)))
    goto done;
  /* depth-first from the root; each node is pushed once (seen), so the
   * stack needs n entries */
  stack = malloc((size_t)n * sizeof *stack);
  if (!stack) {
    s = oom(r->err);
    goto done;
  }
  int top = 0;
  stack[top++] = 0;
  seen[0] = 1;
  while (top > 0 && s == LM_OK) {
    int i = stack[--top];
    if (left[i] == -1 && right[i] == -1)
      continue; /* a leaf */
    if (left[i] == -1 || right[i] == -1) {
      s = lm_json_error(
          r, cJSON_GetArrayItem(lm_json_get(t, "left_children"), i), NULL,
          "node %d has one child (%d, %d); a node has two or none", i, left[i],
          right[i]);
      break;
    }
    if (split[i] < 0 || split[i] >= nfeat) {
      s = lm_json_error(
          r, cJSON_GetArrayItem(lm_json_get(t, "split_indices"), i), NULL,
          "node %d splits on feature %d, but the model has %d", i, split[i],
          nfeat);
      break;
    }
    if ((s = check_child(r, t, "left_children", i, left[i], (int)n, parents,
                         seen)))
      break;
    seen[left[i]] = 1;
    if ((s = check_child(r, t, "right_children", i, right[i], (int)n, parents,
                         seen)))
      break;
    seen[right[i]] = 1;
    stack[top++] = left[i];
    stack[top++] = right[i];
  }
  free(stack);
done:
  free(left);
  free(seen);
  return s;
}

/* XGBoost's JSON model x: a gbtree of `rounds` single-output trees with the
 * squared-error objective over nfeat features, each tree checked.  What
 * XGBoost checks itself (array lengths of the other node fields, types,
 * numbers) is left to it. */
static lm_status check_xgb(rd *r, const cJSON *x, int nfeat, int rounds) {
  const cJSON *learner = NULL, *mp = NULL, *obj = NULL, *gb = NULL,
              *model = NULL, *gp = NULL, *info = NULL, *trees = NULL, *c;
  const char *name = NULL;
  long v = 0;
  lm_status s;
  if (!cJSON_IsObject(x))
    return lm_json_expected(r, x, NULL, "XGBoost's model (an object)");
  if ((s = lm_json_object(r, x, "learner", 0, &learner)) ||
      (s = lm_json_object(r, learner, "learner_model_param", 0, &mp)) ||
      (s = xint(r, mp, "num_feature", 1, INT32_MAX, &v)) ||
      (v != nfeat &&
       (s = lm_json_error(
            r, mp, "num_feature",
            "XGBoost's model has %ld features, but $.features names %d", v,
            nfeat))) ||
      (s = xint(r, mp, "num_class", 0, 0, &v)) ||
      (lm_json_get(mp, "num_target") &&
       (s = xint(r, mp, "num_target", 1, 1, &v))) ||
      (s = lm_json_object(r, learner, "objective", 0, &obj)) ||
      (s = lm_json_string(r, obj, "name", 0, 0, &name)))
    return s;
  if (strcmp(name, OBJECTIVE) != 0)
    return lm_json_expected(r, obj, "name", "\"" OBJECTIVE "\"");
  if ((s = lm_json_object(r, learner, "gradient_booster", 0, &gb)) ||
      (s = lm_json_string(r, gb, "name", 0, 0, &name)))
    return s;
  if (strcmp(name, "gbtree") != 0)
    return lm_json_expected(r, gb, "name", "\"gbtree\"");
  if ((s = lm_json_object(r, gb, "model", 0, &model)) ||
      (s = lm_json_object(r, model, "gbtree_model_param", 0, &gp)) ||
      (s = xint(r, gp, "num_trees", 0, INT32_MAX, &v)) ||
      (v != rounds &&
       (s = lm_json_error(r, gp, "num_trees",
                          "%ld trees, but $.options.rounds is %d", v,
                          rounds))) ||
      (s = xint(r, gp, "num_parallel_tree", 1, 1, &v)) ||
      (s = lm_json_array(r, model, "tree_info", 0, rounds, rounds, &info)) ||
      (s = lm_json_array(r, model, "trees", 0, rounds, rounds, &trees)))
    return s;
  cJSON_ArrayForEach(c, info) {
    int64_t g = 0;
    if ((s = lm_json_int(r, c, NULL, 0, 0, 0, &g)))
      return s;
  }
  int id = 0;
  cJSON_ArrayForEach(c, trees) {
    if ((s = check_tree(r, c, id++, nfeat)))
      return s;
  }
  return LM_OK;
}

/* Parse and check XGBoost's model text[0..n) (named `where` in messages). */
static lm_status check_xgb_text(const char *where, const char *text, size_t n,
                                int nfeat, int rounds, lm_error *err) {
  cJSON *x = NULL;
  lm_status s = lm_json_parse(where, text, n, &x, err);
  if (s == LM_OK) {
    rd r = {where, x, err};
    s = check_xgb(&r, x, nfeat, rounds);
  }
  cJSON_Delete(x);
  return s;
}

/* ---- files --------------------------------------------------------------- */

/* A booster to load a model into, configured with nthread 1.  XGBoost
 * sizes its loops by OpenMP's default thread count (every core) until a
 * booster is configured, and loading a model does not configure it: the
 * load would start a thread pool.  So it is configured first, on one row
 * of nfeat missing values (XGBoosterSaveJsonConfig configures the booster
 * before it writes the configuration); the load keeps that configuration
 * and replaces the model. */
static lm_status configured_booster(int nfeat, BoosterHandle *out,
                                    lm_error *err) {
  *out = NULL;
  float *row = malloc((size_t)nfeat * sizeof *row);
  if (!row)
    return oom(err);
  for (int k = 0; k < nfeat; k++)
    row[k] = NAN;
  DMatrixHandle d = NULL;
  lm_status s = dmatrix(row, 1, nfeat, &d, err);
  free(row);
  if (s != LM_OK)
    return s;
  bst_ulong len = 0;
  const char *config = NULL;
  if (XGBoosterCreate(&d, 1, out) != 0) {
    *out = NULL;
    s = xgb_fail(err, LM_EFAIL, "creating the booster");
  } else if ((s = set_common(*out, err)) == LM_OK &&
             XGBoosterSaveJsonConfig(*out, &len, &config) != 0)
    s = xgb_fail(err, LM_EFAIL, "configuring the booster");
  XGDMatrixFree(d);
  if (s != LM_OK && *out) {
    XGBoosterFree(*out);
    *out = NULL;
  }
  return s;
}

lm_status lm_learned_save(const lm_learned *l, const char *path,
                          lm_error *err) {
  bst_ulong len = 0;
  const char *buf = NULL;
  if (XGBoosterSaveModelToBuffer(l->bst, XGB_JSON, &len, &buf) != 0)
    return xgb_fail(err, LM_EFAIL, "saving the model");
  /* a copy: buf lives until the booster's next call */
  char *xgb = malloc((size_t)len + 1);
  if (!xgb)
    return oom(err);
  memcpy(xgb, buf, (size_t)len);
  xgb[len] = 0;
  lm_status s = check_xgb_text("XGBoost's model", xgb, (size_t)len, l->nfeat,
                               l->opts.rounds, err);
  if (s != LM_OK) {
    lm_error inner = *err;
    free(xgb);
    return lm_error_set(
        err, LM_EFAIL,
        "learned: %s: XGBoost wrote a model that would not load: %s", path,
        inner.msg);
  }
  cJSON *root = cJSON_CreateObject(), *o = cJSON_CreateObject(),
        *names = cJSON_CreateArray();
  int ok = root && o && names;
  if (ok) {
    cJSON_AddItemToObject(root, "schema",
                          cJSON_CreateString(LM_LEARNED_SCHEMA));
    cJSON_AddItemToObject(o, "rounds", cJSON_CreateNumber(l->opts.rounds));
    cJSON_AddItemToObject(o, "max_depth",
                          cJSON_CreateNumber(l->opts.max_depth));
    cJSON_AddItemToObject(o, "eta", cJSON_CreateNumber(l->opts.eta));
    cJSON_AddItemToObject(o, "subsample",
                          cJSON_CreateNumber(l->opts.subsample));
    cJSON_AddItemToObject(o, "min_child_weight",
                          cJSON_CreateNumber(l->opts.min_child_weight));
    cJSON_AddItemToObject(o, "lambda", cJSON_CreateNumber(l->opts.lambda));
    cJSON_AddItemToObject(o, "seed", cJSON_CreateNumber(l->opts.seed));
    cJSON_AddItemToObject(root, "options", o);
    o = NULL;
    for (int i = 0; i < l->nfeat; i++)
      cJSON_AddItemToArray(names, cJSON_CreateString(l->names[i]));
    cJSON_AddItemToObject(root, "features", names);
    names = NULL;
    cJSON_AddItemToObject(root, "rows", cJSON_CreateNumber(l->rows));
    cJSON_AddItemToObject(root, "xgboost", cJSON_CreateString(xgb));
    /* every member there: cJSON drops an item it could not make */
    ok = cJSON_GetArraySize(root) == 5 &&
         cJSON_GetArraySize(lm_json_get(root, "options")) == 7 &&
         cJSON_GetArraySize(lm_json_get(root, "features")) == l->nfeat;
  }
  free(xgb);
  cJSON_Delete(o);
  cJSON_Delete(names);
  if (!ok)
    s = oom(err);
  else if ((s = lm_json_exact(root, err)) == LM_OK)
    s = lm_json_save(path, root, err);
  cJSON_Delete(root);
  return s;
}

static const char *const top_fields[] = {"schema", "options", "features",
                                         "rows",   "xgboost", NULL};
static const char *const opt_fields[] = {
    "rounds", "max_depth",        "eta",    "subsample",
    "seed",   "min_child_weight", "lambda", NULL};

/* "lanemap.learned/MAJOR[.MINOR]" of this major; a later minor may add
 * fields, which are then not refused. */
static lm_status check_schema(rd *r, const cJSON *root, int *strict) {
  static const char prefix[] = "lanemap.learned/";
  const char *v = NULL;
  lm_status s = lm_json_string(r, root, "schema", 0, 0, &v);
  if (s != LM_OK)
    return s;
  long major = -1, minor = 0;
  char *end = NULL;
  if (strncmp(v, prefix, sizeof prefix - 1) == 0 &&
      v[sizeof prefix - 1] >= '0' && v[sizeof prefix - 1] <= '9') {
    errno = 0;
    major = strtol(v + sizeof prefix - 1, &end, 10);
    if (*end == '.' && end[1] >= '0' && end[1] <= '9')
      minor = strtol(end + 1, &end, 10);
    if (*end || errno)
      major = -1;
  }
  if (major < 0)
    return lm_json_expected(r, root, "schema", "\"" LM_LEARNED_SCHEMA "\"");
  if (major != LM_LEARNED_SCHEMA_MAJOR)
    return lm_json_error(
        r, root, "schema",
        "\"%.80s\" is not readable by this build (it reads " LM_LEARNED_SCHEMA
        ")",
        v);
  *strict = minor == 0;
  return LM_OK;
}

static lm_status read_options(rd *r, const cJSON *root, int strict,
                              lm_learned_opts *o) {
  const cJSON *j = NULL;
  int64_t rounds = 0, depth = 0, seed = 0;
  lm_status s;
  if ((s = lm_json_object(r, root, "options", 0, &j)) ||
      (strict && (s = lm_json_fields(r, j, opt_fields))) ||
      (s = lm_json_int(r, j, "rounds", 0, 1, INT32_MAX, &rounds)) ||
      (s = lm_json_int(r, j, "max_depth", 0, 1, INT32_MAX, &depth)) ||
      (s = lm_json_number(r, j, "eta", 0, -DBL_MAX, DBL_MAX, &o->eta)) ||
      (s = lm_json_number(r, j, "subsample", 0, -DBL_MAX, DBL_MAX,
                          &o->subsample)) ||
      (s = lm_json_number(r, j, "min_child_weight", 0, -DBL_MAX, DBL_MAX,
                          &o->min_child_weight)) ||
      (s = lm_json_number(r, j, "lambda", 0, -DBL_MAX, DBL_MAX, &o->lambda)) ||
      (s = lm_json_int(r, j, "seed", 0, 0, UINT32_MAX, &seed)))
    return s;
  o->rounds = (int)rounds;
  o->max_depth = (int)depth;
  o->seed = (unsigned)seed;
  if (lm_learned_opts_check(o, r->err) != LM_OK) {
    lm_error inner = *r->err;
    return lm_json_error(r, j, NULL, "%s", inner.msg);
  }
  return LM_OK;
}

/* The feature names: nfeat distinct non-empty strings, into l. */
static lm_status read_features(rd *r, const cJSON *root, lm_learned **out) {
  const cJSON *fs = NULL, *c;
  lm_status s = lm_json_array(r, root, "features", 0, 1, INT32_MAX, &fs);
  if (s != LM_OK)
    return s;
  int n = cJSON_GetArraySize(fs), i = 0;
  const char **names = calloc((size_t)n, sizeof *names);
  if (!names)
    return oom(r->err);
  cJSON_ArrayForEach(c, fs) {
    if ((s = lm_json_string(r, c, NULL, 0, 0, &names[i++])))
      break;
  }
  if (s == LM_OK && check_names(names, n, r->err) != LM_OK) {
    lm_error inner = *r->err;
    s = lm_json_error(r, root, "features", "%s", inner.msg);
  }
  if (s == LM_OK && !(*out = learned_new(n, names)))
    s = oom(r->err);
  free(names);
  return s;
}

lm_status lm_learned_load(const char *path, lm_learned **out, lm_error *err) {
  *out = NULL;
  cJSON *root = NULL;
  lm_learned *l = NULL;
  char *where = NULL;
  lm_status s = lm_json_load(path, &root, err);
  if (s != LM_OK)
    return s;
  rd r = {path, root, err};
  const char *xgb = NULL;
  int strict = 1;
  int64_t rows = 0;
  lm_learned_opts o;
  if (!cJSON_IsObject(root)) {
    s = lm_json_expected(&r, root, NULL, "a lanemap.learned object");
    goto error;
  }
  if ((s = check_schema(&r, root, &strict)) ||
      (strict && (s = lm_json_fields(&r, root, top_fields))) ||
      (s = read_options(&r, root, strict, &o)) ||
      (s = read_features(&r, root, &l)) ||
      (s = lm_json_int(&r, root, "rows", 0, 1, INT32_MAX, &rows)) ||
      (s = lm_json_string(&r, root, "xgboost", 0, 0, &xgb)))
    goto error;
  l->opts = o;
  l->rows = (int)rows;
  /* its messages name the string's JSON path, then a path inside it */
  static const char inside[] = ": $.xgboost (XGBoost's model)";
  size_t wn = strlen(path) + sizeof inside;
  if (!(where = malloc(wn))) {
    s = oom(err);
    goto error;
  }
  snprintf(where, wn, "%s%s", path, inside);
  if ((s = check_xgb_text(where, xgb, strlen(xgb), l->nfeat, o.rounds, err)))
    goto error;
  if ((s = configured_booster(l->nfeat, &l->bst, err)))
    goto error;
  if (XGBoosterLoadModelFromBuffer(l->bst, xgb, (bst_ulong)strlen(xgb)) != 0) {
    char m[XGB_MSG_MAX];
    xgb_message(m, sizeof m);
    s = lm_error_set(err, LM_EINPUT, "%s: XGBoost cannot load it: %s", where,
                     m);
    goto error;
  }
  /* the parameters again, should a load drop them */
  bst_ulong nf = 0;
  if ((s = set_common(l->bst, err)))
    goto error;
  if (XGBoosterGetNumFeature(l->bst, &nf) != 0) {
    s = xgb_fail(err, LM_EFAIL, "reading the number of features");
    goto error;
  }
  if (nf != (bst_ulong)l->nfeat) {
    s = lm_error_set(err, LM_EINPUT,
                     "%s: XGBoost reads %d features, but $.features names %d",
                     where, (int)nf, l->nfeat);
    goto error;
  }
  free(where);
  cJSON_Delete(root);
  *out = l;
  return LM_OK;
error:
  free(where);
  lm_learned_free(l);
  cJSON_Delete(root);
  return s;
}
