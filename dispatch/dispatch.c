/* Dispatch by shape through a plan: the JIT table, the lookup rule, and the
 * ahead-of-time object with its header.
 *
 * The lookup works on the plan's buckets directly.  With thresholded
 * dispatch, "the run whose from_R is the largest <= R" is the run holding
 * the bucket with the largest R_b <= R, since runs are contiguous over the
 * buckets in order of R; so both rules only need the buckets.  The
 * generated header repeats the rule in C over a static table, so an AOT
 * plan and a JIT plan send every shape to the same variant. */
#include "lanemap/dispatch.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dkernel {
  lm_kernel *k;
  char *name;
  int nvariants;
  lm_compiled **compiled; /* [nvariants] */
  char **vnames;          /* [nvariants] */
  int nbuckets;
  int64_t *R, *C; /* [nbuckets] */
  int *variant;   /* [nbuckets] */
} dkernel;

struct lm_dispatch {
  int nkernels;
  dkernel *kernels;
  int threshold;
  lm_pool *pool;
};

void lm_dispatch_defaults(lm_dispatch_opts *o) {
  memset(o, 0, sizeof *o);
  lm_compile_defaults(&o->compile);
  o->check_hash = 1;
}

const char *lm_dispatch_match_name(lm_dispatch_match m) {
  switch (m) {
  case LM_DISPATCH_EXACT:
    return "exact";
  case LM_DISPATCH_BETWEEN:
    return "between";
  case LM_DISPATCH_FALLBACK:
    return "fallback";
  }
  return "?";
}

void lm_dispatch_free(lm_dispatch *d) {
  if (!d)
    return;
  for (int i = 0; d->kernels && i < d->nkernels; i++) {
    dkernel *k = &d->kernels[i];
    for (int v = 0; v < k->nvariants; v++) {
      if (k->compiled)
        lm_compiled_free(k->compiled[v]);
      if (k->vnames)
        free(k->vnames[v]);
    }
    free(k->compiled);
    free(k->vnames);
    free(k->R);
    free(k->C);
    free(k->variant);
    free(k->name);
    lm_kernel_free(k->k);
  }
  free(d->kernels);
  free(d);
}

/* Load kernel i of the plan and check it against the plan. */
static lm_status load_kernel(const lm_plan *plan, int i, int check_hash, lm_kernel **out,
                             lm_error *err) {
  const lm_plan_kernel *pk = &plan->kernels[i];
  lm_status s = lm_kernel_load(pk->path, out, err);
  if (s != LM_OK) {
    lm_error e = *err;
    return lm_error_set(err, s, "plan kernels[%d]: %s", i, e.msg);
  }
  if (strcmp((*out)->name, pk->name) != 0)
    return lm_error_set(err, LM_EINPUT,
                        "plan kernels[%d]: %s holds kernel %s, the plan names %s", i,
                        pk->path, (*out)->name, pk->name);
  if (check_hash) {
    char h[17];
    if ((s = lm_file_hash(pk->path, h, err)) != LM_OK)
      return s;
    if (strcmp(h, pk->hash) != 0)
      return lm_error_set(err, LM_EINPUT,
                          "plan kernels[%d]: %s changed since the plan was made "
                          "(hash %s, the plan has %s); solve again",
                          i, pk->path, h, pk->hash);
  }
  return LM_OK;
}

