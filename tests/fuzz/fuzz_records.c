/* libFuzzer entry for measurement records (lanemap.record/1, JSON Lines),
 * and the claim it checks: a rejected file comes with a message and
 * LM_EINPUT; an accepted one writes to text that reads back to as many
 * records, and writes again to the same text (what is read is what is
 * written, extension fields included).
 * tests/test_fuzz_regress.c includes this file with LM_FUZZ_NO_ENTRY to
 * replay the corpus through the same claim. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/records.h"

const char *lm_fuzz_check_records(const uint8_t *data, size_t size) {
  lm_error err = {0};
  lm_records rs = {0}, again = {0};
  char *text = NULL, *text2 = NULL;
  size_t n = 0, n2 = 0;
  const char *broken = NULL;
  lm_status st =
      lm_records_from_text("fuzz.jsonl", (const char *)data, size, &rs, &err);
  if (st != LM_OK)
    return st != LM_EINPUT ? "a records file was rejected without LM_EINPUT"
           : !err.msg[0]   ? "a records file was rejected without a message"
           : strncmp(err.msg, "fuzz.jsonl", 10) != 0
               ? "a records file's message does not name the file"
               : NULL;
  if (lm_records_to_text(&rs, &text, &n, &err) != LM_OK) {
    broken = "accepted records do not write";
    goto done;
  }
  if (lm_records_from_text("written.jsonl", text, n, &again, &err) != LM_OK) {
    broken = "written records do not read back";
    goto done;
  }
  if (again.n != rs.n || again.truncated) {
    broken = "written records read back to another number of records";
    goto done;
  }
  if (lm_records_to_text(&again, &text2, &n2, &err) != LM_OK || n2 != n ||
      memcmp(text, text2, n) != 0)
    broken = "records read back write to other text";
done:
  free(text);
  free(text2);
  lm_records_free(&again);
  lm_records_free(&rs);
  return broken;
}

#ifndef LM_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *broken = lm_fuzz_check_records(data, size);
  if (broken) {
    fprintf(stderr, "fuzz_records: %s\n", broken);
    abort();
  }
  return 0;
}
#endif
