/* lanemap variants: one full mapping configuration of one kernel
 * (DESIGN.md §6), with a stable string form such as
 *
 *   x86-64-v4/w16/l1/priv=slot/glob=transpose/phase=snapshot/math=mvec/fp=relaxed/t2/dyn4
 *
 * Fields appear in that order.  `glob` appears only when L < W, `phase`
 * only when the kernel has a tile reused after a reduction, `priv` only
 * with phase=snapshot, `math` only when the kernel calls vector math and
 * the provider is not the default (sleef-u10), `fp` only for the opt-in
 * relaxed mode (strict is the default and is not written), and the split (`static`,
 * `dynK` or `gG`) only with more than one worker.  Illegal combinations are rejected with a reason;
 * they are never rewritten. */
#ifndef LANEMAP_VARIANT_H
#define LANEMAP_VARIANT_H

#include "lanemap/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum lm_isa {
  LM_ISA_SSE42,  /* x86-64-v2 */
  LM_ISA_AVX2,   /* x86-64-v3 */
  LM_ISA_AVX512, /* x86-64-v4 */
  LM_ISA_HOST,   /* this machine's CPU and features */
  LM_ISA_NEON,   /* aarch64-neon: AdvSIMD, 128-bit vectors, W = 4 or 8 (pairs) */
  LM_ISA_SVE128, /* aarch64-sve128: SVE at a fixed 128-bit vector length */
  LM_ISA_SVE256, /* aarch64-sve256 */
  LM_ISA_SVE512, /* aarch64-sve512 */
  LM_ISA__COUNT
} lm_isa;

typedef enum lm_priv {
  LM_PRIV_NONE,   /* no private arrays in this variant */
  LM_PRIV_GATHER, /* pointer vectors: masked gather / scatter */
  LM_PRIV_SLOT,   /* full vector read, inactive lanes zeroed; store = read + blend + write */
  LM_PRIV_MASKED, /* native masked load / store with the active mask */
} lm_priv;

typedef enum lm_glob {
  LM_GLOB_NONE,      /* L = W: contiguous loads with prefix-mask tails */
  LM_GLOB_GATHER,    /* row-strided access by gathers and scatters */
  LM_GLOB_TRANSPOSE, /* L = 1: block loads + in-register transpose; 1 < L < W: segment loads */
} lm_glob;

typedef enum lm_phase {
  LM_PHASE_NONE,     /* the kernel reuses no tile after a reduction */
  LM_PHASE_SNAPSHOT, /* keep reused named tiles in private arrays */
  LM_PHASE_REREAD,   /* recompute them from the source, Inductor style */
} lm_phase;

/* How a launch on more than one worker cuts its R rows (docs/runtime.md
 * "Splits").  Chunks are whole packets of W/L rows, the last one shorter. */
typedef enum lm_split {
  LM_SPLIT_GRAIN = 0, /* gG: chunks of G rows, claimed from one shared counter
                         in batches (lm_launch_batch) */
  LM_SPLIT_STATIC,    /* static: one contiguous block per worker, no shared
                         counter */
  LM_SPLIT_DYNAMIC,   /* dynK: K equal chunks per worker, one claim each */
} lm_split;

/* Who provides the vector math routines (exp, log, tanh, erf, sin, cos)
 * of a variant: docs/backend.md "Vector math".  One provider per variant;
 * a provider without one of the kernel's routines is not legal for it. */
typedef enum lm_math {
  LM_MATH_SLEEF = 0, /* sleef-u10: SLEEF's 1.0-ULP routines (the default) */
  LM_MATH_SLEEF35,   /* sleef-u35: SLEEF's 3.5-ULP routines (log, tanh, sin, cos) */
  LM_MATH_MVEC,      /* mvec: glibc's libmvec (every routine) */
  LM_MATH_IR,        /* ir: lanemap's own routines emitted inline as IR
                        (exp, log, tanh, erf; range reduction + polynomial) */
  LM_MATH__COUNT
} lm_math;
const char *lm_math_name(lm_math m); /* "sleef-u10", ... */

/* The floating-point mode of a variant (docs/language.md "Relaxed floating
 * point").  Strict is the default everywhere; relaxed is opt-in. */
typedef enum lm_fp {
  LM_FP_STRICT = 0, /* the source's operations, each rounded as written */
  LM_FP_RELAXED,    /* reciprocals of row-uniform divisors, rsqrt, FMA
                       contraction (lm_kernel_relaxed) */
  LM_FP__COUNT
} lm_fp;
const char *lm_fp_name(lm_fp f); /* "strict", "relaxed" */
int lm_fp_lookup(const char *name); /* the mode named so, or -1 */

/* The dynK values the enumeration offers (chunks per worker). */
#define LM_SPLIT_DYN_MAX 1024

typedef struct lm_variant {
  lm_isa isa;
  int w;         /* lanes per packet for the kernel's element type */
  int l;         /* lanes per instance: 1 program, w packet-local */
  lm_priv priv;
  lm_glob glob;
  lm_phase phase;
  int workers;   /* 1 runs inline */
  int64_t grain; /* LM_SPLIT_GRAIN: instances per chunk, a multiple of w/l */
  lm_split split; /* workers > 1: how the rows are cut (0 with workers = 1) */
  int per_worker; /* LM_SPLIT_DYNAMIC: chunks per worker (K of dynK) */
  lm_math math;   /* vector math provider (LM_MATH_SLEEF without math) */
  lm_fp fp;       /* floating-point mode */
} lm_variant;

