/* Claims about the noise verdict (lanemap/noise.h) on measures given by
 * hand, so that none depends on the machine: each measure of interference
 * passes its limit alone and makes the verdict noisy; a spread alone makes
 * it unstable and refuses nothing; unknown measures are not judged; the
 * counters' resolution widens the busy limit on short comparisons; merged
 * verdicts keep the worse of each measure; the JSON form reads back what
 * it wrote and refuses what contradicts itself; the /proc differences are
 * what the counters say. */
#include <criterion/criterion.h>

#include <cjson/cJSON.h>

#include <math.h>
#include <string.h>
#include <unistd.h>

#include "lanemap/noise.h"

/* A verdict that passes no limit: every measure known and well inside. */
static lm_noise calm(void) {
  lm_noise n;
  lm_noise_clear(&n);
  n.spread = 0.02;
  n.canary = 0.03;
  n.other_cpus = 0.01;
  n.busiest_cpu = 0.6;
  n.steal = 0.0;
  n.wall_s = 10;
  n.ncpu = 2;
  n.load_start = 0.2, n.load_end = 0.3;
  n.running_start = 1, n.running_end = 2;
  return n;
}

static int starts_with(const char *s, const char *prefix) {
  return strncmp(s, prefix, strlen(prefix)) == 0;
}

static lm_noise judged(lm_noise n) {
  lm_noise_judge(&n, NULL);
  return n;
}

Test(noise, a_calm_verdict_is_quiet) {
  lm_noise n = judged(calm());
  cr_expect_eq(n.noisy, 0);
  cr_expect_eq(n.reasons, 0u);
  char buf[256];
  cr_expect_str_eq(lm_noise_describe(&n, NULL, buf, sizeof buf), "quiet");
  cr_expect_str_eq(lm_noise_verdict_name(&n), "quiet");
}

Test(noise, each_measure_of_interference_alone_makes_it_noisy) {
  lm_noise_limits l;
  lm_noise_limits_defaults(&l);
  lm_noise n;

  n = calm();
  n.canary = l.canary_max * 1.5;
  n = judged(n);
  cr_expect(n.noisy && n.reasons == LM_NOISE_CANARY, "canary: %#x", n.reasons);

  n = calm();
  n.other_cpus = 0.9;
  n = judged(n);
  cr_expect(n.noisy && n.reasons == LM_NOISE_BUSY, "busy: %#x", n.reasons);

  n = calm();
  n.steal = l.steal_max * 2;
  n = judged(n);
  cr_expect(n.noisy && n.reasons == LM_NOISE_STEAL, "steal: %#x", n.reasons);

  n = calm();
  n.wanted = 1000, n.missed = 10, n.late_ns = 2 * l.late_ns_max;
  n = judged(n);
  cr_expect(n.noisy && n.reasons == LM_NOISE_WORKERS, "late: %#x", n.reasons);

  n = calm();
  n.wanted = LM_NOISE_MIN_LAUNCHES, n.missed = LM_NOISE_MIN_LAUNCHES;
  n = judged(n);
  cr_expect(n.noisy && n.reasons == LM_NOISE_WORKERS, "none joined: %#x",
            n.reasons);

  n = calm();
  n.discord = l.discord_max * 2;
  n = judged(n);
  cr_expect(n.noisy && n.reasons == LM_NOISE_DISCORD, "discord: %#x",
            n.reasons);
  char buf[256];
  lm_noise_describe(&n, NULL, buf, sizeof buf);
  cr_expect(strstr(buf, "a variant timed twice") != NULL, "%s", buf);
  /* at its limit, and unknown, it is quiet */
  n.discord = l.discord_max;
  cr_expect_eq(judged(n).reasons, 0u);
  n.discord = NAN;
  cr_expect_eq(judged(n).reasons, 0u);
}

