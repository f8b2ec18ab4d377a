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

/* Every name, fixed at compile time: "n_<term>", "share_<term>", then the
 * extra ones. */
#define COUNT_NAME(id, name, doc) "n_" name,
#define SHARE_NAME(id, name, doc) "share_" name,
#define NAME(s) s,
static const char *const names[] = {LM_TERMS(COUNT_NAME) LM_TERMS(SHARE_NAME)
                                        EXTRA(NAME)};
#undef COUNT_NAME
#undef SHARE_NAME
#undef NAME

_Static_assert(sizeof names / sizeof names[0] == LM_LEARNED_NFEAT,
               "LM_LEARNED_NFEAT counts the per-term features and 32 more");

const char *lm_learned_row_name(int i) {
  return i >= 0 && i < LM_LEARNED_NFEAT ? names[i] : NULL;
}

const char *const *lm_learned_row_names(void) { return names; }

static double lg(double x) { return x > 0 ? log(x) : 0; }

void lm_learned_row(const lm_kernel *k, const lm_variant *v, const lm_shape *s,
                    const lm_prediction *p, double *x) {
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
  x[i++] = lg((double)s->dims[0]);
  x[i++] = lg((double)lm_shape_c(k, s));
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