lm_status lm_dispatch_new(const lm_plan *plan, const lm_dispatch_opts *o,
                          lm_dispatch **out, lm_error *err) {
  *out = NULL;
  lm_dispatch_opts def;
  if (!o) {
    lm_dispatch_defaults(&def);
    o = &def;
  }
  lm_dispatch *d = calloc(1, sizeof *d);
  if (!d)
    return lm_error_set(err, LM_ESYS, "dispatch: out of memory");
  d->threshold = plan->threshold;
  d->pool = o->pool;
  d->kernels = calloc((size_t)plan->nkernels, sizeof *d->kernels);
  lm_status s = d->kernels ? LM_OK : lm_error_set(err, LM_ESYS, "dispatch: out of memory");
  if (s == LM_OK)
    d->nkernels = plan->nkernels;
  for (int i = 0; i < d->nkernels && s == LM_OK; i++) {
    const lm_plan_kernel *pk = &plan->kernels[i];
    dkernel *k = &d->kernels[i];
    if ((s = load_kernel(plan, i, o->check_hash, &k->k, err)) != LM_OK)
      break;
    k->name = lm_strdup(pk->name);
    k->compiled = calloc((size_t)pk->nvariants, sizeof *k->compiled);
    k->vnames = calloc((size_t)pk->nvariants, sizeof *k->vnames);
    k->R = malloc(sizeof *k->R * (size_t)pk->nbuckets);
    k->C = malloc(sizeof *k->C * (size_t)pk->nbuckets);
    k->variant = malloc(sizeof *k->variant * (size_t)pk->nbuckets);
    if (!k->name || !k->compiled || !k->vnames || !k->R || !k->C || !k->variant) {
      s = lm_error_set(err, LM_ESYS, "dispatch: out of memory");
      break;
    }
    k->nvariants = pk->nvariants;
    for (int b = 0; b < pk->nbuckets; b++) {
      if (pk->buckets[b].variant < 0 || pk->buckets[b].variant >= pk->nvariants) {
        s = lm_error_set(err, LM_EINPUT, "plan kernels[%d].buckets[%d].variant: out of range",
                         i, b);
        break;
      }
      k->R[b] = pk->buckets[b].R;
      k->C[b] = pk->buckets[b].C;
      k->variant[b] = pk->buckets[b].variant;
    }
    k->nbuckets = pk->nbuckets;
    for (int v = 0; v < pk->nvariants && s == LM_OK; v++) {
      lm_variant var;
      k->vnames[v] = lm_strdup(pk->variants[v]);
      if (!k->vnames[v])
        s = lm_error_set(err, LM_ESYS, "dispatch: out of memory");
      else if ((s = lm_variant_parse(pk->variants[v], &var, err)) == LM_OK &&
               (s = lm_variant_check(k->k, &var, err)) == LM_OK) {
        if (!lm_isa_runnable(var.isa))
          s = lm_error_set(err, LM_EINPUT,
                           "targets %s, which this machine cannot run (compile it with "
                           "--aot for that machine)",
                           lm_isa_name(var.isa));
        else
          s = lm_compile(k->k, &var, &o->compile, &k->compiled[v], err);
      }
      if (s != LM_OK) {
        lm_error e = *err;
        lm_error_set(err, s, "plan kernels[%d].variants[%d]: %s", i, v, e.msg);
      }
    }
  }
  if (s != LM_OK) {
    lm_dispatch_free(d);
    return s;
  }
  *out = d;
  return LM_OK;
}

int lm_dispatch_nkernels(const lm_dispatch *d) { return d->nkernels; }

int lm_dispatch_find(const lm_dispatch *d, const char *name) {
  for (int i = 0; i < d->nkernels; i++)
    if (strcmp(d->kernels[i].name, name) == 0)
      return i;
  return -1;
}

const lm_kernel *lm_dispatch_kernel(const lm_dispatch *d, int kernel) {
  return kernel >= 0 && kernel < d->nkernels ? d->kernels[kernel].k : NULL;
}

int lm_dispatch_nvariants(const lm_dispatch *d, int kernel) {
  return kernel >= 0 && kernel < d->nkernels ? d->kernels[kernel].nvariants : 0;
}

const lm_compiled *lm_dispatch_compiled(const lm_dispatch *d, int kernel, int variant) {
  if (kernel < 0 || kernel >= d->nkernels || variant < 0 ||
      variant >= d->kernels[kernel].nvariants)
    return NULL;
  return d->kernels[kernel].compiled[variant];
}

