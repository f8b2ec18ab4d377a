/* The deployment evaluation's outputs: OUT/deploy.md (how each policy
 * does per budget, against the per-shape best and the budget oracle; what
 * the ILP buys over greedy; per kernel; the calibrated plan's dispatch),
 * OUT/deploy.jsonl (one record per policy, budget and held-out shape) and
 * OUT/deploy-regret.png. */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "heldout/deploy.h"
#include "heldout/gnuplot.h"

#include "lanemap/json.h"

static const char *budget_name(int K, char *buf, size_t n) {
  if (K == 0)
    snprintf(buf, n, "all");
  else
    snprintf(buf, n, "%d", K);
  return buf;
}

static void pct(FILE *f, double x) {
  if (isnan(x))
    fprintf(f, " — |");
  else if (isinf(x))
    fprintf(f, " ∞ |");
  else
    fprintf(f, " %.1f%% |", 100 * x);
}

/* The per-budget columns of a table whose first columns are already
 * written, then its rule: `rule` for those first columns, one right-aligned
 * column per budget. */
static void budget_columns(FILE *f, const lm_deploy_state *d,
                           const char *rule) {
  char kb[16];
  for (int b = 0; b < d->nbudgets; b++)
    fprintf(f, " K=%s |", budget_name(d->budgets[b], kb, sizeof kb));
  fprintf(f, "\n%s", rule);
  for (int b = 0; b < d->nbudgets; b++)
    fprintf(f, "---:|");
  fprintf(f, "\n");
}

static const lm_deploy_row *find_row(const lm_deploy_state *d, int b,
                                     lm_deploy_policy p) {
  return &d->res->row[lm_deploy_slot(b, p)];
}

static void summary(FILE *f, const lm_deploy_state *d) {
  fprintf(f,
          "## Regret per policy and budget\n\n"
          "K is the variants compiled per kernel (all: no cap).  Against "
          "the per-shape best: geomean, p90 and max over the held-out "
          "shapes, and the share within %.0f%%.  Against the budget "
          "oracle (the best K-variant threshold plan in hindsight): per "
          "shape, geomean and max of t / t_oracle - 1.  Workload: the "
          "weighted workload time over the oracle's and over the per-shape "
          "best's.\n\n",
          100 * LM_REGRET_TIE);
  fprintf(f, "| policy | K | variants | geomean | p90 | max | within | "
             "vs oracle geomean | vs oracle max | workload vs oracle | "
             "workload vs best |\n|---|---:|---:|---:|---:|---:|---:|---:|"
             "---:|---:|---:|\n");
  char kb[16];
  for (int b = 0; b < d->nbudgets; b++)
    for (int p = 0; p < LM_DEPLOY__COUNT; p++) {
      const lm_deploy_row *r = find_row(d, b, (lm_deploy_policy)p);
      if (!r->made)
        continue;
      fprintf(f, "| %s | %s | %d |", lm_deploy_policy_name(r->policy),
              budget_name(r->budget, kb, sizeof kb), r->variants);
      pct(f, r->best.geomean);
      pct(f, r->best.p90);
      pct(f, r->best.max);
      if (r->best.n > 0)
        fprintf(f, " %.0f%% |", 100 * r->best.within);
      else /* every pick timed contended: no figure */
        fprintf(f, " — |");
      pct(f, r->oracle_geomean);
      pct(f, r->oracle_max);
      pct(f, r->workload_oracle);
      pct(f, r->workload_best);
      fprintf(f, "\n");
    }
  int left = 0;
  for (int i = 0; i < d->res->nrows; i++)
    left += d->res->row[i].left_out;
  if (left)
    fprintf(f,
            "\n%d (policy, budget, shape) picks were timed contended "
            "(fewer CPUs free than workers) and are left out of their "
            "row's figures.\n",
            left);
  fprintf(f, "\n");
}

static void ilp_vs_greedy(FILE *f, const lm_deploy_state *d) {
  fprintf(f, "## What the ILP buys over greedy\n\n"
             "| K | plan: workload vs oracle | greedy: workload vs oracle | "
             "greedy's time over the plan's |\n|---:|---:|---:|---:|\n");
  char kb[16];
  for (int b = 0; b < d->nbudgets; b++) {
    const lm_deploy_row *pl = find_row(d, b, LM_DEPLOY_PLAN);
    const lm_deploy_row *gr = find_row(d, b, LM_DEPLOY_GREEDY);
    fprintf(f, "| %s |", budget_name(d->budgets[b], kb, sizeof kb));
    pct(f, pl->workload_oracle);
    pct(f, gr->workload_oracle);
    pct(f, (1 + gr->workload_oracle) / (1 + pl->workload_oracle) - 1);
    fprintf(f, "\n");
  }
  fprintf(f, "\n");
}

