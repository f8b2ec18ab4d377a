/* lm_deploy, `lanemap evaluate --deploy`: plans under compile budgets,
 * judged on shapes they were never planned for (lanemap/heldout.h has the
 * outline; docs/evaluation.md, "Deployment", the reading).
 *
 *   spec --> workload (planning buckets) + held-out shapes
 *        --profile, per budget K, per predicted policy--> a threshold plan
 *        --lm_plan_lookup per shape--> the variant it runs (cases.json "time")
 *        --lm_evaluate--> every shape measured under the oracle's split
 *                         pruning, always with the plans' variants
 *        --measured times, per K--> the budget oracle
 *        --> regret against the per-shape best and the budget oracle
 *
 * A shape's times are the screening medians of its interleaved rounds
 * (every variant measured alike, so every policy and both oracles are
 * priced on one scale).  The calibrated plan's dispatch is compiled and
 * every shape launched through it and checked against the FP64 oracle,
 * which also checks that lm_plan_lookup and the dispatch agree. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heldout/deploy.h"
#include "heldout/machines.h"
#include "heldout/note.h"

#include "lanemap/calibrate.h"
#include "lanemap/dispatch.h"
#include "lanemap/json.h"
#include "lanemap/verify.h"

static const char *const policy_names[LM_DEPLOY__COUNT] = {
    "plan",          "robust",          "greedy",
    "always-packet", "default-profile", "inductor-like",
    "budget-oracle"};

const char *lm_deploy_policy_name(lm_deploy_policy p) {
  return p >= 0 && p < LM_DEPLOY__COUNT ? policy_names[p] : "?";
}

void lm_deploy_options_defaults(lm_deploy_options *o) {
  memset(o, 0, sizeof *o);
  o->isa = LM_ISA__COUNT;
  o->seed = 1;
}

/* ---- the spec --------------------------------------------------------- */

void lm_deploy_spec_free(lm_deploy_spec *s) {
  for (int i = 0; i < s->nkernels; i++) {
    free(s->k[i].path);
    free(s->k[i].C);
    free(s->k[i].rmax);
    lm_kernel_free(s->k[i].k);
  }
  free(s->k);
  memset(s, 0, sizeof *s);
}

static const char *const spec_fields[] = {
    "schema",       "about",   "seed",         "shapes",
    "quick_shapes", "buckets", "max_elements", "quick_max_elements",
    "kernels",      NULL};
static const char *const kernel_fields[] = {"kernel", "C", "R", "weight", NULL};

/* The largest buffer of k per instance at C columns: the per-row count
 * that caps R. */
static lm_status row_elements(const lm_kernel *k, int64_t C, int64_t *out,
                              lm_error *err) {
  lm_shape sh;
  lm_status st = lm_shape_bind(k, 1, C, NULL, &sh, err);
  if (st != LM_OK)
    return st;
  *out = 1;
  for (int p = 0; p < k->nparams; p++)
    if (k->params[p].kind == LM_PARAM_BUFFER) {
      int64_t n = lm_param_count(k, p, &sh);
      *out = n > *out ? n : *out;
    }
  return LM_OK;
}

static lm_status spec_kernel(lm_json_rd *r, const cJSON *j, const char *dir,
                             int64_t cap, lm_deploy_kernel *k) {
  const char *file;
  const cJSON *cs, *rr;
  double weight = 1;
  lm_status st;
  if ((st = lm_json_fields(r, j, kernel_fields)) ||
      (st = lm_json_string(r, j, "kernel", 0, 0, &file)) ||
      (st = lm_json_array(r, j, "C", 0, 1, 16, &cs)) ||
      (st = lm_json_array(r, j, "R", 0, 2, 2, &rr)) ||
      (st = lm_json_number(r, j, "weight", LM_JSON_OPTIONAL, 0, 1e12, &weight)))
    return st;
  if (!(weight > 0))
    return lm_json_error(r, j, "weight", "expected a number > 0, got 0");
  k->weight = weight;
  size_t n = strlen(dir) + strlen(file) + 2;
  if (!(k->path = malloc(n)))
    return lm_error_set(r->err, LM_ESYS, "out of memory");
  snprintf(k->path, n, "%s%s%s", file[0] == '/' ? "" : dir,
           file[0] == '/' ? "" : "/", file);
  if ((st = lm_kernel_load(k->path, &k->k, r->err)) != LM_OK) {
    char msg[sizeof r->err->msg];
    snprintf(msg, sizeof msg, "%s", r->err->msg);
    return lm_json_error(r, j, "kernel", "%s", msg);
  }
  if ((st = lm_json_int(r, rr->child, NULL, 0, 1, LM_WORKLOAD_MAX_EXTENT,
                        &k->from)) ||
      (st = lm_json_int(r, rr->child->next, NULL, 0, k->from,
                        LM_WORKLOAD_MAX_EXTENT, &k->to)))
    return st;
  k->nC = cJSON_GetArraySize(cs);
  k->C = calloc((size_t)k->nC, sizeof *k->C);
  k->rmax = calloc((size_t)k->nC, sizeof *k->rmax);
  if (!k->C || !k->rmax)
    return lm_error_set(r->err, LM_ESYS, "out of memory");
  int i = 0;
  for (const cJSON *c = cs->child; c; c = c->next, i++) {
    int64_t per_row;
    if ((st = lm_json_int(r, c, NULL, 0, 1, LM_WORKLOAD_MAX_EXTENT, &k->C[i])))
      return st;
    for (int j2 = 0; j2 < i; j2++)
      if (k->C[j2] == k->C[i])
        return lm_json_error(r, c, NULL, "C %" PRId64 " given twice", k->C[i]);
    if ((st = row_elements(k->k, k->C[i], &per_row, r->err)) != LM_OK) {
      char msg[sizeof r->err->msg];
      snprintf(msg, sizeof msg, "%s", r->err->msg);
      return lm_json_error(r, c, NULL, "%s", msg);
    }
    k->rmax[i] = k->to < cap / per_row ? k->to : cap / per_row;
    if (k->rmax[i] < k->from)
      return lm_json_error(r, c, NULL,
                           "C %" PRId64 " leaves no R in [%" PRId64 ", %" PRId64
                           "] under %" PRId64 " elements per buffer",
                           k->C[i], k->from, k->to, cap);
  }
  return LM_OK;
}

