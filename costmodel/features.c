/* Dynamic counts: what one launch of a variant executes, per cost term.
 *
 * This file mirrors the lowering's decisions without generating code.  For
 * each column loop it walks the tiles the loop needs the way the lowering
 * does (demand-driven from the loop's reductions, snapshots and stores;
 * snapshot reads stop the walk), once for an unmasked main step and once
 * for a masked tail step, and multiplies by how many of each a packet
 * runs.  Per-packet work (uniforms, reduction finalisation, per-row
 * stores) and per-launch work (calls, tasks, fork-join) are added on top.
 * Bytes are assigned to the cache level that holds the data they come
 * from: the whole launch's footprint for first touches, one packet's rows
 * for re-reads in later loops, one packet's slots for private arrays. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* Named default when no fingerprint is at hand: a current x86 server core
 * (48 KiB L1d, 2 MiB L2, 32 MiB shared L3); profiles carry measured sizes. */
void lm_caches_default(lm_caches *c) {
  c->l1 = 48 << 10;
  c->l2 = 2 << 20;
  c->l3 = 32 << 20;
}

/* Accumulators per reduction, as in backend/lower.c. */
#define ACC_CONTIG 4
#define ACC_SEGMENT 2
#define ACC_GATHER 1

typedef enum Mode { MODE_CONTIG, MODE_SEG, MODE_GATHER, MODE_BLOCK } Mode;

