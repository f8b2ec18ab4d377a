/* Noise verdicts: what a comparison can observe about its own samples and
 * the machine around it, and the judgement of whether it is fit to decide
 * with (lanemap/noise.h).
 *
 * The machine is read from /proc.  /proc/stat gives every CPU's busy,
 * idle and steal time in clock ticks (USER_HZ, 100 a second) and the
 * number of runnable tasks; /proc/self/stat gives this process's own
 * user and system time, all threads included.  Busy time on every CPU
 * minus our own is what other processes (and the kernel on their behalf)
 * used: a measure that follows a neighbour within a tick, where the load
 * average lags by a minute.  A tick is 10 ms, so over a comparison of
 * wall time w the measure is good to about 0.01 * ncpu / w CPUs; the
 * harness's comparisons last a second or more. */
#define _GNU_SOURCE
#include "lanemap/noise.h"

#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "backend/affinity.h"
#include "lanemap/json.h"
#include "lanemap/timing.h"

/* ---- /proc -------------------------------------------------------------- */

static double ticks_per_s(void) {
  static double hz = 0;
  if (hz <= 0) {
    long t = sysconf(_SC_CLK_TCK);
    hz = t > 0 ? (double)t : 100.0;
  }
  return hz;
}

/* Reads a whole small /proc file into buf; length or -1. */
static long read_proc(const char *path, char *buf, size_t size) {
  FILE *f = fopen(path, "re");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, size - 1, f);
  fclose(f);
  buf[n] = 0;
  return (long)n;
}

/* utime + stime of a /proc/PID/stat line, in ticks, and its comm; -1 if the
 * line cannot be parsed.  comm may hold spaces and parentheses, so the
 * fields start after the last ')'. */
static double stat_cpu_ticks(const char *line, char *comm, size_t ncomm) {
  const char *open = strchr(line, '(');
  const char *close = strrchr(line, ')');
  if (!open || !close || close < open)
    return -1;
  if (comm) {
    size_t len = (size_t)(close - open - 1);
    if (len >= ncomm)
      len = ncomm - 1;
    memcpy(comm, open + 1, len);
    comm[len] = 0;
  }
  /* fields 3.. after ") ": state ppid pgrp session tty tpgid flags minflt
   * cminflt majflt cmajflt utime stime */
  unsigned long long ut = 0, stt = 0;
  if (sscanf(close + 1,
             " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
             &stt) != 2)
    return -1;
  return (double)ut + (double)stt;
}

void lm_sysload_read(lm_sysload *s) {
  memset(s, 0, sizeof *s);
  s->t_ns = lm_now_ns();
  s->busy_s = s->steal_s = s->total_s = s->self_s = s->load1 = NAN;
  s->running = -1;
  s->cpu = -1;
  const double hz = ticks_per_s();
  /* /proc/stat: one line per CPU; 1024 CPUs fit in 200 KiB */
  size_t cap = 256 * 1024;
  char *buf = malloc(cap);
  int have_stat = 0, have_self = 0;
  if (buf && read_proc("/proc/stat", buf, cap) > 0) {
    double busy = 0, steal = 0, total = 0;
    for (char *line = buf; line && *line;) {
      char *next = strchr(line, '\n');
      if (next)
        *next++ = 0;
      unsigned long long f[10] = {0};
      int cpu = -1, got = 0;
      if (strncmp(line, "cpu", 3) == 0 && isdigit((unsigned char)line[3])) {
        got = sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu",
                     &cpu, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6],
                     &f[7]);
      } else if (strncmp(line, "procs_running ", 14) == 0) {
        s->running = atoi(line + 14);
      }
      if (got >= 8 && cpu >= 0) {
        /* user nice system idle iowait irq softirq steal */
        double b = (double)(f[0] + f[1] + f[2] + f[5] + f[6]);
        double st = got >= 9 ? (double)f[7] : 0;
        double all = b + (double)(f[3] + f[4]) + st;
        busy += b;
        steal += st;
        total += all;
        if (cpu < LM_SYSLOAD_MAX_CPUS) {
          s->cpu_busy_s[cpu] = b / hz;
          if (cpu + 1 > s->ncpu)
            s->ncpu = cpu + 1;
        }
        have_stat = 1;
      }
      line = next;
    }
    s->busy_s = busy / hz;
    s->steal_s = steal / hz;
    s->total_s = total / hz;
  }
  char line[1024];
  if (read_proc("/proc/self/stat", line, sizeof line) > 0) {
    double t = stat_cpu_ticks(line, NULL, 0);
    if (t >= 0) {
      s->self_s = t / hz;
      have_self = 1;
    }
  }
  if (read_proc("/proc/thread-self/stat", line, sizeof line) > 0) {
    double t = stat_cpu_ticks(line, NULL, 0);
    s->thread_s = t >= 0 ? t / hz : NAN;
  } else {
    s->thread_s = NAN;
  }
  if (read_proc("/proc/loadavg", line, sizeof line) > 0)
    s->load1 = strtod(line, NULL);
  free(buf);
  s->ok = have_stat && have_self;
  if (!have_stat)
    s->busy_s = s->steal_s = s->total_s = NAN;
}

