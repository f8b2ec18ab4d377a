/* Variants: the mapping space of DESIGN.md §6 as values with one stable
 * string form.  Parsing checks what can be checked without a kernel;
 * lm_variant_check adds the kernel's facts (element type, private-array
 * candidates).  The enumerator lists exactly the variants that the check
 * accepts, so "every legal variant" has one meaning across the project. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__aarch64__)
#include <sys/auxv.h>
#include <sys/prctl.h>
#endif

#include "lanemap/backend.h"
#include "lanemap/runtime.h"
#include "lanemap/variant.h"

static const char *isa_names[LM_ISA__COUNT] = {
    "x86-64-v2",      "x86-64-v3",      "x86-64-v4",     "host",
    "aarch64-neon",   "aarch64-sve128", "aarch64-sve256", "aarch64-sve512"};

const char *lm_isa_name(lm_isa isa) {
  return isa < LM_ISA__COUNT ? isa_names[isa] : "?";
}

lm_status lm_isa_parse(const char *t, lm_isa *out, lm_error *err) {
  static const struct {
    const char *name;
    lm_isa isa;
  } alias[] = {{"x86-64-v2", LM_ISA_SSE42}, {"sse4.2", LM_ISA_SSE42},
               {"x86-64-v3", LM_ISA_AVX2},  {"avx2", LM_ISA_AVX2},
               {"x86-64-v4", LM_ISA_AVX512}, {"avx512", LM_ISA_AVX512},
               {"host", LM_ISA_HOST},
               {"aarch64-neon", LM_ISA_NEON},  {"neon", LM_ISA_NEON},
               {"aarch64-sve128", LM_ISA_SVE128}, {"sve128", LM_ISA_SVE128},
               {"aarch64-sve256", LM_ISA_SVE256}, {"sve256", LM_ISA_SVE256},
               {"aarch64-sve512", LM_ISA_SVE512}, {"sve512", LM_ISA_SVE512}};
  for (size_t i = 0; i < sizeof alias / sizeof alias[0]; i++)
    if (strcmp(t, alias[i].name) == 0) {
      *out = alias[i].isa;
      return LM_OK;
    }
  return lm_error_set(err, LM_EINPUT,
                      "unknown ISA target '%s' (expected sse4.2, avx2, "
                      "avx512, host, x86-64-v2/v3/v4, aarch64-neon or "
                      "aarch64-sve128/256/512)",
                      t);
}

/* The ISA that `host` stands for on this machine. */
#if defined(__x86_64__)
static lm_isa host_isa(void) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
    return LM_ISA_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return LM_ISA_AVX2;
  return LM_ISA_SSE42;
}
#elif defined(__aarch64__)
/* A native AArch64 build (not built or run by the project: docs/aarch64.md):
 * SVE from the kernel's HWCAP, its length from the thread's vector length. */
static lm_isa host_isa(void) {
  if (getauxval(AT_HWCAP) & HWCAP_SVE) {
    int vl = prctl(PR_SVE_GET_VL);
    int bytes = vl < 0 ? 0 : vl & PR_SVE_VL_LEN_MASK;
    if (bytes == 16)
      return LM_ISA_SVE128;
    if (bytes == 32)
      return LM_ISA_SVE256;
    if (bytes == 64)
      return LM_ISA_SVE512;
  }
  return LM_ISA_NEON;
}
#else
#error "lanemap's host detection knows x86-64 and AArch64"
#endif

int lm_isa_is_aarch64(lm_isa isa) {
#if defined(__aarch64__)
  if (isa == LM_ISA_HOST)
    return 1;
#endif
  return isa >= LM_ISA_NEON && isa <= LM_ISA_SVE512;
}

int lm_isa_sve_bits(lm_isa isa) {
  return isa == LM_ISA_SVE128   ? 128
         : isa == LM_ISA_SVE256 ? 256
         : isa == LM_ISA_SVE512 ? 512
                                : 0;
}

int lm_isa_has_fma(lm_isa isa) {
  if (lm_isa_is_aarch64(isa))
    return 1; /* FMLA is part of AdvSIMD and SVE */
  return (isa == LM_ISA_HOST ? host_isa() : isa) >= LM_ISA_AVX2;
}

