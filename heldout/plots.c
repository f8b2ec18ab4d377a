/* Plots of a held-out run, drawn by gnuplot.
 *
 * Each plot is a data file and a gnuplot script beside the PNG, written
 * first and atomically, so a plot can be redrawn or restyled by hand
 * (`cd DIR && gnuplot regret_cdf.gp`) and the data survive a machine
 * without gnuplot.  gnuplot runs as a child process in DIR with its output
 * in DIR/gnuplot.log; the library never prints.
 *
 *   pred_vs_measured  every verified variant of every case, predicted
 *                     against measured ns, log-log, with y = x: how far the
 *                     model is off in absolute terms, per split.
 *   regret_cdf        per policy, the share of cases with regret <= x.
 *                     Regret 0 (the policy picked the best) has no place on
 *                     a log axis, so regrets below 0.1% are drawn at 0.1%,
 *                     the resolution the timing cannot go below anyway.
 *   cases             per case, t/t_best of the plan, the best (1) and the
 *                     baselines, log y. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "heldout/gnuplot.h"
#include "lanemap/heldout.h"
#include "lanemap/timing.h"

extern char **environ;

#define REGRET_FLOOR 1e-3 /* regrets below 0.1% drawn at 0.1% */

/* One colour per policy, the same in every plot; the plan's stands out. */
static const char *const policy_color[LM_POLICY__COUNT] = {
    "#d62728", "#9467bd", "#8c564b", "#17becf", "#e377c2",
    "#1f77b4", "#ff7f0e", "#2ca02c", "#7f7f7f"};
_Static_assert(sizeof policy_color / sizeof *policy_color == LM_POLICY__COUNT,
               "one colour per policy");
#define BEST_COLOR "#c7c7c7"

/* Write the memstream's text to DIR/name atomically. */
static lm_status write_file(const char *dir, const char *name, FILE *f,
                            char **buf, size_t *len, lm_error *err) {
  if (fclose(f) != 0) {
    free(*buf);
    return lm_error_set(err, LM_ESYS, "%s/%s: out of memory", dir, name);
  }
  size_t n = strlen(dir) + strlen(name) + 2;
  char *path = malloc(n);
  lm_status st;
  if (!path) {
    st = lm_error_set(err, LM_ESYS, "out of memory");
  } else {
    snprintf(path, n, "%s/%s", dir, name);
    st = lm_file_write_atomic(path, *buf, *len, err);
  }
  free(path);
  free(*buf);
  *buf = NULL;
  return st;
}

/* A word of a data file: whitespace would split the column and a quote
 * would end a gnuplot string, so both become '-'. */
static void put_label(FILE *f, const char *s) {
  for (; *s; s++)
    fputc(*s == '\'' || *s == '"' || *s == ' ' || *s == '\t' ? '-' : *s, f);
}

