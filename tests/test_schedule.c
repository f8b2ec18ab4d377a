/* The schedule is the one source of the lowering's decisions and of the
 * cost model's counts.  These tests hold the two sides to it:
 *
 * - for every legal variant of every bundled and held-out kernel, on every
 *   x86 target, each per-step count the cost model prices equals the sites
 *   the lowering emitted for that part of the loop (main body, rest steps,
 *   tail, per packet);
 * - on the suite and held-out case shapes and on edge shapes (R < W,
 *   C = kW +- 1, single rows, C = 1), the schedule's step counts at a shape
 *   equal the steps the emitted control flow runs, packet by packet.
 *
 * A change to the lowering that the cost model does not follow (or the
 * reverse) fails here, naming the kernel, variant, part and count. */
#include <criterion/criterion.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/lower.h"
#include "backend/schedule.h"
#include "costmodel/counts.h"
#include "lanemap/cases.h"
#include "lanemap/ir.h"
#include "lanemap/runtime.h"
#include "support/source.h"

static const char *kernels[] = {
    "kernels/gelu_residual.lk",          "kernels/layernorm.lk",
    "kernels/masked_softmax.lk",         "kernels/rmsnorm.lk",
    "kernels/rope.lk",                   "kernels/swiglu.lk",
    "heldout/kernels/absmax_quant.lk",   "heldout/kernels/causal_softmax.lk",
    "heldout/kernels/cross_entropy.lk",  "heldout/kernels/geglu.lk",
    "heldout/kernels/l2_normalize.lk",   "heldout/kernels/log_softmax.lk",
    "heldout/kernels/ragged_softmax.lk", "heldout/kernels/rmsnorm_residual.lk",
    "heldout/kernels/softmax_lse.lk",    "heldout/kernels/softmax_temp.lk",
    "heldout/kernels/sqrelu_scale.lk",   "tests/kernels/f64_math_in_f32.lk",
    "tests/kernels/lane_branch.lk",      "tests/kernels/logsumexp.lk",
    "tests/kernels/math_all.lk",         "tests/kernels/ragged_softmax.lk",
    "tests/kernels/rmsnorm_f64.lk",      "tests/kernels/snap_bool.lk",
    "tests/kernels/stride_partial.lk",
};
#define NKERNELS (sizeof kernels / sizeof *kernels)

static const lm_isa isas[] = {LM_ISA_SSE42, LM_ISA_AVX2, LM_ISA_AVX512};

static lm_variant *variants_of(const lm_kernel *k, lm_isa isa, int *n) {
  lm_enum_opts eo;
  lm_enum_defaults(&eo);
  eo.isa = isa;
  eo.workers[0] = 1, eo.workers[1] = 2, eo.workers[2] = 0;
  eo.grains[0] = 16; /* the gG split beside the default static and dynK */
  eo.fps = 1u << LM_FP_STRICT | 1u << LM_FP_RELAXED; /* both modes */
  lm_variant *vs = NULL;
  lm_error err = {0};
  *n = lm_variant_enumerate(k, &eo, &vs, &err);
  cr_assert_gt(*n, 0, "%s: no variants: %s", k->name, err.msg);
  return vs;
}

/* ---- per-step counts ---------------------------------------------------- */

typedef struct Pair {
  const char *what;
  lm_term terms[LM_T_LAST_MATH - LM_T_FIRST_MATH + 1];
  int nterms;
  size_t field; /* offset in lm_part_counts */
} Pair;

