/* lanemap records: bring measurements taken by other tools into lanemap's
 * records (schema lanemap.record/1, include/lanemap/records.h), and keep
 * the best record per (kernel, shape).
 *
 *   lanemap records import FILE... -o OUT.jsonl [--kernel K.lk]
 *                                  [--shape R,C] [--variant V]
 *   lanemap records best IN.jsonl -o OUT.jsonl
 *
 * import reads two formats, told apart by their content:
 *
 *   - hyperfine `--export-json` files: one JSON object with `results[]`,
 *     each with `command`, `mean`, `stddev`, `median`, `min`, `max`,
 *     `times` (seconds per run of the command).  A result maps onto a
 *     kernel, shape and variant through its command line: the words are
 *     split on blanks, and the first word after a `bench` or `run` word
 *     that is not an option is the kernel file; `--shape R,C` (or
 *     `--shape=R,C`) and `--variant V` give the shape and the one variant.
 *     Whatever the command does not name comes from import's own
 *     --kernel, --shape and --variant, so `hyperfine './mybin 8 512'` maps
 *     with all three given.  The times are hyperfine's, per run of the
 *     whole command (process start included), copied as they are.
 *   - TVM-style JSON Lines tuning logs: one object per line with `input`
 *     [target, task, args, ...], `config` and `result` [costs, error_no,
 *     all_cost, timestamp].  The task maps when it is the name of a kernel
 *     given with --kernel, or a path to a .lk file; args [R, C] give the
 *     shape (else --shape); the variant is `config.variant`, or the entity
 *     ["variant", "ot", V] of config.entity (TVM's other-option knob), or
 *     --variant.  costs are seconds per call.  A line with error_no != 0
 *     is a failed measurement and is skipped (and counted).
 *
 * Every mapped record is checked as lanemap would run it: the kernel loads
 * and checks, the shape binds, the variant parses and is legal for the
 * kernel.  If any entry cannot be mapped, import names the file, the entry
 * and why, writes nothing and exits 2.  Otherwise the new records are added
 * after OUT's existing ones and OUT is rewritten atomically.
 *
 * best keeps, per (kernel hash, shape), the record with the least median
 * among those not failing verification (lm_records_best), in the order of
 * first appearance, and writes OUT atomically. */
#define _GNU_SOURCE
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lanemap/json.h"
#include "lanemap/records.h"

static const char usage[] =
    "usage: lanemap records import FILE... -o OUT.jsonl [--kernel K.lk]\n"
    "                              [--shape R,C] [--variant V]\n"
    "       lanemap records best IN.jsonl -o OUT.jsonl\n"
    "  import: read hyperfine --export-json files and TVM-style JSON Lines\n"
    "  tuning logs, map each entry onto a kernel, shape and variant, and add\n"
    "  them to OUT as lanemap.record/1 lines.  A hyperfine command maps by\n"
    "  its words `bench|run KERNEL ... --shape R,C ... --variant V`; a TVM\n"
    "  line by its task (a --kernel's name or a .lk path), args [R, C] and\n"
    "  config.variant.  --kernel, --shape, --variant fill what an entry does\n"
    "  not name.  An entry that cannot be mapped is an error; nothing is\n"
    "  written then.\n"
    "  best: keep the best record (least median, not failing verification)\n"
    "  per (kernel, shape), like TVM's pick-best.\n"
    "  -o, --out F  output records file (written atomically)\n"
    "exit codes: 0 ok, 2 bad input or an entry that cannot be mapped,\n"
    "  3 cannot write\n";

/* Kernels loaded so far, by the path they were named with.  Nothing
 * parsed here has a limit of its own: lists grow, and strings are as long
 * as the input's. */
typedef struct kernel_cache {
  char **path;
  lm_kernel **k;
  int n, cap;
} kernel_cache;

typedef struct import_opts {
  const char *out;
  const char *kernel;  /* --kernel: default kernel file */
  const char *shape;   /* --shape: default "R,C" */
  const char *variant; /* --variant: default variant string */
} import_opts;

