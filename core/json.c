/* The JSON layer (include/lanemap/json.h): strict parsing with positions,
 * typed reads that name a field by its path, exact numbers on write.
 *
 * cJSON parses; this file adds what a file format needs around it.  Before
 * cJSON sees the text, one scan finds what cJSON reports badly or not at
 * all: a NUL byte, nesting past the limit, and a text that ends inside a
 * value (cJSON points at the start of the value it could not finish, far
 * from the end of a file cut inside its last array).  After it, one walk of
 * the tree refuses duplicate keys.  Paths in messages are found from the
 * tree when a message is made: errors are rare, so the loaders pay nothing
 * for them. */
#define _GNU_SOURCE
#include "lanemap/json.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The longest path a message shows; a path is only ever a message. */
#define PATH_MAX_SHOWN 256
/* The longest key a path shows whole. */
#define KEY_SHOWN 64
/* The largest integer a double keeps exactly. */
#define INT53 (INT64_C(1) << 53)

/* ---- parsing ------------------------------------------------------------ */

static void line_col(const char *t, size_t at, int line0, int *line, int *col) {
  int l = line0, c = 1;
  for (size_t i = 0; i < at; i++, c++)
    if (t[i] == '\n')
      l++, c = 0;
  *line = l;
  *col = c;
}

/* What the scan before parsing found. */
typedef struct Scan {
  size_t nul; /* offset of the first NUL byte, or SIZE_MAX */
  size_t
      deep;  /* offset of the first bracket past the depth limit, or SIZE_MAX */
  bool open; /* the text ends inside a string, an object or an array */
} Scan;

static Scan scan(const char *t, size_t n) {
  Scan s = {SIZE_MAX, SIZE_MAX, false};
  long depth = 0;
  bool str = false, esc = false;
  for (size_t i = 0; i < n; i++) {
    char c = t[i];
    if (c == 0) {
      s.nul = i;
      return s;
    }
    if (str) {
      if (esc)
        esc = false;
      else if (c == '\\')
        esc = true;
      else if (c == '"')
        str = false;
    } else if (c == '"')
      str = true;
    else if (c == '{' || c == '[') {
      if (++depth > LM_JSON_MAX_DEPTH && s.deep == SIZE_MAX)
        s.deep = i;
    } else if (c == '}' || c == ']')
      depth--;
  }
  s.open = str || depth > 0;
  return s;
}

static lm_status dup_keys(const char *name, const cJSON *root, const cJSON *j,
                          lm_error *err);

static lm_status parse_text(const char *name, const char *label, int line0,
                            const char *text, size_t n, cJSON **out,
                            lm_error *err);

/* Parse; line0 > 0 for line line0 of a JSON Lines file, whose messages
 * without a column name the line ("name:line", the label). */
static lm_status parse(const char *name, int line0, const char *text, size_t n,
                       cJSON **out, lm_error *err) {
  *out = NULL;
  char *label = NULL;
  if (line0 > 0 ? asprintf(&label, "%s:%d", name, line0) < 0
                : !(label = strdup(name)))
    return lm_error_set(err, LM_ESYS, "%s: out of memory", name);
  if (line0 <= 0)
    line0 = 1;
  lm_status st = parse_text(name, label, line0, text, n, out, err);
  free(label);
  return st;
}

