/* lanemap oracle: seeded inputs through the FP64 interpreter, written as
 * JSON Lines ("lanemap.oracle/1", one record per case).
 *
 * All records are built in memory first and written in one go -- to stdout,
 * or atomically to --out -- so a bad shape or kernel in case 12 of a suite
 * leaves no partial file behind. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lanemap/json.h"
#include "lanemap/cases.h"

static const char usage[] =
    "usage: lanemap oracle FILE --shape R,C [--seed N] [--out F.jsonl] [--dump DIR]\n"
    "       lanemap oracle --suite SUITE.json [--seed N] [--out F.jsonl]\n"
    "  Generate seeded inputs, run the FP64 oracle, print one JSON record per\n"
    "  case (schema lanemap.oracle/1) with the oracle's output summary.\n"
    "  --shape R,C  instances R and columns C (RxC, and ,H=33 for other dims)\n"
    "  --suite F    every case of a suite file (paths relative to it)\n"
    "  --seed N     input generator seed, 0 <= N < 2^53 (default 1)\n"
    "  --out F      write the records to F atomically instead of stdout\n"
    "  --dump DIR   write the inputs, and the oracle's outputs in FP64, as\n"
    "               DIR/NAME.npy, one per buffer (NumPy's format)\n"
    "exit codes: 0 ok, 2 bad kernel, shape, suite or usage, 3 cannot write\n";

int64_t cli_shape_cols(const lm_kernel *k, const lm_shape *shape) {
  for (int p = 0; p < k->nparams; p++)
    if (k->params[p].kind == LM_PARAM_BUFFER && k->params[p].rank == 2)
      return lm_dim_eval(k->params[p].dims[1], shape);
  return lm_dim_eval(k->ncols, shape);
}

lm_status cli_oracle_record(const char *file, const lm_kernel *k,
                            const lm_shape *shape, uint64_t seed,
                            const char *case_id, cJSON **out, lm_error *err) {
  *out = NULL;
  lm_data *data = NULL;
  lm_oracle *oracle = NULL;
  char *summary = NULL;
  cJSON *rec = NULL;
  lm_status st = lm_data_gen(k, shape, seed, &data, err);
  if (st != LM_OK)
    goto error;
  st = lm_oracle_run(k, data, &oracle, err);
  if (st != LM_OK)
    goto error;
  summary = lm_oracle_summary_json(k, data, oracle);
  cJSON *sum = NULL;
  lm_error ignored = {0};
  if (summary)
    lm_json_parse("oracle summary", summary, strlen(summary), &sum, &ignored);
  rec = cJSON_CreateObject();
  if (!sum || !rec) {
    cJSON_Delete(sum);
    st =
        lm_error_set(err, LM_ESYS, "%s: cannot build the oracle summary", file);
    goto error;
  }
  cJSON_AddStringToObject(rec, "schema", "lanemap.oracle/1");
  if (case_id)
    cJSON_AddStringToObject(rec, "case", case_id);
  cJSON_AddStringToObject(rec, "kernel", k->name);
  cJSON_AddStringToObject(rec, "file", file);
  cJSON *sh = cJSON_AddArrayToObject(rec, "shape");
  cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)shape->dims[0]));
  cJSON_AddItemToArray(sh,
                       cJSON_CreateNumber((double)cli_shape_cols(k, shape)));
  cJSON_AddNumberToObject(rec, "seed", (double)seed);
  cJSON_AddItemToObject(rec, "summary", sum);
  *out = rec;
  rec = NULL;
error:
  cJSON_Delete(rec);
  free(summary);
  lm_oracle_free(oracle);
  lm_data_free(data);
  return st;
}

/* Append one record as a line of text to the output buffer. */
static lm_status append_record(char **buf, size_t *len, cJSON *rec,
                               lm_error *err) {
  char *line = cJSON_PrintUnformatted(rec);
  if (!line)
    return lm_error_set(err, LM_ESYS, "out of memory");
  size_t n = strlen(line);
  char *nb = realloc(*buf, *len + n + 2);
  if (!nb) {
    free(line);
    return lm_error_set(err, LM_ESYS, "out of memory");
  }
  memcpy(nb + *len, line, n);
  nb[*len + n] = '\n';
  nb[*len + n + 1] = 0;
  *buf = nb;
  *len += n + 1;
  free(line);
  return LM_OK;
}