#define LM_MAX_WORKERS 256

/* Parse a variant string.  Checks syntax and the kernel-independent rules
 * (W for the ISA, L a power of two <= W, field presence rules that do not
 * need the kernel).  LM_EINPUT with the offending field on error. */
lm_status lm_variant_parse(const char *text, lm_variant *out, lm_error *err);
/* Format into buf (at least 96 bytes); returns buf. */
char *lm_variant_format(const lm_variant *v, char *buf, size_t n);
/* Legality for a kernel: returns LM_OK or LM_EINPUT with the reason. */
lm_status lm_variant_check(const lm_kernel *k, const lm_variant *v,
                           lm_error *err);
/* Variants equal in every field that changes the generated code. */
int lm_variant_same_code(const lm_variant *a, const lm_variant *b);

/* Lanes for a kernel element type on an ISA; `wide` picks zmm over ymm on
 * avx512.  Returns 0 if the ISA cannot be resolved. */
int lm_isa_lanes(lm_isa isa, lm_dtype elem, int wide);
const char *lm_isa_name(lm_isa isa); /* "x86-64-v4", ... */
lm_status lm_isa_parse(const char *text, lm_isa *out, lm_error *err); /* also sse4.2, avx2, avx512 */
/* Does the ISA have fused multiply-add (x86-64-v3 and up, every AArch64
 * target)? */
int lm_isa_has_fma(lm_isa isa);
/* Can this machine run code for the ISA?  Never for another architecture:
 * AArch64 code is compiled to objects here and run elsewhere (or under
 * an emulator, which no timing may use). */
int lm_isa_runnable(lm_isa isa);
/* The register width, in bytes, that the ISA's plain vector instruction
 * works on: 32 on x86-64-v3 and v4 (a 512-bit instruction costs extra,
 * the cost model's wide512 term), 16 on x86-64-v2 and NEON (W = 8 is a
 * pair of registers, priced by the same term), SVE's length on SVE. */
int lm_isa_base_bytes(lm_isa isa);
/* The named target `host` stands for on this machine; other ISAs as they are. */
lm_isa lm_isa_resolve(lm_isa isa);
/* Is the ISA an AArch64 target (NEON or SVE)? */
int lm_isa_is_aarch64(lm_isa isa);
/* SVE's fixed vector length in bits (128, 256, 512), 0 for other ISAs. */
int lm_isa_sve_bits(lm_isa isa);

/* The cut of one launch of R rows into chunks, as lm_compiled_launch runs
 * it and the cost model prices it.  All counts are for R > 0; workers = 1
 * is one chunk of every row, run inline. */
typedef struct lm_cut {
  int64_t grain;      /* rows per chunk (whole packets) */
  int64_t chunks;     /* ceil(R / grain) */
  int64_t batch;      /* chunks per claim (dynamic cuts), else 1 */
  int64_t claims;     /* claims on the shared counter; 0 for static */
  int participants;   /* min(workers, chunks): the pool wakes no more */
  double busiest;     /* packets the busiest participant runs */
  double packets;     /* ceil(R / (W/L)) */
  int dynamic;        /* 1: LM_SCHED_DYNAMIC, 0: LM_SCHED_STATIC */
} lm_cut;
/* The cut for split s of a variant with `workers` workers, `per` rows per
 * packet (W/L), grain (LM_SPLIT_GRAIN, in rows) and K (LM_SPLIT_DYNAMIC). */
void lm_cut_of(lm_split s, int64_t grain, int per_worker, int workers, int per,
               int64_t R, lm_cut *out);
void lm_variant_cut(const lm_variant *v, int64_t R, lm_cut *out);

/* Enumeration options: which ISA, which worker counts and splits. */
typedef struct lm_enum_opts {
  lm_isa isa;
  int workers[8];   /* worker counts to enumerate; 0 ends the list */
  int grains[8];    /* gG splits, grains in packets (multiplied by w/l); 0 ends */
  int dynamic[8];   /* dynK splits, K chunks per worker; 0 ends */
  int split_static; /* 1: the static split */
  unsigned maths;   /* bit m: offer provider m where it is legal; 0: the
                       default provider only (a kernel without vector math
                       has the default provider only, whatever the bits) */
  unsigned fps;     /* bit f: offer mode f where it is legal; 0: strict only
                       (a kernel that relaxed mode does not change has
                       strict only, whatever the bits) */
} lm_enum_opts;
/* host, workers {1}; for t > 1: static and dyn2, dyn4, dyn8, dyn16, no gG;
 * every math provider; strict only */
void lm_enum_defaults(lm_enum_opts *o);

/* All legal variants of k for the options, in a stable order.  *out is
 * malloc'ed; returns the count, or -1 with err set. */
int lm_variant_enumerate(const lm_kernel *k, const lm_enum_opts *o,
                         lm_give lm_variant **out, lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
