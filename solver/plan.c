/* Plans: the solver's result in the workload's terms, and the
 * "lanemap.plan/1" file.
 *
 * A plan names only the variants it compiles; buckets index into that
 * list.  With thresholded dispatch, the buckets of each C in increasing R
 * form runs of one variant each, and the plan lists them as thresholds:
 * run i covers R >= from_R[i] up to the next threshold.  The reader checks
 * every field it needs and names the first bad one with its JSON path
 * (kernels[1].buckets[4].variant); fields it does not know are ignored, so
 * a plan can carry notes. */
#include "lanemap/plan.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *dupstr(const char *s) {
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

void lm_plan_free(lm_plan *p) {
  if (!p)
    return;
  for (int i = 0; p->kernels && i < p->nkernels; i++) {
    lm_plan_kernel *k = &p->kernels[i];
    free(k->name);
    free(k->path);
    free(k->hash);
    free(k->extra);
    for (int v = 0; k->variants && v < k->nvariants; v++)
      free(k->variants[v]);
    free(k->variants);
    free(k->buckets);
    for (int t = 0; k->thresholds && t < k->nthresholds; t++) {
      free(k->thresholds[t].from_R);
      free(k->thresholds[t].variant);
    }
    free(k->thresholds);
  }
  free(p->kernels);
  free(p->workload);
  free(p);
}

/* Thresholds of one kernel from its buckets: per C (buckets sorted by R),
 * a new run wherever the variant changes. */
static lm_status make_thresholds(lm_plan_kernel *k, lm_error *err) {
  int *idx = malloc(sizeof *idx * (size_t)k->nbuckets);
  if (!idx)
    return lm_error_set(err, LM_ESYS, "plan: out of memory");
  for (int i = 0; i < k->nbuckets; i++)
    idx[i] = i;
  for (int i = 1; i < k->nbuckets; i++) /* insertion sort by (C, R) */
    for (int j = i; j > 0; j--) {
      const lm_plan_bucket *a = &k->buckets[idx[j - 1]], *b = &k->buckets[idx[j]];
      if (a->C < b->C || (a->C == b->C && a->R < b->R))
        break;
      int t = idx[j];
      idx[j] = idx[j - 1];
      idx[j - 1] = t;
    }
  k->thresholds = calloc((size_t)k->nbuckets, sizeof *k->thresholds);
  if (!k->thresholds) {
    free(idx);
    return lm_error_set(err, LM_ESYS, "plan: out of memory");
  }
  for (int i = 0; i < k->nbuckets; i++) {
    const lm_plan_bucket *b = &k->buckets[idx[i]];
    lm_plan_threshold *t =
        k->nthresholds ? &k->thresholds[k->nthresholds - 1] : NULL;
    if (!t || t->C != b->C) {
      t = &k->thresholds[k->nthresholds++];
      t->C = b->C;
      t->from_R = malloc(sizeof *t->from_R * (size_t)k->nbuckets);
      t->variant = malloc(sizeof *t->variant * (size_t)k->nbuckets);
      if (!t->from_R || !t->variant) {
        free(idx);
        return lm_error_set(err, LM_ESYS, "plan: out of memory");
      }
    }
    if (t->nruns == 0 || t->variant[t->nruns - 1] != b->variant) {
      t->from_R[t->nruns] = b->R;
      t->variant[t->nruns++] = b->variant;
    }
  }
  free(idx);
  return LM_OK;
}

