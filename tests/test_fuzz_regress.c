/* Replays the fuzz corpora and regression inputs through the fuzzers' own
 * claims (tests/fuzz/fuzz_checks.c), so every input the fuzzers ever kept
 * or broke on is re-checked by the normal build in seconds, without
 * clang or libFuzzer.  tests/fuzz/open/ holds inputs that still break the
 * library and is deliberately not replayed. */
#define _GNU_SOURCE /* fuzz_import.c compiles cli/records.c */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/core.h"
#include "tests/fuzz/fuzz_checks.c"
#define LM_FUZZ_NO_ENTRY
#include "tests/fuzz/fuzz_cases.c"
#include "tests/fuzz/fuzz_import.c"
#include "tests/fuzz/fuzz_plan.c"
#include "tests/fuzz/fuzz_records.c"
#include "tests/fuzz/fuzz_workload.c"

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

/* The corpus and regression inputs of one fuzzer, kept under the folder
 * name `name` (fuzz_kernel, ..., or workload and plan). */
static int replay(const char *name, fuzz_check check) {
  char dir[4096];
  int n = 0;
  snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", LANEMAP_SOURCE_DIR,
           name);
  n += replay_dir(dir, check);
  snprintf(dir, sizeof dir, "%s/tests/fuzz/regress/%s", LANEMAP_SOURCE_DIR,
           name);
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

Test(fuzz_regress, every_workload_input_round_trips_through_json) {
  cr_assert_gt(replay("workload", lm_fuzz_check_workload), 0,
               "no workload corpus found");
}

Test(fuzz_regress, every_plan_input_round_trips_through_json) {
  cr_assert_gt(replay("plan", lm_fuzz_check_plan), 0, "no plan corpus found");
}

Test(fuzz_regress,
     every_case_list_input_is_refused_with_a_message_or_well_formed) {
  cr_assert_gt(replay("fuzz_cases", lm_fuzz_check_cases), 0,
               "no case list corpus found");
}

Test(fuzz_regress, every_records_input_round_trips_through_json_lines) {
  cr_assert_gt(replay("fuzz_records", lm_fuzz_check_records), 0,
               "no records corpus found");
}

Test(fuzz_regress, every_import_input_is_refused_with_a_message_or_maps) {
  cr_assert_gt(replay("fuzz_import", lm_fuzz_check_import), 0,
               "no import corpus found");
}
