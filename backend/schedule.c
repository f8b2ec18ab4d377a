/* The schedule: the lowering's decisions for one kernel x variant, made
 * once (see schedule.h).  Nothing here emits code or counts costs; the
 * lowering (lower.c) and the cost model (costmodel/counts.c) both walk the
 * result. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/schedule.h"
#include "lanemap/runtime.h"

static int is_reduction(lm_op op) {
  return op == LM_OP_RSUM || op == LM_OP_RMAX || op == LM_OP_RMIN;
}

/* Marks the tiles loop `loop` needs: computed from sources, or read from a
 * private array (a snapshot of an earlier loop stops the walk). */
static void mark(const lm_schedule *s, unsigned char *need, int loop, int id) {
  const lm_node *n = &s->k->nodes[id];
  if (!n->tile || need[id])
    return;
  need[id] = 1;
  if (s->snapshot && n->snap && n->level < loop)
    return;
  if (n->a >= 0) mark(s, need, loop, n->a);
  if (n->b >= 0) mark(s, need, loop, n->b);
  if (n->c >= 0) mark(s, need, loop, n->c);
}

static void parts(lm_schedule *s) {
  const lm_variant *v = s->v;
  lm_sched_mode main = s->L == s->W ? LM_SCHED_CONTIG
                       : s->block   ? LM_SCHED_BLOCK
                       : v->glob == LM_GLOB_TRANSPOSE ? LM_SCHED_SEG
                                                      : LM_SCHED_GATHER;
  s->part[LM_PART_MAIN] = (lm_sched_part){main, 0, s->per, 1, 1};
  /* Full steps the main part leaves over: fewer than U when it steps by U,
   * emitted as U - 1 guarded straight-line steps (not a loop of unknown trip
   * count, which LLVM would unroll again behind a prologue); transposed
   * blocks leave up to W - 1, gathered one at a time in a loop. */
  s->part[LM_PART_REST] = s->block
                              ? (lm_sched_part){LM_SCHED_GATHER, 0, 1, 1, 1}
                              : (lm_sched_part){main, 0, 1, s->per - 1, 0};
  /* A packet of one full row has at most one masked step. */
  s->part[LM_PART_TAIL] = (lm_sched_part){s->L == s->W ? LM_SCHED_CONTIG : LM_SCHED_GATHER,
                                          1, 1, 1, !s->uniform_rows};
  s->part[LM_PART_PACKET] = (lm_sched_part){main, 0, 0, 1, 0};
}

lm_status lm_schedule_build(const lm_kernel *k, const lm_variant *v, lm_schedule *s,
                            lm_error *err) {
  memset(s, 0, sizeof *s);
  if (lm_variant_check(k, v, err) != LM_OK)
    return LM_EINPUT;
  if (v->fp == LM_FP_RELAXED) /* the rewritten kernel, from here on */
    k = lm_kernel_relaxed(k);
  if (v->w > LM_SCHED_MAX_LANES)
    return lm_error_set(err, LM_EINPUT, "kernel %s: w%d is more than %d lanes",
                        k->name, v->w, LM_SCHED_MAX_LANES);
  if (k->nstores > LM_SCHED_MAX_STORES)
    return lm_error_set(err, LM_EINPUT, "kernel %s: %d stores, more than %d",
                        k->name, k->nstores, LM_SCHED_MAX_STORES);
  /* A run of step x W elements is one shuffle of at most 4 x MAX_LANES. */
  for (int i = 0; i < k->nnodes + k->nstores; i++) {
    int step = i < k->nnodes ? k->nodes[i].step : k->stores[i - k->nnodes].step;
    if (step > LM_MAX_VIEW_STEP || step * v->w > 4 * LM_SCHED_MAX_LANES)
      return lm_error_set(err, LM_EINPUT,
                          "kernel %s: view step %d is more than %d", k->name,
                          step, LM_MAX_VIEW_STEP);
  }
  s->k = k, s->v = v;
  s->W = v->w, s->L = v->l, s->G = v->w / v->l;
  s->block = s->L == 1 && v->glob == LM_GLOB_TRANSPOSE;
  s->U = s->L == s->W ? LM_SCHED_ACC_CONTIG
         : s->L == 1  ? (s->block ? LM_SCHED_ACC_CONTIG : LM_SCHED_ACC_GATHER)
                      : LM_SCHED_ACC_SEGMENT;
  s->per = s->block ? s->W : s->U;
  s->snapshot = v->phase == LM_PHASE_SNAPSHOT;
  s->uniform_rows = s->G == 1 && k->rowlen_param < 0;
  s->contract = v->fp == LM_FP_RELAXED && lm_isa_has_fma(v->isa);
  s->rule = (lm_sched_rule){s->L, s->G, s->per, v->workers, v->grain,
                            v->split, v->per_worker};
  parts(s);

  int nn = k->nnodes > 0 ? k->nnodes : 1, ns = k->nstores > 0 ? k->nstores : 1;
  s->nloops = k->nloops;
  s->loop = calloc((size_t)(k->nloops > 0 ? k->nloops : 1), sizeof *s->loop);
  s->reds = malloc(sizeof(int) * (size_t)nn);
  s->snaps = malloc(sizeof(int) * (size_t)nn);
  s->members = malloc(sizeof(int) * (size_t)ns);
  s->groups = malloc(sizeof *s->groups * (size_t)ns);
  unsigned char *done = calloc((size_t)ns, 1);
  if (!s->loop || !s->reds || !s->snaps || !s->members || !s->groups || !done) {
    free(done);
    lm_schedule_free(s);
    return lm_error_set(err, LM_ESYS, "schedule: out of memory");
  }
  int nred = 0, nsnap = 0, nmem = 0, ngrp = 0;
  for (int l = 0; l < k->nloops; l++) {
    lm_sched_loop *lp = &s->loop[l];
    lp->need = calloc((size_t)nn, 1);
    if (!lp->need) {
      free(done);
      lm_schedule_free(s);
      return lm_error_set(err, LM_ESYS, "schedule: out of memory");
    }
    lp->red0 = nred;
    for (int i = 0; i < k->nnodes; i++) {
      const lm_node *n = &k->nodes[i];
      if (is_reduction(n->op) && n->nuses > 0 && k->nodes[n->a].level == l) {
        s->reds[nred++] = i;
        mark(s, lp->need, l, n->a);
      }
    }
    lp->nred = nred - lp->red0;
    lp->snap0 = nsnap;
    if (s->snapshot)
      for (int i = 0; i < k->nnodes; i++)
        if (k->nodes[i].snap && k->nodes[i].level == l) {
          s->snaps[nsnap++] = i;
          mark(s, lp->need, l, i);
        }
    lp->nsnap = nsnap - lp->snap0;
    lp->grp0 = ngrp;
    for (int i = 0; i < k->nstores; i++) {
      const lm_store *st = &k->stores[i];
      if (done[i] || st->kind != LM_STORE_ROW || st->level != l)
        continue;
      lm_sched_group *g = &s->groups[ngrp++];
      *g = (lm_sched_group){st->param, st->step, nmem, 0};
      for (int j = i; j < k->nstores; j++) {
        const lm_store *t = &k->stores[j];
        if (!done[j] && t->kind == LM_STORE_ROW && t->level == l && t->param == st->param &&
            t->step == st->step) {
          done[j] = 1;
          s->members[nmem++] = j;
          g->n++;
          mark(s, lp->need, l, t->value);
        }
      }
    }
    lp->ngrp = ngrp - lp->grp0;
  }
  free(done);
  return LM_OK;
}

