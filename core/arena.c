/* Arena: compile data lives as long as its kernel or its compile, and is
 * freed in one place.  Chunks grow geometrically; allocations are zeroed
 * and 16-byte aligned. */
#include <stdlib.h>
#include <string.h>

#include "lanemap/core.h"

typedef struct Chunk {
  struct Chunk *next;
  size_t cap, used;
  _Alignas(16) unsigned char data[];
} Chunk;

struct lm_arena {
  Chunk *head;
};

lm_arena *lm_arena_new(void) { return calloc(1, sizeof(lm_arena)); }

void lm_arena_free(lm_arena *a) {
  if (!a)
    return;
  for (Chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(a);
}

void *lm_arena_alloc(lm_arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  Chunk *c = a->head;
  if (!c || c->cap - c->used < n) {
    size_t cap = c ? c->cap * 2 : 4096;
    while (cap < n)
      cap *= 2;
    c = malloc(sizeof(Chunk) + cap);
    if (!c)
      abort(); /* out of memory in compile data: nothing sane to return */
    c->cap = cap;
    c->used = 0;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += n;
  memset(p, 0, n);
  return p;
}

char *lm_arena_strndup(lm_arena *a, const char *s, size_t n) {
  char *p = lm_arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *lm_arena_strdup(lm_arena *a, const char *s) {
  return lm_arena_strndup(a, s, strlen(s));
}

char *lm_strdup(const char *s) {
  if (!s)
    return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}
