/* Variant selection shared by run, emit and bench: one variant string, a
 * comma-separated list, or every legal variant of the ISA targets this
 * machine can run (or of one --isa). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"

lm_status cli_fp_modes(const char *text, int with_both, unsigned *out,
                       lm_error *err) {
  int mode = text ? lm_fp_lookup(text) : LM_FP_STRICT;
  if (mode >= 0)
    *out = 1u << mode;
  else if (with_both && strcmp(text, "both") == 0)
    *out = 1u << LM_FP_STRICT | 1u << LM_FP_RELAXED;
  else
    return lm_error_set(err, LM_EINPUT, "--fp '%s': must be strict%s relaxed",
                        text, with_both ? ", both or" : " or");
  return LM_OK;
}

lm_status cli_variants(const lm_kernel *k, const char *list, int all,
                       const char *isa, const char *fp, int run,
                       lm_variant **out, int *n, lm_error *err) {
  *out = NULL;
  *n = 0;
  if (all) {
    lm_isa only = LM_ISA__COUNT;
    unsigned fps = 0;
    if (isa && lm_isa_parse(isa, &only, err) != LM_OK)
      return LM_EINPUT;
    if (cli_fp_modes(fp, 1, &fps, err) != LM_OK)
      return LM_EINPUT;
    /* the targets: --isa's, else every named target this machine runs
     * (x86-64-v2..v4 here; NEON and its SVE length in a native AArch64
     * build) */
    lm_isa isas[LM_ISA__COUNT];
    int nisa = 0;
    if (only != LM_ISA__COUNT)
      isas[nisa++] = only;
    for (int i = 0; only == LM_ISA__COUNT && i < LM_ISA__COUNT; i++)
      if (i != LM_ISA_HOST && lm_isa_runnable((lm_isa)i))
        isas[nisa++] = (lm_isa)i;
    if (run && only != LM_ISA__COUNT && !lm_isa_runnable(only))
      return lm_error_set(err, LM_EINPUT, "this machine cannot run %s code",
                          lm_isa_name(only));
    lm_variant *acc = NULL;
    int total = 0;
    for (int i = 0; i < nisa; i++) {
      lm_enum_opts eo;
      lm_enum_defaults(&eo);
      eo.isa = isas[i];
      eo.fps = fps;
      lm_variant *vs;
      int m = lm_variant_enumerate(k, &eo, &vs, err);
      if (m < 0) {
        free(acc);
        return LM_EINPUT;
      }
      acc = realloc(acc, sizeof *acc * (size_t)(total + m));
      memcpy(acc + total, vs, sizeof *vs * (size_t)m);
      total += m;
      free(vs);
    }
    *out = acc;
    *n = total;
    return LM_OK;
  }
  if (fp)
    return lm_error_set(err, LM_EINPUT,
                        "--fp goes with --all-variants (--all for predict); "
                        "a variant string names its own mode (fp=relaxed)");
  if (!list || !*list)
    return lm_error_set(err, LM_EINPUT, "no variant given (--variant V or --all-variants)");
  char *copy = strdup(list), *save = NULL;
  int cap = 8;
  lm_variant *vs = malloc(sizeof *vs * (size_t)cap);
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    lm_variant v;
    if (lm_variant_parse(t, &v, err) != LM_OK || lm_variant_check(k, &v, err) != LM_OK) {
      char msg[sizeof err->msg];
      snprintf(msg, sizeof msg, "%s", err->msg);
      if (strncmp(msg, "variant '", 9) == 0) /* the parser already named it */
        lm_error_set(err, LM_EINPUT, "%s", msg);
      else
        lm_error_set(err, LM_EINPUT, "variant '%s': %s", t, msg);
      free(copy);
      free(vs);
      return LM_EINPUT;
    }
    if (run && !lm_isa_runnable(v.isa)) {
      lm_error_set(err, LM_EINPUT, "variant '%s': this machine cannot run %s code", t,
                   lm_isa_name(v.isa));
      free(copy);
      free(vs);
      return LM_EINPUT;
    }
    if (*n == cap)
      vs = realloc(vs, sizeof *vs * (size_t)(cap *= 2));
    vs[(*n)++] = v;
  }
  free(copy);
  *out = vs;
  return LM_OK;
}