double lm_dispatch_compile_ms(const lm_dispatch *d, int *nvariants) {
  double ms = 0;
  int n = 0;
  for (int i = 0; i < d->nkernels; i++)
    for (int v = 0; v < d->kernels[i].nvariants; v++, n++)
      ms += lm_compiled_ms(d->kernels[i].compiled[v]);
  if (nvariants)
    *nvariants = n;
  return ms;
}

/* A bucket table as the lookup reads it: bucket b's R and C are the int64_t
 * at R + b * stride and C + b * stride bytes (the dispatch keeps two
 * arrays, a plan an array of buckets). */
typedef struct table {
  int n;
  const char *R, *C;
  size_t stride;
} table;

static int64_t table_at(const char *base, size_t stride, int b) {
  int64_t v;
  memcpy(&v, base + (size_t)b * stride, sizeof v);
  return v;
}

/* The lookup rule over a bucket table (see the header essay). */
static int pick(const table *t, int threshold, int64_t R, int64_t C,
                lm_dispatch_match *match) {
  int nb = t->n;
#define Rs(b) table_at(t->R, t->stride, b)
#define Cs(b) table_at(t->C, t->stride, b)
  int best = -1, below = -1;
  double bd = INFINITY;
  int64_t lo = INT64_MAX, hi = 0;
  for (int b = 0; b < nb; b++) {
    if (Cs(b) != C)
      continue;
    double dist = fabs(log((double)R / (double)Rs(b)));
    if (dist < bd || (dist == bd && Rs(b) > Rs(best)))
      bd = dist, best = b;
    if (Rs(b) <= R && (below < 0 || Rs(b) > Rs(below)))
      below = b;
    lo = Rs(b) < lo ? Rs(b) : lo;
    hi = Rs(b) > hi ? Rs(b) : hi;
  }
  if (best >= 0) {
    if (Rs(best) == R)
      *match = LM_DISPATCH_EXACT;
    else if (R >= lo && R <= hi) {
      *match = LM_DISPATCH_BETWEEN;
      if (threshold)
        best = below;
    } else
      *match = LM_DISPATCH_FALLBACK;
    return best;
  }
  double cd = INFINITY;
  int64_t nearC = 0;
  for (int b = 0; b < nb; b++) {
    double dist = fabs(log((double)C / (double)Cs(b)));
    if (dist < cd || (dist == cd && Cs(b) > nearC))
      cd = dist, nearC = Cs(b);
  }
  for (int b = 0; b < nb; b++) {
    if (Cs(b) != nearC)
      continue;
    double dist = fabs(log((double)R / (double)Rs(b)));
    if (dist < bd || (dist == bd && Rs(b) > Rs(best)))
      bd = dist, best = b;
  }
  *match = LM_DISPATCH_FALLBACK;
  return best;
#undef Rs
#undef Cs
}

lm_status lm_dispatch_lookup(const lm_dispatch *d, int kernel, int64_t R, int64_t C,
                             lm_dispatch_info *info, lm_error *err) {
  if (kernel < 0 || kernel >= d->nkernels)
    return lm_error_set(err, LM_EINPUT, "dispatch: no kernel %d (plan has %d)", kernel,
                        d->nkernels);
  if (R < 1 || C < 1)
    return lm_error_set(err, LM_EINPUT,
                        "dispatch: shape (R=%" PRId64 ", C=%" PRId64 ") is not positive",
                        R, C);
  const dkernel *k = &d->kernels[kernel];
  lm_dispatch_match m;
  table t = {k->nbuckets, (const char *)k->R, (const char *)k->C, sizeof *k->R};
  int b = pick(&t, d->threshold, R, C, &m);
  info->kernel = kernel;
  info->bucket = b;
  info->variant = k->variant[b];
  info->match = m;
  info->bucket_R = k->R[b];
  info->bucket_C = k->C[b];
  info->variant_name = k->vnames[info->variant];
  return LM_OK;
}

