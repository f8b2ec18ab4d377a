/* Measurement records: one JSON object per line, "lanemap.record/1".
 *
 * The format is built for files that many writers append to and that may
 * be cut short.  An append is a single write(2) of one whole line on an
 * O_APPEND descriptor, so concurrent appends interleave by line and never
 * inside one, and a crash loses at most the last line, which then has no
 * newline.  A reader therefore treats an unterminated last line as an
 * interrupted append (skipped and counted) and every other malformed line
 * as an error naming `path:line: $.field:` (or `path:line:col:` for a
 * line that is not JSON).
 *
 * Times are seconds, with hyperfine's names, so that the same tools read
 * both; a time that was not taken is absent from the line (JSON has no
 * NaN) and reads back as NAN.  Fields a caller adds (`extra`) sit at the
 * top level beside the standard ones; on reading, every field that is not
 * standard goes back into `extra`, so fields written by a newer minor
 * version survive a round trip through an older reader. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <float.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lanemap/json.h"
#include "lanemap/records.h"

static const char *const std_fields[] = {
    "schema", "kernel",      "kernel_hash", "shape",    "extra_syms", "variant",
    "isa",    "fingerprint", "predicted",   "mean",     "stddev",     "median",
    "min",    "max",         "times",       "verified", "timestamp"};
enum { NSTD = sizeof std_fields / sizeof *std_fields };

static int is_std_field(const char *name) {
  for (int i = 0; i < NSTD; i++)
    if (strcmp(name, std_fields[i]) == 0)
      return 1;
  return 0;
}

void lm_record_init(lm_record *r) {
  memset(r, 0, sizeof *r);
  r->predicted = r->mean = r->stddev = r->median = r->min = r->max = NAN;
  r->verified = -1;
}

void lm_record_free(lm_record *r) {
  if (!r)
    return;
  free(r->kernel);
  free(r->kernel_hash);
  free(r->extra_syms);
  free(r->variant);
  free(r->isa);
  free(r->fingerprint);
  free(r->times);
  free(r->timestamp);
  cJSON_Delete(r->extra);
  lm_record_init(r);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

lm_status lm_record_set_samples(lm_record *r, const double *ns, int n,
                                lm_error *err) {
  if (n <= 0)
    return lm_error_set(err, LM_EINPUT, "times: no samples");
  for (int i = 0; i < n; i++)
    if (!isfinite(ns[i]) || ns[i] < 0)
      return lm_error_set(err, LM_EINPUT,
                          "times[%d]: expected a number >= 0, got %g", i,
                          ns[i]);
  double *t = malloc((size_t)n * sizeof *t);
  double *sorted = malloc((size_t)n * sizeof *sorted);
  if (!t || !sorted) {
    free(t);
    free(sorted);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  double sum = 0;
  for (int i = 0; i < n; i++) {
    t[i] = sorted[i] = ns[i] * 1e-9;
    sum += t[i];
  }
  qsort(sorted, (size_t)n, sizeof *sorted, cmp_double);
  double mean = sum / n, ss = 0;
  for (int i = 0; i < n; i++)
    ss += (t[i] - mean) * (t[i] - mean);
  free(r->times);
  r->times = t;
  r->ntimes = n;
  r->mean = mean;
  /* hyperfine's stddev is the sample one, undefined for a single run */
  r->stddev = n > 1 ? sqrt(ss / (n - 1)) : NAN;
  r->median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  r->min = sorted[0];
  r->max = sorted[n - 1];
  free(sorted);
  return LM_OK;
}

