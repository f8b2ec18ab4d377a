/* lanemap cost model: IR x variant x shape -> dynamic counts of every
 * cost term, and (with a profile's coefficients) a predicted time with a
 * per-term breakdown (DESIGN.md §9).
 *
 * The counts are derived analytically from the same decisions the
 * lowering makes (which tiles each loop computes, main steps vs masked
 * tail steps, spans shared between views, snapshot reads and writes per
 * realization, butterfly steps), so a term counts what the generated code
 * executes, per launch over all R instances. */
#ifndef LANEMAP_COSTMODEL_H
#define LANEMAP_COSTMODEL_H

#include "lanemap/variant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Cost terms.  Compute terms are counted in executed operations; memory
 * terms in bytes by the cache level that serves them. */
#define LM_TERMS(X)                                                             \
  X(VOP, "vop", "vector ALU operations (add, mul, fma, compare, select, cast)") \
  X(VDIV, "vdiv", "lanes of vector divisions and square roots")                          \
  X(VEXP, "vexp", "vector exp calls, sleef-u10 (also inside sigmoid)")        \
  X(VLOG, "vlog", "vector log calls, sleef-u10")                                \
  X(VTANH, "vtanh", "vector tanh calls, sleef-u10")                             \
  X(VERF, "verf", "vector erf calls, sleef-u10")                                \
  X(VSINCOS, "vsincos", "vector sin and cos calls, sleef-u10")                  \
  X(VLOG35, "vlog_u35", "vector log calls, sleef-u35")                          \
  X(VTANH35, "vtanh_u35", "vector tanh calls, sleef-u35")                       \
  X(VSINCOS35, "vsincos_u35", "vector sin and cos calls, sleef-u35")            \
  X(VEXPMV, "vexp_mvec", "vector exp calls, libmvec")                           \
  X(VLOGMV, "vlog_mvec", "vector log calls, libmvec")                           \
  X(VTANHMV, "vtanh_mvec", "vector tanh calls, libmvec")                        \
  X(VERFMV, "verf_mvec", "vector erf calls, libmvec")                           \
  X(VSINCOSMV, "vsincos_mvec", "vector sin and cos calls, libmvec")             \
  X(VEXPIR, "vexp_ir", "inline vector exp routines (math=ir)")                 \
  X(VLOGIR, "vlog_ir", "inline vector log routines (math=ir)")                 \
  X(VTANHIR, "vtanh_ir", "inline vector tanh routines (math=ir)")              \
  X(VERFIR, "verf_ir", "inline vector erf routines (math=ir)")                 \
  /* the same routines in code wider than a register (AVX-512's zmm,   \
   * NEON's pairs): the whole call, priced apart from the narrow one */  \
  X(VEXPW, "vexp_wide", "wide vector exp calls, sleef-u10")                     \
  X(VLOGW, "vlog_wide", "wide vector log calls, sleef-u10")                     \
  X(VTANHW, "vtanh_wide", "wide vector tanh calls, sleef-u10")                  \
  X(VERFW, "verf_wide", "wide vector erf calls, sleef-u10")                     \
  X(VSINCOSW, "vsincos_wide", "wide vector sin and cos calls, sleef-u10")       \
  X(VLOG35W, "vlog_u35_wide", "wide vector log calls, sleef-u35")               \
  X(VTANH35W, "vtanh_u35_wide", "wide vector tanh calls, sleef-u35")            \
  X(VSINCOS35W, "vsincos_u35_wide", "wide vector sin and cos calls, sleef-u35") \
  X(VEXPMVW, "vexp_mvec_wide", "wide vector exp calls, libmvec")                \
  X(VLOGMVW, "vlog_mvec_wide", "wide vector log calls, libmvec")                \
  X(VTANHMVW, "vtanh_mvec_wide", "wide vector tanh calls, libmvec")             \
  X(VERFMVW, "verf_mvec_wide", "wide vector erf calls, libmvec")                \
  X(VSINCOSMVW, "vsincos_mvec_wide", "wide vector sin and cos calls, libmvec")  \
  X(VEXPIRW, "vexp_ir_wide", "wide inline vector exp routines (math=ir)")       \
  X(VLOGIRW, "vlog_ir_wide", "wide inline vector log routines (math=ir)")       \
  X(VTANHIRW, "vtanh_ir_wide", "wide inline vector tanh routines (math=ir)")    \
  X(VERFIRW, "verf_ir_wide", "wide inline vector erf routines (math=ir)")       \
  X(VLOAD, "vload", "contiguous vector loads (global and private slots)")       \
  X(VSTORE, "vstore", "contiguous vector stores")                               \
  X(SEGLOAD, "segload", "segment loads of L < W lanes (partial packets)")       \
  X(SEGSTORE, "segstore", "segment stores of L < W lanes")                      \
  X(GATHER, "gather_elem", "gathered elements")                                 \
  X(SCATTER, "scatter_elem", "scattered elements")                              \
  X(GALIAS, "gather_alias", "gathered/scattered elements whose rows alias in L1") \
  X(MASKLOAD, "maskload", "native masked vector loads")                         \
  X(MASKSTORE, "maskstore", "native masked vector stores")                      \
  X(BLEND, "blend_store", "blended slot stores: the extra read and the blend")  \
  X(SHUFFLE, "shuffle", "shuffles: transposes, view picks, concatenation")      \
  X(HRED, "hreduce", "horizontal reduction steps (one butterfly stage)")        \
  X(HREDX, "hreduce_cross", "butterfly stages that cross 128-bit lanes (extra)") \
  X(WIDE, "wide512", "vector instructions wider than a register: zmm, NEON pairs (extra)") \
  X(SPILL, "spill", "estimated vector spills and reloads (register pressure)")   \
  X(STEP, "step", "unmasked loop steps (index math and branch)")                \
  X(MSTEP, "mask_step", "masked tail steps (active-mask computation)")          \
  X(MASKI, "mask_ins", "vector instructions of masked tail steps (extra)")       \
  X(FWD, "fwd_stall", "masked private reads of a masked write still in flight")  \
  X(PACKET, "packet", "packets (per-packet setup and reduction finalisation)")  \
  X(CALL, "call", "entry calls (one per task, or one inline launch)")           \
  X(TASK, "task", "pool claims, a batch of tasks each (workers > 1)")          \
  X(FORK, "fork", "fork-join rounds with workers > 1")                          \
  X(B_L2, "bytes_l2", "bytes served by L2")                                     \
  X(B_L3, "bytes_l3", "bytes served by L3")                                     \
  X(B_DRAM, "bytes_dram", "bytes served by memory")