static void cache_free(kernel_cache *kc) {
  for (int i = 0; i < kc->n; i++) {
    free(kc->path[i]);
    lm_kernel_free(kc->k[i]);
  }
  free(kc->path);
  free(kc->k);
  memset(kc, 0, sizeof *kc);
}

/* The kernel at path, loaded once; NULL with err set on failure. */
static const lm_kernel *cache_get(kernel_cache *kc, const char *path,
                                  lm_error *err) {
  for (int i = 0; i < kc->n; i++)
    if (strcmp(kc->path[i], path) == 0)
      return kc->k[i];
  if (kc->n == kc->cap) {
    int c = kc->cap ? 2 * kc->cap : 8;
    char **p = realloc(kc->path, sizeof *p * (size_t)c);
    if (p)
      kc->path = p;
    lm_kernel **ks = p ? realloc(kc->k, sizeof *ks * (size_t)c) : NULL;
    if (!ks) {
      lm_error_set(err, LM_ESYS, "out of memory");
      return NULL;
    }
    kc->k = ks;
    kc->cap = c;
  }
  lm_kernel *k = NULL;
  if (lm_kernel_load(path, &k, err) != LM_OK)
    return NULL;
  if (!(kc->path[kc->n] = strdup(path))) {
    lm_kernel_free(k);
    lm_error_set(err, LM_ESYS, "out of memory");
    return NULL;
  }
  kc->k[kc->n++] = k;
  return k;
}

/* The file a command or task names, tried as given, then relative to the
 * folder of the file that names it: malloc'ed, NULL when out of memory. */
static char *resolve(const char *name, const char *from) {
  FILE *f = fopen(name, "r");
  const char *slash = strrchr(from, '/');
  if (f || name[0] == '/' || !slash) {
    if (f)
      fclose(f);
    return strdup(name);
  }
  char *p = NULL;
  return asprintf(&p, "%.*s/%s", (int)(slash - from), from, name) < 0 ? NULL
                                                                      : p;
}

/* Fill r's kernel, hash, shape, variant and isa from a kernel file, a
 * shape text and a variant text, each checked; `where` prefixes errors. */
static lm_status map_entry(kernel_cache *kc, const char *where,
                           const char *kpath, const char *shape,
                           const char *variant, lm_record *r, lm_error *err) {
  lm_error e = {0};
  const lm_kernel *k = cache_get(kc, kpath, &e);
  if (!k)
    return lm_error_set(err, LM_EINPUT, "%s: kernel %s: %s", where, kpath,
                        e.msg);
  lm_shape sh;
  if (lm_shape_parse(k, shape, &sh, &e) != LM_OK)
    return lm_error_set(err, LM_EINPUT, "%s: shape '%s': %s", where, shape,
                        e.msg);
  lm_variant v;
  if (lm_variant_parse(variant, &v, &e) != LM_OK ||
      lm_variant_check(k, &v, &e) != LM_OK)
    return lm_error_set(err, LM_EINPUT, "%s: variant '%s': %s", where, variant,
                        e.msg);
  long long R = 0, C = 0;
  int used = 0;
  if (sscanf(shape, "%lld%*[,x]%lld%n", &R, &C, &used) != 2)
    return lm_error_set(err, LM_EINPUT, "%s: shape '%s': expected R,C", where,
                        shape);
  char buf[128];
  r->kernel = strdup(kpath);
  r->kernel_hash = malloc(17);
  if (r->kernel_hash)
    lm_kernel_hash(k, r->kernel_hash);
  r->R = R;
  r->C = C;
  if (shape[used] == ',' && shape[used + 1])
    r->extra_syms = strdup(shape + used + 1);
  r->variant = strdup(lm_variant_format(&v, buf, sizeof buf));
  r->isa = strdup(lm_isa_name(v.isa));
  if (!r->kernel || !r->kernel_hash || !r->variant || !r->isa ||
      (shape[used] == ',' && shape[used + 1] && !r->extra_syms))
    return lm_error_set(err, LM_ESYS, "out of memory");
  return LM_OK;
}

