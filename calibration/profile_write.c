/* A profile as JSON text (docs/profile.md): the object's fields in a
 * fixed order, every number as the shortest text that reads back
 * bit for bit (lm_json_num), and the fingerprint checked first, so that a
 * file is never written that the reader would refuse. */
#include "calibration/profile_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Building a cJSON tree: any failed allocation sets oom, and the caller
 * checks once at the end. */
typedef struct Wr {
  bool oom;
} Wr;

static cJSON *wint(int64_t v) {
  char text[24];
  snprintf(text, sizeof text, "%" PRId64, v);
  return cJSON_CreateRaw(text);
}

static cJSON *add(Wr *w, cJSON *obj, const char *key, cJSON *item) {
  if (!item || !obj || !cJSON_AddItemToObject(obj, key, item)) {
    w->oom = true;
    cJSON_Delete(item);
    return NULL;
  }
  return item;
}

static cJSON *push(Wr *w, cJSON *arr, cJSON *item) {
  if (!item || !arr || !cJSON_AddItemToArray(arr, item)) {
    w->oom = true;
    cJSON_Delete(item);
    return NULL;
  }
  return item;
}

static cJSON *wnums(Wr *w, const double *v, size_t n) {
  cJSON *a = cJSON_CreateArray();
  for (size_t i = 0; a && i < n; i++)
    push(w, a, lm_json_num(v[i]));
  return a;
}

static void write_fingerprint(Wr *w, cJSON *root, const lm_fingerprint *fp) {
  cJSON *o = add(w, root, "fingerprint", cJSON_CreateObject());
  add(w, o, "hash", cJSON_CreateString(fp->hash));
  add(w, o, "cpu_name", cJSON_CreateString(fp->cpu_name));
  add(w, o, "cpu_features", cJSON_CreateString(fp->cpu_features));
  add(w, o, "llvm_version", cJSON_CreateString(fp->llvm_version));
  add(w, o, "l1d_bytes", wint((int64_t)fp->l1d_bytes));
  add(w, o, "l2_bytes", wint((int64_t)fp->l2_bytes));
  add(w, o, "l3_bytes", wint((int64_t)fp->l3_bytes));
  add(w, o, "cores", wint(fp->cores));
}

static void write_terms(Wr *w, cJSON *root, const lm_profile *p) {
  cJSON *a = add(w, root, "terms", cJSON_CreateArray());
  for (int i = 0; i < p->nterms; i++) {
    const lm_profile_term *t = &p->terms[i];
    cJSON *o = push(w, a, cJSON_CreateObject());
    add(w, o, "name", cJSON_CreateString(t->name));
    add(w, o, "unit", cJSON_CreateString(t->unit));
    add(w, o, "coef", lm_json_num(t->coef));
    add(w, o, "p5", lm_json_num(t->p5));
    add(w, o, "p50", lm_json_num(t->p50));
    add(w, o, "p95", lm_json_num(t->p95));
    add(w, o, "lo", lm_json_num(t->lo));
    add(w, o, "hi", lm_json_num(t->hi));
    add(w, o, "flagged", cJSON_CreateBool(t->flagged));
  }
}

static void write_samples(Wr *w, cJSON *root, const lm_profile *p) {
  cJSON *a = add(w, root, "samples", cJSON_CreateArray());
  for (int i = 0; i < p->nsamples; i++) {
    const lm_profile_sample *s = &p->samples[i];
    cJSON *o = push(w, a, cJSON_CreateObject());
    add(w, o, "bench", cJSON_CreateString(s->bench));
    add(w, o, "family", cJSON_CreateString(s->family));
    add(w, o, "features", wnums(w, s->features, (size_t)p->nterms));
    add(w, o, "ns", lm_json_num(s->ns));
    add(w, o, "min", lm_json_num(s->min));
    add(w, o, "spread", lm_json_num(s->spread));
    add(w, o, "reps", wint(s->reps));
  }
  add(w, root, "residuals", wnums(w, p->residuals, (size_t)p->nsamples));
}