lm_status lm_deploy_spec_load(const char *path, int quick, lm_deploy_spec *out,
                              lm_error *err) {
  memset(out, 0, sizeof *out);
  cJSON *root = NULL;
  lm_status st = lm_json_load(path, &root, err);
  if (st != LM_OK)
    return st;
  lm_json_rd r = {path, root, err};
  const char *schema;
  const cJSON *ks;
  int64_t seed = 1, shapes = 8, qshapes = 4, buckets = 6;
  int64_t maxe = INT64_C(1) << 24, qmaxe = INT64_C(1) << 22;
  if ((st = lm_json_object(&r, root, NULL, 0, &(const cJSON *){0})) ||
      (st = lm_json_fields(&r, root, spec_fields)) ||
      (st = lm_json_string(&r, root, "schema", 0, 0, &schema)))
    goto done;
  if (strcmp(schema, LM_DEPLOY_SCHEMA) != 0) {
    st = lm_json_error(&r, root, "schema", "expected \"%s\", got \"%.64s\"",
                       LM_DEPLOY_SCHEMA, schema);
    goto done;
  }
  if ((st = lm_json_int(&r, root, "seed", LM_JSON_OPTIONAL, 0, INT64_C(1) << 53,
                        &seed)) ||
      (st =
           lm_json_int(&r, root, "shapes", LM_JSON_OPTIONAL, 1, 64, &shapes)) ||
      (st = lm_json_int(&r, root, "quick_shapes", LM_JSON_OPTIONAL, 1, 64,
                        &qshapes)) ||
      (st = lm_json_int(&r, root, "buckets", LM_JSON_OPTIONAL, 1, 64,
                        &buckets)) ||
      (st = lm_json_int(&r, root, "max_elements", LM_JSON_OPTIONAL, 1,
                        INT64_C(1) << 30, &maxe)) ||
      (st = lm_json_int(&r, root, "quick_max_elements", LM_JSON_OPTIONAL, 1,
                        INT64_C(1) << 30, &qmaxe)) ||
      (st = lm_json_array(&r, root, "kernels", 0, 1, 256, &ks)))
    goto done;
  out->seed = (uint64_t)seed;
  out->shapes = (int)(quick ? qshapes : shapes);
  out->buckets = (int)buckets;
  out->max_elements = quick ? qmaxe : maxe;
  int nk = cJSON_GetArraySize(ks);
  if (!(out->k = calloc((size_t)nk, sizeof *out->k))) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto done;
  }
  out->nkernels = nk;
  /* kernel paths absolute: the case list lm_evaluate reads lives elsewhere */
  char spec_dir[PATH_MAX], dir[PATH_MAX];
  snprintf(spec_dir, sizeof spec_dir, "%s", path);
  char *slash = strrchr(spec_dir, '/');
  if (slash)
    *slash = 0;
  else
    snprintf(spec_dir, sizeof spec_dir, ".");
  if (!realpath(spec_dir[0] ? spec_dir : "/", dir)) {
    st = lm_error_set(err, LM_EINPUT, "%s: cannot resolve its folder", path);
    goto done;
  }
  int i = 0;
  for (const cJSON *k = ks->child; k && st == LM_OK; k = k->next, i++) {
    if ((st = lm_json_object(&r, k, NULL, 0, &(const cJSON *){0})) ||
        (st = spec_kernel(&r, k, dir, out->max_elements, &out->k[i])))
      break;
    for (int j = 0; j < i && st == LM_OK; j++)
      if (strcmp(out->k[j].k->name, out->k[i].k->name) == 0)
        st = lm_json_error(&r, k, "kernel", "kernel %s given twice",
                           out->k[i].k->name);
    int64_t free_R = 0; /* R values no planning bucket takes */
    for (int c = 0; c < out->k[i].nC && st == LM_OK; c++) {
      int64_t b[64];
      int nb = lm_deploy_buckets(&out->k[i], c, out->buckets, b);
      free_R += out->k[i].rmax[c] - out->k[i].from + 1 - nb;
    }
    if (st == LM_OK && free_R < 1)
      st = lm_json_error(&r, k, "R",
                         "leaves no R outside the %d planning buckets to "
                         "hold out",
                         out->buckets);
  }
done:
  cJSON_Delete(root);
  if (st != LM_OK)
    lm_deploy_spec_free(out);
  return st;
}

/* ---- planning buckets and held-out shapes ------------------------------ */

int lm_deploy_buckets(const lm_deploy_kernel *k, int c, int n, int64_t *R) {
  int64_t lo = k->from, hi = k->rmax[c];
  int m = 0;
  for (int i = 0; i < n; i++) {
    double t = n > 1 ? (double)i / (n - 1) : 0;
    int64_t r = (int64_t)llround((double)lo * pow((double)hi / lo, t));
    if (r < lo)
      r = lo;
    if (r > hi)
      r = hi;
    if (m == 0 || r > R[m - 1])
      R[m++] = r;
  }
  return m;
}