#define F(f) offsetof(lm_part_counts, f)
static const Pair pairs[] = {
    {"vector loads", {LM_T_VLOAD}, 1, F(vload)},
    {"vector stores", {LM_T_VSTORE}, 1, F(vstore)},
    {"masked loads", {LM_T_MASKLOAD}, 1, F(maskload)},
    {"masked stores", {LM_T_MASKSTORE}, 1, F(maskstore)},
    {"segment loads", {LM_T_SEGLOAD}, 1, F(segload)},
    {"segment stores", {LM_T_SEGSTORE}, 1, F(segstore)},
    {"gathered lanes", {LM_T_GATHER}, 1, F(gather)},
    {"scattered lanes", {LM_T_SCATTER}, 1, F(scatter)},
    {"blended stores", {LM_T_BLEND}, 1, F(blend)},
    {"steps", {LM_T_STEP, LM_T_MSTEP}, 2, F(steps)},
    {"math calls",
     {LM_T_VEXP, LM_T_VLOG, LM_T_VTANH, LM_T_VERF, LM_T_VSINCOS, LM_T_VLOG35,
      LM_T_VTANH35, LM_T_VSINCOS35, LM_T_VEXPMV, LM_T_VLOGMV, LM_T_VTANHMV,
      LM_T_VERFMV, LM_T_VSINCOSMV, LM_T_VEXPIR, LM_T_VLOGIR, LM_T_VTANHIR,
      LM_T_VERFIR},
     LM_T_LAST_MATH - LM_T_FIRST_MATH + 1,
     F(math_calls)},
    {"division lanes", {LM_T_VDIV}, 1, F(div_lanes)},
};
#undef F

static int ilog2(int x) {
  int r = 0;
  while (x > 1)
    x >>= 1, r++;
  return r;
}

/* Compares one variant; returns the number of mismatches (each reported). */
static int agree(const lm_kernel *k, const lm_variant *v) {
  char name[128];
  lm_variant_format(v, name, sizeof name);
  lm_error err = {0};
  lm_cost_counts cc;
  cr_assert_eq(lm_cost_counts_build(k, v, &cc, &err), LM_OK, "%s %s: %s", k->name, name,
               err.msg);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m = NULL;
  lm_counts emitted;
  cr_assert_eq(lm_lower_module(k, v, ctx, "entry", &m, &emitted, &err), LM_OK, "%s %s: %s",
               k->name, name, err.msg);
  LLVMDisposeModule(m);
  LLVMContextDispose(ctx);
  static const char *partname[] = {"main", "rest", "tail", "packet"};
  const double *step[3] = {cc.step_main, cc.step_rest, cc.step_tail};
  int bad = 0;
  for (int p = 0; p < LM_PART__COUNT; p++)
    for (size_t i = 0; i < sizeof pairs / sizeof *pairs; i++) {
      double model = 0;
      for (int t = 0; t < pairs[i].nterms; t++)
        model += p == LM_PART_PACKET ? cc.packet[pairs[i].terms[t]]
                                     : cc.copies[p] * step[p][pairs[i].terms[t]];
      if (p == LM_PART_PACKET && pairs[i].field == offsetof(lm_part_counts, steps))
        model = 0;
      int got = *(const int *)((const char *)&emitted.part[p] + pairs[i].field);
      if (model != got) {
        cr_log_error("%s %s: %s part, %s: the cost model counts %g, the lowering emitted %d",
                     k->name, name, partname[p], pairs[i].what, model, got);
        bad++;
      }
    }
  double hred = cc.nred * ilog2(cc.L);
  if (hred != emitted.part[LM_PART_PACKET].hreduce) {
    cr_log_error("%s %s: butterfly stages: the cost model counts %g, the lowering emitted %d",
                 k->name, name, hred, emitted.part[LM_PART_PACKET].hreduce);
    bad++;
  }
  return bad;
}

Test(schedule, every_per_step_count_of_the_model_equals_the_lowerings_emitted_sites) {
  int checked = 0, bad = 0;
  for (size_t ki = 0; ki < NKERNELS; ki++) {
    lm_kernel *k = NULL;
    lm_error err = {0};
    cr_assert_eq(lm_kernel_load(source_path(kernels[ki]), &k, &err), LM_OK, "%s", err.msg);
    for (size_t ii = 0; ii < sizeof isas / sizeof *isas; ii++) {
      int nv;
      lm_variant *vs = variants_of(k, isas[ii], &nv);
      for (int i = 0; i < nv; i++, checked++)
        bad += agree(k, &vs[i]) > 0;
      free(vs);
    }
    lm_kernel_free(k);
  }
  printf("schedule agreement: %d variants, %d disagree\n", checked, bad);
  cr_assert_eq(bad, 0, "%d of %d variants: the cost model and the lowering disagree", bad,
               checked);
  cr_assert_gt(checked, 1000);
}