static lm_status parse_text(const char *name, const char *label, int line0,
                            const char *text, size_t n, cJSON **out,
                            lm_error *err) {
  int line, col;
  if (n > LM_JSON_MAX_BYTES)
    return lm_error_set(err, LM_EINPUT,
                        "%s: %zu bytes, more than the %zu MiB a JSON file may "
                        "hold",
                        label, n, LM_JSON_MAX_BYTES >> 20);
  size_t last = n;
  while (last > 0 && isspace((unsigned char)text[last - 1]))
    last--;
  if (last == 0)
    return lm_error_set(err, LM_EINPUT, "%s: empty file, expected a JSON value",
                        label);
  Scan s = scan(text, n);
  if (s.nul != SIZE_MAX) {
    line_col(text, s.nul, line0, &line, &col);
    return lm_error_set(err, LM_EINPUT, "%s:%d:%d: a NUL byte: not JSON text",
                        name, line, col);
  }
  if (s.deep != SIZE_MAX) {
    line_col(text, s.deep, line0, &line, &col);
    return lm_error_set(err, LM_EINPUT,
                        "%s:%d:%d: nested deeper than %d objects and arrays",
                        name, line, col, LM_JSON_MAX_DEPTH);
  }
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithLengthOpts(text, n, &end, false);
  size_t at = end && end >= text && end <= text + n ? (size_t)(end - text) : 0;
  const char *what = "invalid JSON";
  if (j) {
    if (at >= last) {
      lm_status st = dup_keys(label, j, j, err);
      if (st != LM_OK) {
        cJSON_Delete(j);
        return st;
      }
      *out = j;
      return LM_OK;
    }
    cJSON_Delete(j);
    what = "unexpected text after the JSON value";
    while (at < n && isspace((unsigned char)text[at]))
      at++;
  } else if (s.open)
    return lm_error_set(err, LM_EINPUT,
                        "%s: truncated JSON: the text ends inside an object, "
                        "an array or a string",
                        label);
  line_col(text, at, line0, &line, &col);
  return lm_error_set(err, LM_EINPUT, "%s:%d:%d: %s", name, line, col, what);
}

lm_status lm_json_parse(const char *name, const char *text, size_t n,
                        cJSON **out, lm_error *err) {
  return parse(name, 0, text, n, out, err);
}

lm_status lm_json_parse_at(const char *name, int line, const char *text,
                           size_t n, cJSON **out, lm_error *err) {
  return parse(name, line > 0 ? line : 1, text, n, out, err);
}

lm_status lm_json_read_file(const char *path, char **out, size_t *n,
                            lm_error *err) {
  return lm_file_read_max(path, LM_JSON_MAX_BYTES, "JSON file", out, n, err);
}

lm_status lm_json_load(const char *path, cJSON **out, lm_error *err) {
  *out = NULL;
  char *text;
  size_t n;
  lm_status s = lm_json_read_file(path, &text, &n, err);
  if (s != LM_OK)
    return s;
  s = lm_json_parse(path, text, n, out, err);
  free(text);
  return s;
}

/* ---- paths and messages ------------------------------------------------- */

typedef struct Buf {
  char *s;
  size_t n, len;
} Buf;