static uint64_t splitmix(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static double uniform01(uint64_t *s) {
  return (double)(splitmix(s) >> 11) * 0x1.0p-53;
}

int lm_deploy_shapes(const lm_deploy_spec *s, int ki, int n, int64_t *R,
                     int64_t *C) {
  const lm_deploy_kernel *k = &s->k[ki];
  uint64_t st = lm_fnv1a(s->seed, k->k->name, strlen(k->k->name));
  int m = 0;
  for (int tries = 0; m < n && tries < 1000 * n; tries++) {
    int c = (int)(splitmix(&st) % (uint64_t)k->nC);
    double lo = log((double)k->from), hi = log((double)k->rmax[c] + 1);
    int64_t r = (int64_t)floor(exp(lo + (hi - lo) * uniform01(&st)));
    r = r < k->from ? k->from : r > k->rmax[c] ? k->rmax[c] : r;
    int64_t b[64];
    int nb = lm_deploy_buckets(k, c, s->buckets, b), taken = 0;
    for (int i = 0; i < nb; i++)
      taken |= b[i] == r;
    for (int i = 0; i < m; i++)
      taken |= R[i] == r && C[i] == k->C[c];
    if (!taken)
      R[m] = r, C[m] = k->C[c], m++;
  }
  return m;
}

/* ---- the pipeline -------------------------------------------------------- */

/* A note line to the caller (heldout/note.h). */
#define note(d, warning, ...)                                                  \
  lm_eval_notef((d)->o->note, (d)->o->ctx, warning, __VA_ARGS__)

static lm_isa default_isa(void) {
  return lm_isa_runnable(LM_ISA_AVX512) ? LM_ISA_AVX512
         : lm_isa_runnable(LM_ISA_AVX2) ? LM_ISA_AVX2
                                        : LM_ISA_HOST;
}

/* The workload: per spec kernel, its planning buckets at every column,
 * each weighing the kernel's weight times the share of the distribution of
 * (R, C) it serves. */
static lm_status make_workload(lm_deploy_state *d, lm_error *err) {
  lm_status st = LM_OK;
  if (!(d->w = lm_workload_new("deploy", NULL, err)))
    return err && err->status ? err->status : LM_ESYS;
  lm_eval_opts eo;
  lm_eval_defaults(&eo);
  int nw = 0;
  while (nw < 8 && eo.workers[nw])
    nw++;
  if ((st = lm_workload_set_isas(d->w, &d->isa, 1, err)) ||
      (st = lm_workload_set_workers(d->w, eo.workers, nw, err)))
    return st;
  for (int i = 0; i < d->spec.nkernels && st == LM_OK; i++) {
    const lm_deploy_kernel *k = &d->spec.k[i];
    int ki;
    if ((st = lm_workload_add_kernel(d->w, k->path, NULL, &ki, err)))
      break;
    for (int c = 0; c < k->nC && st == LM_OK; c++) {
      int64_t R[64];
      int n = lm_deploy_buckets(k, c, d->spec.buckets, R);
      double span = log((double)k->rmax[c] + 1) - log((double)k->from);
      for (int b = 0; b < n && st == LM_OK; b++) {
        /* under thresholded dispatch bucket b serves [R_b, R_b+1): its
         * weight is that interval's share of the log-uniform R (the top
         * bucket serves R = rmax alone), and C is uniform over the
         * kernel's columns */
        double next = b + 1 < n ? (double)R[b + 1] : (double)k->rmax[c] + 1;
        double share = (log(next) - log((double)R[b])) / span;
        st = lm_workload_add_bucket(d->w, ki, R[b], k->C[c],
                                    k->weight * share / k->nC, err);
      }
    }
  }
  if (st == LM_OK)
    st = lm_workload_bind(d->w, err);
  char path[PATH_MAX + 32], *text = NULL;
  snprintf(path, sizeof path, "%s/workload.json", d->o->out);
  if (st == LM_OK && (st = lm_workload_to_json_text(d->w, &text, err)) == LM_OK)
    st = lm_file_write_atomic(path, text, strlen(text), err);
  free(text);
  return st;
}

/* The held-out shapes, drawn from the spec's distribution. */
static lm_status make_shapes(lm_deploy_state *d, lm_error *err) {
  int per = d->o->shapes > 0 ? d->o->shapes : d->spec.shapes;
  d->s = calloc((size_t)(d->spec.nkernels * per), sizeof *d->s);
  if (!d->s)
    return lm_error_set(err, LM_ESYS, "out of memory");
  for (int ki = 0; ki < d->spec.nkernels; ki++) {
    int64_t R[64], C[64];
    int n = lm_deploy_shapes(&d->spec, ki, per, R, C);
    if (n < per)
      note(d, 1, "%s: only %d held-out shapes outside its buckets",
           d->spec.k[ki].k->name, n);
    for (int i = 0; i < n; i++) {
      lm_deploy_shape *s = &d->s[d->nshapes++];
      s->kernel = ki, s->R = R[i], s->C = C[i];
      snprintf(s->id, sizeof s->id, "%.60s-%" PRId64 "x%" PRId64,
               d->spec.k[ki].k->name, R[i], C[i]);
    }
  }
  return LM_OK;
}

/* Add to arr the distinct variants the predicted plans run at any held-out
 * shape of kernel ki: the oracle times each of them at every shape of the
 * kernel, so that the budget oracle may choose any plan's variants. */
static lm_status add_plan_variants(const lm_deploy_state *d, int ki,
                                   cJSON *arr) {
  int nslots = d->nbudgets * LM_DEPLOY__COUNT;
  for (int i = 0; i < d->nshapes; i++)
    for (int slot = 0; d->s[i].kernel == ki && slot < nslots; slot++) {
      const char *name = d->s[i].chosen[slot];
      int seen = 0;
      const cJSON *e;
      if (!name)
        continue;
      cJSON_ArrayForEach(e, arr) seen |= strcmp(e->valuestring, name) == 0;
      if (!seen && !cJSON_AddItemToArray(arr, cJSON_CreateString(name)))
        return LM_ESYS;
    }
  return LM_OK;
}

/* OUT/cases.json: the held-out shapes for lm_evaluate, each listing in
 * "time" the variants the predicted plans run on its kernel. */
static lm_status write_cases(lm_deploy_state *d, lm_error *err) {
  cJSON *root = cJSON_CreateObject(), *cases = NULL;
  if (!root)
    goto oom;
  cJSON_AddStringToObject(root, "schema", "lanemap.cases/1");
  cJSON_AddStringToObject(root, "about",
                          "held-out shapes of a deployment spec "
                          "(lanemap evaluate --deploy); time: the variants "
                          "the predicted plans run on the kernel");
  if (!(cases = cJSON_AddArrayToObject(root, "cases")))
    goto oom;
  for (int i = 0; i < d->nshapes; i++) {
    const lm_deploy_shape *s = &d->s[i];
    cJSON *c = cJSON_CreateObject();
    cJSON *shape = cJSON_CreateArray(), *time = cJSON_CreateArray();
    if (!c || !shape || !time || !cJSON_AddItemToArray(cases, c)) {
      cJSON_Delete(c);
      cJSON_Delete(shape);
      cJSON_Delete(time);
      goto oom;
    }
    cJSON_AddStringToObject(c, "id", s->id);
    cJSON_AddStringToObject(c, "kernel", d->spec.k[s->kernel].path);
    cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)s->R));
    cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)s->C));
    cJSON_AddItemToObject(c, "shape", shape);
    cJSON_AddStringToObject(c, "split", "shape");
    cJSON_AddItemToObject(c, "time", time);
    if (add_plan_variants(d, s->kernel, time) != LM_OK)
      goto oom;
  }
  char path[PATH_MAX + 32];
  snprintf(path, sizeof path, "%s/cases.json", d->o->out);
  lm_status st = lm_json_save(path, root, err);
  cJSON_Delete(root);
  return st;
oom:
  cJSON_Delete(root);
  return lm_error_set(err, LM_ESYS, "out of memory");
}

/* Every held-out shape measured by lm_evaluate into OUT/measure (resumed
 * from its records), with the profile the plans were made with: under its
 * split pruning (every legal variant unless all_splits is set) and always
 * the variants the plans run (cases.json's "time"). */
