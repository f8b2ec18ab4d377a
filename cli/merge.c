/* lanemap merge: join the records of sharded or resumed runs into one file.
 *
 * A study split with `evaluate --shard i/N` leaves one records.jsonl per
 * shard; merge concatenates them in the order given and writes
 * OUT_DIR/records.jsonl atomically.  The records of one case all come from
 * one file -- the one holding most of that case's records, the first on a
 * tie -- because the measurements of a case are only comparable within one
 * run (interleaved in one process); its records in other files are
 * dropped.  Within that file a repeated (case, variant) keeps its first
 * record; records outside any case are dropped only when identical.  Nothing measured is lost:
 * records of cases still incomplete are kept, so a later run can resume
 * them, and counted.  Report and plots are rebuilt from the merged records
 * by `evaluate`, which recomputes the policies' choices.
 *
 * Machine identity: every record names the machine type (fingerprint) and
 * node that measured it.  A case is one measurement on one machine type,
 * so the unit above is (fingerprint, case).  Records of two ISA targets are
 * refused (each target has its folder), and so are records of two machine
 * types unless --allow-mixed: then `evaluate` reports each type apart,
 * planned with that type's profile.  The profiles the shards bundled
 * (DIR/profile-<fingerprint>-<mode>.json) are copied into OUT_DIR for every
 * machine type merged, the first input's on a clash. */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lanemap/heldout.h"
#include "lanemap/records.h"

static const char usage[] =
    "usage: lanemap merge [--allow-mixed] -o OUT_DIR DIR_OR_JSONL...\n"
    "  Merge the records of shard outputs (a directory means "
    "DIR/records.jsonl)\n"
    "  into OUT_DIR/records.jsonl, dropping repeated (case, variant) "
    "records,\n"
    "  and copy the profiles the folders bundle (profile-<fingerprint>-"
    "<mode>.json).\n"
    "  -o, --out OUT_DIR  output folder (created if missing): one ISA "
    "target's\n"
    "  --allow-mixed      merge records of several machine types "
    "(fingerprints);\n"
    "                     evaluate then reports each type apart, with its "
    "profile\n"
    "exit codes: 0 ok, 2 bad input or usage, 3 cannot write\n";

/* The case a record belongs to, or NULL outside any case. */
static const char *case_of(const lm_record *r) {
  const cJSON *c =
      r->extra ? cJSON_GetObjectItemCaseSensitive(r->extra, "case") : NULL;
  return cJSON_IsString(c) ? c->valuestring : NULL;
}

/* The measurement a record belongs to, "<fingerprint>\x1f<case>" (a case
 * measured on two machine types is two measurements), or NULL outside any
 * case; malloc'ed into *buf. */
static const char *unit_of(const lm_record *r, char **buf) {
  const char *c = case_of(r);
  *buf = NULL;
  if (!c)
    return NULL;
  if (asprintf(buf, "%s\x1f%s", r->fingerprint ? r->fingerprint : "", c) < 0)
    *buf = NULL;
  return *buf;
}

/* The identity of a record: "C<fingerprint>\x1f<case>\x1f<variant>" inside
 * a case, else "L<the line without its timestamp>"; malloc'ed. */
static char *key_of(const lm_record *r) {
  const char *c = case_of(r);
  if (c) {
    char *k = NULL;
    if (asprintf(&k, "C%s\x1f%s\x1f%s", r->fingerprint ? r->fingerprint : "",
                 c, r->variant) < 0)
      k = NULL;
    return k;
  }
  lm_record t = *r;
  t.timestamp = NULL;
  cJSON *j = NULL;
  lm_error err = {0};
  if (lm_record_to_json(&t, &j, &err) != LM_OK)
    return NULL;
  char *s = cJSON_PrintUnformatted(j);
  cJSON_Delete(j);
  size_t n = s ? strlen(s) + 2 : 0;
  char *k = s ? malloc(n) : NULL;
  if (k)
    snprintf(k, n, "L%s", s);
  free(s);
  return k;
}

