/* AArch64 targets, verified under emulation: every legal variant of every
 * suite, held-out and test kernel, for NEON and for SVE at 128, 256 and 512
 * bits, on ten edge shapes, one and two workers, both floating-point modes.
 *
 * Per (kernel, target): every code variant goes into one AArch64 object
 * (lm_emit_entries), linked with tests/aarch64/driver.c and a table of its
 * entries by Debian's aarch64-linux-gnu-gcc, statically; the host writes the
 * inputs its data generator made and the guarded output regions as its own
 * verification lays them out (tests/aarch64/jobs.h); one qemu-aarch64-static
 * process runs every job (a variant at a shape, its launch's chunks called
 * in order); and the host checks each result with lm_verify_with: the FP64
 * oracle at atol = rtol = 5e-5, the guards byte for byte, no input written.
 * The cross compiler and qemu come from scripts/debian-packages.txt; a
 * machine without them fails here, it does not skip. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lanemap/calibrate.h"
#include "lanemap/costmodel.h"
#include "lanemap/timing.h"
#include "lanemap/verify.h"
#include "tests/aarch64/jobs.h"

typedef struct Target {
  lm_isa isa;
  const char *cpu; /* qemu's -cpu: no SVE for NEON; SVE's length fixed */
} Target;

/* Edge shapes (R, C), the backend test's: single rows, R below W, C = 1,
 * C below L, C not a multiple of W, C just above a multiple of 16. */
typedef struct Shape {
  int64_t R, C;
} Shape;
static const Shape edges[] = {{1, 1},   {1, 65},  {3, 3},  {2, 17}, {17, 16},
                              {37, 33}, {5, 100}, {64, 8}, {9, 2},  {33, 31}};
#define NSHAPES (int)(sizeof edges / sizeof edges[0])

static char *src_path(const char *rel) {
  char *p = malloc(strlen(LANEMAP_SOURCE_DIR) + strlen(rel) + 2);
  sprintf(p, "%s/%s", LANEMAP_SOURCE_DIR, rel);
  return p;
}

static int col_coef(const lm_kernel *k) {
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind == LM_PARAM_BUFFER && k->params[i].rank == 2)
      return (int)(k->params[i].dims[1].coef > 0 ? k->params[i].dims[1].coef
                                                 : 1);
  return 1;
}

static size_t region_bytes(const lm_kernel *k, const lm_data *d, int i) {
  size_t b = (size_t)d->count[i] * lm_dtype_size(k->params[i].dtype);
  return (2 * LM_GUARD_BYTES + b + 63) & ~(size_t)63; /* as lm_verify */
}

static void w32(FILE *f, uint32_t x) { fwrite(&x, 4, 1, f); }
static void w64(FILE *f, uint64_t x) { fwrite(&x, 8, 1, f); }

static int run_cmd(const char *cmd) {
  int st = system(cmd);
  return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* One result record: where a job's outputs start in the result file. */
typedef struct Replay {
  const lm_kernel *k;
  const lm_data *d;
  const unsigned char *rec;
} Replay;

/* lm_verify_with's runner: the emulated job's outputs, guards included,
 * copied into the regions lm_verify laid out. */
static lm_status replay(void *ctx, const uint64_t *args, int64_t R,
                        lm_error *err) {
  (void)R;
  const Replay *r = ctx;
  uint32_t status;
  memcpy(&status, r->rec, 4);
  const unsigned char *p = r->rec + 4;
  for (int i = 0; i < r->k->nparams; i++) {
    if (r->k->params[i].kind != LM_PARAM_BUFFER || !r->k->params[i].is_output)
      continue;
    size_t n = region_bytes(r->k, r->d, i);
    memcpy((unsigned char *)(uintptr_t)args[i] - LM_GUARD_BYTES, p, n);
    p += n;
  }
  if (status & LMJ_WROTE_INPUT)
    return lm_error_set(err, LM_EFAIL, "an input buffer was written");
  return LM_OK;
}

static size_t record_bytes(const lm_kernel *k, const lm_data *d) {
  size_t n = 4;
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].kind == LM_PARAM_BUFFER && k->params[i].is_output)
      n += region_bytes(k, d, i);
  return n;
}