/* ---- hyperfine ------------------------------------------------------- */

/* A command split on blanks: every word, however many and however long
 * (a cut command once lost its last `--variant V`, and the record took
 * import's own --variant instead). */
typedef struct words {
  char *buf; /* the command, a NUL after each word */
  char **w;  /* [n] into buf */
  int n;
} words;

static void words_free(words *ws) {
  free(ws->buf);
  free(ws->w);
}

static lm_status split_words(const char *cmd, words *ws, lm_error *err) {
  size_t len = strlen(cmd), max = len / 2 + 1; /* words are 1 apart */
  ws->n = 0;
  ws->buf = strdup(cmd);
  ws->w = max < INT32_MAX ? malloc(sizeof *ws->w * max) : NULL;
  if (!ws->buf || !ws->w)
    return lm_error_set(err, LM_ESYS, "out of memory");
  for (char *save = NULL, *t = strtok_r(ws->buf, " \t", &save); t;
       t = strtok_r(NULL, " \t", &save))
    ws->w[ws->n++] = t;
  return LM_OK;
}

/* The value of option name in words: "--name V" or "--name=V". */
static const char *word_opt(char **w, int nw, const char *name) {
  size_t len = strlen(name);
  for (int i = 0; i < nw; i++) {
    if (strcmp(w[i], name) == 0 && i + 1 < nw)
      return w[i + 1];
    if (strncmp(w[i], name, len) == 0 && w[i][len] == '=')
      return w[i] + len + 1;
  }
  return NULL;
}

/* A number field >= 0 of a hyperfine result into *out; absent or null is
 * NAN unless required. */
static lm_status hf_number(lm_json_rd *rd, const cJSON *res, const char *name,
                           int required, double *out) {
  *out = NAN;
  return lm_json_number(rd, res, name,
                        required ? 0 : LM_JSON_OPTIONAL | LM_JSON_NULL_OK, 0,
                        DBL_MAX, out);
}

static lm_status hf_result(lm_json_rd *rdp, const cJSON *res, const char *cmd,
                           const char *where, words *ws, const import_opts *o,
                           kernel_cache *kc, lm_records *acc, int *added,
                           lm_error *err);

static lm_status import_hyperfine(const char *file, const cJSON *root,
                                  const import_opts *o, kernel_cache *kc,
                                  lm_records *acc, int *added, lm_error *err) {
  lm_json_rd rd = {file, root, err};
  const cJSON *results = NULL, *res;
  lm_status st = lm_json_array(&rd, root, "results", 0, 0, INT32_MAX, &results);
  if (st != LM_OK)
    return st;
  int i = 0;
  cJSON_ArrayForEach(res, results) {
    const char *cmd = NULL;
    char *where = NULL;
    words ws = {0};
    if ((st = lm_json_object(&rd, res, NULL, 0, &res)) != LM_OK ||
        (st = lm_json_string(&rd, res, "command", 0, 0, &cmd)) != LM_OK)
      return st;
    if (asprintf(&where, "%s: $.results[%d]", file, i++) < 0)
      return lm_error_set(err, LM_ESYS, "out of memory");
    st = hf_result(&rd, res, cmd, where, &ws, o, kc, acc, added, err);
    free(where);
    words_free(&ws);
    if (st != LM_OK)
      return st;
  }
  return LM_OK;
}

