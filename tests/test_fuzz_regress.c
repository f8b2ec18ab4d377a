/* Replays the fuzz corpora and regression inputs through the fuzzers' own
 * claims (tests/fuzz/fuzz_checks.c), so every input the fuzzers ever kept
 * or broke on is re-checked by the normal build in seconds, without
 * clang or libFuzzer.  tests/fuzz/open/ holds inputs that still break the
 * library and is deliberately not replayed. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/core.h"
#include "tests/fuzz/fuzz_checks.c"

typedef const char *(*fuzz_check)(const uint8_t *, size_t);

/* Run check on every regular file of DIR; returns the number of files. */
static int replay_dir(const char *dir, fuzz_check check) {
  DIR *d = opendir(dir);
  struct dirent *e;
  int n = 0;
  if (!d)
    return 0;
  while ((e = readdir(d)) != NULL) {
    char path[4096];
    char *text = NULL;
    size_t len = 0;
    lm_error err = {0};
    if (e->d_name[0] == '.')
      continue;
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    cr_assert_eq(lm_file_read(path, &text, &len, &err), LM_OK, "%s", err.msg);
    const char *broken = check((const uint8_t *)text, len);
    cr_expect_null(broken, "%s: %s", path, broken);
    free(text);
    n++;
  }
  closedir(d);
  return n;
}

static int replay(const char *fuzzer, fuzz_check check) {
  char dir[4096];
  int n = 0;
  snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", LANEMAP_SOURCE_DIR,
           fuzzer);
  n += replay_dir(dir, check);
  snprintf(dir, sizeof dir, "%s/tests/fuzz/regress/%s", LANEMAP_SOURCE_DIR,
           fuzzer);
  n += replay_dir(dir, check);
  return n;
}

Test(fuzz_regress, every_kernel_input_round_trips_through_the_printer) {
  cr_assert_gt(replay("fuzz_kernel", lm_fuzz_check_kernel), 0,
               "no kernel corpus found");
}

Test(fuzz_regress, every_variant_input_round_trips_through_the_formatter) {
  cr_assert_gt(replay("fuzz_variant", lm_fuzz_check_variant), 0,
               "no variant corpus found");
}

Test(fuzz_regress, every_profile_input_round_trips_through_json) {
  cr_assert_gt(replay("fuzz_profile", lm_fuzz_check_profile), 0,
               "no profile corpus found");
}