static lm_status plot_pred(const lm_eval_run *run, const char *dir,
                           lm_error *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return lm_error_set(err, LM_ESYS, "out of memory");
  const char *splits[8] = {0};
  int ns = 0, npoints = 0;
  double lo = INFINITY, hi = 0; /* over both axes: one range, y = x diagonal */
  fprintf(f, "# predicted_ns measured_ns split_index case variant\n");
  for (int i = 0; i < run->ncases; i++) {
    const lm_eval_case *c = &run->cases[i];
    int s = 0;
    const char *sp = c->split ? c->split : "all";
    while (s < ns && strcmp(splits[s], sp) != 0)
      s++;
    if (s == ns && ns < 8)
      splits[ns++] = sp;
    for (int j = 0; j < c->nvariants; j++) {
      const lm_eval_variant *v = &c->v[j];
      if (v->verified != 1 || !(v->measured > 0) || !(v->predicted > 0) ||
          !isfinite(v->measured) || !isfinite(v->predicted))
        continue;
      double a = fmin(v->predicted, v->measured);
      double b = fmax(v->predicted, v->measured);
      lo = a < lo ? a : lo;
      hi = b > hi ? b : hi;
      fprintf(f, "%.6g %.6g %d ", v->predicted, v->measured, s);
      put_label(f, c->id);
      fputc(' ', f);
      put_label(f, v->variant);
      fputc('\n', f);
      npoints++;
    }
  }
  lm_status st = write_file(dir, "pred_vs_measured.dat", f, &buf, &len, err);
  if (st != LM_OK)
    return st;
  if (!(f = open_memstream(&buf, &len)))
    return lm_error_set(err, LM_ESYS, "out of memory");
  fprintf(f,
          "# predicted against measured time of every verified variant\n"
          "set terminal pngcairo size 900,800 font ',11'\n"
          "if (!exists(\"outfile\")) outfile = 'pred_vs_measured.png'\n"
          "set output outfile\n"
          "set logscale xy\n"
          "set format x '10^{%%L}'\nset format y '10^{%%L}'\n"
          "set xlabel 'predicted (ns per call)'\n"
          "set ylabel 'measured p50 (ns per call)'\n"
          "set title 'Held-out %s: predicted vs measured, %d variants'\n"
          "set key top left\nset grid\nset size square\n",
          run->isa ? run->isa : "", npoints);
  if (npoints == 0) {
    lo = 1;
    hi = 1e6;
  }
  /* the same whole decades on both axes, so y = x is the diagonal */
  lo = pow(10, floor(log10(lo)));
  hi = pow(10, ceil(log10(hi)));
  if (hi <= lo)
    hi = lo * 10;
  fprintf(f, "set xrange [%g:%g]\nset yrange [%g:%g]\n", lo, hi, lo, hi);
  if (npoints == 0) {
    fprintf(f, "plot x title 'y = x' lc rgb 'gray'\n");
  } else {
    fprintf(f, "plot ");
    for (int s = 0; s < ns; s++) {
      fprintf(f,
              "'pred_vs_measured.dat' using 1:($3 == %d ? $2 : 1/0) "
              "with points pt 7 ps 0.6 title '",
              s);
      put_label(f, splits[s]);
      fprintf(f, "', ");
    }
    fprintf(f, "x title 'y = x' lc rgb 'gray' dt 2\n");
  }
  return write_file(dir, "pred_vs_measured.gp", f, &buf, &len, err);
}

/* The policies plotted: those with at least one regret. */
static int has_regrets(const lm_eval_run *run, lm_policy p) {
  for (int i = 0; i < run->ncases; i++)
    if (isfinite(run->cases[i].t_best) && isfinite(run->cases[i].t_policy[p]))
      return 1;
  return 0;
}

