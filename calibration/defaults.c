/* Named defaults: the uncalibrated profile and the plausible range of each
 * coefficient.  Defaults assume a ~3 GHz x86 core (0.33 ns per cycle) and
 * take cycle counts from public instruction tables (uops.info, LLVM's
 * scheduling models) and DESIGN.md §2b: one vector ALU op per cycle, a
 * vector divide about 6-10 cycles, a 16-lane gather about 13-17 cycles,
 * SLEEF u10 routines 15-40 cycles, L1/L2/L3/memory at about 64/32/16/8
 * bytes per cycle... per core.  They are the "uncalibrated default
 * profile" baseline of the held-out evaluation, not a source of truth:
 * calibration replaces every one of them with a measured value.  The
 * plausible range of a coefficient is [default/20, default*20]; a fitted
 * value outside it is re-measured and then flagged. */
#include <math.h>
#include <string.h>

#include "lanemap/calibrate.h"

#define CYCLE 0.33 /* ns, a ~3 GHz core */

static const struct {
  lm_term t;
  double cycles; /* per counted unit */
  const char *unit;
} defaults[] = {
    {LM_T_VOP, 1, "ns/op"},          {LM_T_VDIV, 0.5, "ns/lane"},
    /* vector math, at the register's width and in wider code (the wide
     * twins): SLEEF u10's narrow calls from public cycle counts (15-40
     * cycles, above); every other routine and width is SLEEF u10's narrow
     * default times the ratio of the two fitted costs, each the median
     * over five quick calibrations of model form 9 on an Intel Xeon
     * (Sapphire Rapids, 2026-12-07; docs/costmodel.md, "Vector math at two
     * widths").  The ratios rank the providers as the machine does, which
     * matters where settling breaks a near tie by these defaults. */
    {LM_T_VEXP, 20, "ns/call"}, {LM_T_VEXPW, 22, "ns/call"},
    {LM_T_VLOG, 25, "ns/call"}, {LM_T_VLOGW, 22, "ns/call"},
    {LM_T_VTANH, 30, "ns/call"}, {LM_T_VTANHW, 43, "ns/call"},
    {LM_T_VERF, 25, "ns/call"}, {LM_T_VERFW, 32, "ns/call"},
    {LM_T_VSINCOS, 40, "ns/call"}, {LM_T_VSINCOSW, 44, "ns/call"},
    {LM_T_VLOG35, 14, "ns/call"}, {LM_T_VLOG35W, 8.8, "ns/call"},
    {LM_T_VTANH35, 11, "ns/call"}, {LM_T_VTANH35W, 13, "ns/call"},
    {LM_T_VSINCOS35, 21, "ns/call"}, {LM_T_VSINCOS35W, 16, "ns/call"},
    {LM_T_VEXPMV, 14, "ns/call"}, {LM_T_VEXPMVW, 15, "ns/call"},
    {LM_T_VLOGMV, 8, "ns/call"}, {LM_T_VLOGMVW, 9, "ns/call"},
    {LM_T_VTANHMV, 9.8, "ns/call"}, {LM_T_VTANHMVW, 6.9, "ns/call"},
    {LM_T_VERFMV, 4.3, "ns/call"}, {LM_T_VERFMVW, 7.9, "ns/call"},
    {LM_T_VSINCOSMV, 14, "ns/call"}, {LM_T_VSINCOSMVW, 19, "ns/call"},
    {LM_T_VEXPIR, 20, "ns/call"}, {LM_T_VEXPIRW, 25, "ns/call"},
    {LM_T_VLOGIR, 10, "ns/call"}, {LM_T_VLOGIRW, 15, "ns/call"},
    {LM_T_VTANHIR, 10, "ns/call"}, {LM_T_VTANHIRW, 16, "ns/call"},
    {LM_T_VERFIR, 1.9, "ns/call"}, {LM_T_VERFIRW, 2.8, "ns/call"},
    {LM_T_VLOAD, 0.5, "ns/op"},
    {LM_T_VSTORE, 1, "ns/op"},       {LM_T_SEGLOAD, 1, "ns/op"},
    {LM_T_SEGSTORE, 1, "ns/op"},     {LM_T_GATHER, 1, "ns/element"},
    {LM_T_SCATTER, 1.5, "ns/element"}, {LM_T_MASKLOAD, 1, "ns/op"},
    /* an element served by L2 instead of L1: a 64-byte fill every 2 cycles
     * shared by nothing, as a gathered line is used once before eviction */
    {LM_T_GALIAS, 2, "ns/element"},
    {LM_T_MASKSTORE, 2, "ns/op"},    {LM_T_BLEND, 2, "ns/op"},
    {LM_T_SHUFFLE, 1, "ns/op"},      {LM_T_HRED, 3, "ns/step"},
    /* a lane-crossing shuffle: 3 cycles of latency against 1 (uops.info,
     * vpermps vs vshufps); 512-bit ALU ops issue on 2 ports instead of 3
     * (port 1 is fused for zmm), about half an op more (the wide math
     * calls have their own twins, above) */
    {LM_T_HREDX, 2, "ns/step"},      {LM_T_WIDE, 0.5, "ns/op"},
    {LM_T_STEP, 1, "ns/step"},       {LM_T_MSTEP, 3, "ns/step"},
    /* a masked instruction beyond its unmasked form: AVX-512's merge
     * masking adds a dependency on the destination, not an operation
     * (uops.info), AVX2 blends its result (one more op): half a cycle
     * between the two.  A spill is an L1 store and its reload an L1 load,
     * about a cycle each (the store port, and a reload's latency mostly
     * hidden by the loop's other work) */
    {LM_T_MASKI, 0.5, "ns/op"},      {LM_T_SPILL, 1, "ns/op"},
    /* a load that cannot forward from a masked store waits for the store
     * to leave the store buffer: 4.6 ns, 14 cycles, measured on the
     * project's VM (costmodel/counts.h, LM_COST_FWD_UOPS) */
    {LM_T_FWD, 14, "ns/stall"},
    {LM_T_PACKET, 10, "ns/packet"},  {LM_T_CALL, 15, "ns/call"},
    {LM_T_TASK, 60, "ns/claim"},      {LM_T_FORK, 3000, "ns/launch"},
    {LM_T_B_L2, 1.0 / 32, "ns/byte"},
    {LM_T_B_L3, 1.0 / 16, "ns/byte"}, {LM_T_B_DRAM, 1.0 / 8, "ns/byte"},
};