lm_status lm_plan_lookup(const lm_plan *plan, int kernel, int64_t R, int64_t C,
                         lm_dispatch_info *info, lm_error *err) {
  if (kernel < 0 || kernel >= plan->nkernels)
    return lm_error_set(err, LM_EINPUT, "plan: no kernel %d (plan has %d)", kernel,
                        plan->nkernels);
  if (R < 1 || C < 1)
    return lm_error_set(err, LM_EINPUT,
                        "plan: shape (R=%" PRId64 ", C=%" PRId64 ") is not positive", R,
                        C);
  const lm_plan_kernel *pk = &plan->kernels[kernel];
  if (pk->nbuckets < 1)
    return lm_error_set(err, LM_EINPUT, "plan: kernel %s has no buckets", pk->name);
  const char *base = (const char *)pk->buckets;
  table t = {pk->nbuckets, base + offsetof(lm_plan_bucket, R),
             base + offsetof(lm_plan_bucket, C), sizeof *pk->buckets};
  lm_dispatch_match m;
  int b = pick(&t, plan->threshold, R, C, &m);
  if (pk->buckets[b].variant < 0 || pk->buckets[b].variant >= pk->nvariants)
    return lm_error_set(err, LM_EINPUT,
                        "plan: kernel %s bucket %d runs variant %d of %d", pk->name,
                        b, pk->buckets[b].variant, pk->nvariants);
  info->kernel = kernel;
  info->bucket = b;
  info->variant = pk->buckets[b].variant;
  info->match = m;
  info->bucket_R = pk->buckets[b].R;
  info->bucket_C = pk->buckets[b].C;
  info->variant_name = pk->variants[info->variant];
  return LM_OK;
}

lm_status lm_dispatch_launch(const lm_dispatch *d, int kernel, int64_t R, int64_t C,
                             const uint64_t *args, lm_dispatch_info *info,
                             lm_error *err) {
  lm_dispatch_info local;
  if (!info)
    info = &local;
  lm_status s = lm_dispatch_lookup(d, kernel, R, C, info, err);
  if (s != LM_OK)
    return s;
  if (!args)
    return lm_error_set(err, LM_EINPUT, "dispatch: no args");
  return lm_compiled_launch(d->kernels[kernel].compiled[info->variant], d->pool, args,
                            R, err);
}

/* ---- ahead of time ------------------------------------------------------- */

static int c_ident(const char *s) {
  if (!s[0] || (s[0] >= '0' && s[0] <= '9') || strlen(s) > 64)
    return 0;
  for (const char *c = s; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
          (*c >= '0' && *c <= '9') || *c == '_'))
      return 0;
  return 1;
}

/* A growing text buffer for the header. */
typedef struct sbuf {
  char *p;
  size_t n, cap;
  int oom;
} sbuf;

static void sb_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(sbuf *b, const char *fmt, ...) {
  if (b->oom)
    return;
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(b->p ? b->p + b->n : NULL, b->p ? b->cap - b->n : 0, fmt, ap);
    va_end(ap);
    if (m < 0) {
      b->oom = 1;
      return;
    }
    if (b->p && b->n + (size_t)m < b->cap) {
      b->n += (size_t)m;
      return;
    }
    size_t nc = (b->cap ? b->cap * 2 : 4096) + (size_t)m;
    char *np = realloc(b->p, nc);
    if (!np) {
      b->oom = 1;
      return;
    }
    b->p = np;
    b->cap = nc;
  }
}