static lm_status measure(lm_deploy_state *d, lm_evaluate_result *er,
                         lm_error *err) {
  char cases[PATH_MAX + 32], out[PATH_MAX + 32];
  snprintf(cases, sizeof cases, "%s/cases.json", d->o->out);
  snprintf(out, sizeof out, "%s/measure", d->o->out);
  lm_evaluate_options eo;
  lm_evaluate_options_defaults(&eo);
  eo.cases = cases, eo.out = out;
  eo.isa[0] = d->isa, eo.nisa = 1, eo.cross = 0;
  eo.profile = d->profile_path;
  eo.quick = d->o->quick, eo.fresh = d->o->fresh;
  eo.accept_noisy = d->o->accept_noisy;
  eo.seed = d->o->seed;
  eo.all_splits = d->o->all_splits;
  eo.progress = d->o->progress, eo.note = d->o->note, eo.ctx = d->o->ctx;
  return lm_evaluate(&eo, er, err);
}

/* The measured cases of this machine, matched to the shapes by id. */
static lm_status load_cases(lm_deploy_state *d, lm_eval_case **cs, int *n,
                            lm_error *err) {
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/measure/%s/records.jsonl", d->o->out,
           lm_isa_name(d->isa));
  lm_records rs = {0};
  int incomplete = 0;
  lm_status st = lm_records_read(path, &rs, err);
  if (st == LM_OK)
    st = lm_eval_cases_from_records(&rs, cs, n, &incomplete, err);
  lm_records_free(&rs);
  if (st != LM_OK)
    return st;
  lm_fingerprint fp;
  int have_fp = lm_fingerprint_host(&fp, NULL) == LM_OK;
  for (int i = 0; i < d->nshapes; i++) {
    lm_deploy_shape *s = &d->s[i];
    for (int j = 0; j < *n && !s->c; j++) {
      lm_eval_case *c = &(*cs)[j];
      if (strcmp(c->id, s->id) == 0 &&
          (!have_fp || !c->fingerprint || strcmp(c->fingerprint, fp.hash) == 0))
        s->c = c;
    }
    s->t_best = NAN;
    for (int v = 0; s->c && v < s->c->nvariants; v++) {
      double t = s->c->v[v].measured;
      if (s->c->v[v].verified == 1 && !s->c->v[v].contended && t > 0 &&
          !(t >= s->t_best))
        s->t_best = t;
    }
    if (!s->c)
      note(d, 1, "%s: no measurement of this machine; left out", s->id);
  }
  return LM_OK;
}

/* The measured time of variant `name` at shape s: INFINITY when it failed
 * the oracle check or was not timed; NAN when the shape has no
 * measurement, or the variant was timed while fewer CPUs were free than
 * it has workers (contended: it counts neither way, as in lm_evaluate). */
static double time_of(const lm_deploy_shape *s, const char *name) {
  if (!s->c || !isfinite(s->t_best))
    return NAN;
  for (int v = 0; v < s->c->nvariants; v++)
    if (strcmp(s->c->v[v].variant, name) == 0)
      return s->c->v[v].contended ? NAN
             : s->c->v[v].verified == 1 && s->c->v[v].measured > 0
                 ? s->c->v[v].measured
                 : INFINITY;
  return INFINITY;
}

/* ---- plans --------------------------------------------------------------- */

typedef struct Problem {
  lm_plan_problem pp;
  lm_solve_opts so;
  const lm_profile *prof;
} Problem;

/* Which variants a problem may use: allow(ki, v, ctx). */
typedef int (*allow_fn)(const lm_plan_pkernel *pk, int ki, int v, void *ctx);

/* Forbid every variant allow refuses: INFINITY in every scenario, and in
 * the point and named-default predictions settling reads. */
static void restrict_to(Problem *pr, allow_fn allow, void *ctx) {
  int nsc = pr->pp.p.nscenarios > 0 ? pr->pp.p.nscenarios : 1;
  for (int ki = 0; ki < pr->pp.p.nkernels; ki++) {
    lm_plan_pkernel *pk = &pr->pp.pk[ki];
    int nb = pr->pp.k[ki].nbuckets, nv = pk->nvariants;
    for (int v = 0; v < nv; v++) {
      if (allow(pk, ki, v, ctx))
        continue;
      for (int s = 0; s < nb; s++) {
        for (int j = 0; j < nsc; j++)
          pk->cost[((size_t)j * nb + s) * nv + v] = INFINITY;
        if (pk->point)
          pk->point[s * nv + v] = INFINITY;
        if (pk->prior)
          pk->prior[s * nv + v] = INFINITY;
      }
    }
  }
}

/* The problem of budget K (cap K per kernel, thresholded dispatch),
 * restricted by allow (NULL: every variant) before near ties settle. */
static lm_status build(lm_deploy_state *d, const lm_profile *prof, int budget,
                       int robust, int settle, allow_fn allow, Problem *pr,
                       lm_error *err) {
  memset(pr, 0, sizeof *pr);
  pr->prof = prof;
  lm_solve_defaults(&pr->so);
  pr->so.threshold = 1;
  pr->so.robust = robust;
  lm_plan_build_opts bo = {robust, settle};
  lm_status st = lm_workload_set_budgets(d->w, budget, -1, -1, err);
  if (st == LM_OK)
    st = lm_plan_problem_build(d->w, &pr->prof, &bo, &pr->pp, err);
  if (st == LM_OK && allow)
    restrict_to(pr, allow, NULL);
  if (st == LM_OK && settle)
    st = lm_plan_problem_settle(&pr->pp, LM_SETTLE_ALPHA, err);
  return st;
}

static lm_status plan_of(lm_deploy_state *d, Problem *pr,
                         const lm_solve_result *r, lm_plan **out,
                         lm_error *err) {
  return lm_plan_from_result(d->w, &pr->prof, &pr->pp, &pr->so, r, out, err);
}

static lm_status solve(lm_deploy_state *d, Problem *pr, lm_plan **out,
                       lm_error *err) {
  lm_solve_result r;
  lm_status st = lm_solve(&pr->pp.p, &pr->so, &r, err);
  if (st != LM_OK)
    return st;
  st = plan_of(d, pr, &r, out, err);
  lm_solve_result_free(&r);
  return st;
}

/* Greedy: per kernel, the K variants predicted best for the most workload
 * weight (after settling); the buckets are then assigned among them by the
 * solver, so that the plan keeps the threshold contiguity every other plan
 * keeps (and stays feasible for the budget oracle).  LM_EINPUT when the
 * chosen variants cannot cover a kernel's buckets. */