/* The inputs and the oracle's outputs of one case, for --dump. */
static lm_status dump_case(const char *dir, const lm_kernel *k,
                           const lm_shape *shape, uint64_t seed,
                           lm_error *err) {
  lm_data *data = NULL;
  lm_oracle *oracle = NULL;
  lm_status st = lm_data_gen(k, shape, seed, &data, err);
  if (st == LM_OK)
    st = lm_oracle_run(k, data, &oracle, err);
  if (st == LM_OK)
    st = cli_dump_data(dir, k, data, oracle, err);
  lm_oracle_free(oracle);
  lm_data_free(data);
  return st;
}

/* One kernel file at one shape; with `extra` for a suite's extra dims. */
static lm_status run_one(const char *file, const char *shape_text, int64_t R,
                         int64_t C, const char *extra, uint64_t seed,
                         const char *case_id, const char *dump, char **buf,
                         size_t *len, lm_error *err) {
  lm_kernel *k = NULL;
  cJSON *rec = NULL;
  lm_shape shape;
  lm_status st = lm_kernel_load(file, &k, err);
  if (st != LM_OK)
    goto error;
  st = shape_text ? lm_shape_parse(k, shape_text, &shape, err)
                  : lm_shape_bind(k, R, C, extra, &shape, err);
  if (st != LM_OK) {
    /* Say which file the shape was for; the library names the dim. */
    char msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    lm_error_set(err, st, "%s: %s", file, msg);
    goto error;
  }
  st = cli_oracle_record(file, k, &shape, seed, case_id, &rec, err);
  if (st == LM_OK && dump)
    st = dump_case(dump, k, &shape, seed, err);
  if (st != LM_OK)
    goto error;
  st = append_record(buf, len, rec, err);
error:
  cJSON_Delete(rec);
  lm_kernel_free(k);
  return st;
}

static lm_status run_suite(const char *path, uint64_t seed, char **buf,
                           size_t *len, lm_error *err) {
  lm_cases suite;
  lm_status st = lm_cases_load(path, &suite, err);
  if (st != LM_OK)
    return st;
  for (int i = 0; i < suite.n && st == LM_OK; i++) {
    const lm_case *c = &suite.c[i];
    st = run_one(c->kernel, NULL, c->R, c->C, c->extra, seed, c->id, NULL, buf,
                 len, err);
  }
  lm_cases_free(&suite);
  return st;
}

int cmd_oracle(int argc, char **argv) {
  const char *file = NULL, *shape = NULL, *suite = NULL, *out = NULL,
             *seed_text = NULL, *dump = NULL;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    int r = 0;
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return LM_OK;
    }
    if ((r = cli_arg_value(argc, argv, &i, "--shape", &shape)) ||
        (r = cli_arg_value(argc, argv, &i, "--suite", &suite)) ||
        (r = cli_arg_value(argc, argv, &i, "--seed", &seed_text)) ||
        (r = cli_arg_value(argc, argv, &i, "--out", &out)) ||
        (r = cli_arg_value(argc, argv, &i, "--dump", &dump))) {
      if (r < 0)
        return cli_usage_error(usage, "oracle", "missing option value");
    } else if (a[0] == '-' && a[1] != 0) {
      return cli_usage_error(usage, "oracle", "unknown option '%s'", a);
    } else if (file) {
      return cli_usage_error(usage, "oracle", "one kernel file at a time");
    } else {
      file = a;
    }
  }
  if (suite && (file || shape || dump))
    return cli_usage_error(usage, "oracle",
                           "--suite takes no kernel file, --shape or --dump");
  if (!suite && (!file || !shape))
    return cli_usage_error(usage, "oracle",
                           "give a kernel FILE with --shape, or --suite");

  lm_error err = {0};
  uint64_t seed = CLI_SEED_DEFAULT;
  char *buf = NULL;
  size_t len = 0;
  lm_status st = LM_OK;
  if (seed_text)
    st = cli_parse_u64("--seed", seed_text, CLI_SEED_MAX, &seed, &err);
  if (st == LM_OK)
    st = suite ? run_suite(suite, seed, &buf, &len, &err)
               : run_one(file, shape, 0, 0, NULL, seed, NULL, dump, &buf, &len,
                         &err);
  if (st == LM_OK && out)
    st = lm_file_write_atomic(out, buf ? buf : "", len, &err);
  else if (st == LM_OK && len > 0 && fwrite(buf, 1, len, stdout) != len)
    st = lm_error_set(&err, LM_ESYS, "stdout: write error");
  free(buf);
  if (st != LM_OK)
    fprintf(stderr, "%s\n", err.msg);
  return st;
}