typedef struct Tally {
  int drop_last_row; /* the control: every launch leaves its last row out */
  int kernels, refused, variants, codes, checked, failed;
} Tally;

/* Verify every legal variant of kernel `rel` for target t under qemu. */
static void check_kernel(const char *rel, const Target *t, const char *dir,
                         Tally *tally) {
  char *path = src_path(rel);
  lm_kernel *k = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_load(path, &k, &err), LM_OK, "%s: %s", rel, err.msg);
  free(path);
  lm_enum_opts eo;
  lm_enum_defaults(&eo);
  eo.isa = t->isa;
  eo.workers[1] = 2;
  eo.fps = 1u << LM_FP_STRICT | 1u << LM_FP_RELAXED;
  lm_variant *vs = NULL;
  int nv = lm_variant_enumerate(k, &eo, &vs, &err);
  cr_assert_geq(nv, 0, "%s: %s", rel, err.msg);
  if (nv == 0) {
    /* a kernel no variant of this target can run: say why, from the
     * variant whose mapping is legal (L = W, either phase) */
    int w = lm_isa_lanes(t->isa, k->elem, 1);
    for (int ph = LM_PHASE_NONE; ph <= LM_PHASE_REREAD; ph++) {
      lm_variant v = {.isa = t->isa,
                      .w = w,
                      .l = w,
                      .phase = ph,
                      .workers = 1,
                      .math = LM_MATH_IR};
      if (lm_variant_check(k, &v, &err) == LM_OK)
        cr_assert_fail("%s: %s is legal but was not enumerated", rel,
                       lm_isa_name(t->isa));
      if (!strstr(err.msg, "phase"))
        break;
    }
    printf("%s on %s: no legal variant (%s)\n", k->name, lm_isa_name(t->isa),
           err.msg);
    tally->refused++;
    free(vs);
    lm_kernel_free(k);
    return;
  }
  /* the distinct code variants, one entry each */
  int *code = calloc((size_t)nv, sizeof *code), ncodes = 0;
  lm_aot_entry *ents = calloc((size_t)nv, sizeof *ents);
  char(*syms)[32] = calloc((size_t)nv, sizeof *syms);
  for (int i = 0; i < nv; i++) {
    code[i] = -1;
    for (int j = 0; j < ncodes && code[i] < 0; j++)
      if (lm_variant_same_code(&vs[i], &ents[j].variant))
        code[i] = j;
    if (code[i] < 0) {
      snprintf(syms[ncodes], sizeof syms[ncodes], "lmk_%d", ncodes);
      ents[ncodes] = (lm_aot_entry){k, vs[i], syms[ncodes]};
      code[i] = ncodes++;
    }
  }
  char obj[512], table[512], drv[512], jobs[512], res[512], cmd[4096];
  snprintf(obj, sizeof obj, "%s/%s.o", dir, k->name);
  snprintf(table, sizeof table, "%s/%s_table.c", dir, k->name);
  snprintf(drv, sizeof drv, "%s/%s_driver", dir, k->name);
  snprintf(jobs, sizeof jobs, "%s/%s.jobs", dir, k->name);
  snprintf(res, sizeof res, "%s/%s.results", dir, k->name);
  cr_assert_eq(lm_emit_entries(ents, ncodes, obj, &err), LM_OK, "%s %s: %s",
               k->name, lm_isa_name(t->isa), err.msg);
  FILE *f = fopen(table, "w");
  cr_assert(f);
  fprintf(f, "#include <stdint.h>\ntypedef void (*entry_fn)(const void *, "
             "int64_t, int64_t);\n");
  for (int j = 0; j < ncodes; j++)
    fprintf(f, "void %s(const void *, int64_t, int64_t);\n", syms[j]);
  fprintf(f, "const entry_fn lmj_entries[] = {\n");
  for (int j = 0; j < ncodes; j++)
    fprintf(f, "  %s,\n", syms[j]);
  fprintf(f, "};\nconst unsigned lmj_nentries = %d;\n", ncodes);
  fclose(f);
  char *drvsrc = src_path("tests/aarch64/driver.c"),
       *inc = src_path("tests/aarch64"), *emu = src_path("backend/emulation.c"),
       *api = src_path("include");
  snprintf(cmd, sizeof cmd,
           "aarch64-linux-gnu-gcc -std=c11 -O1 -static -I%s -I%s -o %s %s %s "
           "%s %s -lm",
           inc, api, drv, drvsrc, emu, table, obj);
  free(drvsrc), free(inc), free(emu), free(api);
  cr_assert_eq(run_cmd(cmd), 0, "%s: the driver did not build: %s", k->name,
               cmd);

  /* the shapes, their data and oracles; the job file */
  int coef = col_coef(k);
  lm_data *data[NSHAPES];
  lm_oracle *orc[NSHAPES];
  f = fopen(jobs, "wb");
  cr_assert(f);
  w32(f, LMJ_MAGIC);
  w32(f, NSHAPES);
  for (int s = 0; s < NSHAPES; s++) {
    lm_shape sh;
    cr_assert_eq(
        lm_shape_bind(k, edges[s].R, edges[s].C * coef, NULL, &sh, &err), LM_OK,
        "%s: %s", k->name, err.msg);
    cr_assert_eq(lm_data_gen(k, &sh, 7, &data[s], &err), LM_OK, "%s", err.msg);
    cr_assert_eq(lm_oracle_run(k, data[s], &orc[s], &err), LM_OK, "%s",
                 err.msg);
    lm_data *d = data[s];
    uint64_t *args = lm_args_pack(k, d);
    int64_t R = d->shape.dims[0];
    w32(f, (uint32_t)(k->nparams + k->nsyms));
    w64(f, (uint64_t)R);
    for (int i = 0; i < k->nparams + k->nsyms; i++) {
      const lm_param *p = i < k->nparams ? &k->params[i] : NULL;
      if (!p || p->kind != LM_PARAM_BUFFER) {
        w32(f, LMJ_VALUE);
        w64(f, args[i]);
      } else if (!p->is_output) {
        w32(f, LMJ_INPUT);
        size_t n = (size_t)d->count[i] * lm_dtype_size(p->dtype);
        w64(f, n);
        fwrite(d->buf[i], 1, n, f);
      } else {
        size_t n = region_bytes(k, d, i),
               b = (size_t)d->count[i] * lm_dtype_size(p->dtype);
        unsigned char *r = malloc(n);
        memset(r, LM_GUARD_BYTE, n);
        memset(r + LM_GUARD_BYTES, LM_SENTINEL_BYTE, b);
        w32(f, LMJ_OUTPUT);
        w64(f, n);
        w64(f, LM_GUARD_BYTES);
        fwrite(r, 1, n, f);
        free(r);
      }
    }
    free(args);
    w32(f, (uint32_t)nv);
    for (int i = 0; i < nv; i++) {
      lm_cut cut;
      lm_variant_cut(&vs[i], R, &cut);
      w32(f, (uint32_t)code[i]);
      w32(f, (uint32_t)cut.chunks);
      for (int64_t c = 0; c < cut.chunks; c++) {
        int64_t first = c * cut.grain,
                count = R - first < cut.grain ? R - first : cut.grain;
        if (tally->drop_last_row && c == cut.chunks - 1)
          count--;
        w64(f, (uint64_t)first);
        w64(f, (uint64_t)count);
      }
    }
  }
  cr_assert_eq(fclose(f), 0);
  /* the emulation check sees the emulator (timing code would refuse) */
  snprintf(cmd, sizeof cmd, "qemu-aarch64-static -cpu %s %s --emulated", t->cpu,
           drv);
  FILE *pp = popen(cmd, "r");
  cr_assert(pp, "%s", cmd);
  int emulated = -1;
  cr_expect_eq(fscanf(pp, "%d", &emulated), 1, "%s", cmd);
  pclose(pp);
  cr_expect_eq(emulated, 1, "%s: lm_emulated() under qemu said %d", cmd,
               emulated);
  snprintf(cmd, sizeof cmd, "qemu-aarch64-static -cpu %s %s %s %s", t->cpu, drv,
           jobs, res);
  cr_assert_eq(run_cmd(cmd), 0, "%s on %s: the emulated driver failed: %s",
               k->name, lm_isa_name(t->isa), cmd);

  /* check every job's outputs on the host */
  unsigned char *out = NULL;
  size_t outn = 0;
  cr_assert_eq(lm_file_read(res, (char **)&out, &outn, &err), LM_OK, "%s",
               err.msg);
  size_t at = 0;
  int checked = 0, failed = 0;
  for (int s = 0; s < NSHAPES; s++) {
    size_t rec = record_bytes(k, data[s]);
    for (int i = 0; i < nv; i++, at += rec) {
      cr_assert_leq(at + rec, outn, "%s: the result file ends early", k->name);
      Replay r = {k, data[s], out + at};
      lm_verify_result vr;
      lm_status st = lm_verify_with(k, replay, &r, data[s], orc[s], &vr, &err);
      checked++;
      if (st != LM_OK && tally->drop_last_row) {
        failed++;
      } else if (st != LM_OK) {
        char name[128];
        lm_variant_format(&vs[i], name, sizeof name);
        cr_expect_eq(st, LM_OK, "%s %lldx%lld: %s", name,
                     (long long)data[s]->shape.dims[0],
                     (long long)edges[s].C * coef, err.msg);
        failed++;
        if (failed > 20)
          cr_assert_fail("%s on %s: more than 20 failures", k->name,
                         lm_isa_name(t->isa));
      }
    }
  }
  cr_assert_eq(at, outn, "%s: %zu bytes of results, %zu read", k->name, outn,
               at);
  free(out);
  for (int s = 0; s < NSHAPES; s++) {
    lm_oracle_free(orc[s]);
    lm_data_free(data[s]);
  }
  remove(obj), remove(table), remove(drv), remove(jobs), remove(res);
  tally->kernels++;
  tally->variants += nv;
  tally->codes += ncodes;
  tally->checked += checked;
  tally->failed += failed;
  free(code), free(ents), free(syms), free(vs);
  lm_kernel_free(k);
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .lk files of a source folder, sorted. */
static int kernel_files(const char *folder, char **out, int max) {
  char *dirp = src_path(folder);
  DIR *d = opendir(dirp);
  cr_assert(d, "cannot open %s", dirp);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    cr_assert_lt(n, max, "%s: more than %d kernel files", folder, max);
    size_t len = strlen(e->d_name);
    if (len > 3 && strcmp(e->d_name + len - 3, ".lk") == 0) {
      out[n] = malloc(strlen(folder) + len + 2);
      sprintf(out[n++], "%s/%s", folder, e->d_name);
    }
  }
  closedir(d);
  free(dirp);
  qsort(out, (size_t)n, sizeof *out, by_name);
  return n;
}

