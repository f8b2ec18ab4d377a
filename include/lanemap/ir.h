/* lanemap IR: what one instance of a kernel computes, with no word on how
 * lanes run it.
 *
 * A kernel is run for instances r = 0 .. R-1.  Each instance works on one
 * "column domain" of N columns (N is a symbolic dim, e.g. C or H); every
 * tile value in a kernel has that length.  Values are either uniform (one
 * per instance) or tile (one per column of the instance).  Reductions turn
 * a tile into a uniform; uniforms broadcast into tiles.
 *
 * Nodes form a DAG in topological order (operands have smaller ids).  The
 * checker fills the phase facts the backend needs:
 *   - level (tiles): the column loop in which the tile is computed.  A tile
 *     that depends on a reduction can only be computed after the loop that
 *     finished that reduction.
 *   - avail (uniforms): the first column loop in which the value is known.
 *   - snap: a named tile used by a later loop than its own.  Such a tile is
 *     either kept in a private array (phase=snapshot) or recomputed from
 *     its sources (phase=reread); that is a variant field.
 */
#ifndef LANEMAP_IR_H
#define LANEMAP_IR_H

#include "lanemap/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lm_dtype { LM_F32, LM_F64, LM_I32, LM_BOOL } lm_dtype;

/* A source location; line and col are 1-based, col counts bytes. */
typedef struct lm_loc {
  int line, col;
} lm_loc;

/* A symbolic dim: coef * sym when sym >= 0, else the constant coef.
 * Symbol 0 of every kernel is R, the instance count. */
typedef struct lm_dim {
  int sym;
  int64_t coef;
} lm_dim;

typedef enum lm_param_kind {
  LM_PARAM_BUFFER, /* pointer to a dense row-major array */
  LM_PARAM_SCALAR, /* a value passed per launch */
} lm_param_kind;

/* How the seeded generator fills an input (DESIGN.md §5). */
typedef enum lm_gen {
  LM_GEN_DEFAULT, /* floats uniform in [lo, hi] (default [-1, 1]); i32 in [0, 9] */
  LM_GEN_MASK,    /* i32 0/1 with at least one 1 per row */
  LM_GEN_ROWLEN,  /* i32[R] row lengths in [0, N], with 0 and N present */
} lm_gen;

typedef struct lm_param {
  const char *name;
  lm_param_kind kind;
  lm_dtype dtype;
  int is_output;
  int rank;        /* buffers: 1 or 2; scalars: 0 */
  lm_dim dims[2];  /* rank 2: dims[0] is R.  rank 1: [R] or a column dim */
  int has_default; /* scalars */
  double defval;
  lm_gen gen; /* inputs: how to generate */
  double lo, hi;
  lm_loc loc;
} lm_param;

typedef enum lm_op {
  /* leaves */
  LM_OP_CONST,    /* imm; dtype from context (literals are weakly typed) */
  LM_OP_SCALAR,   /* scalar parameter `param` (uniform) */
  LM_OP_DIM,      /* value of dim `sym` times coef (uniform, weak int) */
  LM_OP_ROWIDX,   /* r (uniform i32) */
  LM_OP_COLIDX,   /* c (tile i32): column index 0 .. N-1 */
  LM_OP_LOAD_ROW, /* buf[r, start::step] (tile) */
  LM_OP_LOAD_COL, /* buf[start::step], a column-dim buffer broadcast over rows (tile) */
  LM_OP_LOAD_INST, /* buf[r], an [R] buffer (uniform) */
  /* unary (operand a) */
  LM_OP_NEG,
  LM_OP_ABS,
  LM_OP_NOT,
  LM_OP_EXP,
  LM_OP_LOG,
  LM_OP_SQRT,
  LM_OP_RSQRT,
  LM_OP_TANH,
  LM_OP_ERF,
  LM_OP_SIGMOID,
  LM_OP_SIN,
  LM_OP_COS,
  LM_OP_POWI, /* a ** ipow, ipow an integer constant */
  LM_OP_CAST, /* a converted to dtype */
  /* binary (a, b) */
  LM_OP_ADD,
  LM_OP_SUB,
  LM_OP_MUL,
  LM_OP_DIV,
  LM_OP_MIN,
  LM_OP_MAX,
  LM_OP_EQ,
  LM_OP_NE,
  LM_OP_LT,
  LM_OP_LE,
  LM_OP_GT,
  LM_OP_GE,
  LM_OP_AND,
  LM_OP_OR,
  /* ternary */
  LM_OP_FMA,   /* a*b + c, fused (rounded once) */
  LM_OP_WHERE, /* a ? b : c, a is bool */
  /* reductions over the active columns of the instance: tile a -> uniform */
  LM_OP_RSUM,
  LM_OP_RMAX,
  LM_OP_RMIN,
  LM_OP__COUNT
} lm_op;