void lm_sysload_diff(const lm_sysload *a, const lm_sysload *b,
                     lm_sysload_delta *out) {
  out->wall_s = (b->t_ns - a->t_ns) / 1e9;
  out->other_cpus = out->busiest_cpu = out->steal = out->other_here = NAN;
  if (!a->ok || !b->ok || !(out->wall_s > 0))
    return;
  if (a->cpu >= 0 && a->cpu == b->cpu && a->cpu < a->ncpu &&
      a->cpu < b->ncpu && isfinite(a->thread_s) && isfinite(b->thread_s)) {
    double here = (b->cpu_busy_s[a->cpu] - a->cpu_busy_s[a->cpu]) -
                  (b->thread_s - a->thread_s);
    out->other_here = here > 0 ? here / out->wall_s : 0.0;
  }
  double other = (b->busy_s - a->busy_s) - (b->self_s - a->self_s);
  out->other_cpus = other > 0 ? other / out->wall_s : 0.0;
  double busiest = 0;
  int n = a->ncpu < b->ncpu ? a->ncpu : b->ncpu;
  for (int c = 0; c < n; c++) {
    double d = (b->cpu_busy_s[c] - a->cpu_busy_s[c]) / out->wall_s;
    busiest = d > busiest ? d : busiest;
  }
  out->busiest_cpu = busiest > 1 ? 1 : busiest;
  double total = b->total_s - a->total_s;
  out->steal = total > 0 ? (b->steal_s - a->steal_s) / total : 0.0;
}

/* ---- which process ------------------------------------------------------ */

typedef struct ProcEntry {
  int pid;
  double ticks;
  char comm[32];
} ProcEntry;

struct lm_proc_scan {
  double t_ns;
  ProcEntry *e;
  int n;
};