static void check_target(const Target *t) {
  char dir[] = "/tmp/lanemap-aarch64-XXXXXX";
  cr_assert(mkdtemp(dir));
  char *files[144];
  int n = kernel_files("kernels", files, 64);
  n += kernel_files("heldout/kernels", files + n, 64);
  n += kernel_files("heldout/set2/kernels", files + n, 64);
  cr_assert_lt(n, 128, "more kernel files than this test holds");
  /* the test kernels that reach families the suite does not: f64, math in
   * mixed precision, lane branches, boolean snapshots, partial strides */
  static const char *extra[] = {
      "tests/kernels/rmsnorm_f64.lk",    "tests/kernels/f64_math_in_f32.lk",
      "tests/kernels/logsumexp.lk",      "tests/kernels/lane_branch.lk",
      "tests/kernels/snap_bool.lk",      "tests/kernels/stride_partial.lk",
      "tests/kernels/ragged_softmax.lk", "tests/kernels/math_all.lk"};
  for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
    files[n++] = strdup(extra[i]);
  Tally tally = {0};
  for (int i = 0; i < n; i++) {
    check_kernel(files[i], t, dir, &tally);
    free(files[i]);
  }
  rmdir(dir);
  printf("%s: %d kernels verified (and %d with no legal variant), %d variants in %d code "
         "variants, %d variant x shape checks under qemu, %d failed\n",
         lm_isa_name(t->isa), tally.kernels, tally.refused, tally.variants,
         tally.codes, tally.checked, tally.failed);
  cr_expect_gt(tally.checked, 0);
  cr_expect_eq(tally.failed, 0);
}