lm_status lm_plan_from_result(const lm_workload *w, const lm_profile *const *profiles,
                              const lm_plan_problem *pp, const lm_solve_opts *opts,
                              const lm_solve_result *r, lm_plan **out, lm_error *err) {
  *out = NULL;
  lm_plan *p = calloc(1, sizeof *p);
  lm_status s = LM_OK;
  if (!p)
    return lm_error_set(err, LM_ESYS, "plan: out of memory");
  p->workload = dupstr(strcmp(w->name, "<code>") ? w->name : "");
  p->nprofiles = w->nisa;
  for (int i = 0; i < w->nisa; i++) {
    snprintf(p->profiles[i].isa, sizeof p->profiles[i].isa, "%s",
             lm_isa_name(w->isa[i]));
    snprintf(p->profiles[i].fingerprint, sizeof p->profiles[i].fingerprint, "%s",
             lm_profile_get_fingerprint(profiles[i])->hash);
    snprintf(p->profiles[i].mode, sizeof p->profiles[i].mode, "%s",
             lm_profile_mode_name(lm_profile_get_mode(profiles[i])));
  }
  p->threshold = opts->threshold;
  p->robust = opts->robust;
  p->scenarios = pp->p.nscenarios > 1 ? pp->p.nscenarios : 1;
  snprintf(p->status, sizeof p->status, "%s", lm_solve_status_name(r->status));
  p->objective = r->objective;
  p->greedy_objective = r->greedy_objective;
  p->bound = r->bound;
  p->gap = r->gap;
  p->time_s = r->time_s;
  p->compile_total_ms = r->compile_total;
  p->nodes = r->nodes;
  p->mip_solves = r->mip_solves;
  p->pruned = r->pruned;
  p->nkernels = w->nkernels;
  p->kernels = calloc((size_t)w->nkernels, sizeof *p->kernels);
  if (!p->workload || !p->kernels) {
    s = lm_error_set(err, LM_ESYS, "plan: out of memory");
    goto done;
  }
  for (int ki = 0; ki < w->nkernels && s == LM_OK; ki++) {
    const lm_workload_kernel *wk = &w->kernels[ki];
    const lm_plan_pkernel *pk = &pp->pk[ki];
    lm_plan_kernel *k = &p->kernels[ki];
    int nv = pk->nvariants, nb = wk->nbuckets;
    int *map = malloc(sizeof *map * (size_t)nv);
    char abs[4096];
    k->name = dupstr(wk->k ? wk->k->name : "");
    k->path = dupstr(realpath(wk->resolved, abs) ? abs : wk->resolved);
    k->hash = calloc(17, 1);
    k->extra = dupstr(wk->extra);
    k->variants = calloc((size_t)nv, sizeof *k->variants);
    k->buckets = calloc((size_t)nb, sizeof *k->buckets);
    if (!map || !k->name || !k->path || !k->hash || !k->variants || !k->buckets ||
        (wk->extra && !k->extra)) {
      free(map);
      s = lm_error_set(err, LM_ESYS, "plan: out of memory");
      break;
    }
    if ((s = lm_file_hash(wk->resolved, k->hash, err)) != LM_OK) {
      free(map);
      break;
    }
    for (int v = 0; v < nv; v++) {
      map[v] = -1;
      if (r->compiled[r->variant_start[ki] + v]) {
        char buf[128];
        lm_variant_format(&pk->variants[v], buf, sizeof buf);
        map[v] = k->nvariants;
        k->variants[k->nvariants++] = dupstr(buf);
      }
    }
    for (int b = 0; b < nb; b++) { /* solver order back to workload order */
      int wb = pk->order[b], v = r->choice[r->bucket_start[ki] + b];
      lm_plan_bucket *pb = &k->buckets[wb];
      pb->R = wk->buckets[wb].R;
      pb->C = wk->buckets[wb].C;
      pb->weight = wk->buckets[wb].weight;
      pb->variant = v >= 0 && v < nv ? map[v] : -1;
      pb->predicted_ns = v >= 0 && v < nv ? pk->cost[(size_t)b * nv + v] : INFINITY;
      if (pb->variant < 0)
        s = lm_error_set(err, LM_EINPUT,
                         "plan: kernel %d bucket %d runs no compiled variant", ki, wb);
    }
    free(map);
    k->nbuckets = nb;
    if (s == LM_OK && opts->threshold)
      s = make_thresholds(k, err);
  }
done:
  if (s != LM_OK) {
    lm_plan_free(p);
    return s;
  }
  *out = p;
  return LM_OK;
}

/* ---- JSON ---------------------------------------------------------------- */

/* Non-finite numbers are written as null: no greedy plan (INFINITY), no
 * gap (INFINITY), no bound (-INFINITY, the one field read back as such). */
/* A JSON number that reads back as exactly x (cJSON's own printer keeps
 * only 15 digits when they come within an epsilon). */
static cJSON *exact_num(double x) {
  char buf[40];
  snprintf(buf, sizeof buf, "%.15g", x);
  if (strtod(buf, NULL) != x)
    snprintf(buf, sizeof buf, "%.17g", x);
  return cJSON_CreateRaw(buf);
}

static void add_num(cJSON *o, const char *key, double x) {
  if (isfinite(x))
    cJSON_AddItemToObject(o, key, exact_num(x));
  else
    cJSON_AddNullToObject(o, key);
}

