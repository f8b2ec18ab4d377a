/* Claims about the held-out report, its records and plots
 * (heldout/report.c, heldout/records.c, heldout/plots.c) and `lanemap
 * merge`, on a synthetic run whose regrets are known: the report holds
 * every table and names each miss with the term that mispredicts, a run
 * survives a trip through records, merging shards gives back the unsharded
 * records, and plots are PNGs when gnuplot is there and a clear error when
 * it is not. */
#include <criterion/criterion.h>

#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lanemap/heldout.h"
#include "lanemap/records.h"

extern char **environ;

static char tmpdir[256];

static void make_tmpdir(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/lanemap_test_report.XXXXXX");
  cr_assert_not_null(mkdtemp(tmpdir));
}

static char *last_out, *last_err; /* of the latest run_cli */

static void remove_tmpdir(void) {
  free(last_out);
  free(last_err);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "/bin/rm -rf '%s'", tmpdir);
  cr_expect_eq(system(cmd), 0);
}

TestSuite(report, .init = make_tmpdir, .fini = remove_tmpdir, .timeout = 300);

static char *tmp_path(const char *name) {
  static char buf[8][512];
  static int next;
  char *p = buf[next++ % 8];
  snprintf(p, 512, "%s/%s", tmpdir, name);
  return p;
}

static char *slurp(const char *path) {
  char *s = NULL;
  lm_error err = {0};
  cr_assert_eq(lm_file_read(path, &s, NULL, &err), LM_OK, "%s", err.msg);
  return s;
}

/* ---- a synthetic run -------------------------------------------------------
 */

enum { NTERMS = 3 };
static const char *const term_names[NTERMS] = {"t_mem", "t_mask", "t_gather"};

typedef struct spec {
  const char *id, *split;
  int64_t R, C;
  int n;
  double measured[4];
  int verified[4];
  double predicted[4];
  double terms[4][NTERMS];
  int plan, program, packet, inductor;
} spec;

/* op-b: the plan picks a variant 30% slower because the model charged the
 * best one 80 ns of t_mask against 10 ns; sh-a: 6% slower, by t_mem. */
static const spec specs[] = {
    {"op-a",
     "operator",
     8,
     1000,
     4,
     {100, 120, 300, NAN},
     {1, 1, 1, 0},
     {90, 110, 280, 50},
     {{50, 20, 20}, {60, 20, 30}, {200, 40, 40}, {20, 10, 20}},
     0,
     2,
     1,
     0},
    {"op-b",
     "operator",
     1,
     4096,
     3,
     {200, 260, 500},
     {1, 1, 1},
     {200, 180, 450},
     {{100, 80, 20}, {150, 10, 20}, {300, 100, 50}},
     1,
     2,
     0,
     0},
    {"sh-a",
     "shape",
     100000,
     8,
     2,
     {50, 53},
     {1, 1},
     {50, 45},
     {{30, 10, 10}, {20, 10, 15}},
     1,
     0,
     1,
     1},
    {"sh-b",
     "shape",
     2,
     65536,
     3,
     {1000, 2000, 4000},
     {1, 1, 1},
     {900, 2100, 3000},
     {{500, 200, 200}, {1000, 500, 600}, {2000, 500, 500}},
     0,
     1,
     2,
     0},
};
enum { NSPECS = sizeof specs / sizeof *specs };

static void build_run(lm_eval_run *run, int cross) {
  memset(run, 0, sizeof *run);
  run->nterms = NTERMS;
  run->term_names = calloc(NTERMS, sizeof *run->term_names);
  for (int t = 0; t < NTERMS; t++)
    run->term_names[t] = strdup(term_names[t]);
  run->isa = strdup("avx2");
  run->fingerprint = strdup("0123456789abcdef");
  run->profile_mode = strdup("quick");
  run->cross_isa = cross ? strdup("avx512") : NULL;
  run->calibrate_s = 0;
  run->measure_s = 12.5;
  run->total_s = 20.25;
  run->ncases = NSPECS;
  run->cases = calloc(NSPECS, sizeof *run->cases);
  for (int i = 0; i < NSPECS; i++) {
    const spec *s = &specs[i];
    lm_eval_case *c = &run->cases[i];
    c->id = strdup(s->id);
    c->split = strdup(s->split);
    c->kernel = strdup("kernels/k.lk");
    c->kernel_hash = strdup(i < 2 ? "00000000000000aa" : "00000000000000bb");
    c->R = s->R;
    c->C = s->C;
    c->extra = i == 3 ? strdup("H=33") : NULL;
    c->isa = strdup("avx2");
    c->nvariants = s->n;
    c->v = calloc((size_t)s->n, sizeof *c->v);
    for (int j = 0; j < s->n; j++) {
      lm_eval_variant *v = &c->v[j];
      char name[32];
      snprintf(name, sizeof name, "avx2/w8/l%d/v%d", j == 0 ? 1 : 8, j);
      v->variant = strdup(name);
      v->verified = s->verified[j];
      v->measured = s->verified[j] == 1 ? s->measured[j] : NAN;
      v->spread = s->verified[j] == 1 ? 0.01 * (j + 1) : NAN;
      v->predicted = s->predicted[j];
      v->pred_cross = cross ? s->predicted[s->n - 1 - j] : NAN;
      v->pred_default = s->predicted[j] * 2;
      v->pred_roofline = s->predicted[j] / 2;
      v->terms = calloc(NTERMS, sizeof *v->terms);
      for (int t = 0; t < NTERMS; t++)
        v->terms[t] = s->terms[j][t];
    }
    for (int p = 0; p < LM_POLICY__COUNT; p++)
      c->choice[p] = -1;
    c->choice[LM_POLICY_PLAN] = s->plan;
    c->choice[LM_POLICY_PROGRAM] = s->program;
    c->choice[LM_POLICY_PACKET] = s->packet;
    c->choice[LM_POLICY_INDUCTOR] = s->inductor;
    c->choice[LM_POLICY_DEFAULT] = s->n - 1;
    c->choice[LM_POLICY_ROOFLINE] = 0;
    if (cross)
      c->choice[LM_POLICY_CROSS] = s->n > 2 ? 2 : 1;
    lm_error err = {0};
    cr_assert_eq(lm_eval_case_score(c, &err), LM_OK, "%s", err.msg);
  }
}

/* ---- the report --------------------------------------------------------- */

