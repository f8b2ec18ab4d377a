/* Flag parsing shared by the subcommands: long options written either
 * `--name VALUE` or `--name=VALUE`, and integers checked for range, so every
 * subcommand rejects bad input with the same words and exit code 2. */
#ifndef LANEMAP_CLI_ARGS_H
#define LANEMAP_CLI_ARGS_H

#include <stdint.h>

#include "lanemap/core.h"

/* Does argv[*i] name the option `name` ("--seed")?  Returns 1 and sets
 * *value (advancing *i past a separate value) when it does, 0 when argv[*i]
 * is some other argument, and -1 after printing a message
 * when the option is present but its value is missing. */
int cli_arg_value(int argc, char **argv, int *i, const char *name,
                  const char **value);

/* `--cache-dir D`: the folder of cached profiles for this command, as
 * LANEMAP_CACHE_DIR=D would set it (docs/profile.md); a folder shared by
 * the nodes of a cluster holds one profile per machine type.  Returns as
 * cli_arg_value; -1 also for an empty D. */
int cli_arg_cache_dir(int argc, char **argv, int *i);

/* Is argv[i] the boolean flag `name`? */
int cli_arg_flag(const char *arg, const char *name);

/* Is arg a request for help (-h, --help)? */
int cli_arg_is_help(const char *arg);

/* Parse a decimal integer in [0, max] into *out; the whole text must be the
 * number.  `what` names the option in the message. */
lm_status cli_parse_u64(const char *what, const char *text, uint64_t max,
                        uint64_t *out, lm_error *err);

/* Parse a finite number >= 0 (> 0 unless allow_zero) into *out; the
 * whole text must be the number.  `what` names the option. */
lm_status cli_parse_nonneg(const char *what, const char *text, double *out,
                           int allow_zero, lm_error *err);

/* Print "lanemap CMD: message" and the usage line to stderr; returns
 * LM_EINPUT so callers write `return cli_usage_error(...)`. */
int cli_usage_error(const char *usage, const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
