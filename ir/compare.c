/* Judging outputs against the oracle, and summarising the oracle's answer.
 *
 * The rule (oracle.h) is the reference report's: |got - want| <= atol +
 * rtol*|want| with atol = rtol = 5e-5 for f32.  The rule alone says nothing
 * about non-finite values, so the oracle fixes them: a NaN must be
 * answered by a NaN of any payload, an infinity by the same infinity, and
 * a finite value by a finite one (|inf - w| is never within tolerance).
 * f64 outputs get 1e-9: the oracle is exact to about 1e-15 there, so the
 * slack is for the code's own reassociation of sums.  i32 outputs are
 * exact.
 *
 * An element the oracle does not write must still hold the sentinel bytes
 * lm_data_gen put there: code that writes past a ragged row's length, or
 * into a view it was not given, fails even if the value it wrote happened
 * to be harmless. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ir/oracle_internal.h"
#include "lanemap/oracle.h"

double lm_oracle_atol(lm_dtype t) {
  return t == LM_F32 ? 5e-5 : t == LM_F64 ? 1e-9 : 0;
}

double lm_oracle_rtol(lm_dtype t) { return lm_oracle_atol(t); }

/* One written element against the rule; updates the error maxima over
 * elements where both values are finite. */
static int element_ok(lm_dtype t, double got, double want,
                      lm_compare_result *r) {
  if (isnan(want))
    return isnan(got);
  if (isinf(want))
    return got == want;
  if (!isfinite(got))
    return 0;
  double abs_err = fabs(got - want);
  if (abs_err > r->max_abs_err)
    r->max_abs_err = abs_err;
  if (want != 0 && abs_err / fabs(want) > r->max_rel_err)
    r->max_rel_err = abs_err / fabs(want);
  if (t == LM_I32 || t == LM_BOOL)
    return got == want;
  return abs_err <= lm_oracle_atol(t) + lm_oracle_rtol(t) * fabs(want);
}

static int sentinel_ok(const unsigned char *b, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != LM_SENTINEL_BYTE)
      return 0;
  return 1;
}

static void note_bad(lm_compare_result *r, int p, int64_t i, double got,
                     double want) {
  if (r->mismatches++ == 0) {
    r->first_param = p;
    r->first_bad = i;
    r->got_at_first = got;
    r->want_at_first = want;
  }
}

/* An f32 output in one tight loop: a written element whose value and
 * answer are both finite is judged here, by the rule element_ok applies to
 * it; anything else (a non-finite value, an unwritten element) goes
 * through element_ok or sentinel_ok.  Verification runs this on every
 * output element of every variant at every measured shape. */
static void compare_f32(int p, const unsigned char *buf, const double *want,
                        const uint8_t *written, int64_t n,
                        lm_compare_result *r) {
  const float *g = (const float *)buf;
  const double atol = lm_oracle_atol(LM_F32), rtol = lm_oracle_rtol(LM_F32);
  double mabs = r->max_abs_err, mrel = r->max_rel_err;
  for (int64_t i = 0; i < n; i++) {
    double w = want[i], x = g[i];
    if (written[i] && isfinite(w) && isfinite(x)) {
      double e = fabs(x - w), aw = fabs(w);
      mabs = e > mabs ? e : mabs;
      if (w != 0 && e > mrel * aw && e / aw > mrel)
        mrel = e / aw;
      if (!(e <= atol + rtol * aw))
        note_bad(r, p, i, x, w);
      continue;
    }
    r->max_abs_err = mabs, r->max_rel_err = mrel;
    if (written[i]) {
      if (!element_ok(LM_F32, x, w, r))
        note_bad(r, p, i, x, w);
    } else if (!sentinel_ok(buf + (size_t)i * sizeof(float), sizeof(float))) {
      note_bad(r, p, i, x, NAN);
    }
    mabs = r->max_abs_err, mrel = r->max_rel_err;
  }
  r->max_abs_err = mabs, r->max_rel_err = mrel;
}

int64_t lm_oracle_compare(const lm_kernel *k, const lm_oracle *o,
                          const lm_data *got, lm_compare_result *res) {
  lm_compare_result r = {.first_bad = -1,
                         .first_param = -1,
                         .got_at_first = NAN,
                         .want_at_first = NAN};
  for (int p = 0; p < k->nparams; p++) {
    const lm_param *q = &k->params[p];
    if (!q->is_output || q->kind != LM_PARAM_BUFFER)
      continue;
    int64_t n = o->count[p];
    const unsigned char *buf = got->buf[p];
    size_t size = lm_dtype_size(q->dtype);
    if (!buf || !o->want[p] || got->count[p] != n) {
      /* nothing to compare against: every element counts as wrong */
      r.checked += n;
      for (int64_t i = 0; i < n; i++)
        note_bad(&r, p, i, NAN, o->want[p] ? o->want[p][i] : NAN);
      continue;
    }
    if (q->dtype == LM_F32) {
      r.checked += n;
      compare_f32(p, buf, o->want[p], o->written[p], n, &r);
      continue;
    }
    for (int64_t i = 0; i < n; i++) {
      double g = elem_get(buf, q->dtype, i);
      r.checked++;
      if (o->written[p][i]) {
        if (!element_ok(q->dtype, g, o->want[p][i], &r))
          note_bad(&r, p, i, g, o->want[p][i]);
      } else if (!sentinel_ok(buf + (size_t)i * size, size)) {
        note_bad(&r, p, i, g, NAN); /* NaN: no value was wanted */
      }
    }
  }
  if (res)
    *res = r;
  return r.mismatches;
}

