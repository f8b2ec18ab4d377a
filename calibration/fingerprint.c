/* Machine fingerprint: what calibrated coefficients depend on, so that a
 * profile used elsewhere can say so.
 *
 * The fields are the ones that move costs: the CPU model and its feature
 * set as LLVM sees them (they decide the instructions the backend emits),
 * the LLVM version (it decides the code for the same IR), the cache sizes
 * (they place the bandwidth knees) and the core count (dispatch and
 * fork-join).  Clock speed is left out on purpose: it changes with load and
 * turbo, and would make two runs on one machine look like two machines.
 *
 * Every field is canonical so that the hash is stable: only the enabled
 * features are kept, sorted, and the caches and cores are those of the
 * whole machine, not of this process's cpuset, so that running under
 * taskset does not change the fingerprint. */
#define _GNU_SOURCE
#include "lanemap/profile.h"

#include <hwloc.h>
#include <inttypes.h>
#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* sysfs has one index<i> folder per cache of a CPU; x86 has 4 (L1d, L1i,
 * L2, L3), and no machine we know has more than 8. */
#define SYSFS_CACHE_INDICES 16

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The enabled features of LLVM's "+a,-b,+c" list, sorted: "+a,+c". */
static lm_status canonical_features(const char *raw, char *out, size_t n,
                                    lm_error *err) {
  char *copy = strdup(raw);
  size_t cap = 1;
  for (const char *s = raw; *s; s++)
    cap += *s == ',';
  char **v = malloc(cap * sizeof *v);
  if (!copy || !v) {
    free(copy);
    free(v);
    return lm_error_set(err, LM_ESYS, "fingerprint: out of memory");
  }
  size_t k = 0;
  for (char *save, *t = strtok_r(copy, ",", &save); t;
       t = strtok_r(NULL, ",", &save))
    if (t[0] == '+')
      v[k++] = t;
  qsort(v, k, sizeof *v, cmp_str);
  size_t len = 0;
  lm_status s = LM_OK;
  out[0] = 0;
  for (size_t i = 0; i < k; i++) {
    size_t tl = strlen(v[i]);
    if (len + tl + 2 > n) {
      s = lm_error_set(err, LM_ESYS,
                       "fingerprint: LLVM's feature list is longer than %zu "
                       "bytes",
                       n - 1);
      break;
    }
    if (i > 0)
      out[len++] = ',';
    memcpy(out + len, v[i], tl + 1);
    len += tl;
  }
  free(v);
  free(copy);
  return s;
}

/* "48K" -> 49152; 0 if unreadable. */
static uint64_t sysfs_size(const char *dir) {
  char path[256], text[64];
  snprintf(path, sizeof path, "%s/size", dir);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  uint64_t v = 0;
  if (fgets(text, sizeof text, f)) {
    char *end;
    v = strtoull(text, &end, 10);
    if (*end == 'K')
      v <<= 10;
    else if (*end == 'M')
      v <<= 20;
    else if (*end == 'G')
      v <<= 30;
  }
  fclose(f);
  return v;
}

static int sysfs_line(const char *dir, const char *name, char *out, size_t n) {
  char path[256];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  int ok = fgets(out, (int)n, f) != NULL;
  fclose(f);
  out[strcspn(out, "\n")] = 0;
  return ok;
}

/* Fill the cache sizes hwloc left at 0 from cpu0's sysfs folders. */
static void caches_from_sysfs(lm_fingerprint *fp) {
  for (int i = 0; i < SYSFS_CACHE_INDICES; i++) {
    char dir[128], level[16], type[32];
    snprintf(dir, sizeof dir, "/sys/devices/system/cpu/cpu0/cache/index%d", i);
    if (!sysfs_line(dir, "level", level, sizeof level) ||
        !sysfs_line(dir, "type", type, sizeof type))
      continue;
    if (strcmp(type, "Instruction") == 0)
      continue;
    uint64_t *slot = level[0] == '1'   ? &fp->l1d_bytes
                     : level[0] == '2' ? &fp->l2_bytes
                     : level[0] == '3' ? &fp->l3_bytes
                                       : NULL;
    if (slot && *slot == 0 && level[1] == 0)
      *slot = sysfs_size(dir);
  }
}