lm_status lm_plan_to_json_text(const lm_plan *p, char **out, lm_error *err) {
  *out = NULL;
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "schema", LM_PLAN_SCHEMA);
  cJSON_AddStringToObject(root, "workload", p->workload ? p->workload : "");
  cJSON *pr = cJSON_AddArrayToObject(root, "profiles");
  for (int i = 0; i < p->nprofiles; i++) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "isa", p->profiles[i].isa);
    cJSON_AddStringToObject(j, "fingerprint", p->profiles[i].fingerprint);
    cJSON_AddStringToObject(j, "mode", p->profiles[i].mode);
    cJSON_AddItemToArray(pr, j);
  }
  cJSON *mode = cJSON_AddObjectToObject(root, "mode");
  cJSON_AddBoolToObject(mode, "threshold", p->threshold);
  cJSON_AddBoolToObject(mode, "robust", p->robust);
  cJSON_AddNumberToObject(mode, "scenarios", p->scenarios);
  cJSON *sv = cJSON_AddObjectToObject(root, "solver");
  cJSON_AddStringToObject(sv, "status", p->status);
  add_num(sv, "objective_ns", p->objective);
  add_num(sv, "greedy_objective_ns", p->greedy_objective);
  add_num(sv, "bound_ns", p->bound);
  add_num(sv, "gap", p->gap);
  add_num(sv, "time_s", p->time_s);
  add_num(sv, "compile_total_ms", p->compile_total_ms);
  cJSON_AddItemToObject(sv, "nodes", exact_num((double)p->nodes));
  cJSON_AddNumberToObject(sv, "mip_solves", p->mip_solves);
  cJSON_AddNumberToObject(sv, "pruned", p->pruned);
  cJSON *ks = cJSON_AddArrayToObject(root, "kernels");
  for (int i = 0; i < p->nkernels; i++) {
    const lm_plan_kernel *k = &p->kernels[i];
    cJSON *jk = cJSON_CreateObject();
    cJSON_AddStringToObject(jk, "name", k->name);
    cJSON_AddStringToObject(jk, "path", k->path);
    cJSON_AddStringToObject(jk, "hash", k->hash);
    if (k->extra)
      cJSON_AddStringToObject(jk, "extra", k->extra);
    cJSON *vs = cJSON_AddArrayToObject(jk, "variants");
    for (int v = 0; v < k->nvariants; v++)
      cJSON_AddItemToArray(vs, cJSON_CreateString(k->variants[v]));
    cJSON *bs = cJSON_AddArrayToObject(jk, "buckets");
    for (int b = 0; b < k->nbuckets; b++) {
      const lm_plan_bucket *pb = &k->buckets[b];
      cJSON *jb = cJSON_CreateObject();
      cJSON_AddNumberToObject(jb, "R", (double)pb->R);
      cJSON_AddNumberToObject(jb, "C", (double)pb->C);
      cJSON_AddItemToObject(jb, "weight", exact_num(pb->weight));
      cJSON_AddNumberToObject(jb, "variant", pb->variant);
      add_num(jb, "predicted_ns", pb->predicted_ns);
      cJSON_AddItemToArray(bs, jb);
    }
    if (k->nthresholds) {
      cJSON *ts = cJSON_AddArrayToObject(jk, "thresholds");
      for (int t = 0; t < k->nthresholds; t++) {
        const lm_plan_threshold *th = &k->thresholds[t];
        cJSON *jt = cJSON_CreateObject();
        cJSON_AddNumberToObject(jt, "C", (double)th->C);
        cJSON *runs = cJSON_AddArrayToObject(jt, "runs");
        for (int r = 0; r < th->nruns; r++) {
          cJSON *jr = cJSON_CreateObject();
          cJSON_AddNumberToObject(jr, "from_R", (double)th->from_R[r]);
          cJSON_AddNumberToObject(jr, "variant", th->variant[r]);
          cJSON_AddItemToArray(runs, jr);
        }
        cJSON_AddItemToArray(ts, jt);
      }
    }
    cJSON_AddItemToArray(ks, jk);
  }
  char *t = cJSON_Print(root);
  cJSON_Delete(root);
  if (!t)
    return lm_error_set(err, LM_ESYS, "plan: out of memory");
  *out = t;
  return LM_OK;
}

