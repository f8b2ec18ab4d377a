/* lanemap workload: what a pipeline runs, as the solver sees it
 * (DESIGN.md §11): kernels given as .lk files, per kernel the shapes it
 * runs with how often each runs, the ISA targets and worker counts the
 * variants may use, and the budgets.
 *
 * On disk a workload is one JSON file, schema "lanemap.workload/1"
 * (docs/solver.md has the format); kernel paths are relative to the
 * workload file's folder.  In code, lm_workload_new and the add/set calls
 * build the same value.  Loading names every malformed field as
 * "FILE: kernels[2].buckets[5].weight: expected ...".
 *
 * Ownership: a workload owns copies of every string set into it and the
 * kernels it loads (lm_workload_bind).  Pointers into it stay valid until
 * it is freed or the same kernel gains a bucket. */
#ifndef LANEMAP_WORKLOAD_H
#define LANEMAP_WORKLOAD_H

#include <stdint.h>

#include "lanemap/variant.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LM_WORKLOAD_SCHEMA "lanemap.workload/1"

/* Compile cost of one variant when the workload names none: the
 * compile-latency benchmark's median wall time per variant on x86-64-v4,
 * the middle of its per-kernel medians of 26 to 73 ms (docs/backend.md,
 * "Compile latency"). */
#define LM_COMPILE_MS_DEFAULT 40.0

/* Largest bucket count of one kernel and the largest R or C accepted. */
#define LM_WORKLOAD_MAX_BUCKETS 4096
#define LM_WORKLOAD_MAX_EXTENT (INT64_C(1) << 40)

/* One shape bucket: the shape (R, C) runs `weight` times per pipeline
 * step (any unit, the same for every kernel). */
typedef struct lm_workload_bucket {
  int64_t R, C;
  double weight; /* finite, >= 0 */
} lm_workload_bucket;

typedef struct lm_workload_kernel {
  char *path;     /* as written in the workload */
  char *resolved; /* against the workload's folder */
  char *extra;    /* NULL or extra symbols for every bucket, "H=64" */
  int max_variants; /* this kernel's cap; 0 = the workload's */
  double compile_ms; /* compile cost of each of its variants; < 0 = default */
  lm_workload_bucket *buckets; /* in the order given */
  int nbuckets;
  lm_kernel *k; /* loaded by lm_workload_bind, else NULL */
} lm_workload_kernel;

typedef struct lm_workload {
  char *name; /* the file, for messages ("<code>" when built in code) */
  char *dir;  /* folder kernel paths are relative to */
  lm_workload_kernel *kernels;
  int nkernels;
  lm_isa isa[LM_ISA__COUNT]; /* allowed targets, no repeats; default host */
  int nisa;
  int workers[8]; /* worker counts to enumerate; default {1} */
  int nworkers;
  lm_fp fp; /* floating-point mode of the variants (lm_enum_opts.fps):
               strict by default; relaxed enumerates the fp=relaxed variants
               of the kernels it changes, the strict ones of the others */
  int max_variants_per_kernel; /* 0 = no cap */
  double compile_budget_ms;    /* < 0 = no budget */
  int compile_budget_variants; /* < 0 = no budget; at most one of the two */
} lm_workload;

/* An empty workload: host ISA, workers {1}, no caps, no budgets.  dir is
 * the folder relative kernel paths resolve against (NULL: "."). */
lm_give lm_workload *lm_workload_new(const char *name, const char *dir,
                                     lm_error *err);
void lm_workload_free(lm_take lm_workload *w);

/* Add a kernel file (extra may be NULL); *index gets its index. */
lm_status lm_workload_add_kernel(lm_keep lm_workload *w, const char *path,
                                 const char *extra, int *index, lm_error *err);
/* Add a bucket to kernel ki.  R, C in [1, LM_WORKLOAD_MAX_EXTENT], weight
 * finite and >= 0, (R, C) not already a bucket of ki. */
lm_status lm_workload_add_bucket(lm_keep lm_workload *w, int ki, int64_t R,
                                 int64_t C, double weight, lm_error *err);
/* Add n buckets R_i = round(from · (to/from)^(i/(n-1))) at one C, with
 * weights[i] (NULL: all 1).  The R values must be distinct. */
lm_status lm_workload_add_geometric(lm_keep lm_workload *w, int ki, int64_t C,
                                    int64_t from, int64_t to, int n,
                                    const double *weights, lm_error *err);
/* Per-kernel cap (0: the workload's) and compile cost (< 0: default). */
lm_status lm_workload_set_kernel_opts(lm_keep lm_workload *w, int ki,
                                      int max_variants, double compile_ms,
                                      lm_error *err);
/* Replace the allowed ISA targets / worker counts (n >= 1, no repeats,
 * workers in [1, LM_MAX_WORKERS], at most 8 of them). */
lm_status lm_workload_set_isas(lm_keep lm_workload *w, const lm_isa *isa,
                               int n, lm_error *err);
lm_status lm_workload_set_workers(lm_keep lm_workload *w, const int *workers,
                                  int n, lm_error *err);
/* Budgets: cap 0 = none; budget_ms < 0 = none; variants < 0 = none.  A
 * budget in ms and one in variants together are LM_EINPUT. */
lm_status lm_workload_set_budgets(lm_keep lm_workload *w, int cap,
                                  double budget_ms, int budget_variants,
                                  lm_error *err);

/* Parse a workload from JSON text (need not be NUL-terminated); `name`
 * stands for the file in messages and dir is where kernel paths resolve.
 * Kernels are not loaded. */
lm_status lm_workload_from_json_text(const char *name, const char *dir,
                                     const char *text, size_t n,
                                     lm_give lm_workload **out, lm_error *err);
/* Load the kernels and check every bucket binds to its kernel
 * ("FILE: $.kernels[1].buckets[3]: ...").  Idempotent. */
lm_status lm_workload_bind(lm_keep lm_workload *w, lm_error *err);
/* Read, parse and bind a workload file. */
lm_status lm_workload_load(const char *path, lm_give lm_workload **out,
                           lm_error *err);
/* The workload as pretty JSON (one explicit bucket per entry), malloc'ed;
 * it parses back to an equal workload. */
lm_status lm_workload_to_json_text(lm_keep const lm_workload *w,
                                   lm_give char **out, lm_error *err);
/* Same kernels (paths, extra, options), buckets, targets and budgets. */
int lm_workload_equal(lm_keep const lm_workload *a,
                      lm_keep const lm_workload *b);
/* The bound shape of bucket b of kernel ki (after lm_workload_bind). */
lm_status lm_workload_shape(lm_keep const lm_workload *w, int ki, int b,
                            lm_shape *out, lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
