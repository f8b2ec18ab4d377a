/* Prediction: coefficients x counts, combined as a compute/memory
 * bottleneck with a fitted overlap (the form of Halide's Adams2019 terms
 * and of ECM-style bottleneck models), with each term's share kept so that
 * `lanemap predict --explain` can say why one variant beats another. */
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "costmodel/counts.h"
#include "lanemap/costmodel.h"
#include "lanemap/timing.h"

/* The launch's time after the fork-join round: t_par, its busiest
 * participant's share, and t_ser, all of it on the caller, combine as the
 * workers' late join says (lm_coefs.join).  The launch is Q equal claims
 * of d = t_ser / Q (a static launch: one block per participant; a dynamic
 * one: its claims), taken by whichever participant is free first: the
 * caller from 0, the parts - 1 workers from J.  The caller starts
 * a = ceil(J / d) claims alone; the other Q - a go in rounds of parts, the
 * workers first (they are free at J, the caller at a d >= J), so with m
 * full rounds and r claims left over the launch ends at
 * max(a d + m d, J + (m + 1) d if r > 0).  A pooled launch only;
 * otherwise, and with J = 0, t_par. */
static double joined(const lm_coefs *c, double tpar, double tser, double parts,
                     double Q, int pooled) {
  double J = c->join;
  if (!pooled || parts <= 1 || !(J > 0) || !(Q >= 1) || !(tser > 0))
    return tpar;
  double d = tser / Q, a = ceil(J / d), rest = Q - a;
  if (rest <= 0)
    return fmax(tpar, tser); /* the caller ran every claim before J */
  double m = floor(rest / parts), r = rest - m * parts;
  double end = fmax(a * d + m * d, r > 0 ? J + (m + 1) * d : 0);
  return fmax(tpar, fmin(end, tser + J));
}

/* The model form, shared by lm_cost_eval and the compiled predictor so
 * that both give the same bits: compute C and cache-level memory Mc are
 * each worker's share (divided by the split's speed-up par), DRAM time Md
 * is shared, the hidden side is weighted by the overlap, and a pooled
 * launch waits for its workers' late join (parts participants, Q claims).
 * The claims K (pool claims' time) are each worker's share too, but added
 * outside the bottleneck: a claim waits for the counter's cache line and
 * hides under neither side (model form 7).  The fork-join round is the
 * caller's to add.  *Cp, *M: the busiest share's compute and memory;
 * *tpar: that share's time, claims included. */
static double launch_ns(const lm_coefs *c, double C, double K, double Mc, double Md,
                        double par, double parts, double Q, int pooled, double *Cp,
                        double *M, double *tpar) {
  *Cp = C / par, *M = Mc / par + Md;
  *tpar = fmax(*Cp, *M) + c->overlap * fmin(*Cp, *M) + K / par;
  double tser = fmax(C, Mc + Md) + c->overlap * fmin(C, Mc + Md) + K;
  return joined(c, *tpar, tser, parts, Q, pooled);
}

static double combine(const lm_coefs *c, const lm_features *f, double par,
                      double *Cout, double *Mout, double *fork, double *join) {
  const double *n = f->n;
  double C = 0, K = 0, Mc = 0, Md = 0, F = 0;
  for (int t = 0; t < LM_T__COUNT; t++) {
    double x = c->theta[t] * n[t];
    if (t == LM_T_FORK)
      F = x;
    else if (t == LM_T_TASK)
      K = x;
    else if (t == LM_T_B_DRAM)
      Md += x;
    else if (t >= LM_T_FIRST_MEM)
      Mc += x;
    else
      C += x;
  }
  double Q = f->dynamic > 0 ? n[LM_T_TASK] : f->participants, tpar;
  double t = launch_ns(c, C, K, Mc, Md, par, f->participants, Q, n[LM_T_FORK] > 0,
                       Cout, Mout, &tpar);
  *fork = F, *join = t - tpar;
  return F + t;
}

