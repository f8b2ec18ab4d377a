/* lanemap evaluate: the main job, as one pipeline that reads top to bottom.
 *
 * Today the pipeline is: load the suite, check every kernel of the suite's
 * folder, and run the FP64 oracle on every case.  Each later stage --
 * calibrate, predict, solve, compile, measure, report -- becomes one more
 * call in cmd_evaluate, taking the previous stage's result. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"

static const char usage[] =
    "usage: lanemap evaluate [--quick] [--kernels DIR] [--seed N]\n"
    "  Check every DIR/*.lk and run the FP64 oracle on every case of\n"
    "  DIR/suite.json, one line per case.\n"
    "  --quick      the short protocol for a first look (the default today)\n"
    "  --kernels D  kernel folder (default $LANEMAP_KERNELS, else the source\n"
    "               tree's kernels/)\n"
    "  --seed N     input generator seed (default 1)\n"
    "exit codes: 0 ok, 2 a kernel or the suite is bad, 3 system error\n";

typedef struct eval_opts {
  const char *dir;
  uint64_t seed;
  int quick;
} eval_opts;

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Check every *.lk file in dir, in name order; print one line in total. */
static lm_status check_kernels(const char *dir, lm_error *err) {
  DIR *d = opendir(dir);
  if (!d)
    return lm_error_set(err, LM_EINPUT, "%s: cannot open the kernel folder",
                        dir);
  char **names = NULL;
  int n = 0;
  lm_status st = LM_OK;
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    if (len < 4 || strcmp(e->d_name + len - 3, ".lk") != 0)
      continue;
    char **nn = realloc(names, (size_t)(n + 1) * sizeof *names);
    if (!nn || !(nn[n] = malloc(strlen(dir) + len + 2))) {
      names = nn ? nn : names;
      st = lm_error_set(err, LM_ESYS, "out of memory");
      goto error;
    }
    names = nn;
    sprintf(names[n++], "%s/%s", dir, e->d_name);
  }
  qsort(names, (size_t)n, sizeof *names, by_name);
  for (int i = 0; i < n && st == LM_OK; i++) {
    lm_kernel *k = NULL;
    st = lm_kernel_load(names[i], &k, err);
    lm_kernel_free(k);
  }
  if (st == LM_OK)
    printf("%d kernels checked in %s\n", n, dir);
error:
  for (int i = 0; i < n; i++)
    free(names[i]);
  free(names);
  closedir(d);
  return st;
}

/* One line per case: id, shape, and per output sum, min, max, l2. */
static void print_case(const cli_case *c, const cJSON *rec) {
  char shape[48];
  snprintf(shape, sizeof shape, "%lldx%lld", (long long)c->R, (long long)c->C);
  printf("%-24s %-10s", c->id, shape);
  const cJSON *sum = cJSON_GetObjectItemCaseSensitive(rec, "summary");
  const cJSON *outs = cJSON_GetObjectItemCaseSensitive(sum, "outputs");
  const cJSON *o;
  cJSON_ArrayForEach(o, outs) {
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(o, "name");
    printf("  %s: sum=%.6g min=%.6g max=%.6g l2=%.6g",
           cJSON_IsString(name) ? name->valuestring : "?",
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "sum")),
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "min")),
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "max")),
           cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(o, "l2")));
  }
  printf("\n");
}

static lm_status run_case(const cli_case *c, uint64_t seed, lm_error *err) {
  lm_kernel *k = NULL;
  cJSON *rec = NULL;
  lm_shape shape;
  lm_status st = lm_kernel_load(c->kernel, &k, err);
  if (st == LM_OK)
    st = lm_shape_bind(k, c->R, c->C, c->extra, &shape, err);
  if (st == LM_OK)
    st = cli_oracle_record(c->kernel, k, &shape, seed, c->id, &rec, err);
  if (st == LM_OK)
    print_case(c, rec);
  cJSON_Delete(rec);
  lm_kernel_free(k);
  return st;
}

/* The FP64 oracle on every case of the suite. */
static lm_status run_oracle(const cli_suite *s, uint64_t seed, lm_error *err) {
  for (int i = 0; i < s->ncases; i++) {
    lm_status st = run_case(&s->cases[i], seed, err);
    if (st != LM_OK) {
      char msg[sizeof err->msg];
      snprintf(msg, sizeof msg, "%s", err->msg);
      return lm_error_set(err, st, "case %s: %s", s->cases[i].id, msg);
    }
  }
  printf("%d cases: oracle ok\n", s->ncases);
  return LM_OK;
}

static int parse_opts(int argc, char **argv, eval_opts *o) {
  const char *env = getenv("LANEMAP_KERNELS");
  o->dir = env && env[0] ? env : LANEMAP_SOURCE_DIR "/kernels";
  o->seed = CLI_SEED_DEFAULT;
  o->quick = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = NULL;
    int r;
    lm_error err = {0};
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return -1;
    } else if (cli_arg_flag(a, "--quick")) {
      o->quick = 1;
    } else if ((r = cli_arg_value(argc, argv, &i, "--kernels", &v))) {
      if (r < 0)
        return cli_usage_error(usage, "evaluate", "missing option value");
      o->dir = v;
    } else if ((r = cli_arg_value(argc, argv, &i, "--seed", &v))) {
      if (r < 0 || cli_parse_u64("--seed", v, CLI_SEED_MAX, &o->seed, &err))
        return cli_usage_error(usage, "evaluate", "%s",
                               r < 0 ? "missing option value" : err.msg);
    } else {
      return cli_usage_error(usage, "evaluate", "unexpected argument '%s'", a);
    }
  }
  return LM_OK;
}

int cmd_evaluate(int argc, char **argv) {
  eval_opts o;
  int r = parse_opts(argc, argv, &o);
  if (r != LM_OK)
    return r < 0 ? LM_OK : r;

  lm_error err = {0};
  cli_suite suite = {0};
  char suite_path[4096];
  snprintf(suite_path, sizeof suite_path, "%s/suite.json", o.dir);
  lm_status st = cli_suite_load(suite_path, &suite, &err);
  if (st == LM_OK)
    st = check_kernels(o.dir, &err);
  if (st == LM_OK)
    st = run_oracle(&suite, o.seed, &err);
  if (st != LM_OK)
    fprintf(stderr, "%s\n", err.msg);
  cli_suite_free(&suite);
  return st;
}