lm_proc_scan *lm_proc_scan_take(void) {
  DIR *d = opendir("/proc");
  if (!d)
    return NULL;
  lm_proc_scan *s = calloc(1, sizeof *s);
  int cap = 0;
  int self = (int)getpid();
  struct dirent *de;
  while (s && (de = readdir(d))) {
    if (!isdigit((unsigned char)de->d_name[0]))
      continue;
    int pid = atoi(de->d_name);
    if (pid == self)
      continue;
    char path[64], line[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", pid);
    if (read_proc(path, line, sizeof line) <= 0)
      continue; /* exited meanwhile */
    ProcEntry pe = {.pid = pid};
    if ((pe.ticks = stat_cpu_ticks(line, pe.comm, sizeof pe.comm)) < 0)
      continue;
    if (s->n == cap) {
      int nc = cap ? 2 * cap : 256;
      ProcEntry *ne = realloc(s->e, (size_t)nc * sizeof *ne);
      if (!ne)
        break;
      s->e = ne;
      cap = nc;
    }
    s->e[s->n++] = pe;
  }
  closedir(d);
  if (s)
    s->t_ns = lm_now_ns();
  return s;
}

void lm_proc_scan_top(const lm_proc_scan *a, const lm_proc_scan *b,
                      lm_proc_top *top) {
  memset(top, 0, sizeof *top);
  if (!a || !b || !(b->t_ns > a->t_ns))
    return;
  double best = 0;
  /* both scans list pids in /proc's order, which is ascending */
  for (int i = 0, j = 0; j < b->n; j++) {
    while (i < a->n && a->e[i].pid < b->e[j].pid)
      i++;
    double before = i < a->n && a->e[i].pid == b->e[j].pid ? a->e[i].ticks : 0;
    double d = b->e[j].ticks - before;
    if (d > best) {
      best = d;
      top->pid = b->e[j].pid;
      snprintf(top->comm, sizeof top->comm, "%s", b->e[j].comm);
    }
  }
  top->cpus = best / ticks_per_s() / ((b->t_ns - a->t_ns) / 1e9);
}

void lm_proc_scan_free(lm_proc_scan *s) {
  if (!s)
    return;
  free(s->e);
  free(s);
}

/* ---- the verdict -------------------------------------------------------- */

void lm_noise_limits_defaults(lm_noise_limits *l) {
  l->spread_max = 0.10;
  l->canary_max = 0.15;
  l->other_cpus_max = 0.05;
  l->busy_here = 0;
  l->steal_max = 0.05;
  l->late_ns_max = 500e3;
  l->discord_max = LM_NOISE_DISCORD_MAX;
}

void lm_noise_clear(lm_noise *n) {
  memset(n, 0, sizeof *n);
  n->spread = n->canary = n->other_cpus = n->busiest_cpu = n->steal = NAN;
  n->other_here = NAN;
  n->load_start = n->load_end = n->late_ns = n->discord = NAN;
  n->running_start = n->running_end = -1;
  n->ncpu = lm_affinity_count_allowed();
}

void lm_noise_judge(lm_noise *n, const lm_noise_limits *l) {
  lm_noise_limits d;
  if (!l) {
    lm_noise_limits_defaults(&d);
    l = &d;
  }
  unsigned r = 0;
  if (n->spread > l->spread_max)
    r |= LM_NOISE_SPREAD;
  if (n->canary > l->canary_max)
    r |= LM_NOISE_CANARY;
  /* /proc/stat counts in ticks: every CPU's counter may be one tick off at
   * each end, so a short comparison widens the limit by that resolution */
  if (l->busy_here && !isnan(n->other_here)) {
    double one_cpu = n->wall_s > 0 ? (2.0 / ticks_per_s()) / n->wall_s : 0;
    if (n->other_here > l->other_cpus_max + one_cpu)
      r |= LM_NOISE_BUSY;
  } else if (n->other_cpus > l->other_cpus_max + lm_noise_resolution_cpus(n)) {
    r |= LM_NOISE_BUSY;
  }
  if (n->steal > l->steal_max)
    r |= LM_NOISE_STEAL;
  if (n->late_ns > l->late_ns_max ||
      (n->wanted >= LM_NOISE_MIN_LAUNCHES && n->missed >= n->wanted))
    r |= LM_NOISE_WORKERS;
  if (n->discord > l->discord_max)
    r |= LM_NOISE_DISCORD;
  n->reasons = r;
  n->noisy = (r & LM_NOISE_INTERFERENCE) != 0;
}

/* The worse of two measures, NAN only when both are. */
static double worse(double a, double b) {
  if (isnan(a))
    return b;
  if (isnan(b))
    return a;
  return a > b ? a : b;
}

void lm_noise_merge(lm_noise *a, const lm_noise *b) {
  a->noisy |= b->noisy;
  a->reasons |= b->reasons;
  a->spread = worse(a->spread, b->spread);
  a->canary = worse(a->canary, b->canary);
  a->other_cpus = worse(a->other_cpus, b->other_cpus);
  a->other_here = worse(a->other_here, b->other_here);
  a->busiest_cpu = worse(a->busiest_cpu, b->busiest_cpu);
  a->steal = worse(a->steal, b->steal);
  a->discord = worse(a->discord, b->discord);
  if (isnan(a->load_start))
    a->load_start = b->load_start, a->running_start = b->running_start;
  if (!isnan(b->load_end))
    a->load_end = b->load_end, a->running_end = b->running_end;
  double late = a->late_ns * (double)(a->wanted - a->missed);
  double lb = b->late_ns * (double)(b->wanted - b->missed);
  int64_t joined = (a->wanted - a->missed) + (b->wanted - b->missed);
  a->wanted += b->wanted;
  a->missed += b->missed;
  a->late_ns = joined > 0 ? ((isnan(late) ? 0 : late) + (isnan(lb) ? 0 : lb)) /
                                (double)joined
                          : NAN;
  a->wall_s += b->wall_s;
  if (b->ncpu > 0)
    a->ncpu = b->ncpu;
}

double lm_noise_free_cpus(const lm_noise *n) {
  double c = n->ncpu > 0 ? n->ncpu : 1;
  return isnan(n->other_cpus) ? c : c - n->other_cpus;
}

double lm_noise_resolution_cpus(const lm_noise *n) {
  return n->wall_s > 0
             ? (n->ncpu > 0 ? n->ncpu : 1) * (2.0 / ticks_per_s()) / n->wall_s
             : 0;
}

int lm_noise_contended(const lm_noise *n, int workers) {
  return workers > 1 && n->ncpu > 0 &&
         lm_noise_free_cpus(n) + lm_noise_resolution_cpus(n) <
             workers - LM_NOISE_FREE_SLACK;
}

const char *lm_noise_reason_name(unsigned bit) {
  switch (bit) {
  case LM_NOISE_SPREAD:
    return "spread";
  case LM_NOISE_CANARY:
    return "canary";
  case LM_NOISE_BUSY:
    return "busy";
  case LM_NOISE_STEAL:
    return "steal";
  case LM_NOISE_WORKERS:
    return "workers";
  case LM_NOISE_DISCORD:
    return "discord";
  }
  return "?";
}

unsigned lm_noise_reason_bit(const char *name) {
  for (unsigned bit = 1; bit & LM_NOISE_ALL; bit <<= 1)
    if (name && strcmp(lm_noise_reason_name(bit), name) == 0)
      return bit;
  return 0;
}

const char *lm_noise_verdict_name(const lm_noise *n) {
  return n->noisy ? "noisy" : n->reasons ? "unstable" : "quiet";
}

const char *lm_noise_describe(const lm_noise *n, const lm_noise_limits *l,
                              char *buf, size_t size) {
  lm_noise_limits d;
  if (!l) {
    lm_noise_limits_defaults(&d);
    l = &d;
  }
  if (size == 0)
    return buf;
  if (!n->reasons) {
    snprintf(buf, size, "quiet");
    return buf;
  }
  size_t w = (size_t)snprintf(buf, size, "%s:", lm_noise_verdict_name(n));
  const char *sep = " ";
#define ADD(...)                                                               \
  do {                                                                         \
    if (w < size) {                                                            \
      w += (size_t)snprintf(buf + w, size - w, "%s", sep);                     \
      if (w < size)                                                            \
        w += (size_t)snprintf(buf + w, size - w, __VA_ARGS__);                 \
      sep = ", ";                                                              \
    }                                                                          \
  } while (0)
  if ((n->reasons & LM_NOISE_BUSY) && l->busy_here && !isnan(n->other_here))
    ADD("other processes used %.2f of this CPU > %.2f", n->other_here,
        l->other_cpus_max);
  else if (n->reasons & LM_NOISE_BUSY)
    ADD("other processes used %.2f CPU > %.2f", n->other_cpus,
        l->other_cpus_max);
  if (n->reasons & LM_NOISE_STEAL)
    ADD("steal %.1f%% > %.0f%%", 100 * n->steal, 100 * l->steal_max);
  if (n->reasons & LM_NOISE_CANARY)
    ADD("canary drift %.1f%% > %.0f%%", 100 * n->canary, 100 * l->canary_max);
  if (n->reasons & LM_NOISE_SPREAD)
    ADD("median spread %.1f%% > %.0f%%", 100 * n->spread, 100 * l->spread_max);
  if ((n->reasons & LM_NOISE_WORKERS) && n->missed >= n->wanted)
    ADD("no pool worker joined %lld launches", (long long)n->wanted);
  else if (n->reasons & LM_NOISE_WORKERS)
    ADD("pool workers joined %.0f us late > %.0f us (and missed %lld of "
        "%lld launches)",
        n->late_ns / 1e3, l->late_ns_max / 1e3, (long long)n->missed,
        (long long)n->wanted);
  if (n->reasons & LM_NOISE_DISCORD)
    ADD("a variant timed twice %.0f%% apart > %.0f%%", 100 * n->discord,
        100 * l->discord_max);
#undef ADD
  return buf;
}

/* ---- JSON --------------------------------------------------------------- */

static void put_num(cJSON *o, const char *key, double v) {
  if (isfinite(v))
    cJSON_AddItemToObject(o, key, lm_json_num(v));
}

cJSON *lm_noise_to_json(const lm_noise *n) {
  cJSON *o = cJSON_CreateObject();
  if (!o)
    return NULL;
  cJSON_AddStringToObject(o, "verdict", lm_noise_verdict_name(n));
  cJSON *r = cJSON_AddArrayToObject(o, "reasons");
  for (unsigned b = 1; (b & LM_NOISE_ALL) && r; b <<= 1)
    if (n->reasons & b)
      cJSON_AddItemToArray(r, cJSON_CreateString(lm_noise_reason_name(b)));
  put_num(o, "spread", n->spread);
  put_num(o, "canary", n->canary);
  put_num(o, "other_cpus", n->other_cpus);
  put_num(o, "other_here", n->other_here);
  put_num(o, "busiest_cpu", n->busiest_cpu);
  put_num(o, "steal", n->steal);
  put_num(o, "discord", n->discord);
  if (isfinite(n->load_start) && isfinite(n->load_end)) {
    cJSON *l = cJSON_AddArrayToObject(o, "load");
    cJSON_AddItemToArray(l, lm_json_num(n->load_start));
    cJSON_AddItemToArray(l, lm_json_num(n->load_end));
  }
  if (n->running_start >= 0 && n->running_end >= 0) {
    cJSON *l = cJSON_AddArrayToObject(o, "running");
    cJSON_AddItemToArray(l, cJSON_CreateNumber(n->running_start));
    cJSON_AddItemToArray(l, cJSON_CreateNumber(n->running_end));
  }
  if (n->wanted > 0) {
    cJSON *wk = cJSON_AddObjectToObject(o, "workers");
    cJSON_AddNumberToObject(wk, "wanted", (double)n->wanted);
    cJSON_AddNumberToObject(wk, "missed", (double)n->missed);
    put_num(wk, "late_ns", n->late_ns);
  }
  put_num(o, "wall_s", n->wall_s);
  if (n->ncpu > 0)
    cJSON_AddNumberToObject(o, "ncpu", n->ncpu);
  return o;
}

/* A number, also as the raw item lm_json_num builds before printing; NAN
 * for anything else. */
static double num_of(const cJSON *v) {
  if (cJSON_IsNumber(v))
    return v->valuedouble;
  if (cJSON_IsRaw(v) && v->valuestring) {
    char *end;
    double d = strtod(v->valuestring, &end);
    return *end == 0 && end != v->valuestring ? d : NAN;
  }
  return NAN;
}

static lm_status bad(lm_error *err, const char *key, const char *what) {
  return lm_error_set(err, LM_EINPUT, "noise: \"%s\" %s", key, what);
}

/* Number at key, or NAN when absent; LM_EINPUT when not a number. */
static lm_status get_num(const cJSON *j, const char *key, double *out,
                         lm_error *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  *out = NAN;
  if (!v)
    return LM_OK;
  double d = num_of(v);
  if (!isfinite(d))
    return bad(err, key, "is not a finite number");
  *out = d;
  return LM_OK;
}

/* A [start, end] pair of numbers. */
static lm_status get_pair(const cJSON *j, const char *key, double *a,
                          double *b, lm_error *err) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
  if (!v)
    return LM_OK;
  if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 ||
      !isfinite(num_of(cJSON_GetArrayItem(v, 0))) ||
      !isfinite(num_of(cJSON_GetArrayItem(v, 1))))
    return bad(err, key, "is not a pair of numbers [start, end]");
  *a = num_of(cJSON_GetArrayItem(v, 0));
  *b = num_of(cJSON_GetArrayItem(v, 1));
  return LM_OK;
}