int lm_isa_runnable(lm_isa isa) {
  if ((unsigned)isa >= LM_ISA__COUNT)
    return 0;
  if (isa == LM_ISA_HOST)
    return 1;
#if defined(__x86_64__)
  if (lm_isa_is_aarch64(isa))
    return 0; /* an x86-64 build runs x86-64 code only */
  __builtin_cpu_init();
  if (isa == LM_ISA_SSE42)
    return __builtin_cpu_supports("sse4.2");
  return isa <= host_isa();
#else
  /* NEON everywhere; SVE code only at the machine's own vector length */
  return isa == LM_ISA_NEON || isa == host_isa();
#endif
}

/* Vector bytes: `wide` is the ISA's widest register (or, on NEON, a pair of
 * 128-bit registers, as the reference report's W = 8); the narrow form is
 * AVX-512's ymm and NEON's single register. */
int lm_isa_lanes(lm_isa isa, lm_dtype elem, int wide) {
  if (isa == LM_ISA_HOST)
    isa = host_isa();
  int bytes = isa == LM_ISA_AVX512  ? (wide ? 64 : 32)
              : isa == LM_ISA_AVX2  ? 32
              : isa == LM_ISA_NEON  ? (wide ? 32 : 16)
              : lm_isa_sve_bits(isa) ? lm_isa_sve_bits(isa) / 8
                                    : 16;
  return bytes / (int)(elem == LM_F64 ? 8 : 4);
}

lm_isa lm_isa_resolve(lm_isa isa) { return isa == LM_ISA_HOST ? host_isa() : isa; }

int lm_isa_base_bytes(lm_isa isa) {
  if (isa == LM_ISA_HOST)
    isa = host_isa();
  return isa == LM_ISA_AVX512 || isa == LM_ISA_AVX2 ? 32
         : lm_isa_sve_bits(isa)                    ? lm_isa_sve_bits(isa) / 8
                                                   : 16;
}

static int legal_w(lm_isa isa, lm_dtype elem, int w) {
  if (w == lm_isa_lanes(isa, elem, 1))
    return 1;
  lm_isa eff = isa == LM_ISA_HOST ? host_isa() : isa;
  return (eff == LM_ISA_AVX512 || eff == LM_ISA_NEON) &&
         w == lm_isa_lanes(isa, elem, 0);
}

static int pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }

static const char *priv_name[] = {"none", "gather", "slot", "masked"};
static const char *glob_name[] = {"none", "gather", "transpose"};
static const char *phase_name[] = {"none", "snapshot", "reread"};
static const char *fp_name[] = {"strict", "relaxed"};

const char *lm_fp_name(lm_fp f) {
  return (unsigned)f < LM_FP__COUNT ? fp_name[f] : "?";
}

int lm_fp_lookup(const char *name) {
  for (int i = 0; i < LM_FP__COUNT; i++)
    if (strcmp(fp_name[i], name) == 0)
      return i;
  return -1;
}

char *lm_variant_format(const lm_variant *v, char *buf, size_t n) {
  int k = snprintf(buf, n, "%s/w%d/l%d", lm_isa_name(v->isa), v->w, v->l);
  if (v->priv != LM_PRIV_NONE)
    k += snprintf(buf + k, n > (size_t)k ? n - k : 0, "/priv=%s",
                  priv_name[v->priv]);
  if (v->glob != LM_GLOB_NONE)
    k += snprintf(buf + k, n > (size_t)k ? n - k : 0, "/glob=%s",
                  glob_name[v->glob]);
  if (v->phase != LM_PHASE_NONE)
    k += snprintf(buf + k, n > (size_t)k ? n - k : 0, "/phase=%s",
                  phase_name[v->phase]);
  if (v->math != LM_MATH_SLEEF)
    k += snprintf(buf + k, n > (size_t)k ? n - k : 0, "/math=%s",
                  lm_math_name(v->math));
  if (v->fp != LM_FP_STRICT)
    k += snprintf(buf + k, n > (size_t)k ? n - k : 0, "/fp=%s",
                  lm_fp_name(v->fp));
  k += snprintf(buf + k, n > (size_t)k ? n - k : 0, "/t%d", v->workers);
  if (v->workers > 1 && v->split == LM_SPLIT_STATIC)
    snprintf(buf + k, n > (size_t)k ? n - k : 0, "/static");
  else if (v->workers > 1 && v->split == LM_SPLIT_DYNAMIC)
    snprintf(buf + k, n > (size_t)k ? n - k : 0, "/dyn%d", v->per_worker);
  else if (v->workers > 1)
    snprintf(buf + k, n > (size_t)k ? n - k : 0, "/g%lld",
             (long long)v->grain);
  return buf;
}

