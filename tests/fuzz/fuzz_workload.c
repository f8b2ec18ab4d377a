/* libFuzzer entry for workload files, and the claim it checks: a workload
 * the reader accepts writes to JSON that reads back to an equal workload,
 * and a rejected one comes with a message.  Kernels are not loaded (the
 * fuzzer reads no files).  tests/test_fuzz_regress.c includes this file
 * with LM_FUZZ_NO_ENTRY to replay the corpus through the same claim. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/workload.h"

const char *lm_fuzz_check_workload(const uint8_t *data, size_t size) {
  lm_error err = {0};
  lm_workload *w = NULL, *again = NULL;
  char *text = NULL;
  const char *broken = NULL;

  if (lm_workload_from_json_text("fuzz.json", "/nonexistent", (const char *)data, size, &w,
                                 &err) != LM_OK)
    return err.msg[0] ? NULL : "a workload was rejected without a message";
  if (lm_workload_to_json_text(w, &text, &err) != LM_OK || !text) {
    broken = "a loaded workload does not write to JSON";
    goto done;
  }
  lm_error_clear(&err);
  if (lm_workload_from_json_text("written.json", "/nonexistent", text, strlen(text), &again,
                                 &err) != LM_OK) {
    broken = "the written workload does not read back";
    goto done;
  }
  if (!lm_workload_equal(w, again))
    broken = "the re-read workload differs from the original";
done:
  free(text);
  lm_workload_free(again);
  lm_workload_free(w);
  return broken;
}

#ifndef LM_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *broken = lm_fuzz_check_workload(data, size);
  if (broken) {
    fprintf(stderr, "fuzz_workload: %s\n", broken);
    abort();
  }
  return 0;
}
#endif
