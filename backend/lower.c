/* Lowering: IR x variant -> LLVM IR, through the LLVM-C API.
 *
 * One mechanism covers the three mappings.  A packet is W lanes; lane i
 * belongs to instance group g = i / L and works on column s = i % L of each
 * step, so a packet holds G = W/L instances and step t covers columns
 * t*L .. t*L+L-1 of each of them.  L = 1 is the program mapping (a step is
 * one column of W rows), L = W is packet-local (a step is W columns of one
 * row), and anything between packs W/L rows per packet.
 *
 * Every value is a W-lane vector.  A tile holds, per lane, the lane's column
 * of its instance; a uniform holds the instance's value replicated over the
 * L lanes of its group, which is exactly what a butterfly horizontal
 * reduction over groups of L lanes leaves behind.  So elementwise code is
 * the same for every L; only loads, stores, private arrays and reductions
 * differ, and they differ by the variant's fields, never by operator.
 *
 * Per packet the kernel runs k->nloops column loops (phases).  Each loop
 * has an unmasked main part, unrolled over several accumulators and taken
 * while every lane is active (all instances exist and the step lies below
 * every row length), an unmasked rest for the full steps the unrolling
 * leaves over, and a masked tail.  The active mask of a lane is "instance exists and its column is
 * below the row's length", tracked per step, so ragged rows lower the mask
 * density of program-mapped packets instead of changing the code.  Tiles
 * crossing loops are either kept in private arrays (phase=snapshot) or
 * recomputed from their sources (phase=reread).
 *
 * Private arrays use the [slot][lane] layout: element q of lane l lives at
 * base + (q*W + l)*size.  The slot of a step is the step index, uniform over
 * the packet by construction, so the report's contiguous access applies to
 * every 4- and 8-byte element; other elements (bool tiles) fall back to
 * gathers and are counted.  Mutable state (step counters, accumulators)
 * lives in allocas that SROA/mem2reg turn into SSA under default<O3>. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "backend/lower.h"
#include "backend/schedule.h"

#define MAX_LANES LM_SCHED_MAX_LANES

typedef struct SpanKey {
  int param, row;
  LLVMValueRef val;
} SpanKey;

typedef struct Lo {
  const lm_kernel *k;
  const lm_variant *v;
  const lm_schedule *s; /* every decision: parts, modes, groups, accumulators */
  lm_counts *cnt;
  lm_part_counts *tally; /* sites of the part being emitted */
  LLVMContextRef C;
  LLVMModuleRef M;
  LLVMBuilderRef B;
  LLVMValueRef fn;
  int W, L, G, U;
  int snapshot; /* phase == snapshot */
  LLVMTypeRef i1, i8, i32, i64, f32, f64, ptr, voidt;
  unsigned md_priv, md_glob, md_blend;
  /* per entry */
  LLVMValueRef *pbuf, *pscal, *dim, *stride;
  LLVMValueRef N, end, scratch, nslots;
  int *snapid;
  /* per packet */
  LLVMValueRef p, rvec, valid, lenv, svec, gvec, trows;
  LLVMValueRef *uval;
  LLVMValueRef (*acc)[LM_SCHED_ACC_CONTIG];
  int loop;
  /* per step */
  lm_sched_mode mode;
  LLVMValueRef *memo;
  LLVMValueRef t;    /* i32 step index */
  LLVMValueRef mask; /* <W x i1>, NULL when every lane is active */
  int blk;
  LLVMValueRef **pre;  /* [node][k] block-mode columns */
  LLVMValueRef **pend; /* [store][k] block-mode store values */
  SpanKey span[64];
  int nspan;
} Lo;

/* ---- small builders -------------------------------------------------- */

static LLVMTypeRef scal_t(Lo *o, lm_dtype t) {
  switch (t) {
  case LM_F32: return o->f32;
  case LM_F64: return o->f64;
  case LM_I32: return o->i32;
  default: return o->i1;
  }
}
static LLVMTypeRef vec_t(Lo *o, lm_dtype t, int n) {
  return LLVMVectorType(scal_t(o, t), (unsigned)n);
}
static int is_float(lm_dtype t) { return t == LM_F32 || t == LM_F64; }
static LLVMValueRef ci32(Lo *o, long long x) {
  return LLVMConstInt(o->i32, (unsigned long long)x, 1);
}
static LLVMValueRef ci64(Lo *o, long long x) {
  return LLVMConstInt(o->i64, (unsigned long long)x, 1);
}
static LLVMValueRef splat(Lo *o, LLVMValueRef s, int n) {
  LLVMTypeRef vt = LLVMVectorType(LLVMTypeOf(s), (unsigned)n);
  LLVMValueRef v = LLVMBuildInsertElement(o->B, LLVMGetPoison(vt), s,
                                          ci32(o, 0), "");
  LLVMValueRef zeros = LLVMConstNull(LLVMVectorType(o->i32, (unsigned)n));
  return LLVMBuildShuffleVector(o->B, v, LLVMGetPoison(vt), zeros, "");
}
static LLVMValueRef shuf(Lo *o, LLVMValueRef a, LLVMValueRef b, const int *m,
                         int n) {
  LLVMValueRef e[4 * MAX_LANES];
  for (int i = 0; i < n; i++)
    e[i] = m[i] < 0 ? LLVMGetPoison(o->i32) : ci32(o, m[i]);
  if (!b)
    b = LLVMGetPoison(LLVMTypeOf(a));
  return LLVMBuildShuffleVector(o->B, a, b, LLVMConstVector(e, (unsigned)n),
                                "");
}
static LLVMValueRef const_ivec(Lo *o, const int *x, int n) {
  LLVMValueRef e[MAX_LANES];
  for (int i = 0; i < n; i++)
    e[i] = ci32(o, x[i]);
  return LLVMConstVector(e, (unsigned)n);
}
static LLVMValueRef all_ones(Lo *o, int n) {
  return LLVMConstAllOnes(LLVMVectorType(o->i1, (unsigned)n));
}
static void tag(Lo *o, LLVMValueRef inst, unsigned kind) {
  LLVMSetMetadata(inst, kind,
                  LLVMMetadataAsValue(o->C, LLVMMDNodeInContext2(o->C, NULL, 0)));
}

static LLVMValueRef intrinsic(Lo *o, const char *name, LLVMTypeRef *ov,
                              int nov, LLVMValueRef *args, int nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(o->M, id, ov, (size_t)nov);
  LLVMTypeRef ft = LLVMIntrinsicGetType(o->C, id, ov, (size_t)nov);
  return LLVMBuildCall2(o->B, ft, f, args, (unsigned)nargs, "");
}
static LLVMValueRef intr1(Lo *o, const char *name, LLVMValueRef a) {
  LLVMTypeRef t = LLVMTypeOf(a);
  return intrinsic(o, name, &t, 1, &a, 1);
}
static LLVMValueRef intr2(Lo *o, const char *name, LLVMValueRef a,
                          LLVMValueRef b) {
  LLVMTypeRef t = LLVMTypeOf(a);
  LLVMValueRef x[2] = {a, b};
  return intrinsic(o, name, &t, 1, x, 2);
}

static LLVMValueRef masked_load(Lo *o, LLVMTypeRef vt, LLVMValueRef ptr,
                                unsigned align, LLVMValueRef mask) {
  LLVMTypeRef ov[2] = {vt, o->ptr};
  LLVMValueRef a[4] = {ptr, LLVMConstInt(o->i32, align, 0), mask,
                       LLVMConstNull(vt)};
  return intrinsic(o, "llvm.masked.load", ov, 2, a, 4);
}
static LLVMValueRef masked_store(Lo *o, LLVMValueRef val, LLVMValueRef ptr,
                                 unsigned align, LLVMValueRef mask) {
  LLVMTypeRef ov[2] = {LLVMTypeOf(val), o->ptr};
  LLVMValueRef a[4] = {val, ptr, LLVMConstInt(o->i32, align, 0), mask};
  return intrinsic(o, "llvm.masked.store", ov, 2, a, 4);
}
static LLVMValueRef gather(Lo *o, LLVMTypeRef vt, LLVMValueRef ptrs,
                           unsigned align, LLVMValueRef mask) {
  LLVMTypeRef ov[2] = {vt, LLVMTypeOf(ptrs)};
  LLVMValueRef a[4] = {ptrs, LLVMConstInt(o->i32, align, 0), mask,
                       LLVMConstNull(vt)};
  return intrinsic(o, "llvm.masked.gather", ov, 2, a, 4);
}
static LLVMValueRef scatter(Lo *o, LLVMValueRef val, LLVMValueRef ptrs,
                            unsigned align, LLVMValueRef mask) {
  LLVMTypeRef ov[2] = {LLVMTypeOf(val), LLVMTypeOf(ptrs)};
  LLVMValueRef a[4] = {val, ptrs, LLVMConstInt(o->i32, align, 0), mask};
  return intrinsic(o, "llvm.masked.scatter", ov, 2, a, 4);
}

