/* lanemap learned: a gradient-boosted regression model (XGBoost) over
 * numeric features, for cost terms the analytic model does not capture.
 *
 * A model is trained on m rows of nfeat features (row-major doubles, NAN
 * for a missing value) against targets y, and predicts y for new rows.
 * Training is deterministic: one thread, the exact greedy tree method and
 * a fixed seed give the same model, and so the same predictions, for the
 * same data and options.  XGBoost stores features, targets and leaf
 * values as float: doubles are rounded to float on the way in, and a
 * value outside float's range is refused.
 *
 * The model keeps the name of every feature, for explanations and for
 * lm_learned_check_features, which a caller runs on a loaded model before
 * it predicts with features of its own.  It is saved as one JSON document
 * of schema "lanemap.learned/1" that embeds XGBoost's own JSON model as a
 * string (docs/learned.md).
 *
 * Threads: distinct models may be used from distinct threads; one model
 * from one thread at a time, also for the const calls (prediction and
 * saving keep their result in XGBoost's booster).  Every call runs
 * XGBoost on the calling thread only (nthread 1). */
#ifndef LANEMAP_LEARNED_H
#define LANEMAP_LEARNED_H

#include "lanemap/core.h"
#include "lanemap/costmodel.h"
#include "lanemap/ir.h"
#include "lanemap/variant.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LM_LEARNED_SCHEMA "lanemap.learned/1"
#define LM_LEARNED_SCHEMA_MAJOR 1

/* The defaults are XGBoost's own (those of xgboost.XGBRegressor() in
 * 1.7): nothing has been tuned on lanemap's data yet, and a model trained
 * with them matches what a user of XGBoost expects. */
#define LM_LEARNED_ROUNDS 100           /* XGBRegressor's n_estimators */
#define LM_LEARNED_MAX_DEPTH 6          /* XGBoost's max_depth */
#define LM_LEARNED_ETA 0.3              /* XGBoost's eta */
#define LM_LEARNED_SUBSAMPLE 1.0        /* XGBoost's subsample: every row */
#define LM_LEARNED_MIN_CHILD_WEIGHT 1.0 /* XGBoost's min_child_weight */
#define LM_LEARNED_LAMBDA 1.0           /* XGBoost's lambda */
#define LM_LEARNED_SEED 0u              /* XGBoost's seed */

/* Options of lm_learned_train; lm_learned_defaults fills them. */
typedef struct lm_learned_opts {
  int rounds;              /* boosting rounds, one tree each, >= 1 */
  int max_depth;           /* depth of a tree, >= 1 */
  double eta;              /* learning rate, in (0, 1] */
  double subsample;        /* share of rows each tree sees, (0, 1]; 1 = all */
  double min_child_weight; /* least hessian (weight) in a leaf, >= 0 */
  double lambda;           /* L2 regularisation of leaf values, >= 0 */
  unsigned seed;           /* row subsampling seed */
} lm_learned_opts;

/* An opaque trained model. */
typedef struct lm_learned lm_learned;

/* The LM_LEARNED_* defaults above. */
void lm_learned_defaults(lm_learned_opts *o);
/* LM_EINPUT naming the first bad field of o, else LM_OK. */
lm_status lm_learned_opts_check(const lm_learned_opts *o, lm_error *err);

/* Train on m >= 1 rows of nfeat >= 1 features: X[i*nfeat + k] is feature
 * k of row i (finite, or NAN for missing), y[i] its target (finite), w[i]
 * its weight (finite, >= 0, not all 0; w NULL = all 1).  names (NULL, or
 * nfeat distinct non-empty strings) are copied into the model; NULL names
 * the features "f0", "f1", ... as XGBoost does.  o NULL = defaults.
 * LM_EINPUT naming the bad argument (and its row and feature), LM_EFAIL
 * if XGBoost fails (its message), LM_ESYS when out of memory. */
lm_status lm_learned_train(const lm_learned_opts *o, lm_keep const double *X,
                           int m, int nfeat, lm_keep const double *y,
                           lm_keep const double *w,
                           lm_keep const char *const *names,
                           lm_give lm_learned **out, lm_error *err);

