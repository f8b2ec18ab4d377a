/* Flag parsing for the lanemap command.  Deliberately tiny: the subcommands
 * take a handful of long options, and a shared parser keeps their error
 * messages and exit codes alike. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"

int cli_arg_value(int argc, char **argv, int *i, const char *name,
                  const char **value) {
  const char *arg = argv[*i];
  size_t n = strlen(name);
  if (strncmp(arg, name, n) != 0)
    return 0;
  if (arg[n] == '=') {
    *value = arg + n + 1;
    return 1;
  }
  if (arg[n] != 0)
    return 0;
  if (*i + 1 >= argc) {
    fprintf(stderr, "lanemap: option %s needs a value\n", name);
    return -1;
  }
  *i += 1;
  *value = argv[*i];
  return 1;
}

int cli_arg_cache_dir(int argc, char **argv, int *i) {
  const char *v = NULL;
  int r = cli_arg_value(argc, argv, i, "--cache-dir", &v);
  if (r <= 0)
    return r;
  if (!*v) {
    fprintf(stderr, "lanemap: --cache-dir: expected a folder, got ''\n");
    return -1;
  }
  if (setenv("LANEMAP_CACHE_DIR", v, 1) != 0) {
    fprintf(stderr, "lanemap: --cache-dir: %s\n", strerror(errno));
    return -1;
  }
  return 1;
}

int cli_arg_flag(const char *arg, const char *name) {
  return strcmp(arg, name) == 0;
}

int cli_arg_is_help(const char *arg) {
  return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

lm_status cli_parse_nonneg(const char *what, const char *text, double *out,
                           int allow_zero, lm_error *err) {
  char *end = NULL;
  double x = strtod(text, &end);
  if (!text[0] || *end || !isfinite(x) || x < 0 || (!allow_zero && x == 0))
    return lm_error_set(err, LM_EINPUT, "%s: expected a number %s 0, got '%s'",
                        what, allow_zero ? ">=" : ">", text);
  *out = x;
  return LM_OK;
}

lm_status cli_parse_u64(const char *what, const char *text, uint64_t max,
                        uint64_t *out, lm_error *err) {
  /* strtoull accepts leading blanks and a sign, so check the first byte. */
  if (text[0] < '0' || text[0] > '9')
    return lm_error_set(err, LM_EINPUT,
                        "%s: '%s' is not a non-negative integer", what, text);
  errno = 0;
  char *end = NULL;
  unsigned long long v = strtoull(text, &end, 10);
  if (*end != 0)
    return lm_error_set(err, LM_EINPUT,
                        "%s: '%s' is not a non-negative integer", what, text);
  if (errno == ERANGE || v > max)
    return lm_error_set(err, LM_EINPUT, "%s: %s is out of range (at most %llu)",
                        what, text, (unsigned long long)max);
  *out = v;
  return LM_OK;
}

int cli_usage_error(const char *usage, const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "lanemap %s: ", cmd);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n%s", usage);
  va_end(ap);
  return LM_EINPUT;
}