Test(noise, missed_slots_with_prompt_workers_are_not_interference) {
  /* short parallel work: the caller takes most chunks before a worker
   * arrives, and those that arrive do so at once */
  lm_noise n = calm();
  n.wanted = 40000, n.missed = 36000, n.late_ns = 0;
  n = judged(n);
  cr_expect_eq(n.noisy, 0, "reasons %#x", n.reasons);
  /* too few launches to call a pool that never joined starved */
  n = calm();
  n.wanted = LM_NOISE_MIN_LAUNCHES - 1, n.missed = LM_NOISE_MIN_LAUNCHES - 1;
  n = judged(n);
  cr_expect_eq(n.noisy, 0, "reasons %#x", n.reasons);
}

Test(noise, a_spread_alone_makes_it_unstable_not_noisy) {
  lm_noise n = calm();
  n.spread = 0.3;
  n = judged(n);
  cr_expect_eq(n.reasons, (unsigned)LM_NOISE_SPREAD);
  cr_expect_eq(n.noisy, 0);
  char buf[256];
  lm_noise_describe(&n, NULL, buf, sizeof buf);
  cr_expect(starts_with(buf, "unstable: median spread 30.0% > 10%"), "%s",
            buf);
  cr_expect_str_eq(lm_noise_verdict_name(&n), "unstable");
  /* with interference it is noisy, and both are named */
  n.other_cpus = 1.0;
  n = judged(n);
  cr_expect(n.noisy);
  lm_noise_describe(&n, NULL, buf, sizeof buf);
  cr_expect(starts_with(buf, "noisy: other processes used 1.00 CPU > 0.05"),
            "%s", buf);
  cr_expect(strstr(buf, "median spread 30.0%"), "%s", buf);
}

Test(noise, unknown_measures_are_not_judged) {
  lm_noise n;
  lm_noise_clear(&n);
  n = judged(n);
  cr_expect_eq(n.noisy, 0);
  cr_expect_eq(n.reasons, 0u);
}

Test(noise, the_busy_limit_widens_by_the_tick_resolution) {
  double hz = (double)sysconf(_SC_CLK_TCK);
  lm_noise n = calm();
  /* 0.1 s on 2 CPUs: two ticks a CPU are 0.4 CPU at 100 Hz */
  n.wall_s = 0.1;
  n.other_cpus = 0.05 + 2 * (2.0 / hz) / 0.1 - 0.01;
  n = judged(n);
  cr_expect_eq(n.noisy, 0, "other %.3f judged noisy", n.other_cpus);
  n.other_cpus += 0.02;
  n = judged(n);
  cr_expect(n.noisy && (n.reasons & LM_NOISE_BUSY));
  /* over 10 s the same measure is interference */
  n = calm();
  n.other_cpus = 0.2;
  n = judged(n);
  cr_expect(n.reasons & LM_NOISE_BUSY);
}

Test(noise, limits_can_be_changed) {
  lm_noise_limits l;
  lm_noise_limits_defaults(&l);
  l.other_cpus_max = 2.0;
  lm_noise n = calm();
  n.other_cpus = 0.9;
  lm_noise_judge(&n, &l);
  cr_expect_eq(n.noisy, 0);
}

Test(noise, merging_keeps_the_worse_of_each_measure) {
  lm_noise a = judged(calm()), b = calm();
  b.canary = 0.5;
  b.other_cpus = 0.002;
  b.wanted = 10, b.missed = 4, b.late_ns = 1000;
  b.wall_s = 5;
  b = judged(b);
  lm_noise_merge(&a, &b);
  cr_expect(a.noisy);
  cr_expect_eq(a.reasons, (unsigned)LM_NOISE_CANARY);
  cr_expect_float_eq(a.canary, 0.5, 1e-12);
  cr_expect_float_eq(a.other_cpus, 0.01, 1e-12);
  cr_expect_float_eq(a.wall_s, 15, 1e-12);
  cr_expect_eq(a.wanted, 10);
  cr_expect_eq(a.missed, 4);
  cr_expect_float_eq(a.late_ns, 1000, 1e-9);
  /* a NAN measure takes the other's */
  lm_noise c;
  lm_noise_clear(&c);
  lm_noise_merge(&c, &b);
  cr_expect_float_eq(c.canary, 0.5, 1e-12);
}

