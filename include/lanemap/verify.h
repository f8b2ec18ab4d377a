/* lanemap verification harness: run a compiled variant on seeded inputs and
 * compare every output against the FP64 oracle, with 64-byte guards before
 * and after each output buffer compared byte for byte, sentinels in the
 * elements the kernel must not write, and a check that no input changed. */
#ifndef LANEMAP_VERIFY_H
#define LANEMAP_VERIFY_H

#include "lanemap/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LM_GUARD_BYTES 64
#define LM_GUARD_BYTE 0x5A

typedef struct lm_verify_result {
  int64_t mismatches;      /* output elements outside tolerance or sentinel */
  int64_t guard_bad;       /* guard bytes changed */
  int inputs_changed;      /* an input buffer was written */
  lm_compare_result cmp;   /* details of the first mismatch */
} lm_verify_result;

/* Run c over all instances of d (inputs from lm_data_gen) and check it
 * against o.  Returns LM_OK when everything holds, LM_EFAIL with a message
 * naming the first broken property otherwise.  d's buffers are unchanged
 * afterwards (outputs hold the variant's results; an input the variant
 * wrote is restored). */
lm_status lm_verify(lm_keep const lm_kernel *k, lm_keep const lm_compiled *c,
                    lm_keep lm_data *d, lm_keep const lm_oracle *o,
                    lm_keep lm_pool *pool, lm_verify_result *res,
                    lm_error *err);

/* A verifier of many variants on one data set: the guarded output buffers
 * and a copy of d's inputs are made once, by lm_verifier_new, and each
 * lm_verifier_run is lm_verify's check of one variant on them.  An input
 * a variant wrote fails that variant and is restored from the copy before
 * the next run.  k, d and o must outlive the verifier. */
typedef struct lm_verifier lm_verifier;
lm_status lm_verifier_new(lm_keep const lm_kernel *k, lm_keep lm_data *d,
                          lm_keep const lm_oracle *o, lm_give lm_verifier **out,
                          lm_error *err);
lm_status lm_verifier_run(lm_verifier *v, lm_keep const lm_compiled *c,
                          lm_keep lm_pool *pool, lm_verify_result *res,
                          lm_error *err);
/* The same for a native entry, as lm_verify_entry runs it. */
lm_status lm_verifier_run_entry(lm_verifier *v, lm_entry_fn fn,
                                lm_verify_result *res, lm_error *err);
void lm_verifier_free(lm_verifier *v);

/* The same check for any native entry with the lanemap ABI (hand-written
 * comparison kernels, ahead-of-time objects): fn(args, 0, R) runs once on
 * the calling thread. */
lm_status lm_verify_entry(lm_keep const lm_kernel *k, lm_entry_fn fn,
                          lm_keep lm_data *d, lm_keep const lm_oracle *o,
                          lm_verify_result *res, lm_error *err);

/* The same check for code run by other means (another machine, an
 * emulator): fn(ctx, args, R, err) is called once, with args packed as
 * lm_args_pack packs them and every output inside its guards, and must
 * leave in those buffers (guards included) what the code wrote.  An error
 * it returns is the verification's error. */
typedef lm_status (*lm_verify_run_fn)(void *ctx, const uint64_t *args,
                                      int64_t R, lm_error *err);
lm_status lm_verify_with(lm_keep const lm_kernel *k, lm_verify_run_fn fn,
                         void *ctx, lm_keep lm_data *d,
                         lm_keep const lm_oracle *o, lm_verify_result *res,
                         lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