lm_status lm_noise_from_json(const cJSON *j, lm_noise *out, lm_error *err) {
  lm_noise_clear(out);
  out->ncpu = 0;
  if (!cJSON_IsObject(j))
    return lm_error_set(err, LM_EINPUT, "noise: not an object");
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, "verdict");
  if (!cJSON_IsString(v) || (strcmp(v->valuestring, "quiet") != 0 &&
                             strcmp(v->valuestring, "unstable") != 0 &&
                             strcmp(v->valuestring, "noisy") != 0))
    return bad(err, "verdict",
               "must be \"quiet\", \"unstable\" or \"noisy\"");
  out->noisy = strcmp(v->valuestring, "noisy") == 0;
  int unstable = strcmp(v->valuestring, "unstable") == 0;
  const cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "reasons");
  if (r && !cJSON_IsArray(r))
    return bad(err, "reasons", "is not an array");
  const cJSON *e;
  cJSON_ArrayForEach(e, r) {
    unsigned b = cJSON_IsString(e) ? lm_noise_reason_bit(e->valuestring) : 0;
    if (!b)
      return bad(err, "reasons",
                 "holds an unknown reason (spread, canary, busy, steal, "
                 "workers, discord)");
    out->reasons |= b;
  }
  /* "noisy" needs a reason (a record written before spread stopped
   * deciding may give only "spread"); "unstable" needs the spread alone;
   * "quiet" none */
  if (out->noisy ? out->reasons == 0
                 : unstable ? out->reasons != LM_NOISE_SPREAD
                            : out->reasons != 0)
    return bad(err, "reasons", "disagrees with the verdict");
  lm_status st;
  double running_a = -1, running_b = -1, ncpu = NAN;
  if ((st = get_num(j, "spread", &out->spread, err)) ||
      (st = get_num(j, "canary", &out->canary, err)) ||
      (st = get_num(j, "other_cpus", &out->other_cpus, err)) ||
      (st = get_num(j, "other_here", &out->other_here, err)) ||
      (st = get_num(j, "busiest_cpu", &out->busiest_cpu, err)) ||
      (st = get_num(j, "steal", &out->steal, err)) ||
      (st = get_num(j, "discord", &out->discord, err)) ||
      (st = get_num(j, "wall_s", &out->wall_s, err)) ||
      (st = get_num(j, "ncpu", &ncpu, err)) ||
      (st = get_pair(j, "load", &out->load_start, &out->load_end, err)) ||
      (st = get_pair(j, "running", &running_a, &running_b, err)))
    return st;
  if (isnan(out->wall_s))
    out->wall_s = 0;
  out->ncpu = isfinite(ncpu) && ncpu >= 1 && ncpu <= 1 << 20 ? (int)ncpu : 0;
  out->running_start = (int)running_a;
  out->running_end = (int)running_b;
  const cJSON *wk = cJSON_GetObjectItemCaseSensitive(j, "workers");
  if (wk) {
    double wanted, missed;
    if (!cJSON_IsObject(wk))
      return bad(err, "workers", "is not an object");
    if ((st = get_num(wk, "wanted", &wanted, err)) ||
        (st = get_num(wk, "missed", &missed, err)) ||
        (st = get_num(wk, "late_ns", &out->late_ns, err)))
      return st;
    if (!(wanted >= 0 && missed >= 0 && missed <= wanted && wanted < 1e18))
      return bad(err, "workers",
                 "needs 0 <= missed <= wanted (counts of worker slots)");
    out->wanted = (int64_t)wanted;
    out->missed = (int64_t)missed;
  }
  return LM_OK;
}