lm_status lm_record_stamp(lm_record *r, lm_error *err) {
  time_t now = time(NULL);
  struct tm tm;
  char buf[32];
  if (now == (time_t)-1 || !gmtime_r(&now, &tm) ||
      strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    return lm_error_set(err, LM_ESYS, "timestamp: cannot read the clock");
  char *s = strdup(buf);
  if (!s)
    return lm_error_set(err, LM_ESYS, "out of memory");
  free(r->timestamp);
  r->timestamp = s;
  return LM_OK;
}

/* ---- to JSON ---------------------------------------------------------------
 */

static int add_str(cJSON *o, const char *name, const char *s) {
  return !s || cJSON_AddStringToObject(o, name, s) != NULL;
}

static int add_num(cJSON *o, const char *name, double x) {
  return !isfinite(x) || cJSON_AddNumberToObject(o, name, x) != NULL;
}

lm_status lm_record_to_json(const lm_record *r, cJSON **out, lm_error *err) {
  *out = NULL;
  if (!r->kernel || !r->kernel_hash || !r->variant || !r->isa)
    return lm_error_set(err, LM_EINPUT, "%s: a record needs it",
                        !r->kernel        ? "kernel"
                        : !r->kernel_hash ? "kernel_hash"
                        : !r->variant     ? "variant"
                                          : "isa");
  if (r->extra && !cJSON_IsObject(r->extra))
    return lm_error_set(err, LM_EINPUT, "extra: expected an object");
  if (r->ntimes < 0 || (r->ntimes > 0 && !r->times))
    return lm_error_set(err, LM_EINPUT, "times: %d samples without data",
                        r->ntimes);
  for (const cJSON *e = r->extra ? r->extra->child : NULL; e; e = e->next)
    if (!e->string || is_std_field(e->string))
      return lm_error_set(err, LM_EINPUT,
                          "extra.%s: clashes with a standard field",
                          e->string ? e->string : "(unnamed)");
  cJSON *o = cJSON_CreateObject();
  cJSON *shape = cJSON_CreateArray();
  int ok = o && shape;
  if (ok) {
    cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)r->R));
    cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)r->C));
  }
  ok = ok && add_str(o, "schema", LM_RECORD_SCHEMA) &&
       add_str(o, "kernel", r->kernel) &&
       add_str(o, "kernel_hash", r->kernel_hash);
  if (ok)
    cJSON_AddItemToObject(o, "shape", shape), shape = NULL;
  ok = ok && add_str(o, "extra_syms", r->extra_syms) &&
       add_str(o, "variant", r->variant) && add_str(o, "isa", r->isa) &&
       add_str(o, "fingerprint", r->fingerprint) &&
       add_num(o, "predicted", r->predicted) && add_num(o, "mean", r->mean) &&
       add_num(o, "stddev", r->stddev) && add_num(o, "median", r->median) &&
       add_num(o, "min", r->min) && add_num(o, "max", r->max);
  if (ok && r->ntimes > 0) {
    cJSON *t = cJSON_AddArrayToObject(o, "times");
    ok = t != NULL;
    for (int i = 0; ok && i < r->ntimes; i++)
      ok = cJSON_AddItemToArray(t, cJSON_CreateNumber(r->times[i]));
  }
  if (ok && r->verified >= 0)
    ok = cJSON_AddBoolToObject(o, "verified", r->verified) != NULL;
  ok = ok && add_str(o, "timestamp", r->timestamp);
  for (const cJSON *e = r->extra ? r->extra->child : NULL; ok && e;
       e = e->next) {
    cJSON *copy = cJSON_Duplicate(e, 1);
    ok = copy && cJSON_AddItemToObject(o, e->string, copy);
  }
  cJSON_Delete(shape);
  if (!ok) {
    cJSON_Delete(o);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  *out = o;
  return LM_OK;
}

/* ---- from JSON -------------------------------------------------------------
 */

/* A string field: required, or optional (absent or null is NULL). */
static lm_status get_str(lm_json_rd *rd, const cJSON *j, const char *name,
                         int required, char **out) {
  const char *v = NULL;
  int flags = LM_JSON_OPTIONAL | LM_JSON_NULL_OK | LM_JSON_EMPTY_OK;
  lm_status st = lm_json_string(rd, j, name, required ? 0 : flags, 0, &v);
  if (st != LM_OK || !v)
    return st;
  if (!(*out = lm_strdup(v)))
    return lm_error_set(rd->err, LM_ESYS, "out of memory");
  return LM_OK;
}

