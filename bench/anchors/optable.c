/* The operator table of the anchor benchmark: for each suite kernel, its
 * expected parameter list and its comparison kernels (anchors.h). */
#include <string.h>

#include "bench/anchors/anchors.h"

#define OP(name, params)                                                        \
  {#name, params, anchor_hand_##name, anchor_plain_##name, anchor_fast_##name}
static const anchor_op ops[] = {
    OP(rmsnorm, "x,g,eps,y;R,C"),
    OP(layernorm, "x,g,b,eps,y;R,C"),
    OP(masked_softmax, "x,m,y;R,C"),
    OP(gelu_residual, "x,res,y;R,C"),
    OP(swiglu, "a,b,y;R,C"),
    OP(rope, "x,cs,sn,y;R,H"),
};

const anchor_op *anchor_op_find(const char *kernel) {
  for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
    if (strcmp(ops[i].kernel, kernel) == 0)
      return &ops[i];
  return NULL;
}

int anchor_hand_runnable(void) {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}
