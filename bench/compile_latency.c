/* bench_compile_latency: how long the backend takes to turn one variant
 * into native code, over the whole mapping space.
 *
 * The solver spends a compile budget (DESIGN.md §11), so it needs to know
 * what a compile costs and how much that depends on the mapping.  For every
 * kernel in the kernel folder and every ISA target this machine runs
 * (x86-64-v2, -v3, -v4), every legal single-threaded variant
 * (lm_variant_enumerate) is compiled once with the default options: lower,
 * verify, default<O3>, ORC JIT.  Per kernel and ISA it reports the count,
 * the median, p90 and max of lm_compiled_ms (wall time), and the median
 * CPU time of the compiling thread, which a loaded machine inflates far
 * less than the wall time (the LLJIT compiles on the calling thread).  A
 * second table groups the same compiles by mapping family, a third
 * recompiles a few variants per kernel and ISA with want_asm = 1 (a second
 * code generation, into assembly text, for the asm_* counts) and reports
 * the paired ratio against the same variants' plain compile.
 *
 * The first compile on an ISA also creates that ISA's LLJIT; it is done
 * once up front, reported on its own line, and left out of the tables.
 * Median: the middle value (mean of the two middle ones for even counts);
 * p90: the nearest-rank 90th percentile.  Output is Markdown on stdout.
 *
 * Usage: bench_compile_latency [--kernels DIR] [--asm N] */
/* getloadavg and CLOCK_THREAD_CPUTIME_ID, also under -std=c11 */
#define _DEFAULT_SOURCE
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lanemap/backend.h"
#include "lanemap/timing.h"

#define MAX_KERNELS 64

static const lm_isa isas[] = {LM_ISA_SSE42, LM_ISA_AVX2, LM_ISA_AVX512};
#define NISA ((int)(sizeof isas / sizeof isas[0]))

/* The mapping families of DESIGN.md §6, as the lowering tells them apart
 * (lower.c picks its main-loop mode from exactly these fields). */
enum {
  FAM_PROG_GATHER,
  FAM_PROG_TRANSPOSE,
  FAM_PART_GATHER,
  FAM_PART_SEGMENT,
  FAM_LOCAL,
  FAM__COUNT
};
static const char *fam_name[FAM__COUNT] = {
    "program L=1, glob=gather", "program L=1, glob=transpose (blocks)",
    "partial 1<L<W, glob=gather", "partial 1<L<W, glob=transpose (segments)",
    "packet-local L=W"};

static int family(const lm_variant *v) {
  if (v->l == v->w)
    return FAM_LOCAL;
  if (v->l == 1)
    return v->glob == LM_GLOB_TRANSPOSE ? FAM_PROG_TRANSPOSE : FAM_PROG_GATHER;
  return v->glob == LM_GLOB_TRANSPOSE ? FAM_PART_SEGMENT : FAM_PART_GATHER;
}

static double thread_cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Median, p90 and max of v[0..n) (v is sorted in place). */
typedef struct Stats {
  double median, p90, max;
} Stats;

static Stats stats(double *v, int n) {
  Stats s = {NAN, NAN, NAN};
  if (n <= 0)
    return s;
  lm_timing_sort(v, n);
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  int rank = (int)ceil(0.9 * n);
  s.p90 = v[(rank < 1 ? 1 : rank) - 1];
  s.max = v[n - 1];
  return s;
}

/* One compile; returns its lm_compiled_ms (and CPU ms, counts) or -1. */
static double compile_once(const lm_kernel *k, const lm_variant *v, int asm_,
                           double *cpu_ms, lm_counts *counts) {
  lm_compile_opts o;
  lm_compile_defaults(&o);
  o.want_asm = asm_;
  lm_compiled *c = NULL;
  lm_error err = {0};
  double c0 = thread_cpu_ms();
  if (lm_compile(k, v, &o, &c, &err) != LM_OK) {
    char name[128];
    fprintf(stderr, "bench_compile_latency: %s %s: %s\n", k->name,
            lm_variant_format(v, name, sizeof name), err.msg);
    return -1;
  }
  if (cpu_ms)
    *cpu_ms = thread_cpu_ms() - c0;
  if (counts)
    *counts = *lm_compiled_counts(c);
  double ms = lm_compiled_ms(c);
  lm_compiled_free(c);
  return ms;
}

