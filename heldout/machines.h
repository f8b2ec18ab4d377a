/* The machine types whose records a target folder holds (internal to
 * heldout/evaluate.c): which finished cases of the case list each type
 * measured, and the nodes it measured them on.  A machine type is a
 * fingerprint hash (lm_fingerprint): nodes of one type share a profile. */
#ifndef LANEMAP_HELDOUT_MACHINES_H
#define LANEMAP_HELDOUT_MACHINES_H

#include "lanemap/calibrate.h"
#include "lanemap/cases.h"
#include "lanemap/core.h"

typedef struct lm_eval_machine {
  char fp[17];        /* fingerprint hash; "" for records without one */
  char nodes[64];     /* the nodes seen, comma-separated, cut at 63 bytes */
  unsigned char *has; /* [list n] 1: a finished case of this type */
  int ncases;
} lm_eval_machine;

typedef struct lm_eval_machines {
  lm_eval_machine *m; /* [n] other machine types, first appearance first */
  int n;
  lm_eval_machine here; /* this machine's type (and records without one) */
} lm_eval_machines;

/* Read the records file (absent: no types) of ISA target isa: for each
 * machine type, the cases of list it finished (every variant recorded).
 * Records of other ISA targets or cases not in list are ignored. */
lm_status lm_eval_machines_read(const char *records, const lm_cases *list,
                                const char *isa, const char *here_fp,
                                lm_eval_machines *out, lm_error *err);
void lm_eval_machines_free(lm_eval_machines *m);

/* The profile an evaluation into folder out plans ISA target isa with on
 * machine type fp (also lm_deploy's, which measures into out/measure):
 * the file given, else the one an earlier run bundled in out/ISA for this
 * type (lm_eval_bundle_path; not when fresh), else the cached one of the
 * mode, else calibrated now and cached, with its progress to
 * progress(ctx, ...) (NULL: none).  *bundled
 * 1 when the bundle was read. */
lm_status lm_eval_profile_find(const char *out, lm_isa isa, const char *fp,
                               int quick, int fresh, const char *given,
                               int accept_noisy,
                               void (*progress)(void *ctx, int done, int total,
                                                const char *what),
                               void *ctx,
                               lm_profile **prof, lm_profile_found *found,
                               int *bundled, lm_error *err);

#endif
