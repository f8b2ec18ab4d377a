/* lanemap backend: IR x variant -> LLVM IR -> default<O3> -> native code
 * (ORC LLJIT, or an object file with a C header), plus the static counts
 * of what was emitted, and launching with the runtime pool.
 *
 * Entry ABI (DESIGN.md §7): void entry(const void *args, int64_t first,
 * int64_t count) runs instances [first, first+count).  `args` is an array
 * of 8-byte slots: one per kernel parameter in declaration order (a buffer
 * pointer, or a scalar as a double), then one int64 per kernel symbol (the
 * shape).  lm_args_pack builds it. */
#ifndef LANEMAP_BACKEND_H
#define LANEMAP_BACKEND_H

#include "lanemap/oracle.h"
#include "lanemap/runtime.h"
#include "lanemap/timing.h"
#include "lanemap/variant.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sites emitted by one part of the column loops, summed over the loops:
 * [0] the main body (all its unrolled steps), [1] the rest steps (all
 * their copies), [2] the masked tail, [3] per-packet work outside the
 * steps.  Vector loads and stores count W-lane vectors (a view of step s
 * spans s of them), segment accesses (L < W lanes) count sites, gathers
 * and scatters count lanes.  These are the per-step counts the cost model
 * prices; the agreement test checks that both sides match. */
#define LM_COUNT_PARTS 4
typedef struct lm_part_counts {
  int steps;              /* steps emitted */
  int vload, vstore;      /* contiguous vectors, global and private slots */
  int maskload, maskstore;
  int segload, segstore;
  int gather, scatter;    /* lanes */
  int blend;              /* blended slot stores */
  int math_calls;         /* vector math calls */
  int div_lanes;          /* lanes of divisions and square roots */
  int hreduce;            /* butterfly stages */
} lm_part_counts;

/* Static counts of one compiled variant.  `emit_*` count the sites the
 * lowering emitted; `ir_*` are read off the optimised LLVM IR; `asm_*` off
 * the emitted assembly (only when lm_compile_opts.want_asm). */
typedef struct lm_counts {
  /* private-array sites, as emitted (the report's "eligible" counts) */
  int emit_slot_reads, emit_slot_writes; /* contiguous-slot accesses */
  int emit_priv_gathers, emit_priv_scatters;
  int emit_priv_masked_loads, emit_priv_masked_stores;
  int emit_priv_blends; /* blended writes: the extra read of a slot store */
  int emit_fallbacks;   /* private accesses that could not use the variant's realization */
  char fallback_reason[160];
  /* global-memory sites, as emitted */
  int emit_glob_vector_loads, emit_glob_vector_stores;
  int emit_glob_gathers, emit_glob_scatters;
  int emit_glob_masked_loads, emit_glob_masked_stores;
  int emit_transposes, emit_hreduce_steps, emit_math_calls;
  lm_part_counts part[LM_COUNT_PARTS]; /* the emitted sites by part */
  /* optimised IR */
  int ir_instructions, ir_vector_loads, ir_vector_stores;
  int ir_gathers, ir_scatters, ir_masked_loads, ir_masked_stores;
  int ir_selects, ir_shuffles, ir_calls, ir_fdiv, ir_sqrt;
  int ir_priv_loads, ir_priv_stores; /* plain loads/stores still tagged private */
  /* assembly (x86-64 or AArch64): asm_kmasked counts AVX-512 {%k}
   * operands; asm_maskmov masked loads and stores (vmaskmov, SVE's
   * predicated ld1/st1); asm_pairs ldp/stp of q registers (AArch64);
   * asm_blends blend instructions (vblendv/vblendm, bsl/bif/bit, SVE sel) */
  int asm_instructions, asm_vector, asm_gathers, asm_scatters;
  int asm_kmasked, asm_maskmov, asm_shuffles, asm_div_sqrt, asm_calls;
  int asm_spills, asm_reloads;
  int asm_pairs, asm_blends;
} lm_counts;

typedef struct lm_compile_opts {
  int want_ir;  /* keep the optimised IR text */
  int want_asm; /* emit assembly (on a clone) for asm_* counts and text */
  int opt_level; /* 0..3, default 3 (default<O3>) */
  int no_entry;  /* lower, optimise, count and keep the texts, but link no
                    code: any ISA, also one this machine cannot run (its
                    entry is NULL) */
} lm_compile_opts;
void lm_compile_defaults(lm_compile_opts *o);

typedef struct lm_compiled lm_compiled;

/* Lower, optimise and JIT one variant.  Thread-safe.  An ISA this machine
 * cannot run (lm_isa_runnable) is refused with LM_EINPUT unless no_entry. */
lm_status lm_compile(lm_keep const lm_kernel *k, const lm_variant *v,
                     const lm_compile_opts *o, lm_give lm_compiled **out,
                     lm_error *err);
void lm_compiled_free(lm_take lm_compiled *c);
/* A handle running c's code with v's workers and grain, without compiling
 * again: v must differ from c's variant only there (lm_variant_same_code).
 * It borrows c's code, so free it before c; its ms is 0.  Thread-safe. */
lm_status lm_compiled_rebind(lm_keep const lm_compiled *c, const lm_variant *v,
                             lm_give lm_compiled **out, lm_error *err);