/* One hyperfine result onto one record of acc. */
static lm_status hf_result(lm_json_rd *rdp, const cJSON *res, const char *cmd,
                           const char *where, words *ws, const import_opts *o,
                           kernel_cache *kc, lm_records *acc, int *added,
                           lm_error *err) {
  lm_json_rd rd = *rdp;
  lm_status st = split_words(cmd, ws, err);
  if (st != LM_OK)
    return st;
  char **w = ws->w, *kpath = NULL;
  int nw = ws->n;
  {
    const char *kernel = NULL;
    for (int j = 0; j + 1 < nw && !kernel; j++)
      if (strcmp(w[j], "bench") == 0 || strcmp(w[j], "run") == 0)
        for (int m = j + 1; m < nw && !kernel; m++) {
          if (w[m][0] != '-')
            kernel = w[m];
          else if (!strchr(w[m], '='))
            m++; /* skip the option's value */
        }
    const char *shape = word_opt(w, nw, "--shape");
    const char *variant = word_opt(w, nw, "--variant");
    if (!kernel)
      kernel = o->kernel;
    if (!shape)
      shape = o->shape;
    if (!variant)
      variant = o->variant;
    const char *missing = !kernel    ? "kernel (bench|run KERNEL, or "
                                       "--kernel K.lk)"
                          : !shape   ? "shape (--shape R,C)"
                          : !variant ? "variant (--variant V)"
                                     : NULL;
    if (missing)
      return lm_json_error(&rd, res, "command",
                           "cannot map '%s' onto a lanemap measurement: it "
                           "names no %s",
                           cmd, missing);
    if (strchr(variant, ','))
      return lm_json_error(&rd, res, "command",
                           "names several variants (%s); a hyperfine result is "
                           "one measurement of one",
                           variant);
    lm_record r;
    lm_record_init(&r);
    const cJSON *times = NULL;
    kpath = resolve(kernel, rd.file);
    st = kpath ? map_entry(kc, where, kpath, shape, variant, &r, err)
               : lm_error_set(err, LM_ESYS, "out of memory");
    free(kpath);
    if (st == LM_OK)
      st = hf_number(&rd, res, "mean", 1, &r.mean);
    if (st == LM_OK)
      st = hf_number(&rd, res, "stddev", 0, &r.stddev);
    if (st == LM_OK)
      st = hf_number(&rd, res, "median", 0, &r.median);
    if (st == LM_OK)
      st = hf_number(&rd, res, "min", 0, &r.min);
    if (st == LM_OK)
      st = hf_number(&rd, res, "max", 0, &r.max);
    if (st == LM_OK)
      st = lm_json_array(&rd, res, "times", LM_JSON_OPTIONAL, 0, INT32_MAX,
                         &times);
    if (st == LM_OK && times) {
      int n = cJSON_GetArraySize(times), t = 0;
      r.times = n ? malloc(sizeof *r.times * (size_t)n) : NULL;
      if (n && !r.times)
        st = lm_error_set(err, LM_ESYS, "out of memory");
      const cJSON *x;
      cJSON_ArrayForEach(x, times) {
        if (st != LM_OK)
          break;
        st = lm_json_number(&rd, x, NULL, 0, 0, DBL_MAX, &r.times[t++]);
      }
      r.ntimes = st == LM_OK ? t : 0;
    }
    if (st == LM_OK)
      st = lm_record_stamp(&r, err);
    if (st == LM_OK) {
      r.extra = cJSON_CreateObject();
      if (!r.extra ||
          !cJSON_AddStringToObject(r.extra, "source", "hyperfine") ||
          !cJSON_AddStringToObject(r.extra, "command", cmd))
        st = lm_error_set(err, LM_ESYS, "out of memory");
    }
    if (st != LM_OK) {
      lm_record_free(&r);
      return st;
    }
    acc->r[acc->n++] = r;
    (*added)++;
  }
  return LM_OK;
}

/* ---- TVM-style logs -------------------------------------------------- */

/* The kernel file a TVM task names, malloc'ed: a --kernel whose kernel
 * has that name, or a path to a .lk file.  NULL with *oom unset if it
 * names neither. */
static char *tvm_kernel(const char *task, const char *file,
                        const import_opts *o, kernel_cache *kc, int *oom) {
  char *p = NULL;
  if (o->kernel) {
    lm_error e = {0};
    const lm_kernel *k = cache_get(kc, o->kernel, &e);
    if (k && k->name && strcmp(k->name, task) == 0)
      p = strdup(o->kernel);
  }
  size_t len = strlen(task);
  if (!p && len > 3 && strcmp(task + len - 3, ".lk") == 0)
    p = resolve(task, file);
  else if (!p)
    return NULL;
  *oom = !p;
  return p;
}