/* ---- step counts at a shape --------------------------------------------- */

/* The steps of each part that the emitted control flow runs, packet by
 * packet (lower.c: emit_packet and emit_loop), for rows of N columns. */
static void run_steps(const lm_schedule *s, int64_t R, int64_t N, double out[3]) {
  out[0] = out[1] = out[2] = 0;
  const lm_sched_part *main = &s->part[LM_PART_MAIN], *rest = &s->part[LM_PART_REST],
                      *tail = &s->part[LM_PART_TAIL];
  for (int64_t p = 0; p < R; p += s->G) {
    int64_t rem = R - p < s->G ? R - p : s->G;
    int64_t minlen = s->uniform_rows || rem == s->G ? N : 0;
    int64_t tfull = minlen / s->L, tmax = (N + s->L - 1) / s->L, t = 0;
    for (; t + main->steps <= tfull; t += main->steps)
      out[0] += main->steps;
    for (int r = 0; (rest->loops || r < rest->copies) && t < tfull; r++, t++)
      out[1] += 1;
    if (tail->loops)
      for (; t < tmax; t++)
        out[2] += 1;
    else if (t < tmax)
      out[2] += 1;
  }
}

/* The chunks a launch of v over R rows runs on a 2-worker pool, with the
 * cut lm_compiled_launch uses: entry calls counted, every row covered
 * once, every chunk whole packets but the last. */
typedef struct Count {
  _Atomic int64_t calls, rows, ragged;
  int64_t per, R;
} Count;
static void count_entry(const void *args, int64_t first, int64_t count) {
  Count *c = (Count *)args;
  atomic_fetch_add(&c->calls, 1);
  atomic_fetch_add(&c->rows, count);
  if (first % c->per != 0 || (count % c->per != 0 && first + count != c->R))
    atomic_fetch_add(&c->ragged, 1);
}
static double pool_chunks(lm_pool *pool, const lm_variant *v, int64_t R) {
  if (v->workers == 1 || R == 0)
    return 1;
  lm_cut cut;
  lm_variant_cut(v, R, &cut);
  Count c = {.per = v->w / v->l, .R = R};
  lm_launch_sched s = {cut.dynamic ? LM_SCHED_DYNAMIC : LM_SCHED_STATIC, cut.batch};
  lm_error err = {0};
  cr_assert_eq(lm_pool_launch_sched(pool, count_entry, &c, R, cut.grain, v->workers, &s, &err),
               LM_OK, "%s", err.msg);
  cr_assert_eq(atomic_load(&c.rows), R, "rows covered %lld of %lld",
               (long long)atomic_load(&c.rows), (long long)R);
  cr_assert_eq(atomic_load(&c.ragged), 0, "a chunk that is not whole packets");
  return (double)atomic_load(&c.calls);
}

typedef struct Shape {
  const char *kernel;
  int64_t R, C;
} Shape;

static int add_cases(const char *list, Shape *out, int n, int max) {
  lm_cases cs;
  lm_error err = {0};
  cr_assert_eq(lm_cases_load(source_path(list), &cs, &err), LM_OK, "%s", err.msg);
  for (int i = 0; i < cs.n && n < max; i++) {
    if (cs.c[i].extra)
      continue; /* shapes with extra symbols are covered by the edges */
    const char *rel = strstr(cs.c[i].kernel, "kernels/");
    const char *hk = strstr(cs.c[i].kernel, "heldout/kernels/");
    static char keep[256][128];
    snprintf(keep[n], sizeof keep[n], "%s", hk ? hk : rel);
    out[n] = (Shape){keep[n], cs.c[i].R, cs.c[i].C};
    n++;
  }
  lm_cases_free(&cs);
  return n;
}

