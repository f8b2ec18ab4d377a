/* Register pressure: how many vector values one step keeps live, and the
 * spill and reload instructions that costs (the `spill` term).
 *
 * The step's values are taken in the order the walk of features.c emits
 * them, which is the lowering's order (demand-driven from the reductions,
 * snapshot writes and stores).  Three sources of spills are counted:
 *
 *   pressure  the loop's accumulators (U per reduction, live across the
 *             whole loop), the uniforms its tiles use, the transposed
 *             columns of a block step (W per row buffer, and W more
 *             while one buffer's rows are transposed) and the peak of
 *             the step's own temporaries, against the register file: what
 *             exceeds it is stored and reloaded once per loop body;
 *   calls     an external vector math call (SLEEF, libmvec) clobbers every
 *             vector register under the x86-64 SysV ABI, so each value
 *             live across it is stored before it and reloaded after it
 *             (uniforms are only reloaded: their stack copy stays valid;
 *             block columns go through the stack once, each reloaded by
 *             the one step that uses it);
 *   width     a value wider than a register (f64 at W = 16 on AVX-512, a
 *             NEON pair) takes several registers, and each spill as many
 *             instructions.
 *
 * Constants are left out: x86 folds them into memory operands (embedded
 * broadcasts) and a register allocator rematerialises them instead of
 * spilling.  Inline math routines (math=ir) are not calls; their own
 * temporaries are not modelled (docs/costmodel.md, "Register pressure",
 * says what the assembly shows for them). */
#include <stdlib.h>
#include <string.h>

#include "costmodel/counts.h"
#include "lanemap/backend.h"

/* Vector registers of a target and their width in bytes (the ISA
 * manuals: AVX-512 has 32 zmm, AVX and SSE 16 ymm/xmm; AArch64 32 V or Z
 * registers).  ymm code on an AVX-512 target can use all 32. */
static void regfile(lm_isa isa, int *n, int *bytes) {
  isa = lm_isa_resolve(isa);
  *n = 32;
  switch (isa) {
  case LM_ISA_AVX512: *bytes = 64; break;
  case LM_ISA_AVX2: *n = 16, *bytes = 32; break;
  case LM_ISA_SSE42: *n = 16, *bytes = 16; break;
  case LM_ISA_NEON: *bytes = 16; break;
  default: *bytes = lm_isa_sve_bits(isa) / 8; break;
  }
  if (*bytes < 16)
    *bytes = 16;
}

static int external_call(const lm_schedule *s, const lm_node *nd) {
  return s->v->math != LM_MATH_IR && lm_term_math(s->v->math, nd->op) >= 0;
}

double lm_cost_spills(const lm_schedule *s, int loop, int part, const int *ev, int nev,
                      lm_pressure *out) {
  const lm_kernel *k = s->k;
  int nn = k->nnodes > 0 ? k->nnodes : 1;
  int *pos = malloc(sizeof *pos * (size_t)nn * 2);
  unsigned char *uni = calloc((size_t)nn, 1);
  lm_pressure pr = {0};
  if (!pos || !uni) {
    free(pos), free(uni);
    if (out)
      *out = pr;
    return 0;
  }
  int *last = pos + nn;
  for (int i = 0; i < nn; i++)
    pos[i] = last[i] = -1;
  int bufs[LM_MAX_BUFFERS + 8], nbufs = 0;
  int block = s->part[part].mode == LM_SCHED_BLOCK;
  for (int e = 0; e < nev; e++) {
    if (ev[e] < 0) { /* a reduction, snapshot write or store takes it */
      last[-1 - ev[e]] = e;
      continue;
    }
    int x = ev[e];
    const lm_node *nd = &k->nodes[x];
    pos[x] = e;
    int snapread = s->snapshot && nd->snap && nd->level < loop;
    if (snapread)
      continue;
    if (block && nd->op == LM_OP_LOAD_ROW) {
      int seen = 0;
      for (int i = 0; i < nbufs; i++)
        seen |= bufs[i] == nd->param;
      if (!seen && nbufs < (int)(sizeof bufs / sizeof bufs[0]))
        bufs[nbufs++] = nd->param;
    }
    int ops[3] = {nd->a, nd->b, nd->c};
    for (int i = 0; i < 3; i++) {
      int o = ops[i];
      if (o < 0)
        continue;
      if (k->nodes[o].tile) {
        if (pos[o] >= 0)
          last[o] = e;
      } else if (k->nodes[o].op != LM_OP_CONST) {
        uni[o] = 1;
      }
    }
  }
  for (int i = 0; i < k->nnodes; i++)
    pr.uniforms += uni[i];
  pr.accumulators = s->loop[loop].nred * s->U;
  pr.block = block ? (double)s->W * nbufs : 0;
  /* the peak of the step's temporaries, and what crosses each call */
  double across_calls = 0, calls = 0;
  for (int e = 0; e < nev; e++) {
    if (ev[e] < 0)
      continue;
    const lm_node *nd = &k->nodes[ev[e]];
    int live = 0, across = 0;
    for (int y = 0; y < k->nnodes; y++) {
      if (pos[y] < 0 || pos[y] > e || last[y] < e)
        continue;
      live += last[y] > e || y == ev[e];
      across += pos[y] < e && last[y] > e;
    }
    pr.temporaries = live > pr.temporaries ? live : pr.temporaries;
    if (external_call(s, nd)) {
      double n = lm_sched_math_calls(s, nd->dtype);
      calls += n;
      across_calls += n * across;
    }
  }
  free(pos), free(uni);

  int nregs, rbytes;
  regfile(s->v->isa, &nregs, &rbytes);
  double vbytes = (double)s->W * (double)lm_dtype_size(k->elem);
  double per_value = vbytes > rbytes ? vbytes / rbytes : 1;
  pr.live = (pr.accumulators + pr.uniforms + pr.block + pr.temporaries) * per_value;
  pr.registers = nregs;
  int body = s->part[part].steps > 0 ? s->part[part].steps : 1;
  /* With a call in the step every block column goes through the stack
   * (stored after the transpose, reloaded once by the step that uses it);
   * the rest of the pressure is stored and reloaded once a body.  Across
   * each call, accumulators and temporaries are stored and reloaded,
   * uniforms reloaded (their stack copy stays valid). */
  double resident = pr.live - (calls > 0 ? pr.block * per_value : 0) +
                    (pr.block > 0 ? s->W * per_value : 0); /* the transpose's outputs */
  double excess = resident > nregs ? resident - nregs : 0;
  double spills = 2 * excess / body +
                  per_value * (2 * (across_calls + calls * pr.accumulators) +
                               calls * pr.uniforms + (calls > 0 ? 2 * pr.block / body : 0));
  pr.spills = spills;
  if (out)
    *out = pr;
  return spills;
}
