/* Dynamic counts: what one launch of a variant executes, per cost term.
 *
 * The counts come from the variant's schedule (backend/schedule.h), the
 * one the lowering emits from: its parts (main, rest, tail) with their
 * step modes and masks, each loop's reductions, snapshot writes and store
 * groups, the private-array realization per element type and the vector
 * math calls per operation.  For each loop and part this file walks the
 * tiles the step needs in the lowering's order (demand-driven from the
 * reductions, snapshots and stores; snapshot reads stop the walk), prices
 * each access as the schedule realises it, and multiplies by how many
 * steps of each part a packet runs.  Per-packet work (uniforms, reduction finalisation, per-row
 * stores) and per-launch work (calls, tasks, fork-join) are added on top.
 * Bytes are assigned to the cache level that holds the data they come
 * from: the whole launch's footprint for first touches, one packet's rows
 * for re-reads in later loops, one packet's slots for private arrays. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel/counts.h"
#include "lanemap/backend.h"
#include "lanemap/costmodel.h"

static const char *names[] = {
#define NAME(id, name, doc) name,
    LM_TERMS(NAME)
#undef NAME
};
static const char *docs[] = {
#define DOC(id, name, doc) doc,
    LM_TERMS(DOC)
#undef DOC
};

const char *lm_term_name(lm_term t) { return t < LM_T__COUNT ? names[t] : "?"; }
const char *lm_term_doc(lm_term t) { return t < LM_T__COUNT ? docs[t] : "?"; }
int lm_term_lookup(const char *name) {
  for (int i = 0; i < LM_T__COUNT; i++)
    if (strcmp(names[i], name) == 0)
      return i;
  return -1;
}

/* The model form's revision: bump it when the meaning of a term or the way
 * terms combine changes without the term list changing, or when the way
 * calibration decides which terms a profile uses changes (a cached
 * profile then holds the old decision). */
/* 4: task counts pool claims; 5: splits (static, dynK), the busiest
 * worker's share from lm_variant_cut, parallel calibration rows per worker;
 * 6: the workers' late join; 7: the fork-join round measured, pool claims
 * outside the compute/memory bottleneck; 8: math=ir's erf a rational
 * function (verf_ir), a division by a launch-fixed value not counted per
 * row (vdiv); 9: a wide math call is its routine's wide twin, not the
 * narrow call plus one shared wide_call; 10: the terms on trial decided by
 * the families' paired rise (lm_term_trial_keeps), not the margin alone;
 * 11: fwd_stall, masked private reads of a masked write in flight */
#define LM_MODEL_FORM "form-11"

const char *lm_model_id(void) {
  static _Thread_local char id[9];
  if (!id[0]) {
    uint64_t h = lm_fnv1a(LM_FNV1A_INIT, LM_MODEL_FORM, sizeof LM_MODEL_FORM - 1);
    for (int i = 0; i < LM_T__COUNT; i++)
      h = lm_fnv1a(h, names[i], strlen(names[i]) + 1);
    snprintf(id, sizeof id, "%08x", (unsigned)(h ^ (h >> 32)));
  }
  return id;
}

/* Named default when no fingerprint is at hand: a current x86 server core
 * (48 KiB L1d, 2 MiB L2, 32 MiB shared L3); profiles carry measured sizes. */
void lm_caches_default(lm_caches *c) {
  c->l1 = 48 << 10;
  c->l2 = 2 << 20;
  c->l3 = 32 << 20;
}

typedef struct Cx {
  const lm_kernel *k;
  const lm_schedule *s;
  int W, L, G, snapshot, loop, masked;
  lm_sched_mode mode;
  int part;
  unsigned char *seen;
  int *ev, nev; /* the step's emission order (costmodel/pressure.c) */
  int spans[64][2], nspans;
  double *n;
  double *gb;        /* [buffer] elements gathered or scattered from rows */
  const int *bufof;  /* parameter -> buffer index (-1 for scalars) */
  double *fwd;       /* the tail's masked private reads by loop distance, or NULL */
} Cx;

static int ilog2(int x) {
  int r = 0;
  while (x > 1)
    x >>= 1, r++;
  return r;
}

static int new_span(Cx *c, int param, int row) {
  for (int i = 0; i < c->nspans; i++)
    if (c->spans[i][0] == param && c->spans[i][1] == row)
      return 0;
  if (c->nspans < 64)
    c->spans[c->nspans][0] = param, c->spans[c->nspans++][1] = row;
  return 1;
}