lm_status lm_plan_save(const lm_plan *p, const char *path, lm_error *err) {
  char *t = NULL;
  lm_status s = lm_plan_to_json_text(p, &t, err);
  if (s != LM_OK)
    return s;
  size_t n = strlen(t);
  char *nl = malloc(n + 2);
  if (!nl) {
    free(t);
    return lm_error_set(err, LM_ESYS, "plan: out of memory");
  }
  memcpy(nl, t, n);
  nl[n] = '\n';
  s = lm_file_write_atomic(path, nl, n + 1, err);
  free(nl);
  free(t);
  return s;
}

/* Reading: each getter names the field on failure. */
typedef struct rd {
  const char *name;
  lm_error *err;
} rd;

static lm_status bad(rd *r, const char *field, const char *what) {
  return lm_error_set(r->err, LM_EINPUT, "%s: %s: expected %s", r->name, field, what);
}

static lm_status get_str(rd *r, const cJSON *o, const char *key, const char *field,
                         int optional, size_t maxlen, char **out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
  *out = NULL;
  if (!j && optional)
    return LM_OK;
  if (!cJSON_IsString(j) || strlen(j->valuestring) > maxlen)
    return bad(r, field, "a string");
  *out = dupstr(j->valuestring);
  return *out ? LM_OK : lm_error_set(r->err, LM_ESYS, "plan: out of memory");
}

/* A number; null reads as INFINITY when allow_null. */
static lm_status get_num(rd *r, const cJSON *o, const char *key, const char *field,
                         int allow_null, double lo, double *out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
  if (allow_null && cJSON_IsNull(j)) {
    *out = INFINITY;
    return LM_OK;
  }
  if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) || j->valuedouble < lo)
    return bad(r, field, lo == 0 ? "a finite number >= 0" : "a finite number");
  *out = j->valuedouble;
  return LM_OK;
}

static lm_status get_int(rd *r, const cJSON *o, const char *key, const char *field,
                         int64_t lo, int64_t hi, int64_t *out) {
  const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
  if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) ||
      j->valuedouble != floor(j->valuedouble) || j->valuedouble < (double)lo ||
      j->valuedouble > (double)hi) {
    char what[96];
    snprintf(what, sizeof what, "an integer in [%" PRId64 ", %" PRId64 "]", lo, hi);
    return bad(r, field, what);
  }
  *out = (int64_t)j->valuedouble;
  return LM_OK;
}

static int is_hex16(const char *s) {
  if (strlen(s) != 16)
    return 0;
  for (const char *c = s; *c; c++)
    if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
      return 0;
  return 1;
}

#define MAXEXT (INT64_C(1) << 40)