Test(report, report_has_every_table_and_names_the_mispredicting_term) {
  lm_eval_run run;
  build_run(&run, 1);
  lm_error err = {0};
  cr_assert_eq(lm_eval_report_write(&run, tmpdir, &err), LM_OK, "%s", err.msg);
  char *md = slurp(tmp_path("report.md"));
  const char *want[] = {"## Setup",
                        "ISA target: avx2",
                        "fingerprint 0123456789abcdef",
                        "- profile: quick",
                        "cases: 4 (4 measured): 2 operator, 2 shape",
                        "(cached profile)",
                        "## Targets",
                        "## Policies",
                        "### All cases",
                        "### Split operator",
                        "### Split shape",
                        "| plan | 4 |",
                        "| always-program |",
                        "| inductor-like |",
                        "| random |",
                        "## Measured autotuning",
                        "The model's top-1",
                        "## Leave-one-ISA-out",
                        "profile calibrated on avx512",
                        "## Cases",
                        "| op-a | operator | 8x1000 | 3/4 |",
                        "2x65536 H=33",
                        "## Misses"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    cr_expect(strstr(md, want[i]), "report lacks '%s'", want[i]);
  const char *misses = strstr(md, "## Misses");
  cr_assert_not_null(misses);
  /* op-b: 260/200 - 1 = 30% > 25%, term t_mask 80 ns vs 10 ns */
  const char *opb = strstr(misses, "**op-b**");
  cr_assert_not_null(opb, "op-b is a miss");
  cr_expect(strstr(opb, "regret 30.0% **>25%**"), "%.300s", opb);
  cr_expect(strstr(opb, "Mispredicting term: **t_mask**, 80 ns for the best "
                        "against 10 ns"),
            "%.400s", opb);
  /* sh-a: 53/50 - 1 = 6%, by t_mem 30 vs 20 */
  const char *sha = strstr(misses, "**sh-a**");
  cr_assert_not_null(sha, "sh-a is a miss");
  cr_expect(strstr(sha, "regret 6.0%:"), "%.300s", sha);
  cr_expect(strstr(sha, "**t_mem**, 30 ns for the best against 20 ns"),
            "%.400s", sha);
  cr_expect_null(strstr(misses, "**op-a**"), "op-a is the best");
  cr_expect_null(strstr(misses, "**sh-b**"), "sh-b is the best");
  /* the plan's max regret of 30% misses the 25% target; without timing
   * samples the bootstrap has nothing to resample: the interval is the
   * point */
  cr_expect(strstr(md, "| max regret <= 25% | 30.0% [30.0%, 30.0%] | **no** |"),
            "%s", md);
  free(md);
  lm_eval_run_free(&run);
}

Test(report, without_a_cross_profile_there_is_no_loio_table) {
  lm_eval_run run;
  build_run(&run, 0);
  lm_error err = {0};
  cr_assert_eq(lm_eval_report_write(&run, tmpdir, &err), LM_OK, "%s", err.msg);
  char *md = slurp(tmp_path("report.md"));
  cr_expect_null(strstr(md, "Leave-one-ISA-out"));
  cr_expect_null(strstr(md, "cross-isa"));
  free(md);
  lm_eval_run_free(&run);
}

Test(report, an_unverified_plan_pick_is_a_miss) {
  lm_eval_run run;
  build_run(&run, 0);
  run.cases[0].choice[LM_POLICY_PLAN] = 3; /* failed verification */
  lm_error err = {0};
  cr_assert_eq(lm_eval_case_score(&run.cases[0], &err), LM_OK);
  cr_assert_eq(lm_eval_report_write(&run, tmpdir, &err), LM_OK, "%s", err.msg);
  char *md = slurp(tmp_path("report.md"));
  cr_expect(strstr(md, "**op-a** (8x1000): the plan's variant `avx2/w8/l8/v3` "
                       "failed verification"),
            "%s", md);
  free(md);
  lm_eval_run_free(&run);
}

Test(report, misses_say_when_the_model_did_not_favour_the_pick) {
  lm_eval_run run;
  build_run(&run, 0);
  lm_error err = {0};
  /* op-a: the plan takes v2, predicted 280 ns against the best's 90 ns */
  run.cases[0].choice[LM_POLICY_PLAN] = 2;
  /* sh-b: v1 predicted and broken down exactly like the best v0 */
  lm_eval_case *c = &run.cases[3];
  c->choice[LM_POLICY_PLAN] = 1;
  c->v[1].predicted = c->v[0].predicted;
  memcpy(c->v[1].terms, c->v[0].terms, NTERMS * sizeof *c->v[0].terms);
  cr_assert_eq(lm_eval_case_score(&run.cases[0], &err), LM_OK);
  cr_assert_eq(lm_eval_case_score(c, &err), LM_OK);
  cr_assert_eq(lm_eval_report_write(&run, tmpdir, &err), LM_OK, "%s", err.msg);
  char *md = slurp(tmp_path("report.md"));
  const char *opa = strstr(md, "- **op-a**");
  cr_assert_not_null(opa, "%s", md);
  cr_expect(strstr(opa, "The model predicted the best cheaper (90 ns against "
                        "280 ns)"),
            "%.400s", opa);
  const char *shb = strstr(md, "- **sh-b**");
  cr_assert_not_null(shb, "%s", md);
  cr_expect(strstr(shb, "a tie the solver broke"), "%.400s", shb);
  free(md);
  lm_eval_run_free(&run);
}

Test(report, an_empty_run_still_reports_its_setup) {
  lm_eval_run run = {0};
  run.isa = strdup("avx2");
  lm_error err = {0};
  cr_assert_eq(lm_eval_report_write(&run, tmpdir, &err), LM_OK, "%s", err.msg);
  char *md = slurp(tmp_path("report.md"));
  cr_expect(strstr(md, "cases: 0 (0 measured)"), "%s", md);
  cr_expect(strstr(md, "No case has a plan with a measured time"), "%s", md);
  cr_expect(strstr(md, "| plan | 0 | - |"), "%s", md);
  free(md);
  lm_eval_run_free(&run);
}

Test(report, a_report_into_a_missing_folder_is_a_system_error) {
  lm_eval_run run;
  build_run(&run, 0);
  lm_error err = {0};
  cr_expect_eq(lm_eval_report_write(&run, tmp_path("none/deeper"), &err),
               LM_ESYS);
  cr_expect(strstr(err.msg, "report.md"), "%s", err.msg);
  lm_eval_run_free(&run);
}

/* ---- records --------------------------------------------------------------
 */

/* All records of a run, in case order. */
static void run_records(const lm_eval_run *run, int from, int to,
                        lm_records *out) {
  memset(out, 0, sizeof *out);
  for (int i = from; i < to; i++) {
    lm_record *r = NULL;
    int n = 0;
    lm_error err = {0};
    cr_assert_eq(lm_eval_case_records(&run->cases[i], run, NULL, &r, &n, &err),
                 LM_OK, "%s", err.msg);
    out->r = realloc(out->r, (size_t)(out->n + n) * sizeof *out->r);
    memcpy(out->r + out->n, r, (size_t)n * sizeof *r);
    out->n += n;
    free(r);
  }
}

static void expect_close(double a, double b, const char *what) {
  if (isnan(a) || isnan(b))
    cr_expect(isnan(a) && isnan(b), "%s: %g vs %g", what, a, b);
  else
    cr_expect(fabs(a - b) <= 1e-12 * fabs(b), "%s: %.17g vs %.17g", what, a, b);
}

Test(report, a_run_survives_a_trip_through_records) {
  lm_eval_run run;
  build_run(&run, 1);
  lm_records rs, back;
  run_records(&run, 0, NSPECS, &rs);
  cr_expect_eq(rs.n, 4 + 3 + 2 + 3);
  lm_error err = {0};
  const char *path = tmp_path("records.jsonl");
  cr_assert_eq(lm_records_write(path, &rs, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_records_read(path, &back, &err), LM_OK, "%s", err.msg);
  cr_expect_str_eq(back.r[0].fingerprint, "0123456789abcdef");
  cr_expect_float_eq(back.r[0].median, 100e-9, 1e-20, "median in seconds");
  lm_eval_case *cs = NULL;
  int n = 0, incomplete = -1;
  cr_assert_eq(lm_eval_cases_from_records(&back, &cs, &n, &incomplete, &err),
               LM_OK, "%s", err.msg);
  cr_assert_eq(n, NSPECS);
  cr_expect_eq(incomplete, 0);
  for (int i = 0; i < n; i++) {
    const lm_eval_case *a = &run.cases[i], *b = &cs[i];
    cr_expect_str_eq(b->id, a->id);
    cr_expect_str_eq(b->split, a->split);
    cr_expect_str_eq(b->kernel, a->kernel);
    cr_expect_str_eq(b->kernel_hash, a->kernel_hash);
    cr_expect_str_eq(b->isa, a->isa);
    cr_expect_eq(b->R, a->R);
    cr_expect_eq(b->C, a->C);
    cr_expect((!a->extra && !b->extra) ||
              (a->extra && b->extra && strcmp(a->extra, b->extra) == 0));
    cr_assert_eq(b->nvariants, a->nvariants);
    cr_expect_eq(b->choice[LM_POLICY_PLAN], -1, "choices are not stored");
    for (int j = 0; j < a->nvariants; j++) {
      const lm_eval_variant *va = &a->v[j], *vb = &b->v[j];
      cr_expect_str_eq(vb->variant, va->variant, "variant order kept");
      cr_expect_eq(vb->verified, va->verified);
      expect_close(vb->measured, va->measured, "measured");
      expect_close(vb->predicted, va->predicted, "predicted");
      expect_close(vb->pred_cross, va->pred_cross, "pred_cross");
      expect_close(vb->pred_default, va->pred_default, "pred_default");
      expect_close(vb->pred_roofline, va->pred_roofline, "pred_roofline");
      expect_close(vb->spread, va->spread, "spread");
      cr_assert_not_null(vb->terms);
      for (int t = 0; t < NTERMS; t++)
        expect_close(vb->terms[t], va->terms[t], "terms");
    }
    /* the rebuilt case scores the same once the choices are set again */
    memcpy(cs[i].choice, a->choice, sizeof a->choice);
    cr_assert_eq(lm_eval_case_score(&cs[i], &err), LM_OK, "%s", err.msg);
    cr_expect_eq(cs[i].best, a->best);
    expect_close(cs[i].tau, a->tau, "tau");
    lm_eval_case_free(&cs[i]);
  }
  free(cs);
  lm_records_free(&rs);
  lm_records_free(&back);
  lm_eval_run_free(&run);
}

Test(report, incomplete_cases_are_dropped_and_repeats_deduplicated) {
  lm_eval_run run;
  build_run(&run, 0);
  lm_records all, part;
  run_records(&run, 0, NSPECS, &all);
  /* all records, then op-b again (an overlapping shard), minus the last
   * record of sh-b (its shard was interrupted), plus a foreign record */
  run_records(&run, 1, 2, &part);
  lm_records rs = {0};
  rs.n = all.n - 1 + part.n + 1;
  rs.r = calloc((size_t)rs.n, sizeof *rs.r);
  memcpy(rs.r, all.r, (size_t)(all.n - 1) * sizeof *rs.r);
  memcpy(rs.r + all.n - 1, part.r, (size_t)part.n * sizeof *rs.r);
  lm_record *foreign = &rs.r[rs.n - 1];
  lm_record_init(foreign);
  foreign->kernel = strdup("x.lk");
  foreign->kernel_hash = strdup("1111111111111111");
  foreign->variant = strdup("v");
  foreign->isa = strdup("avx2");
  lm_eval_case *cs = NULL;
  int n = 0, incomplete = 0;
  lm_error err = {0};
  cr_assert_eq(lm_eval_cases_from_records(&rs, &cs, &n, &incomplete, &err),
               LM_OK, "%s", err.msg);
  cr_expect_eq(n, 3);
  cr_expect_eq(incomplete, 1);
  cr_expect_str_eq(cs[1].id, "op-b");
  cr_expect_eq(cs[1].nvariants, 3);
  for (int i = 0; i < n; i++)
    lm_eval_case_free(&cs[i]);
  free(cs);
  lm_record_free(&all.r[all.n - 1]);
  free(all.r);
  free(part.r);
  lm_records_free(&rs);
  lm_eval_run_free(&run);
}

/* Replace the extra field name of record i by value (JSON text). */
static void set_extra(lm_records *rs, int i, const char *name,
                      const char *value) {
  cJSON_DeleteItemFromObject(rs->r[i].extra, name);
  cJSON_AddItemToObject(rs->r[i].extra, name, cJSON_Parse(value));
}

static void expect_rebuild_error(lm_records *rs, const char *want) {
  lm_eval_case *cs = NULL;
  int n = 0, incomplete = 0;
  lm_error err = {0};
  cr_expect_eq(lm_eval_cases_from_records(rs, &cs, &n, &incomplete, &err),
               LM_EINPUT, "expected an error with '%s'", want);
  cr_expect(strstr(err.msg, want), "no '%s' in: %s", want, err.msg);
}

Test(report, inconsistent_case_records_are_errors_naming_the_field) {
  lm_eval_run run;
  build_run(&run, 0);
  lm_records rs;
  run_records(&run, 0, NSPECS, &rs);
  set_extra(&rs, 1, "case_variants", "5");
  expect_rebuild_error(&rs, "case_variants differs");
  set_extra(&rs, 1, "case_variants", "4");
  set_extra(&rs, 1, "case_variant", "0");
  expect_rebuild_error(&rs, "case_variant 0 is");
  set_extra(&rs, 1, "case_variant", "7");
  expect_rebuild_error(&rs, "case_variant: 7 is not below");
  set_extra(&rs, 1, "case_variant", "\"one\"");
  expect_rebuild_error(&rs, "record 1: $.case_variant: expected an integer "
                            "from 0 to 1000000000, got \"one\"");
  set_extra(&rs, 1, "case_variant", "1");
  set_extra(&rs, 1, "case", "3");
  expect_rebuild_error(&rs, "record 1: case: expected a string");
  set_extra(&rs, 1, "case", "\"op-a\"");
  set_extra(&rs, 1, "pred_default", "\"fast\"");
  expect_rebuild_error(&rs,
                       "record 1: $.pred_default: expected a finite number, "
                       "or null, got \"fast\"");
  set_extra(&rs, 1, "pred_default", "1e-7");
  set_extra(&rs, 1, "terms_ns", "{\"t_mem\":1}");
  expect_rebuild_error(&rs, "terms_ns: 1 terms");
  set_extra(&rs, 1, "terms_ns", "{\"t_mem\":1,\"t_gather\":2,\"t_mask\":3}");
  expect_rebuild_error(&rs, "terms_ns.t_gather");
  lm_records_free(&rs);
  lm_eval_run_free(&run);
}

/* Sure and unsure picks: a case with more than one near tie is unsure;
 * each group gets its own row of plan regret, and a run without near ties
 * (a profile without resamples) has no such section. */
Test(report, sure_and_unsure_picks_are_reported_apart) {
  lm_eval_run run;
  build_run(&run, 0);
  lm_error err = {0};
  cr_assert_eq(lm_eval_report_write(&run, tmpdir, &err), LM_OK, "%s", err.msg);
  char *md = slurp(tmp_path("report.md"));
  cr_expect(!strstr(md, "## Sure and unsure picks"), "no near ties, no section");
  free(md);
  /* case 0: three near ties (unsure); the others: their best alone */
  for (int i = 0; i < run.ncases; i++)
    for (int v = 0; v < run.cases[i].nvariants; v++)
      run.cases[i].v[v].near_tie = i == 0 ? v < 3 : v == 0;
  cr_assert_eq(lm_eval_report_write(&run, tmpdir, &err), LM_OK, "%s", err.msg);
  md = slurp(tmp_path("report.md"));
  const char *sec = strstr(md, "## Sure and unsure picks");
  cr_assert_not_null(sec, "%s", md);
  char want[64];
  snprintf(want, sizeof want, "| sure | %d | 1.0 |", run.ncases - 1);
  cr_expect(strstr(sec, want), "%s", sec);
  cr_expect(strstr(sec, "| unsure | 1 | 3.0 |"), "%s", sec);
  free(md);
  lm_eval_run_free(&run);
}

/* ---- lanemap merge ------------------------------------------------------- */

typedef struct run_result {
  int code;
  char *out, *err;
} run_result;

/* Case 0 measured three times and still noisy, its v0 confirmed, its v1
 * a contended parallel variant. */
static void add_verdicts(lm_eval_run *run) {
  lm_eval_case *c = &run->cases[0];
  lm_noise_clear(&c->noise);
  c->noise.noisy = 1;
  c->noise.reasons = LM_NOISE_BUSY;
  c->noise.other_cpus = 0.97;
  c->noise.ncpu = 2;
  c->attempts = 3;
  static const double ct[] = {95, 96, 94, 97};
  c->v[0].confirmed = 95.5;
  c->v[0].nctimes = 4;
  c->v[0].ctimes = malloc(sizeof ct);
  memcpy(c->v[0].ctimes, ct, sizeof ct);
  c->v[1].contended = 1;
  for (int i = 1; i < run->ncases; i++) {
    lm_noise_clear(&run->cases[i].noise);
    run->cases[i].attempts = 1;
  }
}

Test(report, records_keep_the_verdict_the_confirmation_and_contention) {
  lm_eval_run run;
  build_run(&run, 0);
  add_verdicts(&run);
  lm_records rs, back;
  run_records(&run, 0, NSPECS, &rs);
  lm_error err = {0};
  const char *path = tmp_path("records.jsonl");
  cr_assert_eq(lm_records_write(path, &rs, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_records_read(path, &back, &err), LM_OK, "%s", err.msg);
  /* the schema stays lanemap.record/1: the new fields are optional */
  char *text = slurp(path);
  cr_expect(strstr(text, "\"schema\":\"lanemap.record/1\""), "%.300s", text);
  cr_expect(strstr(text, "\"noise\":{"), "%.300s", text);
  free(text);
  lm_eval_case *cs = NULL;
  int n = 0;
  cr_assert_eq(lm_eval_cases_from_records(&back, &cs, &n, NULL, &err), LM_OK,
               "%s", err.msg);
  cr_assert_eq(n, NSPECS);
  cr_expect_eq(cs[0].attempts, 3);
  cr_expect_eq(cs[0].noise.noisy, 1);
  expect_close(cs[0].noise.other_cpus, 0.97, "other_cpus");
  expect_close(cs[0].v[0].confirmed, 95.5, "confirmed");
  cr_assert_eq(cs[0].v[0].nctimes, 4);
  for (int k = 0; k < 4; k++)
    expect_close(cs[0].v[0].ctimes[k], run.cases[0].v[0].ctimes[k],
                 "confirmed_times");
  cr_expect(isnan(cs[0].v[2].confirmed), "v2 was not confirmed");
  cr_expect_eq(cs[0].v[2].nctimes, 0);
  cr_expect_eq(cs[0].v[1].contended, 1);
  cr_expect_eq(cs[0].v[0].contended, 0);
  cr_expect_eq(cs[1].attempts, 1);
  cr_expect_eq(cs[1].noise.noisy, 0);
  for (int i = 0; i < n; i++)
    lm_eval_case_free(&cs[i]);
  free(cs);
  lm_records_free(&rs);
  lm_records_free(&back);
  lm_eval_run_free(&run);
}

Test(report, records_without_a_verdict_read_as_unknown_and_unconfirmed) {
  lm_eval_run run;
  build_run(&run, 0);
  add_verdicts(&run);
  lm_records rs;
  run_records(&run, 0, NSPECS, &rs);
  /* what a build before verdicts wrote */
  static const char *const later[] = {"noise", "attempts", "confirmed",
                                      "confirmed_times", "contended"};
  for (int i = 0; i < rs.n; i++)
    for (size_t k = 0; k < sizeof later / sizeof *later; k++)
      cJSON_DeleteItemFromObject(rs.r[i].extra, later[k]);
  lm_eval_case *cs = NULL;
  int n = 0;
  lm_error err = {0};
  cr_assert_eq(lm_eval_cases_from_records(&rs, &cs, &n, NULL, &err), LM_OK,
               "%s", err.msg);
  cr_assert_eq(n, NSPECS);
  for (int i = 0; i < n; i++) {
    cr_expect_eq(cs[i].attempts, 0, "verdict unknown");
    cr_expect_eq(cs[i].noise.noisy, 0);
    for (int j = 0; j < cs[i].nvariants; j++) {
      cr_expect(isnan(cs[i].v[j].confirmed));
      cr_expect_eq(cs[i].v[j].nctimes, 0);
      cr_expect_eq(cs[i].v[j].contended, 0);
    }
    /* scored from the screening times, as before */
    memcpy(cs[i].choice, run.cases[i].choice, sizeof cs[i].choice);
    cr_assert_eq(lm_eval_case_score(&cs[i], &err), LM_OK, "%s", err.msg);
    lm_eval_case_free(&cs[i]);
  }
  free(cs);
  lm_records_free(&rs);
  lm_eval_run_free(&run);
}

/* The records of run as a file holds them: written and read back. */
static void file_records(const lm_eval_run *run, lm_records *out) {
  lm_records rs;
  run_records(run, 0, NSPECS, &rs);
  lm_error err = {0};
  const char *path = tmp_path("verdicts.jsonl");
  cr_assert_eq(lm_records_write(path, &rs, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_records_read(path, out, &err), LM_OK, "%s", err.msg);
  lm_records_free(&rs);
}

Test(report, a_bad_verdict_in_a_record_names_the_record) {
  lm_eval_run run;
  build_run(&run, 0);
  add_verdicts(&run);
  lm_records rs;
  file_records(&run, &rs);
  set_extra(&rs, 0, "attempts", "0");
  expect_rebuild_error(&rs, "record 0");
  lm_records_free(&rs);
  file_records(&run, &rs);
  set_extra(&rs, 1, "confirmed_times", "[1e-7, -1]");
  expect_rebuild_error(&rs, "confirmed_times");
  lm_records_free(&rs);
  lm_eval_run_free(&run);
}

Test(
    report,
    the_report_gives_the_protocol_the_verdicts_and_the_cases_under_interference) {
  lm_eval_run run;
  build_run(&run, 0);
  add_verdicts(&run);
  lm_eval_protocol *p = &run.protocol;
  p->samples = 5;
  p->sample_ms = 2;
  p->warmup_ms = 20;
  p->remeasure = LM_EVALUATE_REMEASURE;
  p->confirm_samples = LM_EVALUATE_CONFIRM_SAMPLES(5);
  p->confirm_top = LM_EVALUATE_CONFIRM_TOP;
  p->canary = 1;
  lm_noise_limits_defaults(&p->limits);
  /* the third case passed the spread limit alone: unstable, still counted */
  run.cases[2].noise.spread = 0.3;
  lm_noise_judge(&run.cases[2].noise, &p->limits);
  cr_assert_eq(run.cases[2].noise.noisy, 0);
  /* op-b's plan pick (v1) is contended: left out of every figure */
  lm_eval_case *opb = &run.cases[1];
  lm_noise_clear(&opb->noise);
  opb->v[1].contended = 1;
  lm_error err = {0};
  cr_assert_eq(lm_eval_case_score(opb, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_eval_report_write(&run, tmpdir, &err), LM_OK, "%s", err.msg);
  char *md = slurp(tmp_path("report.md"));
  const char *want[] = {
      "## Measurement",
      "5 samples of 2 ms after 20 ms of warm-up",
      "the 5 fastest and every policy's pick again, interleaved, 10 samples",
      "canary: on; a noisy case is measured again up to 2 more times",
      "- verdicts: 3 cases quiet (1 of them unstable: spread only), 1 noisy "
      "after re-measuring, 0 of unknown verdict",
      "| unstable (1) |",
      "1 contended",
      "Cases measured under interference",
      "- **op-a**: noisy",
      "after 3 measurements",
      "- **op-b**: quiet after 1 measurement; the plan's pick was contended",
      "| op-b | operator | 1x4096 | 3/3 |",
      "**noisy** (3)"};
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    cr_expect(strstr(md, want[i]), "report lacks '%s'", want[i]);
  const char *misses = strstr(md, "## Misses");
  cr_assert_not_null(misses);
  cr_expect_null(strstr(misses, "**op-b**"), "a contended case is no miss");
  cr_expect(strstr(md, "| contended |"), "op-b's regrets read contended");
  free(md);
  lm_eval_run_free(&run);
}

static run_result run_cli(const char *const *args) {
  const char *argv[32] = {LANEMAP_CLI};
  int n = 1;
  for (; args[n - 1]; n++)
    argv[n] = args[n - 1];
  argv[n] = NULL;
  char *out = tmp_path("stdout"), *errp = tmp_path("stderr");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addopen(&fa, 2, errp, O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  pid_t pid;
  int rc =
      posix_spawn(&pid, LANEMAP_CLI, &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  cr_assert_eq(rc, 0, "cannot start %s", LANEMAP_CLI);
  int status;
  cr_assert_eq(waitpid(pid, &status, 0), pid);
  free(last_out);
  free(last_err);
  run_result r = {WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                  last_out = slurp(out), last_err = slurp(errp)};
  return r;
}

static void write_records(const lm_eval_run *run, int from, int to,
                          const char *path) {
  lm_records rs;
  run_records(run, from, to, &rs);
  lm_error err = {0};
  cr_assert_eq(lm_records_write(path, &rs, &err), LM_OK, "%s", err.msg);
  lm_records_free(&rs);
}

Test(report, merging_shards_gives_the_unsharded_records) {
  lm_eval_run run;
  build_run(&run, 0);
  /* one set of records, so the timestamps agree */
  lm_records all;
  run_records(&run, 0, NSPECS, &all);
  lm_error err = {0};
  cr_assert_eq(lm_records_write(tmp_path("full.jsonl"), &all, &err), LM_OK);
  /* shard 0: op-a, op-b (a folder); shard 1: sh-a, sh-b; and op-b again */
  mkdir(tmp_path("shard0"), 0755);
  lm_records s0 = {all.r, 7, 0}, s1 = {all.r + 7, 5, 0}, s2 = {all.r + 4, 3, 0};
  cr_assert_eq(lm_records_write(tmp_path("shard0/records.jsonl"), &s0, &err),
               LM_OK);
  cr_assert_eq(lm_records_write(tmp_path("shard1.jsonl"), &s1, &err), LM_OK);
  cr_assert_eq(lm_records_write(tmp_path("again.jsonl"), &s2, &err), LM_OK);
  const char *args[] = {"merge",
                        "-o",
                        tmp_path("merged"),
                        tmp_path("shard0"),
                        tmp_path("shard1.jsonl"),
                        tmp_path("again.jsonl"),
                        NULL};
  run_result r = run_cli(args);
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "12 records from 3 files, 4 complete cases, 0 "
                          "incomplete cases kept, 0 duplicates dropped, 3 "
                          "records of cases taken from another file dropped"),
            "%s", r.out);
  char *merged = slurp(tmp_path("merged/records.jsonl"));
  char *full = slurp(tmp_path("full.jsonl"));
  cr_expect_str_eq(merged, full, "merged shards equal the unsharded run");
  free(merged);
  free(full);
  lm_records_free(&all);
  lm_eval_run_free(&run);
}

Test(report, merge_keeps_incomplete_cases_and_skips_a_cut_line) {
  lm_eval_run run;
  build_run(&run, 0);
  write_records(&run, 0, 1, tmp_path("a.jsonl"));
  lm_records part;
  run_records(&run, 1, 2, &part);
  lm_records two = {part.r, 2, 0};
  lm_error err = {0};
  cr_assert_eq(lm_records_write(tmp_path("b.jsonl"), &two, &err), LM_OK);
  FILE *f = fopen(tmp_path("b.jsonl"), "a");
  fputs("{\"schema\":\"lanemap.rec", f);
  fclose(f);
  const char *args[] = {
      "merge", "--out", tmp_path("m"), tmp_path("a.jsonl"), tmp_path("b.jsonl"),
      NULL};
  run_result r = run_cli(args);
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "6 records from 2 files, 1 complete case, 1 "
                          "incomplete case kept, 0 duplicates dropped, 0 "
                          "records of cases taken from another file dropped, "
                          "1 unterminated line skipped"),
            "%s", r.out);
  cr_expect(strstr(r.err, "b.jsonl: skipped an unterminated last line"), "%s",
            r.err);
  lm_records back;
  cr_assert_eq(lm_records_read(tmp_path("m/records.jsonl"), &back, &err),
               LM_OK);
  cr_expect_eq(back.n, 6);
  lm_records_free(&back);
  lm_records_free(&part);
  lm_eval_run_free(&run);
}

/* Records rewritten to another fingerprint or ISA stand for a shard on
 * another machine type (one machine cannot make two fingerprints). */
static void retag(lm_records *rs, const char *fp, const char *isa) {
  for (int i = 0; i < rs->n; i++) {
    if (fp) {
      free(rs->r[i].fingerprint);
      rs->r[i].fingerprint = strdup(fp);
    }
    if (isa) {
      free(rs->r[i].isa);
      rs->r[i].isa = strdup(isa);
    }
  }
}

Test(report, merge_refuses_records_of_two_isa_targets) {
  lm_eval_run run;
  build_run(&run, 0);
  lm_records a, b;
  run_records(&run, 0, 1, &a);
  run_records(&run, 1, 2, &b);
  retag(&b, NULL, "x86-64-v3");
  lm_error err = {0};
  cr_assert_eq(lm_records_write(tmp_path("a.jsonl"), &a, &err), LM_OK);
  cr_assert_eq(lm_records_write(tmp_path("b.jsonl"), &b, &err), LM_OK);
  const char *args[] = {"merge",       "--allow-mixed",     "-o",
                        tmp_path("m"), tmp_path("a.jsonl"), tmp_path("b.jsonl"),
                        NULL};
  run_result r = run_cli(args);
  cr_expect_eq(r.code, 2, "%s", r.out);
  cr_expect(strstr(r.err, "records of two ISA targets") &&
                strstr(r.err, "x86-64-v3"),
            "%s", r.err);
  cr_expect(access(tmp_path("m/records.jsonl"), F_OK) != 0,
            "a refused merge wrote its output");
  lm_records_free(&a);
  lm_records_free(&b);
  lm_eval_run_free(&run);
}

/* A case measured on two machine types is two measurements: with
 * --allow-mixed both are kept, each rebuilt as a case of its type; a case
 * measured twice on one type keeps one file's records. */
Test(report, a_case_measured_on_two_machine_types_is_kept_for_each) {
  lm_eval_run run;
  build_run(&run, 0);
  lm_records a, b, c;
  run_records(&run, 0, 1, &a);
  run_records(&run, 0, 1, &b); /* the same case again, on another type */
  run_records(&run, 0, 1, &c); /* and again on the first type */
  retag(&b, "00000000000000bb", NULL);
  lm_error err = {0};
  cr_assert_eq(lm_records_write(tmp_path("a.jsonl"), &a, &err), LM_OK);
  cr_assert_eq(lm_records_write(tmp_path("b.jsonl"), &b, &err), LM_OK);
  cr_assert_eq(lm_records_write(tmp_path("c.jsonl"), &c, &err), LM_OK);
  const char *args[] = {"merge",
                        "--allow-mixed",
                        "-o",
                        tmp_path("m"),
                        tmp_path("a.jsonl"),
                        tmp_path("b.jsonl"),
                        tmp_path("c.jsonl"),
                        NULL};
  run_result r = run_cli(args);
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "2 complete cases"), "%s", r.out);
  cr_expect(strstr(r.out, "machine type 00000000000000bb:"), "%s", r.out);
  lm_records back;
  cr_assert_eq(lm_records_read(tmp_path("m/records.jsonl"), &back, &err),
               LM_OK);
  cr_expect_eq(back.n, 2 * a.n, "one copy per machine type");
  lm_eval_case *cs = NULL;
  int n = 0;
  cr_assert_eq(lm_eval_cases_from_records(&back, &cs, &n, NULL, &err), LM_OK,
               "%s", err.msg);
  cr_assert_eq(n, 2);
  cr_expect_str_eq(cs[0].id, cs[1].id);
  cr_assert(cs[0].fingerprint && cs[1].fingerprint);
  cr_expect_str_neq(cs[0].fingerprint, cs[1].fingerprint);
  for (int i = 0; i < n; i++)
    lm_eval_case_free(&cs[i]);
  free(cs);
  lm_records_free(&back);
  lm_records_free(&a);
  lm_records_free(&b);
  lm_records_free(&c);
  lm_eval_run_free(&run);
}

/* A case's records all come from one file, the one holding most of them:
 * a cut-short copy of case 0 in the first file loses to the whole case in
 * the second, while case 1 comes from the first. */
Test(report, merge_takes_each_case_from_the_file_holding_most_of_it) {
  lm_eval_run run;
  build_run(&run, 0);
  lm_records c0, c1;
  run_records(&run, 0, 1, &c0);
  run_records(&run, 1, 2, &c1);
  cr_assert_gt(c0.n, 1);
  lm_error err = {0};
  /* a.jsonl: case 0's first record, then all of case 1; b.jsonl: case 0 */
  lm_records a = {0};
  a.r = calloc((size_t)(1 + c1.n), sizeof *a.r);
  a.r[0] = c0.r[0];
  memcpy(a.r + 1, c1.r, sizeof *a.r * (size_t)c1.n);
  a.n = 1 + c1.n;
  cr_assert_eq(lm_records_write(tmp_path("a.jsonl"), &a, &err), LM_OK);
  cr_assert_eq(lm_records_write(tmp_path("b.jsonl"), &c0, &err), LM_OK);
  free(a.r); /* its records belong to c0 and c1 */
  const char *args[] = {
      "merge", "-o", tmp_path("m"), tmp_path("a.jsonl"), tmp_path("b.jsonl"),
      NULL};
  run_result r = run_cli(args);
  cr_assert_eq(r.code, 0, "%s", r.err);
  cr_expect(strstr(r.out, "2 complete cases, 0 incomplete cases kept, 0 "
                          "duplicates dropped, 1 record of cases taken from "
                          "another file dropped"),
            "%s", r.out);
  lm_records back;
  cr_assert_eq(lm_records_read(tmp_path("m/records.jsonl"), &back, &err),
               LM_OK);
  cr_expect_eq(back.n, c0.n + c1.n);
  /* case 1 first (from a.jsonl), then case 0 whole (from b.jsonl) */
  for (int i = 0; i < c1.n; i++)
    cr_expect_str_eq(back.r[i].variant, c1.r[i].variant);
  for (int i = 0; i < c0.n; i++)
    cr_expect_str_eq(back.r[c1.n + i].variant, c0.r[i].variant);
  lm_records_free(&back);
  lm_records_free(&c0);
  lm_records_free(&c1);
  lm_eval_run_free(&run);
}

Test(report, merge_rejects_bad_input_with_exit_code_2) {
  lm_eval_run run;
  build_run(&run, 0);
  write_records(&run, 0, 1, tmp_path("ok.jsonl"));
  FILE *f = fopen(tmp_path("bad.jsonl"), "w");
  fputs("{\"schema\":\"lanemap.record/1\"}\n", f);
  fclose(f);
  const char *missing[] = {"merge", "-o", tmp_path("m"), tmp_path("none"),
                           NULL};
  run_result r = run_cli(missing);
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, "none: cannot open"), "%s", r.err);
  const char *bad[] = {
      "merge", "-o", tmp_path("m"), tmp_path("ok.jsonl"), tmp_path("bad.jsonl"),
      NULL};
  r = run_cli(bad);
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, "bad.jsonl:1: $.kernel: missing field"), "%s", r.err);
  struct stat sb;
  cr_expect_neq(stat(tmp_path("m/records.jsonl"), &sb), 0,
                "nothing is written on bad input");
  const char *no_out[] = {"merge", tmp_path("ok.jsonl"), NULL};
  r = run_cli(no_out);
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, "-o OUT_DIR"), "%s", r.err);
  const char *no_in[] = {"merge", "-o", tmp_path("m"), NULL};
  r = run_cli(no_in);
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, "no input records"), "%s", r.err);
  const char *unknown[] = {"merge", "--frobnicate", NULL};
  r = run_cli(unknown);
  cr_expect_eq(r.code, 2);
  cr_expect(strstr(r.err, "unknown option '--frobnicate'"), "%s", r.err);
  /* the output folder is a file: the system refuses */
  const char *out_file[] = {"merge", "-o", tmp_path("ok.jsonl"),
                            tmp_path("ok.jsonl"), NULL};
  r = run_cli(out_file);
  cr_expect_eq(r.code, 3);
  cr_expect(strstr(r.err, "cannot create the folder"), "%s", r.err);
  lm_eval_run_free(&run);
}