static lm_status plot_cdf(const lm_eval_run *run, const char *dir,
                          lm_error *err) {
  char *buf = NULL;
  size_t len = 0;
  double *r = malloc((size_t)(run->ncases > 0 ? run->ncases : 1) * sizeof *r);
  FILE *f = r ? open_memstream(&buf, &len) : NULL;
  if (!f) {
    free(r);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  int blocks[LM_POLICY__COUNT], nb = 0;
  double rmax = REGRET_FLOOR * 10;
  fprintf(f, "# one block per policy: regret (floored at %g) share_of_cases\n",
          REGRET_FLOOR);
  for (int p = 0; p < LM_POLICY__COUNT; p++) {
    if (!has_regrets(run, (lm_policy)p))
      continue;
    int m = 0;
    for (int i = 0; i < run->ncases; i++) {
      const lm_eval_case *c = &run->cases[i];
      if (isfinite(c->t_best) && isfinite(c->t_policy[p]))
        r[m++] = c->t_policy[p] / c->t_best - 1;
    }
    lm_timing_sort(r, m);
    if (nb > 0)
      fprintf(f, "\n\n");
    fprintf(f, "# %s\n%g 0\n", lm_policy_name((lm_policy)p), REGRET_FLOOR);
    for (int i = 0; i < m; i++) {
      double x = r[i] > REGRET_FLOOR ? r[i] : REGRET_FLOOR;
      if (x > rmax)
        rmax = x;
      fprintf(f, "%.6g %.6g\n", x, (double)(i + 1) / m);
    }
    blocks[nb++] = p;
  }
  free(r);
  lm_status st = write_file(dir, "regret_cdf.dat", f, &buf, &len, err);
  if (st != LM_OK)
    return st;
  if (!(f = open_memstream(&buf, &len)))
    return lm_error_set(err, LM_ESYS, "out of memory");
  fprintf(f,
          "# share of cases with regret <= x, per policy\n"
          "set terminal pngcairo size 1000,650 font ',11'\n"
          "if (!exists(\"outfile\")) outfile = 'regret_cdf.png'\n"
          "set output outfile\n"
          "set logscale x\n"
          "set xrange [%g:%g]\nset yrange [0:1.02]\n"
          /* tic labels are formats to gnuplot: %% is a percent sign */
          "set xtics ('<=0.1%%%%' %g, '1%%%%' 0.01, '3%%%%' 0.03, "
          "'10%%%%' 0.1, '25%%%%' 0.25, '100%%%%' 1, '10x' 10, "
          "'100x' 100)\n"
          "set xlabel 'regret t(chosen)/t(best) - 1 (log; 0 drawn at "
          "0.1%%)'\n"
          "set ylabel 'share of cases'\n"
          "set title 'Held-out %s: regret CDF per policy'\n"
          "set key bottom right\nset grid\n"
          "set arrow from 0.03, graph 0 to 0.03, graph 1 nohead dt 3 "
          "lc rgb 'gray'\n",
          REGRET_FLOOR, rmax * 1.5, REGRET_FLOOR, run->isa ? run->isa : "");
  if (nb == 0)
    fprintf(f, "plot 1 with lines lc rgb 'gray' title 'no measured case'\n");
  else
    for (int b = 0; b < nb; b++)
      fprintf(f,
              "%s'regret_cdf.dat' index %d using 1:2 with steps lw %d "
              "lc rgb '%s' title '%s'%s",
              b == 0 ? "plot " : "     ", b,
              blocks[b] == LM_POLICY_PLAN ? 3 : 2, policy_color[blocks[b]],
              lm_policy_name((lm_policy)blocks[b]),
              b + 1 < nb ? ", \\\n" : "\n");
  return write_file(dir, "regret_cdf.gp", f, &buf, &len, err);
}

static lm_status plot_cases(const lm_eval_run *run, const char *dir,
                            lm_error *err) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f)
    return lm_error_set(err, LM_ESYS, "out of memory");
  int cols[LM_POLICY__COUNT], nc = 0, nrows = 0;
  for (int p = 0; p < LM_POLICY__COUNT; p++)
    if (has_regrets(run, (lm_policy)p))
      cols[nc++] = p;
  /* the plan first, then the best (= 1), then the baselines */
  fprintf(f, "# case t_plan/t_best best");
  for (int k = 0; k < nc; k++)
    if (cols[k] != LM_POLICY_PLAN)
      fprintf(f, " %s", lm_policy_name((lm_policy)cols[k]));
  fprintf(f, "\n");
  for (int i = 0; i < run->ncases; i++) {
    const lm_eval_case *c = &run->cases[i];
    if (!isfinite(c->t_best))
      continue;
    put_label(f, c->id);
    double tp = c->t_policy[LM_POLICY_PLAN];
    if (isfinite(tp))
      fprintf(f, " %.6g 1", tp / c->t_best);
    else
      fprintf(f, " NaN 1");
    for (int k = 0; k < nc; k++) {
      if (cols[k] == LM_POLICY_PLAN)
        continue;
      double t = c->t_policy[cols[k]];
      if (isfinite(t))
        fprintf(f, " %.6g", t / c->t_best);
      else
        fprintf(f, " NaN");
    }
    fprintf(f, "\n");
    nrows++;
  }
  lm_status st = write_file(dir, "cases.dat", f, &buf, &len, err);
  if (st != LM_OK)
    return st;
  if (!(f = open_memstream(&buf, &len)))
    return lm_error_set(err, LM_ESYS, "out of memory");
  int width = 300 + 22 * (nrows > 0 ? nrows : 1) * (nc + 1) / 3;
  if (width > 8000)
    width = 8000;
  fprintf(f,
          "# per case, t/t_best of the plan, the best and the baselines\n"
          "set terminal pngcairo size %d,700 font ',10'\n"
          "if (!exists(\"outfile\")) outfile = 'cases.png'\n"
          "set output outfile\n"
          "set style data histograms\n"
          "set style histogram clustered gap 1\n"
          "set style fill solid 0.9 border -1\n"
          "set boxwidth 0.9\n"
          "set logscale y\nset yrange [0.9:*]\n"
          "set ylabel 't / t_{best} (log)'\n"
          "set xtics rotate by -45 font ',8' nomirror noenhanced\n"
          "set title 'Held-out %s: per-case time against the best'\n"
          "set key outside top center horizontal\nset grid y\n"
          "set datafile missing 'NaN'\n",
          width, run->isa ? run->isa : "");
  if (nrows == 0) {
    fprintf(f, "plot 1 with lines lc rgb 'gray' title 'no measured case'\n");
  } else {
    /* columns: 1 the case, 2 the plan, 3 the best, then the baselines */
    fprintf(f,
            "plot 'cases.dat' using 2:xtic(1) lc rgb '%s' title 'plan', "
            "\\\n     'cases.dat' using 3 lc rgb '%s' title 'best'",
            policy_color[LM_POLICY_PLAN], BEST_COLOR);
    int col = 4;
    for (int k = 0; k < nc; k++)
      if (cols[k] != LM_POLICY_PLAN)
        fprintf(f, ", \\\n     'cases.dat' using %d lc rgb '%s' title '%s'",
                col++, policy_color[cols[k]],
                lm_policy_name((lm_policy)cols[k]));
    fprintf(f, "\n");
  }
  return write_file(dir, "cases.gp", f, &buf, &len, err);
}

