/* Shapes: binding a suite shape "R x C" to a kernel's dim symbols.
 *
 * A suite names a case by two numbers, R instances and C, the second dim of
 * the kernel's first 2-D buffer (or, without one, of its column domain).
 * C solves that dim's symbol: C = coef * sym, so RoPE's 2*H with C=66 gives
 * H=33.  Any other symbol must be given by name ("K=4").  Every extent must
 * be positive and every buffer small enough to allocate: at most 2^31
 * elements, which also keeps byte sizes and element indices in int64. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ir/frontend.h"

size_t lm_dtype_size(lm_dtype t) {
  switch (t) {
  case LM_F32:
    return 4;
  case LM_F64:
    return 8;
  case LM_I32:
    return 4;
  case LM_BOOL:
    return 1;
  }
  return 0;
}

int64_t lm_dim_eval(lm_dim d, const lm_shape *s) {
  if (d.sym < 0)
    return d.coef;
  return d.coef * s->dims[d.sym];
}

int64_t lm_param_count(const lm_kernel *k, int p, const lm_shape *s) {
  const lm_param *q = &k->params[p];
  if (q->kind == LM_PARAM_SCALAR)
    return 1;
  int64_t n = 1;
  for (int i = 0; i < q->rank; i++)
    n *= lm_dim_eval(q->dims[i], s);
  return n;
}

/* The dim that C binds, and the parameter it belongs to (or -1). */
static lm_dim col_dim(const lm_kernel *k, int *param) {
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind == LM_PARAM_BUFFER && k->params[i].rank == 2) {
      *param = i;
      return k->params[i].dims[1];
    }
  *param = -1;
  return k->ncols;
}

int64_t lm_shape_c(const lm_kernel *k, const lm_shape *s) {
  int param;
  return lm_dim_eval(col_dim(k, &param), s);
}

/* Parse a decimal int64 at *p (digits only); 0 on success. */
static int parse_i64(const char **p, int64_t *out) {
  const char *s = *p;
  if (!isdigit((unsigned char)*s))
    return -1;
  int64_t v = 0;
  while (isdigit((unsigned char)*s)) {
    int d = *s - '0';
    if (v > (INT64_MAX - d) / 10)
      return -2;
    v = v * 10 + d;
    s++;
  }
  *p = s;
  *out = v;
  return 0;
}

static const char *skip_ws(const char *s) {
  while (*s == ' ' || *s == '\t')
    s++;
  return s;
}

static lm_status bind_extra(const lm_kernel *k, const char *extra,
                            lm_shape *out, int *bound, lm_error *err) {
  const char *s = skip_ws(extra);
  while (*s) {
    const char *name = s;
    while (isalnum((unsigned char)*s) || *s == '_')
      s++;
    size_t len = (size_t)(s - name);
    s = skip_ws(s);
    if (len == 0 || *s != '=')
      return lm_error_set(err, LM_EINPUT,
                          "bad dim binding '%s': expected NAME=N[,NAME=N...]",
                          extra);
    s = skip_ws(s + 1);
    int sym = -1;
    for (int i = 0; i < k->nsyms; i++)
      if (strlen(k->syms[i]) == len && !memcmp(k->syms[i], name, len))
        sym = i;
    if (sym < 0) {
      char names[256] = "";
      for (int i = 0; i < k->nsyms; i++) {
        strncat(names, i ? ", " : "", sizeof names - strlen(names) - 1);
        strncat(names, k->syms[i], sizeof names - strlen(names) - 1);
      }
      return lm_error_set(err, LM_EINPUT,
                          "unknown dim '%.*s' in '%s' (kernel %s has %s)",
                          (int)len, name, extra, k->name, names);
    }
    if (*s == '-')
      return lm_error_set(err, LM_EINPUT, "dim %s must be positive in '%s'",
                          k->syms[sym], extra);
    int64_t v;
    int r = parse_i64(&s, &v);
    if (r == -2)
      return lm_error_set(err, LM_EINPUT, "dim %s is too large in '%s'",
                          k->syms[sym], extra);
    if (r != 0)
      return lm_error_set(err, LM_EINPUT,
                          "dim %s needs a number in '%s', e.g. %s=32",
                          k->syms[sym], extra, k->syms[sym]);
    if (v < 1)
      return lm_error_set(err, LM_EINPUT, "dim %s=%lld must be positive",
                          k->syms[sym], (long long)v);
    if (bound[sym] && out->dims[sym] != v)
      return lm_error_set(
          err, LM_EINPUT, "dim %s=%lld conflicts with %s=%lld from the shape",
          k->syms[sym], (long long)v, k->syms[sym], (long long)out->dims[sym]);
    out->dims[sym] = v;
    bound[sym] = 1;
    s = skip_ws(s);
    if (*s == ',')
      s = skip_ws(s + 1);
    else if (*s)
      return lm_error_set(err, LM_EINPUT,
                          "bad dim binding '%s': expected ',' after %s=%lld",
                          extra, k->syms[sym], (long long)v);
  }
  return LM_OK;
}