typedef struct lm_node {
  lm_op op;
  lm_dtype dtype;
  int tile;      /* 1 tile, 0 uniform */
  int a, b, c;   /* operand node ids, -1 if unused */
  double imm;    /* CONST */
  int ipow;      /* POWI */
  int param;     /* SCALAR, LOAD_*: parameter index */
  int sym;       /* DIM */
  int64_t coef;  /* DIM: value is coef * dims[sym] (sym < 0: coef) */
  int start;     /* LOAD_ROW, LOAD_COL: view start column */
  int step;      /* view step (1 for `:`) */
  const char *name; /* the tile or value's name in the source, or NULL */
  int level;     /* tiles: column loop that computes it (checker) */
  int avail;     /* uniforms: first loop where it is known (checker) */
  int snap;      /* named tile used after a reduction that depends on it */
  int nuses;     /* uses by nodes and stores (checker) */
  int fixed;     /* uniforms: the same for every row of a launch, built from
                    constants, scalars and dims only (checker) */
  lm_loc loc;
} lm_node;

typedef enum lm_store_kind {
  LM_STORE_ROW,  /* out[r, start::step] = tile */
  LM_STORE_INST, /* out[r] = uniform */
} lm_store_kind;

typedef struct lm_store {
  lm_store_kind kind;
  int param;       /* output parameter */
  int start, step; /* ROW: view */
  int value;       /* node id */
  int level;       /* ROW: loop of the value; INST: avail of the value */
  lm_loc loc;
} lm_store;

typedef struct lm_kernel {
  const char *name;
  const char *file; /* source path, for diagnostics */
  const char **syms; /* symbol names; syms[0] = "R" */
  int nsyms;
  lm_param *params;
  int nparams;
  lm_node *nodes;
  int nnodes;
  lm_store *stores;
  int nstores;
  /* facts filled by the checker */
  lm_dim ncols;      /* the column domain N */
  int col_sym;       /* symbol solved from the shape's C (see lm_shape_bind) */
  int rowlen_param;  /* the rowlen [R] input, or -1 */
  int nloops;        /* column loops the kernel needs (max tile level + 1) */
  lm_dtype elem;     /* the kernel's float type (f32 or f64) */
  lm_arena *arena;   /* owns everything above */
  /* The relaxed floating-point form (variant field fp=relaxed): the kernel
   * with divisions by row-uniform values and by square roots rewritten to
   * multiplies by reciprocals (lm_kernel_relaxed).  Owned by the kernel. */
  struct lm_kernel *relaxed; /* NULL: no rewrite (or relax_why) */
  int relax_rewrites;        /* divisions rewritten */
  int relax_hoists;          /* per-row divisions by a launch-fixed value */
  int relax_contractions;    /* multiplies a fused multiply-add may absorb */
  const char *relax_why;     /* why the relaxed form could not be built */
} lm_kernel;

/* Limits of a kernel that the checker enforces, because the backend and
 * the cost model size their tables by them (docs/language.md, "Limits"). */
