/* lanemap noise: is a measurement fit to decide with?
 *
 * Every comparison the timing harness makes (lanemap/timing.h) carries a
 * noise verdict built from what it can observe about its own samples and
 * the machine around them:
 *
 *   - the spread of every entry across rounds;
 *   - a canary: a fixed reference loop timed as one more entry of every
 *     comparison, whose time does not depend on anything the compared
 *     entries do, so its drift across rounds is interference;
 *   - the CPU time other processes used while it ran, from the per-CPU
 *     counters of /proc/stat minus this process's own time from
 *     /proc/self/stat (the load average lags by a minute and cannot decide);
 *   - the hypervisor's steal time, from /proc/stat;
 *   - the load average and the runnable tasks, at the start and the end;
 *   - for parallel launches, whether the pool's workers ran chunks and how
 *     late they joined (lm_pool_stats).
 *
 * A verdict is noisy when a measure of interference (canary, other
 * processes, steal, pool workers) passes its limit.  A spread above its
 * limit alone makes the verdict "unstable", pyperf's word: it is reported
 * but refuses nothing, because short samples on a quiet virtual machine
 * pass it without any interference (docs/timing.md).  Every limit is a
 * named default below with its source, and lm_noise_limits can change
 * them.  docs/timing.md ("Noise verdicts") has the measured quiet and
 * loaded figures behind each. */
#ifndef LANEMAP_NOISE_H
#define LANEMAP_NOISE_H

#include <stddef.h>
#include <stdint.h>

#include "lanemap/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the machine's state ------------------------------------------------ */

/* What /proc says at one instant.  Counters are cumulative; a measure is
 * the difference of two samples. */
#define LM_SYSLOAD_MAX_CPUS 1024
typedef struct lm_sysload {
  double t_ns;           /* lm_now_ns() when read */
  int ok;                /* 1 if /proc/stat and /proc/self/stat were read */
  int ncpu;              /* CPUs in /proc/stat ("cpuN" lines) */
  double busy_s;         /* all CPUs: user+nice+system+irq+softirq, seconds */
  double steal_s;        /* all CPUs: steal, seconds */
  double total_s;        /* all CPUs: every field but guest, seconds */
  double cpu_busy_s[LM_SYSLOAD_MAX_CPUS]; /* per CPU busy, seconds */
  double self_s;         /* this process, all threads: utime+stime, seconds */
  double load1;          /* /proc/loadavg 1-minute load */
  int running;           /* /proc/stat procs_running (includes this thread) */
  double thread_s;       /* the calling thread: utime+stime, seconds */
  /* The CPU the calling thread is pinned to, or -1: set by the caller
   * (lm_sysload_read leaves -1), for lm_sysload_delta.other_here. */
  int cpu;
} lm_sysload;

/* Reads the state now.  Never fails: where /proc is missing s->ok is 0 and
 * every measure derived from it is NAN. */
void lm_sysload_read(lm_sysload *s);

/* Between two samples a (earlier) and b: */
typedef struct lm_sysload_delta {
  double wall_s;
  double other_cpus; /* CPUs' worth of busy time not spent by this process:
                        (busy - self) / wall; NAN if unknown */
  double busiest_cpu; /* the busiest CPU's busy fraction (any process) */
  double steal;      /* steal / total time, 0..1; NAN if unknown */
  /* Other processes on the CPU both samples' thread was pinned to (a.cpu
   * == b.cpu >= 0): that CPU's busy time minus the thread's own, over the
   * wall time; NAN when unpinned.  Time the process's other threads spent
   * there counts as other. */
  double other_here;
} lm_sysload_delta;
void lm_sysload_diff(const lm_sysload *a, const lm_sysload *b,
                     lm_sysload_delta *out);

/* The process that used the most CPU time between two scans of /proc
 * (this process excluded): what a "busy" verdict names. */
typedef struct lm_proc_scan lm_proc_scan;
lm_give lm_proc_scan *lm_proc_scan_take(void); /* NULL if /proc is absent */
typedef struct lm_proc_top {
  int pid;         /* 0 if none used CPU time */
  char comm[32];   /* its name, from /proc/PID/stat */
  double cpus;     /* its CPU time / wall time between the scans */
} lm_proc_top;
/* Compares a later scan b with a; fills top (pid 0 when nothing ran). */
void lm_proc_scan_top(lm_keep const lm_proc_scan *a,
                      lm_keep const lm_proc_scan *b, lm_proc_top *top);
void lm_proc_scan_free(lm_take lm_proc_scan *s);

/* ---- the verdict -------------------------------------------------------- */