/* ---- plots ----------------------------------------------------------------
 */

static int on_path(const char *prog) {
  char cmd[256];
  snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", prog);
  return system(cmd) == 0;
}

static void expect_png(const char *name) {
  char *path = tmp_path(name);
  FILE *f = fopen(path, "rb");
  cr_assert_not_null(f, "%s was not drawn", name);
  unsigned char magic[8] = {0};
  size_t n = fread(magic, 1, 8, f);
  fclose(f);
  cr_expect_eq(n, 8);
  cr_expect_eq(memcmp(magic, "\x89PNG\r\n\x1a\n", 8), 0, "%s is not a PNG",
               name);
  /* drawn into NAME.part and renamed: nothing half-drawn is left */
  char part[64];
  snprintf(part, sizeof part, "%.50s.part", name);
  struct stat sb;
  cr_expect_neq(stat(tmp_path(part), &sb), 0, "%s left behind", part);
}

static void expect_file(const char *name) {
  struct stat sb;
  cr_expect_eq(stat(tmp_path(name), &sb), 0, "%s missing", name);
  cr_expect_gt(sb.st_size, 0, "%s empty", name);
}

/* gnuplot is a dependency (scripts/debian-packages.txt): without it the
 * plotting claims are skipped, and counted as skipped with the reason. */
