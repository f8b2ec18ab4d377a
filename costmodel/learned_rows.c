/* The learned correction's rows: what the gradient-boosted trees see of one
 * (kernel, variant, shape), and how their answer corrects the analytic
 * model (docs/learned.md).
 *
 * The trees predict the analytic model's residual in logs,
 *
 *   delta = log(measured / analytic),   corrected = analytic * exp(delta),
 *
 * not the time itself.  The analytic model carries the scale (a time grows
 * with the shape, and trees cannot extrapolate a trend beyond the shapes
 * they were trained on), and the trees only learn where its terms are
 * wrong by a factor, which stays bounded outside the training shapes.
 * Explanations stay per term: the correction is one named factor.
 *
 * A row is the model's own counts (log1p of every term's count), each
 * term's share of the analytic prediction, the facts behind the counts
 * (packets, steps, density, bytes, the launch's split), the variant's
 * fields and the shape.  Names are stable: a trained model stores them
 * and lm_learned_load refuses a model whose names differ. */
#include <math.h>
#include <stdio.h>

#include "lanemap/learned.h"

/* The features after the per-term ones, in order. */
#define EXTRA(X)                                                              \
  X("log_analytic_ns")                                                       \
  X("compute_share") X("memory_share") X("fork_share") X("join_share")      \
  X("memory_bound") X("log_packets") X("log_steps_main") X("log_steps_tail") \
  X("density") X("log_bytes") X("log_footprint") X("par") X("participants") \
  X("dynamic") X("w") X("l") X("l_over_w") X("priv") X("glob") X("phase")    \
  X("workers") X("split") X("per_worker") X("math") X("fp") X("log_r")      \
  X("log_c") X("elem_bytes") X("nloops") X("nstores") X("ragged")

#define NAME(s) s,
static const char *const extra_names[] = {EXTRA(NAME)};
#undef NAME

_Static_assert(sizeof extra_names / sizeof extra_names[0] == 32,
               "LM_LEARNED_NFEAT counts 32 features after the per-term ones");

const char *lm_learned_row_name(int i) {
  static char names[2 * LM_T__COUNT][40];
  if (i < 0 || i >= LM_LEARNED_NFEAT)
    return NULL;
  if (i >= 2 * LM_T__COUNT)
    return extra_names[i - 2 * LM_T__COUNT];
  char *n = names[i];
  if (!n[0]) /* filled once; the same text every time (thread-compatible) */
    snprintf(n, sizeof names[0], "%s_%s", i < LM_T__COUNT ? "n" : "share",
             lm_term_name((lm_term)(i % LM_T__COUNT)));
  return n;
}

static double lg(double x) { return x > 0 ? log(x) : 0; }

void lm_learned_row(const lm_kernel *k, const lm_variant *v, int64_t R,
                    int64_t C, const lm_prediction *p, double *x) {
  const lm_features *f = &p->f;
  double ns = p->ns > 0 ? p->ns : 1;
  int i = 0;
  for (int t = 0; t < LM_T__COUNT; t++)
    x[i++] = log1p(f->n[t] > 0 ? f->n[t] : 0);
  for (int t = 0; t < LM_T__COUNT; t++)
    x[i++] = p->term_ns[t] / ns;
  x[i++] = lg(p->ns);
  x[i++] = p->compute_ns / ns;
  x[i++] = p->memory_ns / ns;
  x[i++] = p->fork_ns / ns;
  x[i++] = p->join_ns / ns;
  x[i++] = p->memory_bound;
  x[i++] = log1p(f->packets);
  x[i++] = log1p(f->steps_main);
  x[i++] = log1p(f->steps_tail);
  x[i++] = f->density;
  x[i++] = log1p(f->bytes_total);
  x[i++] = log1p(f->footprint);
  x[i++] = f->par;
  x[i++] = f->participants;
  x[i++] = f->dynamic;
  x[i++] = v->w;
  x[i++] = v->l;
  x[i++] = v->w > 0 ? (double)v->l / v->w : 0;
  x[i++] = v->priv;
  x[i++] = v->glob;
  x[i++] = v->phase;
  x[i++] = v->workers;
  x[i++] = v->workers > 1 ? (double)v->split : -1;
  x[i++] = v->split == LM_SPLIT_DYNAMIC ? v->per_worker : 0;
  x[i++] = v->math;
  x[i++] = v->fp;
  x[i++] = lg((double)R);
  x[i++] = lg((double)C);
  x[i++] = k->elem == LM_F64 ? 8 : 4;
  x[i++] = k->nloops;
  x[i++] = k->nstores;
  x[i++] = k->rowlen_param >= 0;
}

double lm_learned_apply(double analytic_ns, double delta) {
  if (!isfinite(delta))
    return analytic_ns;
  if (delta > LM_LEARNED_MAX_LOG)
    delta = LM_LEARNED_MAX_LOG;
  if (delta < -LM_LEARNED_MAX_LOG)
    delta = -LM_LEARNED_MAX_LOG;
  return analytic_ns * exp(delta);
}
