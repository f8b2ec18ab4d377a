/* Micro-benchmark families.  Each benchmark is a small .lk kernel and one
 * variant, chosen so that one cost term dominates its counts; together the
 * families give the fit a full-rank design.  Sizes follow the machine's
 * caches, so "bytes served by L2" is measured with a working set that
 * lives in L2.  The kernels are ordinary lanemap kernels: they go through
 * the same parser, lowering, optimiser and verification as user kernels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/backend.h"
#include "lanemap/calibrate.h"

/* Sources.  %s-free: the variant carries the mapping. */
static const char src_load[] =
    "kernel bw_load(x: f32[R, C]) -> (s: f32[R]) {\n  s[r] = sum(x[r, :])\n}\n";
static const char src_store[] =
    "kernel bw_store(x: f32[R]) -> (y: f32[R, C]) {\n  y[r, :] = f32(c) + x[r]\n}\n";
static const char src_copy[] =
    "kernel bw_copy(x: f32[R, C]) -> (y: f32[R, C]) {\n  y[r, :] = x[r, :]\n}\n";
static const char src_triad[] =
    "kernel bw_triad(a: f32[R, C], b: f32[R, C], s: f32 = 0.5) -> (y: f32[R, C]) {\n"
    "  y[r, :] = a[r, :] + s * b[r, :]\n}\n";
static const char src_priv[] =
    "kernel priv(x: f32[R, C]) -> (y: f32[R, C]) {\n"
    "  xs = x[r, :]\n  s = sum(xs)\n  y[r, :] = xs * s\n}\n";
static const char src_ragged[] =
    "kernel ragged(x: f32[R, C], len: i32[R] rowlen) -> (y: f32[R, C]) {\n"
    "  y[r, :] = x[r, :] * 2\n}\n";
static const char src_div[] =
    "kernel vdiv(x: f32[R, C], b: f32[R, C] in(1, 2)) -> (y: f32[R, C]) {\n"
    "  y[r, :] = x[r, :] / b[r, :]\n}\n";
static const char src_sqrt[] =
    "kernel vsqrt(x: f32[R, C] in(0.5, 2)) -> (y: f32[R, C]) {\n"
    "  y[r, :] = sqrt(x[r, :])\n}\n";
static const char src_rsqrt[] =
    "kernel vrsqrt(x: f32[R, C] in(0.5, 2)) -> (y: f32[R, C]) {\n"
    "  y[r, :] = rsqrt(x[r, :])\n}\n";
static const char src_exp[] =
    "kernel vexp(x: f32[R, C] in(-4, 4)) -> (y: f32[R, C]) {\n  y[r, :] = exp(x[r, :])\n}\n";
static const char src_erf[] =
    "kernel verf(x: f32[R, C] in(-3, 3)) -> (y: f32[R, C]) {\n  y[r, :] = erf(x[r, :])\n}\n";
static const char src_sigmoid[] =
    "kernel vsigmoid(x: f32[R, C] in(-6, 6)) -> (y: f32[R, C]) {\n"
    "  y[r, :] = sigmoid(x[r, :])\n}\n";
static const char src_tanh[] =
    "kernel vtanh(x: f32[R, C] in(-3, 3)) -> (y: f32[R, C]) {\n  y[r, :] = tanh(x[r, :])\n}\n";
static const char src_log[] =
    "kernel vlog(x: f32[R, C] in(0.5, 2)) -> (y: f32[R, C]) {\n  y[r, :] = log(x[r, :])\n}\n";
static const char src_sin[] =
    "kernel vsin(x: f32[R, C] in(-3, 3)) -> (y: f32[R, C]) {\n  y[r, :] = sin(x[r, :])\n}\n";
static const char src_alu[] =
    "kernel valu(x: f32[R, C], b: f32[R, C]) -> (y: f32[R, C]) {\n"
    "  xs = x[r, :]\n  bs = b[r, :]\n"
    "  y[r, :] = fma(xs, bs, xs * 0.5 + bs * 0.25 - xs * bs)\n}\n";
