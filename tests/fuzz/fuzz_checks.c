/* Round-trip checks for the three text formats lanemap reads: kernel
 * sources, variant strings and profile JSON.  Each parser must either
 * reject an input with a diagnostic or accept it, and an accepted input
 * must survive print → parse unchanged, since the CLI, the cache and the
 * golden tests all rely on the printed form standing for the value. */
#include "tests/fuzz/fuzz_checks.h"

#include <stdlib.h>
#include <string.h>

#include "lanemap/ir.h"
#include "lanemap/profile.h"
#include "lanemap/variant.h"

#ifndef LANEMAP_SOURCE_DIR
#error "LANEMAP_SOURCE_DIR must name the source tree"
#endif

const char *lm_fuzz_check_kernel(const uint8_t *data, size_t size) {
  lm_error err = {0};
  lm_kernel *k = NULL, *again = NULL;
  char *text = NULL, *dump = NULL;
  const char *broken = NULL;

  if (lm_kernel_parse("fuzz.lk", (const char *)data, size, &k, &err) != LM_OK)
    return NULL;
  text = lm_kernel_print(k);
  if (!text) {
    broken = "lm_kernel_print returned NULL for a parsed kernel";
    goto done;
  }
  lm_error_clear(&err);
  if (lm_kernel_parse("printed.lk", text, strlen(text), &again, &err) !=
      LM_OK) {
    broken = "the printed kernel does not re-parse";
    goto done;
  }
  if (!lm_kernel_equal(k, again)) {
    broken = "the re-parsed kernel differs from the original";
    goto done;
  }
  dump = lm_kernel_dump(k);
  if (!dump)
    broken = "lm_kernel_dump returned NULL for a parsed kernel";
done:
  free(dump);
  free(text);
  lm_kernel_free(again);
  lm_kernel_free(k);
  return broken;
}

/* Kernels that exercise the variant rules: phases (rmsnorm, layernorm,
 * masked_softmax reuse a tile after a reduction), f64 lanes, and a kernel
 * without reductions.  Loaded once; a missing file is skipped. */
static const char *const variant_kernel_files[] = {
    LANEMAP_SOURCE_DIR "/kernels/rmsnorm.lk",
    LANEMAP_SOURCE_DIR "/kernels/layernorm.lk",
    LANEMAP_SOURCE_DIR "/kernels/masked_softmax.lk",
    LANEMAP_SOURCE_DIR "/kernels/gelu_residual.lk",
    LANEMAP_SOURCE_DIR "/tests/kernels/rmsnorm_f64.lk",
};
#define NVARIANT_KERNELS                                                       \
  (sizeof variant_kernel_files / sizeof variant_kernel_files[0])
static lm_kernel *variant_kernels[NVARIANT_KERNELS];
static int variant_kernels_loaded;

static void load_variant_kernels(void) {
  if (variant_kernels_loaded)
    return;
  variant_kernels_loaded = 1;
  for (size_t i = 0; i < NVARIANT_KERNELS; i++) {
    lm_error err = {0};
    if (lm_kernel_load(variant_kernel_files[i], &variant_kernels[i], &err) !=
        LM_OK)
      variant_kernels[i] = NULL;
  }
}

const char *lm_fuzz_check_variant(const uint8_t *data, size_t size) {
  lm_error err = {0};
  lm_variant v, again;
  char first[128], second[128];
  char *text = malloc(size + 1);
  const char *broken = NULL;

  if (!text)
    return NULL;
  memcpy(text, data, size);
  text[size] = '\0';
  load_variant_kernels();
  if (lm_variant_parse(text, &v, &err) != LM_OK)
    goto done;
  lm_variant_format(&v, first, sizeof first);
  lm_error_clear(&err);
  if (lm_variant_parse(first, &again, &err) != LM_OK) {
    broken = "the formatted variant does not re-parse";
    goto done;
  }
  lm_variant_format(&again, second, sizeof second);
  if (strcmp(first, second) != 0) {
    broken = "the re-parsed variant formats differently";
    goto done;
  }
  if (!lm_variant_same_code(&v, &again)) {
    broken = "the re-parsed variant generates different code";
    goto done;
  }
  for (size_t i = 0; i < NVARIANT_KERNELS; i++) {
    if (!variant_kernels[i])
      continue;
    lm_error_clear(&err);
    lm_status s = lm_variant_check(variant_kernels[i], &v, &err);
    if (s != LM_OK && err.msg[0] == '\0') {
      broken = "lm_variant_check rejected a variant without a reason";
      goto done;
    }
  }
done:
  free(text);
  return broken;
}

const char *lm_fuzz_check_profile(const uint8_t *data, size_t size) {
  lm_error err = {0};
  lm_profile *p = NULL, *again = NULL;
  char *text = NULL;
  const char *broken = NULL;

  if (lm_profile_from_json_text("fuzz.json", (const char *)data, size, &p, NULL,
                                &err) != LM_OK)
    return NULL;
  lm_error_clear(&err);
  if (lm_profile_to_json_text(p, &text, &err) != LM_OK || !text) {
    broken = "a loaded profile does not save to JSON text";
    goto done;
  }
  lm_error_clear(&err);
  if (lm_profile_from_json_text("saved.json", text, strlen(text), &again, NULL,
                                &err) != LM_OK) {
    broken = "the saved profile does not load again";
    goto done;
  }
  if (!lm_profile_equal(p, again))
    broken = "the re-loaded profile differs from the original";
done:
  free(text);
  lm_profile_free(again);
  lm_profile_free(p);
  return broken;
}