/* An optional time in seconds: absent or null is NAN. */
static lm_status get_time(lm_json_rd *rd, const cJSON *j, const char *name,
                          double *out) {
  *out = NAN;
  return lm_json_number(rd, j, name, LM_JSON_OPTIONAL | LM_JSON_NULL_OK, 0,
                        DBL_MAX, out);
}

/* "lanemap.record/M" or "lanemap.record/M.m": same major loads. */
static lm_status check_schema(lm_json_rd *rd, const cJSON *j) {
  static const char prefix[] = "lanemap.record/";
  const char *v = NULL;
  lm_status st = lm_json_string(rd, j, "schema", 0, 0, &v);
  if (st != LM_OK)
    return st;
  const char *num = v + sizeof prefix - 1;
  char *end;
  errno = 0;
  long major = strncmp(v, prefix, sizeof prefix - 1) == 0
                   ? strtol(num, &end, 10)
                   : -1;
  if (major < 0 || end == num || errno || (*end && *end != '.'))
    return lm_json_expected(rd, j, "schema", "\"" LM_RECORD_SCHEMA "\"");
  if (major != LM_RECORD_SCHEMA_MAJOR)
    return lm_json_error(rd, j, "schema",
                         "\"%.80s\" is not readable by this build (it reads "
                         "%s)",
                         v, LM_RECORD_SCHEMA);
  return LM_OK;
}

static int is_hash(const char *s) {
  if (strlen(s) != 16)
    return 0;
  for (const char *p = s; *p; p++)
    if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f')))
      return 0;
  return 1;
}

/* The largest integer a double keeps exactly. */
#define INT53 (INT64_C(1) << 53)

lm_status lm_record_from_json(const cJSON *j, const char *where, lm_record *out,
                              lm_error *err) {
  lm_record r;
  lm_record_init(&r);
  lm_record_init(out);
  lm_json_rd rd = {where ? where : "record", j, err};
  const cJSON *shape = NULL, *times = NULL;
  bool verified = false;
  lm_status st;
  if (!cJSON_IsObject(j)) {
    st = lm_json_expected(&rd, j, NULL, "a JSON object");
    goto error;
  }
  if ((st = check_schema(&rd, j)) != LM_OK ||
      (st = get_str(&rd, j, "kernel", 1, &r.kernel)) != LM_OK ||
      (st = get_str(&rd, j, "kernel_hash", 1, &r.kernel_hash)) != LM_OK)
    goto error;
  if (!is_hash(r.kernel_hash)) {
    st = lm_json_expected(&rd, j, "kernel_hash", "16 lower-case hex digits");
    goto error;
  }
  shape = lm_json_get(j, "shape");
  if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != 2) {
    st = lm_json_expected(&rd, j, "shape", "[R, C], two positive integers");
    goto error;
  }
  if ((st = lm_json_int(&rd, shape->child, NULL, 0, 1, INT53, &r.R)) != LM_OK ||
      (st = lm_json_int(&rd, shape->child->next, NULL, 0, 1, INT53, &r.C)) !=
          LM_OK ||
      (st = get_str(&rd, j, "extra_syms", 0, &r.extra_syms)) != LM_OK ||
      (st = get_str(&rd, j, "variant", 1, &r.variant)) != LM_OK ||
      (st = get_str(&rd, j, "isa", 1, &r.isa)) != LM_OK ||
      (st = get_str(&rd, j, "fingerprint", 0, &r.fingerprint)) != LM_OK ||
      (st = get_str(&rd, j, "timestamp", 0, &r.timestamp)) != LM_OK ||
      (st = get_time(&rd, j, "predicted", &r.predicted)) != LM_OK ||
      (st = get_time(&rd, j, "mean", &r.mean)) != LM_OK ||
      (st = get_time(&rd, j, "stddev", &r.stddev)) != LM_OK ||
      (st = get_time(&rd, j, "median", &r.median)) != LM_OK ||
      (st = get_time(&rd, j, "min", &r.min)) != LM_OK ||
      (st = get_time(&rd, j, "max", &r.max)) != LM_OK ||
      (st = lm_json_array(&rd, j, "times", LM_JSON_OPTIONAL | LM_JSON_NULL_OK,
                          0, INT32_MAX, &times)) != LM_OK)
    goto error;
  if (cJSON_IsArray(times)) {
    int n = cJSON_GetArraySize(times);
    if (n > 0 && !(r.times = malloc((size_t)n * sizeof *r.times))) {
      st = lm_error_set(err, LM_ESYS, "out of memory");
      goto error;
    }
    int i = 0;
    for (const cJSON *t = times->child; t; t = t->next, i++)
      if ((st = lm_json_number(&rd, t, NULL, 0, 0, DBL_MAX, &r.times[i])) !=
          LM_OK)
        goto error;
    r.ntimes = n;
  }
  const cJSON *ver = lm_json_get(j, "verified");
  if ((st = lm_json_bool(&rd, j, "verified", LM_JSON_OPTIONAL | LM_JSON_NULL_OK,
                         &verified)) != LM_OK)
    goto error;
  if (cJSON_IsBool(ver))
    r.verified = verified;
  for (const cJSON *e = j->child; e; e = e->next) {
    if (!e->string || is_std_field(e->string))
      continue;
    if (!r.extra && !(r.extra = cJSON_CreateObject())) {
      st = lm_error_set(err, LM_ESYS, "out of memory");
      goto error;
    }
    cJSON *copy = cJSON_Duplicate(e, 1);
    if (!copy || !cJSON_AddItemToObject(r.extra, e->string, copy)) {
      cJSON_Delete(copy);
      st = lm_error_set(err, LM_ESYS, "out of memory");
      goto error;
    }
  }
  *out = r;
  return LM_OK;