/* ---- summary ---------------------------------------------------------- */

/* JSON has no NaN or infinities; they are written as strings. */
static cJSON *json_number(double v) {
  if (isnan(v))
    return cJSON_CreateString("nan");
  if (isinf(v))
    return cJSON_CreateString(v > 0 ? "inf" : "-inf");
  return cJSON_CreateNumber(v);
}

static int add(cJSON *obj, const char *key, cJSON *item) {
  if (!item)
    return 0;
  cJSON_AddItemToObject(obj, key, item);
  return 1;
}

static int add_shape(cJSON *root, const lm_kernel *k, const lm_shape *s) {
  cJSON *shape = cJSON_CreateObject();
  if (!add(root, "shape", shape))
    return 0;
  int ok = add(shape, "R", cJSON_CreateNumber((double)s->dims[0]));
  /* C as the suite writes it: the second dim of the first 2-D buffer */
  for (int p = 0; p < k->nparams; p++)
    if (k->params[p].kind == LM_PARAM_BUFFER && k->params[p].rank == 2) {
      double c = (double)lm_dim_eval(k->params[p].dims[1], s);
      ok = ok && add(shape, "C", cJSON_CreateNumber(c));
      break;
    }
  for (int i = 1; i < k->nsyms; i++)
    if (k->syms && k->syms[i] && !cJSON_HasObjectItem(shape, k->syms[i]))
      ok = ok && add(shape, k->syms[i], cJSON_CreateNumber((double)s->dims[i]));
  return ok;
}

static cJSON *output_summary(const lm_param *q, const double *want,
                             const uint8_t *written, int64_t n) {
  int64_t nwritten = 0, nnan = 0, ninf = 0, nfinite = 0;
  double sum = 0, sumsq = 0, mn = INFINITY, mx = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    if (!written[i])
      continue;
    double v = want[i];
    nwritten++;
    if (isnan(v)) {
      nnan++;
    } else if (isinf(v)) {
      ninf++;
    } else {
      nfinite++;
      sum += v;
      sumsq += v * v;
      mn = v < mn ? v : mn;
      mx = v > mx ? v : mx;
    }
  }
  cJSON *o = cJSON_CreateObject(), *first = cJSON_CreateArray();
  int ok = o && first;
  ok = ok && add(o, "name", cJSON_CreateString(q->name));
  ok = ok && add(o, "dtype", cJSON_CreateString(lm_dtype_name(q->dtype)));
  ok = ok && add(o, "count", cJSON_CreateNumber((double)n));
  ok = ok && add(o, "written", cJSON_CreateNumber((double)nwritten));
  ok = ok && add(o, "sum", json_number(sum));
  ok = ok && add(o, "min", nfinite ? json_number(mn) : cJSON_CreateNull());
  ok = ok && add(o, "max", nfinite ? json_number(mx) : cJSON_CreateNull());
  ok = ok && add(o, "l2", json_number(sqrt(sumsq)));
  ok = ok && add(o, "nan", cJSON_CreateNumber((double)nnan));
  ok = ok && add(o, "inf", cJSON_CreateNumber((double)ninf));
  for (int64_t i = 0; ok && i < n && i < 8; i++) {
    cJSON *v = written[i] ? json_number(want[i]) : cJSON_CreateNull();
    ok = v != NULL;
    if (ok)
      cJSON_AddItemToArray(first, v);
  }
  ok = ok && add(o, "first", first);
  if (!ok) {
    if (!o || !cJSON_HasObjectItem(o, "first"))
      cJSON_Delete(first);
    cJSON_Delete(o);
    return NULL;
  }
  return o;
}

char *lm_oracle_summary_json(const lm_kernel *k, const lm_data *in,
                             const lm_oracle *o) {
  char *text = NULL, *out = NULL;
  cJSON *root = cJSON_CreateObject(), *outputs = cJSON_CreateArray();
  int ok = root && outputs;
  ok = ok && add(root, "kernel", cJSON_CreateString(k->name ? k->name : ""));
  ok = ok && add_shape(root, k, &in->shape);
  /* a double holds integers exactly up to 2^53; larger seeds as text */
  if (in->seed <= (1ull << 53)) {
    ok = ok && add(root, "seed", cJSON_CreateNumber((double)in->seed));
  } else {
    char buf[32];
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)in->seed);
    ok = ok && add(root, "seed", cJSON_CreateString(buf));
  }
  ok = ok && add(root, "outputs", outputs);
  for (int p = 0; ok && p < k->nparams; p++) {
    const lm_param *q = &k->params[p];
    if (!q->is_output || !o->want[p])
      continue;
    cJSON *s = output_summary(q, o->want[p], o->written[p], o->count[p]);
    ok = s != NULL;
    if (ok)
      cJSON_AddItemToArray(outputs, s);
  }
  if (ok)
    text = cJSON_PrintUnformatted(root);
  /* copied so that the caller frees with free() whatever cJSON's hooks are */
  if (text)
    out = strdup(text);
  cJSON_free(text);
  if (!root || !cJSON_HasObjectItem(root, "outputs"))
    cJSON_Delete(outputs);
  cJSON_Delete(root);
  return out;
}