static int parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out) {
  if (!*s || strlen(s) > 12)
    return 0;
  int64_t v = 0;
  for (const char *p = s; *p; p++) {
    if (*p < '0' || *p > '9')
      return 0;
    v = v * 10 + (*p - '0');
  }
  if (v < lo || v > hi)
    return 0;
  *out = v;
  return 1;
}

static int lookup(const char *const *names, int n, const char *s) {
  for (int i = 1; i < n; i++)
    if (strcmp(names[i], s) == 0)
      return i;
  return -1;
}

/* Kernel-independent rules shared by the parser and the check. */
static lm_status check_fields(const lm_variant *v, lm_dtype elem,
                              lm_error *err) {
  if (!legal_w(v->isa, elem, v->w))
    return lm_error_set(err, LM_EINPUT,
                        "w%d is not a vector width of %s for %s data", v->w,
                        lm_isa_name(v->isa), lm_dtype_name(elem));
  if (!pow2(v->l) || v->l > v->w)
    return lm_error_set(err, LM_EINPUT,
                        "l%d: L must be a power of two between 1 and W=%d",
                        v->l, v->w);
  if (v->l < v->w && v->glob == LM_GLOB_NONE)
    return lm_error_set(err, LM_EINPUT,
                        "L=%d < W=%d needs glob=gather or glob=transpose",
                        v->l, v->w);
  if (v->l == v->w && v->glob != LM_GLOB_NONE)
    return lm_error_set(err, LM_EINPUT,
                        "glob applies only when L < W; packet-local (L=W) "
                        "uses contiguous loads");
  if ((v->priv != LM_PRIV_NONE) != (v->phase == LM_PHASE_SNAPSHOT))
    return lm_error_set(err, LM_EINPUT,
                        v->priv != LM_PRIV_NONE
                            ? "priv applies only with phase=snapshot"
                            : "phase=snapshot needs priv=gather, slot or "
                              "masked");
  if (v->workers < 1 || v->workers > LM_MAX_WORKERS)
    return lm_error_set(err, LM_EINPUT, "t%d: workers must be 1..%d",
                        v->workers, LM_MAX_WORKERS);
  int64_t per = v->w / v->l;
  if (v->workers == 1 && (v->split != LM_SPLIT_GRAIN || v->grain != 0))
    return lm_error_set(err, LM_EINPUT,
                        "a split (static, dynK or gG) applies only with t > 1");
  if (v->workers > 1 && v->split == LM_SPLIT_GRAIN &&
      (v->grain < per || v->grain % per != 0))
    return lm_error_set(err, LM_EINPUT,
                        "g%lld: grain must be a positive multiple of W/L=%lld",
                        (long long)v->grain, (long long)per);
  if (v->workers > 1 && v->split == LM_SPLIT_DYNAMIC &&
      (v->per_worker < 1 || v->per_worker > LM_SPLIT_DYN_MAX))
    return lm_error_set(err, LM_EINPUT,
                        "dyn%d: chunks per worker must be 1..%d",
                        v->per_worker, LM_SPLIT_DYN_MAX);
  if (v->split != LM_SPLIT_GRAIN && v->split != LM_SPLIT_STATIC &&
      v->split != LM_SPLIT_DYNAMIC)
    return lm_error_set(err, LM_EINPUT, "unknown split %d", (int)v->split);
  if (v->split != LM_SPLIT_GRAIN && v->grain != 0)
    return lm_error_set(err, LM_EINPUT,
                        "a grain applies only to the gG split");
  if (v->split != LM_SPLIT_DYNAMIC && v->per_worker != 0)
    return lm_error_set(err, LM_EINPUT,
                        "chunks per worker apply only to the dynK split");
  return LM_OK;
}