#define SKIP_WITHOUT_GNUPLOT()                                                 \
  do {                                                                         \
    if (!on_path("gnuplot"))                                                   \
      cr_skip_test("gnuplot is not on PATH, so nothing can be drawn; it is "   \
                   "a dependency: apt-get install gnuplot-nox");               \
  } while (0)

Test(report, plots_are_pngs_when_gnuplot_is_present) {
  SKIP_WITHOUT_GNUPLOT();
  lm_eval_run run;
  build_run(&run, 1);
  lm_error err = {0};
  cr_assert_eq(lm_eval_plots(&run, tmpdir, &err), LM_OK, "%s", err.msg);
  expect_png("pred_vs_measured.png");
  expect_png("regret_cdf.png");
  expect_png("cases.png");
  char *cdf = slurp(tmp_path("regret_cdf.dat"));
  cr_expect(strstr(cdf, "# plan"), "%s", cdf);
  cr_expect(strstr(cdf, "0.3 1"), "the plan's worst regret closes its curve");
  free(cdf);
  lm_eval_run_free(&run);
}

Test(report, an_empty_run_still_plots_when_gnuplot_is_present) {
  SKIP_WITHOUT_GNUPLOT();
  lm_eval_run run = {0};
  run.isa = strdup("avx2");
  lm_error err = {0};
  cr_assert_eq(lm_eval_plots(&run, tmpdir, &err), LM_OK, "%s", err.msg);
  expect_png("pred_vs_measured.png");
  expect_png("regret_cdf.png");
  expect_png("cases.png");
  lm_eval_run_free(&run);
}