static LLVMValueRef gep(Lo *o, LLVMTypeRef et, LLVMValueRef base,
                        LLVMValueRef idx) {
  return LLVMBuildGEP2(o->B, et, base, &idx, 1, "");
}

static LLVMBasicBlockRef block(Lo *o, const char *name) {
  return LLVMAppendBasicBlockInContext(o->C, o->fn, name);
}

/* ---- spans: contiguous element runs covering a view ------------------ */

/* A view start::step over M consecutive columns touches the run of step*M
 * elements beginning at the first column's block; every element of it lies
 * inside the row, so loading the whole run is in bounds whenever its first
 * column is.  The view's lanes are then picked with one shuffle, and two
 * views of one run (x[r,0::2], x[r,1::2]) share the load. */
static LLVMValueRef span_load(Lo *o, int param, int row, LLVMValueRef ptr,
                              lm_dtype dt, int M, int start, int step,
                              LLVMValueRef mask) {
  LLVMValueRef run = NULL;
  for (int i = 0; i < o->nspan; i++)
    if (o->span[i].param == param && o->span[i].row == row)
      run = o->span[i].val;
  int n = step * M;
  LLVMTypeRef rt = vec_t(o, dt, n);
  unsigned al = (unsigned)lm_dtype_size(dt);
  if (!run) {
    if (mask) {
      int m[4 * MAX_LANES];
      for (int e = 0; e < n; e++)
        m[e] = e / step;
      LLVMValueRef em = step == 1 ? mask : shuf(o, mask, NULL, m, n);
      run = masked_load(o, rt, ptr, al, em);
      o->cnt->emit_glob_masked_loads++;
      o->tally->maskload += M == o->W ? step : 1;
    } else {
      run = LLVMBuildLoad2(o->B, rt, ptr, "");
      LLVMSetAlignment(run, al);
      tag(o, run, o->md_glob);
      o->cnt->emit_glob_vector_loads++;
      if (M == o->W)
        o->tally->vload += step;
      else
        o->tally->segload++;
    }
    if (o->nspan < 64)
      o->span[o->nspan++] = (SpanKey){param, row, run};
  }
  if (step == 1)
    return run;
  int m[MAX_LANES];
  for (int i = 0; i < M; i++)
    m[i] = start + step * i;
  return shuf(o, run, NULL, m, M);
}

/* Store several views of one run (a store group) with one store when they
 * cover every residue and every lane is active; else a masked store. */
static void span_store(Lo *o, LLVMValueRef ptr, lm_dtype dt, int M, int nv,
                       LLVMValueRef *vals, const int *starts, int step,
                       LLVMValueRef mask) {
  int n = step * M, covered[64] = {0}, ncov = 0;
  LLVMValueRef acc = NULL;
  for (int s = 0; s < nv; s++) {
    int m[4 * MAX_LANES];
    for (int e = 0; e < n; e++)
      m[e] = e % step == starts[s] ? e / step : -1;
    LLVMValueRef wide = step == 1 ? vals[s] : shuf(o, vals[s], NULL, m, n);
    if (!acc) {
      acc = wide;
    } else {
      for (int e = 0; e < n; e++)
        m[e] = e % step == starts[s] ? n + e : e;
      acc = shuf(o, acc, wide, m, n);
    }
    if (!covered[starts[s]]++)
      ncov++;
  }
  unsigned al = (unsigned)lm_dtype_size(dt);
  if (ncov == step && !mask) {
    LLVMValueRef st = LLVMBuildStore(o->B, acc, ptr);
    LLVMSetAlignment(st, al);
    tag(o, st, o->md_glob);
    o->cnt->emit_glob_vector_stores++;
    if (M == o->W)
      o->tally->vstore += step;
    else
      o->tally->segstore++;
    return;
  }
  LLVMValueRef e[4 * MAX_LANES];
  int m[4 * MAX_LANES];
  for (int i = 0; i < n; i++) {
    e[i] = LLVMConstInt(o->i1, covered[i % step] ? 1 : 0, 0);
    m[i] = i / step;
  }
  LLVMValueRef cm = LLVMConstVector(e, (unsigned)n);
  if (mask)
    cm = LLVMBuildAnd(o->B, cm, step == 1 ? mask : shuf(o, mask, NULL, m, n),
                      "");
  masked_store(o, acc, ptr, al, cm);
  o->cnt->emit_glob_masked_stores++;
  o->tally->maskstore += M == o->W ? step : 1;
}

/* ---- address helpers ------------------------------------------------- */

/* Element pointer of column block `colblk` (in elements) of row `row`. */
static LLVMValueRef row_ptr(Lo *o, int param, LLVMValueRef row64,
                            LLVMValueRef colblk64) {
  lm_dtype dt = o->k->params[param].dtype;
  LLVMValueRef off = LLVMBuildAdd(
      o->B, LLVMBuildMul(o->B, row64, o->stride[param], ""), colblk64, "");
  return gep(o, scal_t(o, dt), o->pbuf[param], off);
}

/* Per-lane column index of the current step: t*L + s. */
static LLVMValueRef lane_cols(Lo *o) {
  return LLVMBuildAdd(
      o->B, splat(o, LLVMBuildNSWMul(o->B, o->t, ci32(o, o->L), ""), o->W),
      o->svec, "");
}

/* Pointer vector for a view of param at the current step, per lane. */
static LLVMValueRef view_ptrs(Lo *o, int param, int rowwise, int start,
                              int step) {
  lm_dtype dt = o->k->params[param].dtype;
  LLVMValueRef idx = LLVMBuildAdd(
      o->B, LLVMBuildMul(o->B, lane_cols(o), splat(o, ci32(o, step), o->W), ""),
      splat(o, ci32(o, start), o->W), "");
  LLVMValueRef base = o->pbuf[param];
  if (rowwise) {
    LLVMValueRef s32 = LLVMBuildTrunc(o->B, o->stride[param], o->i32, "");
    idx = LLVMBuildAdd(o->B,
                       LLVMBuildMul(o->B, o->gvec, splat(o, s32, o->W), ""),
                       idx, "");
    base = row_ptr(o, param, o->p, ci64(o, 0));
  }
  return gep(o, scal_t(o, dt), base, idx);
}

static LLVMValueRef concat(Lo *o, LLVMValueRef *parts, int n, int M) {
  while (n > 1) {
    for (int i = 0; i < n / 2; i++) {
      int m[MAX_LANES];
      for (int e = 0; e < 2 * M; e++)
        m[e] = e;
      parts[i] = shuf(o, parts[2 * i], parts[2 * i + 1], m, 2 * M);
    }
    n /= 2;
    M *= 2;
  }
  return parts[0];
}

/* ---- private arrays -------------------------------------------------- */

/* The step's slot: the step index, plus the column within a block. */
static LLVMValueRef step_index(Lo *o) {
  return o->mode == LM_SCHED_BLOCK ? LLVMBuildAdd(o->B, o->t, ci32(o, o->blk), "")
                               : o->t;
}

static LLVMValueRef slot_ptr(Lo *o, int node, LLVMValueRef t) {
  /* Private array sid occupies its own region of nslots * W * 8 bytes
   * (room for the widest element); inside it, the [slot][lane] layout:
   * element q of lane l at region + (q*W + l) * size, so slot q is one
   * aligned vector of W * size bytes. */
  lm_dtype dt = o->k->nodes[node].dtype;
  long long size = dt == LM_BOOL ? 1 : (long long)lm_dtype_size(dt);
  LLVMValueRef region = LLVMBuildMul(
      o->B, LLVMBuildMul(o->B, ci64(o, o->snapid[node]), o->nslots, ""),
      ci64(o, (long long)o->W * 8), "");
  LLVMValueRef off = LLVMBuildAdd(
      o->B, region,
      LLVMBuildMul(o->B, LLVMBuildSExt(o->B, t, o->i64, ""),
                   ci64(o, (long long)o->W * size), ""),
      "");
  return gep(o, o->i8, o->scratch, off);
}

static LLVMValueRef lane_ptrs(Lo *o, LLVMValueRef base, LLVMTypeRef et) {
  int iota[MAX_LANES];
  for (int i = 0; i < o->W; i++)
    iota[i] = i;
  return gep(o, et, base, const_ivec(o, iota, o->W));
}