static void per_kernel(FILE *f, const lm_deploy_state *d) {
  fprintf(f, "## Per kernel: the plan against the budget oracle\n\n"
             "Geomean over the kernel's held-out shapes of t_plan / "
             "t_oracle - 1, per budget.\n\n| kernel | shapes |");
  budget_columns(f, d, "|---|---:|");
  for (int ki = 0; ki < d->spec.nkernels; ki++) {
    int n = 0;
    for (int i = 0; i < d->nshapes; i++)
      n += d->s[i].kernel == ki && isfinite(d->s[i].t_best);
    fprintf(f, "| %s | %d |", d->spec.k[ki].k->name, n);
    for (int b = 0; b < d->nbudgets; b++) {
      int sp = lm_deploy_slot(b, LM_DEPLOY_PLAN),
          so = lm_deploy_slot(b, LM_DEPLOY_ORACLE), m = 0;
      double l = 0;
      for (int i = 0; i < d->nshapes; i++) {
        const lm_deploy_shape *s = &d->s[i];
        if (s->kernel == ki && isfinite(s->t_best) && s->t[so] > 0 &&
            !isnan(s->t[sp]))
          l += log(s->t[sp] / s->t[so]), m++;
      }
      pct(f, m ? exp(l / m) - 1 : NAN);
    }
    fprintf(f, "\n");
  }
  fprintf(f, "\n");
}

/* The calibrated plan's runs at each column, for the budget closest to 2. */
static void dispatch_picture(FILE *f, const lm_deploy_state *d) {
  int pick = 0; /* the budget nearest 2, a capped one when there is one */
  for (int b = 1; b < d->nbudgets; b++)
    if (d->budgets[b] != 0 &&
        (d->budgets[pick] == 0 ||
         abs(d->budgets[b] - 2) < abs(d->budgets[pick] - 2)))
      pick = b;
  const lm_plan *pl = d->plans[lm_deploy_slot(pick, LM_DEPLOY_PLAN)];
  char kb[16];
  fprintf(f,
          "## The plan's dispatch at K=%s\n\n"
          "Per kernel and column, the variant that runs from each R on "
          "(thresholded dispatch).\n\n",
          budget_name(d->budgets[pick], kb, sizeof kb));
  for (int ki = 0; pl && ki < pl->nkernels; ki++) {
    const lm_plan_kernel *k = &pl->kernels[ki];
    for (int t = 0; t < k->nthresholds; t++) {
      const lm_plan_threshold *th = &k->thresholds[t];
      fprintf(f, "- `%s`, C = %" PRId64 ":", k->name, th->C);
      for (int r = 0; r < th->nruns; r++)
        fprintf(f, "%s R ≥ %" PRId64 " `%s`", r ? ";" : "", th->from_R[r],
                k->variants[th->variant[r]]);
      fprintf(f, "\n");
    }
  }
  fprintf(f, "\n");
}

static void shapes_table(FILE *f, const lm_deploy_state *d) {
  fprintf(f, "## Held-out shapes\n\nThe plan's time over the per-shape "
             "best, per budget (∞: its pick failed the oracle check).\n\n"
             "| shape | bucket R | best (µs) |");
  budget_columns(f, d, "|---|---:|---:|");
  for (int i = 0; i < d->nshapes; i++) {
    const lm_deploy_shape *s = &d->s[i];
    const lm_plan *pl = d->plans[lm_deploy_slot(0, LM_DEPLOY_PLAN)];
    int64_t bR = pl ? pl->kernels[s->kernel].buckets[s->bucket].R : 0;
    fprintf(f, "| %s | %" PRId64 " |", s->id, bR);
    if (!isfinite(s->t_best)) {
      fprintf(f, " not measured |\n");
      continue;
    }
    fprintf(f, " %.2f |", s->t_best / 1e3);
    for (int b = 0; b < d->nbudgets; b++)
      pct(f, s->t[lm_deploy_slot(b, LM_DEPLOY_PLAN)] / s->t_best - 1);
    fprintf(f, "\n");
  }
  fprintf(f, "\n");
}

/* OUT/deploy.md. */
/* The plans whose solve the time limit cut short: each is its solve's
 * best incumbent (the greedy warm start when the root relaxation did not
 * finish), not a proven optimum. */