/* Register pressure: a row sum of exp keeps its accumulators across the
 * call (stored and reloaded at each); eight sums keep 32 accumulators
 * live; a transposed block of three row buffers keeps 3 W columns live. */
static const char src_expsum[] =
    "kernel sp_expsum(x: f32[R, C] in(-4, 4)) -> (s: f32[R]) {\n"
    "  s[r] = sum(exp(x[r, :]))\n}\n";
static const char src_moments[] =
    "kernel sp_moments(x: f32[R, C], b: f32[R, C]) -> (s1: f32[R], s2: f32[R],\n"
    "    s3: f32[R], s4: f32[R], s5: f32[R], s6: f32[R], s7: f32[R], s8: f32[R]) {\n"
    "  xs = x[r, :]\n  bs = b[r, :]\n"
    "  s1[r] = sum(xs)\n  s2[r] = sum(bs)\n  s3[r] = sum(xs * bs)\n"
    "  s4[r] = sum(xs * xs)\n  s5[r] = sum(bs * bs)\n  s6[r] = sum(xs + bs)\n"
    "  s7[r] = sum(xs - bs)\n  s8[r] = sum(xs * 0.5 + bs)\n}\n";
static const char src_fma3[] =
    "kernel sp_fma3(a: f32[R, C], b: f32[R, C], z: f32[R, C]) -> (y: f32[R, C]) {\n"
    "  y[r, :] = a[r, :] * b[r, :] + z[r, :]\n}\n";
/* Composition check: several terms at once, predicted by the fitted
 * coefficients and compared with the measurement (not fitted). */
static const char src_mix_norm[] =
    "kernel mix_norm(x: f32[R, C], g: f32[C]) -> (y: f32[R, C]) {\n"
    "  xs = x[r, :]\n  mu = sum(xs) / C\n  d = xs - mu\n"
    "  y[r, :] = d / sqrt(sum(d * d) / C + 1e-5) * g[:]\n}\n";
static const char src_mix_exp[] =
    "kernel mix_exp(x: f32[R, C] in(-4, 4), b: f32[R, C]) -> (y: f32[R, C]) {\n"
    "  xs = x[r, :]\n  y[r, :] = exp(xs) * b[r, :] + xs\n}\n";

typedef struct List {
  lm_calib_bench *b;
  int n, cap;
  lm_isa isa;
  int W;
  int skipped;          /* the last add left its benchmark out */
  lm_calib_bench spare; /* what settings on a left-out benchmark go to */
} List;

/* The benchmark the last add made (the spare one when it was left out). */
static lm_calib_bench *last(List *l) { return l->skipped ? &l->spare : &l->b[l->n - 1]; }

/* On an AArch64 target a benchmark calls its vector math through math=ir,
 * the one provider there; one that stays illegal (sine: math=ir has none)
 * is left out.  `m`, the mapping (n bytes), is rewritten in place.
 * Returns 0 to leave the benchmark out.  x86 targets are never touched. */
static int for_target(const List *l, const char *src, char *m, size_t n) {
  if (!lm_isa_is_aarch64(l->isa))
    return 1;
  lm_kernel *k = NULL;
  if (lm_kernel_parse("bench.lk", src, strlen(src), &k, NULL) != LM_OK)
    return 0;
  char v[160];
  lm_variant var;
  int ok = 0;
  for (int pass = 0; pass < 2 && !ok; pass++) {
    if (pass == 1) { /* insert math=ir before the worker field */
      char *t = strstr(m, "/t");
      if (!t || strstr(m, "math=") || strlen(m) + 8 >= n)
        break;
      char tail[96];
      snprintf(tail, sizeof tail, "%s", t);
      snprintf(t, n - (size_t)(t - m), "/math=ir%s", tail);
    }
    snprintf(v, sizeof v, "%s/%s", lm_isa_name(l->isa), m);
    ok = lm_variant_parse(v, &var, NULL) == LM_OK &&
         lm_variant_check(k, &var, NULL) == LM_OK;
  }
  lm_kernel_free(k);
  return ok;
}