static void caches_and_cores_from_hwloc(lm_fingerprint *fp) {
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) != 0)
    return;
  hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  if (hwloc_topology_load(t) == 0) {
    static const hwloc_obj_type_t level[3] = {
        HWLOC_OBJ_L1CACHE, HWLOC_OBJ_L2CACHE, HWLOC_OBJ_L3CACHE};
    uint64_t *slot[3] = {&fp->l1d_bytes, &fp->l2_bytes, &fp->l3_bytes};
    for (int i = 0; i < 3; i++) {
      hwloc_obj_t o = hwloc_get_obj_by_type(t, level[i], 0);
      if (o && o->attr)
        *slot[i] = o->attr->cache.size;
    }
    int cores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
    if (cores > 0)
      fp->cores = cores;
  }
  hwloc_topology_destroy(t);
}

lm_status lm_fingerprint_host(lm_fingerprint *out, lm_error *err) {
  memset(out, 0, sizeof *out);
  char *name = LLVMGetHostCPUName();
  char *features = LLVMGetHostCPUFeatures();
  lm_status s = LM_OK;
  if (!name || !features) {
    s = lm_error_set(err, LM_ESYS,
                     "fingerprint: LLVM cannot name the host "
                     "CPU");
    goto done;
  }
  if (strlen(name) >= sizeof out->cpu_name || name[0] == 0) {
    s = lm_error_set(err, LM_ESYS,
                     "fingerprint: LLVM's host CPU name \"%s\" "
                     "is empty or too long",
                     name);
    goto done;
  }
  strcpy(out->cpu_name, name);
  s = canonical_features(features, out->cpu_features, sizeof out->cpu_features,
                         err);
  if (s != LM_OK)
    goto done;
  unsigned major, minor, patch;
  LLVMGetVersion(&major, &minor, &patch);
  snprintf(out->llvm_version, sizeof out->llvm_version, "%u.%u.%u", major,
           minor, patch);
  caches_and_cores_from_hwloc(out);
  caches_from_sysfs(out);
  if (out->cores < 1) {
    long n = sysconf(_SC_NPROCESSORS_CONF);
    out->cores = n > 0 ? (int)n : 1;
  }
  lm_fingerprint_rehash(out);
done:
  LLVMDisposeMessage(name);
  LLVMDisposeMessage(features);
  return s;
}

void lm_fingerprint_rehash(lm_fingerprint *fp) {
  char nums[128];
  int n = snprintf(nums, sizeof nums, "%" PRIu64 " %" PRIu64 " %" PRIu64 " %d",
                   fp->l1d_bytes, fp->l2_bytes, fp->l3_bytes, fp->cores);
  uint64_t h = LM_FNV1A_INIT;
  /* the terminating NULs separate the fields */
  h = lm_fnv1a(h, fp->cpu_name, strnlen(fp->cpu_name, sizeof fp->cpu_name) + 1);
  h = lm_fnv1a(h, fp->cpu_features,
               strnlen(fp->cpu_features, sizeof fp->cpu_features) + 1);
  h = lm_fnv1a(h, fp->llvm_version,
               strnlen(fp->llvm_version, sizeof fp->llvm_version) + 1);
  h = lm_fnv1a(h, nums, (size_t)n);
  snprintf(fp->hash, sizeof fp->hash, "%016" PRIx64, h);
}

bool lm_fingerprint_equal(const lm_fingerprint *a, const lm_fingerprint *b) {
  return strcmp(a->cpu_name, b->cpu_name) == 0 &&
         strcmp(a->cpu_features, b->cpu_features) == 0 &&
         strcmp(a->llvm_version, b->llvm_version) == 0 &&
         a->l1d_bytes == b->l1d_bytes && a->l2_bytes == b->l2_bytes &&
         a->l3_bytes == b->l3_bytes && a->cores == b->cores &&
         strcmp(a->hash, b->hash) == 0;
}