static int is_float_op(const lm_node *nd) {
  return nd->dtype == LM_F32 || nd->dtype == LM_F64;
}

_Static_assert(LM_T_LAST_WMATH - LM_T_FIRST_WMATH == LM_T_LAST_MATH - LM_T_FIRST_MATH,
               "every math term has one wide twin (LM_T_WIDE_MATH)");

int lm_term_math(lm_math m, lm_op op) {
  /* rows: lm_math; columns: exp, log, tanh, erf, sin/cos */
  static const int t[LM_MATH__COUNT][5] = {
      {LM_T_VEXP, LM_T_VLOG, LM_T_VTANH, LM_T_VERF, LM_T_VSINCOS},
      {-1, LM_T_VLOG35, LM_T_VTANH35, -1, LM_T_VSINCOS35},
      {LM_T_VEXPMV, LM_T_VLOGMV, LM_T_VTANHMV, LM_T_VERFMV, LM_T_VSINCOSMV},
      {LM_T_VEXPIR, LM_T_VLOGIR, LM_T_VTANHIR, LM_T_VERFIR, -1},
  };
  lm_op r = lm_vmath_routine(op); /* sigmoid calls exp */
  int col = r == LM_OP_EXP    ? 0
            : r == LM_OP_LOG  ? 1
            : r == LM_OP_TANH ? 2
            : r == LM_OP_ERF  ? 3
            : r == LM_OP_SIN || r == LM_OP_COS ? 4
                                               : -1;
  return (unsigned)m < LM_MATH__COUNT && col >= 0 ? t[m][col] : -1;
}

/* 1 when node nd absorbs a multiply by contraction (fp=relaxed with FMA),
 * saving its operation: one product per add (a*b - c*d is one FMA and one
 * multiply), and not one read back from a snapshot in this loop. */
static int fused(const Cx *c, const lm_node *nd) {
  if (!c->s->contract)
    return 0;
  int id = (int)(nd - c->k->nodes), ops[2] = {nd->a, nd->b};
  for (int i = 0; i < 2; i++) {
    const lm_node *m = ops[i] >= 0 ? &c->k->nodes[ops[i]] : NULL;
    if (m && lm_kernel_contractible(c->k->nodes, id, ops[i]) &&
        !(c->snapshot && m->snap && m->level < c->loop))
      return 1;
  }
  return 0;
}

static void op_cost(Cx *c, const lm_node *nd) {
  double *n = c->n;
  n[LM_T_VOP] -= fused(c, nd);
  double calls = lm_sched_math_calls(c->s, nd->dtype);
  int mt = lm_term_math(c->s->v->math, nd->op);
  switch (nd->op) {
  case LM_OP_DIV: /* the divider is lane-throughput bound: count lanes */
    if (!is_float_op(nd) || lm_sched_div_per_row(c->s, (int)(nd - c->k->nodes)))
      n[LM_T_VDIV] += c->W;
    break;
  case LM_OP_SQRT: n[LM_T_VDIV] += c->W; break;
  case LM_OP_RSQRT:
    if (lm_sched_rsqrt_estimated(c->s, nd->dtype))
      n[LM_T_VOP] += LM_SCHED_RSQRT_OPS;
    else
      n[LM_T_VDIV] += 2 * c->W;
    break;
  case LM_OP_EXP:
  case LM_OP_LOG:
  case LM_OP_TANH:
  case LM_OP_ERF:
  case LM_OP_SIN:
  case LM_OP_COS: n[mt] += calls; break;
  case LM_OP_SIGMOID:
    n[mt] += calls, n[LM_T_VDIV] += c->W, n[LM_T_VOP] += 2;
    break;
  case LM_OP_POWI: {
    int e = abs(nd->ipow), m = 0;
    for (int b = e; b; b >>= 1)
      m += 1 + (b & 1);
    n[LM_T_VOP] += m > 2 ? m - 2 : 0;
    if (nd->ipow < 0)
      n[LM_T_VDIV] += c->W;
    break;
  }
  case LM_OP_MIN:
  case LM_OP_MAX: /* NaN-propagating minimum/maximum: compare, min, blend */
    n[LM_T_VOP] += is_float_op(nd) ? 3 : 1;
    break;
  default: n[LM_T_VOP] += 1;
  }
}

