/* lanemap records: one JSON Lines record per measurement, for pipelines
 * (DESIGN.md §13).
 *
 * A record says what was measured (kernel hash and name, shape, variant,
 * ISA target), on what (profile fingerprint), what the model predicted, and
 * what was measured, with hyperfine's field names for the times (seconds:
 * `mean`, `stddev`, `median`, `min`, `max`, `times`), and when.  One record
 * is one line of a `.jsonl` file, schema "lanemap.record/1"; appending a
 * record appends one whole line, so a file interrupted mid-write loses at
 * most its last, unterminated line, which readers report and skip.
 *
 * Callers may attach their own fields in `extra` (a JSON object, e.g. the
 * held-out case id and split): they are written at the top level of the
 * line next to the standard fields and read back into `extra`.
 *
 * Ownership: an lm_record owns its strings, its times and its extra object;
 * lm_record_free releases them.  Functions are thread-compatible: distinct
 * records may be used from distinct threads; appends to one file from
 * several threads or processes are whole-line atomic (O_APPEND, one write
 * per line). */
#ifndef LANEMAP_RECORDS_H
#define LANEMAP_RECORDS_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "lanemap/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LM_RECORD_SCHEMA "lanemap.record/1"
#define LM_RECORD_SCHEMA_MAJOR 1

typedef struct lm_record {
  char *kernel;      /* kernel name or path as the caller knows it */
  char *kernel_hash; /* lm_kernel_hash: 16 hex digits */
  int64_t R, C;      /* shape as [R, C] */
  char *extra_syms;  /* NULL or "H=33,..." */
  char *variant;     /* lm_variant string form */
  char *isa;         /* ISA target name */
  char *fingerprint; /* profile fingerprint hash, NULL if none */
  double predicted;  /* s per call, NAN if nothing was predicted */
  double mean, stddev, median, min, max; /* s per call, hyperfine's names */
  double *times;     /* [ntimes] s per call, one per sample */
  int ntimes;
  int verified;      /* 1 passed the oracle check, 0 failed, -1 not run */
  char *timestamp;   /* ISO 8601 UTC, "2026-01-31T12:00:00Z" */
  cJSON *extra;      /* NULL or an object of the caller's fields (owned) */
} lm_record;

/* A zeroed record (NAN times, verified -1).  In a file, a NAN time is an
 * absent field, and verified -1 an absent "verified" (true/false
 * otherwise). */
void lm_record_init(lm_record *r);
void lm_record_free(lm_record *r);
/* Set the times from samples in ns per call: mean, stddev, median, min,
 * max and times are filled (converted to seconds).  stddev is the sample
 * one (n - 1), NAN for one sample.  LM_EINPUT "times[i]: ..." for a
 * negative or non-finite sample, "times: no samples" for n <= 0. */
lm_status lm_record_set_samples(lm_record *r, const double *ns, int n,
                                lm_error *err);
/* Fill timestamp with the current UTC time. */
lm_status lm_record_stamp(lm_record *r, lm_error *err);

/* One record as a JSON object (caller owns it).  kernel, kernel_hash,
 * variant and isa are required; an extra field with a standard field's
 * name is LM_EINPUT ("extra.median: clashes with a standard field"). */
lm_status lm_record_to_json(lm_keep const lm_record *r, lm_give cJSON **out,
                            lm_error *err);
/* Parse one record.  where ("records.jsonl:12") prefixes errors, which name
 * the field: "records.jsonl:12: median: expected a number >= 0".  Schemas
 * of the same major version load ("lanemap.record/1.3"); fields that are
 * not standard go into extra.  *out is initialised even on failure. */
lm_status lm_record_from_json(lm_keep const cJSON *j, const char *where,
                              lm_record *out, lm_error *err);

/* Append r as one line to path (created if missing), in one write, then
 * fsync.  Numbers are written with the digits that read back exactly. */
lm_status lm_records_append(const char *path, lm_keep const lm_record *r,
                            lm_error *err);

/* All records of a file.  A last line without its newline (an interrupted
 * append) is skipped and counted in *truncated; blank lines are ignored;
 * any other bad line is an error naming path:line and the field.  A
 * missing file is LM_EINPUT. */
typedef struct lm_records {
  lm_record *r;
  int n;
  int truncated; /* unterminated last lines skipped (0 or 1) */
} lm_records;

lm_status lm_records_read(const char *path, lm_records *out, lm_error *err);
/* The same for the text[0..n) of a file called name (messages only). */
lm_status lm_records_from_text(const char *name, const char *text, size_t n,
                               lm_records *out, lm_error *err);
void lm_records_free(lm_records *rs);

/* Write rs to path atomically (temp + rename), one record per line. */
lm_status lm_records_write(const char *path, lm_keep const lm_records *rs,
                           lm_error *err);
/* The text lm_records_write writes, malloc'ed and NUL-terminated. */
lm_status lm_records_to_text(lm_keep const lm_records *rs, lm_give char **out,
                             size_t *n, lm_error *err);

/* Keep the best record (least median, verified != 0) per (kernel_hash,
 * shape, extra_syms), like TVM's pick-best; order of first appearance.
 * Records without a median never win; *out holds copies. */
lm_status lm_records_best(lm_keep const lm_records *in, lm_records *out,
                          lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