Test(report, plots_without_gnuplot_fail_clearly_and_keep_data_and_scripts) {
  lm_eval_run run;
  build_run(&run, 0);
  mkdir(tmp_path("emptybin"), 0755);
  setenv("PATH", tmp_path("emptybin"), 1);
  lm_error err = {0};
  cr_expect_eq(lm_eval_plots(&run, tmpdir, &err), LM_EFAIL);
  cr_expect(strstr(err.msg, "gnuplot not found: apt-get install gnuplot-nox"),
            "%s", err.msg);
  const char *files[] = {
      "pred_vs_measured.dat", "pred_vs_measured.gp", "regret_cdf.dat",
      "regret_cdf.gp",        "cases.dat",           "cases.gp"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++)
    expect_file(files[i]);
  lm_eval_run_free(&run);
}

Test(report, a_failing_gnuplot_reports_its_exit_status) {
  lm_eval_run run;
  build_run(&run, 0);
  mkdir(tmp_path("bin"), 0755);
  FILE *f = fopen(tmp_path("bin/gnuplot"), "w");
  fputs("#!/bin/sh\necho 'line 1: bad' >&2\nexit 3\n", f);
  fclose(f);
  chmod(tmp_path("bin/gnuplot"), 0755);
  setenv("PATH", tmp_path("bin"), 1);
  lm_error err = {0};
  cr_expect_eq(lm_eval_plots(&run, tmpdir, &err), LM_EFAIL);
  cr_expect(strstr(err.msg, "pred_vs_measured.gp: gnuplot exited with "
                            "status 3"),
            "%s", err.msg);
  char *log = slurp(tmp_path("gnuplot.log"));
  cr_expect(strstr(log, "line 1: bad"), "the log keeps gnuplot's words");
  free(log);
  lm_eval_run_free(&run);
}

