/* CPU affinity: the few calls that pin a thread, kept apart from the pool
 * and the timing harness so that both pin the same way.
 *
 * Pinning is an optimisation and never a requirement.  A container may
 * forbid sched_setaffinity, and a VM's vCPUs move under us anyway, so every
 * function reports failure instead of failing the caller. */
#define _GNU_SOURCE
#include "backend/affinity.h"

#include <stdlib.h>
#include <unistd.h>

#ifdef __linux__
#include <pthread.h>
#include <sched.h>

struct lm_affinity_saved {
  cpu_set_t mask;
};

int lm_affinity_count_allowed(void) {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    int c = CPU_COUNT(&set);
    if (c > 0)
      return c;
  }
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

int lm_affinity_pin_nth(int k) {
  cpu_set_t allowed, one;
  CPU_ZERO(&allowed);
  if (pthread_getaffinity_np(pthread_self(), sizeof allowed, &allowed) != 0)
    return -1;
  int count = CPU_COUNT(&allowed);
  if (count <= 0)
    return -1;
  k %= count;
  if (k < 0)
    k += count;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &allowed))
      continue;
    if (k-- == 0) {
      CPU_ZERO(&one);
      CPU_SET(cpu, &one);
      if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0)
        return -1;
      return 0;
    }
  }
  return -1;
}

lm_affinity_saved *lm_affinity_pin_current(void) {
  return lm_affinity_pin_to(sched_getcpu());
}

int lm_affinity_allowed(int cpu) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  return cpu >= 0 && cpu < CPU_SETSIZE &&
         pthread_getaffinity_np(pthread_self(), sizeof mask, &mask) == 0 &&
         CPU_ISSET(cpu, &mask);
}

lm_affinity_saved *lm_affinity_pin_to(int cpu) {
  if (!lm_affinity_allowed(cpu))
    return NULL;
  lm_affinity_saved *s = malloc(sizeof *s);
  if (!s)
    return NULL;
  CPU_ZERO(&s->mask);
  cpu_set_t one;
  CPU_ZERO(&one);
  if (cpu < 0 || cpu >= CPU_SETSIZE)
    goto fail;
  CPU_SET(cpu, &one);
  if (pthread_getaffinity_np(pthread_self(), sizeof s->mask, &s->mask) != 0)
    goto fail;
  if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0)
    goto fail;
  return s;
fail:
  free(s);
  return NULL;
}

void lm_affinity_restore(lm_affinity_saved *s) {
  if (!s)
    return;
  /* If the old mask cannot be restored there is nothing better to do: the
   * thread stays pinned, which is still correct, only less flexible. */
  (void)pthread_setaffinity_np(pthread_self(), sizeof s->mask, &s->mask);
  free(s);
}

lm_affinity_saved *lm_affinity_keep_off(pthread_t t, int cpu) {
  if (cpu < 0 || cpu >= CPU_SETSIZE)
    return NULL;
  lm_affinity_saved *s = malloc(sizeof *s);
  if (!s)
    return NULL;
  CPU_ZERO(&s->mask);
  cpu_set_t off;
  if (pthread_getaffinity_np(t, sizeof s->mask, &s->mask) != 0 ||
      !CPU_ISSET(cpu, &s->mask) || CPU_COUNT(&s->mask) < 2)
    goto fail;
  off = s->mask;
  CPU_CLR(cpu, &off);
  if (pthread_setaffinity_np(t, sizeof off, &off) != 0)
    goto fail;
  return s;
fail:
  free(s);
  return NULL;
}

void lm_affinity_restore_thread(pthread_t t, lm_affinity_saved *s) {
  if (!s)
    return;
  (void)pthread_setaffinity_np(t, sizeof s->mask, &s->mask);
  free(s);
}

#else /* no affinity API: report failure, change nothing */

struct lm_affinity_saved {
  int unused;
};

int lm_affinity_count_allowed(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}
int lm_affinity_pin_nth(int k) {
  (void)k;
  return -1;
}
lm_affinity_saved *lm_affinity_pin_current(void) { return NULL; }
lm_affinity_saved *lm_affinity_pin_to(int cpu) {
  (void)cpu;
  return NULL;
}
int lm_affinity_allowed(int cpu) { return cpu == 0; }
void lm_affinity_restore(lm_affinity_saved *s) { free(s); }
lm_affinity_saved *lm_affinity_keep_off(pthread_t t, int cpu) {
  (void)t;
  (void)cpu;
  return NULL;
}
void lm_affinity_restore_thread(pthread_t t, lm_affinity_saved *s) {
  (void)t;
  free(s);
}

#endif