/* What each target's code is made of: SVE from 256 bits has native
 * gathers and scatters, every SVE length native masked loads and stores
 * (asm_maskmov counts only those under a predicate that is not all-true,
 * so one per masked site here), NEON neither. */
static lm_counts counts_of(const char *variant) {
  char *path = src_path("kernels/rmsnorm.lk");
  lm_kernel *k = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_load(path, &k, &err), LM_OK, "%s", err.msg);
  free(path);
  lm_variant v;
  cr_assert_eq(lm_variant_parse(variant, &v, &err), LM_OK, "%s", err.msg);
  lm_compile_opts co;
  lm_compile_defaults(&co);
  co.want_asm = 1;
  co.no_entry = 1;
  lm_compiled *c = NULL;
  cr_assert_eq(lm_compile(k, &v, &co, &c, &err), LM_OK, "%s: %s", variant, err.msg);
  cr_assert_null(lm_compiled_entry(c), "no entry without a JIT");
  lm_counts n = *lm_compiled_counts(c);
  lm_compiled_free(c);
  lm_kernel_free(k);
  return n;
}

Test(aarch64, each_target_emits_its_own_instructions) {
  static const struct {
    const char *variant;
    int gathers, maskmov; /* > 0 expected */
  } cases[] = {
      {"aarch64-neon/w8/l1/priv=gather/glob=gather/phase=snapshot/t1", 0, 0},
      {"aarch64-neon/w8/l8/priv=masked/phase=snapshot/t1", 0, 0},
      {"aarch64-sve128/w4/l1/priv=gather/glob=gather/phase=snapshot/t1", 0, 0},
      {"aarch64-sve128/w4/l4/priv=masked/phase=snapshot/t1", 0, 1},
      {"aarch64-sve256/w8/l1/priv=gather/glob=gather/phase=snapshot/t1", 1, 0},
      {"aarch64-sve256/w8/l8/priv=masked/phase=snapshot/t1", 0, 1},
      {"aarch64-sve512/w16/l1/priv=gather/glob=gather/phase=snapshot/t1", 1, 0},
      {"aarch64-sve512/w16/l16/priv=masked/phase=snapshot/t1", 0, 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    lm_counts n = counts_of(cases[i].variant);
    const char *v = cases[i].variant;
    cr_expect_eq(n.asm_gathers > 0, cases[i].gathers, "%s: %d gathers", v, n.asm_gathers);
    cr_expect_eq(n.asm_scatters > 0, cases[i].gathers, "%s: %d scatters", v, n.asm_scatters);
    if (cases[i].maskmov) /* one per masked site the lowering emitted */
      cr_expect_eq(n.asm_maskmov,
                   n.emit_priv_masked_loads + n.emit_priv_masked_stores +
                       n.emit_glob_masked_loads + n.emit_glob_masked_stores,
                   "%s: %d masked moves", v, n.asm_maskmov);
    else
      cr_expect_eq(n.asm_maskmov, 0, "%s: %d masked moves", v, n.asm_maskmov);
    cr_expect_eq(n.asm_kmasked, 0, "%s", v);
    cr_expect_gt(n.asm_vector, 0, "%s", v);
  }
  /* NEON's W = 8 is a pair of q registers: paired loads and stores */
  lm_counts p = counts_of("aarch64-neon/w8/l1/priv=slot/glob=transpose/phase=snapshot/t1");
  cr_expect_gt(p.asm_pairs, 0);
  cr_expect_gt(p.asm_blends, 0, "the blended slot write");
}

/* The emulation check on this (native) host: no; on a cpuinfo or modalias
 * file of the other architecture: yes. */
Test(aarch64, emulation_check_is_native_here) {
  cr_expect_eq(lm_emulated(), 0);
  char path[] = "/tmp/lanemap-cpuinfo-XXXXXX";
  int fd = mkstemp(path);
  cr_assert_geq(fd, 0);
  FILE *f = fdopen(fd, "w");
  fputs("processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n"
        "CPU architecture: 8\nCPU part\t: 0xd40\n",
        f);
  fclose(f);
  cr_expect_eq(lm_emulated_in(path), 1,
               "an AArch64 cpuinfo on an x86-64 build");
  f = fopen(path, "w");
  fputs("cpu:type:aarch64:feature:,0000,0001,0002\n", f);
  fclose(f);
  cr_expect_eq(lm_emulated_in(path), 1, "an AArch64 modalias on an x86-64 build");
  f = fopen(path, "w");
  fputs("cpu:type:x86,ven0000fam0006mod00A7:feature:,0000\n", f);
  fclose(f);
  cr_expect_eq(lm_emulated_in(path), 0, "this machine's own modalias");
  cr_expect_eq(lm_emulated_in("/sys/devices/system/cpu/modalias"), 0);
  cr_expect_eq(lm_emulated_in("/nonexistent/cpuinfo"), 0,
               "cannot tell: native");
  remove(path);
}

/* Named defaults per target: the instruction terms are what
 * calibration/tables/aarch64-mca.sh reads off LLVM's scheduling models
 * (at defaults.c's 0.33 ns a cycle); NEON's pairs pay the width terms, SVE
 * code and x86-64-v3 do not. */
static double coef(lm_isa isa, lm_term term) {
  lm_profile *p = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_profile_default(isa, &p, &err), LM_OK, "%s", err.msg);
  int i = lm_profile_term_index(p, lm_term_name(term));
  cr_assert_geq(i, 0, "no term %s", lm_term_name(term));
  double c = lm_profile_term_at(p, i)->coef;
  lm_profile_free(p);
  return c;
}