static void fallback(Lo *o, const char *why) {
  o->cnt->emit_fallbacks++;
  snprintf(o->cnt->fallback_reason, sizeof o->cnt->fallback_reason, "%s", why);
}

static void priv_write(Lo *o, int node, LLVMValueRef val) {
  lm_dtype dt = o->k->nodes[node].dtype;
  LLVMValueRef ptr = slot_ptr(o, node, step_index(o));
  const char *why = NULL;
  lm_priv how = lm_sched_priv(o->s, dt, &why);
  if (why) {
    if (o->v->priv != LM_PRIV_GATHER) /* gather is the general path already */
      fallback(o, why);
    val = LLVMBuildZExt(o->B, val, LLVMVectorType(o->i8, (unsigned)o->W), "");
  }
  LLVMTypeRef vt = LLVMTypeOf(val);
  unsigned al = (unsigned)(o->W * (int)lm_dtype_size(dt));
  if (how == LM_PRIV_GATHER) {
    LLVMValueRef ptrs = lane_ptrs(o, ptr, LLVMGetElementType(vt));
    unsigned esz = dt == LM_BOOL ? 1 : (unsigned)lm_dtype_size(dt);
    tag(o, scatter(o, val, ptrs, esz, o->mask ? o->mask : all_ones(o, o->W)),
        o->md_priv);
    o->cnt->emit_priv_scatters++;
    o->tally->scatter += o->W;
    return;
  }
  if (!o->mask) { /* every lane active: the blend is the identity */
    LLVMValueRef st = LLVMBuildStore(o->B, val, ptr);
    LLVMSetAlignment(st, al);
    tag(o, st, o->md_priv);
    o->cnt->emit_slot_writes++;
    o->tally->vstore++;
    return;
  }
  if (how == LM_PRIV_MASKED) {
    tag(o, masked_store(o, val, ptr, al, o->mask), o->md_priv);
    o->cnt->emit_priv_masked_stores++;
    o->tally->maskstore++;
    return;
  }
  LLVMValueRef old = LLVMBuildLoad2(o->B, vt, ptr, "");
  LLVMSetAlignment(old, al);
  tag(o, old, o->md_priv);
  LLVMValueRef nv = LLVMBuildSelect(o->B, o->mask, val, old, "");
  tag(o, nv, o->md_blend);
  LLVMValueRef st = LLVMBuildStore(o->B, nv, ptr);
  LLVMSetAlignment(st, al);
  tag(o, st, o->md_priv);
  o->cnt->emit_slot_writes++;
  o->cnt->emit_priv_blends++;
  o->tally->vstore++;
  o->tally->blend++;
}

static LLVMValueRef priv_read(Lo *o, int node) {
  lm_dtype dt = o->k->nodes[node].dtype;
  LLVMValueRef ptr = slot_ptr(o, node, step_index(o));
  const char *why = NULL;
  lm_priv how = lm_sched_priv(o->s, dt, &why);
  int narrow = why != NULL;
  if (narrow && o->v->priv != LM_PRIV_GATHER)
    fallback(o, why);
  LLVMTypeRef vt = narrow ? LLVMVectorType(o->i8, (unsigned)o->W)
                          : vec_t(o, dt, o->W);
  unsigned al = (unsigned)(o->W * (int)lm_dtype_size(dt));
  LLVMValueRef v;
  if (how == LM_PRIV_GATHER) {
    LLVMValueRef ptrs = lane_ptrs(o, ptr, LLVMGetElementType(vt));
    v = gather(o, vt, ptrs, narrow ? 1 : (unsigned)lm_dtype_size(dt),
               o->mask ? o->mask : all_ones(o, o->W));
    tag(o, v, o->md_priv);
    o->cnt->emit_priv_gathers++;
    o->tally->gather += o->W;
  } else if (o->mask && how == LM_PRIV_MASKED) {
    v = masked_load(o, vt, ptr, al, o->mask);
    tag(o, v, o->md_priv);
    o->cnt->emit_priv_masked_loads++;
    o->tally->maskload++;
  } else {
    v = LLVMBuildLoad2(o->B, vt, ptr, "");
    LLVMSetAlignment(v, al);
    tag(o, v, o->md_priv);
    o->cnt->emit_slot_reads++;
    o->tally->vload++;
    if (o->mask) /* the report's rule: inactive lanes read as zero */
      v = LLVMBuildSelect(o->B, o->mask, v, LLVMConstNull(vt), "");
  }
  if (narrow)
    v = LLVMBuildTrunc(o->B, v, vec_t(o, LM_BOOL, o->W), "");
  return v;
}

/* ---- elementwise operations (shared by tiles and uniforms) ----------- */

/* One call of the variant's math provider's routine of m lanes. */
static LLVMValueRef vmath_call(Lo *o, lm_op op, lm_dtype dt, int m,
                               LLVMValueRef a) {
  const char *name = lm_vmath_name(o->v->math, op, dt, m);
  if (!name) /* m is always a width the providers ship (16-64 bytes), and
                lm_variant_check refused a provider without the routine */
    abort();
  LLVMTypeRef vt = LLVMTypeOf(a);
  LLVMTypeRef ft = LLVMFunctionType(vt, &vt, 1, 0);
  LLVMValueRef f = LLVMGetNamedFunction(o->M, name);
  if (!f) {
    f = LLVMAddFunction(o->M, name, ft);
    unsigned mem = LLVMGetEnumAttributeKindForName("memory", 6);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(o->C, mem, 0));
    unsigned nu = LLVMGetEnumAttributeKindForName("nounwind", 8);
    LLVMAddAttributeAtIndex(f, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(o->C, nu, 0));
    char bits[16];
    snprintf(bits, sizeof bits, "%d", m * (int)lm_dtype_size(dt) * 8);
    LLVMAddTargetDependentFunctionAttr(f, "min-legal-vector-width", bits);
  }
  o->cnt->emit_math_calls++;
  o->tally->math_calls++;
  return LLVMBuildCall2(o->B, ft, f, &a, 1, "");
}

/* Vector math on a W-lane value.  The routine's width is the ISA's widest
 * vector for the type (never wider, so an AVX2 target never runs AVX-512
 * code), padded up to 16 bytes: wider values are split into such calls,
 * narrower ones padded, e.g. f64 tiles in an f32 kernel. */
static LLVMValueRef vmath(Lo *o, lm_op op, lm_dtype dt, LLVMValueRef a) {
  int m = lm_sched_math_lanes(o->s, dt);
  if (o->v->math == LM_MATH_IR) { /* inline, on all W lanes at once */
    int calls = lm_sched_math_calls(o->s, dt);
    o->cnt->emit_math_calls += calls;
    o->tally->math_calls += calls;
    return lm_vmath_ir(o->B, o->M, op, a);
  }
  if (m == o->W)
    return vmath_call(o, op, dt, m, a);
  if (m > o->W) { /* pad, call, keep the first W lanes */
    int idx[MAX_LANES];
    for (int i = 0; i < m; i++)
      idx[i] = i < o->W ? i : -1;
    LLVMValueRef r = vmath_call(o, op, dt, m, shuf(o, a, NULL, idx, m));
    return shuf(o, r, NULL, idx, o->W);
  }
  LLVMValueRef parts[MAX_LANES];
  int np = o->W / m;
  for (int p = 0; p < np; p++) {
    int idx[MAX_LANES];
    for (int i = 0; i < m; i++)
      idx[i] = p * m + i;
    parts[p] = vmath_call(o, op, dt, m, shuf(o, a, NULL, idx, m));
  }
  return concat(o, parts, np, m);
}

static LLVMValueRef fconst(Lo *o, lm_dtype dt, double x) {
  return splat(o, LLVMConstReal(scal_t(o, dt), x), o->W);
}

static LLVMValueRef convert(Lo *o, LLVMValueRef a, lm_dtype from,
                            lm_dtype to) {
  LLVMTypeRef vt = vec_t(o, to, o->W);
  if (from == to)
    return a;
  if (is_float(from) && is_float(to))
    return to == LM_F64 ? LLVMBuildFPExt(o->B, a, vt, "")
                        : LLVMBuildFPTrunc(o->B, a, vt, "");
  if (is_float(to))
    return LLVMBuildSIToFP(o->B, a, vt, "");
  if (is_float(from))
    return LLVMBuildFPToSI(o->B, a, vt, "");
  return LLVMBuildZExt(o->B, a, vt, ""); /* bool -> i32 */
}