void lm_term_default(lm_term t, double *coef, double *lo, double *hi,
                     const char **unit) {
  for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
    if (defaults[i].t == t) {
      *coef = defaults[i].cycles * CYCLE;
      *lo = *coef / 20;
      *hi = *coef * 20;
      *unit = defaults[i].unit;
      return;
    }
  *coef = 0, *lo = 0, *hi = INFINITY, *unit = "ns";
}

int lm_term_on_trial(lm_term t) { return t == LM_T_MASKI || t == LM_T_SPILL; }

void lm_calib_defaults(lm_calib_opts *o) {
  memset(o, 0, sizeof *o);
  o->isa = LM_ISA_HOST;
  o->quick = 1;
  o->seed = 1;
}

/* AArch64 targets: the instruction-level terms in cycles per unit from
 * LLVM 19's scheduling models of one public core per target, as
 * calibration/tables/aarch64-mca.sh reads them with llvm-mca (the block
 * reciprocal throughput of each term's instructions; tests/test_aarch64.c
 * checks that this table is what the script prints): Neoverse N1 for
 * NEON, V2 for SVE at 128 bits, V1 at 256, A64FX at 512.  NEON has no
 * masked operation, gather or scatter, and LLVM uses SVE's gathers and
 * scatters only from 256 bits: the script times the lane-by-lane code
 * LLVM emits instead.  A gathered (scattered) element costs at least
 * the core's scalar load (store).  At the x86 defaults' ~3 GHz.  The
 * other terms (math, memory, steps, tasks) keep the x86 defaults.
 * The width terms: NEON's W = 8 is a pair of registers, so wide512 is one
 * more vector op per instruction and a wide math call two narrow ones
 * (the routine runs on each half); SVE code is never wider than its
 * register, and no AArch64 core has AVX-512's port fusion. */