void lm_cost_eval(const lm_coefs *c, const lm_features *f, const lm_variant *v,
                  lm_prediction *out) {
  memset(out, 0, sizeof *out);
  out->f = *f;
  (void)v; /* the cut is in the features (f->par) */
  double C, M, par = f->par > 0 ? f->par : 1;
  out->ns = combine(c, f, par, &C, &M, &out->fork_ns, &out->join_ns);
  out->compute_ns = C;
  out->memory_ns = M;
  out->memory_bound = M > C;
  /* shares: the bound side counts fully, the hidden side by the overlap */
  double fc = (C >= M ? 1 : c->overlap) / par, fm = C >= M ? c->overlap : 1;
  for (int t = 0; t < LM_T__COUNT; t++) {
    double x = c->theta[t] * f->n[t];
    if (t == LM_T_FORK)
      out->term_ns[t] = x;
    else if (t == LM_T_TASK)
      out->term_ns[t] = x / par;
    else if (t < LM_T_FIRST_MEM)
      out->term_ns[t] = x * fc;
    else
      out->term_ns[t] = x * fm / (t == LM_T_B_DRAM ? 1 : par);
  }
  out->p5 = out->p95 = out->ns;
}

lm_status lm_cost_predict_coefs(const lm_coefs *c, const lm_coefs *boot, int nb,
                                const lm_kernel *k, const lm_variant *v,
                                const lm_shape *s, lm_prediction *out,
                                lm_error *err) {
  lm_features f;
  if (lm_cost_features(k, v, s, &c->caches, NULL, &f, err) != LM_OK)
    return LM_EINPUT;
  lm_cost_eval(c, &f, v, out);
  if (nb > 0) {
    double *t = malloc(sizeof *t * (size_t)nb);
    if (!t)
      return lm_error_set(err, LM_ESYS, "predict: out of memory");
    for (int b = 0; b < nb; b++) {
      lm_prediction pb;
      lm_cost_eval(&boot[b], &f, v, &pb);
      t[b] = pb.ns;
    }
    lm_timing_sort(t, nb);
    out->p5 = t[(int)floor(0.05 * (nb - 1))];
    out->p95 = t[(int)ceil(0.95 * (nb - 1))];
    free(t);
  }
  return LM_OK;
}

/* ---- compiled predictor ------------------------------------------------
 *
 * One cost plan per variant (the shape-independent counts) and the
 * coefficients, fixed at construction.  The compute side is
 * linear in the counts, and the counts are linear in the step numbers of
 * a shape, so each variant keeps the compute ns of one main, rest and tail
 * step, of one packet and of one task (the width extras folded into the
 * coefficients of the instructions they count).  A shape then costs its
 * step structure, the cache-level split of its bytes and the model form:
 * no allocation, no variant check, no IR walk, no per-term loop.  The sums
 * run in another order than lm_cost_eval's, so the two agree to rounding
 * (1e-12 relative), not bit for bit. */

typedef struct Fast {
  double wmain, wrest, wtail; /* compute ns of one step of each mode */
  double wpacket;             /* compute ns per packet, finalisation included */
  double wtask;               /* call ns per task */
  double wpool;               /* task ns per task, when the pool runs them */
  double walias;              /* ns per aliasing gathered element */
  double wfwd;                /* ns per store-forwarding stall */
  double fork;                /* fork-join ns per launch (workers > 1) */
  int workers, gathers;       /* gathers: the plan has row gathers */
} Fast;

struct lm_predictor {
  lm_coefs c;
  int n;
  Fast *fast;
  lm_cost_counts *plans;
};

static void fast_of(const lm_coefs *c, const lm_cost_counts *pl, int workers, Fast *f) {
  double eff[LM_T__COUNT];
  for (int t = 0; t < LM_T__COUNT; t++)
    eff[t] = t < LM_T_FIRST_MEM && t != LM_T_FORK ? c->theta[t] : 0;
  if (pl->wide) {
    for (int i = 0; i < LM_COST_NWIDE_INS; i++)
      eff[lm_cost_wide_ins[i]] += c->theta[LM_T_WIDE];
    for (int t = LM_T_FIRST_MATH; t <= LM_T_LAST_MATH; t++)
      eff[t] = c->theta[LM_T_WIDE_MATH(t)];
  }
  memset(f, 0, sizeof *f);
  for (int t = 0; t < LM_T__COUNT; t++) {
    f->wmain += eff[t] * pl->step_main[t];
    f->wrest += eff[t] * pl->step_rest[t];
    f->wtail += eff[t] * pl->step_tail[t];
    f->wpacket += eff[t] * pl->packet[t];
  }
  int lg = 0;
  while ((1 << (lg + 1)) <= pl->L)
    lg++;
  f->wpacket += eff[LM_T_VOP] * (pl->U - 1) * pl->nred + eff[LM_T_HRED] * lg * pl->nred +
                eff[LM_T_HREDX] * pl->nred_cross * pl->nred;
  f->wtask = c->theta[LM_T_CALL];
  f->wpool = workers > 1 ? c->theta[LM_T_TASK] : 0;
  f->walias = c->theta[LM_T_GALIAS];
  f->wfwd = c->theta[LM_T_FWD];
  f->fork = workers > 1 ? c->theta[LM_T_FORK] : 0;
  f->workers = workers;
  for (int b = 0; b < pl->nbuf; b++)
    f->gathers |= pl->gather_main[b] != 0 || pl->gather_rest[b] != 0 || pl->gather_tail[b] != 0;
}