typedef struct Cx {
  const lm_kernel *k;
  const lm_variant *v;
  int W, L, G, U, snapshot, loop, masked;
  Mode mode;
  unsigned char *seen;
  int spans[64][2], nspans;
  double *n;
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

static void op_cost(Cx *c, const lm_node *nd) {
  double *n = c->n;
  switch (nd->op) {
  case LM_OP_DIV: /* the divider is lane-throughput bound: count lanes */
  case LM_OP_SQRT: n[LM_T_VDIV] += c->W; break;
  case LM_OP_RSQRT: n[LM_T_VDIV] += 2 * c->W; break;
  case LM_OP_EXP: n[LM_T_VEXP] += 1; break;
  case LM_OP_LOG: n[LM_T_VLOG] += 1; break;
  case LM_OP_TANH: n[LM_T_VTANH] += 1; break;
  case LM_OP_ERF: n[LM_T_VERF] += 1; break;
  case LM_OP_SIN:
  case LM_OP_COS: n[LM_T_VSINCOS] += 1; break;
  case LM_OP_SIGMOID:
    n[LM_T_VEXP] += 1, n[LM_T_VDIV] += c->W, n[LM_T_VOP] += 2;
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
  int narrow = nd->dtype == LM_BOOL;
  lm_priv how = narrow ? LM_PRIV_GATHER : c->v->priv;
  if (how == LM_PRIV_GATHER)
    n[LM_T_GATHER] += c->W;
  else if (how == LM_PRIV_MASKED && c->masked)
    n[LM_T_MASKLOAD] += 1;
  else
    n[LM_T_VLOAD] += 1, n[LM_T_VOP] += c->masked;
}

static void priv_write(Cx *c, const lm_node *nd) {
  double *n = c->n;
  int narrow = nd->dtype == LM_BOOL;
  lm_priv how = narrow ? LM_PRIV_GATHER : c->v->priv;
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
  case MODE_CONTIG:
    if (new_span(c, nd->param, rowwise ? 0 : -1))
      n[c->masked ? LM_T_MASKLOAD : LM_T_VLOAD] += step;
    n[LM_T_SHUFFLE] += step > 1;
    break;
  case MODE_SEG:
    for (int g = 0; g < (rowwise ? c->G : 1); g++)
      if (new_span(c, nd->param, rowwise ? g : -1))
        n[LM_T_SEGLOAD] += 1;
    n[LM_T_SHUFFLE] += (step > 1 ? (rowwise ? c->G : 1) : 0) + (rowwise ? c->G - 1 : 1);
    break;
  case MODE_BLOCK: /* W row loads and one W x W transpose per W steps */
    n[LM_T_VLOAD] += step;
    n[LM_T_SHUFFLE] += ilog2(c->W) + (step > 1);
    break;
  case MODE_GATHER:
    n[LM_T_GATHER] += c->W;
    n[LM_T_VOP] += 3; /* lane index arithmetic */
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
    return;
  }
  switch (nd->op) {
  case LM_OP_LOAD_ROW: load_cost(c, nd, 1); break;
  case LM_OP_LOAD_COL: load_cost(c, nd, 0); break;
  case LM_OP_COLIDX: c->n[LM_T_VOP] += c->mode == MODE_BLOCK ? 1 : 2; break;
  default:
    if (nd->a >= 0) tile(c, nd->a);
    if (nd->b >= 0) tile(c, nd->b);
    if (nd->c >= 0) tile(c, nd->c);
    op_cost(c, nd);
  }
  if (c->snapshot && nd->snap && nd->level == c->loop)
    priv_write(c, nd);
}

static int is_red(lm_op op) {
  return op == LM_OP_RSUM || op == LM_OP_RMAX || op == LM_OP_RMIN;
}

/* Counts of one step of loop c->loop in c->mode (masked or not). */
static void step_cost(Cx *c, double *out) {
  const lm_kernel *k = c->k;
  memset(c->seen, 0, (size_t)k->nnodes);
  c->nspans = 0;
  c->n = out;
  for (int i = 0; i < k->nnodes; i++) {
    const lm_node *nd = &k->nodes[i];
    if (is_red(nd->op) && nd->nuses > 0 && k->nodes[nd->a].level == c->loop) {
      tile(c, nd->a);
      out[LM_T_VOP] += 1 + c->masked + (nd->op != LM_OP_RSUM ? 2 : 0);
    }
  }
  if (c->snapshot)
    for (int i = 0; i < k->nnodes; i++)
      if (k->nodes[i].snap && k->nodes[i].level == c->loop)
        tile(c, i);
  int done[256] = {0};
  for (int i = 0; i < k->nstores && i < 256; i++) {
    const lm_store *s = &k->stores[i];
    if (done[i] || s->kind != LM_STORE_ROW || s->level != c->loop)
      continue;
    int nv = 0;
    for (int j = i; j < k->nstores && j < 256; j++) {
      const lm_store *t = &k->stores[j];
      if (!done[j] && t->kind == LM_STORE_ROW && t->level == c->loop &&
          t->param == s->param && t->step == s->step) {
        done[j] = 1;
        tile(c, t->value);
        nv++;
      }
    }
    int step = s->step;
    switch (c->mode) {
    case MODE_CONTIG:
      out[c->masked || nv < step ? LM_T_MASKSTORE : LM_T_VSTORE] += step;
      out[LM_T_SHUFFLE] += step > 1 ? nv : 0;
      break;
    case MODE_SEG:
      out[nv < step ? LM_T_MASKSTORE : LM_T_SEGSTORE] += c->G;
      out[LM_T_SHUFFLE] += c->G * nv;
      break;
    case MODE_BLOCK:
      out[nv < step ? LM_T_MASKSTORE : LM_T_VSTORE] += step;
      out[LM_T_SHUFFLE] += nv * ilog2(c->W) + (step > 1 ? nv : 0);
      break;
    case MODE_GATHER: out[LM_T_SCATTER] += (double)c->W * nv; break;
    }
  }
  out[c->masked ? LM_T_MSTEP : LM_T_STEP] += 1;
  if (c->masked)
    out[LM_T_VOP] += 2; /* lane columns and the compare */
}

/* The term of the level that serves a working set; LM_T__COUNT for L1,
 * whose traffic is the load and store operations themselves. */
static void level_of(int64_t bytes, const lm_caches *cc, lm_term *t) {
  *t = bytes <= cc->l1 ? LM_T__COUNT : bytes <= cc->l2 ? LM_T_B_L2
       : bytes <= cc->l3 ? LM_T_B_L3 : LM_T_B_DRAM;
}

lm_status lm_cost_features(const lm_kernel *k, const lm_variant *v,
                           const lm_shape *s, const lm_caches *caches,
                           const lm_rowstats *rows, lm_features *out,
                           lm_error *err) {
  memset(out, 0, sizeof *out);
  if (lm_variant_check(k, v, err) != LM_OK)
    return LM_EINPUT;
  lm_caches cdef;
  if (!caches) {
    lm_caches_default(&cdef);
    caches = &cdef;
  }
  Cx c = {.k = k, .v = v, .W = v->w, .L = v->l, .snapshot = v->phase == LM_PHASE_SNAPSHOT};
  c.G = c.W / c.L;
  c.U = c.L == c.W ? ACC_CONTIG
        : c.L == 1 ? (v->glob == LM_GLOB_TRANSPOSE ? ACC_CONTIG : ACC_GATHER)
                   : ACC_SEGMENT;
  c.seen = calloc((size_t)(k->nnodes > 0 ? k->nnodes : 1), 1);
  int64_t R = s->dims[0], N = lm_dim_eval(k->ncols, s);
  double P = (double)((R + c.G - 1) / c.G), Pf = (double)(R / c.G);
  double len = rows ? rows->mean_len : (double)N;
  double glen = rows ? rows->mean_group_max[ilog2(c.G)] : (double)N;
  double S = ceil(glen / c.L); /* steps per packet */
  int blockmode = c.L == 1 && v->glob == LM_GLOB_TRANSPOSE;
  int per = blockmode ? c.W : c.U;
  double minlen = rows ? (c.G == 1 ? len : 0) : (double)N;
  double full_steps = floor(minlen / c.L);
  double main_steps = floor(full_steps / per) * per;
  double rest_steps = full_steps - main_steps;
  double tail_steps = S - full_steps;
  double *n = out->n;
  for (int l = 0; l < k->nloops; l++) {
    c.loop = l;
    double mainc[LM_T__COUNT] = {0}, restc[LM_T__COUNT] = {0}, tailc[LM_T__COUNT] = {0};
    c.mode = c.L == c.W ? MODE_CONTIG : blockmode ? MODE_BLOCK
             : v->glob == LM_GLOB_TRANSPOSE ? MODE_SEG : MODE_GATHER;
    c.masked = 0;
    step_cost(&c, mainc);
    if (blockmode)
      c.mode = MODE_GATHER;
    step_cost(&c, restc);
    c.mode = c.L == c.W ? MODE_CONTIG : MODE_GATHER;
    c.masked = 1;
    step_cost(&c, tailc);
    for (int t = 0; t < LM_T__COUNT; t++)
      n[t] += Pf * (main_steps * mainc[t] + rest_steps * restc[t] + tail_steps * tailc[t]) +
              (P - Pf) * S * tailc[t];
    /* reduction finalisation per packet */
    for (int i = 0; i < k->nnodes; i++) {
      const lm_node *nd = &k->nodes[i];
      if (is_red(nd->op) && nd->nuses > 0 && k->nodes[nd->a].level == l) {
        n[LM_T_VOP] += P * (c.U - 1);
        n[LM_T_HRED] += P * ilog2(c.L);
      }
    }
  }
  out->steps_main = Pf * full_steps * k->nloops;
  out->steps_tail = (Pf * tail_steps + (P - Pf) * S) * k->nloops;
  out->packets = P;
  /* per-packet uniforms and per-row stores */
  for (int i = 0; i < k->nnodes; i++) {
    const lm_node *nd = &k->nodes[i];
    if (nd->tile || is_red(nd->op))
      continue;
    double tmp[LM_T__COUNT] = {0};
    c.n = tmp;
    if (nd->op == LM_OP_LOAD_INST)
      tmp[c.L == 1 ? LM_T_MASKLOAD : LM_T_GATHER] += c.L == 1 ? 1 : c.W;
    else if (nd->a >= 0)
      op_cost(&c, nd);
    for (int t = 0; t < LM_T__COUNT; t++)
      n[t] += P * tmp[t];
  }
  for (int i = 0; i < k->nstores; i++)
    if (k->stores[i].kind == LM_STORE_INST)
      n[c.L == 1 ? LM_T_MASKSTORE : LM_T_SCATTER] += P * (c.L == 1 ? 1 : c.W);
  if (k->rowlen_param >= 0)
    n[LM_T_GATHER] += P * c.W;
  n[LM_T_PACKET] += P;

  /* launch structure */
  double tasks = v->workers > 1 ? ceil((double)R / (double)v->grain) : 1;
  n[LM_T_CALL] += tasks;
  if (v->workers > 1)
    n[LM_T_TASK] += tasks, n[LM_T_FORK] += 1;

  /* bytes by level */
  int64_t footprint = 0, rowbytes = 0;
  int reads[64] = {0};
  for (int p = 0; p < k->nparams; p++)
    if (k->params[p].kind == LM_PARAM_BUFFER)
      footprint += lm_param_count(k, p, s) * (int64_t)lm_dtype_size(k->params[p].dtype);
  double density = N > 0 ? len / (double)N : 1;
  for (int l = 0; l < k->nloops; l++) {
    memset(c.seen, 0, (size_t)k->nnodes);
    c.loop = l;
    c.mode = MODE_CONTIG;
    c.masked = 0;
    double junk[LM_T__COUNT] = {0};
    step_cost(&c, junk); /* marks the tiles loop l computes from sources */
    for (int i = 0; i < k->nnodes; i++)
      if (c.seen[i] && k->nodes[i].op == LM_OP_LOAD_ROW && k->nodes[i].param < 64 &&
          !(c.snapshot && k->nodes[i].snap && k->nodes[i].level < l))
        reads[k->nodes[i].param] |= 1 << (l < 30 ? l : 30);
  }
  lm_term first_lv, packet_lv, priv_lv, col_lv;
  level_of(footprint / (v->workers > 1 ? v->workers : 1), caches, &first_lv);
  for (int p = 0; p < k->nparams && p < 64; p++) {
    const lm_param *pp = &k->params[p];
    if (pp->kind != LM_PARAM_BUFFER || pp->rank != 2)
      continue;
    int64_t rb = lm_dim_eval(pp->dims[1], s) * (int64_t)lm_dtype_size(pp->dtype);
    if (reads[p] || pp->is_output)
      rowbytes += rb;
  }
  level_of(rowbytes * c.G, caches, &packet_lv);
  int nsnap = 0;
  for (int i = 0; i < k->nnodes; i++)
    nsnap += c.snapshot && k->nodes[i].snap;
  double privbytes = (double)nsnap * ceil((double)N / c.L) * c.W * lm_dtype_size(k->elem);
  level_of((int64_t)privbytes + rowbytes * c.G, caches, &priv_lv);
  int64_t colbytes = 0;
  for (int p = 0; p < k->nparams; p++)
    if (k->params[p].kind == LM_PARAM_BUFFER && k->params[p].rank == 1 &&
        !(k->params[p].dims[0].sym == 0 && k->params[p].dims[0].coef == 1))
      colbytes += lm_param_count(k, p, s) * (int64_t)lm_dtype_size(k->params[p].dtype);
  level_of(colbytes + rowbytes * c.G, caches, &col_lv);
  double total = 0; /* every byte, L1-served ones included */
#define ADD_BYTES(lv, x) ((lv) < LM_T__COUNT ? (void)(n[lv] += (x)) : (void)0, total += (x))
  for (int p = 0; p < k->nparams && p < 64; p++) {
    const lm_param *pp = &k->params[p];
    if (pp->kind != LM_PARAM_BUFFER)
      continue;
    double bytes = (double)lm_param_count(k, p, s) * lm_dtype_size(pp->dtype);
    if (pp->rank == 2) {
      bytes *= density;
      int nl = __builtin_popcount((unsigned)reads[p]);
      if (pp->is_output) {
        ADD_BYTES(first_lv, bytes);
      } else if (nl > 0) {
        ADD_BYTES(first_lv, bytes);
        ADD_BYTES(packet_lv, bytes * (nl - 1));
      }
    } else if (pp->dims[0].sym == 0 && pp->dims[0].coef == 1) {
      ADD_BYTES(first_lv, bytes); /* per-row values */
    } else {
      double t = bytes * P * k->nloops; /* per-column vectors, per packet */
      ADD_BYTES(col_lv, t);
    }
  }
  /* private arrays: written once, read by each later loop (up to nloops-1) */
  double pb = P * privbytes * (k->nloops > 1 ? k->nloops : 1) * density;
  ADD_BYTES(priv_lv, pb);
  out->bytes_total = total;
  out->footprint = (double)footprint;
  out->density = density;
  free(c.seen);
  return LM_OK;
}