lm_status lm_shape_bind(const lm_kernel *k, int64_t R, int64_t C,
                        const char *extra, lm_shape *out, lm_error *err) {
  memset(out, 0, sizeof *out);
  out->nsyms = k->nsyms;
  int bound[LM_MAX_SYMS] = {0};
  char dbuf[64];
  if (R < 1)
    return lm_error_set(err, LM_EINPUT, "R=%lld must be at least 1",
                        (long long)R);
  out->dims[0] = R;
  bound[0] = 1;
  int cp;
  lm_dim d = col_dim(k, &cp);
  lm_fe_dim_str(k, d, dbuf, sizeof dbuf);
  const char *of = cp >= 0 ? k->params[cp].name : "the column domain";
  if (C < 1)
    return lm_error_set(err, LM_EINPUT,
                        "C=%lld must be positive (dim %s of %s)", (long long)C,
                        dbuf, of);
  if (d.sym < 0) {
    if (C != d.coef)
      return lm_error_set(err, LM_EINPUT,
                          "C=%lld does not match the constant dim %s of %s",
                          (long long)C, dbuf, of);
  } else {
    if (C % d.coef != 0)
      return lm_error_set(err, LM_EINPUT,
                          "C=%lld is not a multiple of %lld (dim %s of %s)",
                          (long long)C, (long long)d.coef, dbuf, of);
    out->dims[d.sym] = C / d.coef;
    bound[d.sym] = 1;
  }
  if (extra) {
    lm_status s = bind_extra(k, extra, out, bound, err);
    if (s != LM_OK)
      return s;
  }
  for (int i = 0; i < k->nsyms; i++)
    if (!bound[i])
      return lm_error_set(err, LM_EINPUT,
                          "dim %s of kernel %s is not bound: give it as %s=N",
                          k->syms[i], k->name, k->syms[i]);
  for (int p = 0; p < k->nparams; p++) {
    const lm_param *q = &k->params[p];
    if (q->kind != LM_PARAM_BUFFER)
      continue;
    int64_t n = 1;
    for (int i = 0; i < q->rank; i++) {
      int64_t e;
      if (__builtin_mul_overflow(
              q->dims[i].coef,
              q->dims[i].sym < 0 ? 1 : out->dims[q->dims[i].sym], &e) ||
          __builtin_mul_overflow(n, e, &n))
        return lm_error_set(err, LM_EINPUT,
                            "shape too large: the element count of %s "
                            "overflows 64 bits",
                            q->name);
    }
    if (n > LM_SHAPE_MAX_ELEMS)
      return lm_error_set(err, LM_EINPUT,
                          "shape too large: %s would have %lld elements (at "
                          "most 2^31)",
                          q->name, (long long)n);
  }
  int64_t nc;
  if (__builtin_mul_overflow(
          k->ncols.coef, k->ncols.sym < 0 ? 1 : out->dims[k->ncols.sym], &nc) ||
      nc > LM_SHAPE_MAX_ELEMS)
    return lm_error_set(err, LM_EINPUT,
                        "shape too large: the column domain has more than 2^31 "
                        "columns");
  return LM_OK;
}

lm_status lm_shape_parse(const lm_kernel *k, const char *text, lm_shape *out,
                         lm_error *err) {
  memset(out, 0, sizeof *out);
  const char *s = skip_ws(text);
  int64_t v[2];
  for (int i = 0; i < 2; i++) {
    if (*s == '-')
      return lm_error_set(err, LM_EINPUT, "bad shape '%s': %s must be positive",
                          text, i ? "C" : "R");
    int r = parse_i64(&s, &v[i]);
    if (r == -2)
      return lm_error_set(err, LM_EINPUT, "bad shape '%s': %s is too large",
                          text, i ? "C" : "R");
    if (r != 0)
      return lm_error_set(err, LM_EINPUT,
                          "bad shape '%s': expected R,C or RxC (e.g. 17x65)",
                          text);
    s = skip_ws(s);
    if (i == 0) {
      if (*s != ',' && *s != 'x' && *s != 'X')
        return lm_error_set(err, LM_EINPUT,
                            "bad shape '%s': expected R,C or RxC (e.g. 17x65)",
                            text);
      s = skip_ws(s + 1);
    }
  }
  const char *extra = NULL;
  if (*s == ',') {
    extra = s + 1;
    if (!*skip_ws(extra))
      return lm_error_set(err, LM_EINPUT,
                          "bad shape '%s': expected NAME=N after ','", text);
  } else if (*s)
    return lm_error_set(err, LM_EINPUT,
                        "bad shape '%s': unexpected '%c' after R and C", text,
                        *s);
  if (v[0] == 0 || v[1] == 0)
    return lm_error_set(err, LM_EINPUT, "bad shape '%s': %s must be positive",
                        text, v[0] == 0 ? "R" : "C");
  return lm_shape_bind(k, v[0], v[1], extra, out, err);
}