static void machine_line(void) {
  char model[256] = "unknown CPU";
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    char line[512];
    while (fgets(line, sizeof line, f))
      if (strncmp(line, "model name", 10) == 0) {
        char *p = strchr(line, ':');
        if (p) {
          p += 1 + (p[1] == ' ');
          p[strcspn(p, "\n")] = 0;
          snprintf(model, sizeof model, "%s", p);
        }
        break;
      }
    fclose(f);
  }
  double load[3] = {0};
  int nl = getloadavg(load, 3);
  char when[64];
  time_t t = time(NULL);
  strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", gmtime(&t));
  printf("lanemap %s on %s, %s; load average %.2f (1 min)%s\n\n", lm_version(),
         model, when, nl > 0 ? load[0] : NAN, nl > 0 ? "" : " unavailable");
}

typedef struct Row { /* one kernel x ISA */
  const char *kernel;
  lm_isa isa;
  int n, nasm, failed;
  Stats ms, asm_ms;
  double cpu_median, ir_median, asm_ratio, asm_cpu_ratio, asm_plain_median;
  char slowest[128];
} Row;

int main(int argc, char **argv) {
  const char *dir = LANEMAP_SOURCE_DIR "/kernels";
  int nasm = 4;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--kernels") == 0 && i + 1 < argc)
      dir = argv[++i];
    else if (strcmp(argv[i], "--asm") == 0 && i + 1 < argc)
      nasm = atoi(argv[++i]);
    else {
      fprintf(stderr,
              "usage: bench_compile_latency [--kernels DIR] [--asm N]\n");
      return 2;
    }
  }
  char pattern[4096];
  snprintf(pattern, sizeof pattern, "%s/*.lk", dir);
  glob_t g;
  if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc == 0) {
    fprintf(stderr, "bench_compile_latency: no kernels match %s\n", pattern);
    return 2;
  }
  int nk = 0;
  lm_kernel *ks[MAX_KERNELS];
  for (size_t i = 0; i < g.gl_pathc && nk < MAX_KERNELS; i++) {
    lm_error err = {0};
    if (lm_kernel_load(g.gl_pathv[i], &ks[nk], &err) != LM_OK) {
      fprintf(stderr, "bench_compile_latency: %s\n", err.msg);
      continue;
    }
    nk++;
  }
  globfree(&g);

  printf("# Compile latency of every legal variant\n\n");
  machine_line();
  Row rows[MAX_KERNELS * NISA];
  int nrows = 0, total = 0, failures = 0;
  double total_ms = 0, t_start = lm_now_ns();
  double *fam_ms[NISA][FAM__COUNT], *fam_cpu[NISA][FAM__COUNT];
  int fam_n[NISA][FAM__COUNT] = {{0}};
  double first_ms[NISA];
  for (int ii = 0; ii < NISA; ii++) {
    lm_isa isa = isas[ii];
    first_ms[ii] = NAN;
    for (int f = 0; f < FAM__COUNT; f++)
      fam_ms[ii][f] = fam_cpu[ii][f] = NULL;
    if (!lm_isa_runnable(isa))
      continue;
    for (int ki = 0; ki < nk; ki++) {
      const lm_kernel *k = ks[ki];
      lm_enum_opts eo;
      lm_enum_defaults(&eo);
      eo.isa = isa;
      lm_variant *vs = NULL;
      lm_error err = {0};
      int n = lm_variant_enumerate(k, &eo, &vs, &err);
      if (n <= 0) {
        free(vs);
        continue;
      }
      if (isnan(first_ms[ii])) /* creates the ISA's LLJIT: not a sample */
        first_ms[ii] = compile_once(k, &vs[0], 0, NULL, NULL);
      Row *r = &rows[nrows++];
      memset(r, 0, sizeof *r);
      r->kernel = k->name;
      r->isa = isa;
      double *ms = calloc((size_t)n, sizeof *ms);
      double *cpu = calloc((size_t)n, sizeof *cpu);
      double *ir = calloc((size_t)n, sizeof *ir);
      double worst = -1;
      for (int i = 0; i < n; i++) {
        lm_counts cnt;
        double c;
        double t = compile_once(k, &vs[i], 0, &c, &cnt);
        if (t < 0) {
          r->failed++;
          continue;
        }
        if (t > worst) {
          worst = t;
          lm_variant_format(&vs[i], r->slowest, sizeof r->slowest);
        }
        int f = family(&vs[i]);
        size_t grow = sizeof(double) * (size_t)(fam_n[ii][f] + 1);
        fam_ms[ii][f] = realloc(fam_ms[ii][f], grow);
        fam_cpu[ii][f] = realloc(fam_cpu[ii][f], grow);
        fam_cpu[ii][f][fam_n[ii][f]] = c;
        fam_ms[ii][f][fam_n[ii][f]++] = t;
        ms[r->n] = t, cpu[r->n] = c, ir[r->n] = cnt.ir_instructions;
        r->n++;
        total_ms += t;
      }
      /* want_asm on a few variants spread over the enumeration order (which
       * walks L upwards), paired with their own plain compile just above */
      int na = nasm < n ? nasm : n;
      double *am = calloc((size_t)(na ? na : 1), sizeof *am);
      double *pm = calloc((size_t)(na ? na : 1), sizeof *pm);
      double *ac = calloc((size_t)(na ? na : 1), sizeof *ac);
      double *pc = calloc((size_t)(na ? na : 1), sizeof *pc);
      for (int j = 0; j < na; j++) {
        int i = na > 1 ? (int)((long)j * (n - 1) / (na - 1)) : 0;
        double pcpu = 0, acpu = 0;
        double p = compile_once(k, &vs[i], 0, &pcpu, NULL);
        double a = compile_once(k, &vs[i], 1, &acpu, NULL);
        if (a < 0 || p < 0) {
          r->failed++;
          continue;
        }
        am[r->nasm] = a, pm[r->nasm] = p;
        ac[r->nasm] = acpu, pc[r->nasm] = pcpu;
        r->nasm++;
      }
      r->asm_ratio = lm_timing_paired_ratio(am, pm, r->nasm);
      r->asm_cpu_ratio = lm_timing_paired_ratio(ac, pc, r->nasm);
      r->asm_ms = stats(am, r->nasm);
      r->asm_plain_median = stats(pm, r->nasm).median;
      r->ms = stats(ms, r->n);
      r->cpu_median = stats(cpu, r->n).median;
      r->ir_median = stats(ir, r->n).median;
      total += r->n;
      failures += r->failed;
      free(am), free(pm), free(ac), free(pc), free(ms), free(cpu), free(ir),
          free(vs);
    }
  }
  double wall_s = (lm_now_ns() - t_start) / 1e9;

  printf("First compile per ISA (includes creating its LLJIT, not in the "
         "tables):");
  for (int ii = 0; ii < NISA; ii++)
    if (!isnan(first_ms[ii]))
      printf(" %s %.1f ms;", lm_isa_name(isas[ii]), first_ms[ii]);
  printf("\n\n## Per kernel and ISA (default options)\n\n");
  printf("| kernel | ISA | variants | median ms | p90 ms | max ms | median "
         "CPU ms | median IR instrs | slowest variant |\n");
  printf("|---|---|---:|---:|---:|---:|---:|---:|---|\n");
  for (int i = 0; i < nrows; i++) {
    Row *r = &rows[i];
    printf("| %s | %s | %d | %.1f | %.1f | %.1f | %.1f | %.0f | `%s` |\n",
           r->kernel, lm_isa_name(r->isa), r->n, r->ms.median, r->ms.p90,
           r->ms.max, r->cpu_median, r->ir_median, r->slowest);
  }
  printf("\n## By mapping family (all kernels)\n\n");
  printf("| ISA | family | variants | median ms | p90 ms | max ms | median "
         "CPU ms |\n");
  printf("|---|---|---:|---:|---:|---:|---:|\n");
  for (int ii = 0; ii < NISA; ii++)
    for (int f = 0; f < FAM__COUNT; f++) {
      if (!fam_n[ii][f])
        continue;
      Stats s = stats(fam_ms[ii][f], fam_n[ii][f]);
      Stats cs = stats(fam_cpu[ii][f], fam_n[ii][f]);
      printf("| %s | %s | %d | %.1f | %.1f | %.1f | %.1f |\n",
             lm_isa_name(isas[ii]), fam_name[f], fam_n[ii][f], s.median, s.p90,
             s.max, cs.median);
      free(fam_ms[ii][f]);
      free(fam_cpu[ii][f]);
    }
  printf("\n## With want_asm = 1 (%d variants per kernel and ISA)\n\n", nasm);
  printf("| kernel | ISA | variants | median ms | p90 ms | max ms | same "
         "variants without asm, median ms | paired ratio asm/plain, wall | "
         "paired ratio, CPU |\n");
  printf("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (int i = 0; i < nrows; i++) {
    Row *r = &rows[i];
    printf("| %s | %s | %d | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f |\n",
           r->kernel, lm_isa_name(r->isa), r->nasm, r->asm_ms.median,
           r->asm_ms.p90, r->asm_ms.max, r->asm_plain_median, r->asm_ratio,
           r->asm_cpu_ratio);
  }
  double load[1] = {NAN};
  getloadavg(load, 1);
  printf("\n%d variants compiled once each in %.1f s of compile time (%.1f s "
         "wall for the whole run, load average %.2f at the end); %d failed.\n",
         total, total_ms / 1e3, wall_s, load[0], failures);
  for (int i = 0; i < nk; i++)
    lm_kernel_free(ks[i]);
  return failures ? 1 : 0;
}