typedef enum lm_term {
#define ENUM(id, name, doc) LM_T_##id,
  LM_TERMS(ENUM)
#undef ENUM
  LM_T__COUNT
} lm_term;

/* The vector math terms: one per provider and routine, contiguous, at
 * the register's width; then their wide twins in the same order (a call
 * in code wider than a register is one term, not the narrow call plus an
 * extra: libmvec's 16-lane erf costs about what its 8-lane one does,
 * SLEEF's about twice, docs/costmodel.md "Vector math at two widths"). */
#define LM_T_FIRST_MATH LM_T_VEXP
#define LM_T_LAST_MATH LM_T_VERFIR
#define LM_T_FIRST_WMATH LM_T_VEXPW
#define LM_T_LAST_WMATH LM_T_VERFIRW
#define LM_T_WIDE_MATH(t) ((lm_term)((t) - LM_T_FIRST_MATH + LM_T_FIRST_WMATH))
/* The term of provider m's routine for math op (exp, log, tanh, erf, sin,
 * cos; sigmoid is exp), or -1 if m has no such routine. */
int lm_term_math(lm_math m, lm_op op);

/* Bytes served by L1 have no term of their own: at L1 a byte costs its
 * load or store operation, which vload/vstore/gather_elem already count
 * (a separate L1 byte term is collinear with them in every benchmark). */
#define LM_T_FIRST_MEM LM_T_B_L2

const char *lm_term_name(lm_term t);
const char *lm_term_doc(lm_term t);
int lm_term_lookup(const char *name); /* -1 if unknown */

/* Eight hex digits naming the model: its form's revision and its term
 * list.  Cached profiles are keyed by it (lm_profile_cache_path), so a
 * build whose model has other terms never takes a profile fitted for
 * another one.  Thread-safe. */
const char *lm_model_id(void);

/* Cache sizes used to decide which level serves a byte (a profile gives
 * its machine's: lm_caches_from_fingerprint in lanemap/profile.h). */
typedef struct lm_caches {
  int64_t l1, l2, l3; /* bytes per core (l3 shared) */
} lm_caches;
void lm_caches_default(lm_caches *c); /* 48 KiB, 2 MiB, 32 MiB: named default */

/* Optional row-length statistics for ragged kernels: the mean active
 * length over rows, and the mean of the maximum over each group of W/L
 * rows (what a program-mapped packet runs).  NULL means full rows. */
typedef struct lm_rowstats {
  double mean_len;
  double mean_group_max[7]; /* index log2(G) for G = 1 .. 64 */
} lm_rowstats;