static lm_status read_kernel(rd *r, const cJSON *jk, int i, lm_plan_kernel *k) {
  char f[128];
  int64_t x;
  lm_status s;
#define F(...) (snprintf(f, sizeof f, __VA_ARGS__), f)
  if (!cJSON_IsObject(jk))
    return bad(r, F("kernels[%d]", i), "an object");
  if ((s = get_str(r, jk, "name", F("kernels[%d].name", i), 0, 256, &k->name)) ||
      (s = get_str(r, jk, "path", F("kernels[%d].path", i), 0, 4000, &k->path)) ||
      (s = get_str(r, jk, "hash", F("kernels[%d].hash", i), 0, 16, &k->hash)) ||
      (s = get_str(r, jk, "extra", F("kernels[%d].extra", i), 1, 256, &k->extra)))
    return s;
  if (!k->path[0])
    return bad(r, F("kernels[%d].path", i), "a non-empty path");
  if (!is_hex16(k->hash))
    return bad(r, F("kernels[%d].hash", i), "16 lower-case hex digits");
  const cJSON *vs = cJSON_GetObjectItemCaseSensitive(jk, "variants");
  if (!cJSON_IsArray(vs) || cJSON_GetArraySize(vs) < 1 ||
      cJSON_GetArraySize(vs) > 100000)
    return bad(r, F("kernels[%d].variants", i), "a non-empty list of variant strings");
  k->variants = calloc((size_t)cJSON_GetArraySize(vs), sizeof *k->variants);
  if (!k->variants)
    return lm_error_set(r->err, LM_ESYS, "plan: out of memory");
  const cJSON *c;
  cJSON_ArrayForEach(c, vs) {
    lm_variant v;
    lm_error e2 = {0};
    F("kernels[%d].variants[%d]", i, k->nvariants);
    if (!cJSON_IsString(c))
      return bad(r, f, "a variant string");
    if (lm_variant_parse(c->valuestring, &v, &e2) != LM_OK)
      return lm_error_set(r->err, LM_EINPUT, "%s: %s: %s", r->name, f, e2.msg);
    if (!(k->variants[k->nvariants++] = dupstr(c->valuestring)))
      return lm_error_set(r->err, LM_ESYS, "plan: out of memory");
  }
  const cJSON *bs = cJSON_GetObjectItemCaseSensitive(jk, "buckets");
  if (!cJSON_IsArray(bs) || cJSON_GetArraySize(bs) < 1 ||
      cJSON_GetArraySize(bs) > LM_WORKLOAD_MAX_BUCKETS)
    return bad(r, F("kernels[%d].buckets", i), "a non-empty list of buckets");
  k->buckets = calloc((size_t)cJSON_GetArraySize(bs), sizeof *k->buckets);
  if (!k->buckets)
    return lm_error_set(r->err, LM_ESYS, "plan: out of memory");
  cJSON_ArrayForEach(c, bs) {
    int b = k->nbuckets;
    lm_plan_bucket *pb = &k->buckets[b];
    if (!cJSON_IsObject(c))
      return bad(r, F("kernels[%d].buckets[%d]", i, b), "an object");
    if ((s = get_int(r, c, "R", F("kernels[%d].buckets[%d].R", i, b), 1, MAXEXT, &x)))
      return s;
    pb->R = x;
    if ((s = get_int(r, c, "C", F("kernels[%d].buckets[%d].C", i, b), 1, MAXEXT, &x)))
      return s;
    pb->C = x;
    if ((s = get_num(r, c, "weight", F("kernels[%d].buckets[%d].weight", i, b), 0, 0,
                     &pb->weight)))
      return s;
    if ((s = get_int(r, c, "variant", F("kernels[%d].buckets[%d].variant", i, b), 0,
                     k->nvariants - 1, &x)))
      return s;
    pb->variant = (int)x;
    if ((s = get_num(r, c, "predicted_ns",
                     F("kernels[%d].buckets[%d].predicted_ns", i, b), 1, 0,
                     &pb->predicted_ns)))
      return s;
    for (int o = 0; o < b; o++)
      if (k->buckets[o].R == pb->R && k->buckets[o].C == pb->C)
        return bad(r, F("kernels[%d].buckets[%d]", i, b),
                   "a shape not already in an earlier bucket");
    k->nbuckets++;
  }
  const cJSON *ts = cJSON_GetObjectItemCaseSensitive(jk, "thresholds");
  if (!ts)
    return LM_OK;
  if (!cJSON_IsArray(ts) || cJSON_GetArraySize(ts) > k->nbuckets)
    return bad(r, F("kernels[%d].thresholds", i), "a list, one entry per C");
  k->thresholds = calloc((size_t)cJSON_GetArraySize(ts) + 1, sizeof *k->thresholds);
  if (!k->thresholds)
    return lm_error_set(r->err, LM_ESYS, "plan: out of memory");
  cJSON_ArrayForEach(c, ts) {
    int t = k->nthresholds;
    lm_plan_threshold *th = &k->thresholds[t];
    if (!cJSON_IsObject(c))
      return bad(r, F("kernels[%d].thresholds[%d]", i, t), "an object");
    if ((s = get_int(r, c, "C", F("kernels[%d].thresholds[%d].C", i, t), 1, MAXEXT, &x)))
      return s;
    th->C = x;
    k->nthresholds++;
    for (int o = 0; o < t; o++)
      if (k->thresholds[o].C == th->C)
        return bad(r, F("kernels[%d].thresholds[%d].C", i, t), "a C not listed before");
    const cJSON *runs = cJSON_GetObjectItemCaseSensitive(c, "runs");
    if (!cJSON_IsArray(runs) || cJSON_GetArraySize(runs) < 1 ||
        cJSON_GetArraySize(runs) > k->nbuckets)
      return bad(r, F("kernels[%d].thresholds[%d].runs", i, t),
                 "a non-empty list of {from_R, variant}");
    int n = cJSON_GetArraySize(runs);
    th->from_R = malloc(sizeof *th->from_R * (size_t)n);
    th->variant = malloc(sizeof *th->variant * (size_t)n);
    if (!th->from_R || !th->variant)
      return lm_error_set(r->err, LM_ESYS, "plan: out of memory");
    const cJSON *jr;
    cJSON_ArrayForEach(jr, runs) {
      int q = th->nruns;
      if (!cJSON_IsObject(jr))
        return bad(r, F("kernels[%d].thresholds[%d].runs[%d]", i, t, q), "an object");
      if ((s = get_int(r, jr, "from_R", F("kernels[%d].thresholds[%d].runs[%d].from_R", i,
                                          t, q),
                       1, MAXEXT, &x)))
        return s;
      if (q > 0 && x <= th->from_R[q - 1])
        return bad(r, F("kernels[%d].thresholds[%d].runs[%d].from_R", i, t, q),
                   "an R above the previous run's");
      th->from_R[q] = x;
      if ((s = get_int(r, jr, "variant",
                       F("kernels[%d].thresholds[%d].runs[%d].variant", i, t, q), 0,
                       k->nvariants - 1, &x)))
        return s;
      th->variant[q] = (int)x;
      th->nruns++;
    }
  }
#undef F
  return LM_OK;
}