static void priv_read(Cx *c, const lm_node *nd) {
  double *n = c->n;
  lm_priv how = lm_sched_priv(c->s, nd->dtype, NULL);
  if (how == LM_PRIV_GATHER) {
    n[LM_T_GATHER] += c->W;
  } else if (how == LM_PRIV_MASKED && c->masked) {
    n[LM_T_MASKLOAD] += 1;
    /* it reads what a masked store of the same step wrote nd->level's
     * loop ago: store forwarding (lm_cost_counts_fwd) */
    if (c->fwd) {
      int d = c->loop - nd->level;
      c->fwd[d < LM_COST_FWD_LOOPS ? d : LM_COST_FWD_LOOPS - 1] += 1;
    }
  } else {
    n[LM_T_VLOAD] += 1, n[LM_T_VOP] += c->masked;
  }
}

static void priv_write(Cx *c, const lm_node *nd) {
  double *n = c->n;
  lm_priv how = lm_sched_priv(c->s, nd->dtype, NULL);
  if (how == LM_PRIV_GATHER)
    n[LM_T_SCATTER] += c->W;
  else if (!c->masked)
    n[LM_T_VSTORE] += 1;
  else if (how == LM_PRIV_MASKED)
    n[LM_T_MASKSTORE] += 1;
  else
    n[LM_T_BLEND] += 1, n[LM_T_VSTORE] += 1;
}

static void load_cost(Cx *c, const lm_node *nd, int rowwise) {
  double *n = c->n;
  int step = nd->step;
  if (!rowwise && c->L == 1) { /* one column shared by the packet */
    n[LM_T_VOP] += 1;
    return;
  }
  switch (c->mode) {
  case LM_SCHED_CONTIG:
    if (new_span(c, nd->param, rowwise ? 0 : -1))
      n[c->masked ? LM_T_MASKLOAD : LM_T_VLOAD] += step;
    n[LM_T_SHUFFLE] += step > 1;
    break;
  case LM_SCHED_SEG:
    for (int g = 0; g < (rowwise ? c->G : 1); g++)
      if (new_span(c, nd->param, rowwise ? g : -1))
        n[LM_T_SEGLOAD] += 1;
    n[LM_T_SHUFFLE] += (step > 1 ? (rowwise ? c->G : 1) : 0) + (rowwise ? c->G - 1 : 1);
    break;
  case LM_SCHED_BLOCK: /* W row loads (views of one run share them) and
                        * one W x W transpose per W steps */
    if (new_span(c, nd->param, 0))
      n[LM_T_VLOAD] += step;
    n[LM_T_SHUFFLE] += ilog2(c->W) + (step > 1);
    break;
  case LM_SCHED_GATHER:
    n[LM_T_GATHER] += c->W;
    n[LM_T_VOP] += 3; /* lane index arithmetic */
    if (rowwise && c->gb)
      c->gb[c->bufof[nd->param]] += c->W;
    break;
  }
}

static void tile(Cx *c, int id) {
  const lm_node *nd = &c->k->nodes[id];
  if (!nd->tile || c->seen[id])
    return;
  c->seen[id] = 1;
  if (c->snapshot && nd->snap && nd->level < c->loop) {
    priv_read(c, nd);
    c->ev[c->nev++] = id;
    return;
  }
  switch (nd->op) {
  case LM_OP_LOAD_ROW: load_cost(c, nd, 1); break;
  case LM_OP_LOAD_COL: load_cost(c, nd, 0); break;
  case LM_OP_COLIDX: c->n[LM_T_VOP] += c->mode == LM_SCHED_BLOCK ? 1 : 2; break;
  default:
    if (nd->a >= 0) tile(c, nd->a);
    if (nd->b >= 0) tile(c, nd->b);
    if (nd->c >= 0) tile(c, nd->c);
    op_cost(c, nd);
  }
  c->ev[c->nev++] = id;
  if (c->snapshot && nd->snap && nd->level == c->loop) {
    priv_write(c, nd);
    c->ev[c->nev++] = -1 - id;
  }
}

static int is_red(lm_op op) {
  return op == LM_OP_RSUM || op == LM_OP_RMAX || op == LM_OP_RMIN;
}

/* Counts of one step of loop c->loop in c->mode (masked or not): the
 * schedule's reductions, snapshot writes and store groups, in its order. */