lm_entry_fn lm_compiled_entry(lm_keep const lm_compiled *c);
const lm_counts *lm_compiled_counts(lm_keep const lm_compiled *c);
const lm_variant *lm_compiled_variant(lm_keep const lm_compiled *c);
double lm_compiled_ms(lm_keep const lm_compiled *c); /* lower+opt+JIT wall ms */
const char *lm_compiled_ir(lm_keep const lm_compiled *c);  /* NULL unless want_ir */
const char *lm_compiled_asm(lm_keep const lm_compiled *c); /* NULL unless want_asm */
/* The unoptimised module as text (for lanemap emit --ir --O0). */
lm_status lm_lower_to_string(lm_keep const lm_kernel *k, const lm_variant *v,
                             lm_give char **out, lm_error *err);

/* Ahead-of-time: write an object file holding the variant's entry as
 * `symbol`, and a C header declaring it. */
lm_status lm_emit_object(lm_keep const lm_kernel *k, const lm_variant *v,
                         const char *symbol, const char *obj_path,
                         const char *header_path, lm_error *err);
/* One entry of an object file: kernel x variant, named symbol. */
typedef struct lm_aot_entry {
  const lm_kernel *kernel; /* borrowed */
  lm_variant variant;
  const char *symbol; /* a C identifier */
} lm_aot_entry;
/* Ahead-of-time, several entries in one object file (no header): every
 * entry must target one ISA.  LM_EINPUT for a symbol that is not a C
 * identifier, entries of two ISA targets, or n < 1. */
lm_status lm_emit_entries(const lm_aot_entry *entries, int n,
                          const char *obj_path, lm_error *err);

/* The args block for a launch on d (malloc'ed, free with free()). */
lm_give uint64_t *lm_args_pack(lm_keep const lm_kernel *k,
                               lm_keep const lm_data *d);
/* Run the compiled variant over all R instances of d, with the variant's
 * workers and grain on `pool` (NULL: the shared pool). */
lm_status lm_compiled_launch(lm_keep const lm_compiled *c,
                             lm_keep lm_pool *pool, const uint64_t *args,
                             int64_t R, lm_error *err);

/* Time compiled variants on the same data, interleaved, with the one
 * timing harness (DESIGN.md §8).  Samples are ns per launch over all R
 * instances of d.  The launches run on `pool` (NULL: the shared pool);
 * unless o->pool names another, that pool is the one the timing watches
 * and keeps off the pinned timing thread's CPU. */
lm_status lm_time_variants(lm_keep const lm_kernel *k,
                           lm_keep lm_compiled *const *cs, int n,
                           lm_keep lm_data *d, lm_keep lm_pool *pool,
                           const lm_timing_opts *o, lm_timing_result *out,
                           lm_error *err);

/* Thread-local scratch for private arrays, used by generated code. */
void *lm_rt_scratch(int64_t bytes);

/* Vector math providers (docs/backend.md "Vector math").  The declared
 * error bound of a provider's routine: over [lo, hi] its error is at most
 * `ulp` units in the last place (0: not declared) and at most `abs`
 * absolutely (0: not declared).  tests/test_vmath.c measures every routine
 * against libm's long double functions and fails when one exceeds its
 * declaration.  [fast_lo,
 * fast_hi] is where the routine stays on its vector path: outside it the
 * result is still within the bound, but the routine falls back to slower
 * code for the whole vector (libmvec calls its scalar routine), measured
 * 2.8 to 14 times slower than SLEEF's, which no cost term prices. */
typedef struct lm_vmath_bound {
  double lo, hi;
  double ulp, abs;
  double fast_lo, fast_hi;
} lm_vmath_bound;
/* The routine behind a math operation (sigmoid calls exp), or
 * LM_OP__COUNT for an operation that calls none. */
lm_op lm_vmath_routine(lm_op op);
/* How many of k's operations call a vector math routine. */
int lm_vmath_calls(const lm_kernel *k);
/* 1 and *out (may be NULL) if provider m has op's routine for type t. */
int lm_vmath_bound_of(lm_math m, lm_op op, lm_dtype t, lm_vmath_bound *out);
/* The largest share of the oracle's tolerance (atol + rtol*|want| for t)
 * that an error within the bound can use. */
double lm_vmath_tol_share(const lm_vmath_bound *b, lm_dtype t);
/* A provider is legal for a kernel only if its error bound uses at most
 * this share of the oracle's tolerance: the rest is left to the kernel's
 * own arithmetic, which may amplify the routine's error (a named default,
 * a 64x margin). */
#define LM_VMATH_TOL_SHARE (1.0 / 64)
/* Legality of provider m for k: LM_OK, or LM_EINPUT with the reason (a
 * missing routine, an argument range outside the routine's domain, a
 * bound too large for the tolerance, an argument range leaving the fast
 * range of a provider other than the default, or math on a kernel without
 * any). */
lm_status lm_vmath_check(const lm_kernel *k, lm_math m, lm_error *err);
/* "sleef-u10" -> LM_MATH_SLEEF ...; -1 if unknown. */
int lm_math_lookup(const char *name);

#ifdef __cplusplus
}
#endif
#endif