/* Per measurement (machine type, case), the file its records are taken
 * from: the one with most of them, the first on a tie.  source[i] gets,
 * for each record i of a case,
 * 1 if it comes from that file, else 0; for records outside a case, 1.
 * Returns -1 when out of memory. */
static int pick_sources(const lm_records *all, const int *file_of, int nfiles,
                        char *source) {
  int ncases = 0, cap = 0, rc = 0;
  int *count = NULL; /* [ncases * nfiles] */
  int *idx = malloc(sizeof *idx * (size_t)(all->n ? all->n : 1));
  lm_strset *names = lm_strset_new(); /* case -> k */
  if (!idx || !names) {
    free(idx);
    lm_strset_free(names);
    return -1;
  }
  for (int i = 0; i < all->n && rc == 0; i++) {
    char *buf;
    const char *c = unit_of(&all->r[i], &buf);
    idx[i] = -1;
    if (!c && case_of(&all->r[i])) {
      rc = -1;
      break;
    }
    if (!c)
      continue;
    int64_t found;
    lm_status ast = lm_strset_add_str(names, c, ncases, &found);
    free(buf);
    if (ast != LM_OK) {
      rc = -1;
      break;
    }
    int k = found >= 0 ? (int)found : ncases;
    if (k == ncases) {
      if (ncases == cap) {
        int nc = cap ? 2 * cap : 64;
        int *ncount = realloc(count, sizeof *ncount * (size_t)nc * nfiles);
        if (!ncount) {
          rc = -1;
          break;
        }
        count = ncount;
        cap = nc;
      }
      memset(count + (size_t)ncases * nfiles, 0, sizeof *count * (size_t)nfiles);
      ncases++;
    }
    idx[i] = k;
    count[(size_t)k * nfiles + file_of[i]]++;
  }
  for (int i = 0; i < all->n && rc == 0; i++) {
    if (idx[i] < 0) {
      source[i] = 1;
      continue;
    }
    const int *c = count + (size_t)idx[i] * nfiles;
    int best = 0;
    for (int f = 1; f < nfiles; f++)
      if (c[f] > c[best])
        best = f;
    source[i] = file_of[i] == best;
  }
  free(idx);
  free(count);
  lm_strset_free(names);
  return rc;
}

/* The machine types of the records: fingerprint, nodes seen, records. */
typedef struct Machine {
  const char *fp; /* "" for records without one */
  char nodes[128];
  int records;
} Machine;

/* Group the records by ISA target and machine type: records of two ISA
 * targets are refused, and of two machine types unless mixed.  *m gets
 * the types (malloc'ed), *nm their number; LM_EINPUT with the message
 * printed. */
static int machine_types(const lm_records *all, int mixed, Machine **m,
                         int *nm) {
  const char *isa = NULL;
  *m = NULL;
  *nm = 0;
  for (int i = 0; i < all->n; i++) {
    const lm_record *r = &all->r[i];
    if (!isa)
      isa = r->isa;
    else if (strcmp(isa, r->isa) != 0) {
      fprintf(stderr,
              "lanemap merge: records of two ISA targets, %s and %s (record "
              "%d): merge each target's folders into its own OUT_DIR "
              "(OUT/%s, OUT/%s)\n",
              isa, r->isa, i + 1, isa, r->isa);
      return LM_EINPUT;
    }
    const char *fp = r->fingerprint ? r->fingerprint : "";
    int k = 0;
    while (k < *nm && strcmp((*m)[k].fp, fp) != 0)
      k++;
    if (k == *nm) {
      Machine *nmv = realloc(*m, sizeof *nmv * (size_t)(*nm + 1));
      if (!nmv) {
        fprintf(stderr, "lanemap merge: out of memory\n");
        return LM_ESYS;
      }
      *m = nmv;
      memset(&nmv[k], 0, sizeof nmv[k]);
      nmv[k].fp = fp;
      (*nm)++;
    }
    const cJSON *node =
        r->extra ? cJSON_GetObjectItemCaseSensitive(r->extra, "node") : NULL;
    lm_list_add((*m)[k].nodes, sizeof (*m)[k].nodes,
             cJSON_IsString(node) ? node->valuestring : NULL);
    (*m)[k].records++;
  }
  if (*nm > 1 && !mixed) {
    fprintf(stderr,
            "lanemap merge: records of %d machine types (fingerprints), "
            "whose timings do not compare:\n",
            *nm);
    for (int k = 0; k < *nm; k++)
      fprintf(stderr, "  %-16s %6d records, nodes %s\n",
              *(*m)[k].fp ? (*m)[k].fp : "(none)", (*m)[k].records,
              (*m)[k].nodes[0] ? (*m)[k].nodes : "?");
    fprintf(stderr, "merge each machine type into its own folder, or give "
                    "--allow-mixed to report each type apart\n");
    return LM_EINPUT;
  }
  return LM_OK;
}