static lm_status read_doc(rd *r, const cJSON *root, lm_plan *p) {
  lm_status s;
  int64_t x;
  if (!cJSON_IsObject(root))
    return lm_error_set(r->err, LM_EINPUT, "%s: expected a JSON object", r->name);
  const cJSON *schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
  if (!cJSON_IsString(schema))
    return bad(r, "schema", "\"" LM_PLAN_SCHEMA "\"");
  if (strncmp(schema->valuestring, "lanemap.plan/", 13) != 0 ||
      atoi(schema->valuestring + 13) != 1)
    return lm_error_set(r->err, LM_EINPUT, "%s: schema: expected \"%s\", got \"%.64s\"",
                        r->name, LM_PLAN_SCHEMA, schema->valuestring);
  if ((s = get_str(r, root, "workload", "workload", 0, 4000, &p->workload)))
    return s;
  const cJSON *pr = cJSON_GetObjectItemCaseSensitive(root, "profiles");
  if (!cJSON_IsArray(pr) || cJSON_GetArraySize(pr) < 1 ||
      cJSON_GetArraySize(pr) > LM_ISA__COUNT)
    return bad(r, "profiles", "a list of 1 to 4 profiles");
  const cJSON *c;
  cJSON_ArrayForEach(c, pr) {
    char f[64];
    int i = p->nprofiles;
    const char *keys[] = {"isa", "fingerprint", "mode"};
    char *dst[] = {p->profiles[i].isa, p->profiles[i].fingerprint, p->profiles[i].mode};
    size_t cap[] = {sizeof p->profiles[i].isa, sizeof p->profiles[i].fingerprint,
                    sizeof p->profiles[i].mode};
    for (int q = 0; q < 3; q++) {
      const cJSON *j = cJSON_IsObject(c) ? cJSON_GetObjectItemCaseSensitive(c, keys[q])
                                         : NULL;
      snprintf(f, sizeof f, "profiles[%d].%s", i, keys[q]);
      if (!cJSON_IsString(j) || !j->valuestring[0] || strlen(j->valuestring) >= cap[q])
        return bad(r, f, "a short non-empty string");
      snprintf(dst[q], cap[q], "%s", j->valuestring);
    }
    lm_isa isa;
    lm_profile_mode m;
    lm_error e2 = {0};
    if (lm_isa_parse(p->profiles[i].isa, &isa, &e2) != LM_OK)
      return bad(r, (snprintf(f, sizeof f, "profiles[%d].isa", i), f), "an ISA target");
    if (!is_hex16(p->profiles[i].fingerprint))
      return bad(r, (snprintf(f, sizeof f, "profiles[%d].fingerprint", i), f),
                 "16 lower-case hex digits");
    if (lm_profile_mode_parse(p->profiles[i].mode, &m, &e2) != LM_OK)
      return bad(r, (snprintf(f, sizeof f, "profiles[%d].mode", i), f),
                 "\"default\", \"quick\" or \"full\"");
    p->nprofiles++;
  }
  const cJSON *mode = cJSON_GetObjectItemCaseSensitive(root, "mode");
  if (!cJSON_IsObject(mode))
    return bad(r, "mode", "an object");
  const cJSON *th = cJSON_GetObjectItemCaseSensitive(mode, "threshold");
  const cJSON *rb = cJSON_GetObjectItemCaseSensitive(mode, "robust");
  if (!cJSON_IsBool(th))
    return bad(r, "mode.threshold", "true or false");
  if (!cJSON_IsBool(rb))
    return bad(r, "mode.robust", "true or false");
  p->threshold = cJSON_IsTrue(th);
  p->robust = cJSON_IsTrue(rb);
  if ((s = get_int(r, mode, "scenarios", "mode.scenarios", 1, 1000000, &x)))
    return s;
  p->scenarios = (int)x;
  const cJSON *sv = cJSON_GetObjectItemCaseSensitive(root, "solver");
  if (!cJSON_IsObject(sv))
    return bad(r, "solver", "an object");
  const cJSON *st = cJSON_GetObjectItemCaseSensitive(sv, "status");
  int known = 0;
  for (int q = LM_SOLVE_OPTIMAL; q <= LM_SOLVE_INFEASIBLE && cJSON_IsString(st); q++)
    known |= strcmp(st->valuestring, lm_solve_status_name((lm_solve_status)q)) == 0;
  if (!known)
    return bad(r, "solver.status", "a solver status (optimal, feasible, time-limit, ...)");
  snprintf(p->status, sizeof p->status, "%s", st->valuestring);
  if ((s = get_num(r, sv, "objective_ns", "solver.objective_ns", 0, 0, &p->objective)) ||
      (s = get_num(r, sv, "greedy_objective_ns", "solver.greedy_objective_ns", 1, 0,
                   &p->greedy_objective)) ||
      (s = get_num(r, sv, "bound_ns", "solver.bound_ns", 1, -INFINITY, &p->bound)) ||
      (s = (p->bound = isinf(p->bound) ? -INFINITY : p->bound, LM_OK)) ||
      (s = get_num(r, sv, "gap", "solver.gap", 1, 0, &p->gap)) ||
      (s = get_num(r, sv, "time_s", "solver.time_s", 0, 0, &p->time_s)) ||
      (s = get_num(r, sv, "compile_total_ms", "solver.compile_total_ms", 0, 0,
                   &p->compile_total_ms)))
    return s;
  if ((s = get_int(r, sv, "nodes", "solver.nodes", 0, INT64_C(1) << 52, &x)))
    return s;
  p->nodes = (long)x;
  if ((s = get_int(r, sv, "mip_solves", "solver.mip_solves", 0, 1 << 30, &x)))
    return s;
  p->mip_solves = (int)x;
  if ((s = get_int(r, sv, "pruned", "solver.pruned", 0, 1 << 30, &x)))
    return s;
  p->pruned = (int)x;
  const cJSON *ks = cJSON_GetObjectItemCaseSensitive(root, "kernels");
  if (!cJSON_IsArray(ks) || cJSON_GetArraySize(ks) < 1 || cJSON_GetArraySize(ks) > 100000)
    return bad(r, "kernels", "a non-empty list of kernels");
  p->kernels = calloc((size_t)cJSON_GetArraySize(ks), sizeof *p->kernels);
  if (!p->kernels)
    return lm_error_set(r->err, LM_ESYS, "plan: out of memory");
  cJSON_ArrayForEach(c, ks) {
    int i = p->nkernels++;
    if ((s = read_kernel(r, c, i, &p->kernels[i])))
      return s;
    for (int j = 0; j < i; j++)
      if (strcmp(p->kernels[j].name, p->kernels[i].name) == 0) {
        char f[64];
        snprintf(f, sizeof f, "kernels[%d].name", i);
        return lm_error_set(r->err, LM_EINPUT,
                            "%s: %s: \"%.64s\" is also kernels[%d].name: a plan "
                            "holds each kernel once",
                            r->name, f, p->kernels[i].name, j);
      }
    if (p->threshold && p->kernels[i].nthresholds == 0)
      return bad(r, "mode.threshold", "false: kernels have no thresholds");
  }
  return LM_OK;
}

