/* The examples run as a pipeline would run them: examples/pipeline.c (the
 * autotuning loop, with the default profile and short timing so the test
 * stays quick) on two bundled kernels, checking what it prints against the
 * records it appends.  examples/python/pipeline.py runs in the Python
 * package's tests (tests/python/run.sh). */
#include <criterion/criterion.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/records.h"
/* Not every helper of run.h is used here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "tests/support/run.h"

#define PIPELINE LANEMAP_LIBDIR "/examples/pipeline"
#define KDIR LANEMAP_SOURCE_DIR "/kernels/"

TestSuite(examples, .init = run_tmp_make, .fini = run_tmp_remove,
          .timeout = 300);

static int sh(const char *cmd) {
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

/* Run cmd with stdout to `out` and stderr to `err` in the temp folder. */
static int run_sh(const char *cmd, char **out, char **err) {
  char full[4096];
  snprintf(full, sizeof full, "%s > '%s' 2> '%s'", cmd, run_tmp("out"),
           run_tmp("err"));
  int rc = sh(full);
  *out = run_slurp(run_tmp("out"));
  *err = run_slurp(run_tmp("err"));
  return rc;
}

Test(examples, pipeline_tunes_and_records) {
  char cmd[2048], *out, *err;
  char *recs = run_tmp("records.jsonl");
  snprintf(cmd, sizeof cmd,
           "'%s' --default-profile --records '%s' --samples 3 --sample-ms 2 "
           "'%srmsnorm.lk' 64,1024 '%slayernorm.lk' 33,127",
           PIPELINE, recs, KDIR, KDIR);
  int rc = run_sh(cmd, &out, &err);
  cr_assert_eq(rc, 0, "exit %d\n%s%s", rc, out, err);
  cr_expect_eq(run_count_lines(out, "rmsnorm.lk 64x1024: "), 1, "%s", out);
  cr_expect_eq(run_count_lines(out, "layernorm.lk 33x127: "), 1, "%s", out);
  lm_records rs = {0};
  lm_error e = {0};
  cr_assert_eq(lm_records_read(recs, &rs, &e), LM_OK, "%s", e.msg);
  cr_expect_leq(rs.n, 6);
  cr_expect_geq(rs.n, 2);
  /* every record: verified, model rank 1..3, a prediction and samples */
  for (int i = 0; i < rs.n; i++) {
    const lm_record *r = &rs.r[i];
    cr_expect_eq(r->verified, 1);
    cr_expect(isfinite(r->predicted) && r->predicted > 0);
    cr_expect_eq(r->ntimes, 3);
    cr_expect(r->fingerprint != NULL);
    const cJSON *mr = cJSON_GetObjectItemCaseSensitive(r->extra, "model_rank");
    cr_expect(cJSON_IsNumber(mr) && mr->valueint >= 1 && mr->valueint <= 3);
  }
  /* the variant printed as best has the least median of its shape */
  lm_records best = {0};
  cr_assert_eq(lm_records_best(&rs, &best, &e), LM_OK, "%s", e.msg);
  cr_expect_eq(best.n, 2);
  for (int i = 0; i < best.n; i++) {
    char want[256];
    snprintf(want, sizeof want, "best %s ", best.r[i].variant);
    cr_expect(strstr(out, want) != NULL, "'%s' not in:\n%s", want, out);
  }
  lm_records_free(&best);
  lm_records_free(&rs);
  free(out);
  free(err);
}

Test(examples, pipeline_bad_input) {
  char cmd[2048], *out, *err;
  snprintf(cmd, sizeof cmd,
           "'%s' --default-profile --records '%s' '%srmsnorm.lk' 64",
           PIPELINE, run_tmp("r.jsonl"), KDIR);
  cr_expect_eq(run_sh(cmd, &out, &err), 2);
  cr_expect(strstr(err, "shape: expected R,C") != NULL, "%s", err);
  free(out);
  free(err);
  snprintf(cmd, sizeof cmd, "'%s' --default-profile '%snope.lk' 8,8",
           PIPELINE, KDIR);
  cr_expect_eq(run_sh(cmd, &out, &err), 2);
  cr_expect(strstr(err, "nope.lk") != NULL, "%s", err);
  free(out);
  free(err);
  cr_expect(!run_exists(run_tmp("r.jsonl")));
}