/* Predict out[i] for the m >= 0 rows of X, each of lm_learned_nfeat(l)
 * features (as for training: finite, or NAN for missing).  The row width
 * is the caller's promise: a caller whose features come from elsewhere
 * (a loaded model) checks them first with lm_learned_check_features.
 * LM_EINPUT for an infinite or out-of-range value (naming its row and
 * feature), LM_EFAIL if XGBoost fails. */
lm_status lm_learned_predict(lm_keep const lm_learned *l,
                             lm_keep const double *X, int m, double *out,
                             lm_error *err);

/* Whether rows of nfeat features named names (NULL: the count only) are
 * what l takes: LM_EINPUT naming the count or the first name that
 * differs, else LM_OK.  Run it once before predicting with features made
 * apart from the model (after lm_learned_load): a model used with the
 * features of another extractor then fails instead of answering
 * nonsense. */
lm_status lm_learned_check_features(lm_keep const lm_learned *l, int nfeat,
                                    lm_keep const char *const *names,
                                    lm_error *err);

/* The number of features, and the name of feature i (NULL if i is out of
 * range); the string lives as long as the model. */
int lm_learned_nfeat(lm_keep const lm_learned *l);
const char *lm_learned_feature_name(lm_keep const lm_learned *l, int i);
/* The options it was trained with, and its number of training rows. */
lm_learned_opts lm_learned_options(lm_keep const lm_learned *l);
int lm_learned_rows(lm_keep const lm_learned *l);

/* Save to path (written atomically, lm_file_write_atomic).  LM_ESYS if
 * the file cannot be written, LM_EFAIL if XGBoost fails. */
lm_status lm_learned_save(lm_keep const lm_learned *l, const char *path,
                          lm_error *err);
/* Load a model saved by lm_learned_save.  Every bad file is LM_EINPUT,
 * with a message that names the path (and the JSON path of the bad
 * field): one that is missing or unreadable ("cannot open", as for every
 * lanemap input), not JSON, cut off, of another schema or major version,
 * or holding a model that is inconsistent or that XGBoost refuses.
 * LM_ESYS when out of memory. */
lm_status lm_learned_load(const char *path, lm_give lm_learned **out,
                          lm_error *err);

void lm_learned_free(lm_take lm_learned *l);

/* ---- the correction's rows (costmodel/learned_rows.c) -------------------
 * What a learned correction of the analytic model sees of one (kernel,
 * variant, shape) and how its answer corrects the prediction
 * (docs/learned.md): delta = log(measured / analytic) is learned, and the
 * corrected time is analytic * exp(delta). */

/* Features of a row: log1p of every term's count, every term's share of
 * the prediction, and 32 more (the prediction, the facts behind the
 * counts, the variant's fields, the shape, the kernel's loops). */
#define LM_LEARNED_NFEAT (2 * LM_T__COUNT + 32)
/* The correction is clamped to exp(+-3), a factor of 20: the worst miss
 * of the analytic model on the suite and validation cases is within it,
 * and a tree answering past it on a shape unlike its training shapes
 * is not trusted further (named default). */
#define LM_LEARNED_MAX_LOG 3.0

/* The name of feature i (stable: a trained model stores them), NULL out of
 * range; and all LM_LEARNED_NFEAT of them, in order (static strings). */
const char *lm_learned_row_name(int i);
const char *const *lm_learned_row_names(void);
/* The row x[LM_LEARNED_NFEAT] of variant v of kernel k at the bound shape
 * s (R and C as lm_shape_c gives them), from the analytic prediction p of
 * it (lm_cost_predict: its features, terms and time). */
void lm_learned_row(lm_keep const lm_kernel *k, lm_keep const lm_variant *v,
                    lm_keep const lm_shape *s, lm_keep const lm_prediction *p,
                    double *x);
/* analytic_ns * exp(delta), delta clamped to +-LM_LEARNED_MAX_LOG; a
 * non-finite delta leaves the analytic time. */
double lm_learned_apply(double analytic_ns, double delta);

#ifdef __cplusplus
}
#endif
#endif