void lm_schedule_free(lm_schedule *s) {
  if (s->loop)
    for (int l = 0; l < s->nloops; l++)
      free(s->loop[l].need);
  free(s->loop);
  free(s->reds);
  free(s->snaps);
  free(s->members);
  free(s->groups);
  memset(s, 0, sizeof *s);
}

lm_priv lm_sched_priv(const lm_schedule *s, lm_dtype t, const char **why) {
  size_t sz = t == LM_BOOL ? 1 : lm_dtype_size(t);
  if (sz == 4 || sz == 8)
    return s->v->priv;
  if (why)
    *why = "private element is not a 4- or 8-byte scalar";
  return LM_PRIV_GATHER;
}

int lm_sched_math_lanes(const lm_schedule *s, lm_dtype t) {
  int esz = (int)lm_dtype_size(t);
  /* the variant's register width: a ymm variant on x86-64-v4 (w8 for f32)
   * calls 256-bit routines for its f64 math too */
  int wide = s->W == lm_isa_lanes(s->v->isa, s->k->elem, 1);
  int m = lm_isa_lanes(s->v->isa, t, wide);
  if (m > s->W)
    m = s->W;
  if (m * esz < 16)
    m = 16 / esz;
  return m;
}

int lm_sched_math_calls(const lm_schedule *s, lm_dtype t) {
  int m = lm_sched_math_lanes(s, t);
  return m >= s->W ? 1 : s->W / m;
}

int lm_sched_rsqrt_estimated(const lm_schedule *s, lm_dtype t) {
  return s->v->fp == LM_FP_RELAXED && t == LM_F32;
}

int lm_sched_div_per_row(const lm_schedule *s, int id) {
  const lm_node *n = &s->k->nodes[id];
  if (n->fixed)
    return 0;
  int fl = n->dtype == LM_F32 || n->dtype == LM_F64;
  return !(fl && s->v->fp == LM_FP_RELAXED && s->k->nodes[n->b].fixed);
}

int lm_sched_inst_contiguous(const lm_schedule *s) { return s->L == 1; }

void lm_sched_at(const lm_sched_rule *s, int64_t R, int64_t N, const double *rowlen,
                 lm_sched_steps *st) {
  const int G = s->G, L = s->L;
  st->R = R, st->N = N;
  st->P = (double)((R + G - 1) / G), st->Pf = (double)(R / G);
  double len = rowlen ? rowlen[0] : (double)N;
  double glen = rowlen ? rowlen[1] : (double)N;
  st->S = ceil(glen / L); /* steps per packet: to the packet's longest row */
  /* unmasked steps need every lane active: with ragged rows only a packet
   * of one row knows its length */
  double minlen = rowlen ? (G == 1 ? len : 0) : (double)N;
  st->full = floor(minlen / L);
  st->main = floor(st->full / s->per) * s->per;
  st->rest = st->full - st->main;
  st->tail = st->S - st->full;
  st->density = N > 0 ? len / (double)N : 1;
  lm_cut cut;
  lm_cut_of(s->split, s->grain, s->per_worker, s->workers, G, R, &cut);
  st->tasks = s->workers > 1 ? (double)cut.chunks : 1;
  st->claims = s->workers > 1 ? (double)cut.claims : 1;
  st->par = cut.busiest > 0 ? cut.packets / cut.busiest : 1;
  st->participants = s->workers > 1 ? cut.participants : 1;
  st->dynamic = cut.dynamic;
  /* a launch on workers > 1 goes through the pool's launch path (checks,
   * the shared pool, chunking) before its first entry call, even when its
   * one task then runs inline: one more call level */
  st->calls = st->tasks + (s->workers > 1);
}