static void cut_short(FILE *f, const lm_deploy_state *d) {
  int n = 0;
  for (int b = 0; b < d->nbudgets; b++)
    for (int p = 0; p < LM_DEPLOY__COUNT; p++) {
      const lm_plan *pl = d->plans[lm_deploy_slot(b, (lm_deploy_policy)p)];
      if (!pl || strcmp(pl->status, "time-limit") != 0)
        continue;
      if (n++ == 0)
        fprintf(f, "Plans whose solve reached the solver's time limit, each its best "
                   "incumbent (docs/solver.md, \"Time limit\"):");
      char k[16] = "all";
      if (d->budgets[b] > 0)
        snprintf(k, sizeof k, "%d", d->budgets[b]);
      fprintf(f, " %s at K=%s;", lm_deploy_policy_name((lm_deploy_policy)p), k);
    }
  if (n)
    fprintf(f, "\n\n");
}

static lm_status report_text(FILE *f, const lm_deploy_state *d, lm_error *err) {
  (void)err;
  const lm_deploy_result *r = d->res;
  fprintf(f,
          "# Deployment evaluation\n\n"
          "- Spec: `%s`; ISA target %s; %s protocol.\n"
          "- %d kernels, %d held-out shapes (R log-uniform per kernel, "
          "never a bucket's R), %d planning buckets per (kernel, C), at "
          "most %" PRId64 " elements per buffer.\n"
          "- Plans made first, on predictions of the profile `%s`.\n"
          "- %s; times are the screening medians.\n"
          "- Plans: `plans/POLICY-K<k>.json`; the plan's dispatch ran "
          "every held-out shape at every budget, %d launches checked "
          "against the oracle, %d failures.\n"
          "- Wall time: %.0f s measuring, %.0f s planning and running, "
          "%.0f s in all.\n\n",
          d->o->spec, r->isa, d->o->quick ? "quick" : "full", r->kernels,
          r->shapes, d->spec.buckets, d->spec.max_elements, d->profile_path,
          d->o->all_splits
              ? "Every held-out shape measured with every legal variant, "
                "every split, in `measure/` (`lanemap evaluate "
                "--all-splits` on `cases.json`)"
              : "Every held-out shape measured in `measure/` (`lanemap "
                "evaluate` on `cases.json`) under the oracle's split "
                "pruning (docs/evaluation.md, \"Split pruning\"), always "
                "with every variant a predicted plan runs on its kernel "
                "(the cases' `time`); a variant the rule did not time is "
                "in neither the per-shape best nor the budget oracle "
                "(`--all-splits` times them all)",
          r->dispatched,
          r->failures, r->measure_s, r->deploy_s, r->total_s);
  if (r->noisy)
    fprintf(f,
            "**%d held-out shapes were still noisy after re-measuring**: "
            "their times are doubtful (measure/report.md).\n\n",
            r->noisy);
  cut_short(f, d);
  summary(f, d);
  ilp_vs_greedy(f, d);
  per_kernel(f, d);
  dispatch_picture(f, d);
  shapes_table(f, d);
  fprintf(f, "![regret against K](deploy-regret.png)\n");
  return LM_OK;
}

/* OUT/deploy.jsonl: one record per (budget, policy, shape). */
static lm_status records_text(FILE *f, const lm_deploy_state *d,
                              lm_error *err) {
  lm_status st = LM_OK;
  for (int b = 0; b < d->nbudgets && st == LM_OK; b++)
    for (int p = 0; p < LM_DEPLOY__COUNT && st == LM_OK; p++) {
      int slot = lm_deploy_slot(b, (lm_deploy_policy)p);
      if (!d->res->row[slot].made)
        continue;
      for (int i = 0; i < d->nshapes && st == LM_OK; i++) {
        const lm_deploy_shape *s = &d->s[i];
        cJSON *j = cJSON_CreateObject();
        if (!j) {
          st = lm_error_set(err, LM_ESYS, "out of memory");
          break;
        }
        cJSON_AddStringToObject(j, "schema", "lanemap.deploy-record/1");
        cJSON_AddStringToObject(j, "shape_id", s->id);
        cJSON_AddStringToObject(j, "kernel", d->spec.k[s->kernel].k->name);
        cJSON_AddNumberToObject(j, "R", (double)s->R);
        cJSON_AddNumberToObject(j, "C", (double)s->C);
        cJSON_AddStringToObject(j, "isa", d->res->isa);
        cJSON_AddStringToObject(j, "policy",
                                lm_deploy_policy_name((lm_deploy_policy)p));
        cJSON_AddNumberToObject(j, "budget", d->budgets[b]);
        if (s->chosen[slot])
          cJSON_AddStringToObject(j, "variant", s->chosen[slot]);
        cJSON_AddItemToObject(j, "t_ns", lm_json_num(s->t[slot]));
        cJSON_AddItemToObject(j, "t_best_ns", lm_json_num(s->t_best));
        cJSON_AddItemToObject(
            j, "t_oracle_ns",
            lm_json_num(s->t[lm_deploy_slot(b, LM_DEPLOY_ORACLE)]));
        char *line = NULL;
        size_t n = 0;
        if ((st = lm_json_print(j, false, &line, &n, err)) == LM_OK)
          fwrite(line, 1, n, f);
        free(line);
        cJSON_Delete(j);
      }
    }
  return st;
}

