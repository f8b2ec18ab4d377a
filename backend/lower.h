/* Internal interface between the lowering and the compile pipeline. */
#ifndef LANEMAP_BACKEND_LOWER_H
#define LANEMAP_BACKEND_LOWER_H

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "lanemap/backend.h"

/* Build the module holding `symbol` for k x v in ctx, as its schedule
 * (backend/schedule.h) lays it out.  Sets *counts to the emitted sites
 * (emit_* and part[]; the rest zero). */
lm_status lm_lower_module(const lm_kernel *k, const lm_variant *v,
                          LLVMContextRef ctx, const char *symbol,
                          LLVMModuleRef *out, lm_counts *counts,
                          lm_error *err);

/* Target machine for an ISA (CPU name and features). */
lm_status lm_target_machine(lm_isa isa, int jit, LLVMTargetMachineRef *out,
                            lm_error *err);
/* Vector math symbols the lowering may call, with their addresses. */
typedef struct lm_vmath_sym {
  const char *name;
  void *addr;
} lm_vmath_sym;
const lm_vmath_sym *lm_vmath_symbols(int *n);
/* Name of provider m's routine for a math op on w lanes of t, or NULL if
 * there is none (the ir provider has no calls: lm_vmath_ir). */
const char *lm_vmath_name(lm_math m, lm_op op, lm_dtype t, int w);
/* lanemap's own routine for op (exp, log, tanh, erf) on the float vector
 * a, emitted inline at the builder's position (backend/vmath_ir.c). */
LLVMValueRef lm_vmath_ir(LLVMBuilderRef B, LLVMModuleRef M, lm_op op,
                         LLVMValueRef a);

#endif