lm_status lm_plan_from_json_text(const char *name, const char *text, size_t n,
                                 lm_plan **out, lm_error *err) {
  *out = NULL;
  rd r = {name, err};
  const char *end = NULL;
  cJSON *root = cJSON_ParseWithLengthOpts(text, n, &end, 0);
  if (!root)
    return lm_error_set(err, LM_EINPUT, "%s: not valid JSON (near byte %ld)", name,
                        end ? (long)(end - text) : 0L);
  lm_plan *p = calloc(1, sizeof *p);
  lm_status s = p ? read_doc(&r, root, p) : lm_error_set(err, LM_ESYS, "out of memory");
  cJSON_Delete(root);
  if (s != LM_OK) {
    lm_plan_free(p);
    return s;
  }
  *out = p;
  return LM_OK;
}

void lm_plan_check_fingerprint(const lm_plan *p, lm_plan_load_info *info) {
  memset(info, 0, sizeof *info);
  lm_fingerprint fp;
  lm_error e = {0};
  if (lm_fingerprint_host(&fp, &e) != LM_OK)
    return;
  info->fingerprint_checked = 1;
  for (int i = 0; i < p->nprofiles; i++)
    if (strcmp(p->profiles[i].fingerprint, fp.hash) != 0) {
      info->fingerprint_differs = 1;
      snprintf(info->warning, sizeof info->warning,
               "the plan was priced with a %s profile of fingerprint %s, this machine "
               "is %s: its predictions may not hold here",
               p->profiles[i].isa, p->profiles[i].fingerprint, fp.hash);
      return;
    }
}

