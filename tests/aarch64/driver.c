/* The AArch64 side of the emulated verification: a static program, built
 * with Debian's aarch64-linux-gnu-gcc and linked with one kernel's object
 * (every variant of it for one target) and a table of its entries, run
 * under qemu-aarch64-static.  It reads a job file (jobs.h), runs every job
 * on fresh copies of the inputs and output regions, and writes the result
 * file; the host checks the results against the FP64 oracle.
 *
 *   driver JOBS RESULTS
 *   driver --emulated      prints 1 if lanemap's emulation check
 *                          (backend/emulation.c, linked in) says so, else 0
 *
 * Exit 0 when every job ran, 2 on a malformed job file, 3 on I/O or memory
 * failure.  It links nothing of lanemap's but lm_rt_scratch, which the
 * generated code calls for its private arrays. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"

typedef void (*entry_fn)(const void *args, int64_t first, int64_t count);
extern const entry_fn lmj_entries[]; /* the generated table */
extern const unsigned lmj_nentries;
int lm_emulated(void); /* backend/emulation.c */

/* One growing, 64-byte aligned buffer: the driver runs one thread. */
void *lm_rt_scratch(int64_t bytes) {
  static void *p;
  static int64_t n;
  if (bytes <= n)
    return p;
  int64_t m = n ? n : 4096;
  while (m < bytes)
    m *= 2;
  free(p);
  p = aligned_alloc(64, (size_t)m);
  if (!p) {
    fprintf(stderr, "driver: out of memory for %lld scratch bytes\n",
            (long long)m);
    exit(3);
  }
  n = m;
  return p;
}

static const unsigned char *cur, *end;

static void need(size_t n) {
  if ((size_t)(end - cur) < n) {
    fprintf(stderr, "driver: the job file ends early\n");
    exit(2);
  }
}
static uint32_t u32(void) {
  uint32_t x;
  need(4);
  memcpy(&x, cur, 4);
  cur += 4;
  return x;
}
static uint64_t u64(void) {
  uint64_t x;
  need(8);
  memcpy(&x, cur, 8);
  cur += 8;
  return x;
}
static const unsigned char *bytes(uint64_t n) {
  need(n);
  const unsigned char *p = cur;
  cur += n;
  return p;
}
static void *aligned_copy(const void *src, uint64_t n) {
  void *p = aligned_alloc(64, (size_t)((n + 63) & ~(uint64_t)63) + 64);
  if (!p) {
    fprintf(stderr, "driver: out of memory\n");
    exit(3);
  }
  memcpy(p, src, n);
  return p;
}
static void put(FILE *f, const void *p, size_t n) {
  if (fwrite(p, 1, n, f) != n) {
    perror("driver: writing the results");
    exit(3);
  }
}

typedef struct Arg {
  uint32_t kind;
  uint64_t value, n, lead;
  const unsigned char *sent; /* the bytes as sent */
  unsigned char *work;       /* the job's copy */
} Arg;

int main(int argc, char **argv) {
  if (argc == 2 && strcmp(argv[1], "--emulated") == 0) {
    printf("%d\n", lm_emulated());
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: driver JOBS RESULTS\n");
    return 2;
  }
  FILE *f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 3;
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *file = malloc(size > 0 ? (size_t)size : 1);
  if (!file || fread(file, 1, (size_t)size, f) != (size_t)size) {
    perror(argv[1]);
    return 3;
  }
  fclose(f);
  cur = file, end = file + size;
  FILE *out = fopen(argv[2], "wb");
  if (!out) {
    perror(argv[2]);
    return 3;
  }
  if (u32() != LMJ_MAGIC) {
    fprintf(stderr, "driver: %s is not a job file\n", argv[1]);
    return 2;
  }
  uint32_t nshapes = u32();
  long jobs = 0;
  for (uint32_t s = 0; s < nshapes; s++) {
    uint32_t nargs = u32();
    int64_t R = (int64_t)u64();
    Arg *a = calloc(nargs ? nargs : 1, sizeof *a);
    uint64_t *args = calloc(nargs ? nargs : 1, sizeof *args);
    if (!a || !args)
      return 3;
    for (uint32_t i = 0; i < nargs; i++) {
      a[i].kind = u32();
      if (a[i].kind == LMJ_VALUE) {
        a[i].value = u64();
        continue;
      }
      if (a[i].kind != LMJ_INPUT && a[i].kind != LMJ_OUTPUT) {
        fprintf(stderr, "driver: argument %u has kind %u\n", i, a[i].kind);
        return 2;
      }
      a[i].n = u64();
      a[i].lead = a[i].kind == LMJ_OUTPUT ? u64() : 0;
      if (a[i].lead > a[i].n || a[i].lead % 64) {
        fprintf(stderr, "driver: argument %u: lead %llu\n", i,
                (unsigned long long)a[i].lead);
        return 2;
      }
      a[i].sent = bytes(a[i].n);
      a[i].work = aligned_copy(a[i].sent, a[i].n);
    }
    uint32_t njobs = u32();
    for (uint32_t j = 0; j < njobs; j++, jobs++) {
      uint32_t e = u32(), nchunks = u32();
      if (e >= lmj_nentries) {
        fprintf(stderr, "driver: entry %u of %u\n", e, lmj_nentries);
        return 2;
      }
      for (uint32_t i = 0; i < nargs; i++) {
        if (a[i].kind == LMJ_VALUE) {
          args[i] = a[i].value;
          continue;
        }
        memcpy(a[i].work, a[i].sent, a[i].n); /* fresh for every job */
        args[i] = (uint64_t)(uintptr_t)(a[i].work + a[i].lead);
      }
      for (uint32_t c = 0; c < nchunks; c++) {
        int64_t first = (int64_t)u64(), count = (int64_t)u64();
        if (first < 0 || count < 0 || first + count > R) {
          fprintf(stderr, "driver: chunk [%lld, +%lld) outside %lld rows\n",
                  (long long)first, (long long)count, (long long)R);
          return 2;
        }
        if (count > 0)
          lmj_entries[e](args, first, count);
      }
      uint32_t status = 0;
      for (uint32_t i = 0; i < nargs; i++)
        if (a[i].kind == LMJ_INPUT && memcmp(a[i].work, a[i].sent, a[i].n) != 0)
          status |= LMJ_WROTE_INPUT;
      put(out, &status, 4);
      for (uint32_t i = 0; i < nargs; i++)
        if (a[i].kind == LMJ_OUTPUT)
          put(out, a[i].work, a[i].n);
    }
    for (uint32_t i = 0; i < nargs; i++)
      free(a[i].work);
    free(a);
    free(args);
  }
  if (cur != end) {
    fprintf(stderr, "driver: %ld bytes after the last shape\n",
            (long)(end - cur));
    return 2;
  }
  if (fclose(out) != 0) {
    perror(argv[2]);
    return 3;
  }
  fprintf(stderr, "driver: %ld jobs over %u shapes\n", jobs, nshapes);
  free(file);
  return 0;
}