static void write_header(sbuf *h, const lm_plan *plan, lm_kernel **ks, const char *prefix) {
  sb_printf(h,
            "/* Generated by lanemap %s from a plan (workload %s): every planned\n"
            " * variant's entry, and per kernel a dispatch by shape (R, C):\n"
            " * exact bucket, else the same C with %s, else the nearest bucket\n"
            " * (nearest C in log C, then nearest R in log R), reported through\n"
            " * *match (0 exact, 1 between buckets, 2 fallback).  Link with\n"
            " * liblanemap (lm_rt_scratch, SLEEF) and -lm. */\n"
            "#pragma once\n#include <math.h>\n#include <stdint.h>\n\n"
            "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
            lm_version(), plan->workload,
            plan->threshold ? "the largest bucket R <= R (the threshold table)"
                            : "the bucket nearest in log R");
  sb_printf(h,
            "typedef void (*%s_entry)(const void *args, int64_t first, int64_t count);\n\n"
            "static inline int %s_pick(int nb, const int64_t *Rs, const int64_t *Cs,\n"
            "                          int threshold, int64_t R, int64_t C, int *match) {\n"
            "  int best = -1, below = -1, b, m;\n"
            "  double bd = INFINITY, cd = INFINITY, dist;\n"
            "  int64_t lo = INT64_MAX, hi = 0, nearC = 0;\n"
            "  for (b = 0; b < nb; b++) {\n"
            "    if (Cs[b] != C) continue;\n"
            "    dist = fabs(log((double)R / (double)Rs[b]));\n"
            "    if (dist < bd || (dist == bd && Rs[b] > Rs[best])) bd = dist, best = b;\n"
            "    if (Rs[b] <= R && (below < 0 || Rs[b] > Rs[below])) below = b;\n"
            "    if (Rs[b] < lo) lo = Rs[b];\n"
            "    if (Rs[b] > hi) hi = Rs[b];\n"
            "  }\n"
            "  if (best >= 0) {\n"
            "    m = Rs[best] == R ? 0 : (R >= lo && R <= hi) ? 1 : 2;\n"
            "    if (m == 1 && threshold) best = below;\n"
            "  } else {\n"
            "    for (b = 0; b < nb; b++) {\n"
            "      dist = fabs(log((double)C / (double)Cs[b]));\n"
            "      if (dist < cd || (dist == cd && Cs[b] > nearC)) cd = dist, nearC = Cs[b];\n"
            "    }\n"
            "    for (b = 0; b < nb; b++) {\n"
            "      if (Cs[b] != nearC) continue;\n"
            "      dist = fabs(log((double)R / (double)Rs[b]));\n"
            "      if (dist < bd || (dist == bd && Rs[b] > Rs[best])) bd = dist, best = b;\n"
            "    }\n"
            "    m = 2;\n"
            "  }\n"
            "  if (match) *match = m;\n"
            "  return best;\n"
            "}\n\n",
            prefix, prefix);
  for (int i = 0; i < plan->nkernels; i++) {
    const lm_plan_kernel *pk = &plan->kernels[i];
    const lm_kernel *k = ks[i];
    sb_printf(h, "/* kernel %s (%s); args: one 8-byte slot per parameter in order\n",
              pk->name, pk->path);
    for (int p = 0; p < k->nparams; p++)
      sb_printf(h, " *   [%d] %s %s%s\n", p, k->params[p].name,
                lm_dtype_name(k->params[p].dtype),
                k->params[p].kind == LM_PARAM_SCALAR ? " scalar (as double)"
                : k->params[p].is_output             ? " output"
                                                     : "");
    for (int q = 0; q < k->nsyms; q++)
      sb_printf(h, " *   [%d] int64 dim %s\n", k->nparams + q, k->syms[q]);
    sb_printf(h, " */\n");
    for (int v = 0; v < pk->nvariants; v++)
      sb_printf(h, "void %s_%s_v%d(const void *args, int64_t first, int64_t count); /* %s */\n",
                prefix, pk->name, v, pk->variants[v]);
    sb_printf(h, "static inline %s_entry %s_%s_dispatch(int64_t R, int64_t C, int *match) {\n",
              prefix, prefix, pk->name);
    sb_printf(h, "  static const int64_t Rs[%d] = {", pk->nbuckets);
    for (int b = 0; b < pk->nbuckets; b++)
      sb_printf(h, "%s%" PRId64, b ? ", " : "", pk->buckets[b].R);
    sb_printf(h, "};\n  static const int64_t Cs[%d] = {", pk->nbuckets);
    for (int b = 0; b < pk->nbuckets; b++)
      sb_printf(h, "%s%" PRId64, b ? ", " : "", pk->buckets[b].C);
    sb_printf(h, "};\n  static const %s_entry fn[%d] = {", prefix, pk->nbuckets);
    for (int b = 0; b < pk->nbuckets; b++)
      sb_printf(h, "%s%s_%s_v%d", b ? ", " : "", prefix, pk->name, pk->buckets[b].variant);
    sb_printf(h, "};\n  return fn[%s_pick(%d, Rs, Cs, %d, R, C, match)];\n}\n\n", prefix,
              pk->nbuckets, plan->threshold);
  }
  sb_printf(h, "#ifdef __cplusplus\n}\n#endif\n");
}