static void step_cost(Cx *c, double *out) {
  const lm_kernel *k = c->k;
  const lm_schedule *s = c->s;
  const lm_sched_loop *lp = &s->loop[c->loop];
  memset(c->seen, 0, (size_t)k->nnodes);
  c->nspans = 0;
  c->nev = 0;
  c->n = out;
  for (int r = 0; r < lp->nred; r++) {
    const lm_node *nd = &k->nodes[s->reds[lp->red0 + r]];
    tile(c, nd->a);
    c->ev[c->nev++] = -1 - nd->a;
    out[LM_T_VOP] += 1 + c->masked + (nd->op != LM_OP_RSUM ? 2 : 0) -
                     (c->masked ? 0 : fused(c, nd)); /* a masked sum selects first */
  }
  for (int i = 0; i < lp->nsnap; i++)
    tile(c, s->snaps[lp->snap0 + i]);
  for (int g = 0; g < lp->ngrp; g++) {
    const lm_sched_group *grp = &s->groups[lp->grp0 + g];
    int nv = grp->n, step = grp->step;
    for (int m = 0; m < nv; m++)
      tile(c, k->stores[s->members[grp->first + m]].value);
    for (int m = 0; m < nv; m++)
      c->ev[c->nev++] = -1 - k->stores[s->members[grp->first + m]].value;
    switch (c->mode) {
    case LM_SCHED_CONTIG:
      out[c->masked || nv < step ? LM_T_MASKSTORE : LM_T_VSTORE] += step;
      out[LM_T_SHUFFLE] += step > 1 ? nv : 0;
      break;
    case LM_SCHED_SEG:
      out[nv < step ? LM_T_MASKSTORE : LM_T_SEGSTORE] += c->G;
      out[LM_T_SHUFFLE] += c->G * nv;
      break;
    case LM_SCHED_BLOCK:
      out[nv < step ? LM_T_MASKSTORE : LM_T_VSTORE] += step;
      out[LM_T_SHUFFLE] += nv * ilog2(c->W) + (step > 1 ? nv : 0);
      break;
    case LM_SCHED_GATHER:
      out[LM_T_SCATTER] += (double)c->W * nv;
      if (c->gb)
        c->gb[c->bufof[grp->param]] += (double)c->W * nv;
      break;
    }
  }
  out[c->masked ? LM_T_MSTEP : LM_T_STEP] += 1;
  if (c->masked)
    out[LM_T_VOP] += 2; /* lane columns and the compare */
  out[LM_T_SPILL] += lm_cost_spills(s, c->loop, c->part, c->ev, c->nev, NULL);
}

/* Which levels serve the bytes of a working set of ws bytes.  A level of
 * c bytes holds min(1, c/ws) of it (the hit fraction of a cyclic sweep
 * under random replacement, which the adaptive replacement of current
 * caches approaches better than LRU's all-or-nothing); each level serves
 * what it holds and the level above does not.  L1's share has no term:
 * its traffic is the load and store operations themselves. */
typedef struct Split {
  double l2, l3, dram;
} Split;

static Split split_of(int64_t ws, const lm_caches *cc) {
  Split s = {0, 0, 0};
  if (ws <= cc->l1)
    return s;
  double inv = 1 / (double)ws;
  double h1 = (double)cc->l1 * inv, h2 = fmin(1, (double)cc->l2 * inv),
         h3 = fmin(1, (double)cc->l3 * inv);
  s.l2 = h2 - h1;
  s.l3 = h3 - h2;
  s.dram = 1 - h3;
  return s;
}

static int is_rowdim(lm_dim d) { return d.sym == 0 && d.coef == 1; }

/* The counts of one step of each part, for every loop. */
static void part_costs(Cx *c, lm_cost_counts *pl) {
  const lm_schedule *s = c->s;
  double *out[3] = {pl->step_main, pl->step_rest, pl->step_tail};
  double *gb[3] = {pl->gather_main, pl->gather_rest, pl->gather_tail};
  for (int l = 0; l < s->nloops; l++)
    for (int p = LM_PART_MAIN; p <= LM_PART_TAIL; p++) {
      c->loop = l;
      c->part = p;
      c->mode = s->part[p].mode;
      c->masked = s->part[p].masked;
      c->gb = gb[p];
      c->fwd = p == LM_PART_TAIL ? pl->fwd : NULL;
      step_cost(c, out[p]);
    }
  c->gb = NULL;
  c->fwd = NULL;
  for (int p = 0; p < LM_PART__COUNT; p++)
    pl->copies[p] = s->part[p].steps * s->part[p].copies;
}

