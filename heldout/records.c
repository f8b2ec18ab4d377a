/* A held-out run as measurement records, and back.
 *
 * `evaluate` appends the records of each case as soon as it is measured, so
 * an interrupted run resumes from its records.jsonl and shards run on
 * separate machines merge by concatenation.  Each (case, variant) is one
 * ordinary lanemap.record/1 line -- a pipeline that knows nothing of the
 * held-out study still reads the kernel, shape, variant, prediction and
 * measured median -- and the case's own fields ride in the record's extra
 * object:
 *
 *   case, split       the case id and its split
 *   protocol          how it was measured (seed, samples, sample length,
 *                     warm-up, worker counts): resuming needs the same
 *   case_variant      this variant's index in the case (enumeration order)
 *   case_variants     how many variants the case has; a case is complete
 *                     when every index is present
 *   pred_cross, pred_default, pred_roofline, pred_learned (optional)
 *                     the other models' predictions, s (absent = none)
 *   spread            (p90 - p10) / p50 of the samples
 *   terms_ns          the calibrated breakdown, term name -> ns
 *   confirmed, confirmed_times
 *                     the confirmation round's p50 and samples, s (absent:
 *                     not confirmed); `median` and `times` stay the
 *                     screening round's
 *   contended         true for a parallel variant measured with fewer free
 *                     CPUs than workers (absent: false)
 *   noise, attempts   the case's noise verdict (lm_noise_to_json) and how
 *                     many times it was measured (absent: unknown)
 *
 * Every field after terms_ns came later; records without them read as a
 * case measured once, confirmed never, of unknown verdict.
 *
 * A case rebuilt from records has its variants in index order, so the
 * choices the harness recomputes index the same variants as in the run
 * that measured them. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/heldout.h"
#include "lanemap/json.h"

static int add_num(cJSON *o, const char *name, double x) {
  return !isfinite(x) || cJSON_AddNumberToObject(o, name, x) != NULL;
}

static char *dup_or_null(const char *s, int *ok) {
  if (!s)
    return NULL;
  char *d = strdup(s);
  if (!d)
    *ok = 0;
  return d;
}

lm_status lm_eval_case_records(const lm_eval_case *c, const lm_eval_run *run,
                               const char *fingerprint, lm_record **out, int *n,
                               lm_error *err) {
  *out = NULL;
  *n = 0;
  if (!c->id || !c->kernel || !c->kernel_hash || !c->isa)
    return lm_error_set(err, LM_EINPUT, "case %s: missing %s",
                        c->id ? c->id : "(no id)",
                        !c->id            ? "id"
                        : !c->kernel      ? "kernel"
                        : !c->kernel_hash ? "kernel_hash"
                                          : "isa");
  if (c->nvariants <= 0)
    return lm_error_set(err, LM_EINPUT, "case %s: no variants", c->id);
  if (!fingerprint)
    fingerprint = run->fingerprint;
  lm_record *rs = calloc((size_t)c->nvariants, sizeof *rs);
  if (!rs)
    return lm_error_set(err, LM_ESYS, "out of memory");
  lm_status st = LM_OK;
  int made = 0;
  for (int i = 0; i < c->nvariants; i++) {
    const lm_eval_variant *v = &c->v[i];
    lm_record *r = &rs[i];
    lm_record_init(r);
    made = i + 1;
    int ok = 1;
    r->kernel = dup_or_null(c->kernel, &ok);
    r->kernel_hash = dup_or_null(c->kernel_hash, &ok);
    r->R = c->R;
    r->C = c->C;
    r->extra_syms = dup_or_null(c->extra, &ok);
    r->variant = dup_or_null(v->variant, &ok);
    r->isa = dup_or_null(c->isa, &ok);
    r->fingerprint = dup_or_null(fingerprint, &ok);
    r->predicted = isfinite(v->predicted) ? v->predicted * 1e-9 : NAN;
    if (v->verified == 1 && v->ntimes > 0 &&
        (st = lm_record_set_samples(r, v->times, v->ntimes, err)) != LM_OK)
      goto error;
    r->median =
        v->verified == 1 && isfinite(v->measured) ? v->measured * 1e-9 : NAN;
    r->verified = v->verified;
    if (!ok) {
      st = lm_error_set(err, LM_ESYS, "out of memory");
      goto error;
    }
    if (!v->variant) {
      st = lm_error_set(err, LM_EINPUT, "case %s: variant %d: no name", c->id,
                        i);
      goto error;
    }
    if ((st = lm_record_stamp(r, err)) != LM_OK)
      goto error;
    cJSON *x = r->extra = cJSON_CreateObject();
    ok =
        x && cJSON_AddStringToObject(x, "case", c->id) &&
        (!c->split || cJSON_AddStringToObject(x, "split", c->split)) &&
        (!run->node || cJSON_AddStringToObject(x, "node", run->node)) &&
        (!c->protocol || cJSON_AddStringToObject(x, "protocol", c->protocol)) &&
        cJSON_AddNumberToObject(x, "case_variant", i) &&
        cJSON_AddNumberToObject(x, "case_variants", c->nvariants) &&
        add_num(x, "pred_cross", v->pred_cross * 1e-9) &&
        add_num(x, "pred_default", v->pred_default * 1e-9) &&
        add_num(x, "pred_roofline", v->pred_roofline * 1e-9) &&
        add_num(x, "pred_learned", v->pred_learned * 1e-9) &&
        add_num(x, "spread", v->spread);
    if (ok && v->terms && run->nterms > 0) {
      cJSON *t = cJSON_AddObjectToObject(x, "terms_ns");
      ok = t != NULL;
      for (int k = 0; ok && k < run->nterms; k++)
        ok = run->term_names[k] &&
             cJSON_AddNumberToObject(t, run->term_names[k],
                                     isfinite(v->terms[k]) ? v->terms[k]
                                                           : 0.0) != NULL;
    }
    if (ok)
      ok = (!(v->confirmed > 0) ||
            add_num(x, "confirmed", v->confirmed * 1e-9)) &&
           (!v->contended || cJSON_AddTrueToObject(x, "contended"));
    if (ok && v->nctimes > 0 && v->confirmed > 0) {
      cJSON *a = cJSON_AddArrayToObject(x, "confirmed_times");
      ok = a != NULL;
      for (int k = 0; ok && k < v->nctimes; k++) {
        cJSON *num = cJSON_CreateNumber(v->ctimes[k] * 1e-9);
        ok = num && cJSON_AddItemToArray(a, num);
      }
    }
    if (ok && c->attempts > 0) {
      cJSON *nz = lm_noise_to_json(&c->noise);
      ok = nz && cJSON_AddItemToObject(x, "noise", nz) &&
           cJSON_AddNumberToObject(x, "attempts", c->attempts);
    }
    if (!ok) {
      st = lm_error_set(err, LM_ESYS, "out of memory");
      goto error;
    }
  }
  *out = rs;
  *n = c->nvariants;
  return LM_OK;
error:
  for (int i = 0; i < made; i++)
    lm_record_free(&rs[i]);
  free(rs);
  return st;
}

/* ---- back to cases ---------------------------------------------------------
 */