static void add(List *l, const char *name, const char *family, const char *src,
                const char *mapping, int64_t R, int64_t C) {
  char m[96]; /* with the ISA's name, it fits lm_calib_bench.variant */
  snprintf(m, sizeof m, "%s", mapping);
  if ((l->skipped = !for_target(l, src, m, sizeof m)))
    return;
  mapping = m;
  if (l->n == l->cap)
    l->b = realloc(l->b, sizeof *l->b * (size_t)(l->cap = l->cap ? 2 * l->cap : 64));
  lm_calib_bench *b = &l->b[l->n++];
  memset(b, 0, sizeof *b);
  b->name = strdup(name);
  b->family = family;
  b->source = src;
  snprintf(b->variant, sizeof b->variant, "%s/%s", lm_isa_name(l->isa), mapping);
  b->R = R < 1 ? 1 : R;
  b->C = C < 1 ? 1 : C;
}

/* Rows so that `bufs` buffers of R x C f32 take about `bytes` and no more
 * (whole packets of W rows, at least one). */
static int64_t rows_for(int64_t bytes, int64_t C, int bufs, int W) {
  int64_t R = bytes / (C * 4 * bufs);
  R = R / W * W;
  return R < W ? W : R;
}

/* Row length for a working set of `bytes` in `bufs` f32 buffers: 1024
 * columns, fewer (a multiple of W) when W rows of 1024 would not fit, so
 * that the set really has the intended size. */
static int64_t cols_for(int64_t bytes, int bufs, int W) {
  int64_t C = bytes / (4 * bufs * W) / W * W;
  return C > 1024 ? 1024 : C < W ? W : C;
}

/* The math routines every provider is timed on (sigmoid is exp and a
 * division, and has no routine of its own). */
static const struct {
  const char *name, *src;
  lm_op op;
} fns[] = {{"exp", src_exp, LM_OP_EXP},    {"erf", src_erf, LM_OP_ERF},
           {"tanh", src_tanh, LM_OP_TANH}, {"log", src_log, LM_OP_LOG},
           {"sin", src_sin, LM_OP_SIN}};