Test(noise, free_cpus_subtract_the_others) {
  lm_noise n = calm();
  n.ncpu = 2, n.other_cpus = 0.75;
  cr_expect_float_eq(lm_noise_free_cpus(&n), 1.25, 1e-12);
  n.other_cpus = NAN;
  cr_expect_float_eq(lm_noise_free_cpus(&n), 2, 1e-12);
}

Test(noise, a_parallel_variant_is_contended_only_past_the_resolution) {
  double hz = (double)sysconf(_SC_CLK_TCK);
  lm_noise n = calm();
  n.ncpu = 2, n.wall_s = 10; /* resolution 2 * 2 / hz / 10 CPU */
  double res = 2 * 2 / hz / 10;
  cr_expect_float_eq(lm_noise_resolution_cpus(&n), res, 1e-12);
  n.other_cpus = 0.9;
  cr_expect(lm_noise_contended(&n, 2));
  cr_expect(!lm_noise_contended(&n, 1), "one worker needs one CPU");
  /* a short comparison's counters read a tick or two: 0.09 CPU over 0.2 s
   * on 2 CPUs is within the resolution (0.2 CPU at 100 Hz) */
  n.wall_s = 0.2, n.other_cpus = 0.09;
  cr_expect(!lm_noise_contended(&n, 2));
  n.other_cpus = 0.09 + lm_noise_resolution_cpus(&n);
  cr_expect(lm_noise_contended(&n, 2));
  /* 4 workers on 2 CPUs are always short of CPUs */
  n.other_cpus = 0;
  cr_expect(lm_noise_contended(&n, 4));
  n.ncpu = 0;
  cr_expect(!lm_noise_contended(&n, 4), "unknown CPU count");
}

Test(noise, reason_names_round_trip) {
  for (unsigned bit = 1; bit & LM_NOISE_ALL; bit <<= 1)
    cr_expect_eq(lm_noise_reason_bit(lm_noise_reason_name(bit)), bit);
  cr_expect_eq(lm_noise_reason_bit("loud"), 0u);
  cr_expect_eq(lm_noise_reason_bit(NULL), 0u);
  cr_expect_eq(LM_NOISE_INTERFERENCE & LM_NOISE_SPREAD, 0u);
}

static lm_noise round_trip(const lm_noise *n) {
  cJSON *j = lm_noise_to_json(n);
  cr_assert_not_null(j);
  char *text = cJSON_PrintUnformatted(j); /* through text, as a file does */
  cJSON_Delete(j);
  cJSON *back = cJSON_Parse(text);
  cr_assert_not_null(back, "%s", text);
  lm_noise out;
  lm_error err = {0};
  cr_assert_eq(lm_noise_from_json(back, &out, &err), LM_OK, "%s: %s", text,
               err.msg);
  cJSON_Delete(back);
  free(text);
  return out;
}

static void expect_same(const lm_noise *a, const lm_noise *b) {
  cr_expect_eq(a->noisy, b->noisy);
  cr_expect_eq(a->reasons, b->reasons);
  const double x[] = {a->spread, a->canary, a->other_cpus, a->busiest_cpu,
                      a->steal, a->load_start, a->load_end, a->late_ns,
                      a->wall_s};
  const double y[] = {b->spread, b->canary, b->other_cpus, b->busiest_cpu,
                      b->steal, b->load_start, b->load_end, b->late_ns,
                      b->wall_s, b->discord};
  for (size_t i = 0; i < sizeof x / sizeof *x; i++)
    cr_expect((isnan(x[i]) && isnan(y[i])) || x[i] == y[i],
              "measure %zu: %.17g then %.17g", i, x[i], y[i]);
  cr_expect_eq(a->running_start, b->running_start);
  cr_expect_eq(a->running_end, b->running_end);
  cr_expect_eq(a->wanted, b->wanted);
  cr_expect_eq(a->missed, b->missed);
  cr_expect_eq(a->ncpu, b->ncpu);
}