/* Appending to a bounded buffer: text past the end is dropped, and the
 * buffer always stays NUL-terminated. */
typedef struct Out {
  char *buf;
  size_t n, len;
} Out;

static void put(Out *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void put(Out *o, const char *fmt, ...) {
  if (o->n == 0 || o->len >= o->n - 1)
    return;
  va_list ap;
  va_start(ap, fmt);
  int w = vsnprintf(o->buf + o->len, o->n - o->len, fmt, ap);
  va_end(ap);
  if (w > 0)
    o->len = o->len + (size_t)w < o->n ? o->len + (size_t)w : o->n - 1;
}

/* Does the comma list `list` hold the item [s, s+n)? */
static bool has_item(const char *list, const char *s, size_t n) {
  for (const char *p = list; *p;) {
    size_t l = strcspn(p, ",");
    if (l == n && memcmp(p, s, n) == 0)
      return true;
    p += l;
    if (*p == ',')
      p++;
  }
  return false;
}

/* Items of `from` missing in `in`, each written as sign + name. */
static int put_missing(Out *o, const char *from, const char *in, char sign,
                       int shown) {
  /* a long list of feature changes says "another CPU"; the first ones are
   * enough to tell which */
  enum { SHOWN_MAX = 8 };
  for (const char *p = from; *p;) {
    size_t l = strcspn(p, ",");
    if (l > 0 && !has_item(in, p, l)) {
      const char *name = p[0] == '+' || p[0] == '-' ? p + 1 : p;
      int nl = (int)(l - (size_t)(name - p));
      if (shown < SHOWN_MAX)
        put(o, "%s%c%.*s", shown ? " " : "", sign, nl, name);
      else if (shown == SHOWN_MAX)
        put(o, " ...");
      shown++;
    }
    p += l;
    if (*p == ',')
      p++;
  }
  return shown;
}

int lm_fingerprint_diff(const lm_fingerprint *a, const lm_fingerprint *b,
                        char *buf, size_t n) {
  Out o = {buf, n, 0};
  if (n > 0)
    buf[0] = 0;
  int d = 0;
#define SEP() put(&o, "%s", d++ ? ", " : "")
  if (strcmp(a->cpu_name, b->cpu_name) != 0) {
    SEP();
    put(&o, "cpu_name (\"%s\" -> \"%s\")", a->cpu_name, b->cpu_name);
  }
  if (strcmp(a->cpu_features, b->cpu_features) != 0) {
    SEP();
    put(&o, "cpu_features (");
    int shown = put_missing(&o, a->cpu_features, b->cpu_features, '-', 0);
    shown = put_missing(&o, b->cpu_features, a->cpu_features, '+', shown);
    if (shown == 0)
      put(&o, "same features, other order");
    put(&o, ")");
  }
  if (strcmp(a->llvm_version, b->llvm_version) != 0) {
    SEP();
    put(&o, "llvm_version (%s -> %s)", a->llvm_version, b->llvm_version);
  }
  const char *cache[3] = {"l1d_bytes", "l2_bytes", "l3_bytes"};
  uint64_t av[3] = {a->l1d_bytes, a->l2_bytes, a->l3_bytes};
  uint64_t bv[3] = {b->l1d_bytes, b->l2_bytes, b->l3_bytes};
  for (int i = 0; i < 3; i++)
    if (av[i] != bv[i]) {
      SEP();
      put(&o, "%s (%" PRIu64 " -> %" PRIu64 ")", cache[i], av[i], bv[i]);
    }
  if (a->cores != b->cores) {
    SEP();
    put(&o, "cores (%d -> %d)", a->cores, b->cores);
  }
  if (d == 0 && strcmp(a->hash, b->hash) != 0) {
    SEP();
    put(&o, "hash (%s -> %s)", a->hash, b->hash);
  }
#undef SEP
  return d;
}