lm_status lm_variant_parse(const char *text, lm_variant *out, lm_error *err) {
  char buf[256];
  if (strlen(text) >= sizeof buf)
    return lm_error_set(err, LM_EINPUT, "variant string too long");
  strcpy(buf, text);
  lm_variant v = {.workers = 1};
  int field = 0, have_w = 0, have_l = 0, have_t = 0, have_g = 0,
      have_math = 0, have_fp = 0;
  char *save = NULL;
  for (char *f = strtok_r(buf, "/", &save); f; f = strtok_r(NULL, "/", &save),
            field++) {
    int64_t x;
    if (field == 0) {
      if (lm_isa_parse(f, &v.isa, err) != LM_OK)
        return LM_EINPUT;
    } else if (f[0] == 'w' && !have_w && !have_l && parse_int(f + 1, 1, 64, &x)) {
      v.w = (int)x, have_w = 1;
    } else if (f[0] == 'l' && have_w && !have_l &&
               parse_int(f + 1, 1, 64, &x)) {
      v.l = (int)x, have_l = 1;
    } else if (strncmp(f, "priv=", 5) == 0 && have_l && !v.priv && !v.glob &&
               !v.phase && !have_math && !have_fp && !have_t) {
      int i = lookup(priv_name, 4, f + 5);
      if (i < 0)
        return lm_error_set(err, LM_EINPUT,
                            "'%s': priv must be gather, slot or masked", f);
      v.priv = i;
    } else if (strncmp(f, "glob=", 5) == 0 && have_l && !v.glob && !v.phase &&
               !have_math && !have_fp && !have_t) {
      int i = lookup(glob_name, 3, f + 5);
      if (i < 0)
        return lm_error_set(err, LM_EINPUT,
                            "'%s': glob must be gather or transpose", f);
      v.glob = i;
    } else if (strncmp(f, "phase=", 6) == 0 && have_l && !v.phase &&
               !have_math && !have_fp && !have_t) {
      int i = lookup(phase_name, 3, f + 6);
      if (i < 0)
        return lm_error_set(err, LM_EINPUT,
                            "'%s': phase must be snapshot or reread", f);
      v.phase = i;
    } else if (strncmp(f, "math=", 5) == 0 && have_l && !have_math &&
               !have_fp && !have_t) {
      int i = lm_math_lookup(f + 5);
      if (i < 0)
        return lm_error_set(err, LM_EINPUT,
                            "'%s': math must be sleef-u10, sleef-u35, mvec or "
                            "ir",
                            f);
      v.math = i, have_math = 1;
    } else if (strncmp(f, "fp=", 3) == 0 && have_l && !have_fp && !have_t) {
      int i = lm_fp_lookup(f + 3);
      if (i < 0)
        return lm_error_set(err, LM_EINPUT,
                            "'%s': fp must be strict or relaxed", f);
      v.fp = i, have_fp = 1;
    } else if (f[0] == 't' && have_l && !have_t &&
               parse_int(f + 1, 1, LM_MAX_WORKERS, &x)) {
      v.workers = (int)x, have_t = 1;
    } else if (f[0] == 'g' && have_t && !have_g &&
               parse_int(f + 1, 1, (int64_t)1 << 40, &x)) {
      v.grain = x, have_g = 1;
    } else if (strcmp(f, "static") == 0 && have_t && !have_g) {
      v.split = LM_SPLIT_STATIC, have_g = 1;
    } else if (strncmp(f, "dyn", 3) == 0 && have_t && !have_g &&
               parse_int(f + 3, 1, LM_SPLIT_DYN_MAX, &x)) {
      v.split = LM_SPLIT_DYNAMIC, v.per_worker = (int)x, have_g = 1;
    } else {
      return lm_error_set(err, LM_EINPUT,
                          "variant '%s': unexpected field '%s' (form: "
                          "ISA/wW/lL[/priv=P][/glob=G][/phase=F][/math=M][/fp=relaxed]/tT"
                          "[/static|/dynK|/gG], K in 1..%d)",
                          text, f, LM_SPLIT_DYN_MAX);
    }
  }
  if (!have_w || !have_l || !have_t)
    return lm_error_set(err, LM_EINPUT,
                        "variant '%s': needs ISA, wW, lL and tT fields", text);
  if (v.workers > 1 && !have_g)
    return lm_error_set(err, LM_EINPUT,
                        "variant '%s': t%d needs a split: static, dynK (K "
                        "chunks per worker) or gG (a grain of G rows)",
                        text, v.workers);
  if (v.workers == 1 && have_g)
    return lm_error_set(err, LM_EINPUT,
                        "variant '%s': a split (static, dynK or gG) applies "
                        "only with t > 1",
                        text);
  /* W depends on the element type: accept either until the kernel check,
   * and report the f32 reading's reason when neither holds. */
  if (check_fields(&v, LM_F32, NULL) != LM_OK &&
      check_fields(&v, LM_F64, NULL) != LM_OK) {
    check_fields(&v, legal_w(v.isa, LM_F32, v.w) ? LM_F32 : LM_F64, err);
    if (!legal_w(v.isa, LM_F32, v.w) && !legal_w(v.isa, LM_F64, v.w))
      check_fields(&v, LM_F32, err);
    return LM_EINPUT;
  }
  *out = v;
  return LM_OK;
}

