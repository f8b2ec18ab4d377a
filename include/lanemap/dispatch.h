/* lanemap dispatch: launch a kernel by shape through a plan
 * (DESIGN.md §11, docs/solver.md "Dispatch").
 *
 * lm_dispatch_new loads the plan's kernel files (checking each against the
 * hash in the plan), compiles every planned variant with the JIT, and
 * builds per kernel the lookup from a shape (R, C) to a variant:
 *
 *   - a bucket with the same C and R is an exact match;
 *   - same C, R between the smallest and the largest bucket R at that C:
 *     threshold plans take the run whose from_R is the largest <= R; other
 *     plans take the bucket nearest in log R (a tie goes to the larger R);
 *   - otherwise the shape is outside every bucket, and falls back to the
 *     nearest bucket: the same C if the kernel has it, nearest in log R;
 *     else the nearest C in log C, then the nearest R in log R.  The match
 *     is reported as LM_DISPATCH_FALLBACK with the bucket used.
 *
 * lm_dispatch_emit writes the same plan ahead of time: one object file with
 * every planned variant's entry, and one C header declaring them with, per
 * kernel, a static inline dispatch function by shape that follows the same
 * rules.
 *
 * Thread safety: lm_dispatch_new and lm_dispatch_free must not race with
 * other calls on the same dispatch.  lm_dispatch_lookup, lm_dispatch_find,
 * the getters and lm_dispatch_launch only read the dispatch and may run
 * from any number of threads at once; launches with workers > 1 share the
 * pool, whose lock serialises them (lanemap/runtime.h), and single-worker
 * launches run inline on the calling thread. */
#ifndef LANEMAP_DISPATCH_H
#define LANEMAP_DISPATCH_H

#include "lanemap/backend.h"
#include "lanemap/plan.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lm_dispatch lm_dispatch;

typedef struct lm_dispatch_opts {
  lm_pool *pool;             /* pool for multi-worker variants; NULL: shared */
  lm_compile_opts compile;   /* for every variant */
  int check_hash;            /* 1: a kernel file that changed is LM_EINPUT */
} lm_dispatch_opts;
void lm_dispatch_defaults(lm_dispatch_opts *o); /* shared pool, O3, check */

typedef enum lm_dispatch_match {
  LM_DISPATCH_EXACT = 0,    /* the shape is a bucket */
  LM_DISPATCH_BETWEEN = 1,  /* same C, R inside the buckets' range */
  LM_DISPATCH_FALLBACK = 2, /* outside every bucket: nearest bucket */
} lm_dispatch_match;

const char *lm_dispatch_match_name(lm_dispatch_match m); /* "exact", ... */

/* What a lookup chose; always filled when the call returns LM_OK. */
typedef struct lm_dispatch_info {
  int kernel;              /* index in the plan */
  int bucket;              /* the bucket whose variant runs (plan order) */
  int variant;             /* index into the kernel's planned variants */
  lm_dispatch_match match;
  int64_t bucket_R, bucket_C;
  const char *variant_name; /* borrowed from the dispatch */
} lm_dispatch_info;

/* Compile the plan.  LM_EINPUT for a kernel file that is missing, does not
 * parse or (with check_hash) differs from the plan's hash, and for a
 * variant that is illegal for its kernel or targets an ISA this machine
 * cannot run; LM_ESYS when LLVM fails.  The
 * dispatch copies what it needs from plan. */
lm_status lm_dispatch_new(lm_keep const lm_plan *plan,
                          const lm_dispatch_opts *o, lm_give lm_dispatch **out,
                          lm_error *err);
void lm_dispatch_free(lm_take lm_dispatch *d);

int lm_dispatch_nkernels(lm_keep const lm_dispatch *d);
/* Index of the kernel named `name`, or -1. */
int lm_dispatch_find(lm_keep const lm_dispatch *d, const char *name);
const lm_kernel *lm_dispatch_kernel(lm_keep const lm_dispatch *d, int kernel);
int lm_dispatch_nvariants(lm_keep const lm_dispatch *d, int kernel);
const lm_compiled *lm_dispatch_compiled(lm_keep const lm_dispatch *d,
                                        int kernel, int variant);
/* Sum of lm_compiled_ms over every compiled variant, and their count. */
double lm_dispatch_compile_ms(lm_keep const lm_dispatch *d, int *nvariants);

/* The variant a shape runs, without launching.  LM_EINPUT for a kernel
 * index out of range or R, C < 1. */
lm_status lm_dispatch_lookup(lm_keep const lm_dispatch *d, int kernel,
                             int64_t R, int64_t C, lm_dispatch_info *info,
                             lm_error *err);
/* The same lookup on a plan, without compiling anything: which variant of
 * plan kernel `kernel` a shape would run (info->variant_name borrows from
 * plan).  Evaluations that price many plans at many shapes use it; a
 * dispatch made from the plan answers the same. */
lm_status lm_plan_lookup(lm_keep const lm_plan *plan, int kernel, int64_t R,
                         int64_t C, lm_dispatch_info *info, lm_error *err);
/* Look the shape up and run its variant over R instances with the packed
 * args (lm_args_pack of data of that shape).  info may be NULL. */
lm_status lm_dispatch_launch(lm_keep const lm_dispatch *d, int kernel,
                             int64_t R, int64_t C, const uint64_t *args,
                             lm_dispatch_info *info, lm_error *err);

/* Ahead of time: one object with the entry of every planned variant,
 * named PREFIX_<kernel>_v<i>, and a header declaring them with, per
 * kernel, `lm_entry_fn PREFIX_<kernel>_dispatch(int64_t R, int64_t C,
 * int *match)` (match gets an lm_dispatch_match value; may be NULL).
 * Every variant of the plan must target one ISA. */
lm_status lm_dispatch_emit(lm_keep const lm_plan *plan, const char *prefix,
                           const char *obj_path, const char *header_path,
                           lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