Test(aarch64, named_defaults_are_the_scheduling_models_table) {
  char *script = src_path("calibration/tables/aarch64-mca.sh");
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "bash %s", script);
  free(script);
  FILE *pp = popen(cmd, "r");
  cr_assert(pp, "%s", cmd);
  static const struct {
    const char *name;
    lm_term t;
  } terms[] = {{"vop", LM_T_VOP},         {"vdiv", LM_T_VDIV},
               {"vload", LM_T_VLOAD},     {"vstore", LM_T_VSTORE},
               {"maskload", LM_T_MASKLOAD}, {"maskstore", LM_T_MASKSTORE},
               {"gather", LM_T_GATHER},   {"scatter", LM_T_SCATTER},
               {"blend", LM_T_BLEND},     {"shuffle", LM_T_SHUFFLE},
               {"hred", LM_T_HRED}};
  char line[256];
  int rows = 0;
  while (fgets(line, sizeof line, pp)) {
    char target[32], core[32], term[32];
    double cycles;
    if (line[0] == '#' || sscanf(line, "%31s %31s %31s %lf", target, core, term, &cycles) != 4)
      continue;
    lm_isa isa;
    lm_error err = {0};
    cr_assert_eq(lm_isa_parse(target, &isa, &err), LM_OK, "%s", err.msg);
    for (size_t i = 0; i < sizeof terms / sizeof terms[0]; i++)
      if (strcmp(terms[i].name, term) == 0) {
        cr_expect_float_eq(coef(isa, terms[i].t), cycles * 0.33, 1e-9, "%s %s (%s): %g cycles",
                           target, term, core, cycles);
        rows++;
      }
  }
  cr_expect_eq(pclose(pp), 0, "%s failed", cmd);
  cr_expect_eq(rows, 44, "4 targets x 11 terms, got %d rows", rows);
  cr_expect_gt(coef(LM_ISA_NEON, LM_T_WIDE), 0, "NEON's pairs");
  for (int t = LM_T_FIRST_MATH; t <= LM_T_LAST_MATH; t++)
    cr_expect_float_eq(coef(LM_ISA_NEON, LM_T_WIDE_MATH(t)), 2 * coef(LM_ISA_NEON, t), 1e-9,
                       "NEON's pairs: %s runs on each half", lm_term_name(t));
  const lm_isa sve[] = {LM_ISA_SVE128, LM_ISA_SVE256, LM_ISA_SVE512};
  for (int i = 0; i < 3; i++) {
    cr_expect_eq(coef(sve[i], LM_T_WIDE), 0, "%s", lm_isa_name(sve[i]));
    for (int t = LM_T_FIRST_WMATH; t <= LM_T_LAST_WMATH; t++)
      cr_expect_eq(coef(sve[i], t), 0, "%s %s", lm_isa_name(sve[i]), lm_term_name(t));
  }
  cr_expect_gt(coef(LM_ISA_AVX512, LM_T_WIDE), 0);
}