#define LM_MAX_STORES 256   /* store statements */
#define LM_MAX_BUFFERS 64   /* buffer parameters, inputs and outputs */
#define LM_MAX_VIEW_STEP 16 /* a view's step: step x 16 lanes fit a shuffle */

/* Parse and check a kernel source.  On error returns LM_EINPUT with
 * "file:line:col: error: message" in err, and *out stays NULL. */
lm_status lm_kernel_parse(const char *file, const char *src, size_t len,
                          lm_give lm_kernel **out, lm_error *err);
lm_status lm_kernel_load(const char *path, lm_give lm_kernel **out,
                         lm_error *err);
void lm_kernel_free(lm_take lm_kernel *k);

/* Print the kernel in .lk syntax; the output re-parses to the same IR.
 * Returns a malloc'ed string. */
lm_give char *lm_kernel_print(lm_keep const lm_kernel *k);
/* Print the IR as a node listing with the checker's facts (for --print-ir). */
lm_give char *lm_kernel_dump(lm_keep const lm_kernel *k);
/* Content hash of a kernel: FNV-1a over its printed form, so two sources
 * that differ only in layout or comments hash alike.  out gets 16 lower-case
 * hex digits and a NUL. */
void lm_kernel_hash(lm_keep const lm_kernel *k, char out[17]);
/* The value range of every node (lo[i], hi[i], nnodes each), by the
 * interval arithmetic the checker bounds overflow with, from the ranges
 * the input generator draws from (docs/language.md "Value ranges").
 * Unbounded values are [-inf, inf]. */
void lm_kernel_ranges(lm_keep const lm_kernel *k, double *lo, double *hi);
/* The kernel as fp=relaxed compiles and prices it: the rewritten twin, or
 * k itself when no division is rewritten. */
const lm_kernel *lm_kernel_relaxed(lm_keep const lm_kernel *k);
/* Node `operand` is a multiply that relaxed mode may fuse into node
 * `user`: an add, a subtract or a sum, the multiply's only use, computed
 * where the user is (both per element or both per row).  An FMA fuses one
 * product, so a user absorbs at most one of its operands. */
int lm_kernel_contractible(const lm_node *nodes, int user, int operand);
/* Structural equality of two kernels' IR (ignoring source locations). */
int lm_kernel_equal(const lm_kernel *a, const lm_kernel *b);

/* A concrete shape: the value of every symbol.  R is dims[0]. */
#define LM_MAX_SYMS 8
typedef struct lm_shape {
  int64_t dims[LM_MAX_SYMS];
  int nsyms;
} lm_shape;

/* Bind a suite shape "R x C": R is the instance count, C the second dim of
 * the kernel's first 2-D buffer, from which its symbol is solved.  Extra
 * symbols must come from `extra` ("H=33,K=4"; may be NULL).  Checks that
 * every extent is positive and that R*C and every buffer size fit. */
lm_status lm_shape_bind(const lm_kernel *k, int64_t R, int64_t C,
                        const char *extra, lm_shape *out, lm_error *err);
/* Parse "R,C" or "RxC" (with optional ",H=..") and bind it. */
lm_status lm_shape_parse(const lm_kernel *k, const char *text, lm_shape *out,
                         lm_error *err);
int64_t lm_dim_eval(lm_dim d, const lm_shape *s);
/* C of a bound shape as a suite writes it: the second dim of the kernel's
 * first 2-D buffer (or the column domain), the C lm_shape_bind took. */
int64_t lm_shape_c(const lm_kernel *k, const lm_shape *s);
/* Number of elements of parameter p under shape s (1 for scalars). */
int64_t lm_param_count(const lm_kernel *k, int p, const lm_shape *s);
size_t lm_dtype_size(lm_dtype t);
const char *lm_dtype_name(lm_dtype t);
const char *lm_op_name(lm_op op);

#ifdef __cplusplus
}
#endif
#endif
