/* The pool's placement and warmth, for the timing harness (backend
 * internal). */
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

/* Makes the pool's idle workers spin: wakes the parked ones, waits up to
 * max_wait_ns in all for them to come back, and keeps every idle worker
 * spinning for the pool's spin_us from then.  The timing harness calls it
 * before each sample, so that a parallel entry's first launch does not
 * pay the wake-up of a worker that parked while other entries (or the
 * canary) ran: on this project's VM that wake costs 66-100 µs at p50
 * (bench_forkjoin), and over a sample of a few launches it was charged
 * to whichever schedule lost most from a late worker (docs/timing.md).
 * No-op on a pool with spin_us = 0, which parks by design.  Returns the
 * number of woken workers not back within max_wait_ns.  Serialized with
 * launches; a no-op when called from inside a launch on p. */
int lm_pool_warm(lm_pool *p, int64_t max_wait_ns);

#endif