/* Copy DIR/profile-<fp>-*.json of each folder input into out_dir for the
 * machine types merged, the first input's on a clash; say which types
 * have none (evaluate will refuse to plan them). */
static int copy_profiles(char **inputs, int ninputs, const char *out_dir,
                         const Machine *m, int nm) {
  lm_strset *written = lm_strset_new(); /* file names copied by this call */
  if (!written)
    return LM_ESYS;
  int folders = 0; /* inputs that are folders, which bundle profiles */
  for (int f = 0; f < ninputs; f++) {
    struct stat sb;
    folders += stat(inputs[f], &sb) == 0 && S_ISDIR(sb.st_mode);
  }
  for (int k = 0; k < nm; k++) {
    int copied = 0;
    for (int f = 0; f < ninputs && *m[k].fp; f++) {
      struct stat sb;
      if (stat(inputs[f], &sb) != 0 || !S_ISDIR(sb.st_mode))
        continue;
      char *pat = NULL;
      glob_t g = {0};
      if (asprintf(&pat, "%s/profile-%s-*.json", inputs[f], m[k].fp) < 0) {
        lm_strset_free(written);
        return LM_ESYS;
      }
      int gr = glob(pat, 0, NULL, &g);
      free(pat);
      for (size_t j = 0; gr == 0 && j < g.gl_pathc; j++) {
        const char *base = strrchr(g.gl_pathv[j], '/') + 1;
        char *to = NULL, *text = NULL;
        size_t n = 0;
        lm_error err = {0};
        int64_t prior = -1;
        if (asprintf(&to, "%s/%s", out_dir, base) < 0 ||
            lm_strset_add_str(written, base, 0, &prior) != LM_OK) {
          free(to);
          globfree(&g);
          lm_strset_free(written);
          return LM_ESYS;
        }
        /* the first input's wins; OUT's own file is not copied onto itself */
        char *rf = realpath(g.gl_pathv[j], NULL), *rt = realpath(to, NULL);
        int same = rf && rt && strcmp(rf, rt) == 0;
        free(rf);
        free(rt);
        lm_status st = LM_OK;
        if (!same && prior < 0 &&
            (st = lm_file_read(g.gl_pathv[j], &text, &n, &err)) == LM_OK)
          st = lm_file_write_atomic(to, text, n, &err);
        free(text);
        free(to);
        if (st != LM_OK) {
          fprintf(stderr, "lanemap merge: %s\n", err.msg);
          globfree(&g);
          lm_strset_free(written);
          return st;
        }
        copied = 1;
      }
      globfree(&g);
    }
    if (!copied && folders)
      fprintf(stderr,
              "lanemap merge: no profile bundled for machine type %s (nodes "
              "%s): evaluate on %s refuses to plan its cases until one is "
              "there\n",
              *m[k].fp ? m[k].fp : "(none)", m[k].nodes[0] ? m[k].nodes : "?",
              out_dir);
  }
  lm_strset_free(written);
  return LM_OK;
}