/* Per-packet work: uniforms, instance loads and stores, row lengths. */
static void packet_costs(Cx *c, lm_cost_counts *pl) {
  const lm_kernel *k = c->k;
  int contiguous = lm_sched_inst_contiguous(c->s);
  c->n = pl->packet;
  for (int i = 0; i < k->nnodes; i++) {
    const lm_node *nd = &k->nodes[i];
    if (nd->tile || is_red(nd->op))
      continue;
    if (nd->op == LM_OP_LOAD_INST)
      pl->packet[contiguous ? LM_T_MASKLOAD : LM_T_GATHER] += contiguous ? 1 : c->W;
    else if (nd->a >= 0)
      op_cost(c, nd);
  }
  for (int i = 0; i < k->nstores; i++)
    if (k->stores[i].kind == LM_STORE_INST)
      pl->packet[contiguous ? LM_T_MASKSTORE : LM_T_SCATTER] += contiguous ? 1 : c->W;
  if (k->rowlen_param >= 0)
    pl->packet[LM_T_GATHER] += c->W;
  pl->packet[LM_T_PACKET] += 1;
}

static double step_uops(const double *step, int nloops);

lm_status lm_cost_counts_build(const lm_kernel *k, const lm_variant *v,
                               lm_cost_counts *pl, lm_error *err) {
  memset(pl, 0, sizeof *pl);
  int nbuf = 0;
  for (int p = 0; p < k->nparams; p++)
    nbuf += k->params[p].kind == LM_PARAM_BUFFER;
  if (nbuf > LM_COST_MAX_BUFS)
    return lm_error_set(err, LM_EINPUT, "kernel %s: %d buffers, the cost model counts at most %d",
                        k->name, nbuf, LM_COST_MAX_BUFS);
  lm_schedule sch;
  lm_status st = lm_schedule_build(k, v, &sch, err);
  if (st != LM_OK)
    return st;
  k = sch.k; /* the relaxed form for fp=relaxed */
  Cx c = {.k = k, .s = &sch, .W = sch.W, .L = sch.L, .G = sch.G, .snapshot = sch.snapshot};
  pl->rule = sch.rule;
  pl->W = sch.W, pl->L = sch.L, pl->G = sch.G, pl->U = sch.U, pl->per = sch.per;
  pl->nloops = k->nloops;
  pl->ncols = k->ncols;
  c.seen = calloc((size_t)(k->nnodes > 0 ? k->nnodes : 1), 1);
  c.ev = malloc(sizeof *c.ev * (size_t)(3 * k->nnodes + k->nstores + 8));
  int *bufof = malloc(sizeof *bufof * (size_t)(k->nparams > 0 ? k->nparams : 1));
  if (!c.seen || !c.ev || !bufof) {
    free(c.seen);
    free(c.ev);
    free(bufof);
    lm_schedule_free(&sch);
    return lm_error_set(err, LM_ESYS, "cost model: out of memory");
  }
  for (int p = 0, b = 0; p < k->nparams; p++)
    bufof[p] = k->params[p].kind == LM_PARAM_BUFFER ? b++ : -1;
  c.bufof = bufof;
  part_costs(&c, pl);
  /* a masked step's instructions, each priced beyond its unmasked form
   * (mask_ins): the same instructions wide512 counts */
  for (int i = 0; i < LM_COST_NWIDE_INS; i++)
    pl->step_tail[LM_T_MASKI] += pl->step_tail[lm_cost_wide_ins[i]];
  for (int l = 0; l < sch.nloops; l++)
    pl->nred += sch.loop[l].nred;
  pl->uops_main = step_uops(pl->step_main, sch.nloops);
  pl->uops_tail = step_uops(pl->step_tail, sch.nloops);
  packet_costs(&c, pl);

  /* which loops read each row buffer from memory (not from a snapshot) */
  unsigned reads[LM_COST_MAX_BUFS] = {0};
  for (int l = 0; l < sch.nloops; l++)
    for (int i = 0; i < k->nnodes; i++) {
      const lm_node *nd = &k->nodes[i];
      if (sch.loop[l].need[i] && nd->op == LM_OP_LOAD_ROW && bufof[nd->param] >= 0 &&
          !(sch.snapshot && nd->snap && nd->level < l))
        reads[bufof[nd->param]] |= 1u << (l < 30 ? l : 30);
    }
  for (int p = 0; p < k->nparams; p++) {
    const lm_param *pp = &k->params[p];
    if (pp->kind != LM_PARAM_BUFFER)
      continue;
    int b = pl->nbuf++;
    pl->buf[b].kind = pp->rank == 2 ? LM_CB_ROWS : is_rowdim(pp->dims[0]) ? LM_CB_PERROW : LM_CB_PERCOL;
    pl->buf[b].rank = pp->rank;
    pl->buf[b].is_output = pp->is_output;
    pl->buf[b].nloads = __builtin_popcount(reads[b]);
    pl->buf[b].dims[0] = pp->dims[0];
    pl->buf[b].dims[1] = pp->dims[1];
    pl->buf[b].dsize = (double)lm_dtype_size(pp->dtype);
  }
  /* butterfly stage s exchanges lanes i and i^s: it crosses a 128-bit lane
   * when s elements span 16 bytes or more */
  double esize = (double)lm_dtype_size(k->elem);
  for (int st = c.L / 2; st >= 1; st /= 2)
    pl->nred_cross += st * esize >= 16;
  /* vectors wider than the target's plain register: AVX-512's zmm, a NEON
   * pair (the extra instructions: wide512; the math calls: the wide twins) */
  pl->wide = c.W * esize > lm_isa_base_bytes(v->isa);
  int nsnap = 0;
  for (int l = 0; l < sch.nloops; l++)
    nsnap += sch.loop[l].nsnap;
  pl->privrow = (double)nsnap * c.W * (double)lm_dtype_size(k->elem);
  free(c.seen);
  free(c.ev);
  free(bufof);
  lm_schedule_free(&sch);
  return LM_OK;
}

