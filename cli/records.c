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
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/args.h"
#include "cli/commands.h"
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

#define MAX_KERNELS 64

/* Kernels loaded so far, by the path they were named with. */
typedef struct kernel_cache {
  char *path[MAX_KERNELS];
  lm_kernel *k[MAX_KERNELS];
  int n;
} kernel_cache;

typedef struct import_opts {
  const char *out;
  const char *kernel; /* --kernel: default kernel file */
  const char *shape;  /* --shape: default "R,C" */
  const char *variant; /* --variant: default variant string */
} import_opts;

static void cache_free(kernel_cache *kc) {
  for (int i = 0; i < kc->n; i++) {
    free(kc->path[i]);
    lm_kernel_free(kc->k[i]);
  }
  kc->n = 0;
}

/* The kernel at path, loaded once; NULL with err set on failure. */
static const lm_kernel *cache_get(kernel_cache *kc, const char *path,
                                  lm_error *err) {
  for (int i = 0; i < kc->n; i++)
    if (strcmp(kc->path[i], path) == 0)
      return kc->k[i];
  if (kc->n == MAX_KERNELS) {
    lm_error_set(err, LM_EINPUT, "more than %d distinct kernels",
                 MAX_KERNELS);
    return NULL;
  }
  lm_kernel *k = NULL;
  if (lm_kernel_load(path, &k, err) != LM_OK)
    return NULL;
  kc->path[kc->n] = strdup(path);
  kc->k[kc->n++] = k;
  return k;
}

/* The file a command or task names, tried as given, then relative to the
 * folder of the file that names it.  buf holds the result. */
static const char *resolve(const char *name, const char *from, char *buf,
                           size_t n) {
  FILE *f = fopen(name, "r");
  if (f || name[0] == '/') {
    if (f)
      fclose(f);
    snprintf(buf, n, "%s", name);
    return buf;
  }
  const char *slash = strrchr(from, '/');
  if (!slash) {
    snprintf(buf, n, "%s", name);
    return buf;
  }
  snprintf(buf, n, "%.*s/%s", (int)(slash - from), from, name);
  return buf;
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
    return lm_error_set(err, LM_EINPUT, "%s: variant '%s': %s", where,
                        variant, e.msg);
  long long R = 0, C = 0;
  int used = 0;
  if (sscanf(shape, "%lld%*[,x]%lld%n", &R, &C, &used) != 2)
    return lm_error_set(err, LM_EINPUT, "%s: shape '%s': expected R,C",
                        where, shape);
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

/* Split a command on blanks into at most max words (in buf). */
static int split_words(const char *cmd, char *buf, size_t n, char **w,
                       int max) {
  snprintf(buf, n, "%s", cmd);
  int nw = 0;
  for (char *save = NULL, *t = strtok_r(buf, " \t", &save); t && nw < max;
       t = strtok_r(NULL, " \t", &save))
    w[nw++] = t;
  return nw;
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
static lm_status hf_number(const cJSON *res, const char *name, int required,
                           const char *where, double *out, lm_error *err) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(res, name);
  *out = NAN;
  if (!j || cJSON_IsNull(j)) {
    if (required)
      return lm_error_set(err, LM_EINPUT, "%s.%s: missing", where, name);
    return LM_OK;
  }
  if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) || j->valuedouble < 0)
    return lm_error_set(err, LM_EINPUT, "%s.%s: expected a number >= 0",
                        where, name);
  *out = j->valuedouble;
  return LM_OK;
}