static const cJSON *field(const lm_record *r, const char *name) {
  return lm_json_get(r->extra, name);
}

/* A non-negative integer field of extra; messages name record idx, and the
 * field by its path in the record's line. */
static lm_status int_field(const lm_record *r, int idx, const char *name,
                           int *out, lm_error *err) {
  char where[32];
  snprintf(where, sizeof where, "record %d", idx);
  lm_json_rd rd = {where, r->extra, err};
  int64_t v = 0;
  lm_status st = lm_json_int(&rd, r->extra, name, 0, 0, 1000000000, &v);
  *out = (int)v;
  return st;
}

/* An optional number of extra: absent or null is NAN. */
static lm_status num_field(const lm_record *r, int idx, const char *name,
                           double scale, double *out, lm_error *err) {
  char where[32];
  snprintf(where, sizeof where, "record %d", idx);
  lm_json_rd rd = {where, r->extra, err};
  *out = NAN;
  lm_status st =
      lm_json_number(&rd, r->extra, name, LM_JSON_OPTIONAL | LM_JSON_NULL_OK,
                     -DBL_MAX, DBL_MAX, out);
  if (st == LM_OK && !isnan(*out))
    *out *= scale;
  return st;
}

/* The confirmation of variant v from record r (index ri): absent is none. */
static lm_status confirmed_field(const lm_record *r, int ri, lm_eval_variant *v,
                                 lm_error *err) {
  char where[32];
  snprintf(where, sizeof where, "record %d", ri);
  lm_json_rd rd = {where, r->extra, err};
  const cJSON *a = NULL;
  bool contended = false;
  lm_status st = num_field(r, ri, "confirmed", 1e9, &v->confirmed, err);
  if (st == LM_OK)
    st = lm_json_bool(&rd, r->extra, "contended", LM_JSON_OPTIONAL, &contended);
  if (st == LM_OK)
    st = lm_json_array(&rd, r->extra, "confirmed_times",
                       LM_JSON_OPTIONAL | LM_JSON_NULL_OK, 1, 1 << 20, &a);
  v->contended = contended;
  if (st != LM_OK || !a)
    return st;
  int n = cJSON_GetArraySize(a);
  if (!(v->ctimes = malloc(sizeof *v->ctimes * (size_t)n)))
    return lm_error_set(err, LM_ESYS, "out of memory");
  int k = 0;
  for (const cJSON *e = a->child; e && st == LM_OK; e = e->next, k++) {
    double t = NAN;
    st = lm_json_number(&rd, e, NULL, 0, 0, DBL_MAX, &t);
    v->ctimes[k] = t * 1e9;
  }
  v->nctimes = st == LM_OK ? n : 0;
  return st;
}

