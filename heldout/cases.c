/* Case lists: the (kernel, shape) cases that `lanemap oracle --suite` and
 * `lanemap evaluate` run, in either schema (include/lanemap/cases.h).
 * Paths inside a list are relative to the list file's folder.  A malformed
 * list names the offending field by its JSON path, e.g. `$.cases[3].shape`;
 * fields the format does not define are errors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/cases.h"
#include "lanemap/json.h"
#include "lanemap/variant.h"

/* The list's JSON owns the strings; the kernel paths are made here. */
typedef struct Owner {
  cJSON *json;
  char **paths;       /* [n] resolved kernel paths */
  const char ***time; /* [n] each case's "time" list, or NULL */
  int n;
} Owner;

static char *path_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    return strdup(".");
  if (slash == path)
    return strdup("/");
  return strndup(path, (size_t)(slash - path));
}

static char *path_join(const char *dir, const char *rel) {
  if (rel[0] == '/')
    return strdup(rel);
  size_t n = strlen(dir) + strlen(rel) + 2;
  char *p = malloc(n);
  if (p)
    snprintf(p, n, "%s/%s", dir, rel);
  return p;
}

static const char *const top_fields[] = {"schema", "about", "cases", NULL};
static const char *const case_fields[] = {"id",    "kernel", "shape", "extra",
                                          "split", "time",   NULL};

/* "time": variant strings, each one that lm_variant_parse reads; the
 * array of pointers into the tree is kept in *out. */
static lm_status case_time(lm_json_rd *r, const cJSON *c, lm_case *out,
                           const char ***keep) {
  const cJSON *arr = NULL, *e;
  lm_status st = lm_json_array(r, c, "time", LM_JSON_OPTIONAL, 0, 4096, &arr);
  if (st != LM_OK || !arr)
    return st;
  int n = cJSON_GetArraySize(arr), i = 0;
  if (n == 0)
    return LM_OK;
  if (!(*keep = calloc((size_t)n, sizeof **keep)))
    return lm_error_set(r->err, LM_ESYS, "%s: out of memory", r->file);
  cJSON_ArrayForEach(e, arr) {
    lm_variant v;
    lm_error verr = {0};
    if ((st = lm_json_string(r, e, NULL, 0, 127, &(*keep)[i])) != LM_OK)
      return st;
    if (lm_variant_parse((*keep)[i], &v, &verr) != LM_OK)
      return lm_json_error(r, e, NULL, "%s", verr.msg);
    i++;
  }
  out->time = *keep, out->ntime = n;
  return LM_OK;
}

static lm_status case_parse(lm_json_rd *r, const char *dir, const cJSON *c,
                            lm_case *out, char **kpath, const char ***time) {
  const char *kernel = NULL;
  const cJSON *shape = NULL;
  lm_status st;
  if ((st = lm_json_object(r, c, NULL, 0, &c)) ||
      (st = lm_json_fields(r, c, case_fields)) ||
      (st = lm_json_string(r, c, "id", 0, 0, &out->id)) ||
      (st = lm_json_string(r, c, "kernel", 0, 0, &kernel)))
    return st;
  shape = lm_json_get(c, "shape");
  if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != 2)
    return lm_json_expected(r, c, "shape", "[R, C], two positive integers");
  if ((st = lm_json_int(r, shape->child, NULL, 0, 1, INT64_C(1) << 53,
                        &out->R)) ||
      (st = lm_json_int(r, shape->child->next, NULL, 0, 1, INT64_C(1) << 53,
                        &out->C)) ||
      (st = lm_json_string(r, c, "extra", LM_JSON_OPTIONAL, 0, &out->extra)) ||
      (st = lm_json_string(r, c, "split", LM_JSON_OPTIONAL, 0, &out->split)) ||
      (st = case_time(r, c, out, time)))
    return st;
  if (out->split && strcmp(out->split, "operator") != 0 &&
      strcmp(out->split, "shape") != 0)
    return lm_json_expected(r, c, "split", "\"operator\" or \"shape\"");
  *kpath = path_join(dir, kernel);
  if (!*kpath)
    return lm_error_set(r->err, LM_ESYS, "%s: out of memory", r->file);
  out->kernel = *kpath;
  return LM_OK;
}

