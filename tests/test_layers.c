/* The include graph follows the layer table (cmake/layers.txt): every
 * #include "..." in a module's folder and in include/lanemap/ names a
 * header (public, or internal to a module folder) of the same or a lower
 * layer; an edge that runs up the table and a header no module holds are
 * each reported with the file and line.
 *
 * The build refuses most of these already (cmake/Layers.cmake: a module
 * sees only its own and lower layers' headers, so the include is not
 * found).  This check also catches what include paths cannot: a relative
 * include ("../solver/plan.h") that the compiler finds beside the file, and
 * a public header missing from the table.  The checker runs on a small tree
 * with planted faults too, so that it is known to fail when it should. */
#include <criterion/criterion.h>

#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Not every helper of run.h is used here. */
#pragma GCC diagnostic ignored "-Wunused-function"
#include "tests/support/run.h"

#define MAX_MODULES 32
#define MAX_HEADERS 128

typedef struct Table {
  int nmod;
  char mod[MAX_MODULES][32];
  int nhdr;
  char hdr[MAX_HEADERS][64]; /* a public header's name */
  int owner[MAX_HEADERS];    /* its module's layer */
} Table;

typedef struct Report {
  char text[1 << 16];
  size_t n;
  int count;
} Report;

static void report(Report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void report(Report *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (r->n < sizeof r->text) {
    int m = vsnprintf(r->text + r->n, sizeof r->text - r->n, fmt, ap);
    r->n += m > 0 ? (size_t)m : 0;
    if (r->n > sizeof r->text)
      r->n = sizeof r->text;
  }
  va_end(ap);
  r->count++;
}

static int read_table(const char *path, Table *t) {
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  memset(t, 0, sizeof *t);
  char line[1024];
  while (fgets(line, sizeof line, f)) {
    if (line[0] < 'a' || line[0] > 'z')
      continue;
    char *save = NULL, *w = strtok_r(line, " \t\r\n", &save);
    if (t->nmod == MAX_MODULES)
      break;
    snprintf(t->mod[t->nmod], sizeof t->mod[0], "%s", w);
    while ((w = strtok_r(NULL, " \t\r\n", &save)) && t->nhdr < MAX_HEADERS) {
      snprintf(t->hdr[t->nhdr], sizeof t->hdr[0], "%s", w);
      t->owner[t->nhdr++] = t->nmod;
    }
    t->nmod++;
  }
  fclose(f);
  return 0;
}

static int module_of(const Table *t, const char *name, size_t n) {
  for (int i = 0; i < t->nmod; i++)
    if (strlen(t->mod[i]) == n && strncmp(t->mod[i], name, n) == 0)
      return i;
  return -1;
}

static int owner_of(const Table *t, const char *header) {
  for (int i = 0; i < t->nhdr; i++)
    if (strcmp(t->hdr[i], header) == 0)
      return t->owner[i];
  return -1;
}

/* What an include names: a public header of module `mod` (pub = 1), a file
 * in module mod's folder (pub = 0), or nothing of the table (mod = -1).
 * Both count as the module's layer. */
typedef struct Target {
  int mod, pub;
} Target;

/* Classify a path relative to the root: include/lanemap/X.h or M/... */
static Target classify_path(const Table *t, const char *rel) {
  Target g = {-1, 0};
  if (strncmp(rel, "include/lanemap/", 16) == 0) {
    g.mod = owner_of(t, rel + 16);
    g.pub = 1;
    return g;
  }
  const char *slash = strchr(rel, '/');
  if (slash)
    g.mod = module_of(t, rel, (size_t)(slash - rel));
  return g;
}

/* Resolve `inc` as the compiler would from a file in folder dir (relative
 * to root): beside the file first, then from the include path. */
static Target resolve(const Table *t, const char *root, const char *dir,
                      const char *inc) {
  if (strncmp(inc, "lanemap/", 8) == 0 && !strchr(inc + 8, '/'))
    return (Target){owner_of(t, inc + 8), 1};
  char path[PATH_MAX], real[PATH_MAX], rroot[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s/%s", root, dir, inc);
  struct stat st;
  if (stat(path, &st) == 0 && realpath(path, real) && realpath(root, rroot)) {
    size_t n = strlen(rroot);
    if (strncmp(real, rroot, n) == 0 && real[n] == '/')
      return classify_path(t, real + n + 1);
    return (Target){-1, 0};
  }
  return classify_path(t, inc);
}

/* Check every quoted include of root/dir/name, a file of layer `layer`. */
static void check_file(const Table *t, const char *root, const char *dir,
                       const char *name, int layer, Report *r) {
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s/%s/%s", root, dir, name);
  FILE *f = fopen(path, "r");
  if (!f) {
    report(r, "%s/%s: cannot be read\n", dir, name);
    return;
  }
  char line[4096];
  for (int ln = 1; fgets(line, sizeof line, f); ln++) {
    const char *p = line;
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p++ != '#')
      continue;
    while (*p == ' ' || *p == '\t')
      p++;
    if (strncmp(p, "include", 7) != 0)
      continue;
    p += 7;
    while (*p == ' ' || *p == '\t')
      p++;
    const char *q = *p == '"' ? strchr(p + 1, '"') : NULL;
    if (!q)
      continue; /* <system> headers */
    char inc[1024];
    snprintf(inc, sizeof inc, "%.*s", (int)(q - p - 1), p + 1);
    Target g = resolve(t, root, dir, inc);
    const char *me = t->mod[layer];
    if (g.mod < 0)
      report(r,
             "%s/%s:%d: includes \"%s\", which no module of the layer "
             "table holds\n",
             dir, name, ln, inc);
    else if (g.mod > layer)
      report(r,
             "%s/%s:%d: %s (layer %d) includes \"%s\" of %s (layer %d), "
             "a higher layer\n",
             dir, name, ln, me, layer + 1, inc, t->mod[g.mod], g.mod + 1);
  }
  fclose(f);
}

static int is_source(const char *name) {
  size_t n = strlen(name);
  return n > 2 && name[n - 2] == '.' &&
         (name[n - 1] == 'c' || name[n - 1] == 'h');
}

/* Check the tree at root against root/cmake/layers.txt; the number of
 * faults found, each a line of r->text. */
static int check_tree(const char *root, Report *r) {
  static Table t;
  char path[PATH_MAX];
  memset(r, 0, sizeof *r);
  snprintf(path, sizeof path, "%s/cmake/layers.txt", root);
  if (read_table(path, &t) != 0 || t.nmod == 0) {
    report(r, "%s: cannot be read or lists no module\n", path);
    return r->count;
  }
  for (int m = 0; m < t.nmod; m++) {
    snprintf(path, sizeof path, "%s/%s", root, t.mod[m]);
    DIR *d = opendir(path);
    if (!d)
      continue; /* a module without a folder (the umbrella header) */
    for (struct dirent *e; (e = readdir(d));)
      if (is_source(e->d_name))
        check_file(&t, root, t.mod[m], e->d_name, m, r);
    closedir(d);
  }
  snprintf(path, sizeof path, "%s/include/lanemap", root);
  DIR *d = opendir(path);
  if (!d) {
    report(r, "%s: cannot be read\n", path);
    return r->count;
  }
  for (struct dirent *e; (e = readdir(d));) {
    if (!is_source(e->d_name))
      continue;
    int m = owner_of(&t, e->d_name);
    if (m < 0)
      report(r, "include/lanemap/%s: no module of the layer table owns it\n",
             e->d_name);
    else
      check_file(&t, root, "include/lanemap", e->d_name, m, r);
  }
  closedir(d);
  for (int i = 0; i < t.nhdr; i++) {
    struct stat st;
    snprintf(path, sizeof path, "%s/include/lanemap/%s", root, t.hdr[i]);
    if (stat(path, &st) != 0)
      report(r,
             "cmake/layers.txt: %s owns %s, which include/lanemap/ does "
             "not have\n",
             t.mod[t.owner[i]], t.hdr[i]);
    for (int j = 0; j < i; j++)
      if (strcmp(t.hdr[i], t.hdr[j]) == 0)
        report(r, "cmake/layers.txt: %s is owned by %s and by %s\n", t.hdr[i],
               t.mod[t.owner[j]], t.mod[t.owner[i]]);
  }
  return r->count;
}

TestSuite(layers, .init = run_tmp_make, .fini = run_tmp_remove);

Test(layers, no_include_runs_up_the_layer_table_or_into_another_module) {
  static Report r;
  int n = check_tree(LANEMAP_SOURCE_DIR, &r);
  cr_assert_eq(n, 0, "%d faults:\n%s", n, r.text);
}

/* A tree of three layers a < b < c with one fault of each kind. */
static void plant(const char *path, const char *text) {
  char dir[PATH_MAX];
  snprintf(dir, sizeof dir, "%s", path);
  for (char *s = strchr(dir + strlen(run_tmpdir) + 1, '/'); s;
       s = strchr(s + 1, '/')) {
    *s = 0;
    mkdir(dir, 0755);
    *s = '/';
  }
  run_write(path, text);
}

static void plant_tree(void) {
  plant(run_tmp("cmake/layers.txt"), "# the table\na  a.h\nb  b.h\nc  c.h\n");
  plant(run_tmp("include/lanemap/a.h"), "#include <stdio.h>\n");
  plant(run_tmp("include/lanemap/b.h"), "#include \"lanemap/a.h\"\n");
  plant(run_tmp("include/lanemap/c.h"), "#include \"lanemap/b.h\"\n");
  plant(run_tmp("a/ok.c"), "#include \"lanemap/a.h\"\n#include \"a/own.h\"\n");
  plant(run_tmp("a/own.h"), "#include \"lanemap/a.h\"\n");
  plant(run_tmp("c/internal.h"), "#include \"lanemap/c.h\"\n");
  plant(run_tmp("c/ok.c"),
        "#include \"lanemap/a.h\"\n#include \"lanemap/c.h\"\n"
        "#include \"internal.h\"\n");
}

Test(layers, the_checker_passes_a_tree_that_keeps_the_table) {
  static Report r;
  plant_tree();
  int n = check_tree(run_tmpdir, &r);
  cr_assert_eq(n, 0, "%s", r.text);
}

Test(layers, an_upward_include_is_reported_with_its_file_and_line) {
  static Report r;
  plant_tree();
  plant(run_tmp("a/up.c"),
        "#include \"lanemap/a.h\"\n\n  # include \"lanemap/b.h\"\n");
  plant(run_tmp("include/lanemap/a.h"),
        "#include <stdio.h>\n#include \"lanemap/c.h\"\n");
  cr_assert_eq(check_tree(run_tmpdir, &r), 2, "%s", r.text);
  cr_expect(strstr(r.text,
                   "a/up.c:3: a (layer 1) includes \"lanemap/b.h\" of b "
                   "(layer 2), a higher layer\n"),
            "%s", r.text);
  cr_expect(strstr(r.text, "include/lanemap/a.h:2: a (layer 1) includes "
                           "\"lanemap/c.h\" of c (layer 3), a higher layer\n"),
            "%s", r.text);
}

Test(layers,
     a_relative_include_that_the_include_path_would_not_stop_is_reported) {
  static Report r;
  plant_tree();
  plant(run_tmp("a/sneak.c"), "#include \"../include/lanemap/c.h\"\n");
  cr_assert_eq(check_tree(run_tmpdir, &r), 1, "%s", r.text);
  cr_expect(strstr(r.text, "a/sneak.c:1: a (layer 1) includes "
                           "\"../include/lanemap/c.h\" of c (layer 3)"),
            "%s", r.text);
}

Test(layers, an_internal_header_counts_as_its_modules_layer) {
  static Report r;
  plant_tree();
  /* down into a's folder is allowed, up into c's is not */
  plant(run_tmp("b/reach.c"),
        "#include \"a/own.h\"\n#include \"../c/internal.h\"\n"
        "#include \"c/internal.h\"\n");
  cr_assert_eq(check_tree(run_tmpdir, &r), 2, "%s", r.text);
  cr_expect(strstr(r.text, "b/reach.c:2: b (layer 2) includes "
                           "\"../c/internal.h\" of c (layer 3), a higher "
                           "layer\n"),
            "%s", r.text);
  cr_expect(strstr(r.text, "b/reach.c:3: b (layer 2) includes "
                           "\"c/internal.h\" of c (layer 3), a higher layer\n"),
            "%s", r.text);
}

Test(layers, a_header_outside_the_table_is_reported) {
  static Report r;
  plant_tree();
  plant(run_tmp("include/lanemap/stray.h"), "\n");
  plant(run_tmp("a/stray.c"),
        "#include \"lanemap/stray.h\"\n#include \"tests/x.h\"\n");
  cr_assert_eq(check_tree(run_tmpdir, &r), 3, "%s", r.text);
  cr_expect(strstr(r.text, "include/lanemap/stray.h: no module of the layer "
                           "table owns it\n"),
            "%s", r.text);
  cr_expect(strstr(r.text,
                   "a/stray.c:1: includes \"lanemap/stray.h\", which no "
                   "module of the layer table holds\n"),
            "%s", r.text);
  cr_expect(strstr(r.text, "a/stray.c:2: includes \"tests/x.h\""), "%s",
            r.text);
}
