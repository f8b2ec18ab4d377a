/* lanemap check: parse and check kernel files, the front end's verdict.
 *
 * Every file is checked even after one fails, so a single run lists every
 * broken kernel; the exit code is 2 if any failed. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/args.h"
#include "cli/commands.h"

static const char usage[] =
    "usage: lanemap check FILE... [--print-ir] [--print]\n"
    "  Parse and check each kernel file; print `FILE: ok (...)` per file.\n"
    "  --print-ir  also print the IR listing with the checker's facts\n"
    "  --print     also print the canonical source (it re-parses to the same "
    "IR)\n"
    "exit codes: 0 all files ok, 2 a file failed or bad usage\n";

typedef struct check_opts {
  int print_ir, print_src;
} check_opts;

/* Check one file; print its verdict and any listing asked for. */
static lm_status check_file(const char *path, const check_opts *o) {
  lm_error err = {0};
  lm_kernel *k = NULL;
  lm_status st = lm_kernel_load(path, &k, &err);
  if (st != LM_OK) {
    fprintf(stderr, "%s\n", err.msg);
    return st;
  }
  printf("%s: ok (kernel %s, %d nodes, %d loops)\n", path, k->name, k->nnodes,
         k->nloops);
  if (o->print_ir) {
    char *s = lm_kernel_dump(k);
    fputs(s ? s : "", stdout);
    free(s);
  }
  if (o->print_src) {
    char *s = lm_kernel_print(k);
    fputs(s ? s : "", stdout);
    free(s);
  }
  lm_kernel_free(k);
  return LM_OK;
}

int cmd_check(int argc, char **argv) {
  check_opts o = {0};
  int nfiles = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return LM_OK;
    } else if (cli_arg_flag(a, "--print-ir")) {
      o.print_ir = 1;
    } else if (cli_arg_flag(a, "--print")) {
      o.print_src = 1;
    } else if (a[0] == '-' && a[1] != 0) {
      return cli_usage_error(usage, "check", "unknown option '%s'", a);
    } else {
      nfiles++;
    }
  }
  if (nfiles == 0)
    return cli_usage_error(usage, "check", "no kernel file given");
  int worst = LM_OK;
  for (int i = 1; i < argc; i++) {
    if (argv[i][0] == '-' && argv[i][1] != 0)
      continue;
    lm_status st = check_file(argv[i], &o);
    if ((int)st > worst)
      worst = st;
  }
  fflush(stdout);
  return worst;
}
