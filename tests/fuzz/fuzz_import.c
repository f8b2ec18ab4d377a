/* libFuzzer entry for `lanemap records import`: hyperfine --export-json
 * files and TVM-style JSON Lines logs.  Their readers live in the command
 * (cli/records.c), which is included here whole, so the fuzzer runs the
 * very code the command runs: the input is written to a file and
 * imported with --kernel kernels/rmsnorm.lk --shape 8,512 --variant V as
 * defaults, so that most entries map.  The claim: an import fails only
 * with LM_EINPUT and a message; a successful one adds a record per entry,
 * each with a kernel, a hash, a variant and an ISA, and the records write
 * and read back.  tests/test_fuzz_regress.c includes this file with
 * LM_FUZZ_NO_ENTRY to replay the corpus through the same claim. */
#define _GNU_SOURCE
#include "cli/args.c"
#include "cli/records.c"

#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

static char import_dir[64], import_input[96];

static const char *const import_kernels[] = {"rmsnorm",        "layernorm",
                                             "masked_softmax", "swiglu",
                                             "gelu_residual",  "rope"};

/* Remove the folder and what it holds when the process ends. */
static void import_cleanup(void) {
  for (size_t i = 0; i < sizeof import_kernels / sizeof *import_kernels; i++) {
    char to[160];
    snprintf(to, sizeof to, "%s/%s.lk", import_dir, import_kernels[i]);
    unlink(to);
  }
  unlink(import_input);
  rmdir(import_dir);
}

const char *lm_fuzz_check_import(const uint8_t *data, size_t size) {
  /* the input lives in a folder of its own beside links to the bundled
   * kernels, so a command or task may name them as "rmsnorm.lk" */
  char *dir = import_dir, *file = import_input;
  if (!file[0]) {
    snprintf(dir, sizeof import_dir, "/tmp/lm-fuzz-import-%d", (int)getpid());
    mkdir(dir, 0777);
    for (size_t i = 0; i < sizeof import_kernels / sizeof *import_kernels;
         i++) {
      char from[512], to[160];
      snprintf(from, sizeof from, "%s/kernels/%s.lk", LANEMAP_SOURCE_DIR,
               import_kernels[i]);
      snprintf(to, sizeof to, "%s/%s.lk", dir, import_kernels[i]);
      if (symlink(from, to) != 0 && errno != EEXIST)
        return NULL;
    }
    snprintf(file, sizeof import_input, "%s/input.json", dir);
    atexit(import_cleanup);
  }
  FILE *f = fopen(file, "wb");
  if (!f)
    return NULL; /* the machine's trouble, not the reader's */
  fwrite(data, 1, size, f);
  fclose(f);
  import_opts o = {.out = NULL,
                   .kernel = LANEMAP_SOURCE_DIR "/kernels/rmsnorm.lk",
                   .shape = "8,512",
                   .variant = "x86-64-v3/w8/l8/phase=reread/t1"};
  lm_error err = {0};
  kernel_cache kc = {0};
  lm_records acc = {0}, back = {0};
  int cap = 0, added = 0, skipped = 0;
  char *text = NULL;
  size_t n = 0;
  const char *broken = NULL;
  lm_status st = LM_OK;
  if (!cache_get(&kc, o.kernel, &err)) {
    broken = "the default kernel does not load";
    goto done;
  }
  st = import_file(file, &o, &kc, &acc, &cap, &added, &skipped, &err);
  if (st != LM_OK) {
    broken = st != LM_EINPUT ? "an import failed without LM_EINPUT"
             : !err.msg[0]   ? "an import failed without a message"
                             : NULL;
    goto done;
  }
  if (added != acc.n) {
    broken = "an import counted another number of records than it added";
    goto done;
  }
  for (int i = 0; i < acc.n && !broken; i++) {
    const lm_record *r = &acc.r[i];
    if (!r->kernel || !r->kernel_hash || !r->variant || !r->isa || r->R < 1 ||
        r->C < 1)
      broken = "an imported record lacks its kernel, hash, variant, ISA or "
               "shape";
  }
  if (broken)
    goto done;
  if (lm_records_to_text(&acc, &text, &n, &err) != LM_OK ||
      lm_records_from_text("imported.jsonl", text, n, &back, &err) != LM_OK ||
      back.n != acc.n)
    broken = "imported records do not write and read back";
done:
  free(text);
  lm_records_free(&back);
  lm_records_free(&acc);
  cache_free(&kc);
  return broken;
}

#ifndef LM_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *broken = lm_fuzz_check_import(data, size);
  if (broken) {
    fprintf(stderr, "fuzz_import: %s\n", broken);
    abort();
  }
  return 0;
}
#endif
