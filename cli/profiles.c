/* Profile lookup for the commands that plan a workload (cli/profiles.h). */
#include <stdio.h>

#include "cli/profiles.h"

#include "cli/args.h"

/* The profile lookup o asks for, printing its fingerprint warning and,
 * for a noisy profile accepted, its verdict. */
static lm_status lookup_profile(const lm_profile_lookup_opts *o,
                                lm_profile **out, lm_error *err) {
  lm_profile_found found;
  lm_status s = lm_profile_lookup(o, out, &found, err);
  if (s == LM_OK && found.info.fingerprint_diffs > 0)
    fprintf(stderr, "lanemap: warning: %s\n", found.info.warning);
  if (s == LM_OK && found.noisy) {
    char why[1200];
    fprintf(stderr, "lanemap: warning: %s: accepted a noisy profile: %s\n",
            found.path, lm_profile_describe_noise(*out, why, sizeof why));
  }
  return s;
}

int cli_arg_profile(int argc, char **argv, int *i, const char **profpath,
                    int *nprof, const char *usage, const char *cmd) {
  const char *val;
  int r = cli_arg_value(argc, argv, i, "--profile", &val);
  if (r <= 0)
    return r;
  if (*nprof == LM_ISA__COUNT) {
    cli_usage_error(usage, cmd, "--profile: at most %d, one per ISA target",
                    LM_ISA__COUNT);
    return -1;
  }
  profpath[(*nprof)++] = val;
  return 1;
}

lm_status cli_workload_profiles(const char *cmd, const lm_workload *w,
                                const char *const *profpath, int nprof,
                                int dflt, int accept, lm_profile **owned,
                                lm_error *err) {
  lm_status s = LM_OK;
  /* Which --profile prices ISA target i: a lone one prices a lone target,
   * whatever ISA it names; otherwise each prices the target of its own ISA.
   * Each file is loaded once, into the slot it prices. */
  const char *given[LM_ISA__COUNT] = {0};
  int lone = nprof == 1 && w->nisa == 1;
  for (int f = 0; f < nprof && s == LM_OK; f++) {
    lm_profile *p = NULL;
    lm_profile_lookup_opts lo;
    lm_profile_lookup_defaults(&lo);
    lo.path = profpath[f];
    lo.accept_noisy = accept;
    if ((s = lookup_profile(&lo, &p, err)) != LM_OK)
      break;
    const char *pisa = lm_profile_get_isa(p);
    lm_isa pi;
    int slot = lone ? 0 : -1;
    if (!lone && lm_isa_parse(pisa, &pi, err) == LM_OK)
      for (int i = 0; i < w->nisa; i++)
        if (w->isa[i] == pi)
          slot = i;
    if (slot < 0)
      s = lm_error_set(
          err, LM_EINPUT,
          "--profile %s: calibrated for %.32s, which is not an ISA target "
          "of the workload",
          profpath[f], pisa);
    else if (given[slot])
      s = lm_error_set(err, LM_EINPUT,
                       "--profile %s: a second profile for %.32s", profpath[f],
                       pisa);
    if (s != LM_OK) {
      lm_profile_free(p);
      break;
    }
    given[slot] = profpath[f];
    owned[slot] = p;
  }
  for (int i = 0; i < w->nisa && s == LM_OK; i++) {
    lm_profile_lookup_opts lo;
    lm_profile_lookup_defaults(&lo);
    lo.use_defaults = dflt;
    lo.isa = w->isa[i];
    lo.accept_noisy = accept;
    if (!owned[i] && (s = lookup_profile(&lo, &owned[i], err)) != LM_OK)
      break;
    const lm_profile *p = owned[i];
    char cached[1024] = "the cached profile";
    lm_error perr = {0};
    if (!given[i] && !dflt &&
        lm_profile_cache_path(lm_isa_name(w->isa[i]), lm_profile_get_mode(p),
                              cached, sizeof cached, &perr) != LM_OK)
      snprintf(cached, sizeof cached, "the cached profile");
    fprintf(stderr,
            "lanemap %s: profile for %s: %s (%s, ISA %s, fingerprint %s)\n",
            cmd, lm_isa_name(w->isa[i]),
            given[i] ? given[i]
            : dflt   ? "the uncalibrated defaults"
                     : cached,
            lm_profile_mode_name(lm_profile_get_mode(p)), lm_profile_get_isa(p),
            lm_profile_get_fingerprint(p)->hash);
  }
  return s;
}
