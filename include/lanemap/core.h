/* lanemap core: status codes, the error record every library call fills,
 * and the arena that holds short-lived compile data.
 *
 * The library never prints and never exits.  A call that fails returns a
 * status and leaves a message in the caller's lm_error; the CLI prints it.
 * Status values double as the CLI's exit codes (0 ok, 1 a checked property
 * failed, 2 bad input). */
#ifndef LANEMAP_CORE_H
#define LANEMAP_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LANEMAP_VERSION_MAJOR 0
#define LANEMAP_VERSION_MINOR 1
#define LANEMAP_VERSION_PATCH 0
#define LANEMAP_VERSION_STRING "0.1.0"

/* Ownership words used in prototypes (isl style): the callee takes the
 * argument, the caller receives a new object, or the callee only borrows. */
#define lm_take
#define lm_give
#define lm_keep

typedef enum lm_status {
  LM_OK = 0,
  LM_EFAIL = 1,  /* a checked property failed (verification, budget) */
  LM_EINPUT = 2, /* bad input: source, shape, variant string, file, flag */
  LM_ESYS = 3,   /* the system refused: I/O, memory, LLVM */
} lm_status;

typedef struct lm_error {
  lm_status status;
  char msg[2048]; /* "file:line:col: error: ..." for kernel sources */
} lm_error;

/* Set err (if non-NULL) and return status, so callers write
 * `return lm_error_set(err, LM_EINPUT, "...", ...);`. */
