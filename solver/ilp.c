/* The solver: compile sets and dispatch plans (DESIGN.md §11).
 *
 * The direct MIP over all kernels at once does not scale (§11 measured 20
 * kernels × 64 buckets × 32 variants at 15 s, 100 kernels without a
 * feasible point in 60 s), so lm_solve uses the structure of the problem
 * and keeps GLPK for what has no cheaper exact method:
 *
 *   1. dominance pruning: a variant no cheaper than another in every bucket
 *      and scenario, allowed nowhere the other is not, and no cheaper to
 *      compile can be replaced by it in any plan; it is dropped.
 *   2. decomposition: without a global budget (and without robust mode,
 *      whose worst case sums over kernels), kernels are independent.
 *   3. per kernel: the per-bucket argmin is optimal whenever it uses no
 *      more variants than the cap; otherwise all compile sets of at most
 *      cap variants are enumerated when they are few; thresholded dispatch
 *      is an exact dynamic program (greedy.c) when its plan uses each
 *      variant for one run; what is left is a MIP of that kernel alone.
 *   4. the global budget and robust mode couple kernels: one MIP, with the
 *      greedy plan offered as a warm start.
 *
 * The MIP is the facility-location form: x[k,s,v] <= y[k,v] per pair,
 * which is much tighter than the aggregated Σ_s x <= S·y.  Contiguous runs
 * add a run-start variable z[k,s,v] >= x[k,s,v] - x[k,s-1,v] with
 * Σ_s z[k,s,v] <= y[k,v]; robust mode adds t >= Σ w c^(j) x per scenario
 * and minimises t.  Budgets are checked before any plan is sought, so an
 * infeasible instance is reported by the constraint that binds. */
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "solver/solve_impl.h"

/* Compile sets enumerated per kernel at most (each costs one pass over the
 * buckets); beyond, the kernel goes to GLPK. */
#define ENUM_MAX_SETS 20000

void lm_solve_defaults(lm_solve_opts *o) {
  memset(o, 0, sizeof *o);
  o->time_limit = 10;
  o->mip_gap = 0;
  o->presolve = 1;
  o->prune = 1;
  o->method = LM_SOLVE_AUTO;
}