static lm_status check_schema(lm_json_rd *r, const cJSON *json) {
  const cJSON *schema = lm_json_get(json, "schema");
  if (cJSON_IsString(schema) &&
      (strcmp(schema->valuestring, "lanemap.suite/1") == 0 ||
       strcmp(schema->valuestring, "lanemap.cases/1") == 0))
    return LM_OK;
  return lm_json_expected(r, json, "schema",
                          "\"lanemap.suite/1\" or \"lanemap.cases/1\"");
}

lm_status lm_cases_load(const char *path, lm_cases *out, lm_error *err) {
  memset(out, 0, sizeof *out);
  char *text = NULL, *dir = path_dir(path);
  size_t n = 0;
  lm_status st = dir ? lm_json_read_file(path, &text, &n, err)
                     : lm_error_set(err, LM_ESYS, "%s: out of memory", path);
  if (st == LM_OK)
    st = lm_cases_from_json_text(path, dir, text, n, out, err);
  free(text);
  free(dir);
  return st;
}

lm_status lm_cases_from_json_text(const char *path, const char *dir,
                                  const char *text, size_t textn, lm_cases *out,
                                  lm_error *err) {
  memset(out, 0, sizeof *out);
  Owner *own = calloc(1, sizeof *own);
  if (!own)
    return lm_error_set(err, LM_ESYS, "%s: out of memory", path);
  out->owner = own;
  const cJSON *cases = NULL, *c;
  lm_strset *ids = NULL;
  lm_status st = lm_json_parse(path, text, textn, &own->json, err);
  if (st != LM_OK)
    goto error;
  lm_json_rd r = {path, own->json, err};
  if (!cJSON_IsObject(own->json)) {
    st = lm_json_expected(&r, own->json, NULL, "a JSON object");
    goto error;
  }
  if ((st = check_schema(&r, own->json)) ||
      (st = lm_json_fields(&r, own->json, top_fields)) ||
      (st = lm_json_array(&r, own->json, "cases", 0, 1, INT32_MAX, &cases)))
    goto error;
  out->dir = strdup(dir);
  int n = cJSON_GetArraySize(cases);
  out->c = calloc((size_t)n, sizeof *out->c);
  own->paths = calloc((size_t)n, sizeof *own->paths);
  own->time = calloc((size_t)n, sizeof *own->time);
  if (!out->dir || !out->c || !own->paths || !own->time) {
    st = lm_error_set(err, LM_ESYS, "%s: out of memory", path);
    goto error;
  }
  own->n = n;
  if (!(ids = lm_strset_new())) {
    st = lm_error_set(err, LM_ESYS, "%s: out of memory", path);
    goto error;
  }
  int i = 0;
  cJSON_ArrayForEach(c, cases) {
    st = case_parse(&r, out->dir, c, &out->c[i], &own->paths[i],
                    &own->time[i]);
    if (st != LM_OK)
      goto error;
    out->n = i + 1;
    int64_t j;
    if (lm_strset_add_str(ids, out->c[i].id, i, &j) != LM_OK) {
      st = lm_error_set(err, LM_ESYS, "%s: out of memory", path);
      goto error;
    }
    if (j >= 0) {
      st = lm_json_error(&r, c, "id", "\"%.80s\" is also the id of cases[%d]",
                         out->c[i].id, (int)j);
      goto error;
    }
    i++;
  }
  lm_strset_free(ids);
  return LM_OK;
error:
  lm_strset_free(ids);
  lm_cases_free(out);
  return st;
}

lm_status lm_cases_shard(lm_cases *cs, int i, int n, lm_error *err) {
  if (n < 1 || i < 0 || i >= n)
    return lm_error_set(err, LM_EINPUT,
                        "shard %d/%d: expected 0 <= i < n (i/N, N >= 1)", i, n);
  int lo = (int)((int64_t)cs->n * i / n),
      hi = (int)((int64_t)cs->n * (i + 1) / n);
  memmove(cs->c, cs->c + lo, (size_t)(hi - lo) * sizeof *cs->c);
  cs->n = hi - lo;
  return LM_OK;
}

void lm_cases_free(lm_cases *cs) {
  Owner *own = cs->owner;
  if (own) {
    for (int i = 0; i < own->n; i++) {
      free(own->paths[i]);
      free(own->time ? own->time[i] : NULL);
    }
    free(own->paths);
    free(own->time);
    cJSON_Delete(own->json);
    free(own);
  }
  free(cs->c);
  free(cs->dir);
  memset(cs, 0, sizeof *cs);
}
