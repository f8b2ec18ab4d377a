/* The relaxed floating-point form of a kernel (variant field fp=relaxed,
 * docs/language.md "Relaxed floating point").
 *
 * Relaxed mode allows what C's -ffast-math allows on these kernels, and
 * nothing else:
 *   - a tile divided by a row-uniform value b becomes the tile times 1/b,
 *     the reciprocal taken once per row (rsqrt(u) when b is sqrt(u));
 *   - a tile divided by sqrt(u) of a tile u becomes a times rsqrt(u), which
 *     the lowering lets LLVM estimate (arcp, afn);
 *   - a multiply feeding an add, a subtract or a sum may be contracted into
 *     one fused multiply-add (the lowering's `contract` flag);
 *   - a division by a value the same for every row of a launch becomes a
 *     multiply by its reciprocal (the lowering's `arcp` flag, which LLVM
 *     hoists; lm_sched_div_per_row).
 * Reductions are reassociated in both modes (several accumulators).
 *
 * The two rewrites are made on the IR, so the lowering, the schedule and
 * the cost model all see the rewritten kernel as a kernel: the twin is the
 * original with the rewritten nodes, printed and parsed again, so the
 * checker fills every fact (levels, availability, snapshots, uses) as for
 * any source.  Contraction and the hoisted reciprocal change no node; they
 * are counted here so that the variant check can refuse fp=relaxed where
 * it would change nothing. */
#include <stdlib.h>
#include <string.h>

#include "ir/frontend.h"

static int is_flt(lm_dtype t) { return t == LM_F32 || t == LM_F64; }

int lm_kernel_contractible(const lm_node *nodes, int user, int operand) {
  const lm_node *x = &nodes[user], *m = &nodes[operand];
  /* computed where its user is: both per element (a sum's operand is), or
   * both per row; a per-row multiply feeding a per-element add is computed
   * once per packet, outside the column loop, and cannot fuse */
  int here = x->op == LM_OP_RSUM ? m->tile : m->tile == x->tile;
  return is_flt(x->dtype) && m->op == LM_OP_MUL && m->nuses == 1 && here &&
         (x->op == LM_OP_ADD || x->op == LM_OP_SUB || x->op == LM_OP_RSUM);
}

/* Adds, subtracts and sums that absorb a multiply: one each, as an FMA
 * fuses one product (a*b - c*d is one FMA and one multiply). */
static int contractions(const lm_kernel *k) {
  int n = 0;
  for (int i = 0; i < k->nnodes; i++) {
    const lm_node *x = &k->nodes[i];
    n += (x->a >= 0 && lm_kernel_contractible(k->nodes, i, x->a)) ||
         (x->b >= 0 && lm_kernel_contractible(k->nodes, i, x->b));
  }
  return n;
}

static lm_node fresh(lm_op op, const lm_node *like, int tile) {
  lm_node n;
  memset(&n, 0, sizeof n);
  n.op = op;
  n.dtype = like->dtype;
  n.tile = tile;
  n.a = n.b = n.c = -1;
  n.step = 1;
  n.loc = like->loc;
  return n;
}

void lm_fe_relax(lm_kernel *k) {
  k->relaxed = NULL;
  k->relax_rewrites = 0;
  k->relax_contractions = contractions(k);
  k->relax_hoists = 0;
  for (int i = 0; i < k->nnodes; i++) { /* x / C per row: 1/C taken once */
    const lm_node *x = &k->nodes[i];
    k->relax_hoists += x->op == LM_OP_DIV && is_flt(x->dtype) && !x->tile && !x->fixed &&
                       k->nodes[x->b].fixed;
  }
  k->relax_why = NULL;
  /* each rewrite adds at most two nodes (1 and 1/b) */
  int cap = 3 * k->nnodes + 1, n = k->nnodes;
  lm_node *nodes = malloc(sizeof *nodes * (size_t)cap);
  if (!nodes) {
    k->relax_why = "out of memory";
    return;
  }
  memcpy(nodes, k->nodes, sizeof *nodes * (size_t)k->nnodes);
  for (int i = 0; i < k->nnodes; i++) {
    lm_node *x = &nodes[i];
    if (x->op != LM_OP_DIV || !is_flt(x->dtype) || !x->tile)
      continue;
    const lm_node *b = &nodes[x->b];
    if (!b->tile) { /* a row-uniform divisor: its reciprocal, once per row */
      if (b->op == LM_OP_SQRT) {
        nodes[n] = fresh(LM_OP_RSQRT, b, 0);
        nodes[n].a = b->a;
      } else {
        nodes[n] = fresh(LM_OP_CONST, b, 0);
        nodes[n].imm = 1.0;
        nodes[n + 1] = fresh(LM_OP_DIV, b, 0);
        nodes[n + 1].a = n, nodes[n + 1].b = x->b;
        n++;
      }
    } else if (b->op == LM_OP_SQRT) { /* x / sqrt(u) per element */
      nodes[n] = fresh(LM_OP_RSQRT, b, 1);
      nodes[n].a = b->a;
    } else {
      continue;
    }
    x->op = LM_OP_MUL;
    x->b = n++; /* the reciprocal */
    k->relax_rewrites++;
  }
  if (!k->relax_rewrites) {
    free(nodes);
    return;
  }
  lm_kernel view = *k;
  view.nodes = nodes;
  view.nnodes = n;
  char *src = lm_kernel_print(&view);
  free(nodes);
  lm_error err = {0};
  if (!src || lm_fe_kernel_parse(k->file, src, strlen(src), &k->relaxed,
                                 &err) != LM_OK) {
    k->relaxed = NULL;
    k->relax_rewrites = 0;
    k->relax_why = lm_arena_strdup(k->arena, src ? err.msg : "out of memory");
  }
  free(src);
}

const lm_kernel *lm_kernel_relaxed(const lm_kernel *k) {
  return k->relaxed ? k->relaxed : k;
}
