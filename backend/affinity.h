/* CPU affinity for the pool's threads and the timing harness (backend
 * internal).  Every call is best effort: where the OS refuses or has no
 * affinity API, pinning reports failure and nothing else changes. */
#ifndef LANEMAP_BACKEND_AFFINITY_H
#define LANEMAP_BACKEND_AFFINITY_H

#include <pthread.h>

/* CPUs the calling thread may run on (sched_getaffinity, so cgroup and
 * taskset limits count), else the online CPUs; at least 1. */
int lm_affinity_count_allowed(void);

/* Pins the calling thread to the k-th allowed CPU (k taken modulo their
 * number).  0 on success, -1 if the OS refused. */
int lm_affinity_pin_nth(int k);

/* Pins the calling thread to the CPU it runs on now and returns the
 * previous mask, to be handed to lm_affinity_restore; NULL if the thread
 * could not be pinned (then nothing changed). */
typedef struct lm_affinity_saved lm_affinity_saved;
lm_affinity_saved *lm_affinity_pin_current(void);
/* The same, pinned to `cpu` instead, when the thread may run there (else
 * NULL and nothing changed). */
lm_affinity_saved *lm_affinity_pin_to(int cpu);
/* 1 if the calling thread may run on `cpu`. */
int lm_affinity_allowed(int cpu);
/* Restores the mask saved by lm_affinity_pin_current and frees it. */
void lm_affinity_restore(lm_affinity_saved *s);

/* Keeps thread t off `cpu`: its mask loses that CPU, and the previous mask
 * is returned for lm_affinity_restore_thread.  NULL when nothing changed
 * (cpu not in t's mask, the only CPU in it, or the OS refused). */
lm_affinity_saved *lm_affinity_keep_off(pthread_t t, int cpu);
/* Restores thread t's mask saved by lm_affinity_keep_off and frees it. */
void lm_affinity_restore_thread(pthread_t t, lm_affinity_saved *s);

#endif
