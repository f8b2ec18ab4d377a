/* Suite files: the list of (kernel, shape) cases that `lanemap oracle
 * --suite` and `lanemap evaluate` run.  Paths inside a suite are relative to
 * the suite file's folder, so a suite and its kernels move together.  A
 * malformed suite names the offending field, e.g. `cases[3].shape`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"

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
                            const cJSON *c, cli_case *out, lm_error *err) {
  if (!cJSON_IsObject(c))
    return lm_error_set(err, LM_EINPUT, "%s: cases[%d]: expected an object",
                        path, i);
  const cJSON *id = cJSON_GetObjectItemCaseSensitive(c, "id");
  const cJSON *kernel = cJSON_GetObjectItemCaseSensitive(c, "kernel");
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(c, "shape");
  const cJSON *extra = cJSON_GetObjectItemCaseSensitive(c, "extra");
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
  out->id = id->valuestring;
  out->extra = extra ? extra->valuestring : NULL;
  out->kernel = path_join(dir, kernel->valuestring);
  if (!out->kernel)
    return lm_error_set(err, LM_ESYS, "%s: out of memory", path);
  return LM_OK;
}

lm_status cli_suite_load(const char *path, cli_suite *out, lm_error *err) {
  memset(out, 0, sizeof *out);
  char *text = NULL;
  size_t len = 0;
  lm_status st = lm_file_read(path, &text, &len, err);
  if (st != LM_OK)
    return st;
  out->json = cJSON_ParseWithLength(text, len);
  free(text);
  if (!out->json) {
    st = lm_error_set(err, LM_EINPUT, "%s: not valid JSON", path);
    goto error;
  }
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(out->json, "schema");
  if (!cJSON_IsString(schema) ||
      strcmp(schema->valuestring, "lanemap.suite/1") != 0) {
    st = lm_error_set(err, LM_EINPUT,
                      "%s: schema: expected \"lanemap.suite/1\"", path);
    goto error;
  }
  const cJSON *cases = cJSON_GetObjectItemCaseSensitive(out->json, "cases");
  if (!cJSON_IsArray(cases) || cJSON_GetArraySize(cases) == 0) {
    st = lm_error_set(err, LM_EINPUT, "%s: cases: expected a non-empty array",
                      path);
    goto error;
  }
  out->dir = path_dir(path);
  int n = cJSON_GetArraySize(cases);
  out->cases = calloc((size_t)n, sizeof *out->cases);
  if (!out->dir || !out->cases) {
    st = lm_error_set(err, LM_ESYS, "%s: out of memory", path);
    goto error;
  }
  for (int i = 0; i < n; i++) {
    st = case_parse(path, out->dir, i, cJSON_GetArrayItem(cases, i),
                    &out->cases[i], err);
    out->ncases = i + 1; /* so cli_suite_free frees the paths made so far */
    if (st != LM_OK)
      goto error;
    for (int j = 0; j < i; j++)
      if (strcmp(out->cases[j].id, out->cases[i].id) == 0) {
        st = lm_error_set(err, LM_EINPUT, "%s: cases[%d].id: duplicate id '%s'",
                          path, i, out->cases[i].id);
        goto error;
      }
  }
  return LM_OK;
error:
  cli_suite_free(out);
  return st;
}

void cli_suite_free(cli_suite *s) {
  for (int i = 0; i < s->ncases; i++)
    free(s->cases[i].kernel);
  free(s->cases);
  free(s->dir);
  cJSON_Delete(s->json);
  memset(s, 0, sizeof *s);
}