static void write_diagnostics(Wr *w, cJSON *root, const lm_profile *p) {
  cJSON *o = add(w, root, "diagnostics", cJSON_CreateObject());
  add(w, o, "condition", lm_json_num(p->diag.condition));
  add(w, o, "rank", wint(p->diag.rank));
  add(w, o, "rms_rel_err", lm_json_num(p->diag.rms_rel_err));
  cJSON *a = add(w, o, "loo", cJSON_CreateArray());
  for (int i = 0; i < p->nloo; i++) {
    cJSON *l = push(w, a, cJSON_CreateObject());
    add(w, l, "bench", cJSON_CreateString(p->loo[i].bench));
    add(w, l, "rel_err", lm_json_num(p->loo[i].rel_err));
  }
  /* the stored text is exact already; make it exact again after parsing */
  cJSON *x = NULL;
  lm_error ignored = {0};
  lm_json_parse("diagnostics.extra", p->extra, strlen(p->extra), &x, &ignored);
  if (x && lm_json_exact(x, NULL) != LM_OK) {
    cJSON_Delete(x);
    x = NULL;
  }
  add(w, o, "extra", x);
}

static void write_bootstrap(Wr *w, cJSON *root, const lm_profile *p) {
  cJSON *a = add(w, root, "bootstrap", cJSON_CreateArray());
  size_t nt = (size_t)p->nterms;
  for (int r = 0; r < p->nboot; r++)
    push(w, a, wnums(w, p->boot ? p->boot + (size_t)r * nt : NULL, nt));
}

/* The verdict and the noisy families (lanemap.profile/1.1); nothing when
 * no verdict is recorded, so such a profile stays a lanemap.profile/1
 * file. */
static void write_noise(Wr *w, cJSON *root, const lm_profile *p) {
  if (!p->has_noise)
    return;
  cJSON *n = lm_noise_to_json(&p->noise);
  if (n && lm_json_exact(n, NULL) != LM_OK) {
    cJSON_Delete(n);
    n = NULL;
  }
  add(w, root, "noise", n);
  cJSON *a = add(w, root, "noisy_families", cJSON_CreateArray());
  for (int i = 0; i < p->nnoisy; i++) {
    const lm_profile_noisy_family *f = &p->noisy[i];
    cJSON *o = push(w, a, cJSON_CreateObject());
    add(w, o, "family", cJSON_CreateString(f->family));
    cJSON *r = add(w, o, "reasons", cJSON_CreateArray());
    for (unsigned bit = 1; bit & LM_NOISE_ALL; bit <<= 1)
      if (f->reasons & bit)
        push(w, r, cJSON_CreateString(lm_noise_reason_name(bit)));
    add(w, o, "spread", lm_json_num(f->spread));
  }
}

static lm_status to_text(const lm_profile *p, const char *pre, char **out,
                         lm_error *err) {
  *out = NULL;
  if (p->fp.cpu_name[0] == 0 && p->fp.hash[0] == 0)
    return lm_error_set(err, LM_EINPUT,
                        "%s: fingerprint: not set (lm_profile_set_fingerprint)",
                        pre);
  lm_status s = lm_profile_check_fingerprint(pre, &p->fp, err);
  if (s)
    return s;
  Wr w = {false};
  cJSON *root = cJSON_CreateObject();
  add(&w, root, "schema",
      cJSON_CreateString(p->has_noise ? LM_PROFILE_SCHEMA_NOISE
                                      : LM_PROFILE_SCHEMA));
  add(&w, root, "isa", cJSON_CreateString(p->isa));
  add(&w, root, "mode", cJSON_CreateString(lm_profile_mode_name(p->mode)));
  add(&w, root, "units", cJSON_CreateString(p->units));
  add(&w, root, "created", cJSON_CreateString(p->created));
  write_fingerprint(&w, root, &p->fp);
  write_terms(&w, root, p);
  write_samples(&w, root, p);
  write_diagnostics(&w, root, p);
  write_bootstrap(&w, root, p);
  write_noise(&w, root, p);
  lm_status st = !w.oom && root ? lm_json_print(root, true, out, NULL, err)
                                : lm_profile_oom(pre, err);
  cJSON_Delete(root);
  return st;
}

lm_status lm_profile_to_json_text(const lm_profile *p, char **out,
                                  lm_error *err) {
  return to_text(p, __func__, out, err);
}

lm_status lm_profile_save(const lm_profile *p, const char *path,
                          lm_error *err) {
  char *text;
  lm_status s = to_text(p, path, &text, err);
  if (s)
    return s;
  s = lm_file_write_atomic(path, text, strlen(text), err);
  free(text);
  return s;
}
