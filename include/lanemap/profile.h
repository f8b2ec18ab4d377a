/* lanemap profile: the calibrated cost coefficients of one ISA target on one
 * machine (DESIGN.md §9, §10, §13), with everything needed to judge and
 * re-run them: the machine fingerprint, the raw samples the fit saw, the
 * residuals, the fit diagnostics and the bootstrap coefficient vectors.
 *
 * The profile is generic: it holds named terms (the cost model chooses the
 * names) and samples whose feature vectors are aligned with the terms, so
 * sample i's prediction is Σ_k features[k] · coef[k].
 *
 * Ownership: an lm_profile owns copies of everything set into it.  Pointers
 * returned by getters are borrowed and stay valid until the profile is
 * freed or the same field is set again.  On disk a profile is one JSON
 * file, schema "lanemap.profile/1", or "lanemap.profile/1.1" when it
 * records a noise verdict (docs/profile.md); a file of the same
 * major version loads (a later minor version's added fields are skipped; in
 * a file of this version an unknown field is an error), another major
 * version is an error naming both versions. */
#ifndef LANEMAP_PROFILE_H
#define LANEMAP_PROFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "lanemap/core.h"
#include "lanemap/costmodel.h"
#include "lanemap/noise.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LM_PROFILE_SCHEMA "lanemap.profile/1"
#define LM_PROFILE_SCHEMA_MAJOR 1
/* The minor version that adds the noise verdict ("noise",
 * "noisy_families"): a profile that records one is written as
 * lanemap.profile/1.1, so builds that predate it skip those fields. */
#define LM_PROFILE_SCHEMA_MINOR 1
#define LM_PROFILE_SCHEMA_NOISE "lanemap.profile/1.1"

/* ---- machine fingerprint ------------------------------------------------- */

#define LM_FINGERPRINT_FEATURES_MAX 4096

/* What a profile's coefficients depend on.  A plain value: copy it freely. */
typedef struct lm_fingerprint {
  char cpu_name[64]; /* LLVMGetHostCPUName, e.g. "sapphirerapids" */
  /* LLVMGetHostCPUFeatures, enabled ones only, sorted: "+adx,+aes,..." */
  char cpu_features[LM_FINGERPRINT_FEATURES_MAX];
  char llvm_version[32]; /* "19.1.7" */
  uint64_t l1d_bytes;    /* L1 data cache of cpu0 (0 if unknown) */
  uint64_t l2_bytes;     /* L2 of cpu0 (0 if unknown) */
  uint64_t l3_bytes;     /* L3 of cpu0 (0 if none) */
  int cores;             /* physical cores (hwloc), else configured CPUs */
  char hash[17];         /* 16 hex digits (FNV-1a) over the fields above */
} lm_fingerprint;

/* Fingerprint this machine: LLVM for the CPU, hwloc for caches and cores
 * (whole machine, not only this process's cpuset), sysfs and sysconf when
 * hwloc cannot tell.  Fills every field, hash included. */
lm_status lm_fingerprint_host(lm_fingerprint *out, lm_error *err);
/* Recompute fp->hash from the other fields (after editing them). */
void lm_fingerprint_rehash(lm_fingerprint *fp);
/* Every field equal (the hash included). */
bool lm_fingerprint_equal(const lm_fingerprint *a, const lm_fingerprint *b);
/* Write the fields that differ from a to b into buf, human-readable:
 * `cpu_name ("skylake" -> "znver4"), cpu_features (-avx512f +sse4a)`.
 * Returns how many fields differ (0: buf is ""). */
int lm_fingerprint_diff(const lm_fingerprint *a, const lm_fingerprint *b,
                        char *buf, size_t n);

/* ---- profile contents ---------------------------------------------------- */

typedef enum lm_profile_mode {
  LM_PROFILE_DEFAULT = 0, /* uncalibrated defaults, no fit behind them */
  LM_PROFILE_QUICK = 1,   /* quick calibration (a subset of the suite) */
  LM_PROFILE_FULL = 2,    /* the full calibration suite */
} lm_profile_mode;

/* "default", "quick", "full". */
const char *lm_profile_mode_name(lm_profile_mode m);
lm_status lm_profile_mode_parse(const char *text, lm_profile_mode *out,
                                lm_error *err);