Test(schedule, step_counts_at_a_shape_equal_the_steps_the_emitted_loops_run) {
  static Shape shapes[256];
  int ns = add_cases("kernels/suite.json", shapes, 0, 200);
  ns = add_cases("heldout/cases.json", shapes, ns, 200);
  /* edge shapes, in multiples of W = 4, 8, 16: R < W, C = kW +- 1, single
   * rows, C = 1 */
  static const int64_t edges[][2] = {{1, 1},  {1, 65}, {3, 3},   {2, 17}, {17, 16}, {37, 33},
                                     {5, 100}, {64, 8}, {9, 2},   {33, 31}, {7, 15}, {15, 17},
                                     {1, 4096}, {16, 1}, {100, 63}, {100, 65}};
  int checked = 0, bad = 0;
  lm_error perr = {0};
  lm_pool *pool = lm_pool_new(1, &perr);
  cr_assert_not_null(pool, "%s", perr.msg);
  for (size_t ki = 0; ki < NKERNELS; ki++) {
    lm_kernel *k = NULL;
    lm_error err = {0};
    cr_assert_eq(lm_kernel_load(source_path(kernels[ki]), &k, &err), LM_OK, "%s", err.msg);
    if (k->rowlen_param >= 0) { /* ragged rows: the model prices mean lengths */
      lm_kernel_free(k);
      continue;
    }
    Shape mine[300];
    int nm = 0;
    for (int i = 0; i < ns; i++)
      if (strcmp(shapes[i].kernel, kernels[ki]) == 0)
        mine[nm++] = shapes[i];
    for (size_t e = 0; e < sizeof edges / sizeof *edges; e++)
      mine[nm++] = (Shape){kernels[ki], edges[e][0], edges[e][1]};
    for (size_t ii = 0; ii < sizeof isas / sizeof *isas; ii++) {
      int nv;
      lm_variant *vs = variants_of(k, isas[ii], &nv);
      for (int vi = 0; vi < nv; vi++) {
        lm_schedule s;
        cr_assert_eq(lm_schedule_build(k, &vs[vi], &s, &err), LM_OK, "%s", err.msg);
        char name[128];
        lm_variant_format(&vs[vi], name, sizeof name);
        lm_cost_counts cc;
        cr_assert_eq(lm_cost_counts_build(k, &vs[vi], &cc, &err), LM_OK, "%s", err.msg);
        for (int si = 0; si < nm; si++) {
          lm_shape sh;
          if (lm_shape_bind(k, mine[si].R, mine[si].C, NULL, &sh, &err) != LM_OK)
            continue; /* e.g. rope needs an even C */
          lm_sched_steps st;
          lm_cost_counts_steps(&cc, &sh, NULL, &st);
          double ran[3];
          run_steps(&s, st.R, st.N, ran);
          double model[3] = {st.Pf * st.main, st.Pf * st.rest,
                             st.Pf * st.tail + (st.P - st.Pf) * st.S};
          double chunks = pool_chunks(pool, &vs[vi], st.R);
          checked++;
          if (model[0] != ran[0] || model[1] != ran[1] || model[2] != ran[2] ||
              st.tasks != chunks) {
            cr_log_error("%s %s at %lldx%lld: model main/rest/tail %g/%g/%g tasks %g, "
                         "emitted loops run %g/%g/%g, pool chunks %g",
                         k->name, name, (long long)mine[si].R, (long long)mine[si].C,
                         model[0], model[1], model[2], st.tasks, ran[0], ran[1], ran[2],
                         chunks);
            bad++;
          }
        }
        lm_schedule_free(&s);
      }
      free(vs);
    }
    lm_kernel_free(k);
  }
  lm_pool_free(pool);
  printf("schedule steps: %d variant x shape pairs, %d disagree\n", checked, bad);
  cr_assert_eq(bad, 0);
  cr_assert_gt(checked, 10000);
}
