/* String sets: which keys a loader has seen, and where it first saw each.
 *
 * A loader refuses a name, a shape or a variant given twice.  Comparing
 * each new entry with every earlier one costs n^2/2 comparisons: 100,000
 * cases took seconds, a million minutes.  This set answers in O(1): an
 * open-addressing table of FNV-1a hashes over entries whose key bytes are
 * kept in one growing buffer (offsets, so a grown buffer moves nothing the
 * table refers to). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lanemap/core.h"

typedef struct Entry {
  uint64_t hash;
  size_t off, len; /* the key's bytes in keys[] */
  int64_t value;
} Entry;

struct lm_strset {
  Entry *e; /* [n] in insertion order */
  size_t n, cap;
  int32_t *slot; /* [nslot]: index into e, or -1 */
  size_t nslot;  /* a power of two, at least 2 * n */
  char *keys;
  size_t nkeys, capkeys;
};

lm_strset *lm_strset_new(void) { return calloc(1, sizeof(lm_strset)); }

void lm_strset_free(lm_strset *s) {
  if (s) {
    free(s->e);
    free(s->slot);
    free(s->keys);
    free(s);
  }
}

static int grow_slots(lm_strset *s) {
  size_t n = s->nslot ? s->nslot * 2 : 64;
  int32_t *t = malloc(sizeof *t * n);
  if (!t)
    return 0;
  memset(t, 0xff, sizeof *t * n);
  for (size_t i = 0; i < s->n; i++) {
    size_t h = (size_t)s->e[i].hash & (n - 1);
    while (t[h] >= 0)
      h = (h + 1) & (n - 1);
    t[h] = (int32_t)i;
  }
  free(s->slot);
  s->slot = t;
  s->nslot = n;
  return 1;
}

/* The value of key, or -1. */
static int64_t find(const lm_strset *s, const void *key, size_t len,
                    uint64_t h) {
  if (s->nslot) {
    for (size_t i = (size_t)h & (s->nslot - 1); s->slot[i] >= 0;
         i = (i + 1) & (s->nslot - 1)) {
      const Entry *e = &s->e[s->slot[i]];
      if (e->hash == h && e->len == len &&
          memcmp(s->keys + e->off, key, len) == 0)
        return e->value;
    }
  }
  return -1;
}

int64_t lm_strset_get_str(const lm_strset *s, const char *key) {
  size_t len = strlen(key);
  return find(s, key, len, lm_fnv1a(LM_FNV1A_INIT, key, len));
}

lm_status lm_strset_add(lm_strset *s, const void *key, size_t len,
                        int64_t value, int64_t *prior) {
  uint64_t h = lm_fnv1a(LM_FNV1A_INIT, key, len);
  if ((*prior = find(s, key, len, h)) >= 0)
    return LM_OK;
  if (s->n >= INT32_MAX)
    return LM_ESYS;
  if (2 * (s->n + 1) > s->nslot && !grow_slots(s))
    return LM_ESYS;
  if (s->n == s->cap) {
    size_t c = s->cap ? s->cap * 2 : 32;
    Entry *e = realloc(s->e, sizeof *e * c);
    if (!e)
      return LM_ESYS;
    s->e = e;
    s->cap = c;
  }
  if (s->nkeys + len > s->capkeys) {
    size_t c = s->capkeys ? s->capkeys : 256;
    while (c < s->nkeys + len)
      c *= 2;
    char *k = realloc(s->keys, c);
    if (!k)
      return LM_ESYS;
    s->keys = k;
    s->capkeys = c;
  }
  if (len)
    memcpy(s->keys + s->nkeys, key, len);
  s->e[s->n] = (Entry){h, s->nkeys, len, value};
  s->nkeys += len;
  size_t i = (size_t)h & (s->nslot - 1);
  while (s->slot[i] >= 0)
    i = (i + 1) & (s->nslot - 1);
  s->slot[i] = (int32_t)s->n++;
  return LM_OK;
}

lm_status lm_strset_add_str(lm_strset *s, const char *key, int64_t value,
                            int64_t *prior) {
  return lm_strset_add(s, key, strlen(key), value, prior);
}

void lm_list_add(char *buf, size_t n, const char *item) {
  if (!item || !*item || n == 0)
    return;
  size_t len = strlen(item);
  for (const char *p = buf; *p;) {
    const char *q = strchr(p, ',');
    size_t l = q ? (size_t)(q - p) : strlen(p);
    if (l == len && strncmp(p, item, len) == 0)
      return;
    p = q ? q + 1 : p + l;
  }
  size_t used = strlen(buf);
  if (used + 1 < n)
    snprintf(buf + used, n - used, "%s%s", used ? "," : "", item);
}