Test(noise, json_reads_back_what_it_wrote) {
  lm_noise q = judged(calm());
  q.spread = 0.1234567890123; /* every digit survives */
  lm_noise back = round_trip(&q);
  expect_same(&q, &back);

  lm_noise u = calm();
  u.spread = 0.4;
  u = judged(u);
  back = round_trip(&u);
  expect_same(&u, &back);

  lm_noise n = calm();
  n.other_cpus = 1.07, n.canary = 0.8, n.steal = 0.2, n.discord = 0.9;
  n.wanted = 500, n.missed = 500, n.late_ns = NAN;
  n = judged(n);
  cr_assert(n.noisy);
  back = round_trip(&n);
  expect_same(&n, &back);

  lm_noise none;
  lm_noise_clear(&none);
  none.ncpu = 0;
  back = round_trip(&none);
  expect_same(&none, &back);
}

static lm_status from_text(const char *text, lm_error *err) {
  cJSON *j = cJSON_Parse(text);
  cr_assert_not_null(j, "%s", text);
  lm_noise n;
  lm_status s = lm_noise_from_json(j, &n, err);
  cJSON_Delete(j);
  return s;
}

Test(noise, json_refuses_what_contradicts_itself) {
  static const struct {
    const char *text, *key;
  } bad[] = {
      {"[]", "not an object"},
      {"{\"reasons\": []}", "\"verdict\""},
      {"{\"verdict\": \"loud\", \"reasons\": []}", "\"verdict\""},
      {"{\"verdict\": \"quiet\", \"reasons\": [\"busy\"]}", "\"reasons\""},
      {"{\"verdict\": \"noisy\", \"reasons\": []}", "\"reasons\""},
      {"{\"verdict\": \"unstable\", \"reasons\": [\"busy\"]}", "\"reasons\""},
      {"{\"verdict\": \"noisy\", \"reasons\": [\"loud\"]}", "\"reasons\""},
      {"{\"verdict\": \"noisy\", \"reasons\": \"busy\"}", "\"reasons\""},
      {"{\"verdict\": \"quiet\", \"reasons\": [], \"spread\": \"x\"}",
       "\"spread\""},
      {"{\"verdict\": \"quiet\", \"reasons\": [], \"load\": [1]}", "\"load\""},
      {"{\"verdict\": \"quiet\", \"reasons\": [], \"workers\": {\"wanted\": 2, "
       "\"missed\": 3}}",
       "\"workers\""},
      {"{\"verdict\": \"quiet\", \"reasons\": [], \"workers\": 7}",
       "\"workers\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    lm_error err = {0};
    cr_expect_eq(from_text(bad[i].text, &err), LM_EINPUT, "%s", bad[i].text);
    cr_expect(strstr(err.msg, bad[i].key), "%s: %s", bad[i].text, err.msg);
  }
  /* a verdict written when a spread alone decided reads as it was */
  lm_error err = {0};
  cr_expect_eq(from_text("{\"verdict\": \"noisy\", \"reasons\": [\"spread\"], "
                         "\"spread\": 0.3, \"future_measure\": 1}",
                         &err),
               LM_OK, "%s", err.msg);
}

/* Two samples of a 2-CPU machine made by hand, wall_s apart, every
 * counter zero. */
static void two_samples(lm_sysload *a, lm_sysload *b, double wall_s) {
  memset(a, 0, sizeof *a);
  memset(b, 0, sizeof *b);
  a->ok = b->ok = 1;
  a->ncpu = b->ncpu = 2;
  a->cpu = b->cpu = -1;
  a->t_ns = 1e9, b->t_ns = 1e9 + wall_s * 1e9;
}

/* 2 CPUs over 2 s. */
Test(noise, sysload_differences_are_what_the_counters_say) {
  lm_sysload a, b;
  two_samples(&a, &b, 2);
  a.busy_s = 10, b.busy_s = 13.5;  /* 3.5 CPU-seconds busy */
  a.self_s = 4, b.self_s = 5.5;    /* 1.5 of them ours */
  a.total_s = 100, b.total_s = 104;
  a.steal_s = 1, b.steal_s = 1.2;
  a.cpu_busy_s[0] = 5, b.cpu_busy_s[0] = 6.9;
  a.cpu_busy_s[1] = 5, b.cpu_busy_s[1] = 6.6;
  lm_sysload_delta d;
  lm_sysload_diff(&a, &b, &d);
  cr_expect_float_eq(d.wall_s, 2, 1e-12);
  cr_expect_float_eq(d.other_cpus, 1.0, 1e-12);
  cr_expect_float_eq(d.busiest_cpu, 0.95, 1e-12);
  cr_expect_float_eq(d.steal, 0.05, 1e-12);
  /* our own time above the machine's (counters read a tick apart) is not
   * negative load */
  b.self_s = 9;
  lm_sysload_diff(&a, &b, &d);
  cr_expect_float_eq(d.other_cpus, 0, 1e-12);
  /* an unreadable /proc gives unknown measures, not zeros */
  b.ok = 0;
  lm_sysload_diff(&a, &b, &d);
  cr_expect(isnan(d.other_cpus) && isnan(d.steal));
}

Test(noise, the_own_cpu_measure_subtracts_the_thread) {
  lm_sysload a, b;
  two_samples(&a, &b, 1);
  a.cpu_busy_s[1] = 3, b.cpu_busy_s[1] = 3.98; /* CPU 1 busy 0.98 s */
  a.thread_s = 1, b.thread_s = 1.9;            /* 0.9 s of it ours */
  a.cpu = b.cpu = 1;
  lm_sysload_delta d;
  lm_sysload_diff(&a, &b, &d);
  cr_expect_float_eq(d.other_here, 0.08, 1e-9);
  b.cpu = 0; /* moved: no own CPU to judge */
  lm_sysload_diff(&a, &b, &d);
  cr_expect(isnan(d.other_here));
}

Test(noise, busy_here_judges_the_own_cpu_only) {
  lm_noise_limits l;
  lm_noise_limits_defaults(&l);
  l.busy_here = 1;
  lm_noise n = calm();
  n.other_cpus = 1.0; /* a neighbour on the other core */
  n.other_here = 0.01;
  lm_noise_judge(&n, &l);
  cr_expect_eq(n.noisy, 0, "reasons %#x", n.reasons);
  n.other_here = 0.5; /* and one on this core */
  lm_noise_judge(&n, &l);
  cr_expect(n.noisy && (n.reasons & LM_NOISE_BUSY));
  char buf[256];
  lm_noise_describe(&n, &l, buf, sizeof buf);
  cr_expect(strstr(buf, "0.50 of this CPU"), "%s", buf);
  /* unknown own CPU: back to every CPU */
  n.other_here = NAN;
  lm_noise_judge(&n, &l);
  cr_expect(n.reasons & LM_NOISE_BUSY);
  /* the machine scope ignores other_here */
  l.busy_here = 0;
  n.other_cpus = 0.01, n.other_here = 0.9;
  lm_noise_judge(&n, &l);
  cr_expect_eq(n.noisy, 0);
}

Test(noise, the_machine_can_be_read) {
  lm_sysload a, b;
  lm_sysload_read(&a);
  if (!a.ok)
    cr_skip_test("/proc is not readable here");
  cr_expect_geq(a.ncpu, 1);
  cr_expect_geq(a.running, 1);
  volatile double x = 0;
  for (int i = 0; i < 20000000; i++)
    x += i;
  lm_sysload_read(&b);
  cr_expect_gt(b.self_s + 1e-9, a.self_s);
  lm_sysload_delta d;
  lm_sysload_diff(&a, &b, &d);
  cr_expect(d.other_cpus >= 0 && d.other_cpus <= a.ncpu, "%g", d.other_cpus);
}
