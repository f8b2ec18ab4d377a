/* The confirmation round: the winner's curse, measured away.
 *
 * Screening times every legal variant of a case a few times and takes the
 * least median as the best.  With tens of variants, some are timed low by
 * chance, and the least of them is the one most likely to have been: the
 * screening best is biased low (Thaler's winner's curse; in autotuning,
 * the "optimistic bias" of picking by the minimum of noisy measurements).
 * A regret measured against it overstates every policy's loss and
 * flatters none.  So the few variants that decide the figures -- the
 * screening's fastest LM_EVALUATE_CONFIRM_TOP and every policy's pick --
 * are timed again, interleaved, with more rounds, and the regrets use
 * those times; the screening's are kept beside them, and the report shows
 * how far the screening best was from the confirmed one.  The picks are
 * known before screening: no policy looks at a measured time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/heldout.h"

static int screened(const lm_eval_variant *v) {
  return v->verified == 1 && isfinite(v->measured) && v->measured > 0;
}

int lm_eval_confirm_set(const lm_eval_case *c, int top, unsigned char *in) {
  int n = 0;
  /* the top fastest uncontended: top passes of a linear scan, for a top of
   * five over a hundred variants */
  for (int k = 0; k < top; k++) {
    int b = -1;
    for (int i = 0; i < c->nvariants; i++) {
      const lm_eval_variant *v = &c->v[i];
      if (!in[i] && screened(v) && !v->contended &&
          (b < 0 || v->measured < c->v[b].measured))
        b = i;
    }
    if (b < 0)
      break;
    in[b] = 1;
    n++;
  }
  for (int p = 0; p < LM_POLICY__COUNT; p++) {
    int ch = c->choice[p]; /* the plan's pick is one of them */
    if (p != LM_POLICY_RANDOM && ch >= 0 && ch < c->nvariants && !in[ch] &&
        screened(&c->v[ch])) {
      in[ch] = 1;
      n++;
    }
  }
  return n;
}

double lm_eval_pick_discord(const lm_eval_case *c) {
  double worst = NAN;
  for (int p = 0; p < LM_POLICY__COUNT; p++) {
    int ch = c->choice[p];
    if (p == LM_POLICY_RANDOM || ch < 0 || ch >= c->nvariants)
      continue;
    const lm_eval_variant *v = &c->v[ch];
    if (!screened(v) || v->contended || !(v->confirmed > 0))
      continue;
    double r = v->confirmed / v->measured;
    double d = (r > 1 ? r : 1 / r) - 1;
    if (!(worst >= d))
      worst = d;
  }
  return worst;
}

lm_status lm_eval_case_confirm(const lm_eval_opts *o, const lm_timed *entries,
                               lm_eval_case *c, lm_noise *noise,
                               lm_error *err) {
  lm_noise_clear(noise);
  size_t nv = (size_t)(c->nvariants > 0 ? c->nvariants : 1);
  unsigned char *in = calloc(nv, 1);
  lm_timed *items = calloc(nv, sizeof *items);
  int *idx = calloc(nv, sizeof *idx);
  lm_timing_result tr = {0};
  lm_status st = LM_OK;
  if (!in || !items || !idx) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
    goto done;
  }
  lm_eval_confirm_set(c, LM_EVALUATE_CONFIRM_TOP, in);
  int n = 0;
  for (int i = 0; i < c->nvariants; i++) {
    lm_eval_variant *v = &c->v[i];
    free(v->ctimes);
    v->ctimes = NULL;
    v->nctimes = 0;
    v->confirmed = NAN;
    if (in[i] && entries[i].run) {
      items[n] = entries[i];
      idx[n++] = i;
    }
  }
  if (n == 0)
    goto done;
  lm_timing_opts t = o->timing;
  t.samples = LM_EVALUATE_CONFIRM_SAMPLES(o->timing.samples);
  if ((st = lm_time_compare(&t, n, items, &tr, err)) != LM_OK)
    goto done;
  for (int j = 0; j < n; j++) {
    lm_eval_variant *v = &c->v[idx[j]];
    v->confirmed = tr.stats[j].p50;
    if (!(v->ctimes = malloc(sizeof *v->ctimes * (size_t)tr.nsamples))) {
      st = lm_error_set(err, LM_ESYS, "out of memory");
      goto done;
    }
    memcpy(v->ctimes, tr.stats[j].samples,
           sizeof *v->ctimes * (size_t)tr.nsamples);
    v->nctimes = tr.nsamples;
  }
  *noise = tr.noise;
done:
  lm_timing_result_free(&tr);
  free(in);
  free(items);
  free(idx);
  return st;
}