/* The variant of a TVM config into *out: config.variant (a string if
 * given), or the entity ["variant", "ot", V]; NULL if neither.  Other
 * entities are TVM's own knobs, not read. */
static lm_status tvm_variant(lm_json_rd *rd, const cJSON *config,
                             const char **out) {
  *out = NULL;
  lm_status st =
      lm_json_string(rd, config, "variant", LM_JSON_OPTIONAL, 0, out);
  if (st != LM_OK || *out)
    return st;
  const cJSON *ent = lm_json_get(config, "entity"), *e;
  if (ent && (st = lm_json_array(rd, config, "entity", 0, 0, INT32_MAX, &ent)))
    return st;
  cJSON_ArrayForEach(e, ent) {
    const cJSON *name = cJSON_GetArrayItem(e, 0),
                *val = cJSON_GetArrayItem(e, 2);
    if (cJSON_IsString(name) && strcmp(name->valuestring, "variant") == 0 &&
        cJSON_IsString(val)) {
      *out = val->valuestring;
      return LM_OK;
    }
  }
  return LM_OK;
}

static lm_status tvm_mapped(lm_json_rd *rdp, const char *where, const cJSON *j,
                            const cJSON *target, const char *taskname,
                            const char *kpath, int oom, const import_opts *o,
                            kernel_cache *kc, lm_record *r, lm_error *err);

static lm_status tvm_line(const char *where, const char *file, const cJSON *j,
                          const import_opts *o, kernel_cache *kc, lm_record *r,
                          int *skipped, lm_error *err) {
  lm_json_rd rd = {where, j, err};
  const cJSON *input = NULL, *config = NULL, *result = NULL;
  int64_t error_no = 0;
  lm_status st;
  if ((st = lm_json_array(&rd, j, "input", 0, 2, INT32_MAX, &input)) ||
      (st = lm_json_object(&rd, j, "config", 0, &config)) ||
      (st = lm_json_array(&rd, j, "result", 0, 2, INT32_MAX, &result)) ||
      (st = lm_json_int(&rd, result->child->next, NULL, 0, INT32_MIN, INT32_MAX,
                        &error_no)))
    return st;
  if (error_no != 0) {
    (*skipped)++;
    return LM_EFAIL; /* a failed measurement: not an error, not a record */
  }
  const cJSON *target = input->child;
  const char *taskname = NULL;
  if ((st = lm_json_string(&rd, target->next, NULL, 0, 0, &taskname)))
    return st;
  int oom = 0;
  char *kpath = tvm_kernel(taskname, file, o, kc, &oom);
  st = tvm_mapped(&rd, where, j, target, taskname, kpath, oom, o, kc, r, err);
  free(kpath);
  return st;
}