error:
  lm_record_free(&r);
  return st;
}

/* ---- files ------------------------------------------------------------------
 */

/* r as one line with its newline; malloc'ed. */
static lm_status record_line(const lm_record *r, char **line, size_t *n,
                             lm_error *err) {
  cJSON *j = NULL;
  lm_status st = lm_record_to_json(r, &j, err);
  if (st != LM_OK)
    return st;
  /* cJSON prints a double with 15 digits whenever that comes within an
   * epsilon of it; a record must read back the times it wrote */
  st = lm_json_exact(j, err);
  if (st == LM_OK)
    st = lm_json_print(j, false, line, n, err);
  cJSON_Delete(j);
  return st;
}

lm_status lm_records_append(const char *path, const lm_record *r,
                            lm_error *err) {
  char *line = NULL;
  size_t n = 0;
  lm_status st = record_line(r, &line, &n, err);
  if (st != LM_OK)
    return st;
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    st = lm_error_set(err, LM_ESYS, "%s: cannot append: %s", path,
                      strerror(errno));
    free(line);
    return st;
  }
  /* One write of the whole line: with O_APPEND the kernel places it at the
   * end in one piece.  A short write (full disk) leaves an unterminated
   * line that readers skip; it is reported, not completed. */
  ssize_t w;
  do
    w = write(fd, line, n);
  while (w < 0 && errno == EINTR);
  int e = errno;
  if (w == (ssize_t)n && fsync(fd) != 0) {
    e = errno;
    w = -1;
  }
  if (close(fd) != 0 && w == (ssize_t)n) {
    e = errno;
    w = -1;
  }
  free(line);
  if (w != (ssize_t)n)
    return lm_error_set(err, LM_ESYS, "%s: cannot append: %s", path,
                        w < 0 ? strerror(e) : "short write");
  return LM_OK;
}

void lm_records_free(lm_records *rs) {
  if (!rs)
    return;
  for (int i = 0; i < rs->n; i++)
    lm_record_free(&rs->r[i]);
  free(rs->r);
  memset(rs, 0, sizeof *rs);
}

