/* The held-out cases as a pipeline would see them: a workload
 * (lanemap.workload/1) whose buckets are the cases' shapes, solved into a
 * plan (lanemap.plan/1) per model-based policy, exactly as `lanemap solve`
 * does for a user's workload.  The one difference is the price of a cell:
 * the workload's problem is built with the policy's profile, then each
 * bucket is priced with that policy's prediction of its case, which for
 * kernels with per-row lengths sees the row lengths of the data the case
 * is measured on (a workload file cannot say them).  With no cap and no
 * budget the solver's plan is the per-bucket argmin of those predictions
 * after settling near ties (lm_plan_problem_settle, as `lanemap solve`
 * does by default; the bootstrap scenarios keep their ratio to the point
 * prediction), so the plan decides nothing a private argmin would not; it
 * is the real pipeline all the same, and the plan is what the harness
 * dispatches. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/heldout.h"
#include "lanemap/plan.h"

static const lm_policy solved[] = {LM_POLICY_PLAN, LM_POLICY_CROSS,
                                   LM_POLICY_DEFAULT, LM_POLICY_LEARNED};

static double pred_of(const lm_eval_variant *v, lm_policy p) {
  return p == LM_POLICY_CROSS     ? v->pred_cross
         : p == LM_POLICY_DEFAULT ? v->pred_default
         : p == LM_POLICY_LEARNED ? v->pred_learned
                                  : v->predicted;
}

static const lm_profile *profile_of(const lm_eval_opts *o, lm_policy p) {
  return p == LM_POLICY_CROSS     ? o->cross
         : p == LM_POLICY_DEFAULT ? o->defaults
                                  : o->profile;
}

/* The workload of run: one kernel per (kernel file, extra), one bucket per
 * shape, weight its number of cases. */
static lm_status build_workload(const lm_eval_opts *o, const lm_eval_run *run,
                                const char *dir, lm_eval_plans *pl,
                                lm_error *err) {
  char name[PATH_MAX + 32];
  if (dir)
    snprintf(name, sizeof name, "%s/workload.json", dir);
  lm_workload *w = pl->workload = lm_workload_new(dir ? name : NULL, dir, err);
  if (!w)
    return err ? err->status : LM_ESYS;
  int nw = 0;
  while (nw < 8 && o->workers[nw] > 0)
    nw++;
  lm_status st = lm_workload_set_isas(w, &o->isa, 1, err);
  if (st == LM_OK)
    st = lm_workload_set_workers(w, o->workers, nw, err);
  w->fp = o->fp;
  /* (path, extra) -> kernel, (kernel, R, C) -> bucket: a scan of every
   * earlier kernel and bucket per case made large case lists quadratic */
  lm_strset *kernels = lm_strset_new(), *buckets = lm_strset_new();
  if (st == LM_OK && (!kernels || !buckets))
    st = lm_error_set(err, LM_ESYS, "out of memory");
  for (int i = 0; i < run->ncases && st == LM_OK; i++) {
    const lm_eval_case *c = &run->cases[i];
    char abs[PATH_MAX];
    const char *path = realpath(c->kernel, abs) ? abs : c->kernel;
    /* the key: the path, a NUL, the extra ("\1" for none, which no extra
     * text is) */
    const char *ex = c->extra ? c->extra : "\1";
    size_t lp = strlen(path) + 1, le = strlen(ex);
    char *key = malloc(lp + le);
    int64_t found = -1;
    if (key)
      memcpy(key, path, lp), memcpy(key + lp, ex, le);
    if (!key ||
        lm_strset_add(kernels, key, lp + le, w->nkernels, &found) != LM_OK) {
      free(key);
      st = lm_error_set(err, LM_ESYS, "out of memory");
      break;
    }
    free(key);
    int ki = found >= 0 ? (int)found : w->nkernels;
    if (ki == w->nkernels &&
        (st = lm_workload_add_kernel(w, path, c->extra, &ki, err)) != LM_OK)
      break;
    const lm_workload_kernel *wk = &w->kernels[ki];
    int64_t shape[3] = {ki, c->R, c->C};
    if (lm_strset_add(buckets, shape, sizeof shape, wk->nbuckets, &found) !=
        LM_OK) {
      st = lm_error_set(err, LM_ESYS, "out of memory");
      break;
    }
    int b = found >= 0 ? (int)found : wk->nbuckets;
    if (b < wk->nbuckets)
      w->kernels[ki].buckets[b].weight += 1;
    else
      st = lm_workload_add_bucket(w, ki, c->R, c->C, 1, err);
    pl->kernel[i] = ki;
    pl->bucket[i] = b;
  }
  lm_strset_free(kernels);
  lm_strset_free(buckets);
  if (st == LM_OK)
    st = lm_workload_bind(w, err);
  return st;
}