static LLVMValueRef powi(Lo *o, LLVMValueRef x, int n, lm_dtype dt) {
  int e = n < 0 ? -n : n;
  LLVMValueRef r = NULL, b = x;
  while (e) {
    if (e & 1)
      r = r ? (is_float(dt) ? LLVMBuildFMul(o->B, r, b, "")
                            : LLVMBuildMul(o->B, r, b, ""))
            : b;
    e >>= 1;
    if (e)
      b = is_float(dt) ? LLVMBuildFMul(o->B, b, b, "")
                       : LLVMBuildMul(o->B, b, b, "");
  }
  if (!r)
    r = is_float(dt) ? fconst(o, dt, 1.0)
                     : splat(o, ci32(o, 1), o->W);
  if (n < 0) {
    r = LLVMBuildFDiv(o->B, fconst(o, dt, 1.0), r, "");
    o->tally->div_lanes += o->W;
  }
  return r;
}

static LLVMValueRef elementwise(Lo *o, const lm_node *n, LLVMValueRef a,
                                LLVMValueRef b, LLVMValueRef c) {
  const lm_kernel *k = o->k;
  lm_dtype at = n->a >= 0 ? k->nodes[n->a].dtype : n->dtype;
  int fl = is_float(at);
  LLVMBuilderRef B = o->B;
  switch (n->op) {
  case LM_OP_NEG: return fl ? LLVMBuildFNeg(B, a, "") : LLVMBuildNeg(B, a, "");
  case LM_OP_ABS:
    if (fl)
      return intr1(o, "llvm.fabs", a);
    return intr2(o, "llvm.abs", a, LLVMConstInt(o->i1, 0, 0));
  case LM_OP_NOT: return LLVMBuildNot(B, a, "");
  case LM_OP_EXP:
  case LM_OP_LOG:
  case LM_OP_TANH:
  case LM_OP_ERF:
  case LM_OP_SIN:
  case LM_OP_COS: return vmath(o, n->op, n->dtype, a);
  case LM_OP_SQRT:
    o->tally->div_lanes += o->W;
    return intr1(o, "llvm.sqrt", a);
  case LM_OP_RSQRT: {
    o->tally->div_lanes += lm_sched_rsqrt_estimated(o->s, n->dtype) ? 0 : 2 * o->W;
    LLVMValueRef sq = intr1(o, "llvm.sqrt", a);
    LLVMValueRef r = LLVMBuildFDiv(B, fconst(o, n->dtype, 1.0), sq, "");
    if (o->v->fp == LM_FP_RELAXED) { /* LLVM may estimate and refine it */
      LLVMSetFastMathFlags(sq, LLVMFastMathApproxFunc | LLVMFastMathAllowReciprocal);
      LLVMSetFastMathFlags(r, LLVMFastMathApproxFunc | LLVMFastMathAllowReciprocal);
    }
    return r;
  }
  case LM_OP_SIGMOID: {
    LLVMValueRef e = vmath(o, LM_OP_EXP, n->dtype, LLVMBuildFNeg(B, a, ""));
    LLVMValueRef one = fconst(o, n->dtype, 1.0);
    o->tally->div_lanes += o->W;
    return LLVMBuildFDiv(B, one, LLVMBuildFAdd(B, one, e, ""), "");
  }
  case LM_OP_POWI: return powi(o, a, n->ipow, n->dtype);
  case LM_OP_CAST: return convert(o, a, at, n->dtype);
  case LM_OP_ADD: return fl ? LLVMBuildFAdd(B, a, b, "") : LLVMBuildAdd(B, a, b, "");
  case LM_OP_SUB: return fl ? LLVMBuildFSub(B, a, b, "") : LLVMBuildSub(B, a, b, "");
  case LM_OP_MUL: return fl ? LLVMBuildFMul(B, a, b, "") : LLVMBuildMul(B, a, b, "");
  case LM_OP_DIV: {
    if (!fl) {
      o->tally->div_lanes += o->W;
      return LLVMBuildSDiv(B, a, b, "");
    }
    LLVMValueRef q = LLVMBuildFDiv(B, a, b, "");
    if (lm_sched_div_per_row(o->s, (int)(n - k->nodes)))
      o->tally->div_lanes += o->W;
    else if (o->v->fp == LM_FP_RELAXED) /* the divisor is fixed: LICM hoists 1/b */
      LLVMSetFastMathFlags(q, LLVMFastMathAllowReciprocal);
    return q;
  }
  case LM_OP_MIN: return intr2(o, fl ? "llvm.minimum" : "llvm.smin", a, b);
  case LM_OP_MAX: return intr2(o, fl ? "llvm.maximum" : "llvm.smax", a, b);
  case LM_OP_EQ: return fl ? LLVMBuildFCmp(B, LLVMRealOEQ, a, b, "") : LLVMBuildICmp(B, LLVMIntEQ, a, b, "");
  case LM_OP_NE: return fl ? LLVMBuildFCmp(B, LLVMRealUNE, a, b, "") : LLVMBuildICmp(B, LLVMIntNE, a, b, "");
  case LM_OP_LT: return fl ? LLVMBuildFCmp(B, LLVMRealOLT, a, b, "") : LLVMBuildICmp(B, LLVMIntSLT, a, b, "");
  case LM_OP_LE: return fl ? LLVMBuildFCmp(B, LLVMRealOLE, a, b, "") : LLVMBuildICmp(B, LLVMIntSLE, a, b, "");
  case LM_OP_GT: return fl ? LLVMBuildFCmp(B, LLVMRealOGT, a, b, "") : LLVMBuildICmp(B, LLVMIntSGT, a, b, "");
  case LM_OP_GE: return fl ? LLVMBuildFCmp(B, LLVMRealOGE, a, b, "") : LLVMBuildICmp(B, LLVMIntSGE, a, b, "");
  case LM_OP_AND: return LLVMBuildAnd(B, a, b, "");
  case LM_OP_OR: return LLVMBuildOr(B, a, b, "");
  case LM_OP_FMA: {
    LLVMTypeRef t = LLVMTypeOf(a);
    LLVMValueRef x[3] = {a, b, c};
    return intrinsic(o, "llvm.fma", &t, 1, x, 3);
  }
  case LM_OP_WHERE: return LLVMBuildSelect(B, a, b, c, "");
  default: abort(); /* leaves and reductions are handled by the callers */
  }
}

/* ---- uniforms --------------------------------------------------------- */

static LLVMValueRef uniform_leaf(Lo *o, const lm_node *n) {
  switch (n->op) {
  case LM_OP_CONST:
    if (is_float(n->dtype))
      return fconst(o, n->dtype, n->imm);
    return splat(o, LLVMConstInt(scal_t(o, n->dtype), (unsigned long long)(long long)n->imm, 1), o->W);
  case LM_OP_SCALAR: {
    LLVMValueRef s = o->pscal[n->param];
    LLVMValueRef v = is_float(n->dtype)
                         ? (n->dtype == LM_F32 ? LLVMBuildFPTrunc(o->B, s, o->f32, "") : s)
                         : LLVMBuildFPToSI(o->B, s, o->i32, "");
    return splat(o, v, o->W);
  }
  case LM_OP_DIM: {
    LLVMValueRef d = n->sym >= 0 ? LLVMBuildMul(o->B, o->dim[n->sym], ci64(o, n->coef), "")
                                 : ci64(o, n->coef);
    LLVMValueRef v = is_float(n->dtype) ? LLVMBuildSIToFP(o->B, d, scal_t(o, n->dtype), "")
                                        : LLVMBuildTrunc(o->B, d, o->i32, "");
    return splat(o, v, o->W);
  }
  case LM_OP_ROWIDX: return o->rvec;
  case LM_OP_LOAD_INST: {
    lm_dtype dt = o->k->params[n->param].dtype;
    LLVMValueRef base = gep(o, scal_t(o, dt), o->pbuf[n->param], o->p);
    if (lm_sched_inst_contiguous(o->s)) {
      o->cnt->emit_glob_masked_loads++;
      o->tally->maskload++;
      return masked_load(o, vec_t(o, dt, o->W), base, (unsigned)lm_dtype_size(dt), o->valid);
    }
    o->cnt->emit_glob_gathers++;
    o->tally->gather += o->W;
    return gather(o, vec_t(o, dt, o->W), gep(o, scal_t(o, dt), base, o->gvec),
                  (unsigned)lm_dtype_size(dt), o->valid);
  }
  default: abort();
  }
}

static LLVMValueRef emit_uniform(Lo *o, int id) {
  if (o->uval[id])
    return o->uval[id];
  const lm_node *n = &o->k->nodes[id];
  LLVMValueRef v;
  if (n->a < 0)
    v = uniform_leaf(o, n);
  else
    v = elementwise(o, n, emit_uniform(o, n->a),
                    n->b >= 0 ? emit_uniform(o, n->b) : NULL,
                    n->c >= 0 ? emit_uniform(o, n->c) : NULL);
  return o->uval[id] = v;
}