static int in_set(const lm_plan_pkernel *pk, int ki, int v, void *ctx) {
  (void)pk;
  unsigned char *const *in = ctx;
  return in[ki][v];
}

static lm_status greedy(lm_deploy_state *d, Problem *pr, int budget,
                        lm_plan **out, lm_error *err) {
  int nk = pr->pp.p.nkernels;
  unsigned char **in = calloc((size_t)nk, sizeof *in);
  lm_status st = in ? LM_OK : lm_error_set(err, LM_ESYS, "out of memory");
  for (int ki = 0; ki < nk && st == LM_OK; ki++) {
    const lm_plan_pkernel *pk = &pr->pp.pk[ki];
    int nb = pr->pp.k[ki].nbuckets, nv = pk->nvariants;
    double *score = calloc((size_t)nv, sizeof *score);
    if (!score || !(in[ki] = calloc((size_t)nv, 1))) {
      free(score);
      st = lm_error_set(err, LM_ESYS, "out of memory");
      break;
    }
    for (int s = 0; s < nb; s++) {
      int best = -1;
      for (int v = 0; v < nv; v++)
        if (isfinite(pk->cost[s * nv + v]) &&
            (best < 0 || pk->cost[s * nv + v] < pk->cost[s * nv + best]))
          best = v;
      if (best >= 0)
        score[best] += pk->weight[s] > 0 ? pk->weight[s] : 1e-300;
    }
    for (int taken = 0; budget == 0 || taken < budget; taken++) {
      int top = -1;
      for (int v = 0; v < nv; v++)
        if (!in[ki][v] && score[v] > 0 && (top < 0 || score[v] > score[top]))
          top = v;
      if (top < 0)
        break;
      in[ki][top] = 1;
    }
    free(score);
  }
  if (st == LM_OK) {
    restrict_to(pr, in_set, in);
    st = solve(d, pr, out, err);
  }
  for (int ki = 0; in && ki < nk; ki++)
    free(in[ki]);
  free(in);
  return st;
}

/* Only packet-local variants (L = W) may run. */
static int packet_local(const lm_plan_pkernel *pk, int ki, int v, void *ctx) {
  (void)ki, (void)ctx;
  return pk->variants[v].l == pk->variants[v].w;
}

/* The budget oracle's problem: each bucket costs the sum of its held-out
 * shapes' measured times, per variant (a shape it cannot run: INFINITY),
 * with weight 1; a bucket no shape falls in costs nothing. */
static lm_status oracle_costs(lm_deploy_state *d, Problem *pr, lm_error *err) {
  char name[128];
  for (int ki = 0; ki < pr->pp.p.nkernels; ki++) {
    lm_plan_pkernel *pk = &pr->pp.pk[ki];
    int nb = pr->pp.k[ki].nbuckets, nv = pk->nvariants;
    for (int s = 0; s < nb; s++) {
      pk->weight[s] = 1;
      for (int v = 0; v < nv; v++)
        pk->cost[s * nv + v] = 0;
    }
    for (int v = 0; v < nv; v++) {
      lm_variant_format(&pk->variants[v], name, sizeof name);
      for (int s = 0; s < nb; s++)
        for (int i = 0; i < d->nshapes; i++) {
          const lm_deploy_shape *sh = &d->s[i];
          if (sh->kernel != ki || sh->bucket != pk->order[s] ||
              !isfinite(sh->t_best))
            continue;
          double t = time_of(sh, name);
          pk->cost[s * nv + v] += isnan(t) ? INFINITY : t;
        }
    }
  }
  (void)err;
  return LM_OK;
}

/* Every shape's bucket under thresholded dispatch, from any threshold plan
 * of the workload (the bucket does not depend on the choices). */
static lm_status map_buckets(lm_deploy_state *d, const lm_plan *plan,
                             lm_error *err) {
  for (int i = 0; i < d->nshapes; i++) {
    lm_dispatch_info info;
    lm_status st =
        lm_plan_lookup(plan, d->s[i].kernel, d->s[i].R, d->s[i].C, &info, err);
    if (st != LM_OK)
      return st;
    d->s[i].bucket = info.bucket;
  }
  return LM_OK;
}

/* The variant the policy's plan at budget slot b runs at every shape. */
static lm_status choose(lm_deploy_state *d, int b, lm_deploy_policy p,
                        lm_error *err) {
  int slot = lm_deploy_slot(b, p);
  for (int i = 0; i < d->nshapes; i++) {
    lm_deploy_shape *s = &d->s[i];
    lm_dispatch_info info;
    lm_status st =
        lm_plan_lookup(d->plans[slot], s->kernel, s->R, s->C, &info, err);
    if (st != LM_OK)
      return st;
    s->chosen[slot] = info.variant_name;
  }
  return LM_OK;
}

/* Its measured time at every shape. */
static void price(lm_deploy_state *d, int b, lm_deploy_policy p) {
  int slot = lm_deploy_slot(b, p);
  for (int i = 0; i < d->nshapes; i++)
    d->s[i].t[slot] = time_of(&d->s[i], d->s[i].chosen[slot]);
}

/* Inductor-like: its rule at each shape, no plan. */
static lm_status price_inductor(lm_deploy_state *d, int b, lm_error *err) {
  lm_eval_opts eo;
  lm_eval_defaults(&eo);
  int slot = lm_deploy_slot(b, LM_DEPLOY_INDUCTOR);
  for (int i = 0; i < d->nshapes; i++) {
    lm_deploy_shape *s = &d->s[i];
    int ch = -1;
    if (!s->c)
      continue;
    lm_status st =
        lm_eval_fixed_choice(&eo, s->c, LM_POLICY_INDUCTOR, &ch, err);
    if (st != LM_OK)
      return st;
    s->chosen[slot] = ch >= 0 ? s->c->v[ch].variant : NULL;
    s->t[slot] = ch >= 0 ? time_of(s, s->c->v[ch].variant) : NAN;
  }
  return LM_OK;
}

/* A policy's plan that may not exist (greedy's set cannot cover a
 * kernel's buckets; the solver ran out of time): noted, not an error. */
static lm_status optional(lm_deploy_state *d, int b, lm_deploy_policy p,
                          lm_status st, lm_error *err) {
  if (st != LM_EINPUT && st != LM_EFAIL)
    return st;
  note(d, 1, "K=%d: no %s plan: %s", d->budgets[b], lm_deploy_policy_name(p),
       err->msg);
  lm_error_clear(err);
  return LM_OK;
}