/* Price every bucket of pp with policy p's prediction of its first case;
 * the problem's candidates must be the cases' variants, in order. */
static lm_status price(const lm_eval_run *run, const lm_eval_plans *pl,
                       lm_policy p, lm_plan_problem *pp, lm_error *err) {
  for (int i = 0; i < run->ncases; i++) {
    const lm_eval_case *c = &run->cases[i];
    lm_plan_pkernel *pk = &pp->pk[pl->kernel[i]];
    if (pk->nvariants != c->nvariants)
      return lm_error_set(err, LM_EFAIL,
                          "%s: the workload's kernel has %d variants, the "
                          "case %d",
                          c->id, pk->nvariants, c->nvariants);
    int s = 0; /* the bucket's place in solver order */
    while (pk->order[s] != pl->bucket[i])
      s++;
    for (int v = 0; v < c->nvariants; v++) {
      char name[128];
      lm_variant_format(&pk->variants[v], name, sizeof name);
      if (strcmp(name, c->v[v].variant) != 0)
        return lm_error_set(err, LM_EFAIL,
                            "%s: variant %d is %s in the workload, %s in the "
                            "case",
                            c->id, v, name, c->v[v].variant);
      double t = pred_of(&c->v[v], p);
      size_t cell = (size_t)s * (size_t)c->nvariants + (size_t)v;
      size_t plane = (size_t)pp->k[pl->kernel[i]].nbuckets * (size_t)c->nvariants;
      double was = pk->cost[cell];
      t = isfinite(t) && t >= 0 ? t : INFINITY;
      pk->cost[cell] = t;
      /* the bootstrap scenarios keep their ratio to the point prediction */
      double ratio = isfinite(t) && was > 0 && isfinite(was) ? t / was : NAN;
      for (int j = 1; j < pp->p.nscenarios; j++) {
        double *cj = &pk->cost[j * plane + cell];
        *cj = isfinite(ratio) ? *cj * ratio : INFINITY;
      }
      if (pk->prior) {
        double d = c->v[v].pred_default;
        pk->prior[cell] = isfinite(d) && d >= 0 ? d : INFINITY;
      }
    }
  }
  return LM_OK;
}

/* The variants the calibrated model cannot tell from its best in each
 * case's bucket: what tune-k measures beside the top k. */
static void mark_near_ties(lm_eval_run *run, const lm_eval_plans *pl,
                           const lm_plan_problem *pp) {
  for (int i = 0; i < run->ncases; i++) {
    lm_eval_case *c = &run->cases[i];
    const lm_plan_pkernel *pk = &pp->pk[pl->kernel[i]];
    int s = 0; /* the bucket's place in solver order */
    while (pk->order[s] != pl->bucket[i])
      s++;
    for (int v = 0; v < c->nvariants; v++)
      c->v[v].near_tie = lm_plan_problem_near_tie(pp, pl->kernel[i], s, v,
                                                  LM_SETTLE_ALPHA);
  }
}

/* Each case takes the variant its bucket runs in plan. */
static lm_status take_choices(lm_eval_run *run, const lm_eval_plans *pl,
                              lm_policy p, lm_error *err) {
  const lm_plan *plan = pl->plan[p];
  for (int i = 0; i < run->ncases; i++) {
    lm_eval_case *c = &run->cases[i];
    const lm_plan_kernel *k = &plan->kernels[pl->kernel[i]];
    const char *v = k->variants[k->buckets[pl->bucket[i]].variant];
    c->choice[p] = -1;
    for (int j = 0; j < c->nvariants && c->choice[p] < 0; j++)
      if (strcmp(c->v[j].variant, v) == 0)
        c->choice[p] = j;
    if (c->choice[p] < 0)
      return lm_error_set(err, LM_EFAIL,
                          "%s: the plan runs %s, not a variant "
                          "of the case",
                          c->id, v);
  }
  return LM_OK;
}