static int has_snap(const lm_kernel *k) {
  for (int i = 0; i < k->nnodes; i++)
    if (k->nodes[i].snap)
      return 1;
  return 0;
}

/* Everything but the math provider. */
static lm_status check_mapping(const lm_kernel *k, const lm_variant *v,
                               lm_error *err) {
  if (check_fields(v, k->elem, err) != LM_OK)
    return LM_EINPUT;
  int snap = has_snap(k);
  if (snap && v->phase == LM_PHASE_NONE)
    return lm_error_set(err, LM_EINPUT,
                        "kernel %s reuses a tile after a reduction: the "
                        "variant needs phase=snapshot or phase=reread",
                        k->name);
  if (!snap && v->phase != LM_PHASE_NONE)
    return lm_error_set(err, LM_EINPUT,
                        "kernel %s reuses no tile after a reduction: phase "
                        "does not apply",
                        k->name);
  return LM_OK;
}

/* fp=relaxed applies where it changes the code: a division it rewrites, a
 * per-row division by a launch-fixed value whose reciprocal it hoists, or
 * a multiply it may contract on an ISA with FMA. */
static lm_status check_fp(const lm_kernel *k, lm_isa isa, lm_fp fp, lm_error *err) {
  if (fp == LM_FP_STRICT)
    return LM_OK;
  if (fp != LM_FP_RELAXED)
    return lm_error_set(err, LM_EINPUT, "unknown fp mode %d", (int)fp);
  if (k->relax_why)
    return lm_error_set(err, LM_EINPUT,
                        "kernel %s: its relaxed form could not be built: %s",
                        k->name, k->relax_why);
  int divs = k->relax_rewrites + k->relax_hoists;
  if (!divs && !k->relax_contractions)
    return lm_error_set(err, LM_EINPUT,
                        "kernel %s: fp=relaxed changes nothing: no division "
                        "by a row-uniform value, a square root or a "
                        "launch-fixed value, no multiply feeding an add or "
                        "a sum",
                        k->name);
  if (!divs && !lm_isa_has_fma(isa))
    return lm_error_set(err, LM_EINPUT,
                        "kernel %s: fp=relaxed changes nothing on %s, which "
                        "has no FMA: no division to rewrite or hoist",
                        k->name, lm_isa_name(isa));
  return LM_OK;
}

/* The providers linked for a target: AArch64 code takes lanemap's own
 * inline routines only, since SLEEF's and libmvec's AArch64 builds are not
 * what this x86-64 build links, and an object must not call them. */
static lm_status check_math(const lm_kernel *k, lm_isa isa, lm_math m,
                            lm_error *err) {
  if (lm_isa_is_aarch64(isa) && m != LM_MATH_IR && lm_vmath_calls(k))
    return lm_error_set(err, LM_EINPUT,
                        "kernel %s calls vector math: on %s only math=ir "
                        "(lanemap's own inline routines) is available",
                        k->name, lm_isa_name(isa));
  return lm_vmath_check(k, m, err);
}