const char *lm_solve_status_name(lm_solve_status s) {
  switch (s) {
  case LM_SOLVE_OPTIMAL:
    return "optimal";
  case LM_SOLVE_FEASIBLE:
    return "feasible";
  case LM_SOLVE_TIME_LIMIT:
    return "time-limit";
  case LM_SOLVE_INFEASIBLE:
    return "infeasible";
  }
  return "?";
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

lm_status lm_solve_validate(const lm_solve_problem *p, const lm_solve_opts *o,
                            lm_error *err) {
  if (!p || !o)
    return lm_error_set(err, LM_EINPUT, "solver: no problem or options");
  if (p->nkernels < 1 || !p->kernel)
    return lm_error_set(err, LM_EINPUT, "solver: the problem has no kernels");
  if (p->nscenarios < 0)
    return lm_error_set(err, LM_EINPUT, "solver: %d cost scenarios",
                        p->nscenarios);
  if (isnan(p->budget) || p->budget == INFINITY)
    return lm_error_set(err, LM_EINPUT, "solver: global budget is %g",
                        p->budget);
  if (!(o->time_limit > 0) || !(o->mip_gap >= 0))
    return lm_error_set(err, LM_EINPUT,
                        "solver: time limit %g s and MIP gap %g must be > 0 "
                        "and >= 0",
                        o->time_limit, o->mip_gap);
  int nsc = lm_solve_nscen(p);
  for (int k = 0; k < p->nkernels; k++) {
    const lm_solve_kernel *K = &p->kernel[k];
    if (K->nvariants < 1)
      return lm_error_set(err, LM_EINPUT, "solver: kernel %d has no variants",
                          k);
    if (K->nbuckets < 1)
      return lm_error_set(err, LM_EINPUT, "solver: kernel %d has no buckets",
                          k);
    if (!K->weight || !K->cost)
      return lm_error_set(err, LM_EINPUT,
                          "solver: kernel %d has no weights or costs", k);
    if (K->cap < 0)
      return lm_error_set(err, LM_EINPUT, "solver: kernel %d has cap %d", k,
                          K->cap);
    for (int s = 0; s < K->nbuckets; s++)
      if (!isfinite(K->weight[s]) || K->weight[s] < 0)
        return lm_error_set(err, LM_EINPUT,
                            "solver: kernel %d bucket %d has weight %g (must "
                            "be finite and >= 0)",
                            k, s, K->weight[s]);
    for (int v = 0; v < K->nvariants; v++) {
      double cc = K->compile_cost ? K->compile_cost[v] : 0;
      if (!isfinite(cc) || cc < 0)
        return lm_error_set(err, LM_EINPUT,
                            "solver: kernel %d variant %d has compile cost %g "
                            "(must be finite and >= 0)",
                            k, v, cc);
      for (int j = 0; j < nsc; j++)
        for (int s = 0; s < K->nbuckets; s++) {
          double c = lm_solve_cost(K, j, s, v);
          if (isnan(c) || c < 0)
            return lm_error_set(err, LM_EINPUT,
                                "solver: kernel %d bucket %d variant %d has "
                                "cost %g in scenario %d (must be >= 0 or "
                                "INFINITY)",
                                k, s, v, c, j);
        }
    }
  }
  return LM_OK;
}

lm_status lm_solve_result_init(const lm_solve_problem *p, lm_solve_result *r,
                               lm_error *err) {
  memset(r, 0, sizeof *r);
  int nk = p->nkernels;
  r->nkernels = nk;
  r->bucket_start = malloc(sizeof(int) * (size_t)(nk + 1));
  r->variant_start = malloc(sizeof(int) * (size_t)(nk + 1));
  if (!r->bucket_start || !r->variant_start)
    goto error;
  r->bucket_start[0] = r->variant_start[0] = 0;
  for (int k = 0; k < nk; k++) {
    r->bucket_start[k + 1] = r->bucket_start[k] + p->kernel[k].nbuckets;
    r->variant_start[k + 1] = r->variant_start[k] + p->kernel[k].nvariants;
  }
  r->choice = malloc(sizeof(int) * (size_t)(r->bucket_start[nk] + 1));
  r->compiled = calloc((size_t)r->variant_start[nk] + 1, 1);
  if (!r->choice || !r->compiled)
    goto error;
  for (int i = 0; i < r->bucket_start[nk]; i++)
    r->choice[i] = -1;
  r->status = LM_SOLVE_INFEASIBLE;
  r->objective = r->greedy_objective = INFINITY;
  r->bound = -INFINITY;
  r->gap = INFINITY;
  return LM_OK;
error:
  lm_solve_result_free(r);
  return lm_error_set(err, LM_ESYS, "solver: out of memory");
}

void lm_solve_result_free(lm_solve_result *r) {
  if (!r)
    return;
  free(r->bucket_start);
  free(r->variant_start);
  free(r->choice);
  free(r->compiled);
  r->bucket_start = r->variant_start = r->choice = NULL;
  r->compiled = NULL;
}

lm_status lm_solve_check(const lm_solve_problem *p, const lm_solve_opts *o,
                         const lm_solve_result *r, double *objective,
                         lm_error *err) {
  int nsc = o->robust ? lm_solve_nscen(p) : 1;
  double sc[nsc], spent = 0;
  for (int j = 0; j < nsc; j++)
    sc[j] = 0;
  for (int k = 0; k < p->nkernels; k++) {
    const lm_solve_kernel *K = &p->kernel[k];
    const int *ch = r->choice + r->bucket_start[k];
    const unsigned char *cp = r->compiled + r->variant_start[k];
    int n = 0;
    for (int v = 0; v < K->nvariants; v++) {
      n += cp[v] != 0;
      spent += cp[v] && K->compile_cost ? K->compile_cost[v] : 0;
    }
    if (K->cap > 0 && n > K->cap)
      return lm_error_set(err, LM_EFAIL,
                          "plan: kernel %d compiles %d variants, cap %d", k, n,
                          K->cap);
    for (int s = 0; s < K->nbuckets; s++) {
      int v = ch[s];
      if (v < 0 || v >= K->nvariants || !cp[v])
        return lm_error_set(err, LM_EFAIL,
                            "plan: kernel %d bucket %d runs variant %d, which "
                            "is not compiled",
                            k, s, v);
      if (!lm_solve_allowed(p, k, s, v))
        return lm_error_set(err, LM_EFAIL,
                            "plan: kernel %d bucket %d runs variant %d, which "
                            "may not run it",
                            k, s, v);
      if (o->threshold && s > 0 && v != ch[s - 1])
        for (int q = 0; q < s - 1; q++)
          if (ch[q] == v)
            return lm_error_set(err, LM_EFAIL,
                                "plan: kernel %d variant %d runs buckets %d "
                                "and %d but not %d (not a threshold table)",
                                k, v, q, s, s - 1);
      for (int j = 0; j < nsc; j++)
        sc[j] += K->weight[s] * lm_solve_cost(K, j, s, v);
    }
  }
  if (p->budget >= 0 && spent > p->budget * (1 + 1e-12) + 1e-12)
    return lm_error_set(err, LM_EFAIL,
                        "plan: compiles %g ms, over the global budget %g ms",
                        spent, p->budget);
  double obj = sc[0];
  for (int j = 1; j < nsc; j++)
    obj = fmax(obj, sc[j]);
  if (objective)
    *objective = obj;
  return LM_OK;
}

/* ---- dominance pruning --------------------------------------------------- */

/* u replaces v in any plan: allowed wherever v is, no costlier anywhere in
 * any scenario, no costlier to compile.  Equal variants: the lower index
 * stays. */
static int dominates(const lm_solve_problem *p, int k, int u, int v) {
  const lm_solve_kernel *K = &p->kernel[k];
  double cu = K->compile_cost ? K->compile_cost[u] : 0;
  double cv = K->compile_cost ? K->compile_cost[v] : 0;
  if (cu > cv)
    return 0;
  int strict = cu < cv;
  for (int j = 0; j < lm_solve_nscen(p); j++)
    for (int s = 0; s < K->nbuckets; s++) {
      double a = lm_solve_cost(K, j, s, u), b = lm_solve_cost(K, j, s, v);
      if (a > b)
        return 0;
      strict |= a < b;
    }
  return strict || u < v;
}

static int prune(const lm_solve_problem *p, const lm_solve_opts *o,
                 const int *vs, unsigned char *active) {
  int n = 0;
  for (int k = 0; k < p->nkernels; k++) {
    const lm_solve_kernel *K = &p->kernel[k];
    for (int v = 0; v < K->nvariants; v++) {
      int any = 0;
      for (int s = 0; s < K->nbuckets && !any; s++)
        any = lm_solve_allowed(p, k, s, v);
      active[vs[k] + v] = (unsigned char)any;
    }
    /* Replacing a variant can break a run, so thresholded dispatch only
     * drops variants allowed nowhere. */
    if (o->prune && !o->threshold)
      for (int v = 0; v < K->nvariants; v++)
        for (int u = 0; u < K->nvariants && active[vs[k] + v]; u++)
          if (u != v && active[vs[k] + u] && dominates(p, k, u, v))
            active[vs[k] + v] = 0;
    for (int v = 0; v < K->nvariants; v++)
      n += !active[vs[k] + v];
  }
  return n;
}

/* ---- the MIP ------------------------------------------------------------- */

enum { OBJ_PLAN, OBJ_COMPILE, OBJ_COUNT };

typedef struct Mip {
  const lm_solve_problem *p;
  const lm_solve_opts *o;
  const unsigned char *active; /* by global variant index */
  const int *bs, *vs;          /* result's bucket and variant starts */
  const long *xo;              /* offset of kernel k's s*nv+v cells */
  int k0, k1;                  /* kernels [k0, k1) */
  int obj;                     /* OBJ_* */
  int caps, budget;            /* include the cap rows, the budget row */
  const int *warm;             /* plan to offer (global choices) or NULL */
  double deadline;             /* now_s() at which to stop */
} Mip;

typedef struct MipOut {
  int ok;       /* an incumbent exists */
  int optimal;  /* proven */
  int tmlim;    /* stopped by the time limit */
  double value; /* GLPK's objective of the incumbent */
  double bound;
  long nodes;
} MipOut;

typedef struct Cb {
  double *warm; /* [1..ncols] or NULL */
  int sent;
  double deadline; /* now_s() past which the search is stopped */
  int stopped;     /* the callback stopped it (glp_ios_terminate) */
  double bound;
  long nodes;
} Cb;

static void mip_callback(glp_tree *T, void *info) {
  Cb *cb = info;
  int reason = glp_ios_reason(T);
  if (reason == GLP_IHEUR && cb->warm && !cb->sent) {
    cb->sent = 1;
    /* With the MIP presolver on, the tree holds the transformed problem;
     * GLPK checks the offered point and ignores it if it does not fit. */
    if (glp_get_num_cols(glp_ios_get_prob(T)) == (int)cb->warm[0])
      glp_ios_heur_sol(T, cb->warm);
  }
  int best = glp_ios_best_node(T);
  if (best)
    cb->bound = glp_ios_node_bound(T, best);
  int t_cnt = 0;
  glp_ios_tree_size(T, NULL, NULL, &t_cnt);
  cb->nodes = t_cnt;
  /* GLPK checks tm_lim only between its own steps, and a long cut or
   * heuristic round can overrun it; the callback holds the deadline too. */
  if (!cb->stopped && now_s() > cb->deadline) {
    cb->stopped = 1;
    glp_ios_terminate(T);
  }
}

/* With verbose: GLPK's log text to the caller's log, or to stderr. */
static int glpk_log(void *info, const char *text) {
  const lm_solve_opts *o = info;
  if (o->log)
    o->log(o->log_ctx, text);
  else
    fputs(text, stderr);
  return 1; /* GLPK itself prints nothing */
}

/* Growable triplets of the constraint matrix (1-based, as GLPK wants). */
typedef struct Trip {
  int *i, *j;
  double *a;
  long n, cap;
} Trip;

static int trip_add(Trip *t, int i, int j, double a) {
  if (t->n + 1 >= t->cap) {
    long c = t->cap ? 2 * t->cap : 1024;
    int *ni = realloc(t->i, sizeof(int) * (size_t)c);
    if (ni)
      t->i = ni;
    int *nj = realloc(t->j, sizeof(int) * (size_t)c);
    if (nj)
      t->j = nj;
    double *na = realloc(t->a, sizeof(double) * (size_t)c);
    if (na)
      t->a = na;
    if (!ni || !nj || !na)
      return -1;
    t->cap = c;
  }
  t->n++;
  t->i[t->n] = i;
  t->j[t->n] = j;
  t->a[t->n] = a;
  return 0;
}

/* Solve the MIP m describes; on success write its plan into r (kernels
 * [k0, k1) only). */
static lm_status mip_solve(const Mip *m, lm_solve_result *r, MipOut *out,
                           lm_error *err) {
  const lm_solve_problem *p = m->p;
  const lm_solve_opts *o = m->o;
  int nsc = o->robust ? lm_solve_nscen(p) : 1;
  int robust = m->obj == OBJ_PLAN && o->robust;
  lm_status st = LM_OK;
  memset(out, 0, sizeof *out);
  out->bound = -INFINITY;
  long ncell = m->xo[m->k1] - m->xo[m->k0];
  int nvar = m->vs[m->k1] - m->vs[m->k0];
  int *ycol = calloc((size_t)nvar + 1, sizeof(int));
  int *xcol = calloc((size_t)ncell + 1, sizeof(int));
  int *zcol = calloc((size_t)ncell + 1, sizeof(int));
  Trip t = {0};
  Cb cb = {0};
  glp_prob *lp = glp_create_prob();
  int prev_term = glp_term_out(o->verbose ? GLP_ON : GLP_OFF);
  glp_term_hook(o->verbose ? glpk_log : NULL, (void *)o);
  if (!ycol || !xcol || !zcol) {
    st = lm_error_set(err, LM_ESYS, "solver: out of memory");
    goto done;
  }
  glp_set_obj_dir(lp, GLP_MIN);
#define Y(k, v) ycol[m->vs[k] - m->vs[m->k0] + (v)]
#define XI(k, s, v)                                                            \
  (m->xo[k] - m->xo[m->k0] + (long)(s)*p->kernel[k].nvariants + (v))
  int tcol = 0;
  if (robust) {
    tcol = glp_add_cols(lp, 1);
    glp_set_col_bnds(lp, tcol, GLP_LO, 0, 0);
    glp_set_obj_coef(lp, tcol, 1);
  }
  for (int k = m->k0; k < m->k1; k++) {
    const lm_solve_kernel *K = &p->kernel[k];
    for (int v = 0; v < K->nvariants; v++) {
      if (!m->active[m->vs[k] + v])
        continue;
      int c = glp_add_cols(lp, 1);
      Y(k, v) = c;
      glp_set_col_kind(lp, c, GLP_BV);
      double cc = K->compile_cost ? K->compile_cost[v] : 0;
      glp_set_obj_coef(lp, c,
                       m->obj == OBJ_COMPILE ? cc
                       : m->obj == OBJ_COUNT ? 1
                                             : 0);
      for (int s = 0; s < K->nbuckets; s++) {
        if (!lm_solve_allowed(p, k, s, v))
          continue;
        int x = glp_add_cols(lp, 1);
        xcol[XI(k, s, v)] = x;
        glp_set_col_kind(lp, x, GLP_BV);
        if (m->obj == OBJ_PLAN && !robust)
          glp_set_obj_coef(lp, x, K->weight[s] * lm_solve_cost(K, 0, s, v));
        if (o->threshold) {
          int z = glp_add_cols(lp, 1);
          zcol[XI(k, s, v)] = z;
          glp_set_col_bnds(lp, z, GLP_DB, 0, 1);
        }
      }
    }
  }
  int ncols = glp_get_num_cols(lp);
  int ok = 0;
  for (int k = m->k0; k < m->k1; k++) {
    const lm_solve_kernel *K = &p->kernel[k];
    for (int s = 0; s < K->nbuckets; s++) {
      int row = glp_add_rows(lp, 1);
      glp_set_row_bnds(lp, row, GLP_FX, 1, 1);
      for (int v = 0; v < K->nvariants; v++) {
        int x = xcol[XI(k, s, v)];
        if (!x)
          continue;
        ok |= trip_add(&t, row, x, 1);
        int l = glp_add_rows(lp, 1);
        glp_set_row_bnds(lp, l, GLP_UP, 0, 0);
        ok |= trip_add(&t, l, x, 1);
        ok |= trip_add(&t, l, Y(k, v), -1);
      }
    }
    if (m->caps && K->cap > 0) {
      int row = glp_add_rows(lp, 1);
      glp_set_row_bnds(lp, row, GLP_UP, 0, K->cap);
      for (int v = 0; v < K->nvariants; v++)
        if (m->active[m->vs[k] + v])
          ok |= trip_add(&t, row, Y(k, v), 1);
    }
    if (o->threshold)
      for (int v = 0; v < K->nvariants; v++) {
        if (!m->active[m->vs[k] + v])
          continue;
        int sum = glp_add_rows(lp, 1);
        glp_set_row_bnds(lp, sum, GLP_UP, 0, 0);
        ok |= trip_add(&t, sum, Y(k, v), -1);
        for (int s = 0; s < K->nbuckets; s++) {
          int x = xcol[XI(k, s, v)], z = zcol[XI(k, s, v)];
          if (!x)
            continue;
          int row = glp_add_rows(lp, 1); /* z[s] - x[s] + x[s-1] >= 0 */
          glp_set_row_bnds(lp, row, GLP_LO, 0, 0);
          ok |= trip_add(&t, row, z, 1);
          ok |= trip_add(&t, row, x, -1);
          if (s > 0 && xcol[XI(k, s - 1, v)])
            ok |= trip_add(&t, row, xcol[XI(k, s - 1, v)], 1);
          ok |= trip_add(&t, sum, z, 1);
        }
      }
  }
  if (m->budget && p->budget >= 0) {
    int row = glp_add_rows(lp, 1);
    glp_set_row_bnds(lp, row, GLP_UP, 0, p->budget);
    for (int k = m->k0; k < m->k1; k++)
      for (int v = 0; v < p->kernel[k].nvariants; v++)
        if (m->active[m->vs[k] + v] && p->kernel[k].compile_cost)
          ok |= trip_add(&t, row, Y(k, v), p->kernel[k].compile_cost[v]);
  }
  if (robust)
    for (int j = 0; j < nsc; j++) {
      int row = glp_add_rows(lp, 1); /* t - Σ w c^j x >= 0 */
      glp_set_row_bnds(lp, row, GLP_LO, 0, 0);
      ok |= trip_add(&t, row, tcol, 1);
      for (int k = m->k0; k < m->k1; k++) {
        const lm_solve_kernel *K = &p->kernel[k];
        for (int s = 0; s < K->nbuckets; s++)
          for (int v = 0; v < K->nvariants; v++)
            if (xcol[XI(k, s, v)])
              ok |= trip_add(&t, row, xcol[XI(k, s, v)],
                             -K->weight[s] * lm_solve_cost(K, j, s, v));
      }
    }
  if (ok) {
    st = lm_error_set(err, LM_ESYS, "solver: out of memory");
    goto done;
  }
  glp_load_matrix(lp, (int)t.n, t.i, t.j, t.a);

  if (m->warm) {
    cb.warm = calloc((size_t)ncols + 1, sizeof(double));
    if (cb.warm) {
      cb.warm[0] = ncols;
      double worst = -INFINITY;
      double scen[nsc];
      for (int j = 0; j < nsc; j++)
        scen[j] = 0;
      for (int k = m->k0; k < m->k1; k++) {
        const lm_solve_kernel *K = &p->kernel[k];
        for (int s = 0; s < K->nbuckets; s++) {
          int v = m->warm[m->bs[k] + s];
          cb.warm[Y(k, v)] = 1;
          cb.warm[xcol[XI(k, s, v)]] = 1;
          if (o->threshold && (s == 0 || m->warm[m->bs[k] + s - 1] != v))
            cb.warm[zcol[XI(k, s, v)]] = 1;
          for (int j = 0; j < nsc; j++)
            scen[j] += K->weight[s] * lm_solve_cost(K, j, s, v);
        }
      }
      for (int j = 0; j < nsc; j++)
        worst = fmax(worst, scen[j]);
      if (robust)
        cb.warm[tcol] = worst;
    }
  }
  glp_iocp io;
  glp_init_iocp(&io);
  io.msg_lev = o->verbose ? GLP_MSG_ON : GLP_MSG_OFF;
  io.presolve = o->presolve ? GLP_ON : GLP_OFF;
  io.mip_gap = o->mip_gap;
  io.cb_func = mip_callback;
  io.cb_info = &cb;
  double left = m->deadline - now_s();
  io.tm_lim = left > 0.001 ? (int)fmin(left * 1000, 2e9) : 1;
  cb.deadline = m->deadline;
  cb.bound = -INFINITY;
  if (!o->presolve) {
    glp_smcp sp;
    glp_init_smcp(&sp);
    sp.msg_lev = io.msg_lev;
    sp.tm_lim = io.tm_lim;
    glp_simplex(lp, &sp);
  }
  int ret = glp_intopt(lp, &io);
  int ms = glp_mip_status(lp);

  out->nodes = cb.nodes;
  out->tmlim = ret == GLP_ETMLIM || (ret == GLP_ESTOP && cb.stopped);
  if (ret != 0 && !out->tmlim && ret != GLP_EMIPGAP && ret != GLP_ENOPFS &&
      ret != GLP_ENODFS) {
    st =
        lm_error_set(err, LM_EFAIL, "solver: GLPK glp_intopt failed (%d)", ret);
    goto done;
  }
  if (ms == GLP_OPT || ms == GLP_FEAS) {
    out->ok = 1;
    out->value = glp_mip_obj_val(lp);
    out->optimal = ms == GLP_OPT && ret == 0;
    out->bound = out->optimal ? out->value : cb.bound;
    for (int k = m->k0; k < m->k1; k++) {
      const lm_solve_kernel *K = &p->kernel[k];
      memset(r->compiled + m->vs[k], 0, (size_t)K->nvariants);
      for (int s = 0; s < K->nbuckets; s++)
        for (int v = 0; v < K->nvariants; v++) {
          int x = xcol[XI(k, s, v)];
          if (x && glp_mip_col_val(lp, x) > 0.5) {
            r->choice[m->bs[k] + s] = v;
            r->compiled[m->vs[k] + v] = 1;
          }
        }
    }
  }
#undef Y
#undef XI
done:
  glp_delete_prob(lp);
  glp_term_hook(NULL, NULL);
  glp_term_out(prev_term);
  free(cb.warm);
  free(t.i);
  free(t.j);
  free(t.a);
  free(ycol);
  free(xcol);
  free(zcol);
  return st;
}

/* ---- exact methods for one kernel --------------------------------------- */

/* Enumerate compile sets of 1..cap of the active variants, depth first,
 * with the per-bucket best of the set so far in cur[depth]. */
/* One compile set of a kernel: its best plan's cost and its compile cost;
 * mask bit i is candidate i. */
typedef struct Point {
  double cost, cc;
  uint64_t mask;
} Point;

typedef struct Enum {
  int nb, nv, cap;
  const double *wc;
  const int *cand;
  int ncand;
  double *cur; /* [(cap + 1) * nb] */
  int *set, *bestset;
  int bestn;
  double best;
  const double *cc; /* compile costs, or NULL */
  Point *pts;       /* when non-NULL, every set is recorded */
  int npts;
} Enum;

static void enum_rec(Enum *e, int depth, int from, uint64_t mask, double cc) {
  const double *c = e->cur + (size_t)depth * e->nb;
  if (depth > 0) {
    double sum = 0;
    for (int s = 0; s < e->nb; s++)
      sum += c[s];
    if (e->pts && isfinite(sum))
      e->pts[e->npts++] = (Point){sum, cc, mask};
    if (sum < e->best) {
      e->best = sum;
      e->bestn = depth;
      memcpy(e->bestset, e->set, sizeof(int) * (size_t)depth);
    }
  }
  if (depth == e->cap)
    return;
  for (int i = from; i < e->ncand; i++) {
    double *n = e->cur + (size_t)(depth + 1) * e->nb;
    int v = e->cand[i];
    for (int s = 0; s < e->nb; s++)
      n[s] = fmin(c[s], e->wc[s * e->nv + v]);
    e->set[depth] = v;
    enum_rec(e, depth + 1, i + 1, mask | (uint64_t)1 << i,
             cc + (e->cc ? e->cc[v] : 0));
  }
}

static double binom_sum(int n, int k) {
  double total = 0, c = 1;
  for (int i = 1; i <= k && i <= n; i++) {
    c = c * (n - i + 1) / i;
    total += c;
  }
  return total;
}

static int cmp_cost(const void *a, const void *b) {
  const Point *x = a, *y = b;
  return x->cost < y->cost ? -1 : x->cost > y->cost;
}

/* Thresholded dispatch under a cap when the run program reused a variant:
 * list every compile set of at most cap variants with its unthresholded
 * cost (a lower bound on its threshold plans), and solve the exact set
 * program (greedy.c) in order of that bound until the bound passes the
 * best plan found. */
static int threshold_sets(const lm_solve_problem *p, int k,
                          const unsigned char *active, const double *wc,
                          int *choice) {
  const lm_solve_kernel *K = &p->kernel[k];
  int nb = K->nbuckets, nv = K->nvariants, cand[nv], ncand = 0, solved = 0;
  for (int v = 0; v < nv; v++)
    if (!active || active[v])
      cand[ncand++] = v;
  int cap = K->cap < ncand ? K->cap : ncand;
  if (cap > 8 || ncand > 62 || binom_sum(ncand, cap) > ENUM_MAX_SETS)
    return 0;
  Enum e = {nb,   nv,   cap, wc,       cand, ncand, NULL,
            NULL, NULL, 0,   INFINITY, NULL, NULL,  0};
  e.cur = malloc(sizeof(double) * (size_t)(cap + 1) * nb);
  e.set = malloc(sizeof(int) * (size_t)cap);
  e.bestset = malloc(sizeof(int) * (size_t)cap);
  e.pts = malloc(sizeof(Point) * (size_t)(binom_sum(ncand, cap) + 1));
  int *plan = malloc(sizeof(int) * (size_t)nb);
  if (e.cur && e.set && e.bestset && e.pts && plan) {
    for (int s = 0; s < nb; s++)
      e.cur[s] = INFINITY;
    enum_rec(&e, 0, 0, 0, 0);
    qsort(e.pts, (size_t)e.npts, sizeof(Point), cmp_cost);
    double best = INFINITY;
    for (int i = 0; i < e.npts && e.pts[i].cost < best; i++) {
      int set[8], n = 0;
      for (int b = 0; b < ncand; b++)
        if (e.pts[i].mask >> b & 1)
          set[n++] = cand[b];
      double val;
      if (lm_solve_threshold_set(nb, nv, wc, set, n, plan, &val) == 1 &&
          val < best) {
        best = val;
        memcpy(choice, plan, sizeof(int) * (size_t)nb);
        solved = 1;
      }
    }
  }
  free(e.cur);
  free(e.set);
  free(e.bestset);
  free(e.pts);
  free(plan);
  return solved;
}

/* 1: the kernel's plan is in choice (optimal); 0: left to the MIP. */
static int kernel_exact(const lm_solve_problem *p, const lm_solve_opts *o,
                        int k, const unsigned char *active, int *choice) {
  const lm_solve_kernel *K = &p->kernel[k];
  int nb = K->nbuckets, nv = K->nvariants, solved = 0;
  double *wc = malloc(sizeof(double) * (size_t)nb * nv);
  if (!wc)
    return 0;
  lm_solve_weighted(p, o, k, active, wc);
  if (o->threshold) {
    double val;
    solved = lm_solve_threshold_dp(nb, nv, wc, K->cap, choice, &val) == 1;
    if (!solved && K->cap > 0)
      solved = threshold_sets(p, k, active, wc, choice);
    free(wc);
    return solved;
  }
  unsigned char used[nv];
  memset(used, 0, (size_t)nv);
  int nused = 0;
  for (int s = 0; s < nb; s++) {
    int b = -1;
    for (int v = 0; v < nv; v++) {
      double a = wc[s * nv + v];
      /* a bucket of weight 0 still runs its fastest variant */
      if (isfinite(a) &&
          (b < 0 || a < wc[s * nv + b] ||
           (a == wc[s * nv + b] &&
            lm_solve_cost(K, 0, s, v) < lm_solve_cost(K, 0, s, b))))
        b = v;
    }
    choice[s] = b;
    if (b >= 0 && !used[b]++)
      nused++;
  }
  if (K->cap == 0 || nused <= K->cap) {
    free(wc);
    return 1;
  }
  int cand[nv], ncand = 0;
  for (int v = 0; v < nv; v++)
    if (!active || active[v])
      cand[ncand++] = v;
  if (binom_sum(ncand, K->cap) <= ENUM_MAX_SETS) {
    Enum e = {nb,   nv,   K->cap, wc,       cand, ncand, NULL,
              NULL, NULL, 0,      INFINITY, NULL, NULL,  0};
    e.cur = malloc(sizeof(double) * (size_t)(K->cap + 1) * nb);
    e.set = malloc(sizeof(int) * (size_t)K->cap);
    e.bestset = malloc(sizeof(int) * (size_t)K->cap);
    if (e.cur && e.set && e.bestset) {
      for (int s = 0; s < nb; s++)
        e.cur[s] = INFINITY;
      enum_rec(&e, 0, 0, 0, 0);
      if (isfinite(e.best)) {
        for (int s = 0; s < nb; s++) {
          int b = e.bestset[0];
          for (int i = 1; i < e.bestn; i++)
            if (wc[s * nv + e.bestset[i]] < wc[s * nv + b])
              b = e.bestset[i];
          choice[s] = b;
        }
        solved = 1;
      }
    }
    free(e.cur);
    free(e.set);
    free(e.bestset);
  }
  free(wc);
  return solved;
}

/* ---- the global budget as a multiple-choice knapsack ---------------------
 *
 * A kernel's plan is worth only its cost and its compile cost, so per
 * kernel only the Pareto front of (compile cost, best plan cost) over its
 * compile sets matters.  When every set of every kernel can be listed, the
 * budget problem is: pick one front point per kernel, Σ cc <= B, min Σ
 * cost -- a multiple-choice knapsack, solved exactly by dynamic program
 * over the budget when compile costs are multiples of a resolution. */

typedef struct Front {
  Point *pt;
  int n;
  int *cand; /* candidate i is variant cand[i] */
} Front;

static int cmp_point(const void *a, const void *b) {
  const Point *x = a, *y = b;
  if (x->cc != y->cc)
    return x->cc < y->cc ? -1 : 1;
  return x->cost < y->cost ? -1 : x->cost > y->cost;
}

/* 1: f holds kernel k's front; 0: too many sets. */
static int kernel_front(const lm_solve_problem *p, const lm_solve_opts *o,
                        int k, const unsigned char *active, Front *f) {
  const lm_solve_kernel *K = &p->kernel[k];
  int nb = K->nbuckets, nv = K->nvariants, ncand = 0;
  memset(f, 0, sizeof *f);
  f->cand = malloc(sizeof(int) * (size_t)nv);
  if (!f->cand)
    return 0;
  for (int v = 0; v < nv; v++)
    if (active[v])
      f->cand[ncand++] = v;
  int cap = K->cap > 0 && K->cap < ncand ? K->cap : ncand;
  if (ncand > 62 || binom_sum(ncand, cap) > ENUM_MAX_SETS)
    return 0;
  double *wc = malloc(sizeof(double) * (size_t)nb * nv);
  Enum e = {nb,   nv,   cap, wc,       f->cand,         ncand, NULL,
            NULL, NULL, 0,   INFINITY, K->compile_cost, NULL,  0};
  e.cur = malloc(sizeof(double) * (size_t)(cap + 1) * nb);
  e.set = malloc(sizeof(int) * (size_t)cap);
  e.bestset = malloc(sizeof(int) * (size_t)cap);
  e.pts = malloc(sizeof(Point) * (size_t)(binom_sum(ncand, cap) + 1));
  int ok = wc && e.cur && e.set && e.bestset && e.pts;
  if (ok) {
    lm_solve_weighted(p, o, k, active, wc);
    for (int s = 0; s < nb; s++)
      e.cur[s] = INFINITY;
    enum_rec(&e, 0, 0, 0, 0);
    qsort(e.pts, (size_t)e.npts, sizeof(Point), cmp_point);
    int n = 0;
    for (int i = 0; i < e.npts; i++)
      if (n == 0 || e.pts[i].cost < e.pts[n - 1].cost)
        e.pts[n++] = e.pts[i];
    f->pt = e.pts;
    f->n = n;
    e.pts = NULL;
  }
  free(wc);
  free(e.cur);
  free(e.set);
  free(e.bestset);
  free(e.pts);
  return ok;
}

/* Budget units: the coarsest of 1, 1e-1, ..., 1e-6 ms of which every
 * compile cost is a multiple; 0 if none is or the table would be too big. */
static double budget_unit(const lm_solve_problem *p, const Front *f) {
  for (double u = 1; u >= 1e-6; u /= 10) {
    int ok = p->budget / u <= 4e6;
    for (int k = 0; k < p->nkernels && ok; k++)
      for (int i = 0; i < f[k].n && ok; i++) {
        double q = f[k].pt[i].cc / u;
        ok = fabs(q - nearbyint(q)) <= 1e-9 * fmax(1, q);
      }
    if (ok && (double)p->nkernels * (p->budget / u + 1) <= 1e8)
      return u;
  }
  return 0;
}

/* 1: r holds the optimum; 0: not applicable; -1: no memory. */
static int knapsack(const lm_solve_problem *p, const lm_solve_opts *o,
                    const unsigned char *active, lm_solve_result *r) {
  int nk = p->nkernels, ret = 0;
  Front *f = calloc((size_t)nk, sizeof(Front));
  double *dp = NULL, *nx = NULL;
  unsigned short *pick = NULL;
  if (!f)
    return -1;
  for (int k = 0; k < nk; k++)
    if (!kernel_front(p, o, k, active + r->variant_start[k], &f[k]) ||
        f[k].n > 65535)
      goto done;
  double u = budget_unit(p, f);
  if (u == 0)
    goto done;
  long W = (long)floor(p->budget / u + 1e-9) + 1;
  dp = malloc(sizeof(double) * (size_t)W);
  nx = malloc(sizeof(double) * (size_t)W);
  pick = malloc(sizeof(unsigned short) * (size_t)nk * (size_t)W);
  if (!dp || !nx || !pick) {
    ret = -1;
    goto done;
  }
  /* dp[b]: least cost of the kernels so far with compile units <= b */
  for (long b = 0; b < W; b++)
    dp[b] = 0;
  for (int k = 0; k < nk; k++) {
    for (long b = 0; b < W; b++) {
      nx[b] = INFINITY;
      pick[(size_t)k * W + b] = 0;
    }
    for (int i = 0; i < f[k].n; i++) {
      long c = (long)nearbyint(f[k].pt[i].cc / u);
      for (long b = c; b < W; b++)
        if (dp[b - c] + f[k].pt[i].cost < nx[b]) {
          nx[b] = dp[b - c] + f[k].pt[i].cost;
          pick[(size_t)k * W + b] = (unsigned short)i;
        }
    }
    double *t = dp;
    dp = nx;
    nx = t;
  }
  if (!isfinite(dp[W - 1]))
    goto done;
  long b = W - 1;
  for (int k = nk - 1; k >= 0; k--) {
    const lm_solve_kernel *K = &p->kernel[k];
    Point *pt = &f[k].pt[pick[(size_t)k * W + b]];
    b -= (long)nearbyint(pt->cc / u);
    for (int s = 0; s < K->nbuckets; s++) {
      int best = -1;
      for (int i = 0; i < 64; i++)
        if (pt->mask >> i & 1) {
          int v = f[k].cand[i];
          if (lm_solve_allowed(p, k, s, v) &&
              (best < 0 || K->weight[s] * lm_solve_cost(K, 0, s, v) <
                               K->weight[s] * lm_solve_cost(K, 0, s, best)))
            best = v;
        }
      r->choice[r->bucket_start[k] + s] = best;
    }
  }
  ret = 1;
done:
  for (int k = 0; k < nk; k++) {
    free(f[k].pt);
    free(f[k].cand);
  }
  free(f);
  free(dp);
  free(nx);
  free(pick);
  return ret;
}

/* ---- feasibility --------------------------------------------------------- */

/* Every bucket has an allowed variant; each cap admits a cover; the budget
 * admits the cheapest compile set.  LM_EINPUT names the first that fails. */
static lm_status check_feasible(const Mip *base, lm_solve_result *r,
                                lm_error *err) {
  const lm_solve_problem *p = base->p;
  double cheapest = 0;
  for (int k = 0; k < p->nkernels; k++) {
    const lm_solve_kernel *K = &p->kernel[k];
    const unsigned char *act = base->active + base->vs[k];
    int full = 0, everywhere = 1;
    double ccfull = INFINITY;
    for (int s = 0; s < K->nbuckets; s++) {
      int any = 0;
      for (int v = 0; v < K->nvariants; v++)
        any |= act[v] && lm_solve_allowed(p, k, s, v);
      if (!any)
        return lm_error_set(err, LM_EINPUT,
                            "solver: kernel %d bucket %d has no allowed "
                            "variant (every cost is INFINITY)",
                            k, s);
    }
    for (int v = 0; v < K->nvariants; v++) {
      if (!act[v])
        continue;
      int all = 1;
      for (int s = 0; s < K->nbuckets && all; s++)
        all = lm_solve_allowed(p, k, s, v);
      if (all) {
        full = 1;
        ccfull = fmin(ccfull, K->compile_cost ? K->compile_cost[v] : 0);
      } else
        everywhere = 0;
    }
    Mip m = *base;
    m.k0 = k;
    m.k1 = k + 1;
    m.warm = NULL;
    m.budget = 0;
    MipOut out;
    lm_status st;
    if (K->cap > 0 && !full) {
      m.obj = OBJ_COUNT;
      m.caps = 0;
      if ((st = mip_solve(&m, r, &out, err)))
        return st;
      r->mip_solves++;
      if (out.ok && out.optimal && out.value > K->cap + 0.5)
        return lm_error_set(err, LM_EINPUT,
                            "solver: kernel %d needs at least %.0f variants "
                            "to cover its buckets but its cap is %d",
                            k, out.value, K->cap);
      if (!out.ok && !out.tmlim)
        return lm_error_set(err, LM_EINPUT, "solver: kernel %d has no %s plan",
                            k, base->o->threshold ? "threshold" : "feasible");
    }
    if (p->budget >= 0) {
      if (everywhere)
        cheapest += ccfull;
      else {
        m.obj = OBJ_COMPILE;
        m.caps = 1;
        if ((st = mip_solve(&m, r, &out, err)))
          return st;
        r->mip_solves++;
        if (!out.ok && !out.tmlim)
          return lm_error_set(err, LM_EINPUT,
                              "solver: kernel %d has no plan within its cap "
                              "%d",
                              k, K->cap);
        cheapest += out.ok ? out.bound : 0;
      }
    }
  }
  if (p->budget >= 0 && cheapest > p->budget * (1 + 1e-9) + 1e-12)
    return lm_error_set(err, LM_EINPUT,
                        "solver: global budget %g ms is below the cheapest "
                        "compile set %g ms",
                        p->budget, cheapest);
  return LM_OK;
}

/* ---- the driver ---------------------------------------------------------- */

static void finish_gap(lm_solve_result *r) {
  if (r->status == LM_SOLVE_OPTIMAL && r->bound >= r->objective)
    r->gap = 0;
  else if (!isfinite(r->bound))
    r->gap = INFINITY;
  else
    r->gap =
        fmax(0, (r->objective - r->bound) / fmax(fabs(r->objective), 1e-300));
  if (r->status == LM_SOLVE_OPTIMAL && r->gap > 0 && r->gap < 1e-9)
    r->gap = 0;
}

lm_status lm_solve(const lm_solve_problem *p, const lm_solve_opts *o,
                   lm_solve_result *r, lm_error *err) {
  double t0 = now_s();
  lm_status st = lm_solve_validate(p, o, err);
  if (st)
    return st;
  if ((st = lm_solve_result_init(p, r, err)))
    return st;
  int nk = p->nkernels, *bs = r->bucket_start, *vs = r->variant_start;
  unsigned char *active = calloc((size_t)vs[nk] + 1, 1);
  long *xo = malloc(sizeof(long) * (size_t)(nk + 1));
  int *warm = NULL;
  lm_solve_result g = {0};
  if (!active || !xo) {
    st = lm_error_set(err, LM_ESYS, "solver: out of memory");
    goto error;
  }
  xo[0] = 0;
  for (int k = 0; k < nk; k++)
    xo[k + 1] = xo[k] + (long)p->kernel[k].nbuckets * p->kernel[k].nvariants;
  r->pruned = prune(p, o, vs, active);
  Mip base = {p,
              o,
              active,
              bs,
              vs,
              xo,
              0,
              nk,
              OBJ_PLAN,
              1,
              1,
              NULL,
              t0 + o->time_limit};
  if ((st = check_feasible(&base, r, err))) {
    r->status = LM_SOLVE_INFEASIBLE;
    goto error;
  }
  if (lm_solve_greedy(p, o, active, &g, NULL) == LM_OK) {
    r->greedy_objective = g.objective;
    warm = g.choice;
  }
  memset(r->compiled, 0, (size_t)vs[nk]);
  int coupled = p->budget >= 0 || (o->robust && lm_solve_nscen(p) > 1) ||
                o->method == LM_SOLVE_JOINT_MIP;
  int timed_out = 0, proven = 1, kn = 0;
  double bound = 0;
  if (!coupled) {
    for (int k = 0; k < nk; k++) {
      if (kernel_exact(p, o, k, active + vs[k], r->choice + bs[k])) {
        const lm_solve_kernel *K = &p->kernel[k];
        for (int s = 0; s < K->nbuckets; s++) {
          r->compiled[vs[k] + r->choice[bs[k] + s]] = 1;
          bound += K->weight[s] * lm_solve_cost(K, 0, s, r->choice[bs[k] + s]);
        }
        continue;
      }
      Mip m = base;
      m.k0 = k;
      m.k1 = k + 1;
      m.warm = warm;
      MipOut out;
      if ((st = mip_solve(&m, r, &out, err)))
        goto error;
      r->mip_solves++;
      r->nodes += out.nodes;
      if (!out.ok) {
        if (!warm) {
          st = lm_error_set(err, LM_EFAIL,
                            "solver: time limit %g s passed before kernel %d "
                            "had a plan",
                            o->time_limit, k);
          goto error;
        }
        for (int s = 0; s < p->kernel[k].nbuckets; s++)
          r->choice[bs[k] + s] = warm[bs[k] + s];
        memcpy(r->compiled + vs[k], g.compiled + vs[k],
               (size_t)p->kernel[k].nvariants);
      }
      timed_out |= out.tmlim;
      proven &= out.optimal;
      bound += out.bound;
    }
  } else if (p->budget >= 0 && !o->robust && !o->threshold &&
             o->method == LM_SOLVE_AUTO &&
             (kn = knapsack(p, o, active, r)) != 0) {
    if (kn < 0) {
      st = lm_error_set(err, LM_ESYS, "solver: out of memory");
      goto error;
    }
    for (int i = 0; i < bs[nk]; i++) {
      int k = 0;
      while (bs[k + 1] <= i)
        k++;
      r->compiled[vs[k] + r->choice[i]] = 1;
    }
    double obj;
    lm_solve_check(p, o, r, &obj, NULL);
    bound = obj;
  } else {
    MipOut out;
    base.warm = warm;
    if ((st = mip_solve(&base, r, &out, err)))
      goto error;
    r->mip_solves++;
    r->nodes += out.nodes;
    /* GLPK may not have taken the warm start; the greedy plan is then the
     * better incumbent. */
    double mo = INFINITY;
    if (out.ok && lm_solve_check(p, o, r, &mo, NULL))
      mo = INFINITY;
    if (warm && g.objective < mo) {
      memcpy(r->choice, g.choice, sizeof(int) * (size_t)bs[nk]);
      memcpy(r->compiled, g.compiled, (size_t)vs[nk]);
    } else if (!out.ok) {
      st = lm_error_set(err, LM_EFAIL,
                        "solver: time limit %g s passed before any plan",
                        o->time_limit);
      goto error;
    }
    timed_out = out.tmlim;
    proven = out.optimal;
    bound = out.bound;
  }
  if ((st = lm_solve_check(p, o, r, &r->objective, err))) {
    st = lm_error_set(err, LM_EFAIL, "solver: internal: infeasible plan");
    goto error;
  }
  r->compile_total = 0;
  for (int k = 0; k < nk; k++)
    for (int v = 0; v < p->kernel[k].nvariants; v++)
      if (r->compiled[vs[k] + v] && p->kernel[k].compile_cost)
        r->compile_total += p->kernel[k].compile_cost[v];
  r->status = proven      ? LM_SOLVE_OPTIMAL
              : timed_out ? LM_SOLVE_TIME_LIMIT
                          : LM_SOLVE_FEASIBLE;
  r->bound = proven ? fmin(bound, r->objective) : bound;
  finish_gap(r);
  r->time_s = now_s() - t0;
  free(active);
  free(xo);
  lm_solve_result_free(&g);
  return LM_OK;
error:
  free(active);
  free(xo);
  lm_solve_result_free(&g);
  {
    lm_solve_status s = r->status;
    lm_solve_result_free(r);
    r->status = s;
  }
  return st;
}