Test(report, plots_into_a_missing_folder_are_a_system_error) {
  lm_eval_run run;
  build_run(&run, 0);
  lm_error err = {0};
  cr_expect_eq(lm_eval_plots(&run, tmp_path("none/x"), &err), LM_ESYS);
  lm_eval_run_free(&run);
}

/* A miss above 10% names the plan's mapping run with the best's workers
 * and split, and calls it a threads miss within 3% of the best. */
Test(report, a_miss_with_the_best_threads_close_to_the_best_is_a_threads_miss) {
  lm_eval_run run;
  build_run(&run, 0);
  lm_error err = {0};
  /* op-b: the plan takes v1 (260 ns) against the best v0 (200 ns) */
  lm_eval_case *c = &run.cases[1];
  const char *names[3] = {"x86-64-v3/w8/l1/glob=gather/t2/dyn4", "x86-64-v3/w8/l8/t2/static",
                          "x86-64-v3/w8/l8/t2/dyn4"};
  for (int j = 0; j < 3; j++) {
    free(c->v[j].variant);
    c->v[j].variant = strdup(names[j]);
  }
  c->v[2].measured = 500; /* the plan's mapping with the best's split: 150% off */
  cr_assert_eq(lm_eval_case_score(c, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_eval_report_write(&run, tmpdir, &err), LM_OK, "%s", err.msg);
  char *md = slurp(tmp_path("report.md"));
  const char *opb = strstr(md, "- **op-b**");
  cr_assert_not_null(opb, "%s", md);
  cr_expect(strstr(opb, "(`x86-64-v3/w8/l8/t2/dyn4`): 500 ns") &&
                strstr(opb, "the mapping misses too"),
            "%.700s", opb);
  free(md);
  c->v[2].measured = 205; /* 2.5% from the best */
  cr_assert_eq(lm_eval_case_score(c, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_eval_report_write(&run, tmpdir, &err), LM_OK, "%s", err.msg);
  md = slurp(tmp_path("report.md"));
  opb = strstr(md, "- **op-b**");
  cr_assert_not_null(opb, "%s", md);
  cr_expect(strstr(opb, "**a threads miss**"), "%.700s", opb);
  free(md);
  lm_eval_run_free(&run);
}