/* Which measures passed their limit (bits of lm_noise.reasons). */
enum {
  LM_NOISE_SPREAD = 1u << 0,  /* median entry spread above spread_max */
  LM_NOISE_CANARY = 1u << 1,  /* canary drift above canary_max */
  LM_NOISE_BUSY = 1u << 2,    /* other processes above other_cpus_max */
  LM_NOISE_STEAL = 1u << 3,   /* steal above steal_max */
  LM_NOISE_WORKERS = 1u << 4, /* pool workers joined late or not at all */
  LM_NOISE_DISCORD = 1u << 5, /* a variant timed twice disagreed with itself
                                 by more than discord_max */
  LM_NOISE_ALL = (1u << 6) - 1,
  /* the measures of interference: any of them makes a verdict noisy (a
   * discord is one whose cause the other measures did not see) */
  LM_NOISE_INTERFERENCE = LM_NOISE_ALL & ~LM_NOISE_SPREAD,
};

typedef struct lm_noise_limits {
  /* Median over the entries of (p75 - p25) / p50.  pyperf calls a
   * benchmark unstable when its standard deviation passes 10% of the mean;
   * the interquartile range of a normal sample is 1.35 standard
   * deviations, so 0.10 here is stricter than pyperf's. */
  double spread_max;
  /* Canary drift across rounds: (second slowest - fastest) / median.  The
   * second slowest, not the slowest: one round held up by a timer or a
   * kernel thread is a hiccup that the minimum-based estimates ignore, and
   * quiet quick calibrations on the project's 2-core VM saw such single
   * rounds at +64% and +248%; interference holds up several rounds.  Quiet
   * comparisons of 5 rounds of 2 ms samples gave 1-10%; a process sharing
   * the core gives tens to hundreds of percent, so 0.15. */
  double canary_max;
  /* Other processes' CPU time, in CPUs.  0.05 is the issue tracker's and
   * docs' definition of a quiet machine: no other process above 5% of a
   * CPU.  The limit is widened by the counters' resolution, two ticks per
   * CPU over the comparison's wall time.  With busy_here set, it applies
   * to other_here, the timing thread's own CPU (widened by two ticks of
   * that one CPU), and other_cpus is left to lm_noise_contended. */
  double other_cpus_max;
  /* 0: busy judges every CPU (other_cpus): what a calibration needs, whose
   * profile prices parallel launches too.  1: busy judges the timing
   * thread's own CPU when it is known (other_here): what a comparison
   * whose parallel entries are marked contended on their own needs, so
   * that a neighbour on another core flags only those (lanemap evaluate). */
  int busy_here;
  /* Steal / total time.  The same 5%: a hypervisor that takes that much
   * from the guest is another tenant on the core. */
  double steal_max;
  /* Parallel launches: the mean delay from a launch to a worker's first
   * chunk.  A spinning worker joins within about 1 µs and a parked one
   * within 66-100 µs (docs/runtime.md); one that waits for a scheduler
   * quantum behind another process joins milliseconds late.  Worker slots
   * that ran no chunk are recorded but judged only when no worker joined
   * at all over at least LM_NOISE_MIN_LAUNCHES launches: on short work the
   * caller often takes every chunk before a prompt worker arrives (quiet
   * fork-join calibrations: 80-90% of slots missed, joined 0 µs late). */
  double late_ns_max; /* 500 µs */
  /* A variant timed in two comparisons of one measurement (a held-out
   * case's screening and confirmation rounds): max(a/b, b/a) - 1 of its
   * two medians.  Only variants chosen before any timing are judged (the
   * screening's fastest are biased low by their selection), so the two
   * medians estimate one time and differ by noise alone. */
  double discord_max;
} lm_noise_limits;

#define LM_NOISE_MIN_LAUNCHES 100

/* discord_max's default.  docs/evaluation.md, "Discord": on a quick
 * held-out run of the project's 2-core VM, the policy picks timed in
 * screening and again in confirmation disagreed by p95 18.5% and p99
 * 28.7%; 25% re-measures a case for about one pick in 50. */
#define LM_NOISE_DISCORD_MAX 0.25

/* The defaults above. */
void lm_noise_limits_defaults(lm_noise_limits *l);