/* The stalls of masked private reads at a shape: a full packet's tail step
 * reads a loop's slot d loops after writing it, with d (full + tail) - 1
 * steps between, the full ones counted; a partial packet runs every step
 * masked, S per loop, with d S - 1 between (counts.h, LM_COST_FWD_UOPS). */
static double fwd_weight(double uops) {
  double w = 1 - uops / LM_COST_FWD_UOPS;
  return w > 0 ? w : 0;
}

double lm_cost_counts_fwd(const lm_cost_counts *pl, const lm_sched_steps *st) {
  double n = 0;
  for (int d = 1; d < LM_COST_FWD_LOOPS; d++) {
    if (!pl->fwd[d])
      continue;
    double full = fmax(0, d * (st->full + st->tail) - 1 - (d - 1) * st->tail);
    double tails = (d - 1) * st->tail;
    n += pl->fwd[d] *
         (st->Pf * st->tail * fwd_weight(full * pl->uops_main + tails * pl->uops_tail) +
          (st->P - st->Pf) * st->S * fwd_weight((d * st->S - 1) * pl->uops_tail));
  }
  return n;
}

/* Instructions of one step (summed over loops in *step), per loop. */
static double step_uops(const double *step, int nloops) {
  static const lm_term ins[] = {LM_T_VOP,      LM_T_VLOAD,     LM_T_VSTORE, LM_T_SEGLOAD,
                                LM_T_SEGSTORE, LM_T_MASKLOAD,  LM_T_MASKSTORE, LM_T_BLEND,
                                LM_T_SHUFFLE,  LM_T_GATHER,    LM_T_SCATTER};
  double u = 0;
  for (size_t i = 0; i < sizeof ins / sizeof ins[0]; i++)
    u += step[ins[i]];
  for (int t = LM_T_FIRST_MATH; t <= LM_T_LAST_MATH; t++)
    u += LM_COST_FWD_CALL_UOPS * step[t];
  return u / (nloops > 0 ? nloops : 1);
}

/* L1 geometry: x86 L1 data caches are virtually indexed within a 4 KiB
 * page (sets x 64-byte lines = 4096), so their ways are size / 4096
 * (32 KiB: 8, 48 KiB: 12).  The most distinct lines of one set that G
 * rows at `stride` bytes occupy at one column: */
static int alias_ways(const lm_caches *cc) {
  int64_t w = cc->l1 / 4096;
  return w < 1 ? 1 : w > 64 ? 64 : (int)w;
}

static int rows_per_set(int G, int64_t stride) {
  if (G > 64)
    G = 64;
  if (stride >= 64 && stride % 4096 == 0)
    return G; /* every row in the same set */
  int cnt[64] = {0}, mx = 0;
  int64_t prev = -1;
  for (int g = 0; g < G; g++) {
    int64_t line = ((int64_t)g * stride) >> 6; /* rows closer than a line share it */
    if (line == prev)
      continue;
    prev = line;
    int set = (int)(line & 63);
    mx = ++cnt[set] > mx ? cnt[set] : mx;
  }
  return mx;
}

static int64_t dim_at(lm_dim d, const lm_shape *s) {
  return d.sym < 0 ? d.coef : d.coef * s->dims[d.sym];
}

