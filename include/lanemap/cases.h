/* lanemap case lists: the (kernel, shape) cases a study runs.
 *
 * Two schemas share one loader: "lanemap.suite/1" (kernels/suite.json, the
 * visible cases) and "lanemap.cases/1" (heldout/cases.json, which adds a
 * "split" per case: "operator" or "shape").  Each case has an id unique in
 * its list, a kernel file relative to the list's folder (so a list and its
 * kernels move together), a shape [R, C] -- R instances, C the second dim
 * of the kernel's first 2-D buffer -- and optional "extra" symbols
 * ("H=33"), and an optional "time": variant strings the oracle of
 * `lanemap evaluate` times in its first screening round whatever its split
 * pruning would do (a deployment lists the variants its plans run there;
 * each must parse as a variant, and one of the evaluated ISA target must
 * be a legal variant of the case).  A malformed list names the offending field, e.g.
 * `cases.json: $.cases[3].shape: expected [R, C], two positive integers,
 * got ...`; a field the format does not define is an error (notes go in
 * "about").
 *
 * Ownership: a list owns its cases; the strings a case points to live as
 * long as the list. */
#ifndef LANEMAP_CASES_H
#define LANEMAP_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "lanemap/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lm_case {
  const char *id;    /* unique in the list */
  const char *split; /* "operator", "shape", or NULL (suite lists) */
  const char *kernel; /* path resolved against the list's folder */
  int64_t R, C;
  const char *extra; /* NULL or "H=33,..." */
  const char **time; /* [ntime] variant strings always timed, or NULL */
  int ntime;
} lm_case;

typedef struct lm_cases {
  int n;
  lm_case *c;   /* [n] */
  char *dir;    /* folder of the list file */
  void *owner;  /* what the strings live in */
} lm_cases;

/* Load a case list of either schema. */
lm_status lm_cases_load(const char *path, lm_cases *out, lm_error *err);
/* The same for the text[0..n) of a list called name (messages only),
 * whose kernel paths are relative to dir. */
lm_status lm_cases_from_json_text(const char *name, const char *dir,
                                  const char *text, size_t n, lm_cases *out,
                                  lm_error *err);
void lm_cases_free(lm_cases *cs);

/* Keep shard i of n: the i-th of n contiguous blocks of near-equal size,
 * so the cases of one kernel, which the list keeps together, mostly stay in
 * one shard and compile once.  LM_EINPUT unless 0 <= i < n. */
lm_status lm_cases_shard(lm_cases *cs, int i, int n, lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