int lm_calib_benches(lm_isa isa, int quick, const lm_caches *c,
                     lm_calib_bench **out) {
  List l = {.isa = isa, .W = lm_isa_lanes(isa, LM_F32, 1)};
  int W = l.W;
  char m[128], name[128];
  snprintf(m, sizeof m, "w%d/l%d/t1", W, W);
  const char *local = strdup(m);

  /* bandwidth per cache level: working sets at a third of L1 and L2 (so
   * that the 2N run still fits), in L3 at the geometric middle of the range
   * it serves (L2 .. a third of L3: a large shared L3, as on a VM host,
   * serves the sizes just past L2 much faster than its far end), and past
   * the last level when memory is reachable in reasonable time */
  double l3mid = sqrt((double)c->l2 * (double)(c->l3 / 3));
  int64_t levels[4] = {c->l1 / 3, c->l2 / 3, (int64_t)l3mid, 0};
  if (levels[2] < c->l2)
    levels[2] = c->l3 / 3;
  const char *lvname[4] = {"l1", "l2", "l3", "dram"};
  int64_t dram = c->l3 * 3 / 2;
  int nlev = 3;
  if (!quick && dram <= ((int64_t)768 << 20)) {
    levels[3] = dram;
    nlev = 4;
  }
  for (int lv = 0; lv < nlev; lv++) {
    int64_t B = levels[lv];
    snprintf(name, sizeof name, "load_%s", lvname[lv]);
    add(&l, name, "bandwidth", src_load, local, rows_for(B, cols_for(B, 1, W), 1, W),
        cols_for(B, 1, W));
    snprintf(name, sizeof name, "store_%s", lvname[lv]);
    add(&l, name, "bandwidth", src_store, local, rows_for(B, cols_for(B, 1, W), 1, W),
        cols_for(B, 1, W));
    snprintf(name, sizeof name, "copy_%s", lvname[lv]);
    add(&l, name, "bandwidth", src_copy, local, rows_for(B, cols_for(B, 2, W), 2, W),
        cols_for(B, 2, W));
    snprintf(name, sizeof name, "triad_%s", lvname[lv]);
    add(&l, name, "bandwidth", src_triad, local, rows_for(B, cols_for(B, 3, W), 3, W),
        cols_for(B, 3, W));
  }
  int64_t l1C = 64, l1R = rows_for(c->l1 / 3, l1C, 2, W);

  /* global access: gathers vs transposes vs segments vs contiguous */
  snprintf(m, sizeof m, "w%d/l1/glob=gather/t1", W);
  add(&l, "glob_gather", "global", src_copy, m, l1R, l1C);
  snprintf(m, sizeof m, "w%d/l1/glob=transpose/t1", W);
  add(&l, "glob_transpose", "global", src_copy, m, l1R, l1C);
  snprintf(m, sizeof m, "w%d/l%d/glob=transpose/t1", W, W / 4);
  add(&l, "glob_segment", "global", src_copy, m, l1R, l1C);
  add(&l, "glob_segment_load", "global", src_load, m, l1R, l1C);
  snprintf(m, sizeof m, "w%d/l%d/glob=gather/t1", W, W / 4);
  add(&l, "glob_segment_gather", "global", src_copy, m, l1R, l1C);
  /* gathers without scatters (a row sum): copies gather and scatter the
   * same elements, so these separate the two */
  add(&l, "glob_segment_gather_load", "global", src_load, m, l1R, l1C);
  snprintf(m, sizeof m, "w%d/l1/glob=gather/t1", W);
  add(&l, "glob_gather_load", "global", src_load, m, l1R, l1C);
  add(&l, "glob_contiguous", "global", src_copy, local, l1R, l1C);
  /* gathers over rows 4 KiB apart: every row of a gather in one L1 set */
  snprintf(m, sizeof m, "w%d/l1/glob=gather/t1", W);
  add(&l, "glob_gather_alias", "global", src_copy, m, 4 * W, 1024);
  snprintf(m, sizeof m, "w%d/l%d/glob=gather/t1", W, W / 4);
  add(&l, "glob_segment_gather_alias", "global", src_copy, m, 4 * W, 1024);

  /* private arrays: slot vs gather vs masked, full steps and tail-heavy */
  const char *privs[3] = {"slot", "gather", "masked"};
  for (int i = 0; i < 3; i++) {
    snprintf(m, sizeof m, "w%d/l1/priv=%s/glob=transpose/phase=snapshot/t1", W, privs[i]);
    snprintf(name, sizeof name, "priv_%s_program", privs[i]);
    add(&l, name, "private", src_priv, m, l1R, l1C);
    /* predication: one masked step of three lanes per row */
    snprintf(m, sizeof m, "w%d/l%d/priv=%s/phase=snapshot/t1", W, W, privs[i]);
    snprintf(name, sizeof name, "predicate_%s", privs[i]);
    add(&l, name, "predication", src_priv, m, 2048, 2 * W + 3);
    /* the same with no full step at all: only the masked step's costs
     * (mask computation, blend or masked store) change against the above */
    snprintf(name, sizeof name, "predicate_%s_tail_only", privs[i]);
    add(&l, name, "predication", src_priv, m, 4096, 3);
  }
  /* a masked load without a masked store: row sums with a 3-lane tail */
  add(&l, "predicate_load_tail", "predication", src_load, local, 2048, 2 * W + 3);
  snprintf(m, sizeof m, "w%d/l1/glob=transpose/phase=reread/t1", W);
  add(&l, "priv_reread_program", "private", src_priv, m, l1R, l1C);

  /* masked tail steps at C = kW - 1 and kW + 1 (one masked step of W - 1
   * lanes or of one lane after k full steps), at each register width the
   * ISA has, on a copy (masked load and store), a row sum (masked load)
   * and the ALU kernel (many instructions under the mask): mask_step and
   * mask_ins apart from the full steps' terms */
  {
    int Wn0 = lm_isa_lanes(isa, LM_F32, 0);
    int widths[2] = {W, Wn0 > 0 && Wn0 < W ? Wn0 : 0};
    const int ks[2] = {1, 4};
    for (int wi = 0; wi < 2 && widths[wi]; wi++)
      for (int ki = 0; ki < (quick ? 1 : 2); ki++)
        for (int d = -1; d <= 1; d += 2) {
          int w = widths[wi];
          int64_t C = (int64_t)ks[ki] * w + d;
          snprintf(m, sizeof m, "w%d/l%d/t1", w, w);
          snprintf(name, sizeof name, "tail_copy_w%d_c%lld", w, (long long)C);
          add(&l, name, "tail", src_copy, m, rows_for(c->l1 / 3, C, 2, W), C);
          snprintf(name, sizeof name, "tail_load_w%d_c%lld", w, (long long)C);
          add(&l, name, "tail", src_load, m, rows_for(c->l1 / 3, C, 1, W), C);
          snprintf(name, sizeof name, "tail_alu_w%d_c%lld", w, (long long)C);
          add(&l, name, "tail", src_alu, m, rows_for(c->l1 / 3, C, 3, W), C);
        }
  }

  /* gathers, scatters, transposes and segments on short rows (C from 3 to
   * 33; the global family's are 64 columns): per-packet and per-step costs
   * that long rows amortise */
  {
    static const int64_t shortC[4] = {3, 7, 17, 33};
    for (int i = 0; i < 4; i++) {
      int64_t C = shortC[i];
      if (quick && (i == 1 || i == 3))
        continue;
      int64_t R = rows_for(c->l1 / 3, C, 2, W);
      snprintf(m, sizeof m, "w%d/l1/glob=gather/t1", W);
      snprintf(name, sizeof name, "short_gather_c%lld", (long long)C);
      add(&l, name, "short_rows", src_copy, m, R, C);
      snprintf(m, sizeof m, "w%d/l1/glob=transpose/t1", W);
      snprintf(name, sizeof name, "short_transpose_c%lld", (long long)C);
      add(&l, name, "short_rows", src_copy, m, R, C);
      snprintf(m, sizeof m, "w%d/l%d/glob=transpose/t1", W, W / 4);
      snprintf(name, sizeof name, "short_segment_c%lld", (long long)C);
      add(&l, name, "short_rows", src_copy, m, R, C);
    }
  }

  /* register pressure: spills across math calls, from many accumulators
   * and from the columns of a transposed block */
  add(&l, "spill_expsum", "spill", src_expsum, local, rows_for(c->l1 / 3, 256, 1, W), 256);
  add(&l, "spill_moments", "spill", src_moments, local, rows_for(c->l1 / 3, 256, 2, W), 256);
  snprintf(m, sizeof m, "w%d/l1/glob=transpose/t1", W);
  add(&l, "spill_block3", "spill", src_fma3, m, rows_for(c->l1 / 3, 64, 4, W), 64);
  snprintf(m, sizeof m, "w%d/l%d/glob=transpose/t1", W, W / 4);
  add(&l, "spill_segment3", "spill", src_fma3, m, rows_for(c->l1 / 3, 64, 4, W), 64);

  /* mask density: ragged rows under program mapping, prefix and random */
  const double dens[4] = {0, 0.125, 0.5, 1};
  snprintf(m, sizeof m, "w%d/l1/glob=gather/t1", W);
  for (int i = 0; i < 4; i++) {
    snprintf(name, sizeof name, "density_prefix_%g", dens[i]);
    add(&l, name, "mask_density", src_ragged, m, l1R, l1C);
    last(&l)->density = dens[i] > 0 ? dens[i] : 1e-9;
  }
  add(&l, "density_random_0.5", "mask_density", src_ragged, m, l1R, l1C);
  last(&l)->density = 0.5, last(&l)->random_lens = 1;
  add(&l, "density_local_0.5", "mask_density", src_ragged, local, l1R, l1C);
  last(&l)->density = 0.5;

  /* horizontal reduction steps by L: one step per row, C = L */
  for (int L = 2; L <= W; L *= 2) {
    if (L < W)
      snprintf(m, sizeof m, "w%d/l%d/glob=transpose/t1", W, L);
    else
      snprintf(m, sizeof m, "w%d/l%d/t1", W, L);
    snprintf(name, sizeof name, "hreduce_l%d", L);
    add(&l, name, "hreduce", src_load, m, 4096, L);
  }

  /* division, square roots, vector math, plain ALU */
  struct {
    const char *name, *src;
  } ops[] = {{"div", src_div},   {"sqrt", src_sqrt}, {"rsqrt", src_rsqrt},
             {"exp", src_exp},   {"erf", src_erf},   {"sigmoid", src_sigmoid},
             {"tanh", src_tanh}, {"log", src_log},   {"sin", src_sin},
             {"alu", src_alu}};
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    add(&l, ops[i].name, i < 3 ? "divsqrt" : i < 9 ? "math" : "alu", ops[i].src,
        local, rows_for(c->l1 / 3, 256, 2, W), 256);

  /* the other math providers' routines, on the same sizes: one term each
   * (exp_mvec prices vexp_mvec, ...) */
  for (int mp = LM_MATH_SLEEF + 1; mp < LM_MATH__COUNT; mp++)
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
      if (!lm_vmath_bound_of(mp, fns[i].op, LM_F32, NULL))
        continue;
      snprintf(m, sizeof m, "w%d/l%d/math=%s/t1", W, W, lm_math_name(mp));
      snprintf(name, sizeof name, "%s_%s", fns[i].name, lm_math_name(mp));
      add(&l, name, "math", fns[i].src, m, rows_for(c->l1 / 3, 256, 2, W),
          256);
    }

  /* loop and task overhead: tiny rows, many of them */
  add(&l, "loop_local_c1", "loop", src_copy, local, 8192, 1);
  add(&l, "loop_local_c4w", "loop", src_copy, local, 2048, 4 * W);
  snprintf(m, sizeof m, "w%d/l1/glob=gather/t1", W);
  add(&l, "loop_program_c1", "loop", src_copy, m, 8192, 1);
  add(&l, "launch_tiny", "loop", src_copy, local, 1, 1);

  /* thread-pool fork-join by worker count */
  snprintf(m, sizeof m, "w%d/l%d/t2/g1", W, W);
  add(&l, "fork_tiny_t2", "forkjoin", src_copy, m, 2, 16);
  add(&l, "fork_tasks_t2", "forkjoin", src_copy, m, 256, 16);
  /* the same rows in 4x fewer tasks: the task cost apart from the rows' */
  snprintf(m, sizeof m, "w%d/l%d/t2/g4", W, W);
  add(&l, "fork_tasks_t2_g4", "forkjoin", src_copy, m, 256, 16);
  /* each split at small, middle and large work per chunk: the launch and
   * claim costs of static blocks and of K chunks per worker; the workers'
   * late join, which decides launches of a few microseconds (the middle
   * size, 256 rows of 64 columns); and the speed-up of the busiest
   * worker's share when each worker's rows fill half of L2 */
  static const char *const splits[] = {"static", "dyn4", "dyn16"};
  int64_t bigR = rows_for(c->l2, 256, 2, W);
  for (int i = 0; i < 3; i++) {
    snprintf(m, sizeof m, "w%d/l%d/t2/%s", W, W, splits[i]);
    snprintf(name, sizeof name, "fork_%s_small_t2", splits[i]);
    add(&l, name, "forkjoin", src_copy, m, i == 0 ? 2 : 256, 16);
    snprintf(name, sizeof name, "fork_%s_mid_t2", splits[i]);
    add(&l, name, "forkjoin", src_copy, m, 256, 64);
    snprintf(name, sizeof name, "fork_%s_large_t2", splits[i]);
    add(&l, name, "forkjoin", src_copy, m, bigR, 256);
  }

  /* register width: where the ISA has two widths for f32 (AVX-512: zmm
   * and ymm), the same kernels at the narrow width, so the fit can tell a
   * 512-bit instruction's cost from two 256-bit ones (wide512) and a math
   * call's two widths apart (vexp and vexp_wide, ...) */
  int Wn = lm_isa_lanes(isa, LM_F32, 0);
  if (Wn > 0 && Wn < W) {
    snprintf(m, sizeof m, "w%d/l%d/t1", Wn, Wn);
    for (int lv = 0; lv < 2; lv++) {
      int64_t B = levels[lv];
      snprintf(name, sizeof name, "narrow_load_%s", lvname[lv]);
      add(&l, name, "width", src_load, m, rows_for(B, cols_for(B, 1, W), 1, W),
          cols_for(B, 1, W));
      snprintf(name, sizeof name, "narrow_copy_%s", lvname[lv]);
      add(&l, name, "width", src_copy, m, rows_for(B, cols_for(B, 2, W), 2, W),
          cols_for(B, 2, W));
      snprintf(name, sizeof name, "narrow_triad_%s", lvname[lv]);
      add(&l, name, "width", src_triad, m, rows_for(B, cols_for(B, 3, W), 3, W),
          cols_for(B, 3, W));
    }
    /* streaming from L3 at both widths (copy and triad) */
    int64_t B3 = levels[2];
    add(&l, "narrow_copy_l3", "width", src_copy, m, rows_for(B3, 1024, 2, W), 1024);
    add(&l, "narrow_triad_l3", "width", src_triad, m, rows_for(B3, 1024, 3, W), 1024);
    add(&l, "narrow_alu", "width", src_alu, m, rows_for(c->l1 / 3, 256, 2, W), 256);
    add(&l, "narrow_div", "width", src_div, m, rows_for(c->l1 / 3, 256, 2, W), 256);
    add(&l, "narrow_loop_c4w", "width", src_copy, m, 2048, 4 * Wn);
    snprintf(m, sizeof m, "w%d/l1/glob=gather/t1", Wn);
    add(&l, "narrow_glob_gather_rows4k", "width", src_copy, m, 4 * W, 1024);
    snprintf(m, sizeof m, "w%d/l%d/priv=slot/phase=snapshot/t1", Wn, Wn);
    add(&l, "narrow_predicate_slot", "width", src_priv, m, 2048, 2 * Wn + 3);
    /* every provider's routines at the narrow width, on the sizes of
     * their wide benchmarks: a call's two widths are two terms
     * (narrow_exp prices vexp, exp prices vexp_wide) */
    for (int mp = 0; mp < LM_MATH__COUNT; mp++)
      for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        if (!lm_vmath_bound_of(mp, fns[i].op, LM_F32, NULL))
          continue;
        if (mp == LM_MATH_SLEEF) {
          snprintf(m, sizeof m, "w%d/l%d/t1", Wn, Wn);
          snprintf(name, sizeof name, "narrow_%s", fns[i].name);
        } else {
          snprintf(m, sizeof m, "w%d/l%d/math=%s/t1", Wn, Wn, lm_math_name(mp));
          snprintf(name, sizeof name, "narrow_%s_%s", fns[i].name, lm_math_name(mp));
        }
        add(&l, name, "width", fns[i].src, m, rows_for(c->l1 / 3, 256, 2, W), 256);
      }
  }

  /* composition check */
  snprintf(m, sizeof m, "w%d/l%d/phase=reread/t1", W, W);
  add(&l, "mix_norm_l1", "mixed", src_mix_norm, m, rows_for(c->l1 / 2, 256, 2, W), 256);
  last(&l)->mixed = 1;
  add(&l, "mix_norm_l3", "mixed", src_mix_norm, m, rows_for(c->l3 / 4, 1024, 2, W), 1024);
  last(&l)->mixed = 1;
  add(&l, "mix_exp_l2", "mixed", src_mix_exp, local, rows_for(c->l2 / 2, 1024, 3, W), 1024);
  last(&l)->mixed = 1;
  snprintf(m, sizeof m, "w%d/l%d/priv=slot/glob=transpose/phase=snapshot/t1", W, W / 2);
  add(&l, "mix_norm_partial", "mixed", src_mix_norm, m, 4096, 24);
  last(&l)->mixed = 1;
  free((char *)local);
  *out = l.b;
  return l.n;
}

void lm_calib_benches_free(lm_calib_bench *b, int n) {
  for (int i = 0; i < n; i++)
    free((char *)b[i].name);
  free(b);
}
