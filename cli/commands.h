/* The lanemap command's subcommands, and the pieces they share.
 *
 * Every subcommand is `int cmd_NAME(int argc, char **argv)` with argv[0]
 * the subcommand's own name, and returns the process exit code:
 *   0 ok, 1 a checked property failed, 2 bad input or usage, 3 the system
 *   refused (I/O) -- the lm_status values of include/lanemap/core.h. */
#ifndef LANEMAP_CLI_COMMANDS_H
#define LANEMAP_CLI_COMMANDS_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "lanemap/ir.h"
#include "lanemap/oracle.h"
#include "lanemap/variant.h"

int cmd_check(int argc, char **argv);
int cmd_oracle(int argc, char **argv);
int cmd_evaluate(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_emit(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_predict(int argc, char **argv);
int cmd_solve(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_learn(int argc, char **argv);
int cmd_compile(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_records(int argc, char **argv);

/* ---- bundled data (cli/data.c) --------------------------------------------
 * The path of `rel` ("heldout/cases.json") in the source tree the CLI was
 * built from, or else in the installed PREFIX/share/lanemap.  The result
 * lives in one of four static buffers (the fifth call reuses the first). */
const char *cli_data_path(const char *rel);

/* ---- variant selection (cli/variants.c) ----------------------------------
 * `list` is "V1,V2,..."; with `all`, every legal variant of each runnable
 * ISA target (or of `isa` only) in the floating-point modes `fp` ("strict",
 * the default when NULL, "relaxed" or "both").  With `run`, a target this
 * machine cannot run is refused (run, bench); without, it is listed
 * (predict prices AArch64 variants here).  *out is malloc'ed. */
lm_status cli_variants(const lm_kernel *k, const char *list, int all,
                       const char *isa, const char *fp, int run,
                       lm_variant **out, int *n, lm_error *err);
/* "strict", "relaxed" or "both" (with_both) as lm_enum_opts.fps bits. */
lm_status cli_fp_modes(const char *text, int with_both, unsigned *out,
                       lm_error *err);

/* Seeds are JSON numbers in the records, so they stay below 2^53 to
 * round-trip exactly. */
#define CLI_SEED_MAX ((UINT64_C(1) << 53) - 1)
#define CLI_SEED_DEFAULT 1

/* ---- oracle records (cli/oracle.c) ---------------------------------------
 * Generate the inputs of one (kernel, shape, seed), run the FP64 oracle and
 * build one "lanemap.oracle/1" record; case_id may be NULL. */
lm_status cli_oracle_record(const char *file, const lm_kernel *k,
                            const lm_shape *shape, uint64_t seed,
                            const char *case_id, lm_give cJSON **out,
                            lm_error *err);
/* ---- evaluate --deploy (cli/deploy.c) ---------------------------------------
 * The deployment evaluation with evaluate's options o (out, isa, profile,
 * quick, fresh, seed, accept_noisy), a spec, budgets (n 0: the defaults)
 * and held-out shapes per kernel (0: the spec's).  Returns the exit code. */
typedef struct lm_evaluate_options lm_evaluate_options;
int cli_deploy(const lm_evaluate_options *o, const char *spec,
               const int *budgets, int nbudgets, int shapes);
/* "1,2,4,all": budgets of variants per kernel, 0 or "all" for no cap. */
lm_status cli_parse_budgets(const char *text, int *budgets, int *n,
                            lm_error *err);

/* ---- buffers as .npy files (cli/dump.c) -----------------------------------
 * `--dump DIR` of oracle and run: DIR (created) gets NAME.npy for every
 * buffer parameter NAME of d, in its element type; with o, outputs hold
 * the oracle's FP64 results instead of d's. */
lm_status cli_dump_data(const char *dir, const lm_kernel *k, const lm_data *d,
                        const lm_oracle *o, lm_error *err);

/* The shape [R, C] of a bound shape as the suite writes it: C is the second
 * dim of the kernel's first 2-D buffer. */
int64_t cli_shape_cols(const lm_kernel *k, const lm_shape *shape);

#endif