static int is_reduction(lm_op op) {
  return op == LM_OP_RSUM || op == LM_OP_RMAX || op == LM_OP_RMIN;
}

/* Evaluate every uniform that is known in loop `loop` (outside the loop, so
 * it dominates both the main part and the tail). */
static void eval_uniforms(Lo *o, int loop) {
  for (int i = 0; i < o->k->nnodes; i++) {
    const lm_node *n = &o->k->nodes[i];
    if (!n->tile && !is_reduction(n->op) && n->avail <= loop)
      emit_uniform(o, i);
  }
}

/* ---- tiles ------------------------------------------------------------ */

static LLVMValueRef emit_tile(Lo *o, int id);

static LLVMValueRef load_row(Lo *o, const lm_node *n) {
  lm_dtype dt = o->k->params[n->param].dtype;
  switch (o->mode) {
  case LM_SCHED_CONTIG: {
    LLVMValueRef blk = LLVMBuildSExt(
        o->B, LLVMBuildNSWMul(o->B, o->t, ci32(o, n->step * o->W), ""), o->i64, "");
    return span_load(o, n->param, 0, row_ptr(o, n->param, o->p, blk), dt, o->W,
                     n->start, n->step, o->mask);
  }
  case LM_SCHED_SEG: {
    LLVMValueRef parts[MAX_LANES];
    LLVMValueRef blk = LLVMBuildSExt(
        o->B, LLVMBuildNSWMul(o->B, o->t, ci32(o, n->step * o->L), ""), o->i64, "");
    for (int g = 0; g < o->G; g++) {
      LLVMValueRef row = LLVMBuildAdd(o->B, o->p, ci64(o, g), "");
      parts[g] = span_load(o, n->param, g, row_ptr(o, n->param, row, blk), dt,
                           o->L, n->start, n->step, NULL);
    }
    return concat(o, parts, o->G, o->L);
  }
  case LM_SCHED_BLOCK: return o->pre[n - o->k->nodes][o->blk];
  case LM_SCHED_GATHER:
  default:
    o->cnt->emit_glob_gathers++;
    o->tally->gather += o->W;
    return gather(o, vec_t(o, dt, o->W), view_ptrs(o, n->param, 1, n->start, n->step),
                  (unsigned)lm_dtype_size(dt), o->mask ? o->mask : all_ones(o, o->W));
  }
}

static LLVMValueRef load_col(Lo *o, const lm_node *n) {
  lm_dtype dt = o->k->params[n->param].dtype;
  LLVMTypeRef et = scal_t(o, dt);
  if (o->L == 1) { /* one column per step, shared by every lane */
    LLVMValueRef t = o->mode == LM_SCHED_BLOCK
                         ? LLVMBuildAdd(o->B, o->t, ci32(o, o->blk), "")
                         : o->t;
    LLVMValueRef idx = LLVMBuildAdd(o->B, LLVMBuildMul(o->B, t, ci32(o, n->step), ""),
                                    ci32(o, n->start), "");
    LLVMValueRef ld = LLVMBuildLoad2(o->B, et, gep(o, et, o->pbuf[n->param], idx), "");
    tag(o, ld, o->md_glob);
    return splat(o, ld, o->W);
  }
  if (o->mode == LM_SCHED_CONTIG || o->mode == LM_SCHED_SEG) {
    int M = o->mode == LM_SCHED_CONTIG ? o->W : o->L;
    LLVMValueRef blk = LLVMBuildNSWMul(o->B, o->t, ci32(o, n->step * M), "");
    LLVMValueRef v = span_load(o, n->param, -1, gep(o, et, o->pbuf[n->param], blk), dt,
                               M, n->start, n->step, o->mode == LM_SCHED_CONTIG ? o->mask : NULL);
    if (M == o->W)
      return v;
    int m[MAX_LANES];
    for (int i = 0; i < o->W; i++)
      m[i] = i % o->L;
    return shuf(o, v, NULL, m, o->W);
  }
  o->cnt->emit_glob_gathers++;
  o->tally->gather += o->W;
  return gather(o, vec_t(o, dt, o->W), view_ptrs(o, n->param, 0, n->start, n->step),
                (unsigned)lm_dtype_size(dt), o->mask ? o->mask : all_ones(o, o->W));
}

static LLVMValueRef emit_tile(Lo *o, int id) {
  const lm_node *n = &o->k->nodes[id];
  if (!n->tile)
    return emit_uniform(o, id);
  if (o->memo[id])
    return o->memo[id];
  LLVMValueRef v;
  if (o->snapshot && n->snap && n->level < o->loop) {
    v = priv_read(o, id);
  } else {
    switch (n->op) {
    case LM_OP_LOAD_ROW: v = load_row(o, n); break;
    case LM_OP_LOAD_COL: v = load_col(o, n); break;
    case LM_OP_COLIDX:
      v = o->mode == LM_SCHED_BLOCK
              ? splat(o, LLVMBuildAdd(o->B, o->t, ci32(o, o->blk), ""), o->W)
              : lane_cols(o);
      break;
    default:
      v = elementwise(o, n, emit_tile(o, n->a),
                      n->b >= 0 ? emit_tile(o, n->b) : NULL,
                      n->c >= 0 ? emit_tile(o, n->c) : NULL);
    }
    if (o->snapshot && n->snap && n->level == o->loop)
      priv_write(o, id, v);
  }
  return o->memo[id] = v;
}

/* ---- reductions ------------------------------------------------------- */

static LLVMValueRef red_identity(Lo *o, const lm_node *n) {
  double x = n->op == LM_OP_RSUM ? 0.0 : n->op == LM_OP_RMAX ? -1.0 / 0.0 : 1.0 / 0.0;
  return fconst(o, n->dtype, x);
}
static LLVMValueRef red_op(Lo *o, lm_op op, LLVMValueRef a, LLVMValueRef b) {
  if (op == LM_OP_RSUM)
    return LLVMBuildFAdd(o->B, a, b, "");
  return intr2(o, op == LM_OP_RMAX ? "llvm.maximum" : "llvm.minimum", a, b);
}
static void accumulate(Lo *o, int id, int u) {
  const lm_node *n = &o->k->nodes[id];
  LLVMValueRef x = emit_tile(o, n->a);
  if (o->mask)
    x = LLVMBuildSelect(o->B, o->mask, x, red_identity(o, n), "");
  LLVMTypeRef vt = vec_t(o, n->dtype, o->W);
  LLVMValueRef a = LLVMBuildLoad2(o->B, vt, o->acc[id][u], "");
  LLVMBuildStore(o->B, red_op(o, n->op, a, x), o->acc[id][u]);
}

static void finalize_reduction(Lo *o, int id) {
  const lm_node *n = &o->k->nodes[id];
  LLVMTypeRef vt = vec_t(o, n->dtype, o->W);
  LLVMValueRef v = LLVMBuildLoad2(o->B, vt, o->acc[id][0], "");
  for (int u = 1; u < o->U; u++)
    v = red_op(o, n->op, v, LLVMBuildLoad2(o->B, vt, o->acc[id][u], ""));
  for (int s = o->L / 2; s >= 1; s /= 2) { /* butterfly within groups of L */
    int m[MAX_LANES];
    for (int i = 0; i < o->W; i++)
      m[i] = i ^ s;
    v = red_op(o, n->op, v, shuf(o, v, NULL, m, o->W));
    o->cnt->emit_hreduce_steps++;
    o->tally->hreduce++;
  }
  o->uval[id] = v;
}

/* ---- one step --------------------------------------------------------- */

static void begin_step(Lo *o) {
  memset(o->memo, 0, sizeof(LLVMValueRef) * (size_t)o->k->nnodes);
  if (o->mode != LM_SCHED_BLOCK)
    o->nspan = 0;
}

/* The store groups of this loop (the schedule's), one emit call each. */
static void store_groups(Lo *o, void (*emit)(Lo *, const int *, int)) {
  const lm_sched_loop *lp = &o->s->loop[o->loop];
  for (int g = 0; g < lp->ngrp; g++) {
    const lm_sched_group *grp = &o->s->groups[lp->grp0 + g];
    emit(o, &o->s->members[grp->first], grp->n);
  }
}