enum { A64_NEON, A64_SVE128, A64_SVE256, A64_SVE512, A64__COUNT };
static const struct {
  lm_term t;
  double cycles[A64__COUNT];
} aarch64_defaults[] = {
    /*                 neoverse-n1 neoverse-v2 neoverse-v1 a64fx */
    {LM_T_VOP, {0.50, 0.25, 0.50, 0.50}},
    {LM_T_VDIV, {1.75, 1.12, 0.88, 6.12}},
    {LM_T_VLOAD, {0.50, 0.33, 0.50, 0.50}},
    {LM_T_VSTORE, {1.00, 0.50, 0.50, 1.00}},
    {LM_T_MASKLOAD, {2.00, 1.00, 2.00, 1.00}},
    {LM_T_MASKSTORE, {2.00, 1.00, 2.00, 1.00}},
    {LM_T_GATHER, {1.00, 1.00, 0.33, 0.50}},
    {LM_T_SCATTER, {1.00, 2.00, 0.50, 0.50}},
    {LM_T_BLEND, {0.50, 0.25, 0.50, 0.50}},
    {LM_T_SHUFFLE, {0.50, 0.25, 0.50, 1.00}},
    {LM_T_HRED, {1.00, 0.50, 1.00, 1.00}},
    {LM_T_WIDE, {0.50, 0, 0, 0}},
};

static void default_for(lm_isa isa, lm_term t, lm_profile_term *pt) {
  lm_term_default(t, &pt->coef, &pt->lo, &pt->hi, &pt->unit);
  isa = lm_isa_resolve(isa); /* `host` on an AArch64 machine */
  int a = isa == LM_ISA_NEON     ? A64_NEON
          : isa == LM_ISA_SVE128 ? A64_SVE128
          : isa == LM_ISA_SVE256 ? A64_SVE256
          : isa == LM_ISA_SVE512 ? A64_SVE512
                                 : -1;
  if (a < 0)
    return;
  if (t >= LM_T_FIRST_WMATH && t <= LM_T_LAST_WMATH) { /* NEON pairs only */
    double narrow, nlo, nhi;
    const char *u;
    lm_term_default((lm_term)(t - LM_T_FIRST_WMATH + LM_T_FIRST_MATH), &narrow, &nlo, &nhi, &u);
    pt->coef = a == A64_NEON ? 2 * narrow : 0;
    pt->lo = pt->coef / 20;
    if (pt->coef > 0)
      pt->hi = pt->coef * 20;
    return;
  }
  for (size_t i = 0; i < sizeof aarch64_defaults / sizeof aarch64_defaults[0]; i++)
    if (aarch64_defaults[i].t == t) {
      pt->coef = aarch64_defaults[i].cycles[a] * CYCLE;
      pt->lo = pt->coef / 20;
      if (pt->coef > 0)
        pt->hi = pt->coef * 20;
    }
}

lm_status lm_profile_default(lm_isa isa, lm_profile **out, lm_error *err) {
  *out = NULL;
  lm_profile *p = lm_profile_new(lm_isa_name(isa), LM_PROFILE_DEFAULT, err);
  if (!p)
    return LM_ESYS;
  lm_fingerprint fp;
  if (lm_fingerprint_host(&fp, err) == LM_OK)
    lm_profile_set_fingerprint(p, &fp, err);
  for (int t = 0; t < LM_T__COUNT; t++) {
    lm_profile_term pt = {0};
    pt.name = lm_term_name(t);
    default_for(isa, t, &pt);
    if (lm_term_on_trial(t)) /* untried: not in the uncalibrated model */
      pt.coef = 0;
    pt.p5 = pt.p50 = pt.p95 = pt.coef;
    if (lm_profile_add_term(p, &pt, err) != LM_OK) {
      lm_profile_free(p);
      return LM_ESYS;
    }
  }
  lm_profile_term ov = {"overlap", "1", 1, 1, 1, 1, 0, 1, false};
  lm_profile_add_term(p, &ov, err);
  lm_profile_term jn = {"join", "ns", LM_JOIN_DEFAULT_NS, LM_JOIN_DEFAULT_NS,
                        LM_JOIN_DEFAULT_NS, LM_JOIN_DEFAULT_NS, 0,
                        LM_JOIN_MAX_NS, false};
  lm_profile_add_term(p, &jn, err);
  *out = p;
  return LM_OK;
}
