/* How many workers are worth running here: the physical cores this process
 * may use.  hwloc gives the cores; the process's affinity mask says which
 * CPUs it may run on; a core counts when one of its CPUs is allowed.  SMT
 * siblings share a core's vector units, so a second hardware thread of a
 * core is not a second worker for these kernels.  Computed once. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <hwloc.h>

#include "backend/affinity.h"
#include "lanemap/runtime.h"
#include "lanemap/variant.h"

static int cores_here;
static pthread_once_t cores_once = PTHREAD_ONCE_INIT;

/* Physical cores with an allowed CPU; 0 when hwloc cannot tell. */
static int hwloc_cores(void) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0)
    return 0;
  int n = 0;
  hwloc_bitmap_t allowed = hwloc_bitmap_alloc();
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (allowed && hwloc_topology_load(t) == 0 &&
      sched_getaffinity(0, sizeof mask, &mask) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
      if (CPU_ISSET(cpu, &mask))
        hwloc_bitmap_set(allowed, (unsigned)cpu);
    int ncores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    for (int i = 0; i < ncores; i++) {
      hwloc_obj_t core = hwloc_get_obj_by_type(t, HWLOC_OBJ_CORE, (unsigned)i);
      n += core && hwloc_bitmap_intersects(core->cpuset, allowed);
    }
  }
  hwloc_bitmap_free(allowed);
  hwloc_topology_destroy(t);
  return n;
}

static void count_cores(void) {
  int n = hwloc_cores();
  cores_here = n > 0 ? n : lm_affinity_count_allowed();
  if (cores_here < 1)
    cores_here = 1;
}

int lm_cores_available(void) {
  pthread_once(&cores_once, count_cores);
  return cores_here;
}

int lm_worker_ladder(int *workers, int max) {
  int n = 0, cores = lm_cores_available();
  for (int w = 1; n < max && w <= cores && w <= LM_MAX_WORKERS; w *= 2)
    workers[n++] = w;
  if (n < max)
    workers[n] = 0;
  return n;
}