static lm_status import_hyperfine(const char *file, const cJSON *root,
                                  const import_opts *o, kernel_cache *kc,
                                  lm_records *acc, int *added, lm_error *err) {
  const cJSON *results = cJSON_GetObjectItemCaseSensitive(root, "results");
  if (!cJSON_IsArray(results))
    return lm_error_set(err, LM_EINPUT, "%s: results: expected an array",
                        file);
  int i = 0;
  const cJSON *res;
  cJSON_ArrayForEach(res, results) {
    char where[600], words[4096], *w[256], kbuf[4096];
    snprintf(where, sizeof where, "%s: results[%d]", file, i++);
    if (!cJSON_IsObject(res))
      return lm_error_set(err, LM_EINPUT, "%s: expected an object", where);
    const cJSON *cmd = cJSON_GetObjectItemCaseSensitive(res, "command");
    if (!cJSON_IsString(cmd))
      return lm_error_set(err, LM_EINPUT, "%s.command: expected a string",
                          where);
    int nw = split_words(cmd->valuestring, words, sizeof words, w, 256);
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
      return lm_error_set(err, LM_EINPUT,
                          "%s.command: cannot map '%s' onto a lanemap "
                          "measurement: it names no %s",
                          where, cmd->valuestring, missing);
    if (strchr(variant, ','))
      return lm_error_set(err, LM_EINPUT,
                          "%s.command: names several variants (%s); a "
                          "hyperfine result is one measurement of one",
                          where, variant);
    lm_record r;
    lm_record_init(&r);
    lm_status st = map_entry(kc, where, resolve(kernel, file, kbuf, sizeof kbuf),
                             shape, variant, &r, err);
    if (st == LM_OK)
      st = hf_number(res, "mean", 1, where, &r.mean, err);
    if (st == LM_OK)
      st = hf_number(res, "stddev", 0, where, &r.stddev, err);
    if (st == LM_OK)
      st = hf_number(res, "median", 0, where, &r.median, err);
    if (st == LM_OK)
      st = hf_number(res, "min", 0, where, &r.min, err);
    if (st == LM_OK)
      st = hf_number(res, "max", 0, where, &r.max, err);
    const cJSON *times = cJSON_GetObjectItemCaseSensitive(res, "times");
    if (st == LM_OK && times) {
      if (!cJSON_IsArray(times)) {
        st = lm_error_set(err, LM_EINPUT, "%s.times: expected an array",
                          where);
      } else {
        int n = cJSON_GetArraySize(times), t = 0;
        r.times = n ? malloc(sizeof *r.times * (size_t)n) : NULL;
        if (n && !r.times)
          st = lm_error_set(err, LM_ESYS, "out of memory");
        const cJSON *x;
        cJSON_ArrayForEach(x, times) {
          if (st != LM_OK)
            break;
          if (!cJSON_IsNumber(x) || !isfinite(x->valuedouble) ||
              x->valuedouble < 0)
            st = lm_error_set(err, LM_EINPUT,
                              "%s.times[%d]: expected a number >= 0", where,
                              t);
          else
            r.times[t++] = x->valuedouble;
        }
        r.ntimes = t;
      }
    }
    if (st == LM_OK)
      st = lm_record_stamp(&r, err);
    if (st == LM_OK) {
      r.extra = cJSON_CreateObject();
      if (!r.extra ||
          !cJSON_AddStringToObject(r.extra, "source", "hyperfine") ||
          !cJSON_AddStringToObject(r.extra, "command", cmd->valuestring))
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

/* The kernel file a TVM task names: a --kernel whose kernel has that name,
 * or a path to a .lk file. */
static const char *tvm_kernel(const char *task, const char *file,
                              const import_opts *o, kernel_cache *kc,
                              char *buf, size_t n) {
  if (o->kernel) {
    lm_error e = {0};
    const lm_kernel *k = cache_get(kc, o->kernel, &e);
    if (k && k->name && strcmp(k->name, task) == 0)
      return o->kernel;
  }
  size_t len = strlen(task);
  if (len > 3 && strcmp(task + len - 3, ".lk") == 0)
    return resolve(task, file, buf, n);
  return NULL;
}

/* The variant of a TVM config: config.variant, or the entity
 * ["variant", "ot", V]. */
static const char *tvm_variant(const cJSON *config) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(config, "variant");
  if (cJSON_IsString(v))
    return v->valuestring;
  const cJSON *ent = cJSON_GetObjectItemCaseSensitive(config, "entity"), *e;
  cJSON_ArrayForEach(e, ent) {
    const cJSON *name = cJSON_GetArrayItem(e, 0), *val = cJSON_GetArrayItem(e, 2);
    if (cJSON_IsString(name) && strcmp(name->valuestring, "variant") == 0 &&
        cJSON_IsString(val))
      return val->valuestring;
  }
  return NULL;
}

static lm_status tvm_line(const char *where, const char *file,
                          const cJSON *j, const import_opts *o,
                          kernel_cache *kc, lm_record *r, int *skipped,
                          lm_error *err) {
  const cJSON *input = cJSON_GetObjectItemCaseSensitive(j, "input");
  const cJSON *config = cJSON_GetObjectItemCaseSensitive(j, "config");
  const cJSON *result = cJSON_GetObjectItemCaseSensitive(j, "result");
  if (!cJSON_IsArray(input) || cJSON_GetArraySize(input) < 2)
    return lm_error_set(err, LM_EINPUT,
                        "%s: input: expected [target, task, args, ...]",
                        where);
  if (!cJSON_IsObject(config))
    return lm_error_set(err, LM_EINPUT, "%s: config: expected an object",
                        where);
  if (!cJSON_IsArray(result) || cJSON_GetArraySize(result) < 2)
    return lm_error_set(err, LM_EINPUT,
                        "%s: result: expected [costs, error_no, ...]", where);
  const cJSON *errno_j = cJSON_GetArrayItem(result, 1);
  if (!cJSON_IsNumber(errno_j))
    return lm_error_set(err, LM_EINPUT, "%s: result[1]: expected error_no",
                        where);
  if (errno_j->valueint != 0) {
    (*skipped)++;
    return LM_EFAIL; /* a failed measurement: not an error, not a record */
  }
  const cJSON *target = cJSON_GetArrayItem(input, 0);
  const cJSON *task = cJSON_GetArrayItem(input, 1);
  if (!cJSON_IsString(task))
    return lm_error_set(err, LM_EINPUT, "%s: input[1]: expected the task "
                                        "name", where);
  char kbuf[4096], sbuf[64];
  const char *kpath =
      tvm_kernel(task->valuestring, file, o, kc, kbuf, sizeof kbuf);
  if (!kpath)
    return lm_error_set(err, LM_EINPUT,
                        "%s: input[1]: task '%s' names no lanemap kernel: "
                        "give --kernel K.lk whose kernel is named '%s', or "
                        "log the task as a path to a .lk file",
                        where, task->valuestring, task->valuestring);
  const char *shape = o->shape;
  const cJSON *args = cJSON_GetArrayItem(input, 2);
  if (cJSON_IsArray(args) && cJSON_GetArraySize(args) == 2 &&
      cJSON_IsNumber(cJSON_GetArrayItem(args, 0)) &&
      cJSON_IsNumber(cJSON_GetArrayItem(args, 1))) {
    snprintf(sbuf, sizeof sbuf, "%.0f,%.0f",
             cJSON_GetArrayItem(args, 0)->valuedouble,
             cJSON_GetArrayItem(args, 1)->valuedouble);
    shape = sbuf;
  }
  if (!shape)
    return lm_error_set(err, LM_EINPUT,
                        "%s: input[2]: args name no shape [R, C], and no "
                        "--shape was given",
                        where);
  const char *variant = tvm_variant(config);
  if (!variant)
    variant = o->variant;
  if (!variant)
    return lm_error_set(err, LM_EINPUT,
                        "%s: config: names no lanemap variant (expected "
                        "config.variant or an entity [\"variant\", \"ot\", "
                        "V]), and no --variant was given",
                        where);
  lm_status st = map_entry(kc, where, kpath, shape, variant, r, err);
  if (st != LM_OK)
    return st;
  const cJSON *costs = cJSON_GetArrayItem(result, 0), *c;
  int n = cJSON_GetArraySize(costs), i = 0;
  if (!cJSON_IsArray(costs) || n == 0)
    return lm_error_set(err, LM_EINPUT,
                        "%s: result[0]: expected a non-empty array of costs",
                        where);
  double *ns = malloc(sizeof *ns * (size_t)n);
  if (!ns)
    return lm_error_set(err, LM_ESYS, "out of memory");
  cJSON_ArrayForEach(c, costs) {
    if (!cJSON_IsNumber(c) || !isfinite(c->valuedouble) || c->valuedouble < 0) {
      free(ns);
      return lm_error_set(err, LM_EINPUT,
                          "%s: result[0][%d]: expected a cost in seconds "
                          ">= 0",
                          where, i);
    }
    ns[i++] = c->valuedouble * 1e9;
  }
  lm_error e = {0};
  st = lm_record_set_samples(r, ns, n, &e);
  free(ns);
  if (st != LM_OK)
    return lm_error_set(err, st, "%s: result[0]: %s", where, e.msg);
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
      !cJSON_AddStringToObject(r->extra, "task", task->valuestring) ||
      (cJSON_IsString(target) &&
       !cJSON_AddStringToObject(r->extra, "target", target->valuestring)))
    return lm_error_set(err, LM_ESYS, "out of memory");
  return LM_OK;
}

static lm_status import_tvm(const char *file, char *text, const import_opts *o,
                            kernel_cache *kc, lm_records *acc, int *added,
                            int *skipped, lm_error *err) {
  int line = 0;
  for (char *save = NULL, *s = strtok_r(text, "\n", &save); s;
       s = strtok_r(NULL, "\n", &save)) {
    line++;
    char where[600];
    snprintf(where, sizeof where, "%s:%d", file, line);
    if (strspn(s, " \t\r") == strlen(s))
      continue;
    cJSON *j = cJSON_Parse(s);
    if (!cJSON_IsObject(j)) {
      cJSON_Delete(j);
      return lm_error_set(err, LM_EINPUT, "%s: not a JSON object", where);
    }
    lm_record r;
    lm_record_init(&r);
    lm_status st = tvm_line(where, file, j, o, kc, &r, skipped, err);
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

static lm_status import_file(const char *file, const import_opts *o,
                             kernel_cache *kc, lm_records *acc, int *cap,
                             int *added, int *skipped, lm_error *err) {
  char *text = NULL;
  size_t n = 0;
  lm_status st = lm_file_read(file, &text, &n, err);
  if (st != LM_OK)
    return st;
  /* Count lines for an upper bound on the records this file adds. */
  int lines = 1;
  for (size_t i = 0; i < n; i++)
    lines += text[i] == '\n';
  cJSON *root = cJSON_Parse(text);
  if (cJSON_IsObject(root) &&
      cJSON_GetObjectItemCaseSensitive(root, "results")) {
    const cJSON *res = cJSON_GetObjectItemCaseSensitive(root, "results");
    st = grow(acc, cap, cJSON_IsArray(res) ? cJSON_GetArraySize(res) : 0, err);
    if (st == LM_OK)
      st = import_hyperfine(file, root, o, kc, acc, added, err);
  } else if (cJSON_IsObject(root) &&
             !cJSON_GetObjectItemCaseSensitive(root, "input")) {
    st = lm_error_set(err, LM_EINPUT,
                      "%s: a JSON object without results[] (hyperfine "
                      "--export-json) or input (a TVM log line)",
                      file);
  } else if (!root && n && text[strspn(text, " \t\r\n")] != '{') {
    st = lm_error_set(err, LM_EINPUT,
                      "%s: neither a hyperfine --export-json file nor a "
                      "TVM-style JSON Lines log",
                      file);
  } else {
    st = grow(acc, cap, lines, err);
    if (st == LM_OK)
      st = import_tvm(file, text, o, kc, acc, added, skipped, err);
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
      return cli_usage_error(usage, "records import", "unknown option '%s'",
                             a);
    } else if (nfiles == 256) {
      return cli_usage_error(usage, "records import", "more than 256 files");
    } else {
      files[nfiles++] = a;
    }
  }
  if (!nfiles)
    return cli_usage_error(usage, "records import", "no input file");
  if (!o.out)
    return cli_usage_error(usage, "records import", "-o OUT.jsonl is "
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
      fprintf(stderr, "lanemap records best: %s: skipped an unterminated "
                      "last line\n", in);
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
  return cli_usage_error(usage, "records", "unknown action '%s' (expected "
                                           "import or best)", argv[1]);
}