/* The rest of tvm_line, once the kernel file is known (or not). */
static lm_status tvm_mapped(lm_json_rd *rdp, const char *where, const cJSON *j,
                            const cJSON *target, const char *taskname,
                            const char *kpath, int oom, const import_opts *o,
                            kernel_cache *kc, lm_record *r, lm_error *err) {
  lm_json_rd rd = *rdp;
  const cJSON *config = lm_json_get(j, "config"),
              *result = lm_json_get(j, "result");
  lm_status st;
  char sbuf[64];
  if (oom)
    return lm_error_set(err, LM_ESYS, "out of memory");
  if (!kpath)
    return lm_json_error(&rd, target->next, NULL,
                         "task '%s' names no lanemap kernel: give --kernel "
                         "K.lk whose kernel is named '%s', or log the task as "
                         "a path to a .lk file",
                         taskname, taskname);
  const char *shape = o->shape;
  const cJSON *args = target->next->next;
  if (cJSON_IsArray(args) && cJSON_GetArraySize(args) == 2 &&
      cJSON_IsNumber(args->child) && cJSON_IsNumber(args->child->next)) {
    /* args [R, C]: a shape, so two positive integers */
    int64_t R = 0, C = 0;
    if ((st =
             lm_json_int(&rd, args->child, NULL, 0, 1, INT64_C(1) << 53, &R)) ||
        (st = lm_json_int(&rd, args->child->next, NULL, 0, 1, INT64_C(1) << 53,
                          &C)))
      return st;
    snprintf(sbuf, sizeof sbuf, "%" PRId64 ",%" PRId64, R, C);
    shape = sbuf;
  }
  if (!shape)
    return lm_error_set(err, LM_EINPUT,
                        "%s: $.input[2]: args name no shape [R, C], and no "
                        "--shape was given",
                        where);
  const char *variant = NULL;
  if ((st = tvm_variant(&rd, config, &variant)))
    return st;
  if (!variant)
    variant = o->variant;
  if (!variant)
    return lm_error_set(err, LM_EINPUT,
                        "%s: $.config: names no lanemap variant (expected "
                        "config.variant or an entity [\"variant\", \"ot\", "
                        "V]), and no --variant was given",
                        where);
  st = map_entry(kc, where, kpath, shape, variant, r, err);
  if (st != LM_OK)
    return st;
  const cJSON *costs = NULL, *c;
  if ((st = lm_json_array(&rd, result->child, NULL, 0, 1, INT32_MAX, &costs)))
    return st;
  int n = cJSON_GetArraySize(costs), i = 0;
  double *ns = malloc(sizeof *ns * (size_t)n);
  if (!ns)
    return lm_error_set(err, LM_ESYS, "out of memory");
  cJSON_ArrayForEach(c, costs) {
    if ((st = lm_json_number(&rd, c, NULL, 0, 0, DBL_MAX, &ns[i]))) {
      free(ns);
      return st;
    }
    ns[i++] *= 1e9; /* s to ns */
  }
  lm_error e = {0};
  st = lm_record_set_samples(r, ns, n, &e);
  free(ns);
  if (st != LM_OK)
    return lm_error_set(err, st, "%s: $.result[0]: %s", where, e.msg);
  const cJSON *ts = cJSON_GetArrayItem(result, 3);
  if (cJSON_IsNumber(ts) && isfinite(ts->valuedouble) && ts->valuedouble >= 0 &&
      ts->valuedouble < 253402300800.0) {
    time_t t = (time_t)ts->valuedouble;
    struct tm tm;
    char buf[32];
    gmtime_r(&t, &tm);
    strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    r->timestamp = strdup(buf);
    if (!r->timestamp)
      return lm_error_set(err, LM_ESYS, "out of memory");
  } else if ((st = lm_record_stamp(r, err)) != LM_OK) {
    return st;
  }
  r->extra = cJSON_CreateObject();
  if (!r->extra || !cJSON_AddStringToObject(r->extra, "source", "tvm") ||
      !cJSON_AddStringToObject(r->extra, "task", taskname) ||
      (cJSON_IsString(target) &&
       !cJSON_AddStringToObject(r->extra, "target", target->valuestring)))
    return lm_error_set(err, LM_ESYS, "out of memory");
  return LM_OK;
}

static lm_status import_tvm(const char *file, char *text, size_t n,
                            const import_opts *o, kernel_cache *kc,
                            lm_records *acc, int *added, int *skipped,
                            lm_error *err) {
  int line = 0;
  for (size_t pos = 0; pos < n;) {
    char *nl = memchr(text + pos, '\n', n - pos);
    size_t end = nl ? (size_t)(nl - text) : n;
    char *s = text + pos;
    size_t len = end - pos;
    pos = end + 1;
    line++;
    if (strspn(s, " \t\r") >= len)
      continue;
    char *where = NULL;
    if (asprintf(&where, "%s:%d", file, line) < 0)
      return lm_error_set(err, LM_ESYS, "out of memory");
    cJSON *j = NULL;
    lm_status st = lm_json_parse_at(file, line, s, len, &j, err);
    if (st == LM_OK && !cJSON_IsObject(j)) {
      lm_json_rd rd = {where, j, err};
      st = lm_json_expected(&rd, j, NULL, "a JSON object (a TVM log line)");
    }
    lm_record r;
    lm_record_init(&r);
    if (st == LM_OK)
      st = tvm_line(where, file, j, o, kc, &r, skipped, err);
    free(where);
    cJSON_Delete(j);
    if (st == LM_EFAIL) {
      lm_record_free(&r);
      continue;
    }
    if (st != LM_OK) {
      lm_record_free(&r);
      return st;
    }
    acc->r[acc->n++] = r;
    (*added)++;
  }
  return LM_OK;
}