static void store_now(Lo *o, const int *grp, int ng) {
  const lm_kernel *k = o->k;
  const lm_store *s0 = &k->stores[grp[0]];
  lm_dtype dt = k->params[s0->param].dtype;
  LLVMValueRef vals[64];
  int starts[64];
  for (int i = 0; i < ng; i++) {
    vals[i] = emit_tile(o, k->stores[grp[i]].value);
    starts[i] = k->stores[grp[i]].start;
  }
  if (o->mode == LM_SCHED_BLOCK) {
    for (int i = 0; i < ng; i++)
      o->pend[grp[i]][o->blk] = vals[i];
    return;
  }
  if (o->mode == LM_SCHED_CONTIG) {
    LLVMValueRef blk = LLVMBuildSExt(
        o->B, LLVMBuildNSWMul(o->B, o->t, ci32(o, s0->step * o->W), ""), o->i64, "");
    span_store(o, row_ptr(o, s0->param, o->p, blk), dt, o->W, ng, vals, starts,
               s0->step, o->mask);
    return;
  }
  if (o->mode == LM_SCHED_SEG) {
    LLVMValueRef blk = LLVMBuildSExt(
        o->B, LLVMBuildNSWMul(o->B, o->t, ci32(o, s0->step * o->L), ""), o->i64, "");
    for (int g = 0; g < o->G; g++) {
      LLVMValueRef part[64];
      int m[MAX_LANES];
      for (int i = 0; i < o->L; i++)
        m[i] = g * o->L + i;
      for (int i = 0; i < ng; i++)
        part[i] = shuf(o, vals[i], NULL, m, o->L);
      LLVMValueRef row = LLVMBuildAdd(o->B, o->p, ci64(o, g), "");
      span_store(o, row_ptr(o, s0->param, row, blk), dt, o->L, ng, part, starts,
                 s0->step, NULL);
    }
    return;
  }
  for (int i = 0; i < ng; i++) {
    o->cnt->emit_glob_scatters++;
    o->tally->scatter += o->W;
    scatter(o, vals[i], view_ptrs(o, s0->param, 1, starts[i], s0->step),
            (unsigned)lm_dtype_size(dt), o->mask ? o->mask : all_ones(o, o->W));
  }
}

/* Emit the work of one step: reductions, snapshots, stores. */
static void emit_step(Lo *o, int u) {
  const lm_schedule *s = o->s;
  const lm_sched_loop *lp = &s->loop[o->loop];
  begin_step(o);
  o->tally->steps++;
  for (int i = 0; i < lp->nred; i++)
    accumulate(o, s->reds[lp->red0 + i], u);
  for (int i = 0; i < lp->nsnap; i++)
    emit_tile(o, s->snaps[lp->snap0 + i]);
  store_groups(o, store_now);
}

/* ---- transposed blocks (L = 1, glob=transpose) ------------------------ */

/* In-register transpose of W vectors of W lanes: log2(W) stages, each
 * exchanging one bit of the row and column index (swap of s x s blocks). */
static void transpose(Lo *o, LLVMValueRef *v) {
  int W = o->W;
  for (int s = W / 2; s >= 1; s /= 2) {
    int m1[MAX_LANES], m2[MAX_LANES];
    for (int j = 0; j < W; j++) {
      m1[j] = (j & s) ? W + j - s : j;
      m2[j] = (j & s) ? W + j : j + s;
    }
    for (int i = 0; i < W; i++) {
      if (i & s)
        continue;
      LLVMValueRef a = v[i], b = v[i + s];
      v[i] = shuf(o, a, b, m1, W);
      v[i + s] = shuf(o, a, b, m2, W);
    }
  }
  o->cnt->emit_transposes++;
}

static void block_preload(Lo *o) {
  const lm_kernel *k = o->k;
  o->nspan = 0;
  for (int id = 0; id < k->nnodes; id++) {
    const lm_node *n = &k->nodes[id];
    if (!o->s->loop[o->loop].need[id] || n->op != LM_OP_LOAD_ROW ||
        (o->snapshot && n->snap && n->level < o->loop))
      continue;
    lm_dtype dt = k->params[n->param].dtype;
    LLVMValueRef blk = LLVMBuildSExt(
        o->B, LLVMBuildNSWMul(o->B, o->t, ci32(o, n->step), ""), o->i64, "");
    for (int l = 0; l < o->W; l++) {
      LLVMValueRef row = LLVMBuildAdd(o->B, o->p, ci64(o, l), "");
      o->pre[id][l] = span_load(o, n->param, l, row_ptr(o, n->param, row, blk),
                                dt, o->W, n->start, n->step, NULL);
    }
    transpose(o, o->pre[id]);
  }
}

static void block_flush_group(Lo *o, const int *grp, int ng) {
  const lm_kernel *k = o->k;
  const lm_store *s0 = &k->stores[grp[0]];
  lm_dtype dt = k->params[s0->param].dtype;
  int starts[64];
  for (int i = 0; i < ng; i++) {
    starts[i] = k->stores[grp[i]].start;
    transpose(o, o->pend[grp[i]]);
  }
  LLVMValueRef blk = LLVMBuildSExt(
      o->B, LLVMBuildNSWMul(o->B, o->t, ci32(o, s0->step), ""), o->i64, "");
  for (int l = 0; l < o->W; l++) {
    LLVMValueRef vals[64];
    for (int i = 0; i < ng; i++)
      vals[i] = o->pend[grp[i]][l];
    LLVMValueRef row = LLVMBuildAdd(o->B, o->p, ci64(o, l), "");
    span_store(o, row_ptr(o, s0->param, row, blk), dt, o->W, ng, vals, starts,
               s0->step, NULL);
  }
}

/* ---- loops ------------------------------------------------------------ */

static LLVMValueRef active_mask(Lo *o) {
  return LLVMBuildICmp(o->B, LLVMIntSLT, lane_cols(o), o->lenv, "");
}

/* Allocas in the entry block (so SROA/mem2reg turn them into SSA). */
static LLVMValueRef entry_alloca(Lo *o, LLVMTypeRef t, const char *name) {
  LLVMBuilderRef eb = LLVMCreateBuilderInContext(o->C);
  LLVMBasicBlockRef entry = LLVMGetEntryBasicBlock(o->fn);
  LLVMPositionBuilder(eb, entry, LLVMGetFirstInstruction(entry));
  LLVMValueRef a = LLVMBuildAlloca(eb, t, name);
  LLVMDisposeBuilder(eb);
  return a;
}

/* Positions the builder for part `id` of the loop: its mode, its mask
 * (NULL when every lane is active) and the tally its sites go to. */
static void enter_part(Lo *o, lm_sched_partid id, LLVMValueRef t) {
  const lm_sched_part *pt = &o->s->part[id];
  o->mode = pt->mode;
  o->tally = &o->cnt->part[id];
  o->t = t;
  o->blk = -1;
  o->mask = NULL;
  if (pt->masked)
    o->mask = active_mask(o);
}

/* One column loop, as the schedule lays it out: the unmasked main part,
 * the rest steps, the masked tail. */