/* The calibration families are written for any target: on every AArch64
 * target each benchmark is a legal variant of its kernel, its vector math
 * goes through math=ir, and what math=ir lacks (sine) is left out; the
 * families themselves (bandwidth, division, math, tasks, width) all
 * remain.  A native AArch64 build would run this list. */
Test(aarch64, calibration_families_are_legal_on_every_target) {
  lm_caches cc;
  lm_caches_default(&cc);
  const lm_isa isas[] = {LM_ISA_AVX512, LM_ISA_NEON, LM_ISA_SVE128, LM_ISA_SVE256,
                         LM_ISA_SVE512};
  for (int ii = 0; ii < 5; ii++) {
    lm_calib_bench *b = NULL;
    int n = lm_calib_benches(isas[ii], 1, &cc, &b);
    cr_assert_gt(n, 20, "%s: %d benchmarks", lm_isa_name(isas[ii]), n);
    int math = 0, width = 0, forkjoin = 0, sines = 0;
    for (int i = 0; i < n; i++) {
      lm_kernel *k = NULL;
      lm_variant v;
      lm_error err = {0};
      cr_assert_eq(lm_kernel_parse("b.lk", b[i].source, strlen(b[i].source), &k, &err),
                   LM_OK, "%s: %s", b[i].name, err.msg);
      cr_expect_eq(lm_variant_parse(b[i].variant, &v, &err), LM_OK, "%s %s: %s",
                   b[i].name, b[i].variant, err.msg);
      cr_expect_eq(lm_variant_check(k, &v, &err), LM_OK, "%s %s: %s", b[i].name,
                   b[i].variant, err.msg);
      cr_expect_eq(v.isa, isas[ii], "%s", b[i].variant);
      math += strcmp(b[i].family, "math") == 0;
      width += strcmp(b[i].family, "width") == 0;
      forkjoin += strcmp(b[i].family, "forkjoin") == 0;
      sines += strstr(b[i].name, "sin") != NULL;
      if (lm_isa_is_aarch64(isas[ii]) && lm_vmath_calls(k))
        cr_expect(strstr(b[i].variant, "math=ir") != NULL, "%s", b[i].variant);
      lm_kernel_free(k);
    }
    cr_expect_gt(math, 0, "%s", lm_isa_name(isas[ii]));
    cr_expect_gt(forkjoin, 0, "%s", lm_isa_name(isas[ii]));
    if (isas[ii] == LM_ISA_AVX512 || isas[ii] == LM_ISA_NEON)
      cr_expect_gt(width, 0, "%s has two widths", lm_isa_name(isas[ii]));
    if (isas[ii] == LM_ISA_AVX512)
      cr_expect_gt(sines, 0, "x86 calibrates sine");
    else
      cr_expect_eq(sines, 0, "%s: math=ir has no sine", lm_isa_name(isas[ii]));
    lm_calib_benches_free(b, n);
  }
}

