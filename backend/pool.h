/* The pool's placement, for the timing harness (backend internal). */
#ifndef LANEMAP_BACKEND_POOL_H
#define LANEMAP_BACKEND_POOL_H

#include "lanemap/runtime.h"

/* Keeps the pool's threads off `cpu` until the next call; cpu < 0 lets
 * them run where they could before.  The timing harness pins its own
 * thread to one CPU; a worker left on that CPU cannot run beside it, the
 * caller then claims every chunk alone, and a parallel launch times like
 * a serial one (measured with the worker pinned to the caller's CPU: 256
 * tiny chunks in 2.7-3.8 µs, the worker running none of them, against
 * 7-10 µs with the worker beside it).  Returns the number of threads
 * moved; best effort, like every affinity call.  Serialized with
 * launches. */
int lm_pool_keep_off(lm_pool *p, int cpu);

#endif