static lm_status solve(const lm_eval_opts *o, lm_eval_run *run,
                       lm_eval_plans *pl, lm_policy p, lm_error *err) {
  const lm_profile *prof = profile_of(o, p);
  lm_plan_problem pp = {0};
  lm_solve_result r = {0};
  lm_solve_opts so;
  lm_solve_defaults(&so);
  lm_plan_build_opts bo = {0, 1};
  lm_status st = lm_plan_problem_build(pl->workload, &prof, &bo, &pp, err);
  if (st == LM_OK)
    st = price(run, pl, p, &pp, err);
  if (st == LM_OK && p == LM_POLICY_PLAN)
    mark_near_ties(run, pl, &pp);
  if (st == LM_OK)
    st = lm_plan_problem_settle(&pp, LM_SETTLE_ALPHA, err);
  if (st == LM_OK)
    st = lm_solve(&pp.p, &so, &r, err);
  if (st == LM_OK)
    st = lm_plan_from_result(pl->workload, &prof, &pp, &so, &r, &pl->plan[p],
                             err);
  if (st == LM_OK)
    st = take_choices(run, pl, p, err);
  pl->solve_s += r.time_s;
  lm_solve_result_free(&r);
  lm_plan_problem_free(&pp);
  return st;
}

lm_status lm_eval_plans_make(const lm_eval_opts *o, lm_eval_run *run,
                             const char *dir, lm_eval_plans *out,
                             lm_error *err) {
  memset(out, 0, sizeof *out);
  if (run->ncases == 0)
    return LM_OK;
  out->kernel = calloc((size_t)run->ncases, sizeof *out->kernel);
  out->bucket = calloc((size_t)run->ncases, sizeof *out->bucket);
  if (!out->kernel || !out->bucket)
    return lm_error_set(err, LM_ESYS, "out of memory");
  int have_cross = o->cross != NULL, have_learned = o->learned != NULL;
  for (int i = 0; i < run->ncases; i++)
    for (int v = 0; v < run->cases[i].nvariants; v++) {
      have_cross &= isfinite(run->cases[i].v[v].pred_cross);
      have_learned &= isfinite(run->cases[i].v[v].pred_learned);
    }
  lm_status st = build_workload(o, run, dir, out, err);
  for (size_t i = 0; i < sizeof solved / sizeof *solved && st == LM_OK; i++)
    if ((solved[i] != LM_POLICY_CROSS || have_cross) &&
        (solved[i] != LM_POLICY_LEARNED || have_learned))
      st = solve(o, run, out, solved[i], err);
  return st;
}

lm_status lm_eval_plans_save(const lm_eval_plans *p, const char *dir,
                             lm_error *err) {
  char path[PATH_MAX + 64], *text = NULL;
  if (!p->workload)
    return LM_OK;
  snprintf(path, sizeof path, "%s/workload.json", dir);
  lm_status st = lm_workload_to_json_text(p->workload, &text, err);
  if (st == LM_OK)
    st = lm_file_write_atomic(path, text, strlen(text), err);
  free(text);
  for (int q = 0; q < LM_POLICY__COUNT && st == LM_OK; q++) {
    if (!p->plan[q])
      continue;
    if (q == LM_POLICY_PLAN)
      snprintf(path, sizeof path, "%s/plan.json", dir);
    else
      snprintf(path, sizeof path, "%s/plan-%s.json", dir,
               lm_policy_name((lm_policy)q));
    st = lm_plan_save(p->plan[q], path, err);
  }
  return st;
}

void lm_eval_plans_free(lm_eval_plans *p) {
  if (!p)
    return;
  lm_workload_free(p->workload);
  for (int q = 0; q < LM_POLICY__COUNT; q++)
    lm_plan_free(p->plan[q]);
  free(p->kernel);
  free(p->bucket);
  memset(p, 0, sizeof *p);
}
