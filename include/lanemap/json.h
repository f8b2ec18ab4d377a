/* lanemap JSON: the one layer through which every lanemap file is read and
 * written (profiles, plans, workloads, case lists, records), over cJSON.
 *
 * Reading has two steps.  lm_json_parse turns text into a tree and refuses
 * what cJSON would let through or report badly: a file too large, nesting
 * too deep, a NUL byte, text after the value, and a key given twice in one
 * object (which one counts would be cJSON's choice, not the author's).
 * Syntax errors name `file:line:col`; a text cut off inside a value says
 * so.  Then a loader walks the tree with the typed reads below, which
 * check a field's type and range and name it by its JSON path when it is
 * wrong:
 *
 *   plan.json: $.kernels[2].buckets[0].R: expected a positive integer, got true
 *
 * The path is found from the tree itself when a message is made, so a
 * loader keeps no path of its own.  lm_json_fields refuses fields a format
 * does not define, so that a misspelt option fails instead of being
 * ignored.
 *
 * Writing: a double is written as the shortest text that reads back as
 * the same double (cJSON's own printer keeps 15 digits whenever they come
 * within an epsilon, which loses the last bits of measured times). */
#ifndef LANEMAP_JSON_H
#define LANEMAP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "lanemap/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The largest JSON file read: far above any real one (a profile is tens
 * of KB, the records of a full held-out run a few MB), and small enough
 * that an endless input (/dev/zero) is refused after a bounded read. */
#define LM_JSON_MAX_BYTES ((size_t)256 << 20)
/* The deepest nesting of objects and arrays: lanemap's own formats need 7
 * (a plan's threshold runs), the rest is room for a record's or profile's
 * extension objects.  It keeps the recursive walks bounded, and is far
 * below cJSON's own limit (1000), so the message is ours and names the
 * limit. */
#define LM_JSON_MAX_DEPTH 64
/* Room for the text of any double from lm_json_fmt_double. */
#define LM_JSON_NUM_LEN 32

/* ---- parsing ---------------------------------------------------------- */

/* Parse the JSON document text[0..n) of the file called name (used in
 * messages only).  On success *out is a tree the caller frees with
 * cJSON_Delete. */
lm_status lm_json_parse(const char *name, const char *text, size_t n,
                        lm_give cJSON **out, lm_error *err);
/* The same for line `line` of the JSON Lines file name: positions in
 * messages are the file's, and a message without one names the line
 * (`name:line: ...`). */
lm_status lm_json_parse_at(const char *name, int line, const char *text,
                           size_t n, lm_give cJSON **out, lm_error *err);
/* Read the file at path, refusing one larger than LM_JSON_MAX_BYTES; *out
 * is NUL-terminated and malloc'ed. */
lm_status lm_json_read_file(const char *path, lm_give char **out, size_t *n,
                            lm_error *err);
/* lm_json_read_file, then lm_json_parse. */
lm_status lm_json_load(const char *path, lm_give cJSON **out, lm_error *err);

/* ---- typed reads ------------------------------------------------------- */

/* A reader: the file name for messages, the root of the tree (paths are
 * found from it) and the error to fill. */
typedef struct lm_json_rd {
  const char *file;
  const cJSON *root;
  lm_error *err;
} lm_json_rd;

/* Flags of the typed reads. */
enum {
  LM_JSON_OPTIONAL = 1, /* absent is fine: *out is left as it is */
  LM_JSON_NULL_OK = 2,  /* null is fine: *out is left as it is */
  LM_JSON_EMPTY_OK = 4, /* a string may be "" */
};

/* Every typed read names a slot by (parent, key): the member key of the
 * object parent, or, with key NULL, parent itself (an array element, the
 * root).  It checks the value and either stores it in *out or fails with
 * `file: PATH: expected WHAT, got VALUE` (or `missing field`). */
lm_status lm_json_object(lm_json_rd *r, const cJSON *parent, const char *key,
                         int flags, const cJSON **out);
/* An array of min to max elements. */
lm_status lm_json_array(lm_json_rd *r, const cJSON *parent, const char *key,
                        int flags, int min, int max, const cJSON **out);
/* A string of at most max bytes (0: any length), not empty unless
 * LM_JSON_EMPTY_OK.  *out points into the tree. */
lm_status lm_json_string(lm_json_rd *r, const cJSON *parent, const char *key,
                         int flags, size_t max, const char **out);
/* A finite number in [lo, hi]. */
lm_status lm_json_number(lm_json_rd *r, const cJSON *parent, const char *key,
                         int flags, double lo, double hi, double *out);
/* An integer in [lo, hi]; hi at most 2^53, the largest a double keeps. */
lm_status lm_json_int(lm_json_rd *r, const cJSON *parent, const char *key,
                      int flags, int64_t lo, int64_t hi, int64_t *out);
lm_status lm_json_bool(lm_json_rd *r, const cJSON *parent, const char *key,
                       int flags, bool *out);

/* Refuse a member of obj whose name is not in known (NULL-terminated):
 * `file: PATH: unknown field "x"`. */
lm_status lm_json_fields(lm_json_rd *r, const cJSON *obj,
                         const char *const known[]);
/* obj's member key, or NULL (also when obj is not an object). */
const cJSON *lm_json_get(const cJSON *obj, const char *key);

/* Fail at the slot (parent, key): `file: PATH: MESSAGE`. */
lm_status lm_json_error(lm_json_rd *r, const cJSON *parent, const char *key,
                        const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Fail at the slot with `expected WHAT, got VALUE`, or `missing field,
 * expected WHAT` when the slot is empty. */
lm_status lm_json_expected(lm_json_rd *r, const cJSON *parent, const char *key,
                           const char *what);
/* The JSON path of the slot (parent, key) in r's tree, "$.a[2].b"; cut
 * with "..." if longer than n. */
void lm_json_path(const lm_json_rd *r, const cJSON *parent, const char *key,
                  char *buf, size_t n);
/* A short description of a value for messages: `true`, `-0.5`,
 * `"abc"`, `an array of 3 elements`, `a string of 6000 bytes`. */
void lm_json_describe(const cJSON *j, char *buf, size_t n);

/* ---- writing ----------------------------------------------------------- */

/* The shortest text that reads back as exactly v, with '.' whatever the
 * locale; "nan", "inf" and "-inf" for the values JSON cannot hold. */
void lm_json_fmt_double(double v, char buf[LM_JSON_NUM_LEN]);
/* A number item that prints as lm_json_fmt_double's text; null if v is
 * not finite.  NULL when out of memory. */
lm_give cJSON *lm_json_num(double v);
/* Turn every number under j into its exact text (non-finite ones into
 * null), for a tree built with cJSON_CreateNumber or parsed. */
lm_status lm_json_exact(cJSON *j, lm_error *err);
/* j as text: indented (pretty) or on one line, with a final newline. */
lm_status lm_json_print(const cJSON *j, bool pretty, lm_give char **out,
                        size_t *n, lm_error *err);
/* j, indented, written atomically to path. */
lm_status lm_json_save(const char *path, const cJSON *j, lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