typedef struct lm_noise {
  int noisy;         /* 1 if a measure of interference passed its limit
                        (reasons & LM_NOISE_INTERFERENCE) */
  unsigned reasons;  /* LM_NOISE_* bits */
  double spread;     /* median over entries of their spread */
  double canary;     /* canary drift; NAN without a canary */
  double other_cpus; /* other processes' CPUs while timing; NAN unknown */
  double other_here; /* other processes on the timing thread's own CPU
                        (lm_sysload_delta.other_here); NAN unknown */
  double busiest_cpu;
  double steal;      /* NAN unknown */
  double load_start, load_end;  /* 1-minute load average */
  int running_start, running_end; /* runnable tasks (procs_running) */
  /* Parallel launches of the pool watched (lm_timing_opts.pool): worker
   * slots asked for, slots that ran no chunk, mean delay to the first
   * chunk.  wanted 0 when none ran. */
  int64_t wanted, missed;
  double late_ns;
  double discord;    /* the largest discord judged (discord_max); NAN none */
  double wall_s;     /* wall time of the comparison */
  int ncpu;          /* CPUs this process may run on (affinity) */
} lm_noise;

/* CPUs left for this process while the verdict's comparison ran: ncpu
 * minus other_cpus (ncpu when other_cpus is unknown). */
#define LM_NOISE_FREE_SLACK 0.05
double lm_noise_free_cpus(const lm_noise *n);

/* The resolution of other_cpus: the /proc counters tick at 100 Hz, and
 * each CPU's may be a tick off at either end, so 2 ticks per CPU over the
 * comparison's wall time (0 when the wall time is unknown).  The busy
 * limit is widened by it. */
double lm_noise_resolution_cpus(const lm_noise *n);

/* 1 if a variant with `workers` > 1 was measured with fewer CPUs free
 * than it has workers: free CPUs, given the counters' resolution, below
 * workers - LM_NOISE_FREE_SLACK (0.05, a quiet machine's limit).  0 for
 * workers <= 1 or an unknown CPU count. */
int lm_noise_contended(const lm_noise *n, int workers);

/* A verdict with nothing measured: quiet, every measure NAN or 0. */
void lm_noise_clear(lm_noise *n);

/* Sets n->reasons and n->noisy from its measures and limits l (NULL: the
 * defaults).  Measures that are NAN are not judged. */
void lm_noise_judge(lm_noise *n, const lm_noise_limits *l);

/* Folds b into a: a is noisy if either is, each measure keeps the worse
 * value, wall times add.  For summaries over many comparisons. */
void lm_noise_merge(lm_noise *a, const lm_noise *b);

/* "quiet", "unstable" (spread alone passed its limit) or "noisy". */
const char *lm_noise_verdict_name(const lm_noise *n);

/* "quiet", "unstable: median spread 14.6% > 10%" or "noisy: other
 * processes used 0.98 CPU > 0.05, canary drift 32.3% > 15%" into buf
 * (always terminated).  Returns buf. */
const char *lm_noise_describe(const lm_noise *n, const lm_noise_limits *l,
                              char *buf, size_t size);

/* Name of one reason bit: "spread", "canary", "busy", "steal", "workers",
 * "discord". */
const char *lm_noise_reason_name(unsigned bit);
/* The reason bit called name, 0 if none is. */
unsigned lm_noise_reason_bit(const char *name);

/* The verdict as a JSON object {"verdict": "quiet"|"unstable"|"noisy",
 * "reasons": [names], "spread", "canary", "other_cpus", "busiest_cpu",
 * "steal", "load": [start, end], "running": [start, end], "workers":
 * {"wanted", "missed", "late_ns"} (only when wanted > 0), "wall_s"};
 * unknown measures are left out.  NULL when out of memory. */
typedef struct cJSON cJSON;
lm_give cJSON *lm_noise_to_json(const lm_noise *n);
/* Reads what lm_noise_to_json wrote (missing measures NAN, unknown keys
 * ignored, so later versions may add measures).  LM_EINPUT naming the bad
 * key. */
lm_status lm_noise_from_json(const cJSON *j, lm_noise *out, lm_error *err);

/* The canary: a dependent chain of integer multiply-adds, about 1 ns an
 * iteration, touching no memory, so that nothing the compared entries
 * leave in caches or predictors changes its time.  run(ctx, reps) as in
 * lm_timed; ctx is ignored. */
void lm_noise_canary_run(void *ctx, int64_t reps);

/* Its throughput-bound counterpart: eight independent chains of 8-lane
 * float multiply-adds, 16 rounds a rep, in registers: the vector ports
 * set its time, so another tenant of the physical core (a hyperthread
 * sibling on the host) slows it where the canary holds still
 * (bench_canaries, docs/timing.md).  lm_pool_skew_probe's block.
 * run(ctx, reps) as in lm_timed; ctx is ignored. */
void lm_noise_vector_run(void *ctx, int64_t reps);

#ifdef __cplusplus
}
#endif
#endif