lm_status lm_variant_check(const lm_kernel *k, const lm_variant *v,
                           lm_error *err) {
  if (check_mapping(k, v, err) != LM_OK ||
      check_fp(k, v->isa, v->fp, err) != LM_OK)
    return LM_EINPUT;
  return check_math(k, v->isa, v->math, err);
}

int lm_variant_same_code(const lm_variant *a, const lm_variant *b) {
  return a->isa == b->isa && a->w == b->w && a->l == b->l &&
         a->priv == b->priv && a->glob == b->glob && a->phase == b->phase &&
         a->math == b->math && a->fp == b->fp;
}

void lm_enum_defaults(lm_enum_opts *o) {
  memset(o, 0, sizeof *o);
  o->isa = LM_ISA_HOST;
  o->workers[0] = 1;
  o->split_static = 1;
  for (int i = 0; i < 4; i++)
    o->dynamic[i] = 2 << i; /* 2, 4, 8, 16 chunks per worker */
  o->maths = (1u << LM_MATH__COUNT) - 1;
}

/* The splits of o for t > 1, in a stable order: static, dynK, gG. */
static int splits_of(const lm_enum_opts *o, int per, lm_variant *out) {
  int n = 0;
  if (o->split_static)
    out[n++] = (lm_variant){.split = LM_SPLIT_STATIC};
  for (int i = 0; i < 8 && o->dynamic[i]; i++)
    out[n++] = (lm_variant){.split = LM_SPLIT_DYNAMIC,
                            .per_worker = o->dynamic[i]};
  for (int i = 0; i < 8 && o->grains[i]; i++)
    out[n++] = (lm_variant){.split = LM_SPLIT_GRAIN,
                            .grain = (int64_t)o->grains[i] * per};
  return n;
}

void lm_cut_of(lm_split s, int64_t grain, int per_worker, int workers, int per,
               int64_t R, lm_cut *c) {
  int64_t Pi = (R + per - 1) / per, gp = Pi > 0 ? Pi : 1; /* packets per chunk */
  double P = (double)Pi;
  if (workers > 1 && s == LM_SPLIT_GRAIN)
    gp = grain / per > 0 ? grain / per : 1;
  else if (workers > 1 && s == LM_SPLIT_STATIC)
    gp = (Pi + workers - 1) / workers;
  else if (workers > 1 && s == LM_SPLIT_DYNAMIC) {
    int64_t want = (int64_t)workers * (per_worker > 0 ? per_worker : 1);
    gp = (Pi + want - 1) / want;
  }
  if (gp < 1)
    gp = 1;
  c->packets = P;
  c->grain = gp * per;
  c->chunks = R > 0 ? (R + c->grain - 1) / c->grain : 0;
  c->participants = (int)(workers < c->chunks ? workers : c->chunks);
  if (c->participants < 1)
    c->participants = 1;
  c->dynamic = s != LM_SPLIT_STATIC;
  c->batch = s == LM_SPLIT_GRAIN ? lm_launch_batch(c->chunks, workers) : 1;
  c->claims = workers > 1 && c->dynamic ? (c->chunks + c->batch - 1) / c->batch : 0;
  /* the busiest participant's packets: static blocks differ by at most one
   * chunk and the first is the largest; dynamic claims (of batch chunks)
   * are taken in turn, so participant j runs claims j, j + w, ... and the
   * busiest is the first or the holder of the short last claim */
  int64_t w = c->participants;
  if (w <= 1 || Pi <= gp) {
    c->busiest = P;
  } else if (!c->dynamic) {
    double b = (double)((c->chunks + w - 1) / w) * (double)gp;
    c->busiest = b < P ? b : P;
  } else {
    double cp = (double)(gp * c->batch); /* packets per claim */
    double T = ceil(P / cp), r = P - (T - 1) * cp;
    if (T <= (double)w) {
      c->busiest = cp;
    } else {
      double k = fmod(T - 1, (double)w); /* holder of the short claim */
      double nk = floor((T - 2 - k) / (double)w) + 1;
      double n0 = floor((T - 2) / (double)w) + 1;
      c->busiest = fmax(nk * cp + r, n0 * cp);
    }
  }
}