/* One cost term.  Values are checked when set: coef, p5, p50, p95, lo, hi
 * finite and >= 0, p5 <= p50 <= p95, lo <= hi, name and unit non-empty. */
typedef struct lm_profile_term {
  const char *name;    /* unique in the profile, e.g. "valu" */
  const char *unit;    /* e.g. "ns/op", "ns/byte" */
  double coef;         /* the fitted coefficient */
  double p5, p50, p95; /* bootstrap percentiles of coef */
  double lo, hi;       /* plausible range */
  bool flagged; /* the fit judged coef suspicious (e.g. outside lo..hi) */
} lm_profile_term;

/* One raw calibration sample.  features has one count per term, aligned
 * with the profile's terms; all values finite and >= 0, reps >= 1. */
typedef struct lm_profile_sample {
  const char *bench;      /* benchmark name, e.g. "load_l1_f32" */
  const char *family;     /* benchmark family, e.g. "bandwidth" */
  const double *features; /* [nterms] dynamic counts per call */
  double ns;              /* time per call, in the profile's units */
  double min;             /* fastest sample, per call */
  double spread;          /* relative spread of the samples */
  int64_t reps;           /* calls per sample */
} lm_profile_sample;

/* Fit diagnostics. */
typedef struct lm_profile_diagnostics {
  double condition;   /* condition number, >= 1; INFINITY if rank-deficient
                         or nothing was fitted */
  int rank;           /* numerical rank of the design, 0..nterms */
  double rms_rel_err; /* root-mean-square relative error over the samples */
} lm_profile_diagnostics;

/* Leave-one-out error of one benchmark: the relative error of its samples'
 * predictions by a fit that left them out. */
typedef struct lm_profile_loo {
  const char *bench; /* names a sample's bench */
  double rel_err;    /* finite, >= 0 */
} lm_profile_loo;

typedef struct lm_profile lm_profile;

/* A new, empty profile for ISA target `isa` (e.g. "x86-64-v4"): units "ns",
 * created now, an all-zero fingerprint (set one before saving), no terms,
 * no samples, condition INFINITY, rank 0, extra diagnostics {}.  NULL with
 * err set on bad input. */
lm_give lm_profile *lm_profile_new(const char *isa, lm_profile_mode mode,
                                   lm_error *err);
void lm_profile_free(lm_take lm_profile *p);
/* Every field equal; doubles compared bit for bit. */
bool lm_profile_equal(lm_keep const lm_profile *a, lm_keep const lm_profile *b);

const char *lm_profile_get_isa(lm_keep const lm_profile *p);
lm_profile_mode lm_profile_get_mode(lm_keep const lm_profile *p);
const char *lm_profile_get_units(lm_keep const lm_profile *p);
const char *lm_profile_get_created(lm_keep const lm_profile *p); /* ISO 8601 */
const lm_fingerprint *lm_profile_get_fingerprint(lm_keep const lm_profile *p);

lm_status lm_profile_set_isa(lm_keep lm_profile *p, const char *isa,
                             lm_error *err);
lm_status lm_profile_set_mode(lm_keep lm_profile *p, lm_profile_mode mode,
                              lm_error *err);
lm_status lm_profile_set_units(lm_keep lm_profile *p, const char *units,
                               lm_error *err);
/* "YYYY-MM-DDTHH:MM:SSZ" (UTC). */
lm_status lm_profile_set_created(lm_keep lm_profile *p, const char *iso8601,
                                 lm_error *err);
/* The hash must match the fields (lm_fingerprint_rehash). */
lm_status lm_profile_set_fingerprint(lm_keep lm_profile *p,
                                     const lm_fingerprint *fp, lm_error *err);

/* Terms are added before any sample or bootstrap vector, since those are
 * aligned with them; set_term replaces term i afterwards (e.g. with the
 * fitted coefficient). */
lm_status lm_profile_add_term(lm_keep lm_profile *p, const lm_profile_term *t,
                              lm_error *err);
lm_status lm_profile_set_term(lm_keep lm_profile *p, int i,
                              const lm_profile_term *t, lm_error *err);
int lm_profile_nterms(lm_keep const lm_profile *p);
const lm_profile_term *lm_profile_term_at(lm_keep const lm_profile *p, int i);
int lm_profile_term_index(lm_keep const lm_profile *p, const char *name);

/* Samples copy s->features (nterms values).  Each sample's residual starts
 * at 0. */