lm_status lm_predictor_new_coefs(const lm_coefs *c, const lm_kernel *k,
                                 const lm_variant *vs, int n,
                                 lm_predictor **out, lm_error *err) {
  *out = NULL;
  if (n < 0 || (n > 0 && !vs))
    return lm_error_set(err, LM_EINPUT, "predictor: %d variants", n);
  lm_predictor *pr = calloc(1, sizeof *pr);
  if (!pr)
    return lm_error_set(err, LM_ESYS, "predictor: out of memory");
  pr->c = *c;
  pr->n = n;
  pr->fast = calloc((size_t)(n > 0 ? n : 1), sizeof *pr->fast);
  pr->plans = calloc((size_t)(n > 0 ? n : 1), sizeof *pr->plans);
  if (!pr->fast || !pr->plans) {
    lm_predictor_free(pr);
    return lm_error_set(err, LM_ESYS, "predictor: out of memory");
  }
  for (int i = 0; i < n; i++) {
    if (lm_cost_counts_build(k, &vs[i], &pr->plans[i], err) != LM_OK) {
      char buf[96], msg[sizeof err->msg];
      snprintf(msg, sizeof msg, "%s", err->msg);
      lm_error_set(err, LM_EINPUT, "predictor: variant %d (%s): %s", i,
                   lm_variant_format(&vs[i], buf, sizeof buf), msg);
      lm_predictor_free(pr);
      return LM_EINPUT;
    }
    fast_of(&pr->c, &pr->plans[i], vs[i].workers, &pr->fast[i]);
  }
  *out = pr;
  return LM_OK;
}

int lm_predictor_count(const lm_predictor *p) { return p ? p->n : 0; }

void lm_predictor_eval_rows(const lm_predictor *p, const lm_shape *s,
                            const lm_rowstats *rows, double *out_ns) {
  const lm_coefs *c = &p->c;
  for (int i = 0; i < p->n; i++) {
    const lm_cost_counts *pl = &p->plans[i];
    const Fast *f = &p->fast[i];
    lm_sched_steps st;
    lm_cost_counts_steps(pl, s, rows, &st);
    double C = st.Pf * (st.main * f->wmain + st.rest * f->wrest + st.tail * f->wtail) +
               (st.P - st.Pf) * st.S * f->wtail + st.P * f->wpacket + st.calls * f->wtask;
    int pooled = st.tasks > 1; /* one task runs inline, without the pool */
    double K = pooled ? st.claims * f->wpool : 0;
    if (f->gathers && f->walias > 0)
      C += f->walias * lm_cost_counts_alias(pl, s, &c->caches, &st);
    if (f->wfwd > 0)
      C += f->wfwd * lm_cost_counts_fwd(pl, &st);
    double lv[3], total, fp;
    lm_cost_counts_bytes(pl, s, &c->caches, &st, lv, &total, &fp);
    double par = f->workers > 1 ? st.par : 1;
    double Mc = c->theta[LM_T_B_L2] * lv[0] + c->theta[LM_T_B_L3] * lv[1];
    double Md = c->theta[LM_T_B_DRAM] * lv[2];
    double Cp, M, tpar;
    out_ns[i] = (pooled ? f->fork : 0) +
                launch_ns(c, C, K, Mc, Md, par, f->workers > 1 ? st.participants : 1,
                          st.dynamic ? st.claims : st.participants,
                          pooled && f->workers > 1, &Cp, &M, &tpar);
  }
}

void lm_predictor_eval(const lm_predictor *p, const lm_shape *s, double *out_ns) {
  lm_predictor_eval_rows(p, s, NULL, out_ns);
}

void lm_predictor_free(lm_predictor *p) {
  if (!p)
    return;
  free(p->fast);
  free(p->plans);
  free(p);
}