void lm_variant_cut(const lm_variant *v, int64_t R, lm_cut *out) {
  lm_cut_of(v->split, v->grain, v->per_worker, v->workers, v->w / v->l, R,
            out);
}

int lm_variant_enumerate(const lm_kernel *k, const lm_enum_opts *o,
                         lm_variant **out, lm_error *err) {
  *out = NULL;
  int snap = has_snap(k);
  int cap = 64, n = 0;
  lm_variant *vs = malloc(sizeof *vs * cap);
  int widths[2] = {lm_isa_lanes(o->isa, k->elem, 1),
                   lm_isa_lanes(o->isa, k->elem, 0)};
  int nw = widths[1] != widths[0] ? 2 : 1;
  /* the providers offered: bit m of o->maths (none set: the default
   * provider) and legal for k (the check does not depend on the mapping);
   * a kernel without vector math has the default provider only, whatever
   * the bits say */
  int offer[LM_MATH__COUNT], calls = lm_vmath_calls(k);
  unsigned maths = o->maths ? o->maths : 1u << LM_MATH_SLEEF; /* 0: default */
  if (lm_isa_is_aarch64(o->isa))
    maths = 1u << LM_MATH_IR; /* the one provider AArch64 objects have */
  for (int mp = 0; mp < LM_MATH__COUNT; mp++)
    offer[mp] = calls ? (maths >> mp & 1) &&
                            check_math(k, o->isa, (lm_math)mp, NULL) == LM_OK
                      : mp == LM_MATH_SLEEF;
  /* the modes offered, by the same rule: strict where relaxed is not legal */
  unsigned fps = o->fps ? o->fps : 1u << LM_FP_STRICT;
  if (check_fp(k, o->isa, LM_FP_RELAXED, NULL) != LM_OK)
    fps = 1u << LM_FP_STRICT;
  for (int wi = 0; wi < nw; wi++) {
    int w = widths[wi];
    if (!legal_w(o->isa, k->elem, w))
      continue;
    for (int l = 1; l <= w; l *= 2)
      for (int g = l < w ? LM_GLOB_GATHER : LM_GLOB_NONE;
           g <= (l < w ? LM_GLOB_TRANSPOSE : LM_GLOB_NONE); g++)
        for (int ph = snap ? LM_PHASE_SNAPSHOT : LM_PHASE_NONE;
             ph <= (snap ? LM_PHASE_REREAD : LM_PHASE_NONE); ph++)
          for (int pr = ph == LM_PHASE_SNAPSHOT ? LM_PRIV_GATHER : LM_PRIV_NONE;
               pr <= (ph == LM_PHASE_SNAPSHOT ? LM_PRIV_MASKED : LM_PRIV_NONE);
               pr++)
            for (int mp = 0; mp < LM_MATH__COUNT; mp++)
            for (int fp = 0; fp < LM_FP__COUNT; fp++)
            for (int ti = 0; offer[mp] && (fps >> fp & 1) && ti < 8 &&
                             o->workers[ti];
                 ti++) {
              int t = o->workers[ti];
              lm_variant sp[1 + 8 + 8]; /* static, dynamic[8], grains[8] */
              int ns = t > 1 ? splits_of(o, w / l, sp) : 1;
              if (t == 1)
                sp[0] = (lm_variant){0};
              for (int si = 0; si < ns; si++) {
                lm_variant v = {.isa = o->isa,
                                .w = w,
                                .l = l,
                                .priv = pr,
                                .glob = g,
                                .phase = ph,
                                .workers = t,
                                .grain = sp[si].grain,
                                .split = sp[si].split,
                                .per_worker = sp[si].per_worker,
                                .math = mp,
                                .fp = fp};
                if (check_mapping(k, &v, NULL) != LM_OK)
                  continue;
                if (n == cap)
                  vs = realloc(vs, sizeof *vs * (cap *= 2));
                vs[n++] = v;
              }
            }
  }
  (void)err;
  *out = vs;
  return n;
}