static int push(lm_records *rs, int *cap, const lm_record *r) {
  if (rs->n == *cap) {
    int nc = *cap ? 2 * *cap : 16;
    lm_record *nr = realloc(rs->r, (size_t)nc * sizeof *nr);
    if (!nr)
      return 0;
    rs->r = nr;
    *cap = nc;
  }
  rs->r[rs->n++] = *r;
  return 1;
}

static lm_status records_parse(const char *path, char *text, size_t len,
                               lm_records *out, lm_error *err);

static int blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
      return 0;
  return 1;
}

lm_status lm_records_read(const char *path, lm_records *out, lm_error *err) {
  memset(out, 0, sizeof *out);
  char *text = NULL;
  size_t len = 0;
  lm_status st = lm_json_read_file(path, &text, &len, err);
  if (st != LM_OK)
    return st;
  return records_parse(path, text, len, out, err);
}

lm_status lm_records_from_text(const char *name, const char *text, size_t n,
                               lm_records *out, lm_error *err) {
  memset(out, 0, sizeof *out);
  char *copy = malloc(n + 1);
  if (!copy)
    return lm_error_set(err, LM_ESYS, "out of memory");
  memcpy(copy, text, n);
  copy[n] = 0;
  return records_parse(name, copy, n, out, err);
}

/* The records of text[0..len) (taken: freed here), read as the file path. */
static lm_status records_parse(const char *path, char *text, size_t len,
                               lm_records *out, lm_error *err) {
  lm_status st = LM_OK;
  lm_records rs = {0};
  int cap = 0, lineno = 0;
  size_t pos = 0;
  char *where = malloc(strlen(path) + 32);
  if (!where) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto error;
  }
  while (pos < len) {
    char *nl = memchr(text + pos, '\n', len - pos);
    size_t end = nl ? (size_t)(nl - text) : len;
    lineno++;
    if (!nl) {
      /* an interrupted append: everything up to its end is lost */
      if (!blank(text + pos, end - pos))
        rs.truncated = 1;
      break;
    }
    if (memchr(text + pos, 0, end - pos)) {
      st = lm_error_set(err, LM_EINPUT, "%s:%d: a NUL byte in the line", path,
                        lineno);
      goto error;
    }
    text[end] = 0;
    size_t linelen = end - pos;
    if (!blank(text + pos, linelen)) {
      sprintf(where, "%s:%d", path, lineno);
      cJSON *j = NULL;
      st = lm_json_parse_at(path, lineno, text + pos, linelen, &j, err);
      if (st != LM_OK)
        goto error;
      lm_record r;
      st = lm_record_from_json(j, where, &r, err);
      cJSON_Delete(j);
      if (st != LM_OK)
        goto error;
      if (!push(&rs, &cap, &r)) {
        lm_record_free(&r);
        st = lm_error_set(err, LM_ESYS, "out of memory");
        goto error;
      }
    }
    pos = end + 1;
  }
  free(where);
  free(text);
  *out = rs;
  return LM_OK;
error:
  free(where);
  free(text);
  lm_records_free(&rs);
  return st;
}

static lm_status records_text(const char *path, const lm_records *rs,
                              char **out, size_t *outn, lm_error *err);

lm_status lm_records_write(const char *path, const lm_records *rs,
                           lm_error *err) {
  char *buf = NULL;
  size_t len = 0;
  lm_status st = records_text(path, rs, &buf, &len, err);
  if (st == LM_OK)
    st = lm_file_write_atomic(path, buf ? buf : "", len, err);
  free(buf);
  return st;
}

lm_status lm_records_to_text(const lm_records *rs, char **out, size_t *n,
                             lm_error *err) {
  *out = NULL;
  *n = 0;
  lm_status st = records_text("records", rs, out, n, err);
  if (st == LM_OK && !*out && !(*out = calloc(1, 1)))
    st = lm_error_set(err, LM_ESYS, "out of memory");
  return st;
}

/* rs as JSON Lines into *out (malloc'ed, NULL if rs is empty); name is the
 * file's, for messages. */
