/* Plans: the solver's result in the workload's terms, and the
 * "lanemap.plan/1" file.
 *
 * A plan names only the variants it compiles; buckets index into that
 * list.  With thresholded dispatch, the buckets of each C in increasing R
 * form runs of one variant each, and the plan lists them as thresholds:
 * run i covers R >= from_R[i] up to the next threshold.  The reader checks
 * every field it needs and names the first bad one with its JSON path
 * ($.kernels[1].buckets[4].variant).  Fields the format does not define
 * are errors; notes ride in "about". */
#include "lanemap/plan.h"

#include "lanemap/json.h"

#include <ctype.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    for (int b = 0; k->buckets && b < k->nbuckets; b++) {
      for (int u = 0; u < k->buckets[b].nunsure; u++)
        free(k->buckets[b].unsure[u]);
      free(k->buckets[b].unsure);
    }
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

/* The near ties of solver bucket b, when there is more than one: the
 * bucket is unsure (lm_plan_bucket.unsure), listed in settling's order of
 * preference (the settled costs rise with the rank). */
static lm_status unsure_list(const lm_plan_pkernel *pk, int b, int nv,
                             lm_plan_bucket *pb, lm_error *err) {
  if (!pk->tie)
    return LM_OK;
  const unsigned char *t = pk->tie + (size_t)b * nv;
  const double *c = pk->cost + (size_t)b * nv; /* settled, scenario 0 */
  int n = 0;
  for (int v = 0; v < nv; v++)
    n += t[v];
  if (n < 2)
    return LM_OK;
  int *set = malloc(sizeof *set * (size_t)n);
  pb->unsure = calloc((size_t)n, sizeof *pb->unsure);
  if (!set || !pb->unsure) {
    free(set);
    return lm_error_set(err, LM_ESYS, "plan: out of memory");
  }
  int m = 0;
  for (int v = 0; v < nv; v++) {
    if (!t[v])
      continue;
    int j = m++;
    for (; j > 0 && c[v] < c[set[j - 1]]; j--)
      set[j] = set[j - 1];
    set[j] = v;
  }
  lm_status s = LM_OK;
  for (int r = 0; r < n && s == LM_OK; r++) {
    char buf[128];
    lm_variant_format(&pk->variants[set[r]], buf, sizeof buf);
    if (!(pb->unsure[pb->nunsure] = lm_strdup(buf)))
      s = lm_error_set(err, LM_ESYS, "plan: out of memory");
    else
      pb->nunsure++;
  }
  free(set);
  return s;
}