void lm_cost_counts_steps(const lm_cost_counts *pl, const lm_shape *s,
                          const lm_rowstats *rows, lm_sched_steps *st) {
  double rowlen[2];
  if (rows)
    rowlen[0] = rows->mean_len, rowlen[1] = rows->mean_group_max[ilog2(pl->G)];
  lm_sched_at(&pl->rule, s->dims[0], dim_at(pl->ncols, s), rows ? rowlen : NULL, st);
}

/* gathers whose rows alias in L1: the G rows one gather touches, at the
 * row stride, fall into more lines of one L1 set than it has ways, so the
 * lines are evicted before the next column reuses them */
double lm_cost_counts_alias(const lm_cost_counts *pl, const lm_shape *s, const lm_caches *caches,
                          const lm_sched_steps *st) {
  double a = 0;
  int ways = alias_ways(caches);
  for (int b = 0; b < pl->nbuf; b++) {
    if (pl->buf[b].kind != LM_CB_ROWS ||
        !(pl->gather_main[b] || pl->gather_rest[b] || pl->gather_tail[b]))
      continue;
    int64_t stride = dim_at(pl->buf[b].dims[1], s) * (int64_t)pl->buf[b].dsize;
    if (rows_per_set(pl->G, stride) > ways)
      a += st->Pf * (st->main * pl->gather_main[b] + st->rest * pl->gather_rest[b] +
                     st->tail * pl->gather_tail[b]);
    /* the partial packet gathers from the rows that exist */
    int left = (int)(st->R - (int64_t)st->Pf * pl->G);
    if (st->P > st->Pf && rows_per_set(left, stride) > ways)
      a += (st->P - st->Pf) * st->S * pl->gather_tail[b];
  }
  return a;
}

/* bytes by level: first touches from the launch's footprint, re-reads from
 * one packet's rows, private slots and per-column vectors beside them */
void lm_cost_counts_bytes(const lm_cost_counts *pl, const lm_shape *s, const lm_caches *caches,
                        const lm_sched_steps *st, double lv[3], double *total_out,
                        double *footprint_out) {
  const int G = pl->G;
  int64_t footprint = 0, rowbytes = 0, colbytes = 0;
  double bytes[LM_COST_MAX_BUFS];
  for (int b = 0; b < pl->nbuf; b++) {
    int64_t cnt = 1;
    for (int i = 0; i < pl->buf[b].rank; i++)
      cnt *= dim_at(pl->buf[b].dims[i], s);
    int64_t by = cnt * (int64_t)pl->buf[b].dsize;
    footprint += by;
    bytes[b] = (double)by;
    if (pl->buf[b].kind == LM_CB_ROWS && (pl->buf[b].nloads || pl->buf[b].is_output))
      rowbytes += dim_at(pl->buf[b].dims[1], s) * (int64_t)pl->buf[b].dsize;
    if (pl->buf[b].kind == LM_CB_PERCOL && pl->buf[b].rank == 1)
      colbytes += by;
  }
  Split first_lv = split_of(footprint / (pl->rule.workers > 1 ? pl->rule.workers : 1), caches);
  Split packet_lv = split_of(rowbytes * G, caches);
  double privbytes = ceil((double)st->N / pl->L) * pl->privrow;
  Split priv_lv = split_of((int64_t)privbytes + rowbytes * G, caches);
  Split col_lv = split_of(colbytes + rowbytes * G, caches);
  double density = st->density, P = st->P;
  double total = 0; /* every byte, L1-served ones included */
  lv[0] = lv[1] = lv[2] = 0;
#define ADD_BYTES(sp, x)                                                        \
  (lv[0] += (x) * (sp).l2, lv[1] += (x) * (sp).l3, lv[2] += (x) * (sp).dram, total += (x))
  for (int b = 0; b < pl->nbuf; b++) {
    double by = bytes[b];
    switch (pl->buf[b].kind) {
    case LM_CB_ROWS:
      by *= density;
      if (pl->buf[b].is_output) {
        ADD_BYTES(first_lv, by);
      } else if (pl->buf[b].nloads > 0) {
        ADD_BYTES(first_lv, by);
        ADD_BYTES(packet_lv, by * (pl->buf[b].nloads - 1));
      }
      break;
    case LM_CB_PERROW: ADD_BYTES(first_lv, by); break; /* per-row values */
    case LM_CB_PERCOL: ADD_BYTES(col_lv, by * P * pl->nloops); break; /* per packet */
    }
  }
  /* private arrays: written once, read by each later loop (up to nloops-1) */
  double pb = P * privbytes * (pl->nloops > 1 ? pl->nloops : 1) * density;
  ADD_BYTES(priv_lv, pb);
#undef ADD_BYTES
  *total_out = total;
  *footprint_out = (double)footprint;
}