/* Room for `more` records in acc. */
static lm_status grow(lm_records *acc, int *cap, int more, lm_error *err) {
  if (acc->n + more <= *cap)
    return LM_OK;
  int c = (acc->n + more) * 2;
  lm_record *r = realloc(acc->r, sizeof *r * (size_t)c);
  if (!r)
    return lm_error_set(err, LM_ESYS, "out of memory");
  acc->r = r;
  *cap = c;
  return LM_OK;
}

/* Which format a file is: a hyperfine export is one JSON object with
 * results[], usually over many lines; a TVM log is one object per line.  So
 * a first line that is a whole object with input is a TVM log; otherwise
 * the file must be one JSON document, and its syntax errors are reported
 * as such (file:line:col, or a file cut short). */
static lm_status import_file(const char *file, const import_opts *o,
                             kernel_cache *kc, lm_records *acc, int *cap,
                             int *added, int *skipped, lm_error *err) {
  char *text = NULL;
  size_t n = 0;
  lm_status st = lm_json_read_file(file, &text, &n, err);
  if (st != LM_OK)
    return st;
  /* Count lines for an upper bound on the records this file adds. */
  int lines = 1;
  for (size_t i = 0; i < n; i++)
    lines += text[i] == '\n';
  size_t first = strspn(text, " \t\r\n");
  const char *nl = memchr(text + first, '\n', n - first);
  size_t len1 = nl ? (size_t)(nl - text) : n;
  cJSON *one = NULL, *root = NULL;
  lm_error ignored = {0};
  int tvm = first < n &&
            lm_json_parse(file, text, len1, &one, &ignored) == LM_OK &&
            lm_json_get(one, "input") && !lm_json_get(one, "results");
  cJSON_Delete(one);
  if (first == n || tvm) {
    st = grow(acc, cap, lines, err);
    if (st == LM_OK)
      st = import_tvm(file, text, n, o, kc, acc, added, skipped, err);
  } else if (text[first] != '{') {
    st = lm_error_set(err, LM_EINPUT,
                      "%s: neither a hyperfine --export-json file nor a "
                      "TVM-style JSON Lines log",
                      file);
  } else if ((st = lm_json_parse(file, text, n, &root, err)) == LM_OK) {
    const cJSON *res = lm_json_get(root, "results");
    if (!res)
      st = lm_error_set(err, LM_EINPUT,
                        "%s: a JSON object without results[] (hyperfine "
                        "--export-json) or input (a TVM log line, one object "
                        "per line)",
                        file);
    else if ((st = grow(acc, cap,
                        cJSON_IsArray(res) ? cJSON_GetArraySize(res) : 0,
                        err)) == LM_OK)
      st = import_hyperfine(file, root, o, kc, acc, added, err);
  }
  cJSON_Delete(root);
  free(text);
  return st;
}