lm_status lm_plan_from_result(const lm_workload *w, const lm_profile *const *profiles,
                              const lm_plan_problem *pp, const lm_solve_opts *opts,
                              const lm_solve_result *r, lm_plan **out, lm_error *err) {
  *out = NULL;
  lm_plan *p = calloc(1, sizeof *p);
  lm_status s = LM_OK;
  if (!p)
    return lm_error_set(err, LM_ESYS, "plan: out of memory");
  p->workload = lm_strdup(strcmp(w->name, "<code>") ? w->name : "");
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
  p->settle = pp->settle;
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
    k->name = lm_strdup(wk->k ? wk->k->name : "");
    k->path = lm_strdup(realpath(wk->resolved, abs) ? abs : wk->resolved);
    k->hash = calloc(17, 1);
    k->extra = lm_strdup(wk->extra);
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
        k->variants[k->nvariants++] = lm_strdup(buf);
      }
    }
    for (int b = 0; b < nb; b++) { /* solver order back to workload order */
      int wb = pk->order[b], v = r->choice[r->bucket_start[ki] + b];
      lm_plan_bucket *pb = &k->buckets[wb];
      pb->R = wk->buckets[wb].R;
      pb->C = wk->buckets[wb].C;
      pb->weight = wk->buckets[wb].weight;
      pb->variant = v >= 0 && v < nv ? map[v] : -1;
      const double *point = pk->point ? pk->point : pk->cost;
      pb->predicted_ns = v >= 0 && v < nv ? point[(size_t)b * nv + v] : INFINITY;
      if (s == LM_OK)
        s = unsure_list(pk, b, nv, pb, err);
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

/* Build helpers: a failed allocation sets *oom, checked once at the end. */
static cJSON *put(cJSON *o, const char *key, cJSON *item, int *oom) {
  if (!item || !o || !cJSON_AddItemToObject(o, key, item)) {
    cJSON_Delete(item);
    *oom = 1;
    return NULL;
  }
  return item;
}

static cJSON *push(cJSON *a, cJSON *item, int *oom) {
  if (!item || !a || !cJSON_AddItemToArray(a, item)) {
    cJSON_Delete(item);
    *oom = 1;
    return NULL;
  }
  return item;
}

static cJSON *str(const char *s) { return cJSON_CreateString(s ? s : ""); }

static void put_kernel(cJSON *ks, const lm_plan_kernel *k, int *oom) {
  cJSON *jk = push(ks, cJSON_CreateObject(), oom);
  put(jk, "name", str(k->name), oom);
  put(jk, "path", str(k->path), oom);
  put(jk, "hash", str(k->hash), oom);
  if (k->extra)
    put(jk, "extra", str(k->extra), oom);
  cJSON *vs = put(jk, "variants", cJSON_CreateArray(), oom);
  for (int v = 0; v < k->nvariants; v++)
    push(vs, str(k->variants[v]), oom);
  cJSON *bs = put(jk, "buckets", cJSON_CreateArray(), oom);
  for (int b = 0; b < k->nbuckets; b++) {
    const lm_plan_bucket *pb = &k->buckets[b];
    cJSON *jb = push(bs, cJSON_CreateObject(), oom);
    put(jb, "R", lm_json_num((double)pb->R), oom);
    put(jb, "C", lm_json_num((double)pb->C), oom);
    put(jb, "weight", lm_json_num(pb->weight), oom);
    put(jb, "variant", lm_json_num(pb->variant), oom);
    put(jb, "predicted_ns", lm_json_num(pb->predicted_ns), oom);
    if (pb->nunsure > 0) {
      cJSON *ju = put(jb, "unsure", cJSON_CreateArray(), oom);
      for (int u = 0; u < pb->nunsure; u++)
        push(ju, str(pb->unsure[u]), oom);
    }
  }
  if (!k->nthresholds)
    return;
  cJSON *ts = put(jk, "thresholds", cJSON_CreateArray(), oom);
  for (int t = 0; t < k->nthresholds; t++) {
    const lm_plan_threshold *th = &k->thresholds[t];
    cJSON *jt = push(ts, cJSON_CreateObject(), oom);
    put(jt, "C", lm_json_num((double)th->C), oom);
    cJSON *runs = put(jt, "runs", cJSON_CreateArray(), oom);
    for (int r = 0; r < th->nruns; r++) {
      cJSON *jr = push(runs, cJSON_CreateObject(), oom);
      put(jr, "from_R", lm_json_num((double)th->from_R[r]), oom);
      put(jr, "variant", lm_json_num(th->variant[r]), oom);
    }
  }
}

lm_status lm_plan_to_json_text(const lm_plan *p, char **out, lm_error *err) {
  *out = NULL;
  int oom = 0;
  cJSON *root = cJSON_CreateObject();
  oom = !root;
  put(root, "schema", str(LM_PLAN_SCHEMA), &oom);
  put(root, "workload", str(p->workload), &oom);
  cJSON *pr = put(root, "profiles", cJSON_CreateArray(), &oom);
  for (int i = 0; i < p->nprofiles; i++) {
    cJSON *j = push(pr, cJSON_CreateObject(), &oom);
    put(j, "isa", str(p->profiles[i].isa), &oom);
    put(j, "fingerprint", str(p->profiles[i].fingerprint), &oom);
    put(j, "mode", str(p->profiles[i].mode), &oom);
  }
  cJSON *mode = put(root, "mode", cJSON_CreateObject(), &oom);
  put(mode, "threshold", cJSON_CreateBool(p->threshold), &oom);
  put(mode, "robust", cJSON_CreateBool(p->robust), &oom);
  put(mode, "settle", cJSON_CreateBool(p->settle), &oom);
  put(mode, "scenarios", lm_json_num(p->scenarios), &oom);
  cJSON *sv = put(root, "solver", cJSON_CreateObject(), &oom);
  put(sv, "status", str(p->status), &oom);
  put(sv, "objective_ns", lm_json_num(p->objective), &oom);
  put(sv, "greedy_objective_ns", lm_json_num(p->greedy_objective), &oom);
  put(sv, "bound_ns", lm_json_num(p->bound), &oom);
  put(sv, "gap", lm_json_num(p->gap), &oom);
  put(sv, "time_s", lm_json_num(p->time_s), &oom);
  put(sv, "compile_total_ms", lm_json_num(p->compile_total_ms), &oom);
  put(sv, "nodes", lm_json_num((double)p->nodes), &oom);
  put(sv, "mip_solves", lm_json_num(p->mip_solves), &oom);
  put(sv, "pruned", lm_json_num(p->pruned), &oom);
  cJSON *ks = put(root, "kernels", cJSON_CreateArray(), &oom);
  for (int i = 0; i < p->nkernels; i++)
    put_kernel(ks, &p->kernels[i], &oom);
  lm_status s = oom ? lm_error_set(err, LM_ESYS, "plan: out of memory")
                    : lm_json_print(root, true, out, NULL, err);
  cJSON_Delete(root);
  return s;
}

lm_status lm_plan_save(const lm_plan *p, const char *path, lm_error *err) {
  char *t = NULL;
  lm_status s = lm_plan_to_json_text(p, &t, err);
  if (s != LM_OK)
    return s;
  s = lm_file_write_atomic(path, t, strlen(t), err);
  free(t);
  return s;
}

/* Reading: every field is typed and range-checked by lm_json, which names
 * the field by its JSON path; what lm_json cannot know (a variant string,
 * a shape given twice, a threshold run out of order) is checked here and
 * named the same way. */
typedef lm_json_rd rd;

/* Notes may ride in "about", at the top and in a kernel. */
static const char *const top_fields[] = {"schema", "about", "workload",
                                         "profiles", "mode", "solver",
                                         "kernels", NULL};
static const char *const profile_fields[] = {"isa", "fingerprint", "mode",
                                             NULL};
static const char *const mode_fields[] = {"threshold", "robust", "settle",
                                          "scenarios", NULL};
static const char *const solver_fields[] = {
    "status", "objective_ns", "greedy_objective_ns", "bound_ns", "gap",
    "time_s", "compile_total_ms", "nodes", "mip_solves", "pruned", NULL};
static const char *const kernel_fields[] = {"name",     "about",   "path",
                                            "hash",     "extra",   "variants",
                                            "buckets",  "thresholds", NULL};
static const char *const bucket_fields[] = {"R", "C", "weight", "variant",
                                            "predicted_ns", "unsure", NULL};
static const char *const threshold_fields[] = {"C", "runs", NULL};
static const char *const run_fields[] = {"from_R", "variant", NULL};

static int is_hex16(const char *s) {
  if (strlen(s) != 16)
    return 0;
  for (const char *c = s; *c; c++)
    if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f')))
      return 0;
  return 1;
}

static lm_status get_hex16(rd *r, const cJSON *o, const char *key,
                           const char **out) {
  lm_status s = lm_json_string(r, o, key, 0, 0, out);
  if (s == LM_OK && !is_hex16(*out))
    return lm_json_expected(r, o, key, "16 lower-case hex digits");
  return s;
}

/* A copy of a string read from the tree. */
static lm_status keep(rd *r, const char *s, char **out) {
  *out = s ? lm_strdup(s) : NULL;
  return !s || *out ? LM_OK : lm_error_set(r->err, LM_ESYS, "plan: out of memory");
}

static lm_status oom(rd *r) {
  return lm_error_set(r->err, LM_ESYS, "plan: out of memory");
}

#define MAXEXT LM_WORKLOAD_MAX_EXTENT
#define MAXLIST 100000 /* variants or kernels in one plan */

/* A bucket's optional "unsure": at least two distinct variant strings. */
static lm_status read_unsure(rd *r, const cJSON *c, lm_plan_bucket *pb) {
  const cJSON *us = NULL, *u;
  lm_status s = lm_json_array(r, c, "unsure", LM_JSON_OPTIONAL, 2, MAXLIST, &us);
  if (s || !us)
    return s;
  if (!(pb->unsure = calloc((size_t)cJSON_GetArraySize(us), sizeof *pb->unsure)))
    return oom(r);
  cJSON_ArrayForEach(u, us) {
    const char *text = NULL;
    lm_variant v;
    lm_error e2 = {0};
    if ((s = lm_json_string(r, u, NULL, 0, 0, &text)))
      return s;
    if (lm_variant_parse(text, &v, &e2) != LM_OK)
      return lm_json_error(r, u, NULL, "%s", e2.msg);
    for (int j = 0; j < pb->nunsure; j++)
      if (strcmp(pb->unsure[j], text) == 0)
        return lm_json_error(r, u, NULL, "%s is listed twice", text);
    if (!(pb->unsure[pb->nunsure] = lm_strdup(text)))
      return oom(r);
    pb->nunsure++;
  }
  return LM_OK;
}

static lm_status read_buckets(rd *r, const cJSON *jk, lm_plan_kernel *k) {
  const cJSON *bs = NULL, *c;
  int64_t x;
  lm_status s = lm_json_array(r, jk, "buckets", 0, 1, LM_WORKLOAD_MAX_BUCKETS, &bs);
  if (s)
    return s;
  if (!(k->buckets = calloc((size_t)cJSON_GetArraySize(bs), sizeof *k->buckets)))
    return oom(r);
  lm_strset *shapes = lm_strset_new(); /* (R, C) -> bucket */
  if (!shapes)
    return oom(r);
  cJSON_ArrayForEach(c, bs) {
    int b = k->nbuckets;
    lm_plan_bucket *pb = &k->buckets[b];
    pb->predicted_ns = INFINITY; /* null */
    if ((s = lm_json_object(r, c, NULL, 0, &c)) ||
        (s = lm_json_fields(r, c, bucket_fields)) ||
        (s = lm_json_int(r, c, "R", 0, 1, MAXEXT, &pb->R)) ||
        (s = lm_json_int(r, c, "C", 0, 1, MAXEXT, &pb->C)) ||
        (s = lm_json_number(r, c, "weight", 0, 0, DBL_MAX, &pb->weight)) ||
        (s = lm_json_int(r, c, "variant", 0, 0, k->nvariants - 1, &x)) ||
        (s = lm_json_number(r, c, "predicted_ns", LM_JSON_NULL_OK, 0, DBL_MAX,
                            &pb->predicted_ns)) ||
        (s = read_unsure(r, c, pb)))
      break;
    pb->variant = (int)x;
    int64_t key[2] = {pb->R, pb->C}, o;
    if (lm_strset_add(shapes, key, sizeof key, b, &o) != LM_OK) {
      s = oom(r);
      break;
    }
    if (o >= 0) {
      s = lm_json_error(r, c, NULL,
                        "shape (R=%" PRId64 ", C=%" PRId64
                        ") is also the shape of buckets[%d]",
                        pb->R, pb->C, (int)o);
      break;
    }
    k->nbuckets++;
  }
  if (s && k->nbuckets < cJSON_GetArraySize(bs)) {
    /* the bucket that failed is not counted: free its list here */
    lm_plan_bucket *pb = &k->buckets[k->nbuckets];
    for (int u = 0; u < pb->nunsure; u++)
      free(pb->unsure[u]);
    free(pb->unsure);
    pb->unsure = NULL;
    pb->nunsure = 0;
  }
  lm_strset_free(shapes);
  return s;
}

static lm_status read_thresholds(rd *r, const cJSON *jk, lm_plan_kernel *k) {
  const cJSON *ts = NULL, *c;
  int64_t x;
  lm_status s = lm_json_array(r, jk, "thresholds", LM_JSON_OPTIONAL, 0,
                              k->nbuckets, &ts);
  if (s || !ts)
    return s;
  k->thresholds = calloc((size_t)cJSON_GetArraySize(ts) + 1, sizeof *k->thresholds);
  if (!k->thresholds)
    return oom(r);
  cJSON_ArrayForEach(c, ts) {
    int t = k->nthresholds;
    lm_plan_threshold *th = &k->thresholds[t];
    const cJSON *runs = NULL, *jr;
    if ((s = lm_json_object(r, c, NULL, 0, &c)) ||
        (s = lm_json_fields(r, c, threshold_fields)) ||
        (s = lm_json_int(r, c, "C", 0, 1, MAXEXT, &th->C)))
      return s;
    k->nthresholds++;
    for (int o = 0; o < t; o++)
      if (k->thresholds[o].C == th->C)
        return lm_json_error(r, c, "C", "C=%" PRId64 " is also thresholds[%d].C",
                             th->C, o);
    if ((s = lm_json_array(r, c, "runs", 0, 1, k->nbuckets, &runs)))
      return s;
    int n = cJSON_GetArraySize(runs);
    th->from_R = malloc(sizeof *th->from_R * (size_t)n);
    th->variant = malloc(sizeof *th->variant * (size_t)n);
    if (!th->from_R || !th->variant)
      return oom(r);
    cJSON_ArrayForEach(jr, runs) {
      int q = th->nruns;
      if ((s = lm_json_object(r, jr, NULL, 0, &jr)) ||
          (s = lm_json_fields(r, jr, run_fields)) ||
          (s = lm_json_int(r, jr, "from_R", 0, 1, MAXEXT, &x)))
        return s;
      if (q > 0 && x <= th->from_R[q - 1])
        return lm_json_error(r, jr, "from_R",
                             "expected an R above the previous run's (%" PRId64
                             "), got %" PRId64,
                             th->from_R[q - 1], x);
      th->from_R[q] = x;
      if ((s = lm_json_int(r, jr, "variant", 0, 0, k->nvariants - 1, &x)))
        return s;
      th->variant[q] = (int)x;
      th->nruns++;
    }
  }
  return LM_OK;
}

static lm_status read_kernel(rd *r, const cJSON *jk, lm_plan_kernel *k) {
  const char *name = NULL, *path = NULL, *hash = NULL, *extra = NULL;
  const cJSON *vs = NULL, *c;
  lm_status s;
  if ((s = lm_json_object(r, jk, NULL, 0, &jk)) ||
      (s = lm_json_fields(r, jk, kernel_fields)) ||
      (s = lm_json_string(r, jk, "name", LM_JSON_EMPTY_OK, 256, &name)) ||
      (s = lm_json_string(r, jk, "path", 0, 4000, &path)) ||
      (s = get_hex16(r, jk, "hash", &hash)) ||
      (s = lm_json_string(r, jk, "extra", LM_JSON_OPTIONAL | LM_JSON_EMPTY_OK,
                          256, &extra)) ||
      (s = keep(r, name, &k->name)) || (s = keep(r, path, &k->path)) ||
      (s = keep(r, hash, &k->hash)) || (s = keep(r, extra, &k->extra)) ||
      (s = lm_json_array(r, jk, "variants", 0, 1, MAXLIST, &vs)))
    return s;
  if (!(k->variants = calloc((size_t)cJSON_GetArraySize(vs), sizeof *k->variants)))
    return oom(r);
  /* a variant given twice would be compiled twice, and which of the two a
   * bucket means is the author's mistake: refused, by its canonical text */
  lm_strset *seen = lm_strset_new();
  if (!seen)
    return oom(r);
  cJSON_ArrayForEach(c, vs) {
    lm_variant v;
    lm_error e2 = {0};
    const char *text = NULL;
    char canon[256];
    int64_t o;
    if ((s = lm_json_string(r, c, NULL, 0, 0, &text)))
      break;
    if (lm_variant_parse(text, &v, &e2) != LM_OK) {
      s = lm_json_error(r, c, NULL, "%s", e2.msg);
      break;
    }
    lm_variant_format(&v, canon, sizeof canon);
    if (lm_strset_add_str(seen, canon, k->nvariants, &o) != LM_OK) {
      s = oom(r);
      break;
    }
    if (o >= 0) {
      char there[256];
      lm_json_path(r, vs, NULL, there, sizeof there);
      s = lm_json_error(r, c, NULL, "duplicate variant '%s' (also at %s[%d])",
                        text, there, (int)o);
      break;
    }
    if ((s = keep(r, text, &k->variants[k->nvariants])))
      break;
    k->nvariants++;
  }
  lm_strset_free(seen);
  if (s)
    return s;
  if ((s = read_buckets(r, jk, k)))
    return s;
  return read_thresholds(r, jk, k);
}

static lm_status read_profiles(rd *r, const cJSON *root, lm_plan *p) {
  const cJSON *pr = NULL, *c;
  lm_status s = lm_json_array(r, root, "profiles", 0, 1, LM_ISA__COUNT, &pr);
  if (s)
    return s;
  cJSON_ArrayForEach(c, pr) {
    int i = p->nprofiles;
    const char *isa = NULL, *fp = NULL, *mode = NULL;
    lm_isa is;
    lm_profile_mode m;
    lm_error e2 = {0};
    if ((s = lm_json_object(r, c, NULL, 0, &c)) ||
        (s = lm_json_fields(r, c, profile_fields)) ||
        (s = lm_json_string(r, c, "isa", 0, sizeof p->profiles[i].isa - 1, &isa)) ||
        (s = get_hex16(r, c, "fingerprint", &fp)) ||
        (s = lm_json_string(r, c, "mode", 0, sizeof p->profiles[i].mode - 1, &mode)))
      return s;
    if (lm_isa_parse(isa, &is, &e2) != LM_OK)
      return lm_json_expected(r, c, "isa", "an ISA target (sse4.2, avx2, avx512, host, aarch64-neon, aarch64-sve128/256/512)");
    if (lm_profile_mode_parse(mode, &m, &e2) != LM_OK)
      return lm_json_expected(r, c, "mode", "\"default\", \"quick\" or \"full\"");
    snprintf(p->profiles[i].isa, sizeof p->profiles[i].isa, "%s", isa);
    snprintf(p->profiles[i].fingerprint, sizeof p->profiles[i].fingerprint, "%s", fp);
    snprintf(p->profiles[i].mode, sizeof p->profiles[i].mode, "%s", mode);
    p->nprofiles++;
  }
  return LM_OK;
}

static lm_status read_solver(rd *r, const cJSON *root, lm_plan *p) {
  const cJSON *mode = NULL, *sv = NULL;
  const char *status = NULL;
  int64_t x = 0, nodes = 0, mip = 0, pruned = 0;
  bool threshold = false, robust = false, settle = false;
  lm_status s;
  if ((s = lm_json_object(r, root, "mode", 0, &mode)) ||
      (s = lm_json_fields(r, mode, mode_fields)) ||
      (s = lm_json_bool(r, mode, "threshold", 0, &threshold)) ||
      (s = lm_json_bool(r, mode, "robust", 0, &robust)) ||
      (s = lm_json_bool(r, mode, "settle", LM_JSON_OPTIONAL, &settle)) ||
      (s = lm_json_int(r, mode, "scenarios", 0, 1, 1000000, &x)))
    return s;
  p->threshold = threshold;
  p->robust = robust;
  p->settle = settle;
  p->scenarios = (int)x;
  if ((s = lm_json_object(r, root, "solver", 0, &sv)) ||
      (s = lm_json_fields(r, sv, solver_fields)) ||
      (s = lm_json_string(r, sv, "status", 0, sizeof p->status - 1, &status)))
    return s;
  int known = 0;
  for (int q = LM_SOLVE_OPTIMAL; q <= LM_SOLVE_INFEASIBLE; q++)
    known |= strcmp(status, lm_solve_status_name((lm_solve_status)q)) == 0;
  if (!known)
    return lm_json_expected(r, sv, "status",
                            "a solver status (optimal, feasible, time-limit, ...)");
  snprintf(p->status, sizeof p->status, "%s", status);
  p->greedy_objective = INFINITY; /* null: no greedy plan */
  p->bound = -INFINITY;           /* null: no bound */
  p->gap = INFINITY;              /* null: no gap */
  if ((s = lm_json_number(r, sv, "objective_ns", 0, 0, DBL_MAX, &p->objective)) ||
      (s = lm_json_number(r, sv, "greedy_objective_ns", LM_JSON_NULL_OK, 0, DBL_MAX,
                          &p->greedy_objective)) ||
      (s = lm_json_number(r, sv, "bound_ns", LM_JSON_NULL_OK, -DBL_MAX, DBL_MAX,
                          &p->bound)) ||
      (s = lm_json_number(r, sv, "gap", LM_JSON_NULL_OK, 0, DBL_MAX, &p->gap)) ||
      (s = lm_json_number(r, sv, "time_s", 0, 0, DBL_MAX, &p->time_s)) ||
      (s = lm_json_number(r, sv, "compile_total_ms", 0, 0, DBL_MAX,
                          &p->compile_total_ms)) ||
      (s = lm_json_int(r, sv, "nodes", 0, 0, INT64_C(1) << 52, &nodes)) ||
      (s = lm_json_int(r, sv, "mip_solves", 0, 0, 1 << 30, &mip)) ||
      (s = lm_json_int(r, sv, "pruned", 0, 0, 1 << 30, &pruned)))
    return s;
  p->nodes = (long)nodes;
  p->mip_solves = (int)mip;
  p->pruned = (int)pruned;
  return LM_OK;
}

static lm_status read_doc(rd *r, const cJSON *root, lm_plan *p) {
  const char *schema = NULL, *workload = NULL;
  const cJSON *ks = NULL, *c;
  lm_status s;
  if (!cJSON_IsObject(root))
    return lm_json_expected(r, root, NULL, "a JSON object");
  if ((s = lm_json_string(r, root, "schema", 0, 0, &schema)))
    return s;
  if (strncmp(schema, "lanemap.plan/", 13) != 0 || atoi(schema + 13) != 1 ||
      !isdigit((unsigned char)schema[13]))
    return lm_json_expected(r, root, "schema", "\"" LM_PLAN_SCHEMA "\"");
  if ((s = lm_json_fields(r, root, top_fields)) ||
      (s = lm_json_string(r, root, "workload", LM_JSON_EMPTY_OK, 4000, &workload)) ||
      (s = keep(r, workload, &p->workload)) || (s = read_profiles(r, root, p)) ||
      (s = read_solver(r, root, p)) ||
      (s = lm_json_array(r, root, "kernels", 0, 1, MAXLIST, &ks)))
    return s;
  if (!(p->kernels = calloc((size_t)cJSON_GetArraySize(ks), sizeof *p->kernels)))
    return oom(r);
  cJSON_ArrayForEach(c, ks) {
    int i = p->nkernels++;
    if ((s = read_kernel(r, c, &p->kernels[i])))
      return s;
    for (int j = 0; j < i; j++)
      if (strcmp(p->kernels[j].name, p->kernels[i].name) == 0)
        return lm_json_error(r, c, "name",
                             "\"%.64s\" is also kernels[%d].name: a plan holds "
                             "each kernel once",
                             p->kernels[i].name, j);
    if (p->threshold && p->kernels[i].nthresholds == 0)
      return lm_json_error(r, c, NULL,
                           "has no thresholds, but $.mode.threshold is true");
  }
  return LM_OK;
}

lm_status lm_plan_from_json_text(const char *name, const char *text, size_t n,
                                 lm_plan **out, lm_error *err) {
  *out = NULL;
  cJSON *root = NULL;
  lm_status s = lm_json_parse(name, text, n, &root, err);
  if (s != LM_OK)
    return s;
  rd r = {name, root, err};
  lm_plan *p = calloc(1, sizeof *p);
  s = p ? read_doc(&r, root, p) : lm_error_set(err, LM_ESYS, "plan: out of memory");
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
  lm_status s = lm_json_read_file(path, &text, &n, err);
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
      a->settle != b->settle || a->scenarios != b->scenarios || strcmp(a->status, b->status) ||
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
          p->variant != q->variant || !deq(p->predicted_ns, q->predicted_ns) ||
          p->nunsure != q->nunsure)
        return false;
      for (int u = 0; u < p->nunsure; u++)
        if (strcmp(p->unsure[u], q->unsure[u]))
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