lm_status lm_profile_add_sample(lm_keep lm_profile *p,
                                const lm_profile_sample *s, lm_error *err);
int lm_profile_nsamples(lm_keep const lm_profile *p);
const lm_profile_sample *lm_profile_sample_at(lm_keep const lm_profile *p,
                                              int i);
/* Residuals, one per sample: measured minus predicted, in the profile's
 * units (finite).  n must equal the sample count. */
lm_status lm_profile_set_residuals(lm_keep lm_profile *p, const double *r,
                                   int n, lm_error *err);
const double *lm_profile_get_residuals(lm_keep const lm_profile *p);

lm_status lm_profile_set_diagnostics(lm_keep lm_profile *p,
                                     const lm_profile_diagnostics *d,
                                     lm_error *err);
lm_profile_diagnostics lm_profile_get_diagnostics(lm_keep const lm_profile *p);
/* One benchmark's leave-one-out error; bench must name a sample's bench
 * and have no error yet. */
lm_status lm_profile_add_loo(lm_keep lm_profile *p, const char *bench,
                             double rel_err, lm_error *err);
int lm_profile_nloo(lm_keep const lm_profile *p);
const lm_profile_loo *lm_profile_loo_at(lm_keep const lm_profile *p, int i);
/* Free-form extra diagnostics (e.g. the composition check on mixed
 * kernels): the text of one JSON object.  Numbers keep their exact double
 * value through save and load.  The getter returns compact JSON. */
lm_status lm_profile_set_extra(lm_keep lm_profile *p, const char *json_object,
                               lm_error *err);
const char *lm_profile_get_extra(lm_keep const lm_profile *p);

/* Bootstrap coefficient vectors: b rows of nterms coefficients, row-major,
 * each finite and >= 0, so a prediction can be re-run under every
 * resample.  b = 0 clears them. */
lm_status lm_profile_set_bootstrap(lm_keep lm_profile *p, const double *coefs,
                                   int b, lm_error *err);
/* Row-major [*b][nterms]; NULL when *b is 0. */
const double *lm_profile_get_bootstrap(lm_keep const lm_profile *p, int *b);

/* ---- the noise verdict ---------------------------------------------------
 *
 * Whether the timing behind the samples was fit to decide with: the
 * verdict of the comparison that timed them (lanemap/noise.h), and the
 * families whose own measures passed a limit.  The global measures
 * (canary, busy, steal, the overall spread) concern every family and are
 * kept once, in the verdict; a family names only its own: the median
 * spread of its entries, and the pool's measures for a family that
 * launches on more than one worker.  A profile without a verdict (the
 * defaults, or one of a build before lanemap.profile/1.1) has none
 * recorded, and counts as quiet. */

typedef struct lm_profile_noisy_family {
  const char *family; /* names a sample's family */
  unsigned reasons;   /* LM_NOISE_* bits, at least one */
  double spread;      /* median spread of the family's entries, >= 0 */
} lm_profile_noisy_family;

/* Record the verdict n (NULL: none).  The noisy families belonged to the
 * verdict before, so they are dropped; add them after.  The verdict is
 * stored as lm_noise_to_json writes it and lm_noise_from_json reads
 * it back, so what is in memory is what a save and a load give. */
lm_status lm_profile_set_noise(lm_keep lm_profile *p, const lm_noise *n,
                               lm_error *err);
/* The verdict; NULL when none is recorded. */
const lm_noise *lm_profile_get_noise(lm_keep const lm_profile *p);
/* A noisy family: after the verdict, naming a sample's family once,
 * reasons known LM_NOISE_* bits (at least one). */
lm_status lm_profile_add_noisy_family(lm_keep lm_profile *p,
                                      const lm_profile_noisy_family *f,
                                      lm_error *err);
int lm_profile_nnoisy_families(lm_keep const lm_profile *p);
const lm_profile_noisy_family *
lm_profile_noisy_family_at(lm_keep const lm_profile *p, int i);
/* The verdict is noisy, or some family passed a limit of interference
 * (LM_NOISE_INTERFERENCE): the profile's coefficients rest on disturbed
 * measurements.  A family listed for its spread alone is unstable, not
 * noisy: its samples weigh less in the fit, and the profile is used. */
bool lm_profile_noisy(lm_keep const lm_profile *p);
/* The same rule on a verdict and its families before they are a profile
 * (the calibration decides by it whether to time a comparison again). */