/* The case's verdict from its first record f (index fi): absent, attempts
 * 0 and a cleared verdict (unknown). */
static lm_status noise_field(const lm_record *f, int fi, lm_eval_case *c,
                             lm_error *err) {
  char where[32];
  snprintf(where, sizeof where, "record %d", fi);
  lm_json_rd rd = {where, f->extra, err};
  const cJSON *nz = NULL;
  int64_t attempts = 0;
  lm_noise_clear(&c->noise);
  c->attempts = 0;
  lm_status st = lm_json_object(&rd, f->extra, "noise", LM_JSON_OPTIONAL, &nz);
  if (st == LM_OK)
    st = lm_json_int(&rd, f->extra, "attempts", nz ? 0 : LM_JSON_OPTIONAL, 1,
                     1000, &attempts);
  if (st != LM_OK || !nz)
    return st;
  lm_error e = {0};
  if (lm_noise_from_json(nz, &c->noise, &e) != LM_OK)
    return lm_error_set(err, LM_EINPUT, "record %d: noise: %s", fi, e.msg);
  c->attempts = (int)attempts;
  return LM_OK;
}

static int same_opt(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Per-case bookkeeping while records are gathered. */
typedef struct gather {
  const char *id;
  int first;     /* record that opened the case */
  int nvariants; /* case_variants */
  int *rec;      /* [nvariants] record per variant index, -1 = none */
  int have;
} gather;

lm_status lm_eval_cases_from_records(const lm_records *rs, lm_eval_case **out,
                                     int *n, int *incomplete, lm_error *err) {
  *out = NULL;
  *n = 0;
  if (incomplete)
    *incomplete = 0;
  gather *g = calloc((size_t)(rs->n > 0 ? rs->n : 1), sizeof *g);
  lm_eval_case *cs = NULL;
  int ng = 0, ncs = 0, dropped = 0;
  lm_status st = LM_OK;
  const cJSON *names0 = NULL; /* the first record's terms_ns, for the order */
  /* case id -> index in g, (case, variant) -> case_variant: a scan of
   * every earlier case made a run of 100,000 cases cost 10^10 steps */
  lm_strset *ids = lm_strset_new(), *pairs = lm_strset_new();
  if (!g || !ids || !pairs) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto error;
  }
  for (int i = 0; i < rs->n; i++) {
    const lm_record *r = &rs->r[i];
    const cJSON *id = field(r, "case");
    if (!id)
      continue; /* not a held-out record: not part of any case */
    if (!cJSON_IsString(id)) {
      st =
          lm_error_set(err, LM_EINPUT, "record %d: case: expected a string", i);
      goto error;
    }
    int idx = 0, nv = 0;
    if ((st = int_field(r, i, "case_variant", &idx, err)) != LM_OK ||
        (st = int_field(r, i, "case_variants", &nv, err)) != LM_OK)
      goto error;
    if (nv < 1) {
      st =
          lm_error_set(err, LM_EINPUT,
                       "record %d: case_variants: expected an integer >= 1", i);
      goto error;
    }
    if (idx >= nv) {
      st = lm_error_set(err, LM_EINPUT,
                        "record %d: case_variant: %d is not below "
                        "case_variants %d",
                        i, idx, nv);
      goto error;
    }
    /* one case per (id, machine type): "id\x1ffingerprint" */
    int64_t found;
    const char *fp = r->fingerprint ? r->fingerprint : "";
    size_t idlen = strlen(id->valuestring), fplen = strlen(fp);
    char *idkey = malloc(idlen + fplen + 1);
    if (idkey) {
      memcpy(idkey, id->valuestring, idlen);
      idkey[idlen] = '\x1f';
      memcpy(idkey + idlen + 1, fp, fplen);
    }
    if (!idkey ||
        lm_strset_add(ids, idkey, idlen + 1 + fplen, ng, &found) != LM_OK) {
      free(idkey);
      st = lm_error_set(err, LM_ESYS, "out of memory");
      goto error;
    }
    free(idkey);
    int k = found >= 0 ? (int)found : ng;
    if (k == ng) {
      g[k].id = id->valuestring;
      g[k].first = i;
      g[k].nvariants = nv;
      if (!(g[k].rec = malloc((size_t)nv * sizeof *g[k].rec))) {
        st = lm_error_set(err, LM_ESYS, "out of memory");
        goto error;
      }
      for (int j = 0; j < nv; j++)
        g[k].rec[j] = -1;
      ng++;
    }
    const lm_record *f = &rs->r[g[k].first];
    if (g[k].nvariants != nv || !same_opt(f->kernel_hash, r->kernel_hash) ||
        f->R != r->R || f->C != r->C ||
        !same_opt(f->extra_syms, r->extra_syms) || !same_opt(f->isa, r->isa)) {
      st = lm_error_set(
          err, LM_EINPUT, "record %d: case %s: %s differs from record %d's", i,
          g[k].id,
          g[k].nvariants != nv                        ? "case_variants"
          : !same_opt(f->kernel_hash, r->kernel_hash) ? "kernel_hash"
          : f->R != r->R || f->C != r->C              ? "shape"
          : !same_opt(f->isa, r->isa)                 ? "isa"
                                                      : "extra_syms",
          g[k].first);
      goto error;
    }
    int prev = g[k].rec[idx];
    if (prev >= 0) {
      /* the same (case, variant) from an overlapping shard: keep the first */
      if (strcmp(rs->r[prev].variant, r->variant) != 0) {
        st = lm_error_set(err, LM_EINPUT,
                          "record %d: case %s: case_variant %d is %s here "
                          "but %s in record %d",
                          i, g[k].id, idx, r->variant, rs->r[prev].variant,
                          prev);
        goto error;
      }
      continue;
    }
    /* (case, variant) -> case_variant: the key is k's bytes, then the
     * variant's */
    size_t vlen = strlen(r->variant);
    char *key = malloc(sizeof k + vlen);
    if (!key ||
        (memcpy(key, &k, sizeof k), memcpy(key + sizeof k, r->variant, vlen),
         lm_strset_add(pairs, key, sizeof k + vlen, idx, &found)) != LM_OK) {
      free(key);
      st = lm_error_set(err, LM_ESYS, "out of memory");
      goto error;
    }
    free(key);
    if (found >= 0) {
      int j = (int)found;
      st = lm_error_set(err, LM_EINPUT,
                        "record %d: case %s: variant %s is case_variant %d "
                        "here but %d in record %d",
                        i, g[k].id, r->variant, idx, j, g[k].rec[j]);
      goto error;
    }
    g[k].rec[idx] = i;
    g[k].have++;
  }
  if (ng > 0 && !(cs = calloc((size_t)ng, sizeof *cs))) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto error;
  }
  for (int k = 0; k < ng; k++) {
    if (g[k].have < g[k].nvariants) {
      dropped++;
      continue;
    }
    const lm_record *f = &rs->r[g[k].first];
    lm_eval_case *c = &cs[ncs++];
    int ok = 1;
    const cJSON *split = field(f, "split");
    const cJSON *proto = field(f, "protocol");
    c->protocol =
        cJSON_IsString(proto) ? dup_or_null(proto->valuestring, &ok) : NULL;
    c->id = dup_or_null(g[k].id, &ok);
    c->split =
        cJSON_IsString(split) ? dup_or_null(split->valuestring, &ok) : NULL;
    c->kernel = dup_or_null(f->kernel, &ok);
    c->kernel_hash = dup_or_null(f->kernel_hash, &ok);
    c->extra = dup_or_null(f->extra_syms, &ok);
    c->isa = dup_or_null(f->isa, &ok);
    c->fingerprint = dup_or_null(f->fingerprint, &ok);
    const cJSON *node = field(f, "node");
    c->node = cJSON_IsString(node) ? dup_or_null(node->valuestring, &ok) : NULL;
    c->R = f->R;
    c->C = f->C;
    c->nvariants = g[k].nvariants;
    c->best = -1;
    c->t_best = c->tau = c->t_screen = NAN;
    c->t_dispatch = c->dispatch_ratio = NAN;
    if ((st = noise_field(f, g[k].first, c, err)) != LM_OK)
      goto error;
    for (int p = 0; p < LM_POLICY__COUNT; p++) {
      c->choice[p] = -1;
      c->t_policy[p] = NAN;
    }
    for (int b = 0; b < LM_AUTOTUNE_BUDGETS; b++)
      c->t_top[b] = c->t_rand[b] = c->t_tune[b] = NAN;
    if (!ok || !(c->v = calloc((size_t)c->nvariants, sizeof *c->v))) {
      st = lm_error_set(err, LM_ESYS, "out of memory");
      goto error;
    }
    for (int j = 0; j < c->nvariants; j++) {
      int ri = g[k].rec[j];
      const lm_record *r = &rs->r[ri];
      lm_eval_variant *v = &c->v[j];
      if (!(v->variant = strdup(r->variant))) {
        st = lm_error_set(err, LM_ESYS, "out of memory");
        goto error;
      }
      v->verified = r->verified;
      v->measured = isfinite(r->median) ? r->median * 1e9 : NAN;
      if (r->ntimes > 0) {
        if (!(v->times = malloc(sizeof *v->times * (size_t)r->ntimes))) {
          st = lm_error_set(err, LM_ESYS, "out of memory");
          goto error;
        }
        for (int t = 0; t < r->ntimes; t++)
          v->times[t] = r->times[t] * 1e9;
        v->ntimes = r->ntimes;
      }
      v->predicted = isfinite(r->predicted) ? r->predicted * 1e9 : NAN;
      if ((st = num_field(r, ri, "pred_cross", 1e9, &v->pred_cross, err)) !=
              LM_OK ||
          (st = num_field(r, ri, "pred_default", 1e9, &v->pred_default, err)) !=
              LM_OK ||
          (st = num_field(r, ri, "pred_roofline", 1e9, &v->pred_roofline,
                          err)) != LM_OK ||
          (st = num_field(r, ri, "pred_learned", 1e9, &v->pred_learned,
                          err)) != LM_OK ||
          (st = num_field(r, ri, "spread", 1, &v->spread, err)) != LM_OK ||
          (st = confirmed_field(r, ri, v, err)) != LM_OK)
        goto error;
      const cJSON *t = field(r, "terms_ns");
      if (!t)
        continue;
      if (!cJSON_IsObject(t)) {
        st = lm_error_set(err, LM_EINPUT,
                          "record %d: terms_ns: expected an object", ri);
        goto error;
      }
      if (!names0)
        names0 = t;
      int nt = cJSON_GetArraySize(names0);
      if (cJSON_GetArraySize(t) != nt) {
        st = lm_error_set(err, LM_EINPUT,
                          "record %d: terms_ns: %d terms, the first record "
                          "has %d",
                          ri, cJSON_GetArraySize(t), nt);
        goto error;
      }
      if (!(v->terms = calloc((size_t)(nt > 0 ? nt : 1), sizeof *v->terms))) {
        st = lm_error_set(err, LM_ESYS, "out of memory");
        goto error;
      }
      const cJSON *a = names0->child, *b = t->child;
      for (int q = 0; q < nt; q++, a = a->next, b = b->next) {
        if (!b->string || strcmp(a->string, b->string) != 0 ||
            !cJSON_IsNumber(b)) {
          st = lm_error_set(err, LM_EINPUT,
                            "record %d: terms_ns.%s: expected the number of "
                            "term %s (the first record's order)",
                            ri, b->string ? b->string : "?", a->string);
          goto error;
        }
        v->terms[q] = b->valuedouble;
      }
    }
  }
  lm_strset_free(ids);
  lm_strset_free(pairs);
  for (int k = 0; k < ng; k++)
    free(g[k].rec);
  free(g);
  *out = cs;
  *n = ncs;
  if (incomplete)
    *incomplete = dropped;
  return LM_OK;
error:
  lm_strset_free(ids);
  lm_strset_free(pairs);
  for (int k = 0; g && k < ng; k++)
    free(g[k].rec);
  free(g);
  for (int k = 0; cs && k < ncs; k++)
    lm_eval_case_free(&cs[k]);
  free(cs);
  return st;
}