/* Every predicted policy's plan at budget slot b (from the profiles
 * alone), and the variant it runs at every shape. */
static lm_status plans_at(lm_deploy_state *d, int b, const lm_profile *prof,
                          const lm_profile *dflt, lm_error *err) {
  int K = d->budgets[b];
  lm_plan **pl = &d->plans[lm_deploy_slot(b, 0)];
  Problem pr;
  lm_status st = build(d, prof, K, 0, 1, NULL, &pr, err);
  if (st == LM_OK)
    st = solve(d, &pr, &pl[LM_DEPLOY_PLAN], err);
  if (st == LM_OK && b == 0)
    st = map_buckets(d, pl[LM_DEPLOY_PLAN], err);
  if (st == LM_OK)
    st = optional(d, b, LM_DEPLOY_GREEDY,
                  greedy(d, &pr, K, &pl[LM_DEPLOY_GREEDY], err), err);
  lm_plan_problem_free(&pr.pp);
  if (st == LM_OK &&
      (st = build(d, prof, K, 0, 1, packet_local, &pr, err)) == LM_OK)
    st = optional(d, b, LM_DEPLOY_PACKET,
                  solve(d, &pr, &pl[LM_DEPLOY_PACKET], err), err);
  lm_plan_problem_free(&pr.pp);
  if (st == LM_OK && (st = build(d, dflt, K, 0, 1, NULL, &pr, err)) == LM_OK)
    st = solve(d, &pr, &pl[LM_DEPLOY_DEFAULT], err);
  lm_plan_problem_free(&pr.pp);
  int nboot = 0;
  lm_profile_get_bootstrap(prof, &nboot);
  if (st == LM_OK && nboot > 0 &&
      (st = build(d, prof, K, 1, 0, NULL, &pr, err)) == LM_OK)
    st = solve(d, &pr, &pl[LM_DEPLOY_ROBUST], err);
  lm_plan_problem_free(&pr.pp);
  if (st == LM_OK && nboot == 0 && b == 0)
    note(d, 0, "no robust plans: the profile has no bootstrap resamples");
  /* a solve the time limit cut short keeps its best plan (for the robust
   * MIP at a deployment's size, the greedy warm start): said, not hidden */
  for (int p = 0; p < LM_DEPLOY__COUNT && st == LM_OK; p++)
    if (pl[p] && strcmp(pl[p]->status, "time-limit") == 0)
      note(d, 0, "K=%d: the %s plan's solve reached its time limit; the plan is its "
                 "best incumbent (docs/solver.md, \"Time limit\")",
           K, lm_deploy_policy_name((lm_deploy_policy)p));
  for (int p = 0; p < LM_DEPLOY__COUNT && st == LM_OK; p++)
    if (pl[p])
      st = choose(d, b, (lm_deploy_policy)p, err);
  return st;
}

/* The budget oracle at budget slot b, from the measured times, and every
 * policy's time at every shape. */
static lm_status oracle_at(lm_deploy_state *d, int b, const lm_profile *prof,
                           lm_error *err) {
  int K = d->budgets[b];
  lm_plan **pl = &d->plans[lm_deploy_slot(b, 0)];
  Problem pr;
  lm_status st;
  if ((st = build(d, prof, K, 0, 0, NULL, &pr, err)) == LM_OK &&
      (st = oracle_costs(d, &pr, err)) == LM_OK &&
      (st = solve(d, &pr, &pl[LM_DEPLOY_ORACLE], err)) == LM_OK &&
      strcmp(pl[LM_DEPLOY_ORACLE]->status, "optimal") != 0)
    note(d, 1,
         "K=%d: the budget oracle's solve is %s, not optimal: it may "
         "not bound the plans",
         K, pl[LM_DEPLOY_ORACLE]->status);
  lm_plan_problem_free(&pr.pp);
  if (st == LM_OK)
    st = choose(d, b, LM_DEPLOY_ORACLE, err);
  for (int p = 0; p < LM_DEPLOY__COUNT && st == LM_OK; p++)
    if (p == LM_DEPLOY_INDUCTOR)
      st = price_inductor(d, b, err);
    else if (pl[p])
      price(d, b, (lm_deploy_policy)p);
  return st;
}

/* ---- the plan's dispatch, run ----------------------------------------------
 */

/* Compile the calibrated plan of every budget and launch every held-out
 * shape through it, checked against the oracle; the dispatch must run the
 * variant lm_plan_lookup named. */
static lm_status run_dispatch(lm_deploy_state *d, lm_error *err) {
  lm_dispatch **ds = calloc((size_t)d->nbudgets, sizeof *ds);
  if (!ds)
    return lm_error_set(err, LM_ESYS, "out of memory");
  lm_status st = LM_OK;
  for (int b = 0; b < d->nbudgets && st == LM_OK; b++)
    st = lm_dispatch_new(d->plans[lm_deploy_slot(b, LM_DEPLOY_PLAN)], NULL,
                         &ds[b], err);
  for (int i = 0; i < d->nshapes && st == LM_OK; i++) {
    lm_deploy_shape *s = &d->s[i];
    const lm_kernel *k = lm_dispatch_kernel(ds[0], s->kernel);
    lm_shape sh;
    lm_data *data = NULL;
    lm_oracle *orc = NULL;
    st = lm_shape_bind(k, s->R, s->C, NULL, &sh, err);
    if (st == LM_OK)
      st = lm_data_gen(k, &sh, d->o->seed, &data, err);
    if (st == LM_OK)
      st = lm_oracle_run(k, data, &orc, err);
    uint64_t *args = st == LM_OK ? lm_args_pack(k, data) : NULL;
    if (st == LM_OK && !args)
      st = lm_error_set(err, LM_ESYS, "out of memory");
    for (int b = 0; b < d->nbudgets && st == LM_OK; b++) {
      lm_dispatch_info info;
      lm_data_reset_outputs(data);
      if ((st = lm_dispatch_launch(ds[b], s->kernel, s->R, s->C, args, &info,
                                   err)) != LM_OK)
        break;
      const char *want = s->chosen[lm_deploy_slot(b, LM_DEPLOY_PLAN)];
      if (!want || strcmp(info.variant_name, want) != 0) {
        st = lm_error_set(err, LM_EFAIL,
                          "%s: the dispatch ran %s where the plan's lookup "
                          "names %s",
                          s->id, info.variant_name, want ? want : "nothing");
        break;
      }
      lm_compare_result cmp;
      if (lm_oracle_compare(k, orc, data, &cmp) != 0) {
        d->res->failures++;
        note(d, 1, "%s: K=%d: the dispatched %s failed the oracle check", s->id,
             d->budgets[b], info.variant_name);
      }
      d->res->dispatched++;
    }
    free(args);
    lm_oracle_free(orc);
    lm_data_free(data);
  }
  for (int b = 0; b < d->nbudgets; b++)
    lm_dispatch_free(ds[b]);
  free(ds);
  return st;
}