lm_status lm_dispatch_emit(const lm_plan *plan, const char *prefix,
                           const char *obj_path, const char *header_path,
                           lm_error *err) {
  if (!c_ident(prefix))
    return lm_error_set(err, LM_EINPUT, "'%s' is not a C identifier", prefix);
  lm_status s = LM_OK;
  lm_isa isa = LM_ISA__COUNT;
  int n = 0;
  size_t total = 1;
  for (int i = 0; i < plan->nkernels; i++)
    total += (size_t)plan->kernels[i].nvariants;
  lm_kernel **ks = calloc((size_t)plan->nkernels, sizeof *ks);
  lm_aot_entry *es = calloc(total, sizeof *es);
  char(*syms)[160] = calloc(total, sizeof *syms);
  sbuf h = {0};
  if (!ks || !es || !syms) {
    s = lm_error_set(err, LM_ESYS, "dispatch: out of memory");
    goto done;
  }
  for (int i = 0; i < plan->nkernels && s == LM_OK; i++) {
    const lm_plan_kernel *pk = &plan->kernels[i];
    if (!c_ident(pk->name)) {
      s = lm_error_set(err, LM_EINPUT,
                       "plan kernels[%d].name: not a C identifier", i);
      break;
    }
    if ((s = load_kernel(plan, i, 1, &ks[i], err)) != LM_OK)
      break;
    for (int v = 0; v < pk->nvariants && s == LM_OK; v++) {
      lm_aot_entry *e = &es[n];
      snprintf(syms[n], sizeof syms[n], "%s_%s_v%d", prefix, pk->name, v);
      if ((s = lm_variant_parse(pk->variants[v], &e->variant, err)) != LM_OK ||
          (s = lm_variant_check(ks[i], &e->variant, err)) != LM_OK)
        break;
      if (isa != LM_ISA__COUNT && e->variant.isa != isa) {
        s = lm_error_set(
            err, LM_EINPUT,
            "plan kernels[%d].variants[%d]: targets %s, an earlier variant %s; "
            "one object holds one ISA target",
            i, v, lm_isa_name(e->variant.isa), lm_isa_name(isa));
        break;
      }
      isa = e->variant.isa;
      e->kernel = ks[i];
      e->symbol = syms[n++];
    }
  }
  if (s != LM_OK || (s = lm_emit_entries(es, n, obj_path, err)) != LM_OK)
    goto done;
  write_header(&h, plan, ks, prefix);
  if (h.oom)
    s = lm_error_set(err, LM_ESYS, "dispatch: out of memory");
  else
    s = lm_file_write_atomic(header_path, h.p, h.n, err);
done:
  free(h.p);
  for (int i = 0; ks && i < plan->nkernels; i++)
    lm_kernel_free(ks[i]);
  free(ks);
  free(es);
  free(syms);
  return s;
}
