/* Which machine types finished which cases of a target folder: read from
 * the records' fingerprints and nodes (heldout/machines.h). */
#include "heldout/machines.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lanemap/heldout.h"
#include "lanemap/records.h"

static lm_status add_case(lm_eval_machine *m, int list_n, int idx,
                          const char *node, lm_error *err) {
  if (!m->has && !(m->has = calloc((size_t)list_n + 1, 1)))
    return lm_error_set(err, LM_ESYS, "out of memory");
  m->ncases += !m->has[idx];
  m->has[idx] = 1;
  lm_list_add(m->nodes, sizeof m->nodes, node);
  return LM_OK;
}

lm_status lm_eval_machines_read(const char *records, const lm_cases *list,
                                const char *isa, const char *here_fp,
                                lm_eval_machines *out, lm_error *err) {
  memset(out, 0, sizeof *out);
  snprintf(out->here.fp, sizeof out->here.fp, "%s", here_fp);
  if (access(records, F_OK) != 0)
    return LM_OK;
  lm_records rs = {0};
  lm_eval_case *cs = NULL;
  int ncs = 0;
  lm_strset *ids = lm_strset_new(); /* case id -> list index */
  lm_status st = ids ? LM_OK : lm_error_set(err, LM_ESYS, "out of memory");
  for (int i = 0; i < list->n && st == LM_OK; i++) {
    int64_t prior;
    if (lm_strset_add_str(ids, list->c[i].id, i, &prior) != LM_OK)
      st = lm_error_set(err, LM_ESYS, "out of memory");
  }
  if (st == LM_OK)
    st = lm_records_read(records, &rs, err);
  if (st == LM_OK)
    st = lm_eval_cases_from_records(&rs, &cs, &ncs, NULL, err);
  for (int k = 0; k < ncs && st == LM_OK; k++) {
    const lm_eval_case *c = &cs[k];
    int64_t idx;
    if (c->isa && strcmp(c->isa, isa) != 0)
      continue;
    /* a case not in the list is added at list->n, and skipped */
    if (lm_strset_add_str(ids, c->id, list->n, &idx) != LM_OK) {
      st = lm_error_set(err, LM_ESYS, "out of memory");
      break;
    }
    if (idx < 0 || idx >= list->n)
      continue;
    const char *fp = c->fingerprint ? c->fingerprint : "";
    lm_eval_machine *m = NULL;
    if (!*fp || strcmp(fp, here_fp) == 0)
      m = &out->here;
    for (int j = 0; j < out->n && !m; j++)
      if (strcmp(out->m[j].fp, fp) == 0)
        m = &out->m[j];
    if (!m) {
      lm_eval_machine *nm = realloc(out->m, sizeof *nm * (size_t)(out->n + 1));
      if (!nm) {
        st = lm_error_set(err, LM_ESYS, "out of memory");
        break;
      }
      out->m = nm;
      m = &out->m[out->n++];
      memset(m, 0, sizeof *m);
      snprintf(m->fp, sizeof m->fp, "%s", fp);
    }
    st = add_case(m, list->n, (int)idx, c->node, err);
  }
  for (int k = 0; k < ncs; k++)
    lm_eval_case_free(&cs[k]);
  free(cs);
  lm_records_free(&rs);
  lm_strset_free(ids);
  if (st != LM_OK)
    lm_eval_machines_free(out);
  return st;
}

void lm_eval_machines_free(lm_eval_machines *m) {
  for (int j = 0; j < m->n; j++)
    free(m->m[j].has);
  free(m->m);
  free(m->here.has);
  memset(m, 0, sizeof *m);
}

lm_status lm_eval_bundle_path(const char *out, const char *isa, const char *fp,
                              const char *mode, char *buf, size_t n,
                              lm_error *err) {
  size_t len = fp ? strlen(fp) : 0;
  int hex = len == 16;
  for (size_t i = 0; hex && i < len; i++)
    hex = strchr("0123456789abcdef", fp[i]) != NULL;
  if (!hex)
    return lm_error_set(err, LM_EINPUT,
                        "fingerprint '%s': expected 16 hex digits",
                        fp ? fp : "");
  int w = snprintf(buf, n, "%s/%s/profile-%s-%s.json", out, isa, fp, mode);
  if (w < 0 || (size_t)w >= n)
    return lm_error_set(err, LM_EINPUT, "%s/%s: the path is too long", out,
                        isa);
  return LM_OK;
}

lm_status lm_eval_profile_find(const char *out, lm_isa isa, const char *fp,
                               int quick, int fresh, const char *given,
                               int accept_noisy,
                               void (*progress)(void *ctx, int done, int total,
                                                const char *what),
                               void *ctx,
                               lm_profile **prof, lm_profile_found *found,
                               int *bundled, lm_error *err) {
  char bundle[PATH_MAX];
  *bundled = 0;
  memset(found, 0, sizeof *found);
  lm_status st = lm_eval_bundle_path(out, lm_isa_name(isa), fp,
                                     quick ? "quick" : "full", bundle,
                                     sizeof bundle, err);
  if (st != LM_OK)
    return st;
  lm_profile_lookup_opts lo;
  lm_profile_lookup_defaults(&lo);
  lo.path = given;
  if (!lo.path && !fresh && access(bundle, R_OK) == 0)
    lo.path = bundle, *bundled = 1;
  lo.isa = isa;
  lo.mode = quick ? LM_PROFILE_QUICK : LM_PROFILE_FULL;
  lo.require_isa = 1;
  lo.missing = LM_PROFILE_MISSING_CALIBRATE;
  lo.accept_noisy = accept_noisy;
  lo.calib.progress = progress;
  lo.calib.progress_ctx = ctx;
  return lm_profile_lookup(&lo, prof, found, err);
}
