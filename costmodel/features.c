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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costmodel/plan.h"
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
 * terms combine changes without the term list changing. */
#define LM_MODEL_FORM "form-3"

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
  double *gb;        /* [buffer] elements gathered or scattered from rows */
  const int *bufof;  /* parameter -> buffer index (-1 for scalars) */
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
    case MODE_GATHER:
      out[LM_T_SCATTER] += (double)c->W * nv;
      if (c->gb)
        c->gb[c->bufof[s->param]] += (double)c->W * nv;
      break;
    }
  }
  out[c->masked ? LM_T_MSTEP : LM_T_STEP] += 1;
  if (c->masked)
    out[LM_T_VOP] += 2; /* lane columns and the compare */
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

lm_status lm_cost_plan_build(const lm_kernel *k, const lm_variant *v,
                             lm_cost_plan *pl, lm_error *err) {
  memset(pl, 0, sizeof *pl);
  if (lm_variant_check(k, v, err) != LM_OK)
    return LM_EINPUT;
  int nbuf = 0;
  for (int p = 0; p < k->nparams; p++)
    nbuf += k->params[p].kind == LM_PARAM_BUFFER;
  if (nbuf > PLAN_MAX_BUFS)
    return lm_error_set(err, LM_EINPUT, "kernel %s: %d buffers, the cost model counts at most %d",
                        k->name, nbuf, PLAN_MAX_BUFS);
  Cx c = {.k = k, .v = v, .W = v->w, .L = v->l, .snapshot = v->phase == LM_PHASE_SNAPSHOT};
  c.G = c.W / c.L;
  c.U = c.L == c.W ? ACC_CONTIG
        : c.L == 1 ? (v->glob == LM_GLOB_TRANSPOSE ? ACC_CONTIG : ACC_GATHER)
                   : ACC_SEGMENT;
  int blockmode = c.L == 1 && v->glob == LM_GLOB_TRANSPOSE;
  pl->W = c.W, pl->L = c.L, pl->G = c.G, pl->U = c.U;
  pl->per = blockmode ? c.W : c.U;
  pl->workers = v->workers;
  pl->grain = v->grain;
  pl->nloops = k->nloops;
  pl->ncols = k->ncols;
  c.seen = calloc((size_t)(k->nnodes > 0 ? k->nnodes : 1), 1);
  int *bufof = malloc(sizeof *bufof * (size_t)(k->nparams > 0 ? k->nparams : 1));
  for (int p = 0, b = 0; p < k->nparams; p++)
    bufof[p] = k->params[p].kind == LM_PARAM_BUFFER ? b++ : -1;
  c.bufof = bufof;
  for (int l = 0; l < k->nloops; l++) {
    c.loop = l;
    c.mode = c.L == c.W ? MODE_CONTIG : blockmode ? MODE_BLOCK
             : v->glob == LM_GLOB_TRANSPOSE ? MODE_SEG : MODE_GATHER;
    c.masked = 0;
    c.gb = pl->gather_main;
    step_cost(&c, pl->step_main);
    if (blockmode)
      c.mode = MODE_GATHER;
    c.gb = pl->gather_rest;
    step_cost(&c, pl->step_rest);
    c.mode = c.L == c.W ? MODE_CONTIG : MODE_GATHER;
    c.masked = 1;
    c.gb = pl->gather_tail;
    step_cost(&c, pl->step_tail);
    c.gb = NULL;
    for (int i = 0; i < k->nnodes; i++) {
      const lm_node *nd = &k->nodes[i];
      if (is_red(nd->op) && nd->nuses > 0 && k->nodes[nd->a].level == l)
        pl->nred += 1;
    }
  }
  /* per-packet uniforms and per-row stores */
  c.n = pl->packet;
  for (int i = 0; i < k->nnodes; i++) {
    const lm_node *nd = &k->nodes[i];
    if (nd->tile || is_red(nd->op))
      continue;
    if (nd->op == LM_OP_LOAD_INST)
      pl->packet[c.L == 1 ? LM_T_MASKLOAD : LM_T_GATHER] += c.L == 1 ? 1 : c.W;
    else if (nd->a >= 0)
      op_cost(&c, nd);
  }
  for (int i = 0; i < k->nstores; i++)
    if (k->stores[i].kind == LM_STORE_INST)
      pl->packet[c.L == 1 ? LM_T_MASKSTORE : LM_T_SCATTER] += c.L == 1 ? 1 : c.W;
  if (k->rowlen_param >= 0)
    pl->packet[LM_T_GATHER] += c.W;
  pl->packet[LM_T_PACKET] += 1;

  /* which loops read each row buffer from memory (not from a snapshot) */
  unsigned reads[PLAN_MAX_BUFS] = {0};
  for (int l = 0; l < k->nloops; l++) {
    memset(c.seen, 0, (size_t)k->nnodes);
    c.loop = l;
    c.mode = MODE_CONTIG;
    c.masked = 0;
    double junk[LM_T__COUNT] = {0};
    step_cost(&c, junk); /* marks the tiles loop l computes from sources */
    for (int i = 0; i < k->nnodes; i++) {
      const lm_node *nd = &k->nodes[i];
      if (c.seen[i] && nd->op == LM_OP_LOAD_ROW && bufof[nd->param] >= 0 &&
          !(c.snapshot && nd->snap && nd->level < l))
        reads[bufof[nd->param]] |= 1u << (l < 30 ? l : 30);
    }
  }
  for (int p = 0; p < k->nparams; p++) {
    const lm_param *pp = &k->params[p];
    if (pp->kind != LM_PARAM_BUFFER)
      continue;
    int b = pl->nbuf++;
    pl->buf[b].kind = pp->rank == 2 ? PB_ROWS : is_rowdim(pp->dims[0]) ? PB_PERROW : PB_PERCOL;
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
  pl->wide = c.W * esize >= 64;
  int nsnap = 0;
  for (int i = 0; i < k->nnodes; i++)
    nsnap += c.snapshot && k->nodes[i].snap;
  pl->privrow = (double)nsnap * c.W * (double)lm_dtype_size(k->elem);
  free(c.seen);
  free(bufof);
  return LM_OK;
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

void lm_cost_plan_steps(const lm_cost_plan *pl, const lm_shape *s, const lm_rowstats *rows,
                        lm_plan_steps *st) {
  const int G = pl->G, L = pl->L;
  int64_t R = s->dims[0], N = dim_at(pl->ncols, s);
  st->R = R, st->N = N;
  st->P = (double)((R + G - 1) / G), st->Pf = (double)(R / G);
  double len = rows ? rows->mean_len : (double)N;
  double glen = rows ? rows->mean_group_max[ilog2(G)] : (double)N;
  st->S = ceil(glen / L); /* steps per packet */
  double minlen = rows ? (G == 1 ? len : 0) : (double)N;
  st->full = floor(minlen / L);
  st->main = floor(st->full / pl->per) * pl->per;
  st->rest = st->full - st->main;
  st->tail = st->S - st->full;
  st->density = N > 0 ? len / (double)N : 1;
  st->tasks = pl->workers > 1 ? ceil((double)R / (double)pl->grain) : 1;
  /* a launch on workers > 1 goes through the pool's launch path (checks,
   * the shared pool, chunking) before its first entry call, even when its
   * one task then runs inline: one more call level */
  st->calls = st->tasks + (pl->workers > 1);
}

/* gathers whose rows alias in L1: the G rows one gather touches, at the
 * row stride, fall into more lines of one L1 set than it has ways, so the
 * lines are evicted before the next column reuses them */
double lm_cost_plan_alias(const lm_cost_plan *pl, const lm_shape *s, const lm_caches *caches,
                          const lm_plan_steps *st) {
  double a = 0;
  int ways = alias_ways(caches);
  for (int b = 0; b < pl->nbuf; b++) {
    if (pl->buf[b].kind != PB_ROWS ||
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
void lm_cost_plan_bytes(const lm_cost_plan *pl, const lm_shape *s, const lm_caches *caches,
                        const lm_plan_steps *st, double lv[3], double *total_out,
                        double *footprint_out) {
  const int G = pl->G;
  int64_t footprint = 0, rowbytes = 0, colbytes = 0;
  double bytes[PLAN_MAX_BUFS];
  for (int b = 0; b < pl->nbuf; b++) {
    int64_t cnt = 1;
    for (int i = 0; i < pl->buf[b].rank; i++)
      cnt *= dim_at(pl->buf[b].dims[i], s);
    int64_t by = cnt * (int64_t)pl->buf[b].dsize;
    footprint += by;
    bytes[b] = (double)by;
    if (pl->buf[b].kind == PB_ROWS && (pl->buf[b].nloads || pl->buf[b].is_output))
      rowbytes += dim_at(pl->buf[b].dims[1], s) * (int64_t)pl->buf[b].dsize;
    if (pl->buf[b].kind == PB_PERCOL && pl->buf[b].rank == 1)
      colbytes += by;
  }
  Split first_lv = split_of(footprint / (pl->workers > 1 ? pl->workers : 1), caches);
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
    case PB_ROWS:
      by *= density;
      if (pl->buf[b].is_output) {
        ADD_BYTES(first_lv, by);
      } else if (pl->buf[b].nloads > 0) {
        ADD_BYTES(first_lv, by);
        ADD_BYTES(packet_lv, by * (pl->buf[b].nloads - 1));
      }
      break;
    case PB_PERROW: ADD_BYTES(first_lv, by); break; /* per-row values */
    case PB_PERCOL: ADD_BYTES(col_lv, by * P * pl->nloops); break; /* per packet */
    }
  }
  /* private arrays: written once, read by each later loop (up to nloops-1) */
  double pb = P * privbytes * (pl->nloops > 1 ? pl->nloops : 1) * density;
  ADD_BYTES(priv_lv, pb);
#undef ADD_BYTES
  *total_out = total;
  *footprint_out = (double)footprint;
}

/* The 512-bit code's instructions and math calls (wide512, wide_call). */
const lm_term lm_plan_wide_ins[LM_PLAN_NWIDE_INS] = {
    LM_T_VOP,      LM_T_VLOAD,    LM_T_VSTORE, LM_T_SEGLOAD, LM_T_SEGSTORE,
    LM_T_MASKLOAD, LM_T_MASKSTORE, LM_T_BLEND, LM_T_SHUFFLE, LM_T_HRED};
const lm_term lm_plan_wide_calls[LM_PLAN_NWIDE_CALLS] = {LM_T_VEXP, LM_T_VLOG, LM_T_VTANH,
                                                         LM_T_VERF, LM_T_VSINCOS};

void lm_cost_plan_eval(const lm_cost_plan *pl, const lm_shape *s,
                       const lm_caches *caches, const lm_rowstats *rows,
                       lm_features *out) {
  lm_caches cdef;
  if (!caches) {
    lm_caches_default(&cdef);
    caches = &cdef;
  }
  lm_plan_steps st;
  lm_cost_plan_steps(pl, s, rows, &st);
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
  /* width: what a 512-bit instruction or math call costs beyond its
   * 256-bit form (port and frequency effects), on the same counts */
  if (pl->wide) {
    for (int i = 0; i < LM_PLAN_NWIDE_INS; i++)
      n[LM_T_WIDE] += n[lm_plan_wide_ins[i]];
    for (int i = 0; i < LM_PLAN_NWIDE_CALLS; i++)
      n[LM_T_WCALL] += n[lm_plan_wide_calls[i]];
  }
  out->steps_main = Pf * st.full * pl->nloops;
  out->steps_tail = (Pf * st.tail + (P - Pf) * S) * pl->nloops;
  out->packets = P;
  out->density = st.density;
  n[LM_T_GALIAS] += lm_cost_plan_alias(pl, s, caches, &st);
  /* launch structure */
  n[LM_T_CALL] += st.calls;
  if (pl->workers > 1 && st.tasks > 1) /* one task runs inline, without the pool */
    n[LM_T_TASK] += st.tasks, n[LM_T_FORK] += 1;
  double lv[3];
  lm_cost_plan_bytes(pl, s, caches, &st, lv, &out->bytes_total, &out->footprint);
  n[LM_T_B_L2] += lv[0];
  n[LM_T_B_L3] += lv[1];
  n[LM_T_B_DRAM] += lv[2];
}

lm_status lm_cost_features(const lm_kernel *k, const lm_variant *v,
                           const lm_shape *s, const lm_caches *caches,
                           const lm_rowstats *rows, lm_features *out,
                           lm_error *err) {
  memset(out, 0, sizeof *out);
  lm_cost_plan pl;
  if (lm_cost_plan_build(k, v, &pl, err) != LM_OK)
    return LM_EINPUT;
  lm_cost_plan_eval(&pl, s, caches, rows, out);
  return LM_OK;
}
