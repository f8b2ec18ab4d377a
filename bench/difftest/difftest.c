/* bench_difftest: random differential testing of the backend.
 *
 *   bench_difftest --count N --seed S [--variants-per-kernel K]
 *                  [--out-dir D] [--json] [--quiet] [--print]
 *   bench_difftest --replay FILE...
 *
 * Generates N random valid kernels (seeds S, S+1, ...), compiles K sampled
 * legal variants of each (all of them with K = 0) on every runnable ISA
 * target with workers {1, 2}, and verifies each variant on three random
 * shapes against the FP64 oracle.  Each mismatch is written to D (default
 * the current directory) as a case file that --replay, or the regression
 * test, runs again.  Exit 0 when nothing mismatched, 1 otherwise, 2 on bad
 * flags or a kernel that does not parse (a generator bug).  --print only
 * prints the generated sources.  --replay checks every legal variant of a
 * case that pins none, unless --variants-per-kernel comes before it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench/difftest/gen.h"

static const char usage[] =
    "usage: bench_difftest --count N --seed S [--variants-per-kernel K]\n"
    "                      [--out-dir D] [--json] [--quiet] [--print]\n"
    "       bench_difftest --replay FILE...\n";

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int parse_i64(const char *s, long long *out) {
  char *end;
  *out = strtoll(s, &end, 10);
  return *s && !*end;
}

int main(int argc, char **argv) {
  long long count = -1, seed = -1, per = 8;
  int per_given = 0;
  int json = 0, quiet = 0, replay = 0, print = 0;
  dt_opts o = {0};
  o.out_dir = ".";
  o.log = stderr;
  int first_file = argc;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int has = i + 1 < argc;
    if (strcmp(a, "--count") == 0 && has) {
      if (!parse_i64(argv[++i], &count) || count < 0)
        goto bad;
    } else if (strcmp(a, "--seed") == 0 && has) {
      if (!parse_i64(argv[++i], &seed) || seed < 0)
        goto bad;
    } else if (strcmp(a, "--variants-per-kernel") == 0 && has) {
      if (!parse_i64(argv[++i], &per) || per < 0)
        goto bad;
      per_given = 1;
    } else if (strcmp(a, "--out-dir") == 0 && has) {
      o.out_dir = argv[++i];
    } else if (strcmp(a, "--json") == 0) {
      json = 1;
    } else if (strcmp(a, "--print") == 0) {
      print = 1;
    } else if (strcmp(a, "--quiet") == 0) {
      quiet = 1;
    } else if (strcmp(a, "--replay") == 0) {
      replay = 1;
      first_file = i + 1;
      break;
    } else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
      fputs(usage, stdout);
      return 0;
    } else {
      fprintf(stderr, "bench_difftest: unknown or incomplete flag '%s'\n", a);
      goto bad;
    }
  }
  if (!replay && (count < 0 || seed < 0)) {
    fprintf(stderr, "bench_difftest: --count and --seed are required\n");
    goto bad;
  }
  if (replay && !per_given)
    per = 0; /* a case without pinned variants replays every legal one */
  o.variants_per_kernel = (int)per;
  o.seed = (uint64_t)(seed < 0 ? 1 : seed);

  dt_stats st = {0};
  int bad_kernels = 0;
  double t0 = now_s();
  if (replay) {
    o.out_dir = NULL;
    for (int i = first_file; i < argc; i++) {
      char *src = NULL;
      lm_error err = {0};
      lm_status s = lm_file_read(argv[i], &src, NULL, &err);
      if (s == LM_OK)
        s = dt_check_source(argv[i], src, &o, &st, &err);
      if (s != LM_OK) {
        fprintf(stderr, "%s\n", err.msg);
        bad_kernels++;
      }
      free(src);
    }
  } else {
    for (long long n = 0; n < count; n++) {
      uint64_t ks = (uint64_t)seed + (uint64_t)n;
      dt_info info;
      char *src = dt_gen_kernel(ks, &info);
      if (print) {
        fputs(src, stdout);
        free(src);
        continue;
      }
      char file[64];
      snprintf(file, sizeof file, "dk%llu.lk", (unsigned long long)ks);
      lm_error err = {0};
      int64_t before = st.mismatches + st.compile_errors;
      if (dt_check_source(file, src, &o, &st, &err) != LM_OK) {
        fprintf(stderr, "generator bug (seed %llu): %s\n%s",
                (unsigned long long)ks, err.msg, src);
        bad_kernels++;
      }
      if (!quiet)
        fprintf(stderr, "kernel %lld/%lld seed %llu %s step %d%s%s: %s\n", n + 1,
                count, (unsigned long long)ks, lm_dtype_name(info.elem), info.step,
                info.ragged ? " ragged" : "", info.masked ? " masked" : "",
                st.mismatches + st.compile_errors > before ? "MISMATCH" : "ok");
      free(src);
    }
  }
  double secs = now_s() - t0;
  double rate = secs > 0 ? (double)st.variants / secs : 0;
  if (json)
    printf("{\"schema\":\"lanemap.difftest/1\",\"seed\":%lld,\"count\":%lld,"
           "\"variants_per_kernel\":%lld,\"kernels\":%lld,\"kernel_variants\":%lld,"
           "\"shape_checks\":%lld,\"mismatches\":%lld,\"compile_errors\":%lld,"
           "\"generator_errors\":%d,\"seconds\":%.1f,\"variants_per_second\":%.2f}\n",
           seed, count, per, (long long)st.kernels, (long long)st.variants,
           (long long)st.shape_checks, (long long)st.mismatches,
           (long long)st.compile_errors, bad_kernels, secs, rate);
  else
    printf("kernels %lld, kernel x variant checks %lld, kernel x variant x shape "
           "verifications %lld, mismatches %lld, compile errors %lld, generator "
           "errors %d, %.1f s (%.1f kernel x variant checks/s)\n",
           (long long)st.kernels, (long long)st.variants, (long long)st.shape_checks,
           (long long)st.mismatches, (long long)st.compile_errors, bad_kernels, secs,
           rate);
  if (bad_kernels)
    return 2;
  return st.mismatches || st.compile_errors ? 1 : 0;
bad:
  fputs(usage, stderr);
  return 2;
}
