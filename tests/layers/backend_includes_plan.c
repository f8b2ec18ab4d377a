/* Compiled by the layers_build_refuses_an_upward_include test with the
 * backend module's include folders: its own layer's header and a lower
 * one's are found, the solver's plan.h is not. */
#include "lanemap/backend.h" /* backend */
#include "lanemap/ir.h"      /* ir, a lower layer */
#include "lanemap/plan.h"    /* solver, a higher layer: not found */