/* The instructions of code wider than the target's register (wide512:
 * AVX-512's zmm, NEON's pairs); its math calls are priced by each
 * routine's wide twin (LM_T_WIDE_MATH). */
const lm_term lm_cost_wide_ins[LM_COST_NWIDE_INS] = {
    LM_T_VOP,      LM_T_VLOAD,    LM_T_VSTORE, LM_T_SEGLOAD, LM_T_SEGSTORE,
    LM_T_MASKLOAD, LM_T_MASKSTORE, LM_T_BLEND, LM_T_SHUFFLE, LM_T_HRED};

void lm_cost_counts_eval(const lm_cost_counts *pl, const lm_shape *s,
                       const lm_caches *caches, const lm_rowstats *rows,
                       lm_features *out) {
  lm_caches cdef;
  if (!caches) {
    lm_caches_default(&cdef);
    caches = &cdef;
  }
  lm_sched_steps st;
  lm_cost_counts_steps(pl, s, rows, &st);
  const double P = st.P, Pf = st.Pf, S = st.S;
  double *n = out->n;
  for (int t = 0; t < LM_T__COUNT; t++)
    n[t] = Pf * (st.main * pl->step_main[t] + st.rest * pl->step_rest[t] +
                 st.tail * pl->step_tail[t]) +
           (P - Pf) * S * pl->step_tail[t] + P * pl->packet[t];
  /* reduction finalisation: accumulators combined, then log2(L) butterflies */
  n[LM_T_VOP] += P * (pl->U - 1) * pl->nred;
  n[LM_T_HRED] += P * ilog2(pl->L) * pl->nred;
  n[LM_T_HREDX] += P * pl->nred_cross * pl->nred;
  /* width: what a 512-bit instruction costs beyond its 256-bit form
   * (port and frequency effects), on the same counts; a wide math call is
   * its routine's wide twin instead */
  if (pl->wide) {
    for (int i = 0; i < LM_COST_NWIDE_INS; i++)
      n[LM_T_WIDE] += n[lm_cost_wide_ins[i]];
    for (int t = LM_T_FIRST_MATH; t <= LM_T_LAST_MATH; t++)
      n[LM_T_WIDE_MATH(t)] = n[t], n[t] = 0;
  }
  out->steps_main = Pf * st.full * pl->nloops;
  out->steps_tail = (Pf * st.tail + (P - Pf) * S) * pl->nloops;
  out->packets = P;
  out->par = pl->rule.workers > 1 ? st.par : 1;
  out->participants = st.participants;
  out->dynamic = st.dynamic;
  out->density = st.density;
  n[LM_T_GALIAS] += lm_cost_counts_alias(pl, s, caches, &st);
  n[LM_T_FWD] += lm_cost_counts_fwd(pl, &st);
  /* launch structure */
  n[LM_T_CALL] += st.calls;
  if (pl->rule.workers > 1 && st.tasks > 1) /* one task runs inline, without the pool */
    n[LM_T_TASK] += st.claims, n[LM_T_FORK] += 1;
  double lv[3];
  lm_cost_counts_bytes(pl, s, caches, &st, lv, &out->bytes_total, &out->footprint);
  n[LM_T_B_L2] += lv[0];
  n[LM_T_B_L3] += lv[1];
  n[LM_T_B_DRAM] += lv[2];
}

lm_status lm_cost_features(const lm_kernel *k, const lm_variant *v,
                           const lm_shape *s, const lm_caches *caches,
                           const lm_rowstats *rows, lm_features *out,
                           lm_error *err) {
  memset(out, 0, sizeof *out);
  lm_cost_counts pl;
  if (lm_cost_counts_build(k, v, &pl, err) != LM_OK)
    return LM_EINPUT;
  lm_cost_counts_eval(&pl, s, caches, rows, out);
  return LM_OK;
}

lm_status lm_cost_static_spills(const lm_kernel *k, const lm_variant *v,
                                double *out, lm_error *err) {
  *out = 0;
  lm_cost_counts pl;
  if (lm_cost_counts_build(k, v, &pl, err) != LM_OK)
    return LM_EINPUT;
  *out = pl.copies[LM_PART_MAIN] * pl.step_main[LM_T_SPILL] +
         pl.copies[LM_PART_REST] * pl.step_rest[LM_T_SPILL] +
         pl.copies[LM_PART_TAIL] * pl.step_tail[LM_T_SPILL];
  return LM_OK;
}
