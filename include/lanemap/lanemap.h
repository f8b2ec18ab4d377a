/* lanemap: the whole public C API in one include.
 *
 *   #include <lanemap/lanemap.h>
 *
 * and link with `pkg-config --libs lanemap` or CMake's lanemap::lanemap.
 * Each module also has its own header, usable alone; this one only gathers
 * them, in dependency order.  Conventions shared by every header
 * (docs/library.md): opaque handles freed by their *_free call; option
 * structs filled by *_defaults() before any field is changed; every fallible
 * call returns an lm_status and leaves its message in a caller's lm_error;
 * ownership is written in each prototype (lm_give, lm_take, lm_keep); the
 * library never prints and never exits.  Thread safety is stated per
 * function; unless a header says otherwise, distinct objects may be used from
 * distinct threads and one object only from one thread at a time. */
#ifndef LANEMAP_LANEMAP_H
#define LANEMAP_LANEMAP_H

#include "lanemap/core.h"
#include "lanemap/json.h"

#include "lanemap/ir.h"
#include "lanemap/variant.h"
#include "lanemap/oracle.h"
#include "lanemap/runtime.h"
#include "lanemap/backend.h"
#include "lanemap/verify.h"
#include "lanemap/noise.h"
#include "lanemap/timing.h"

#include "lanemap/profile.h"
#include "lanemap/costmodel.h"
#include "lanemap/learned.h"
#include "lanemap/fit.h"
#include "lanemap/calibrate.h"

#include "lanemap/solver.h"
#include "lanemap/workload.h"
#include "lanemap/plan.h"
#include "lanemap/dispatch.h"
#include "lanemap/tune.h"

#include "lanemap/records.h"
#include "lanemap/cases.h"
#include "lanemap/heldout.h"

#endif