typedef struct lm_features {
  double n[LM_T__COUNT];
  /* facts behind the counts, for explanations */
  double packets, steps_main, steps_tail, density;
  double bytes_total, footprint;
  double par; /* packets over the busiest worker's packets (1 with one worker) */
  double participants; /* workers that get a chunk (lm_cut; 1 inline) */
  double dynamic;      /* 1: the chunks are claimed (dynK, gG); 0: static */
} lm_features;

/* Count every term for one launch of k x v over shape s. */
lm_status lm_cost_features(const lm_kernel *k, const lm_variant *v,
                           const lm_shape *s, const lm_caches *caches,
                           const lm_rowstats *rows, lm_features *out,
                           lm_error *err);

/* The spill and reload instructions the model estimates in the code of
 * k x v (the `spill` term's count of each part's steps times the steps
 * the part emits, summed over the column loops): what `lanemap emit
 * --counts` sets beside the spills and reloads of the assembly. */
lm_status lm_cost_static_spills(const lm_kernel *k, const lm_variant *v,
                                double *out, lm_error *err);

/* ---- prediction -------------------------------------------------------
 *
 *   C = (Σ_compute θ_t n_t) / par
 *       par = packets / the busiest worker's packets under the variant's
 *       split (lm_variant_cut): the slowest share, not the mean
 *   M = (θ_l1 n_l1 + θ_l2 n_l2 + θ_l3 n_l3) / par + θ_dram n_dram
 *   t = θ_fork n_fork + max(C, M) + γ · min(C, M)
 * and, on a pooled launch, the workers' late join (lm_coefs.join).
 *
 * γ ("overlap", dimensionless, in [0, 1]) says how much compute and memory
 * time add up instead of overlapping; it is fitted on mixed benchmarks and
 * defaults to 1 (fully additive) when a profile has no such term. */

/* The model's coefficients in term order, plain values: calibration
 * produces them (lm_coefs_from_profile in lanemap/profile.h reads a
 * profile's; terms it does not have are 0). */
typedef struct lm_coefs {
  double theta[LM_T__COUNT];
  double overlap;
  lm_caches caches;
  /* ns from a pooled launch until a worker's share can end ("join";
   * profile term of that name; LM_JOIN_DEFAULT_NS when a profile has
   * none).  Until then the caller runs claims alone; the launch is priced
   * as equal claims taken by whoever is free first (docs/costmodel.md,
   * "The workers' late join"). */
  double join;
} lm_coefs;

typedef struct lm_prediction {
  double ns;                  /* predicted time of one launch */
  double p5, p95;             /* bootstrap interval (= ns without resamples) */
  double term_ns[LM_T__COUNT]; /* each term's share of ns */
  double compute_ns, memory_ns, fork_ns;
  double join_ns;             /* what the workers' late join adds (coefs.join) */
  int memory_bound;           /* M > C */
  lm_features f;
} lm_prediction;

/* Predict from coefficients (fast path: no allocation). */
void lm_cost_eval(const lm_coefs *c, const lm_features *f,
                  const lm_variant *v, lm_prediction *out);
/* Count and predict k x v at shape s with coefficients c, and the
 * bootstrap interval over nboot resampled coefficient sets (boot may be
 * NULL when nboot is 0).  With a profile: lm_cost_predict. */
lm_status lm_cost_predict_coefs(const lm_coefs *c, const lm_coefs *boot,
                                int nboot, const lm_kernel *k,
                                const lm_variant *v, const lm_shape *s,
                                lm_prediction *out, lm_error *err);

/* ---- compiled predictor -----------------------------------------------
 *
 * For solvers and dispatchers that predict one kernel at many shapes: the
 * shape-independent counts of each variant (every per-step, per-packet and
 * per-buffer count the lowering fixes without R and C) are computed once,
 * so a shape costs a few dozen multiply-adds per variant.  The result
 * equals lm_cost_predict_coefs's `ns` bit for bit (same counts, same model
 * form), without the bootstrap interval and the breakdown. */
typedef struct lm_predictor lm_predictor;

/* Compile n variants of k under coefficients c (checks each variant; the
 * kernel may be freed afterwards).  With a profile: lm_predictor_new. */
lm_status lm_predictor_new_coefs(const lm_coefs *c, const lm_kernel *k,
                                 const lm_variant *vs, int n,
                                 lm_give lm_predictor **out, lm_error *err);
int lm_predictor_count(const lm_predictor *p);
/* Predicted ns of every variant at shape s, in construction order. */
void lm_predictor_eval(const lm_predictor *p, const lm_shape *s,
                       double *out_ns);
/* The same for ragged rows (rows may be NULL: full rows). */
void lm_predictor_eval_rows(const lm_predictor *p, const lm_shape *s,
                            const lm_rowstats *rows, double *out_ns);
void lm_predictor_free(lm_take lm_predictor *p);

#ifdef __cplusplus
}
#endif
#endif