/* The control: the same path with every launch one row short must fail
 * every check, so a harness that passes whatever ran is caught. */
Test(aarch64, control_fails, .timeout = 120) {
  char dir[] = "/tmp/lanemap-aarch64-XXXXXX";
  cr_assert(mkdtemp(dir));
  Target t = {LM_ISA_SVE256, "max,sve-max-vq=2"};
  Tally tally = {.drop_last_row = 1};
  check_kernel("kernels/rmsnorm.lk", &t, dir, &tally);
  rmdir(dir);
  printf("control: %d of %d checks failed\n", tally.failed, tally.checked);
  cr_expect_gt(tally.checked, 0);
  cr_expect_eq(tally.failed, tally.checked);
}

Test(aarch64, neon, .timeout = 600) {
  Target t = {LM_ISA_NEON, "cortex-a72"};
  check_target(&t);
}
Test(aarch64, sve128, .timeout = 600) {
  Target t = {LM_ISA_SVE128, "max,sve-max-vq=1"};
  check_target(&t);
}
Test(aarch64, sve256, .timeout = 600) {
  Target t = {LM_ISA_SVE256, "max,sve-max-vq=2"};
  check_target(&t);
}
Test(aarch64, sve512, .timeout = 600) {
  Target t = {LM_ISA_SVE512, "max,sve-max-vq=4"};
  check_target(&t);
}
