/* Case lists: the (kernel, shape) cases that `lanemap oracle --suite` and
 * `lanemap evaluate` run, in either schema (include/lanemap/cases.h).
 * Paths inside a list are relative to the list file's folder.  A malformed
 * list names the offending field, e.g. `cases[3].shape`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lanemap/cases.h"

/* The list's JSON owns the strings; the kernel paths are made here. */
typedef struct Owner {
  cJSON *json;
  char **paths; /* [n] resolved kernel paths */
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

/* A JSON number that is an integer in [1, 2^53]. */
static int json_positive_int(const cJSON *v, int64_t *out) {
  if (!cJSON_IsNumber(v))
    return 0;
  double d = v->valuedouble;
  if (!(d >= 1 && d <= 9007199254740992.0) || floor(d) != d)
    return 0;
  *out = (int64_t)d;
  return 1;
}

static lm_status case_parse(const char *path, const char *dir, int i,
                            const cJSON *c, lm_case *out, char **kpath,
                            lm_error *err) {
  if (!cJSON_IsObject(c))
    return lm_error_set(err, LM_EINPUT, "%s: cases[%d]: expected an object",
                        path, i);
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
  const cJSON *kernel = cJSON_GetObjectItemCaseSensitive(c, "kernel");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(c, "shape");
  const cJSON *extra = cJSON_GetObjectItemCaseSensitive(c, "extra");
  const cJSON *split = cJSON_GetObjectItemCaseSensitive(c, "split");
  if (!cJSON_IsString(id) || id->valuestring[0] == 0)
    return lm_error_set(err, LM_EINPUT,
                        "%s: cases[%d].id: expected a non-empty string", path,
                        i);
  if (!cJSON_IsString(kernel) || kernel->valuestring[0] == 0)
    return lm_error_set(err, LM_EINPUT,
                        "%s: cases[%d].kernel: expected a file name", path, i);
  if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != 2 ||
      !json_positive_int(cJSON_GetArrayItem(shape, 0), &out->R) ||
      !json_positive_int(cJSON_GetArrayItem(shape, 1), &out->C))
    return lm_error_set(err, LM_EINPUT,
                        "%s: cases[%d].shape: expected [R, C], two positive "
                        "integers",
                        path, i);
  if (extra && !cJSON_IsString(extra))
    return lm_error_set(err, LM_EINPUT,
                        "%s: cases[%d].extra: expected a string like \"H=33\"",
                        path, i);
  if (split && (!cJSON_IsString(split) ||
                (strcmp(split->valuestring, "operator") != 0 &&
                 strcmp(split->valuestring, "shape") != 0)))
    return lm_error_set(err, LM_EINPUT,
                        "%s: cases[%d].split: expected \"operator\" or "
                        "\"shape\"",
                        path, i);
  out->id = id->valuestring;
  out->extra = extra ? extra->valuestring : NULL;
  out->split = split ? split->valuestring : NULL;
  *kpath = path_join(dir, kernel->valuestring);
  if (!*kpath)
    return lm_error_set(err, LM_ESYS, "%s: out of memory", path);
  out->kernel = *kpath;
  return LM_OK;
}

static lm_status check_schema(const char *path, const cJSON *json,
                              lm_error *err) {
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(json, "schema");
  if (cJSON_IsString(schema) &&
      (strcmp(schema->valuestring, "lanemap.suite/1") == 0 ||
       strcmp(schema->valuestring, "lanemap.cases/1") == 0))
    return LM_OK;
  return lm_error_set(err, LM_EINPUT,
                      "%s: schema: expected \"lanemap.suite/1\" or "
                      "\"lanemap.cases/1\"",
                      path);
}

lm_status lm_cases_load(const char *path, lm_cases *out, lm_error *err) {
  memset(out, 0, sizeof *out);
  Owner *own = calloc(1, sizeof *own);
  if (!own)
    return lm_error_set(err, LM_ESYS, "%s: out of memory", path);
  out->owner = own;
  char *text = NULL;
  size_t len = 0;
  lm_status st = lm_file_read(path, &text, &len, err);
  if (st != LM_OK)
    goto error;
  own->json = cJSON_ParseWithLength(text, len);
  free(text);
  if (!own->json) {
    st = lm_error_set(err, LM_EINPUT, "%s: not valid JSON", path);
    goto error;
  }
  if ((st = check_schema(path, own->json, err)) != LM_OK)
    goto error;
  const cJSON *cases = cJSON_GetObjectItemCaseSensitive(own->json, "cases");
  if (!cJSON_IsArray(cases) || cJSON_GetArraySize(cases) == 0) {
    st = lm_error_set(err, LM_EINPUT, "%s: cases: expected a non-empty array",
                      path);
    goto error;
  }
  out->dir = path_dir(path);
  int n = cJSON_GetArraySize(cases);
  out->c = calloc((size_t)n, sizeof *out->c);
  own->paths = calloc((size_t)n, sizeof *own->paths);
  if (!out->dir || !out->c || !own->paths) {
    st = lm_error_set(err, LM_ESYS, "%s: out of memory", path);
    goto error;
  }
  own->n = n;
  for (int i = 0; i < n; i++) {
    st = case_parse(path, out->dir, i, cJSON_GetArrayItem(cases, i),
                    &out->c[i], &own->paths[i], err);
    if (st != LM_OK)
      goto error;
    out->n = i + 1;
    for (int j = 0; j < i; j++)
      if (strcmp(out->c[j].id, out->c[i].id) == 0) {
        st = lm_error_set(err, LM_EINPUT, "%s: cases[%d].id: duplicate id '%s'",
                          path, i, out->c[i].id);
        goto error;
      }
  }
  return LM_OK;
error:
  lm_cases_free(out);
  return st;
}

lm_status lm_cases_shard(lm_cases *cs, int i, int n, lm_error *err) {
  if (n < 1 || i < 0 || i >= n)
    return lm_error_set(err, LM_EINPUT,
                        "shard %d/%d: expected 0 <= i < n (i/N, N >= 1)", i, n);
  int lo = (int)((int64_t)cs->n * i / n), hi = (int)((int64_t)cs->n * (i + 1) / n);
  memmove(cs->c, cs->c + lo, (size_t)(hi - lo) * sizeof *cs->c);
  cs->n = hi - lo;
  return LM_OK;
}

void lm_cases_free(lm_cases *cs) {
  Owner *own = cs->owner;
  if (own) {
    for (int i = 0; i < own->n; i++)
      free(own->paths[i]);
    free(own->paths);
    cJSON_Delete(own->json);
    free(own);
  }
  free(cs->c);
  free(cs->dir);
  memset(cs, 0, sizeof *cs);
}