/* ---- the canary --------------------------------------------------------- */

void lm_noise_canary_run(void *ctx, int64_t reps) {
  (void)ctx;
  /* One multiply and one add per step, each depending on the last: the
   * chain's latency (about 4 cycles) sets the time, not the ports, so what
   * the compared entries do to the core's resources does not change it. */
  uint64_t x = (uint64_t)reps | 1u;
  for (int64_t i = 0; i < reps; i++) {
    for (int k = 0; k < 64; k++)
      x = x * 0x9E3779B97F4A7C15ull + (uint64_t)k;
    __asm__ volatile("" : "+r"(x));
  }
}

typedef float lm_noise_v8f __attribute__((vector_size(32)));
static volatile float vector_sink; /* keeps the loop's work */

void lm_noise_vector_run(void *ctx, int64_t reps) {
  (void)ctx;
  lm_noise_v8f acc[8], m, c;
  for (int l = 0; l < 8; l++) {
    m[l] = 0.9999999f, c[l] = 1e-7f;
    for (int j = 0; j < 8; j++)
      acc[j][l] = 1.0f + 1e-3f * (float)(j + l);
  }
  for (int64_t r = 0; r < reps; r++)
    for (int k = 0; k < 16; k++)
      for (int j = 0; j < 8; j++)
        acc[j] = acc[j] * m + c;
  float sum = 0;
  for (int j = 0; j < 8; j++)
    for (int l = 0; l < 8; l++)
      sum += acc[j][l];
  vector_sink = sum;
}
