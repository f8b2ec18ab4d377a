/* bench_solver_scale: solve random instances of growing size, up to 100
 * kernels × 64 buckets × 32 variants, with K_k = 3 and no global budget,
 * with K_k = 3 and a global budget, and with thresholded dispatch; once by
 * lm_solve's default method and once as the direct joint MIP.  Prints a
 * Markdown table: solve time, status, gap, objective, greedy's excess.
 *
 *   bench_solver_scale [--limit S] [--no-joint] [--presolve on|off]
 *
 * Two cost families: "linear" costs (α_v + β_v·R_s)·e^{0.1 ε}, the shape of
 * a cost model's predictions (a per-call overhead and a per-element rate,
 * with noise), and "iid" costs uniform in [1, 100), where hardly any
 * variant dominates another.  Compile costs are whole ms in [5, 50]; the
 * budget is 40% of what the unbudgeted optimum compiles. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/solver.h"

static uint64_t rng_next(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

static double unif(uint64_t *s) {
  return ((double)(rng_next(s) >> 11) + 0.5) * 0x1p-53;
}

static double normal(uint64_t *s) {
  return sqrt(-2 * log(unif(s))) * cos(2 * M_PI * unif(s));
}

typedef struct Inst {
  lm_solve_problem p;
  lm_solve_kernel *k;
  double *w, *c, *cc;
} Inst;

static void inst_make(Inst *in, int nk, int nb, int nv, int iid,
                      uint64_t seed) {
  uint64_t s = seed;
  in->k = calloc((size_t)nk, sizeof *in->k);
  in->w = malloc(sizeof(double) * (size_t)nk * nb);
  in->c = malloc(sizeof(double) * (size_t)nk * nb * nv);
  in->cc = malloc(sizeof(double) * (size_t)nk * nv);
  if (!in->k || !in->w || !in->c || !in->cc) {
    fprintf(stderr, "out of memory\n");
    exit(3);
  }
  for (int k = 0; k < nk; k++) {
    double *w = in->w + (size_t)k * nb, *c = in->c + (size_t)k * nb * nv,
           *cc = in->cc + (size_t)k * nv;
    double alpha[nv], beta[nv];
    for (int v = 0; v < nv; v++) {
      alpha[v] = 10 * pow(100, unif(&s));
      beta[v] = 0.1 * pow(100, unif(&s));
      cc[v] = 5 + (double)(rng_next(&s) % 46);
    }
    for (int b = 0; b < nb; b++) {
      double R = pow(2, 16.0 * b / nb); /* 1 .. 65536 elements */
      w[b] = unif(&s);
      for (int v = 0; v < nv; v++)
        c[b * nv + v] = iid ? 1 + 99 * unif(&s)
                            : (alpha[v] + beta[v] * R) * exp(0.1 * normal(&s));
    }
    in->k[k] = (lm_solve_kernel){nb, nv, w, c, cc, 3};
  }
  in->p = (lm_solve_problem){nk, in->k, 1, -1};
}

static void inst_free(Inst *in) {
  free(in->k);
  free(in->w);
  free(in->c);
  free(in->cc);
}

static void row(const char *family, int nk, int nb, int nv, const char *mode,
                const char *method, const lm_solve_problem *p,
                const lm_solve_opts *o) {
  lm_solve_result r;
  lm_error e = {0};
  printf("| %s | %d×%d×%d | %s | %s | ", family, nk, nb, nv, mode, method);
  if (lm_solve(p, o, &r, &e) != LM_OK) {
    printf("error: %s | | | | | | |\n", e.msg);
    return;
  }
  char gap[32];
  if (isfinite(r.gap))
    snprintf(gap, sizeof gap, "%.2g%%", 100 * r.gap);
  else
    snprintf(gap, sizeof gap, "no bound");
  printf("%s | %.3f | %s | %.6g | %+.2f%% | %d | %d | %ld |\n",
         lm_solve_status_name(r.status), r.time_s, gap, r.objective,
         100 * (r.greedy_objective / r.objective - 1), r.pruned, r.mip_solves,
         r.nodes);
  fflush(stdout);
  lm_solve_result_free(&r);
}

int main(int argc, char **argv) {
  double limit = 10;
  int joint = 1, presolve = -1; /* -1: lm_solve_defaults' */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--limit") && i + 1 < argc)
      limit = atof(argv[++i]);
    else if (!strcmp(argv[i], "--no-joint"))
      joint = 0;
    else if (!strcmp(argv[i], "--presolve") && i + 1 < argc &&
             (!strcmp(argv[i + 1], "on") || !strcmp(argv[i + 1], "off")))
      presolve = !strcmp(argv[++i], "on");
    else {
      fprintf(stderr, "usage: bench_solver_scale [--limit S] [--no-joint] "
                      "[--presolve on|off]\n");
      return 2;
    }
  }
  static const int sizes[][3] = {
      {1, 64, 32}, {10, 64, 32}, {20, 64, 32}, {50, 64, 32}, {100, 64, 32}};
  lm_solve_opts d;
  lm_solve_defaults(&d);
  printf("time limit %g s per solve; K_k = 3 for every kernel; LP presolver %s\n\n",
         limit, (presolve >= 0 ? presolve : d.presolve) ? "on" : "off");
  printf("| costs | kernels×buckets×variants | constraints | method | status "
         "| time s | gap | objective | greedy excess | pruned | MIPs | nodes "
         "|\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (int fam = 0; fam < 2; fam++)
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      int nk = sizes[i][0], nb = sizes[i][1], nv = sizes[i][2];
      const char *family = fam ? "iid" : "linear";
      Inst in;
      inst_make(&in, nk, nb, nv, fam, 1000 + i);
      lm_solve_opts o;
      lm_solve_defaults(&o);
      o.time_limit = limit;
      if (presolve >= 0)
        o.presolve = presolve;
      /* the budget: 40% of what the cap-only optimum compiles */
      lm_solve_result r;
      lm_error e = {0};
      if (lm_solve(&in.p, &o, &r, &e) != LM_OK) {
        fprintf(stderr, "%s\n", e.msg);
        return 1;
      }
      double budget = floor(0.4 * r.compile_total);
      lm_solve_result_free(&r);
      for (int m = 0; m < 3; m++) {
        const char *mode = m == 0   ? "cap"
                           : m == 1 ? "cap + budget"
                                    : "cap + threshold";
        in.p.budget = m == 1 ? budget : -1;
        o.threshold = m == 2;
        for (int meth = 0; meth < 1 + joint; meth++) {
          o.method = meth ? LM_SOLVE_JOINT_MIP : LM_SOLVE_AUTO;
          row(family, nk, nb, nv, mode, meth ? "joint MIP" : "auto", &in.p, &o);
        }
      }
      inst_free(&in);
    }
  return 0;
}
