/* The MIP, in GLPK, for what has no cheaper exact method.
 *
 * It is the facility-location form: x[k,s,v] <= y[k,v] per pair, which is
 * much tighter than the aggregated Σ_s x <= S·y.  Contiguous runs add a
 * run-start variable z[k,s,v] >= x[k,s,v] - x[k,s-1,v] with
 * Σ_s z[k,s,v] <= y[k,v]; robust mode adds t >= Σ w c^(j) x per scenario
 * and minimises t.  A callback offers the warm start and holds the
 * deadline. */
#include <glpk.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "solver/solve_impl.h"

typedef struct Cb {
  double *warm; /* [1..ncols] or NULL */
  int sent;
  double deadline; /* lm_solve_now() past which the search is stopped */
  int stopped;     /* the callback stopped it (glp_ios_terminate) */
  double bound;
  long nodes;
} Cb;

static void mip_callback(glp_tree *T, void *info) {
  Cb *cb = info;
  int reason = glp_ios_reason(T);
  if (reason == GLP_IHEUR && cb->warm && !cb->sent) {
    cb->sent = 1;
    /* glp_intopt runs without its MIP presolver, so the tree holds the
     * problem as built; GLPK still checks the offered point. */
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
  if (!cb->stopped && lm_solve_now() > cb->deadline) {
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

lm_status lm_solve_mip(const Mip *m, lm_solve_result *r, MipOut *out,
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
  io.presolve = GLP_OFF;
  io.mip_gap = o->mip_gap;
  io.cb_func = mip_callback;
  io.cb_info = &cb;
  cb.deadline = m->deadline;
  cb.bound = -INFINITY;
  /* The root LP first, by glp_simplex under the deadline: inside
   * glp_intopt neither GLPK's MIP presolver nor its root LP checks tm_lim,
   * and the deployment evaluation's robust solves took 18-22 s for a 10 s
   * limit.  GLPK's LP presolver (presolve on) does not check it either
   * (the same solves: 7-12 s past the deadline in glp_simplex alone), so
   * it is off by default; it leaves no factorized basis, so a second
   * simplex without it restores the optimal basis glp_intopt starts from
   * (no iterations).  glp_intopt then runs without its own presolver, on
   * the problem as built, which also makes every warm start fit the tree
   * (docs/solver.md, "Time limit"). */
  glp_smcp sp;
  glp_init_smcp(&sp);
  sp.msg_lev = io.msg_lev;
  sp.presolve = o->presolve ? GLP_ON : GLP_OFF;
  int ret = GLP_ETMLIM;
  for (int pass = 0; pass < 2; pass++) {
    double left = m->deadline - lm_solve_now();
    if (left <= 0.001) {
      ret = GLP_ETMLIM;
      break;
    }
    sp.tm_lim = (int)fmin(left * 1000, 2e9);
    ret = glp_simplex(lp, &sp);
    if (ret != 0 || sp.presolve == GLP_OFF || glp_get_status(lp) != GLP_OPT)
      break;
    sp.presolve = GLP_OFF; /* again, for the factorized basis */
  }
  int root = ret == 0 && glp_get_status(lp) == GLP_OPT;
  if (root) {
    double left = m->deadline - lm_solve_now();
    io.tm_lim = left > 0.001 ? (int)fmin(left * 1000, 2e9) : 1;
    ret = glp_intopt(lp, &io);
  } else if (ret == 0 || ret == GLP_ENOPFS || ret == GLP_ENODFS) {
    ret = GLP_ENOPFS; /* the relaxation has no optimum: no plan from here */
  } else if (ret != GLP_ETMLIM) {
    st = lm_error_set(err, LM_EFAIL, "solver: GLPK glp_simplex failed (%d)", ret);
    goto done;
  }
  int ms = root ? glp_mip_status(lp) : GLP_UNDEF;

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