bool lm_noise_families_noisy(const lm_noise *whole,
                             const lm_profile_noisy_family *fam, int nfam);
/* The verdict for people, into buf (always terminated); returns buf:
 *   quiet (no verdict recorded)
 *   quiet
 *   noisy: every family: canary drift 12% > 5%; forkjoin: workers ...;
 *   math: spread 14% > 10% */
const char *lm_profile_describe_noise(lm_keep const lm_profile *p, char *buf,
                                      size_t n);

/* ---- the cost model's coefficients ---------------------------------------
 *
 * The cost model takes plain coefficients (lm_coefs, lanemap/costmodel.h);
 * a profile is where they come from.  These read them and forward to the
 * cost model's lm_cost_predict_coefs and lm_predictor_new_coefs. */

/* Cache sizes of a fingerprint; a size it does not know (0) keeps
 * lm_caches_default's. */
void lm_caches_from_fingerprint(const lm_fingerprint *fp, lm_caches *out);
/* The profile's coefficients in term order (terms the cost model does not
 * know are skipped, terms the profile lacks are 0; "overlap" is capped at
 * 1) and its fingerprint's cache sizes.  LM_EINPUT for a negative or
 * non-finite coefficient. */
lm_status lm_coefs_from_profile(lm_keep const lm_profile *p, lm_coefs *out,
                                lm_error *err);
/* The same under bootstrap resample b of the profile. */
lm_status lm_coefs_from_bootstrap(lm_keep const lm_profile *p, int b,
                                  lm_coefs *out, lm_error *err);
/* Predict with the profile's coefficients, including the bootstrap
 * interval over its resamples. */
lm_status lm_cost_predict(lm_keep const lm_profile *p, const lm_kernel *k,
                          const lm_variant *v, const lm_shape *s,
                          lm_prediction *out, lm_error *err);
/* The compiled predictor under the profile's coefficients (the profile
 * may be freed afterwards). */
lm_status lm_predictor_new(lm_keep const lm_profile *p, const lm_kernel *k,
                           const lm_variant *vs, int n,
                           lm_give lm_predictor **out, lm_error *err);

/* ---- files --------------------------------------------------------------- */

/* What loading found besides errors: the caller prints the warning. */
typedef struct lm_profile_load_info {
  char schema[64];          /* the file's schema string */
  bool fingerprint_checked; /* this machine could be fingerprinted */
  int fingerprint_diffs;    /* fields of the fingerprint that differ */
  char warning[2048];       /* "" when the profile matches this machine */
} lm_profile_load_info;

/* Write p as pretty JSON, atomically (lm_file_write_atomic): on failure the
 * old file is intact. */
lm_status lm_profile_save(lm_keep const lm_profile *p, const char *path,
                          lm_error *err);
/* Read and check a profile file.  Any malformed field is LM_EINPUT with
 * "PATH: FIELD: expected ..., got ...", FIELD a JSON path such as
 * $.terms[3].coef (docs/json.md).  A profile from another machine loads, and info->warning
 * names the fingerprint fields that differ.  info may be NULL. */
lm_status lm_profile_load(const char *path, lm_give lm_profile **out,
                          lm_profile_load_info *info, lm_error *err);
/* The same from text already in memory; `name` stands for the file in
 * messages.  text need not be NUL-terminated. */
lm_status lm_profile_from_json_text(const char *name, const char *text,
                                    size_t n, lm_give lm_profile **out,
                                    lm_profile_load_info *info, lm_error *err);
/* The pretty JSON text lm_profile_save writes (malloc'ed). */
lm_status lm_profile_to_json_text(lm_keep const lm_profile *p,
                                  lm_give char **out, lm_error *err);

/* Where the calibrated profile of this machine for (isa, mode) is cached:
 * DIR/profile-<fingerprint hash>-<isa>-<mode>.json, DIR being
 * $LANEMAP_CACHE_DIR if set, else $XDG_CACHE_HOME/lanemap if that is an
 * absolute path, else ~/.cache/lanemap.  DIR is created.  isa may hold
 * only letters, digits, '.', '_' and '-'. */
lm_status lm_profile_cache_path(const char *isa, lm_profile_mode mode,
                                char *buf, size_t n, lm_error *err);

#ifdef __cplusplus
}
#endif
#endif
