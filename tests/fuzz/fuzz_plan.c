/* libFuzzer entry for plan files, and the claim it checks: a plan the
 * reader accepts writes to JSON that reads back to an equal plan (doubles
 * bit for bit), and a rejected one comes with a message.
 * tests/test_fuzz_regress.c includes this file with LM_FUZZ_NO_ENTRY to
 * replay the corpus through the same claim. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/plan.h"

const char *lm_fuzz_check_plan(const uint8_t *data, size_t size) {
  lm_error err = {0};
  lm_plan *p = NULL, *again = NULL;
  char *text = NULL;
  const char *broken = NULL;

  if (lm_plan_from_json_text("fuzz.json", (const char *)data, size, &p, &err) != LM_OK)
    return err.msg[0] ? NULL : "a plan was rejected without a message";
  if (lm_plan_to_json_text(p, &text, &err) != LM_OK || !text) {
    broken = "a loaded plan does not write to JSON";
    goto done;
  }
  lm_error_clear(&err);
  if (lm_plan_from_json_text("written.json", text, strlen(text), &again, &err) != LM_OK) {
    broken = "the written plan does not read back";
    goto done;
  }
  if (!lm_plan_equal(p, again))
    broken = "the re-read plan differs from the original";
done:
  free(text);
  lm_plan_free(again);
  lm_plan_free(p);
  return broken;
}

#ifndef LM_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *broken = lm_fuzz_check_plan(data, size);
  if (broken) {
    fprintf(stderr, "fuzz_plan: %s\n", broken);
    abort();
  }
  return 0;
}
#endif