static int cmd_import(int argc, char **argv) {
  import_opts o = {0};
  const char *files[256];
  int nfiles = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r = 0;
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return LM_OK;
    } else if ((r = cli_arg_value(argc, argv, &i, "-o", &v)) ||
               (r = cli_arg_value(argc, argv, &i, "--out", &v))) {
      if (r < 0)
        return LM_EINPUT;
      o.out = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "--kernel", &v))) {
      if (r < 0)
        return LM_EINPUT;
      o.kernel = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "--shape", &v))) {
      if (r < 0)
        return LM_EINPUT;
      o.shape = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "--variant", &v))) {
      if (r < 0)
        return LM_EINPUT;
      o.variant = v;
    } else if (a[0] == '-' && a[1]) {
      return cli_usage_error(usage, "records import", "unknown option '%s'", a);
    } else if (nfiles == 256) {
      return cli_usage_error(usage, "records import", "more than 256 files");
    } else {
      files[nfiles++] = a;
    }
  }
  if (!nfiles)
    return cli_usage_error(usage, "records import", "no input file");
  if (!o.out)
    return cli_usage_error(usage, "records import",
                           "-o OUT.jsonl is "
                           "required");
  lm_error err = {0};
  lm_records acc = {0};
  kernel_cache kc = {0};
  int cap = 0, added = 0, skipped = 0;
  lm_status st = LM_OK;
  if (o.kernel && !cache_get(&kc, o.kernel, &err)) {
    fprintf(stderr, "lanemap records import: --kernel %s: %s\n", o.kernel,
            err.msg);
    cache_free(&kc);
    return LM_EINPUT;
  }
  /* the records already in OUT and the new ones are written back as one
   * file: hold OUT's lock from the read to the write */
  int lock = -1;
  st = lm_file_lock(o.out, &lock, &err);
  FILE *exists = st == LM_OK ? fopen(o.out, "r") : NULL;
  if (exists) {
    fclose(exists);
    st = lm_records_read(o.out, &acc, &err);
    cap = acc.n;
  }
  for (int f = 0; f < nfiles && st == LM_OK; f++)
    st = import_file(files[f], &o, &kc, &acc, &cap, &added, &skipped, &err);
  if (st == LM_OK)
    st = lm_records_write(o.out, &acc, &err);
  lm_file_unlock(lock);
  if (st == LM_OK)
    printf("records import: %d records from %d files -> %s (%d failed "
           "measurements skipped)\n",
           added, nfiles, o.out, skipped);
  else
    fprintf(stderr, "lanemap records import: %s\n", err.msg);
  lm_records_free(&acc);
  cache_free(&kc);
  return (int)st;
}

static int cmd_best(int argc, char **argv) {
  const char *in = NULL, *out = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r = 0;
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return LM_OK;
    } else if ((r = cli_arg_value(argc, argv, &i, "-o", &v)) ||
               (r = cli_arg_value(argc, argv, &i, "--out", &v))) {
      if (r < 0)
        return LM_EINPUT;
      out = v;
    } else if (a[0] == '-' && a[1]) {
      return cli_usage_error(usage, "records best", "unknown option '%s'", a);
    } else if (in) {
      return cli_usage_error(usage, "records best", "one input file only");
    } else {
      in = a;
    }
  }
  if (!in)
    return cli_usage_error(usage, "records best", "no input file");
  if (!out)
    return cli_usage_error(usage, "records best", "-o OUT.jsonl is required");
  lm_error err = {0};
  lm_records rs = {0}, best = {0};
  lm_status st = lm_records_read(in, &rs, &err);
  if (st == LM_OK)
    st = lm_records_best(&rs, &best, &err);
  if (st == LM_OK)
    st = lm_records_write(out, &best, &err);
  if (st == LM_OK) {
    if (rs.truncated)
      fprintf(stderr,
              "lanemap records best: %s: skipped an unterminated "
              "last line\n",
              in);
    printf("records best: %d records -> %d best per (kernel, shape) -> %s\n",
           rs.n, best.n, out);
  } else {
    fprintf(stderr, "lanemap records best: %s\n", err.msg);
  }
  lm_records_free(&rs);
  lm_records_free(&best);
  return (int)st;
}

int cmd_records(int argc, char **argv) {
  if (argc < 2)
    return cli_usage_error(usage, "records", "expected import or best");
  if (cli_arg_is_help(argv[1])) {
    fputs(usage, stdout);
    return LM_OK;
  }
  if (strcmp(argv[1], "import") == 0)
    return cmd_import(argc - 1, argv + 1);
  if (strcmp(argv[1], "best") == 0)
    return cmd_best(argc - 1, argv + 1);
  return cli_usage_error(usage, "records",
                         "unknown action '%s' (expected "
                         "import or best)",
                         argv[1]);
}