lm_status lm_plan_load(const char *path, lm_plan **out, lm_plan_load_info *info,
                       lm_error *err) {
  *out = NULL;
  char *text = NULL;
  size_t n = 0;
  lm_status s = lm_file_read(path, &text, &n, err);
  if (s != LM_OK)
    return s;
  s = lm_plan_from_json_text(path, text, n, out, err);
  free(text);
  if (s == LM_OK && info)
    lm_plan_check_fingerprint(*out, info);
  return s;
}

static int streq(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static int deq(double a, double b) { return memcmp(&a, &b, sizeof a) == 0; }

bool lm_plan_equal(const lm_plan *a, const lm_plan *b) {
  if (!streq(a->workload, b->workload) || a->nprofiles != b->nprofiles ||
      a->threshold != b->threshold || a->robust != b->robust ||
      a->scenarios != b->scenarios || strcmp(a->status, b->status) ||
      !deq(a->objective, b->objective) || !deq(a->greedy_objective, b->greedy_objective) ||
      !deq(a->bound, b->bound) || !deq(a->gap, b->gap) || !deq(a->time_s, b->time_s) ||
      !deq(a->compile_total_ms, b->compile_total_ms) || a->nodes != b->nodes ||
      a->mip_solves != b->mip_solves || a->pruned != b->pruned ||
      a->nkernels != b->nkernels)
    return false;
  for (int i = 0; i < a->nprofiles; i++)
    if (strcmp(a->profiles[i].isa, b->profiles[i].isa) ||
        strcmp(a->profiles[i].fingerprint, b->profiles[i].fingerprint) ||
        strcmp(a->profiles[i].mode, b->profiles[i].mode))
      return false;
  for (int i = 0; i < a->nkernels; i++) {
    const lm_plan_kernel *x = &a->kernels[i], *y = &b->kernels[i];
    if (!streq(x->name, y->name) || !streq(x->path, y->path) ||
        !streq(x->hash, y->hash) || !streq(x->extra, y->extra) ||
        x->nvariants != y->nvariants || x->nbuckets != y->nbuckets ||
        x->nthresholds != y->nthresholds)
      return false;
    for (int v = 0; v < x->nvariants; v++)
      if (strcmp(x->variants[v], y->variants[v]))
        return false;
    for (int s = 0; s < x->nbuckets; s++) {
      const lm_plan_bucket *p = &x->buckets[s], *q = &y->buckets[s];
      if (p->R != q->R || p->C != q->C || !deq(p->weight, q->weight) ||
          p->variant != q->variant || !deq(p->predicted_ns, q->predicted_ns))
        return false;
    }
    for (int t = 0; t < x->nthresholds; t++) {
      const lm_plan_threshold *p = &x->thresholds[t], *q = &y->thresholds[t];
      if (p->C != q->C || p->nruns != q->nruns)
        return false;
      for (int r = 0; r < p->nruns; r++)
        if (p->from_R[r] != q->from_R[r] || p->variant[r] != q->variant[r])
          return false;
    }
  }
  return true;
}