/* OUT/deploy-regret.gp: geomean regret against the per-shape best, per
 * policy, against K (all drawn at twice the largest K). */
static lm_status plot_script(FILE *f, const lm_deploy_state *d, lm_error *err) {
  (void)err;
  int kmax = 1;
  for (int b = 0; b < d->nbudgets; b++)
    kmax = d->budgets[b] > kmax ? d->budgets[b] : kmax;
  fprintf(f, "set terminal pngcairo size 900,560\nset output outfile\n"
             "set title 'Deployment: regret against the per-shape best'\n"
             "set xlabel 'variants per kernel (K)'\n"
             "set ylabel 'geomean regret (%%)'\nset key outside right\n"
             "set xtics (");
  for (int b = 0; b < d->nbudgets; b++) /* each once; all at 2 kmax */
    if (d->budgets[b])
      fprintf(f, "%s'%d' %d", b ? ", " : "", d->budgets[b], d->budgets[b]);
    else
      fprintf(f, "%s'all' %d", b ? ", " : "", 2 * kmax);
  fprintf(f, ")\nset logscale x 2\n$data << EOD\n");
  for (int p = 0; p < LM_DEPLOY__COUNT; p++) {
    fprintf(f, "# %s\n", lm_deploy_policy_name((lm_deploy_policy)p));
    for (int b = 0; b < d->nbudgets; b++) {
      const lm_deploy_row *r = find_row(d, b, (lm_deploy_policy)p);
      if (r->made && isfinite(r->best.geomean))
        fprintf(f, "%d %.6g\n", d->budgets[b] ? d->budgets[b] : 2 * kmax,
                100 * r->best.geomean);
    }
    fprintf(f, "\n\n");
  }
  fprintf(f, "EOD\nplot ");
  for (int p = 0; p < LM_DEPLOY__COUNT; p++)
    fprintf(f, "%s$data index %d with linespoints title '%s'", p ? ", " : "", p,
            lm_deploy_policy_name((lm_deploy_policy)p));
  fprintf(f, "\n");
  return LM_OK;
}

typedef lm_status (*text_fn)(FILE *f, const lm_deploy_state *d, lm_error *err);

/* OUT/name, written atomically from what fill prints. */
static lm_status write_out(const lm_deploy_state *d, const char *name,
                           text_fn fill, lm_error *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return lm_error_set(err, LM_ESYS, "out of memory");
  lm_status st = fill(f, d, err);
  if (fclose(f) != 0 && st == LM_OK)
    st = lm_error_set(err, LM_ESYS, "out of memory");
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/%s", d->o->out, name);
  if (st == LM_OK)
    st = lm_file_write_atomic(path, buf ? buf : "", len, err);
  free(buf);
  return st;
}

lm_status lm_deploy_report(const lm_deploy_state *d, lm_error *err) {
  lm_status st = write_out(d, "deploy.jsonl", records_text, err);
  if (st == LM_OK)
    st = write_out(d, "deploy.md", report_text, err);
  if (st == LM_OK) { /* a missing plot is a note, not a failed run */
    lm_error perr = {0};
    if ((write_out(d, "deploy-regret.gp", plot_script, &perr) != LM_OK ||
         (lm_eval_have_gnuplot() &&
          lm_eval_gnuplot(d->o->out, "deploy-regret.gp", "deploy-regret.png", 1,
                          &perr) != LM_OK)) &&
        d->o->note)
      d->o->note(d->o->ctx, 1, perr.msg);
  }
  return st;
}
