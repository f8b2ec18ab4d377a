/* libFuzzer entry for held-out case lists (lanemap.suite/1,
 * lanemap.cases/1), and the claim it checks: a rejected list comes with a
 * message and LM_EINPUT; an accepted one holds only well-formed cases
 * (ids non-empty and unique, R and C positive, a kernel path under the
 * list's folder, a known split), and reads the same twice.
 * tests/test_fuzz_regress.c includes this file with LM_FUZZ_NO_ENTRY to
 * replay the corpus through the same claim. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/cases.h"

static int cases_opt_eq(const char *a, const char *b) {
  return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

const char *lm_fuzz_check_cases(const uint8_t *data, size_t size) {
  lm_error err = {0};
  lm_cases cs = {0}, again = {0};
  lm_strset *ids = NULL;
  const char *broken = NULL;
  lm_status st = lm_cases_from_json_text("fuzz.json", "fz", (const char *)data,
                                         size, &cs, &err);
  if (st != LM_OK)
    return st != LM_EINPUT ? "a case list was rejected without LM_EINPUT"
           : !err.msg[0]   ? "a case list was rejected without a message"
           : strncmp(err.msg, "fuzz.json", 9) != 0
               ? "a case list's message does not name the file"
               : NULL;
  if (cs.n < 1) {
    broken = "an accepted case list has no case";
    goto done;
  }
  if (!(ids = lm_strset_new()))
    goto done;
  for (int i = 0; i < cs.n && !broken; i++) {
    const lm_case *c = &cs.c[i];
    int64_t prior = -1;
    if (!c->id || !c->id[0])
      broken = "an accepted case has an empty id";
    else if (lm_strset_add_str(ids, c->id, i, &prior) == LM_OK && prior >= 0)
      broken = "an accepted case list repeats an id";
    else if (c->R < 1 || c->C < 1)
      broken = "an accepted case has a shape that is not positive";
    else if (!c->kernel ||
             (c->kernel[0] != '/' && strncmp(c->kernel, "fz/", 3) != 0))
      broken = "an accepted case's kernel is not under the list's folder";
    else if (c->split && strcmp(c->split, "operator") != 0 &&
             strcmp(c->split, "shape") != 0)
      broken = "an accepted case has an unknown split";
  }
  if (broken)
    goto done;
  if (lm_cases_from_json_text("fuzz.json", "fz", (const char *)data, size,
                              &again, &err) != LM_OK ||
      again.n != cs.n) {
    broken = "a case list read twice gives two results";
    goto done;
  }
  for (int i = 0; i < cs.n && !broken; i++) {
    const lm_case *a = &cs.c[i], *b = &again.c[i];
    if (strcmp(a->id, b->id) || strcmp(a->kernel, b->kernel) || a->R != b->R ||
        a->C != b->C || !cases_opt_eq(a->split, b->split) ||
        !cases_opt_eq(a->extra, b->extra))
      broken = "a case list read twice gives two results";
  }
done:
  lm_strset_free(ids);
  lm_cases_free(&again);
  lm_cases_free(&cs);
  return broken;
}

#ifndef LM_FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *broken = lm_fuzz_check_cases(data, size);
  if (broken) {
    fprintf(stderr, "fuzz_cases: %s\n", broken);
    abort();
  }
  return 0;
}
#endif