static void put(Buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(Buf *b, const char *fmt, ...) {
  if (b->len + 1 >= b->n)
    return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(b->s + b->len, b->n - b->len, fmt, ap);
  va_end(ap);
  if (w < 0)
    return;
  b->len += (size_t)w;
  if (b->len + 1 >= b->n) { /* cut: say so */
    b->len = b->n - 1;
    if (b->n > 4)
      memcpy(b->s + b->n - 4, "...", 4);
  }
}

/* ".key", with control bytes shown as '?' and a long key cut. */
static void put_key(Buf *b, const char *key) {
  char k[KEY_SHOWN + 4];
  size_t i = 0;
  for (; key[i] && i < KEY_SHOWN; i++)
    k[i] = (unsigned char)key[i] < 0x20 ? '?' : key[i];
  if (key[i])
    memcpy(k + i, "...", 3), i += 3;
  k[i] = 0;
  put(b, ".%s", k);
}

/* Append the path from j to target (j's own segment already written). */
static bool find(Buf *b, const cJSON *j, const cJSON *target) {
  if (j == target)
    return true;
  size_t mark = b->len;
  int i = 0;
  for (const cJSON *c = j->child; c; c = c->next, i++) {
    if (cJSON_IsObject(j))
      put_key(b, c->string ? c->string : "");
    else
      put(b, "[%d]", i);
    if (find(b, c, target))
      return true;
    b->len = mark;
    b->s[mark] = 0;
  }
  return false;
}

void lm_json_path(const lm_json_rd *r, const cJSON *parent, const char *key,
                  char *buf, size_t n) {
  if (n == 0)
    return;
  Buf b = {buf, n, 0};
  buf[0] = 0;
  put(&b, "$");
  if (parent && r->root && !find(&b, r->root, parent)) {
    b.len = 0;
    put(&b, "$");
  }
  if (key)
    put_key(&b, key);
}

void lm_json_describe(const cJSON *j, char *buf, size_t n) {
  if (!j)
    snprintf(buf, n, "nothing");
  else if (cJSON_IsNull(j))
    snprintf(buf, n, "null");
  else if (cJSON_IsTrue(j))
    snprintf(buf, n, "true");
  else if (cJSON_IsFalse(j))
    snprintf(buf, n, "false");
  else if (cJSON_IsNumber(j)) {
    char t[LM_JSON_NUM_LEN];
    lm_json_fmt_double(j->valuedouble, t);
    snprintf(buf, n, "%s%s", t,
             isinf(j->valuedouble) ? " (out of the range of a double)" : "");
  } else if (cJSON_IsString(j)) {
    /* enough to recognise the value; control bytes would garble a
     * terminal */
    enum { SHOWN = 40 };
    const char *s = j->valuestring;
    size_t len = strlen(s), k = 0;
    char t[SHOWN + 1];
    for (; k < len && k < SHOWN; k++)
      t[k] = (unsigned char)s[k] < 0x20 ? '?' : s[k];
    t[k] = 0;
    if (len > 4 * SHOWN)
      snprintf(buf, n, "a string of %zu bytes", len);
    else
      snprintf(buf, n, "\"%s\"%s", t, len > SHOWN ? "..." : "");
  } else if (cJSON_IsArray(j)) {
    int k = cJSON_GetArraySize(j);
    snprintf(buf, n, "an array of %d element%s", k, k == 1 ? "" : "s");
  } else if (cJSON_IsObject(j))
    snprintf(buf, n, "an object");
  else
    snprintf(buf, n, "an invalid value");
}

lm_status lm_json_error(lm_json_rd *r, const cJSON *parent, const char *key,
                        const char *fmt, ...) {
  char path[PATH_MAX_SHOWN], *msg = NULL;
  lm_json_path(r, parent, key, path, sizeof path);
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(&msg, fmt, ap); /* whole: lm_error_set keeps its tail */
  va_end(ap);
  if (n < 0)
    return lm_error_set(r->err, LM_ESYS, "%s: %s: out of memory", r->file,
                        path);
  lm_status s =
      lm_error_set(r->err, LM_EINPUT, "%s: %s: %s", r->file, path, msg);
  free(msg);
  return s;
}

/* The value in the slot (parent, key). */
static const cJSON *slot(const cJSON *parent, const char *key) {
  return key ? lm_json_get(parent, key) : parent;
}

lm_status lm_json_expected(lm_json_rd *r, const cJSON *parent, const char *key,
                           const char *what) {
  const cJSON *j = slot(parent, key);
  if (!j)
    return lm_json_error(r, parent, key, "missing field, expected %s", what);
  char got[96];
  lm_json_describe(j, got, sizeof got);
  return lm_json_error(r, parent, key, "expected %s, got %s", what, got);
}

const cJSON *lm_json_get(const cJSON *obj, const char *key) {
  if (!cJSON_IsObject(obj))
    return NULL;
  for (const cJSON *c = obj->child; c; c = c->next)
    if (c->string && strcmp(c->string, key) == 0)
      return c;
  return NULL;
}

lm_status lm_json_fields(lm_json_rd *r, const cJSON *obj,
                         const char *const known[]) {
  for (const cJSON *c = obj ? obj->child : NULL; c; c = c->next) {
    bool ok = false;
    for (int i = 0; known[i] && !ok; i++)
      ok = c->string && strcmp(c->string, known[i]) == 0;
    if (!ok) {
      char k[KEY_SHOWN + 4];
      Buf b = {k, sizeof k, 0};
      put_key(&b, c->string ? c->string : "");
      return lm_json_error(r, obj, NULL, "unknown field \"%s\"", k + 1);
    }
  }
  return LM_OK;
}

/* ---- duplicate keys -------------------------------------------------------
 */

typedef struct Key {
  const char *s;
  int at;
} Key;

static int key_cmp(const void *a, const void *b) {
  const Key *x = a, *y = b;
  int c = strcmp(x->s, y->s);
  return c ? c : (x->at > y->at) - (x->at < y->at);
}

/* The member of object j that repeats an earlier key (the first such in
 * document order), or NULL.  Large objects are sorted, so a hostile object
 * of many keys costs n log n, not n^2. */
static const cJSON *dup_in(const cJSON *j, bool *oom) {
  int n = 0;
  for (const cJSON *c = j->child; c; c = c->next)
    n++;
  if (n < 2)
    return NULL;
  if (n <= 16) {
    for (const cJSON *c = j->child; c; c = c->next)
      for (const cJSON *d = j->child; d != c; d = d->next)
        if (c->string && d->string && strcmp(c->string, d->string) == 0)
          return c;
    return NULL;
  }
  Key *k = malloc(sizeof *k * (size_t)n);
  const cJSON **item = malloc(sizeof *item * (size_t)n);
  if (!k || !item) {
    free(k);
    free(item);
    *oom = true;
    return NULL;
  }
  int i = 0;
  for (const cJSON *c = j->child; c; c = c->next, i++) {
    k[i] = (Key){c->string ? c->string : "", i};
    item[i] = c;
  }
  qsort(k, (size_t)n, sizeof *k, key_cmp);
  int first = -1;
  for (i = 1; i < n; i++)
    if (strcmp(k[i].s, k[i - 1].s) == 0 && (first < 0 || k[i].at < first))
      first = k[i].at;
  const cJSON *c = first >= 0 ? item[first] : NULL;
  free(k);
  free(item);
  return c;
}

static lm_status dup_keys(const char *name, const cJSON *root, const cJSON *j,
                          lm_error *err) {
  if (cJSON_IsObject(j)) {
    bool oom = false;
    const cJSON *d = dup_in(j, &oom);
    if (oom)
      return lm_error_set(err, LM_ESYS, "%s: out of memory", name);
    if (d) {
      lm_json_rd r = {name, root, err};
      return lm_json_error(&r, d, NULL, "given twice");
    }
  }
  for (const cJSON *c = j->child; c; c = c->next) {
    lm_status s = dup_keys(name, root, c, err);
    if (s != LM_OK)
      return s;
  }
  return LM_OK;
}

/* ---- typed reads ------------------------------------------------------- */

/* Is the slot empty and is that fine?  Then the read stores nothing. */
static bool absent_ok(const cJSON *j, int flags) {
  return (!j && (flags & LM_JSON_OPTIONAL)) ||
         (cJSON_IsNull(j) && (flags & LM_JSON_NULL_OK));
}

/* "WHAT", ", or null" when null is fine. */
static const char *or_null(char *buf, size_t n, const char *what, int flags) {
  snprintf(buf, n, "%s%s", what, flags & LM_JSON_NULL_OK ? ", or null" : "");
  return buf;
}

lm_status lm_json_object(lm_json_rd *r, const cJSON *parent, const char *key,
                         int flags, const cJSON **out) {
  const cJSON *j = slot(parent, key);
  char what[64];
  if (absent_ok(j, flags))
    return LM_OK;
  if (!cJSON_IsObject(j))
    return lm_json_expected(r, parent, key,
                            or_null(what, sizeof what, "an object", flags));
  *out = j;
  return LM_OK;
}

lm_status lm_json_array(lm_json_rd *r, const cJSON *parent, const char *key,
                        int flags, int min, int max, const cJSON **out) {
  const cJSON *j = slot(parent, key);
  if (absent_ok(j, flags))
    return LM_OK;
  int n = cJSON_IsArray(j) ? cJSON_GetArraySize(j) : -1;
  if (n >= min && n <= max) {
    *out = j;
    return LM_OK;
  }
  char what[96], w2[112];
  if (min <= 0 && max == INT32_MAX)
    snprintf(what, sizeof what, "an array");
  else if (min == 1 && max == INT32_MAX)
    snprintf(what, sizeof what, "a non-empty array");
  else if (min == max)
    snprintf(what, sizeof what, "an array of %d element%s", min,
             min == 1 ? "" : "s");
  else if (max == INT32_MAX)
    snprintf(what, sizeof what, "an array of at least %d elements", min);
  else
    snprintf(what, sizeof what, "an array of %d to %d elements", min, max);
  return lm_json_expected(r, parent, key, or_null(w2, sizeof w2, what, flags));
}

lm_status lm_json_string(lm_json_rd *r, const cJSON *parent, const char *key,
                         int flags, size_t max, const char **out) {
  const cJSON *j = slot(parent, key);
  if (absent_ok(j, flags))
    return LM_OK;
  bool empty_ok = flags & LM_JSON_EMPTY_OK;
  if (cJSON_IsString(j) && (empty_ok || j->valuestring[0]) &&
      (!max || strlen(j->valuestring) <= max)) {
    *out = j->valuestring;
    return LM_OK;
  }
  char what[96], w2[112];
  int w =
      snprintf(what, sizeof what, "a %sstring", empty_ok ? "" : "non-empty ");
  if (max)
    snprintf(what + w, sizeof what - (size_t)w, " of at most %zu bytes", max);
  return lm_json_expected(r, parent, key, or_null(w2, sizeof w2, what, flags));
}

/* A bound as text: "2^40" for a large power of two, else the number. */
static void fmt_bound(double v, char buf[LM_JSON_NUM_LEN]) {
  int e;
  if (v >= 1048576 && v < 1e300 && frexp(v, &e) == 0.5)
    snprintf(buf, LM_JSON_NUM_LEN, "2^%d", e - 1);
  else if (v == floor(v) && fabs(v) < 9007199254740992.0)
    snprintf(buf, LM_JSON_NUM_LEN, "%.0f", v);
  else
    lm_json_fmt_double(v, buf);
}

lm_status lm_json_number(lm_json_rd *r, const cJSON *parent, const char *key,
                         int flags, double lo, double hi, double *out) {
  const cJSON *j = slot(parent, key);
  if (absent_ok(j, flags))
    return LM_OK;
  if (cJSON_IsNumber(j) && isfinite(j->valuedouble) && j->valuedouble >= lo &&
      j->valuedouble <= hi) {
    *out = j->valuedouble;
    return LM_OK;
  }
  char what[96], w2[112], a[LM_JSON_NUM_LEN], b[LM_JSON_NUM_LEN];
  fmt_bound(lo, a);
  fmt_bound(hi, b);
  bool nolo = lo <= -DBL_MAX, nohi = hi >= DBL_MAX;
  if (nolo && nohi)
    snprintf(what, sizeof what, "a finite number");
  else if (nohi)
    snprintf(what, sizeof what, "a finite number >= %s", a);
  else if (nolo)
    snprintf(what, sizeof what, "a finite number <= %s", b);
  else
    snprintf(what, sizeof what, "a number from %s to %s", a, b);
  return lm_json_expected(r, parent, key, or_null(w2, sizeof w2, what, flags));
}

lm_status lm_json_int(lm_json_rd *r, const cJSON *parent, const char *key,
                      int flags, int64_t lo, int64_t hi, int64_t *out) {
  const cJSON *j = slot(parent, key);
  if (absent_ok(j, flags))
    return LM_OK;
  if (hi > INT53)
    hi = INT53;
  double v = cJSON_IsNumber(j) ? j->valuedouble : NAN;
  if (v >= (double)lo && v <= (double)hi && v == floor(v)) {
    *out = (int64_t)v;
    return LM_OK;
  }
  char what[96], w2[112], a[LM_JSON_NUM_LEN], b[LM_JSON_NUM_LEN];
  fmt_bound((double)lo, a);
  fmt_bound((double)hi, b);
  if (hi == INT53 && lo == 1)
    snprintf(what, sizeof what, "a positive integer");
  else if (hi == INT53)
    snprintf(what, sizeof what, "an integer >= %s", a);
  else
    snprintf(what, sizeof what, "an integer from %s to %s", a, b);
  return lm_json_expected(r, parent, key, or_null(w2, sizeof w2, what, flags));
}

lm_status lm_json_bool(lm_json_rd *r, const cJSON *parent, const char *key,
                       int flags, bool *out) {
  const cJSON *j = slot(parent, key);
  char what[64];
  if (absent_ok(j, flags))
    return LM_OK;
  if (!cJSON_IsBool(j))
    return lm_json_expected(r, parent, key,
                            or_null(what, sizeof what, "true or false", flags));
  *out = cJSON_IsTrue(j);
  return LM_OK;
}

/* ---- writing ---------------------------------------------------------------
 */

void lm_json_fmt_double(double v, char buf[LM_JSON_NUM_LEN]) {
  if (isnan(v)) {
    strcpy(buf, "nan");
    return;
  }
  if (isinf(v)) {
    strcpy(buf, v > 0 ? "inf" : "-inf");
    return;
  }
  if (v == floor(v) && fabs(v) < 1e15) /* an integer: its digits */
    snprintf(buf, LM_JSON_NUM_LEN, "%.0f", v);
  else
    for (int prec = 1; prec <= 17; prec++) {
      snprintf(buf, LM_JSON_NUM_LEN, "%.*g", prec, v);
      if (strtod(buf, NULL) == v)
        break;
    }
  char dp = localeconv()->decimal_point[0];
  if (dp != '.')
    for (char *s = buf; *s; s++)
      if (*s == dp)
        *s = '.';
}

cJSON *lm_json_num(double v) {
  if (!isfinite(v))
    return cJSON_CreateNull();
  char text[LM_JSON_NUM_LEN];
  lm_json_fmt_double(v, text);
  return cJSON_CreateRaw(text);
}

lm_status lm_json_exact(cJSON *j, lm_error *err) {
  for (cJSON *c = j->child; c; c = c->next) {
    lm_status s = lm_json_exact(c, err);
    if (s != LM_OK)
      return s;
  }
  if (!cJSON_IsNumber(j))
    return LM_OK;
  int keep = j->type & (cJSON_StringIsConst | cJSON_IsReference);
  if (!isfinite(j->valuedouble)) {
    j->type = cJSON_NULL | keep;
    return LM_OK;
  }
  char text[LM_JSON_NUM_LEN];
  lm_json_fmt_double(j->valuedouble, text);
  char *raw = cJSON_malloc(strlen(text) + 1);
  if (!raw)
    return lm_error_set(err, LM_ESYS, "out of memory");
  strcpy(raw, text);
  j->type = cJSON_Raw | keep;
  j->valuestring = raw;
  return LM_OK;
}

lm_status lm_json_print(const cJSON *j, bool pretty, char **out, size_t *n,
                        lm_error *err) {
  *out = NULL;
  char *t = pretty ? cJSON_Print(j) : cJSON_PrintUnformatted(j);
  if (!t)
    return lm_error_set(err, LM_ESYS, "out of memory");
  size_t len = strlen(t);
  char *s = malloc(len + 2);
  if (!s) {
    cJSON_free(t);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  memcpy(s, t, len);
  s[len] = '\n';
  s[len + 1] = 0;
  cJSON_free(t);
  *out = s;
  if (n)
    *n = len + 1;
  return LM_OK;
}

lm_status lm_json_save(const char *path, const cJSON *j, lm_error *err) {
  char *t;
  size_t n;
  lm_status s = lm_json_print(j, true, &t, &n, err);
  if (s != LM_OK)
    return s;
  s = lm_file_write_atomic(path, t, n, err);
  free(t);
  return s;
}