static void emit_loop(Lo *o, LLVMValueRef tfull, LLVMValueRef tmax) {
  const lm_kernel *k = o->k;
  const lm_schedule *s = o->s;
  const lm_sched_loop *lp = &s->loop[o->loop];
  const lm_sched_part *main = &s->part[LM_PART_MAIN], *rest = &s->part[LM_PART_REST],
                      *tail = &s->part[LM_PART_TAIL];
  for (int r = 0; r < lp->nred; r++) {
    int i = s->reds[lp->red0 + r];
    for (int u = 0; u < o->U; u++) {
      o->acc[i][u] = entry_alloca(o, vec_t(o, k->nodes[i].dtype, o->W), "acc");
      LLVMBuildStore(o->B, red_identity(o, &k->nodes[i]), o->acc[i][u]);
    }
  }
  LLVMValueRef ta = entry_alloca(o, o->i32, "t");
  LLVMBuildStore(o->B, ci32(o, 0), ta);

  LLVMBasicBlockRef mc = block(o, "main.cond"), mb = block(o, "main.body"),
                    rc = block(o, "rest.cond"), rb = block(o, "rest.body"),
                    tc = block(o, "tail.cond"), tb = block(o, "tail.body"),
                    done = block(o, "loop.done");
  LLVMBuildBr(o->B, mc);
  LLVMPositionBuilderAtEnd(o->B, mc);
  LLVMValueRef t = LLVMBuildLoad2(o->B, o->i32, ta, "");
  LLVMBuildCondBr(o->B,
                  LLVMBuildICmp(o->B, LLVMIntSLE,
                                LLVMBuildNSWAdd(o->B, t, ci32(o, main->steps), ""), tfull, ""),
                  mb, rc);
  LLVMPositionBuilderAtEnd(o->B, mb);
  enter_part(o, LM_PART_MAIN, t);
  if (main->mode == LM_SCHED_BLOCK) {
    block_preload(o);
    for (int b = 0; b < main->steps; b++) {
      o->blk = b;
      emit_step(o, b % o->U);
    }
    store_groups(o, block_flush_group);
  } else {
    for (int u = 0; u < main->steps; u++) {
      o->t = LLVMBuildNSWAdd(o->B, t, ci32(o, u), "");
      emit_step(o, u);
    }
  }
  LLVMBuildStore(o->B, LLVMBuildNSWAdd(o->B, t, ci32(o, main->steps), ""), ta);
  LLVMBuildBr(o->B, mc);

  /* the rest: full steps one at a time, still unmasked; guarded
   * straight-line copies, or one loop */
  for (int r = 0; r < rest->copies; r++) {
    LLVMPositionBuilderAtEnd(o->B, rc);
    t = LLVMBuildLoad2(o->B, o->i32, ta, "");
    if (r > 0)
      rb = block(o, "rest.body");
    LLVMBuildCondBr(o->B, LLVMBuildICmp(o->B, LLVMIntSLT, t, tfull, ""), rb, tc);
    LLVMPositionBuilderAtEnd(o->B, rb);
    enter_part(o, LM_PART_REST, t);
    emit_step(o, 0);
    LLVMBuildStore(o->B, LLVMBuildNSWAdd(o->B, t, ci32(o, 1), ""), ta);
    if (rest->loops) {
      LLVMBuildBr(o->B, rc);
    } else {
      LLVMBasicBlockRef next = r + 1 < rest->copies ? block(o, "rest.cond") : tc;
      LLVMBuildBr(o->B, next);
      rc = next;
    }
  }
  if (rest->copies == 0) { /* the main part steps by one: nothing is left over */
    LLVMPositionBuilderAtEnd(o->B, rc);
    LLVMBuildBr(o->B, tc);
    LLVMDeleteBasicBlock(rb);
  }

  /* the masked tail: a loop, or one straight-line step.  The main part and
   * the rest leave t at tfull, so the one step takes tfull itself: with
   * rows of one length its mask is then the same in every row, and LLVM
   * hoists it out of the row loop */
  LLVMPositionBuilderAtEnd(o->B, tc);
  t = tail->loops ? LLVMBuildLoad2(o->B, o->i32, ta, "") : tfull;
  LLVMBuildCondBr(o->B, LLVMBuildICmp(o->B, LLVMIntSLT, t, tmax, ""), tb, done);
  LLVMPositionBuilderAtEnd(o->B, tb);
  enter_part(o, LM_PART_TAIL, t);
  emit_step(o, 0);
  o->mask = NULL;
  if (tail->loops) {
    LLVMBuildStore(o->B, LLVMBuildNSWAdd(o->B, t, ci32(o, 1), ""), ta);
    LLVMBuildBr(o->B, tc);
  } else {
    LLVMBuildBr(o->B, done);
  }

  LLVMPositionBuilderAtEnd(o->B, done);
  o->tally = &o->cnt->part[LM_PART_PACKET];
  for (int r = 0; r < lp->nred; r++)
    finalize_reduction(o, s->reds[lp->red0 + r]);
}

static void store_instances(Lo *o) {
  const lm_kernel *k = o->k;
  for (int i = 0; i < k->nstores; i++) {
    const lm_store *s = &k->stores[i];
    if (s->kind != LM_STORE_INST)
      continue;
    lm_dtype dt = k->params[s->param].dtype;
    LLVMValueRef v = emit_uniform(o, s->value);
    LLVMValueRef base = gep(o, scal_t(o, dt), o->pbuf[s->param], o->p);
    if (lm_sched_inst_contiguous(o->s)) {
      masked_store(o, v, base, (unsigned)lm_dtype_size(dt), o->valid);
      o->cnt->emit_glob_masked_stores++;
      o->tally->maskstore++;
    } else {
      LLVMValueRef lead = LLVMBuildICmp(o->B, LLVMIntEQ, o->svec,
                                        LLVMConstNull(LLVMTypeOf(o->svec)), "");
      scatter(o, v, gep(o, scal_t(o, dt), base, o->gvec),
              (unsigned)lm_dtype_size(dt), LLVMBuildAnd(o->B, lead, o->valid, ""));
      o->cnt->emit_glob_scatters++;
      o->tally->scatter += o->W;
    }
  }
}

/* ---- the entry -------------------------------------------------------- */

static void emit_packet(Lo *o) {
  const lm_kernel *k = o->k;
  int W = o->W, L = o->L, G = o->G;
  LLVMBuilderRef B = o->B;
  o->tally = &o->cnt->part[LM_PART_PACKET];
  LLVMValueRef rem = LLVMBuildSub(B, o->end, o->p, "");
  rem = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, rem, ci64(o, G), ""),
                        rem, ci64(o, G), "");
  LLVMValueRef rem32 = LLVMBuildTrunc(B, rem, o->i32, "");
  o->valid = LLVMBuildICmp(B, LLVMIntSLT, o->gvec, splat(o, rem32, W), "");
  o->rvec = LLVMBuildAdd(B, splat(o, LLVMBuildTrunc(B, o->p, o->i32, ""), W),
                         o->gvec, "");
  LLVMValueRef Nv = splat(o, o->N, W), zero = LLVMConstNull(LLVMTypeOf(Nv));
  LLVMValueRef minlen, maxlen;
  if (k->rowlen_param >= 0) {
    LLVMValueRef base = gep(o, o->i32, o->pbuf[k->rowlen_param], o->p);
    LLVMValueRef len = gather(o, LLVMVectorType(o->i32, (unsigned)W),
                              gep(o, o->i32, base, o->gvec), 4, o->valid);
    o->tally->gather += W;
    len = intr2(o, "llvm.smax", intr2(o, "llvm.smin", len, Nv), zero);
    o->lenv = LLVMBuildSelect(B, o->valid, len, zero, "");
    minlen = intr1(o, "llvm.vector.reduce.smin", o->lenv);
    maxlen = intr1(o, "llvm.vector.reduce.smax", o->lenv);
  } else if (o->s->uniform_rows) { /* one full row per packet */
    o->lenv = Nv;
    minlen = maxlen = o->N;
  } else {
    o->lenv = LLVMBuildSelect(B, o->valid, Nv, zero, "");
    minlen = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntEQ, rem, ci64(o, G), ""),
                             o->N, ci32(o, 0), "");
    maxlen = o->N;
  }
  LLVMValueRef tfull = LLVMBuildSDiv(B, minlen, ci32(o, L), "");
  LLVMValueRef tmax = LLVMBuildSDiv(B, LLVMBuildAdd(B, maxlen, ci32(o, L - 1), ""),
                                    ci32(o, L), "");
  memset(o->uval, 0, sizeof(LLVMValueRef) * (size_t)k->nnodes);
  for (int l = 0; l < k->nloops; l++) {
    o->loop = l;
    eval_uniforms(o, l);
    emit_loop(o, tfull, tmax);
  }
  eval_uniforms(o, k->nloops);
  store_instances(o);
}