int cmd_merge(int argc, char **argv) {
  const char *out_dir = NULL;
  int ninputs = 0, mixed = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r;
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return LM_OK;
    } else if ((r = cli_arg_value(argc, argv, &i, "--out", &v)) != 0 ||
               (r = cli_arg_value(argc, argv, &i, "-o", &v)) != 0) {
      if (r < 0)
        return LM_EINPUT;
      out_dir = v;
    } else if (cli_arg_flag(a, "--allow-mixed")) {
      mixed = 1;
    } else if (a[0] == '-' && a[1] != 0) {
      return cli_usage_error(usage, "merge", "unknown option '%s'", a);
    } else {
      argv[1 + ninputs++] = argv[i]; /* compact the inputs in place */
    }
  }
  if (!out_dir)
    return cli_usage_error(usage, "merge", "no output folder (-o OUT_DIR)");
  if (ninputs == 0)
    return cli_usage_error(usage, "merge", "no input records given");

  lm_error err = {0};
  lm_records all = {0}; /* every record read, then the unique ones */
  lm_strset *ks = NULL; /* the keys of the records kept */
  int *file_of = NULL; /* [all.n] the input each record came from */
  char *source = NULL; /* [all.n] 1: the file its case is taken from */
  char *out = NULL;    /* OUT/records.jsonl */
  Machine *types = NULL;
  int ntypes = 0;
  int cap = 0, truncated = 0, duplicates = 0, others = 0, rc = LM_OK;
  /* OUT's records are rewritten whole: when OUT exists (and may be one of
   * the inputs), hold its lock from the first read to the write; each
   * other input is locked while it is read, so a shard still being
   * written is read between its appends. */
  if (asprintf(&out, "%s/records.jsonl", out_dir) < 0) {
    fprintf(stderr, "lanemap merge: out of memory\n");
    return LM_ESYS;
  }
  int out_lock = -1;
  struct stat osb;
  if (stat(out_dir, &osb) == 0 && S_ISDIR(osb.st_mode) &&
      lm_file_lock(out, &out_lock, &err) != LM_OK) {
    fprintf(stderr, "lanemap merge: %s\n", err.msg);
    free(out);
    return LM_ESYS;
  }
  char *out_real = realpath(out, NULL);
  for (int f = 0; f < ninputs; f++) {
    const char *in = argv[1 + f];
    char *path = NULL;
    struct stat sb;
    int isdir = stat(in, &sb) == 0 && S_ISDIR(sb.st_mode);
    if ((isdir ? asprintf(&path, "%s/records.jsonl", in)
               : asprintf(&path, "%s", in)) < 0) {
      fprintf(stderr, "lanemap merge: out of memory\n");
      rc = LM_ESYS;
      goto done;
    }
    lm_records rs;
    char *in_real = realpath(path, NULL);
    int in_lock = -1, own = out_real && in_real && strcmp(in_real, out_real) == 0;
    free(in_real);
    lm_status st = own ? LM_OK : lm_file_lock(path, &in_lock, &err);
    if (st == LM_OK)
      st = lm_records_read(path, &rs, &err);
    lm_file_unlock(in_lock);
    if (st != LM_OK) {
      fprintf(stderr, "lanemap merge: %s\n", err.msg);
      free(path);
      rc = st;
      goto done;
    }
    if (rs.truncated)
      fprintf(stderr,
              "lanemap merge: %s: skipped an unterminated last line "
              "(an interrupted append)\n",
              path);
    free(path);
    truncated += rs.truncated;
    if (all.n + rs.n > cap) {
      int nc = cap ? cap : 256;
      while (nc < all.n + rs.n)
        nc *= 2;
      lm_record *nr = realloc(all.r, (size_t)nc * sizeof *nr);
      if (nr)
        all.r = nr;
      int *nf = nr ? realloc(file_of, (size_t)nc * sizeof *nf) : NULL;
      if (nf)
        file_of = nf;
      if (!nr || !nf) {
        fprintf(stderr, "lanemap merge: out of memory\n");
        lm_records_free(&rs);
        rc = LM_ESYS;
        goto done;
      }
      cap = nc;
    }
    memcpy(all.r + all.n, rs.r, (size_t)rs.n * sizeof *rs.r);
    for (int i = 0; i < rs.n; i++)
      file_of[all.n + i] = f;
    all.n += rs.n;
    free(rs.r); /* the records moved into all */
  }
  if ((rc = machine_types(&all, mixed, &types, &ntypes)) != LM_OK)
    goto done;
  if (!(ks = lm_strset_new())) {
    fprintf(stderr, "lanemap merge: out of memory\n");
    rc = LM_ESYS;
    goto done;
  }
  if (!(source = malloc((size_t)(all.n ? all.n : 1))) ||
      pick_sources(&all, file_of, ninputs, source) != 0) {
    fprintf(stderr, "lanemap merge: out of memory\n");
    rc = LM_ESYS;
    goto done;
  }
  int kept = 0;
  for (int i = 0; i < all.n; i++) {
    if (!source[i]) {
      others++;
      lm_record_free(&all.r[i]);
      continue;
    }
    char *key = key_of(&all.r[i]);
    int64_t prior = -1;
    lm_status ks_st = key ? lm_strset_add_str(ks, key, i, &prior) : LM_ESYS;
    free(key);
    if (ks_st != LM_OK) {
      fprintf(stderr, "lanemap merge: out of memory\n");
      for (int k = i; k < all.n; k++)
        lm_record_free(&all.r[k]);
      all.n = kept;
      rc = LM_ESYS;
      goto done;
    }
    if (prior >= 0) {
      duplicates++;
      lm_record_free(&all.r[i]);
    } else {
      all.r[kept++] = all.r[i];
    }
  }
  all.n = kept;
  free(types); /* count the types of the records kept */
  if ((rc = machine_types(&all, 1, &types, &ntypes)) != LM_OK)
    goto done;

  lm_eval_case *cases = NULL;
  int ncases = 0, incomplete = 0;
  lm_status st =
      lm_eval_cases_from_records(&all, &cases, &ncases, &incomplete, &err);
  if (st != LM_OK) {
    fprintf(stderr, "lanemap merge: %s\n", err.msg);
    rc = st;
    goto done;
  }
  for (int i = 0; i < ncases; i++)
    lm_eval_case_free(&cases[i]);
  free(cases);

  if ((st = lm_file_make_dirs(out_dir, &err)) != LM_OK) {
    fprintf(stderr, "lanemap merge: %s\n", err.msg);
    rc = st;
    goto done;
  }
  if (out_lock < 0 && (st = lm_file_lock(out, &out_lock, &err)) != LM_OK) {
    fprintf(stderr, "lanemap merge: %s\n", err.msg);
    rc = st;
    goto done;
  }
  if ((st = lm_records_write(out, &all, &err)) != LM_OK) {
    fprintf(stderr, "lanemap merge: %s\n", err.msg);
    rc = st;
    goto done;
  }
  if ((rc = copy_profiles(argv + 1, ninputs, out_dir, types, ntypes)) !=
      LM_OK) {
    if (rc == LM_ESYS)
      fprintf(stderr, "lanemap merge: cannot copy the profiles\n");
    goto done;
  }
  printf("%s: %d records from %d file%s, %d complete case%s, %d incomplete "
         "case%s kept, %d duplicate%s dropped, %d record%s of cases taken "
         "from another file dropped, %d unterminated line%s skipped\n",
         out, all.n, ninputs, ninputs == 1 ? "" : "s", ncases,
         ncases == 1 ? "" : "s", incomplete, incomplete == 1 ? "" : "s",
         duplicates, duplicates == 1 ? "" : "s", others, others == 1 ? "" : "s",
         truncated, truncated == 1 ? "" : "s");
  for (int k = 0; k < ntypes; k++)
    printf("  machine type %s: %d records, nodes %s\n",
           *types[k].fp ? types[k].fp : "(none)", types[k].records,
           types[k].nodes[0] ? types[k].nodes : "?");
done:
  free(types);
  lm_file_unlock(out_lock);
  free(out_real);
  free(out);
  lm_strset_free(ks);
  free(file_of);
  free(source);
  lm_records_free(&all);
  fflush(stdout);
  return rc;
}