/* ---- figures ----------------------------------------------------------- */

/* The weighted workload time of slot over that of ref (the per-shape
 * best when ref < 0), - 1: Σ over kernels of weight × the mean over its
 * shapes, on the shapes both have a time for (a contended pick has none). */
static double workload_ratio(const lm_deploy_state *d, int slot, int ref) {
  double num = 0, den = 0;
  for (int ki = 0; ki < d->spec.nkernels; ki++) {
    double a = 0, b = 0;
    int n = 0;
    for (int i = 0; i < d->nshapes; i++) {
      const lm_deploy_shape *s = &d->s[i];
      double tr = ref < 0 ? s->t_best : s->t[ref];
      if (s->kernel != ki || !isfinite(s->t_best) || isnan(s->t[slot]) ||
          isnan(tr))
        continue;
      a += s->t[slot], b += tr, n++;
    }
    if (n)
      num += d->spec.k[ki].weight * a / n, den += d->spec.k[ki].weight * b / n;
  }
  return den > 0 ? num / den - 1 : NAN;
}

static lm_status row(lm_deploy_state *d, int b, lm_deploy_policy p,
                     lm_deploy_row *r, lm_error *err) {
  int slot = lm_deploy_slot(b, p), oslot = lm_deploy_slot(b, LM_DEPLOY_ORACLE);
  memset(r, 0, sizeof *r);
  r->policy = p;
  r->budget = d->budgets[b];
  r->made = p == LM_DEPLOY_INDUCTOR || d->plans[slot] != NULL;
  r->oracle_geomean = r->oracle_max = NAN;
  r->workload_oracle = r->workload_best = NAN;
  r->best.geomean = r->best.max = r->best.p90 = NAN;
  if (!r->made)
    return LM_OK;
  /* what a plan compiles; for the budget oracle, whose buckets without a
   * held-out shape take any variant, and the per-shape rule, the distinct
   * variants that run a shape */
  int serving = p == LM_DEPLOY_ORACLE || p == LM_DEPLOY_INDUCTOR;
  if (d->plans[slot] && !serving)
    for (int ki = 0; ki < d->plans[slot]->nkernels; ki++)
      r->variants += d->plans[slot]->kernels[ki].nvariants;
  double *tb = calloc((size_t)d->nshapes + 1, sizeof *tb);
  double *tc = calloc((size_t)d->nshapes + 1, sizeof *tc);
  if (!tb || !tc) {
    free(tb);
    free(tc);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  int n = 0, no = 0;
  double lsum = 0;
  r->oracle_max = -INFINITY;
  for (int i = 0; i < d->nshapes; i++) {
    const lm_deploy_shape *s = &d->s[i];
    if (!isfinite(s->t_best))
      continue;
    if (isnan(s->t[slot])) { /* a contended pick, or none */
      r->left_out += s->chosen[slot] != NULL;
      continue;
    }
    tb[n] = s->t_best, tc[n] = s->t[slot], n++;
    double to = s->t[oslot];
    if (isfinite(to) && to > 0) {
      double ratio = s->t[slot] / to;
      lsum += log(ratio);
      r->oracle_max = fmax(r->oracle_max, ratio - 1);
      no++;
    }
  }
  lm_status st =
      lm_regret_stats_compute(tb, tc, n, LM_REGRET_TIE, &r->best, err);
  free(tb);
  free(tc);
  if (st != LM_OK)
    return st;
  r->oracle_geomean = no ? exp(lsum / no) - 1 : NAN;
  if (!no)
    r->oracle_max = NAN;
  r->workload_oracle = workload_ratio(d, slot, oslot);
  r->workload_best = workload_ratio(d, slot, -1);
  if (serving)
    for (int ki = 0; ki < d->spec.nkernels; ki++)
      for (int i = 0; i < d->nshapes; i++) {
        const lm_deploy_shape *s = &d->s[i];
        int first = s->kernel == ki && s->chosen[slot];
        for (int j = 0; j < i && first; j++)
          if (d->s[j].kernel == ki && d->s[j].chosen[slot] &&
              strcmp(d->s[j].chosen[slot], s->chosen[slot]) == 0)
            first = 0;
        r->variants += first;
      }
  return LM_OK;
}

/* ---- the whole ------------------------------------------------------------
 */

static lm_status check_options(const lm_deploy_options *o, lm_error *err) {
  if (!o->spec || !o->out)
    return lm_error_set(err, LM_EINPUT,
                        "deploy: a spec and an output folder "
                        "are required");
  if (o->nbudgets < 0 || o->nbudgets > LM_DEPLOY_MAX_BUDGETS)
    return lm_error_set(err, LM_EINPUT, "deploy: 1 to %d budgets",
                        LM_DEPLOY_MAX_BUDGETS);
  for (int b = 0; b < o->nbudgets; b++) {
    if (o->budgets[b] < 0)
      return lm_error_set(err, LM_EINPUT,
                          "deploy: budget %d: expected K >= 0 (0: unlimited)",
                          o->budgets[b]);
    for (int c = 0; c < b; c++)
      if (o->budgets[c] == o->budgets[b])
        return lm_error_set(err, LM_EINPUT, "deploy: budget %d given twice",
                            o->budgets[b]);
  }
  if (o->shapes < 0 || o->shapes > 64)
    return lm_error_set(err, LM_EINPUT, "deploy: 1 to 64 shapes per kernel");
  return LM_OK;
}

/* Calibration's progress, as the measurement's calibrate stage. */
static void calib_progress(void *ctx, int done, int total, const char *what) {
  const lm_deploy_state *d = ctx;
  d->o->progress(d->o->ctx, LM_EVALUATE_CALIBRATE, d->res->isa, done, total,
                 what);
}

/* The profile the plans are made with, before anything is measured, and
 * the one lm_evaluate then plans its cases with: the file given, else the
 * one an earlier run bundled in OUT/measure for this machine type (unless
 * fresh), else the cached one of the mode, else calibrated now and cached;
 * and the uncalibrated defaults. */
static lm_status profiles(lm_deploy_state *d, lm_profile **prof,
                          lm_profile **dflt, lm_error *err) {
  char measure[PATH_MAX + 32];
  lm_fingerprint fp;
  lm_profile_found found;
  int bundled = 0;
  snprintf(measure, sizeof measure, "%s/measure", d->o->out);
  lm_status st = lm_fingerprint_host(&fp, err);
  if (st == LM_OK)
    st = lm_eval_profile_find(measure, d->isa, fp.hash, d->o->quick,
                              d->o->fresh, d->o->profile, d->o->accept_noisy,
                              d->o->progress ? calib_progress : NULL, d,
                              prof, &found, &bundled, err);
  if (st != LM_OK)
    return st;
  if (found.info.fingerprint_diffs > 0)
    note(d, 1, "%s", found.info.warning);
  note(d, 0, "profile %s %s",
       bundled ? "bundled" : lm_profile_source_name(found.source), found.path);
  snprintf(d->profile_path, sizeof d->profile_path, "%s", found.path);
  return lm_profile_default(d->isa, dflt, err);
}

/* Per budget and policy: the plans, and each shape's pick and time. */
static lm_status alloc_slots(lm_deploy_state *d, int nslots, lm_error *err) {
  if (!(d->plans = calloc((size_t)nslots, sizeof *d->plans)))
    return lm_error_set(err, LM_ESYS, "out of memory");
  for (int i = 0; i < d->nshapes; i++) {
    d->s[i].chosen = calloc((size_t)nslots, sizeof *d->s[i].chosen);
    d->s[i].t = malloc(sizeof *d->s[i].t * (size_t)nslots);
    if (!d->s[i].chosen || !d->s[i].t)
      return lm_error_set(err, LM_ESYS, "out of memory");
    for (int j = 0; j < nslots; j++)
      d->s[i].t[j] = NAN;
  }
  return LM_OK;
}

lm_status lm_deploy(const lm_deploy_options *o, lm_deploy_result *out,
                    lm_error *err) {
  memset(out, 0, sizeof *out);
  lm_status st = check_options(o, err);
  if (st != LM_OK)
    return st;
  double t0 = lm_now_ns();
  lm_deploy_state d = {.o = o, .res = out};
  lm_profile *prof = NULL, *dflt = NULL;
  lm_eval_case *cases = NULL;
  int ncases = 0;
  lm_evaluate_result *er = calloc(1, sizeof *er);
  d.isa = o->isa == LM_ISA__COUNT ? default_isa() : o->isa;
  static const int defaults[] = {1, 2, 4, 0};
  d.nbudgets = o->nbudgets ? o->nbudgets : 4;
  for (int b = 0; b < d.nbudgets; b++)
    d.budgets[b] = o->nbudgets ? o->budgets[b] : defaults[b];
  snprintf(out->isa, sizeof out->isa, "%s", lm_isa_name(d.isa));
  char dir[PATH_MAX + 16];
  snprintf(dir, sizeof dir, "%s/plans", o->out);
  if (!er)
    st = lm_error_set(err, LM_ESYS, "out of memory");
  if (st == LM_OK && !lm_isa_runnable(d.isa))
    st = lm_error_set(err, LM_EINPUT, "deploy: this machine cannot run %s",
                      lm_isa_name(d.isa));
  if (st == LM_OK)
    st = lm_deploy_spec_load(o->spec, o->quick, &d.spec, err);
  if (st == LM_OK)
    st = lm_file_make_dirs(dir, err);
  if (st == LM_OK)
    st = make_workload(&d, err);
  if (st == LM_OK)
    st = make_shapes(&d, err);
  out->kernels = d.spec.nkernels;
  out->shapes = d.nshapes;
  int nslots = d.nbudgets * LM_DEPLOY__COUNT;
  if (st == LM_OK)
    st = alloc_slots(&d, nslots, err);
  /* plan on predictions, then measure what the plans run and the oracle */
  if (st == LM_OK)
    st = profiles(&d, &prof, &dflt, err);
  double td = lm_now_ns();
  for (int b = 0; b < d.nbudgets && st == LM_OK; b++) {
    if (o->progress)
      o->progress(o->ctx, LM_EVALUATE_MEASURE, out->isa, b, d.nbudgets,
                  "deployment plans");
    st = plans_at(&d, b, prof, dflt, err);
  }
  if (st == LM_OK)
    st = write_cases(&d, err);
  double tm = lm_now_ns();
  if (st == LM_OK)
    st = measure(&d, er, err);
  out->measure_s = (lm_now_ns() - tm) / 1e9;
  out->failures = er ? er->failures : 0;
  for (int t = 0; er && t < er->ntargets; t++)
    out->measured += er->target[t].measured;
  out->noisy = er ? er->noisy : 0;
  double to = lm_now_ns();
  if (st == LM_OK)
    st = load_cases(&d, &cases, &ncases, err);
  for (int b = 0; b < d.nbudgets && st == LM_OK; b++)
    st = oracle_at(&d, b, prof, err);
  if (st == LM_OK)
    st = run_dispatch(&d, err);
  for (int b = 0; b < d.nbudgets && st == LM_OK; b++)
    for (int p = 0; p < LM_DEPLOY__COUNT && st == LM_OK; p++)
      st = row(&d, b, (lm_deploy_policy)p, &out->row[out->nrows++], err);
  for (int b = 0; b < d.nbudgets && st == LM_OK; b++)
    for (int p = 0; p < LM_DEPLOY__COUNT && st == LM_OK; p++) {
      const lm_plan *pl = d.plans[lm_deploy_slot(b, p)];
      char path[PATH_MAX + 96];
      snprintf(path, sizeof path, "%s/plans/%s-K%d.json", o->out,
               lm_deploy_policy_name((lm_deploy_policy)p), d.budgets[b]);
      if (pl)
        st = lm_plan_save(pl, path, err);
    }
  out->deploy_s = (tm - td + lm_now_ns() - to) / 1e9;
  out->total_s = (lm_now_ns() - t0) / 1e9;
  if (st == LM_OK)
    st = lm_deploy_report(&d, err);
  /* free */
  for (int i = 0; d.plans && i < nslots; i++)
    lm_plan_free(d.plans[i]);
  free(d.plans);
  for (int i = 0; i < d.nshapes; i++) {
    free(d.s[i].chosen);
    free(d.s[i].t);
  }
  free(d.s);
  for (int i = 0; i < ncases; i++)
    lm_eval_case_free(&cases[i]);
  free(cases);
  lm_profile_free(prof);
  lm_profile_free(dflt);
  lm_workload_free(d.w);
  lm_deploy_spec_free(&d.spec);
  free(er);
  return st;
}