static void emit_entry(Lo *o, const char *symbol) {
  const lm_kernel *k = o->k;
  LLVMTypeRef pt[3] = {o->ptr, o->i64, o->i64};
  LLVMTypeRef ft = LLVMFunctionType(o->voidt, pt, 3, 0);
  o->fn = LLVMAddFunction(o->M, symbol, ft);
  unsigned nu = LLVMGetEnumAttributeKindForName("nounwind", 8);
  LLVMAddAttributeAtIndex(o->fn, LLVMAttributeFunctionIndex,
                          LLVMCreateEnumAttribute(o->C, nu, 0));
  /* Prefer the variant's width; allow the ISA's widest vectors, which the
   * calls into vector math of other element types may pass. */
  char width[16], legal[16];
  snprintf(width, sizeof width, "%d", o->W * (int)lm_dtype_size(k->elem) * 8);
  snprintf(legal, sizeof legal, "%d", lm_isa_lanes(o->v->isa, LM_F32, 1) * 32);
  LLVMAddTargetDependentFunctionAttr(o->fn, "min-legal-vector-width", legal);
  LLVMAddTargetDependentFunctionAttr(o->fn, "prefer-vector-width", width);
  int sve = lm_isa_sve_bits(o->v->isa);
  if (sve) {
    /* SVE at a fixed length: vscale = bits / 128 exactly, so LLVM lowers
     * the fixed-length vectors (masked loads, gathers included) to
     * predicated SVE code of that length */
    unsigned vr = LLVMGetEnumAttributeKindForName("vscale_range", 12);
    uint64_t q = (uint64_t)(sve / 128);
    LLVMAddAttributeAtIndex(o->fn, LLVMAttributeFunctionIndex,
                            LLVMCreateEnumAttribute(o->C, vr, q << 32 | q));
  }
  LLVMValueRef args = LLVMGetParam(o->fn, 0), first = LLVMGetParam(o->fn, 1),
               count = LLVMGetParam(o->fn, 2);
  LLVMBasicBlockRef entry = block(o, "entry");
  LLVMPositionBuilderAtEnd(o->B, entry);
  for (int i = 0; i < k->nparams; i++) {
    LLVMValueRef slot = gep(o, o->i64, args, ci64(o, i));
    if (k->params[i].kind == LM_PARAM_BUFFER)
      o->pbuf[i] = LLVMBuildLoad2(o->B, o->ptr, slot, "");
    else
      o->pscal[i] = LLVMBuildLoad2(o->B, o->f64, slot, "");
  }
  for (int s = 0; s < k->nsyms; s++)
    o->dim[s] = LLVMBuildLoad2(o->B, o->i64,
                               gep(o, o->i64, args, ci64(o, k->nparams + s)), "");
  for (int i = 0; i < k->nparams; i++) {
    const lm_param *p = &k->params[i];
    lm_dim d = p->rank == 2 ? p->dims[1] : (lm_dim){-1, 0};
    o->stride[i] = d.sym >= 0 ? LLVMBuildMul(o->B, o->dim[d.sym], ci64(o, d.coef), "")
                              : ci64(o, d.coef);
  }
  LLVMValueRef N64 = k->ncols.sym >= 0
                         ? LLVMBuildMul(o->B, o->dim[k->ncols.sym], ci64(o, k->ncols.coef), "")
                         : ci64(o, k->ncols.coef);
  o->N = LLVMBuildTrunc(o->B, N64, o->i32, "N");
  o->end = LLVMBuildAdd(o->B, first, count, "end");
  o->nslots = LLVMBuildSDiv(o->B, LLVMBuildAdd(o->B, N64, ci64(o, o->L - 1), ""),
                            ci64(o, o->L), "");
  int nsnap = 0;
  for (int i = 0; i < k->nnodes; i++)
    o->snapid[i] = o->snapshot && k->nodes[i].snap ? nsnap++ : -1;
  if (nsnap) {
    LLVMTypeRef st = LLVMFunctionType(o->ptr, &o->i64, 1, 0);
    LLVMValueRef sf = LLVMGetNamedFunction(o->M, "lm_rt_scratch");
    if (!sf)
      sf = LLVMAddFunction(o->M, "lm_rt_scratch", st);
    LLVMValueRef bytes = LLVMBuildMul(
        o->B, o->nslots, ci64(o, (long long)nsnap * o->W * 8), "");
    o->scratch = LLVMBuildCall2(o->B, st, sf, &bytes, 1, "scratch");
  }
  int s[MAX_LANES], g[MAX_LANES];
  for (int i = 0; i < o->W; i++)
    s[i] = i % o->L, g[i] = i / o->L;
  o->svec = const_ivec(o, s, o->W);
  o->gvec = const_ivec(o, g, o->W);

  LLVMValueRef pa = LLVMBuildAlloca(o->B, o->i64, "p");
  LLVMBuildStore(o->B, first, pa);
  LLVMBasicBlockRef pc = block(o, "packet.cond"), pb = block(o, "packet.body"),
                    ex = block(o, "exit");
  LLVMBuildBr(o->B, pc);
  LLVMPositionBuilderAtEnd(o->B, pc);
  o->p = LLVMBuildLoad2(o->B, o->i64, pa, "");
  LLVMBuildCondBr(o->B, LLVMBuildICmp(o->B, LLVMIntSLT, o->p, o->end, ""), pb, ex);
  LLVMPositionBuilderAtEnd(o->B, pb);
  emit_packet(o);
  LLVMBuildStore(o->B, LLVMBuildAdd(o->B, o->p, ci64(o, o->G), ""), pa);
  LLVMBuildBr(o->B, pc);
  LLVMPositionBuilderAtEnd(o->B, ex);
  LLVMBuildRetVoid(o->B);
}

/* fp=relaxed: every floating-point operation of the module may be
 * contracted (a multiply and its add into one FMA, where the target has
 * one), as C's -ffp-contract=fast allows. */
static void allow_contraction(LLVMModuleRef M) {
  for (LLVMValueRef f = LLVMGetFirstFunction(M); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef bb = LLVMGetFirstBasicBlock(f); bb;
         bb = LLVMGetNextBasicBlock(bb))
      for (LLVMValueRef i = LLVMGetFirstInstruction(bb); i;
           i = LLVMGetNextInstruction(i))
        if (LLVMCanValueUseFastMathFlags(i))
          LLVMSetFastMathFlags(i, LLVMGetFastMathFlags(i) |
                                      LLVMFastMathAllowContract);
}

lm_status lm_lower_module(const lm_kernel *k, const lm_variant *v,
                          LLVMContextRef ctx, const char *symbol,
                          LLVMModuleRef *out, lm_counts *counts,
                          lm_error *err) {
  *out = NULL;
  memset(counts, 0, sizeof *counts);
  lm_schedule sch;
  lm_status st = lm_schedule_build(k, v, &sch, err);
  if (st != LM_OK)
    return st;
  k = sch.k; /* the relaxed form for fp=relaxed */
  Lo o = {.k = k, .v = v, .s = &sch, .cnt = counts, .C = ctx, .W = sch.W, .L = sch.L,
          .G = sch.G, .U = sch.U, .snapshot = sch.snapshot};
  o.tally = &counts->part[LM_PART_PACKET];
  o.i1 = LLVMInt1TypeInContext(ctx);
  o.i8 = LLVMInt8TypeInContext(ctx);
  o.i32 = LLVMInt32TypeInContext(ctx);
  o.i64 = LLVMInt64TypeInContext(ctx);
  o.f32 = LLVMFloatTypeInContext(ctx);
  o.f64 = LLVMDoubleTypeInContext(ctx);
  o.ptr = LLVMPointerTypeInContext(ctx, 0);
  o.voidt = LLVMVoidTypeInContext(ctx);
  o.md_priv = LLVMGetMDKindIDInContext(ctx, "lm.priv", 7);
  o.md_glob = LLVMGetMDKindIDInContext(ctx, "lm.glob", 7);
  o.md_blend = LLVMGetMDKindIDInContext(ctx, "lm.blend", 8);
  o.M = LLVMModuleCreateWithNameInContext(k->name, ctx);
  o.B = LLVMCreateBuilderInContext(ctx);
  int nn = k->nnodes > 0 ? k->nnodes : 1, np = k->nparams > 0 ? k->nparams : 1;
  o.pbuf = calloc((size_t)np, sizeof(LLVMValueRef));
  o.pscal = calloc((size_t)np, sizeof(LLVMValueRef));
  o.stride = calloc((size_t)np, sizeof(LLVMValueRef));
  o.dim = calloc(LM_MAX_SYMS, sizeof(LLVMValueRef));
  o.uval = calloc((size_t)nn, sizeof(LLVMValueRef));
  o.memo = calloc((size_t)nn, sizeof(LLVMValueRef));
  o.acc = calloc((size_t)nn, sizeof *o.acc);
  o.snapid = calloc((size_t)nn, sizeof(int));
  o.pre = calloc((size_t)nn, sizeof(LLVMValueRef *));
  o.pend = calloc((size_t)(k->nstores > 0 ? k->nstores : 1), sizeof(LLVMValueRef *));
  for (int i = 0; i < nn; i++)
    o.pre[i] = calloc((size_t)o.W, sizeof(LLVMValueRef));
  for (int i = 0; i < k->nstores; i++)
    o.pend[i] = calloc((size_t)o.W, sizeof(LLVMValueRef));
  emit_entry(&o, symbol);
  if (v->fp == LM_FP_RELAXED)
    allow_contraction(o.M);
  for (int i = 0; i < nn; i++)
    free(o.pre[i]);
  for (int i = 0; i < k->nstores; i++)
    free(o.pend[i]);
  free(o.pre);
  free(o.pend);
  free(o.pbuf);
  free(o.pscal);
  free(o.stride);
  free(o.dim);
  free(o.uval);
  free(o.memo);
  free(o.acc);
  free(o.snapid);
  LLVMDisposeBuilder(o.B);
  lm_schedule_free(&sch);
  *out = o.M;
  return LM_OK;
}