lm_status lm_error_set(lm_error *err, lm_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void lm_error_clear(lm_error *err);

/* Runtime version string, equal to LANEMAP_VERSION_STRING of the build. */
const char *lm_version(void);

/* The version as one number, MAJOR * 10000 + MINOR * 100 + PATCH, so a
 * program can compare what it was compiled against (LANEMAP_VERSION_NUMBER)
 * with the library it runs on (lm_version_number()).  Compatibility: the
 * same major version keeps the API and ABI (before 1.0, the same minor).
 * Thread-safe. */
#define LANEMAP_VERSION_NUMBER                                                 \
  (LANEMAP_VERSION_MAJOR * 10000 + LANEMAP_VERSION_MINOR * 100 +               \
   LANEMAP_VERSION_PATCH)
unsigned lm_version_number(void);
/* 1 if a program built against header version `compiled`
 * (LANEMAP_VERSION_NUMBER) can use this library, by the rule above. */
int lm_version_compatible(unsigned compiled);

/* Arena: bump allocation in chunks, freed in one call. */
typedef struct lm_arena lm_arena;
lm_give lm_arena *lm_arena_new(void);
void lm_arena_free(lm_take lm_arena *a);
void *lm_arena_alloc(lm_keep lm_arena *a, size_t n); /* zeroed, 16-aligned */
char *lm_arena_strndup(lm_keep lm_arena *a, const char *s, size_t n);
char *lm_arena_strdup(lm_keep lm_arena *a, const char *s);
/* A malloc'ed copy of s; NULL if s is NULL or memory runs out. */
lm_give char *lm_strdup(const char *s);

/* Files are written atomically: data goes to a temp file beside path, is
 * fsynced, then renamed over path. On failure path is untouched.  A
 * symlink is followed, and its target written atomically.  A device node,
 * FIFO or socket is written through, never replaced (`-o /dev/stdout`
 * prints; `/dev/full` fails with ENOSPC, LM_ESYS).  A folder is LM_EINPUT.  A
 * SIGINT, SIGTERM or SIGHUP during the write removes the temp file before
 * the process dies (handlers are installed only over default actions), and
 * SIGXFSZ during the write (a file-size limit, a full quota) becomes an
 * LM_ESYS error instead of killing the process. */
lm_status lm_file_write_atomic(const char *path, const void *data, size_t n,
                               lm_error *err);
/* Whether path can be written, checked before work whose result would be
 * lost otherwise (minutes of calibration, an object whose header cannot
 * be written): the same LM_ESYS error lm_file_write_atomic would give for
 * a folder as the path, or a folder that is missing, not a folder, or
 * read-only. */
lm_status lm_file_check_writable(const char *path, lm_error *err);
/* A read-modify-write of path (read it, add to it, write it atomically)
 * holds this lock from the read to the write, so that two processes
 * updating one file do not lose each other's data: an exclusive flock on
 * the sidecar file PATH.lock beside the file path resolves to (the write's
 * rename replaces PATH's inode, so PATH itself cannot carry the lock).  The
 * sidecar stays behind, empty.  A path that names a device, FIFO or socket
 * takes no lock (*lock is -1).  Blocks until the lock is free; not
 * re-entrant within a process.  lm_file_unlock(*lock) releases it. */
lm_status lm_file_lock(const char *path, int *lock, lm_error *err);
void lm_file_unlock(int lock);
/* mkdir -p: the folder dir and any missing parents (0777 less the umask).
 * An existing folder is fine; a path through a file is LM_ESYS naming dir
 * and the reason. */
lm_status lm_file_make_dirs(const char *dir, lm_error *err);
/* The most any input file may hold (kernel sources, plans hashed by
 * dispatch, ...): far beyond real inputs, and refused as itself rather
 * than read until memory runs out (`check /dev/zero`). */
#define LM_FILE_MAX_BYTES ((size_t)256 << 20)
/* Read a whole file, at most LM_FILE_MAX_BYTES; *out is malloc'ed and
 * NUL-terminated.  A folder, or a longer input (also an endless one such
 * as a device), is LM_EINPUT naming the limit. */
lm_status lm_file_read(const char *path, lm_give char **out, size_t *n,
                       lm_error *err);
/* The same with a limit of max bytes; `what` names the kind of file in
 * the message ("... the most a JSON file may hold"). */
lm_status lm_file_read_max(const char *path, size_t max, const char *what,
                           lm_give char **out, size_t *n, lm_error *err);

/* FNV-1a, 64 bits, continuing from h (start from LM_FNV1A_INIT): stable
 * across builds and platforms, which is all a cache key or a content hash
 * of a kernel needs (this is no defence against forgery). */
#define LM_FNV1A_INIT UINT64_C(0xcbf29ce484222325)
uint64_t lm_fnv1a(uint64_t h, const void *data, size_t n);
/* FNV-1a of a file's bytes as 16 hex digits and a NUL (a plan records it
 * per kernel file, and dispatch checks it). */
lm_status lm_file_hash(const char *path, char buf[17], lm_error *err);

/* A set of keys (byte strings), each with the value it was added with: a
 * loader's check that no name, shape or variant is given twice, in O(1)
 * per key instead of a scan of every earlier one.  Keys are copied. */
typedef struct lm_strset lm_strset;
/* NULL when out of memory. */
lm_give lm_strset *lm_strset_new(void);
void lm_strset_free(lm_take lm_strset *s);
/* Add key[0..len) with value unless it is there: *prior is then the value
 * it was first added with, else -1 (values are >= 0).  LM_ESYS when out of
 * memory; the caller words that error. */
lm_status lm_strset_add(lm_keep lm_strset *s, const void *key, size_t len,
                        int64_t value, int64_t *prior);
lm_status lm_strset_add_str(lm_keep lm_strset *s, const char *key,
                            int64_t value, int64_t *prior);
/* Append item to the comma-separated list in buf[0..n) unless it is one
 * of its entries already (a list of host names, say); the list is cut
 * at n - 1 bytes, always terminated.  NULL or "" adds nothing. */
void lm_list_add(char *buf, size_t n, const char *item);
/* The value key was added with, -1 when it is not in the set. */
int64_t lm_strset_get_str(lm_keep const lm_strset *s, const char *key);

#ifdef __cplusplus
}
#endif
#endif