int lm_eval_have_gnuplot(void) {
  const char *path = getenv("PATH");
  if (!path || !*path)
    return 0;
  char dir[4096];
  for (const char *p = path; *p;) {
    const char *e = strchr(p, ':');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 0) {
      snprintf(dir, sizeof dir, "./gnuplot");
    } else if (n + 9 < sizeof dir) {
      memcpy(dir, p, n);
      snprintf(dir + n, sizeof dir - n, "/gnuplot");
    } else {
      dir[0] = 0;
    }
    if (dir[0] && access(dir, X_OK) == 0)
      return 1;
    p += n;
    if (*p == ':')
      p++;
  }
  return 0;
}

lm_status lm_eval_gnuplot(const char *dir, const char *script,
                          const char *png, int first, lm_error *err) {
  size_t n = strlen(dir) + 16;
  char *log = malloc(n);
  if (!log)
    return lm_error_set(err, LM_ESYS, "out of memory");
  snprintf(log, n, "%s/gnuplot.log", dir);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addchdir_np(&fa, dir);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(
      &fa, 1, "gnuplot.log", O_WRONLY | O_CREAT | (first ? O_TRUNC : O_APPEND),
      0644);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  char outvar[128], part[4200], final[4200];
  snprintf(outvar, sizeof outvar, "outfile = '%s.part'", png);
  snprintf(part, sizeof part, "%s/%s.part", dir, png);
  snprintf(final, sizeof final, "%s/%s", dir, png);
  char *argv[] = {"gnuplot", "-e", outvar, (char *)script, NULL};
  pid_t pid;
  int rc = posix_spawnp(&pid, "gnuplot", &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  lm_status st = LM_OK;
  if (rc != 0) {
    st = rc == ENOENT
             ? lm_error_set(err, LM_EFAIL,
                            "gnuplot not found: apt-get install "
                            "gnuplot-nox")
             : lm_error_set(err, LM_ESYS, "%s/%s: cannot start gnuplot: %s",
                            dir, script, strerror(rc));
    goto done;
  }
  int status;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) {
      st = lm_error_set(err, LM_ESYS, "gnuplot: wait: %s", strerror(errno));
      goto done;
    }
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    st = lm_error_set(err, LM_EFAIL,
                      "gnuplot not found: apt-get install gnuplot-nox");
  else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    st = lm_error_set(err, LM_EFAIL,
                      "%s/%s: gnuplot exited with status %d (see %s)", dir,
                      script, WEXITSTATUS(status), log);
  else if (WIFSIGNALED(status))
    st = lm_error_set(err, LM_EFAIL, "%s/%s: gnuplot killed by signal %d", dir,
                      script, WTERMSIG(status));
  else if (rename(part, final) != 0)
    st = lm_error_set(err, LM_ESYS, "%s: cannot rename to %s: %s", part, png,
                      strerror(errno));
done:
  if (st != LM_OK)
    unlink(part);
  free(log);
  return st;
}

lm_status lm_eval_plots(const lm_eval_run *run, const char *dir,
                        lm_error *err) {
  lm_status st;
  if ((st = plot_pred(run, dir, err)) != LM_OK ||
      (st = plot_cdf(run, dir, err)) != LM_OK ||
      (st = plot_cases(run, dir, err)) != LM_OK)
    return st;
  if (!lm_eval_have_gnuplot())
    return lm_error_set(err, LM_EFAIL,
                        "gnuplot not found: apt-get install gnuplot-nox "
                        "(data and scripts are in %s)",
                        dir);
  static const char *const plots[] = {"pred_vs_measured", "regret_cdf", "cases"};
  for (int i = 0; i < 3; i++) {
    char script[64], png[64];
    snprintf(script, sizeof script, "%s.gp", plots[i]);
    snprintf(png, sizeof png, "%s.png", plots[i]);
    if ((st = lm_eval_gnuplot(dir, script, png, i == 0, err)) != LM_OK)
      return st;
  }
  return LM_OK;
}