static lm_status records_text(const char *path, const lm_records *rs,
                              char **out, size_t *outn, lm_error *err) {
  char *buf = NULL;
  size_t len = 0, cap = 0;
  lm_status st = LM_OK;
  for (int i = 0; i < rs->n; i++) {
    char *line = NULL;
    size_t n = 0;
    if ((st = record_line(&rs->r[i], &line, &n, err)) != LM_OK) {
      /* name the record that could not be written (lm_error_set may
       * quote the message it replaces) */
      if (err)
        lm_error_set(err, st, "%s: record %d: %s", path, i, err->msg);
      goto done;
    }
    if (len + n + 1 > cap) {
      size_t nc = cap ? 2 * cap : 4096;
      while (nc < len + n + 1)
        nc *= 2;
      char *nb = realloc(buf, nc);
      if (!nb) {
        free(line);
        st = lm_error_set(err, LM_ESYS, "out of memory");
        goto done;
      }
      buf = nb;
      cap = nc;
    }
    memcpy(buf + len, line, n);
    len += n;
    free(line);
  }
  if (buf)
    buf[len] = '\0'; /* room was kept for it */
  *out = buf;
  *outn = len;
  return LM_OK;
done:
  free(buf);
  return st;
}

/* ---- pick-best
 * --------------------------------------------------------------- */

static char *dup_opt(const char *s, int *ok) {
  if (!s)
    return NULL;
  char *d = strdup(s);
  if (!d)
    *ok = 0;
  return d;
}

static int record_copy(const lm_record *src, lm_record *dst) {
  int ok = 1;
  *dst = *src;
  dst->kernel = dup_opt(src->kernel, &ok);
  dst->kernel_hash = dup_opt(src->kernel_hash, &ok);
  dst->extra_syms = dup_opt(src->extra_syms, &ok);
  dst->variant = dup_opt(src->variant, &ok);
  dst->isa = dup_opt(src->isa, &ok);
  dst->fingerprint = dup_opt(src->fingerprint, &ok);
  dst->timestamp = dup_opt(src->timestamp, &ok);
  dst->times = NULL;
  dst->extra = NULL;
  if (src->ntimes > 0 && src->times) {
    dst->times = malloc((size_t)src->ntimes * sizeof *dst->times);
    if (dst->times)
      memcpy(dst->times, src->times, (size_t)src->ntimes * sizeof *dst->times);
    else
      ok = 0;
  }
  if (src->extra && !(dst->extra = cJSON_Duplicate(src->extra, 1)))
    ok = 0;
  if (!ok)
    lm_record_free(dst);
  return ok;
}

static int same_opt(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int same_key(const lm_record *a, const lm_record *b) {
  return a->R == b->R && a->C == b->C &&
         same_opt(a->kernel_hash, b->kernel_hash) &&
         same_opt(a->extra_syms, b->extra_syms);
}

lm_status lm_records_best(const lm_records *in, lm_records *out,
                          lm_error *err) {
  memset(out, 0, sizeof *out);
  int *pick = malloc((size_t)(in->n > 0 ? in->n : 1) * sizeof *pick);
  if (!pick)
    return lm_error_set(err, LM_ESYS, "out of memory");
  int nkeys = 0;
  for (int i = 0; i < in->n; i++) {
    const lm_record *r = &in->r[i];
    if (r->verified == 0 || !isfinite(r->median))
      continue;
    int k = 0;
    while (k < nkeys && !same_key(&in->r[pick[k]], r))
      k++;
    if (k == nkeys)
      pick[nkeys++] = i;
    else if (r->median < in->r[pick[k]].median)
      pick[k] = i;
  }
  lm_records rs = {0};
  if (nkeys > 0 && !(rs.r = calloc((size_t)nkeys, sizeof *rs.r))) {
    free(pick);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  for (int k = 0; k < nkeys; k++) {
    if (!record_copy(&in->r[pick[k]], &rs.r[k])) {
      free(pick);
      lm_records_free(&rs);
      return lm_error_set(err, LM_ESYS, "out of memory");
    }
    rs.n++;
  }
  free(pick);
  *out = rs;
  return LM_OK;
}
