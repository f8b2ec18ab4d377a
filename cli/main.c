/* lanemap: the command line front of the library.
 *
 * The command is a table of subcommands, one file each (cli/check.c,
 * cli/oracle.c, ...).  main() only finds the subcommand and hands it the
 * rest of argv; every subcommand parses its own flags, prints what the
 * library reports, and returns the exit code (0 ok, 1 a checked property
 * failed, 2 bad input or usage, 3 the system refused). */
#include <stdio.h>
#include <string.h>

#include <llvm-c/Core.h>

#include "cli/args.h"
#include "cli/commands.h"

typedef struct cli_command {
  const char *name;
  const char *help; /* one line for `lanemap --help` */
  int (*run)(int argc, char **argv);
} cli_command;

static const cli_command commands[] = {
    {"check", "parse and check kernel files", cmd_check},
    {"oracle", "run the FP64 oracle on seeded inputs, write JSON Lines",
     cmd_oracle},
    {"evaluate", "held-out regret of the plan and the baselines (the main job)",
     cmd_evaluate},
    {"run", "compile variants and run them, --verify against the oracle",
     cmd_run},
    {"emit", "print a variant's LLVM IR, assembly or static counts", cmd_emit},
    {"bench", "time variants side by side, interleaved", cmd_bench},
    {"calibrate", "fit per-ISA costs from micro-benchmarks, write a profile",
     cmd_calibrate},
    {"predict", "predict and rank variants, with --explain per term",
     cmd_predict},
    {"solve", "choose variants and a dispatch per shape for a workload", cmd_solve},
    {"tune", "measure the model's top variants per bucket, then plan on them",
     cmd_tune},
    {"learn", "train and cross-validate a learned correction of a profile",
     cmd_learn},
    {"compile", "compile a plan: JIT every planned variant, or --aot DIR", cmd_compile},
    {"merge", "merge the records of shards into one records.jsonl", cmd_merge},
    {"records", "import hyperfine/TVM measurements, keep the best per shape", cmd_records},
};
enum { NCOMMANDS = sizeof commands / sizeof commands[0] };

static void print_usage(FILE *f) {
  fprintf(f, "usage: lanemap <command> [options]\n"
             "       lanemap --version | --help\n\ncommands:\n");
  for (int i = 0; i < NCOMMANDS; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
  fprintf(f, "  %-10s %s\n", "help", "this list; `help CMD` describes CMD");
  fprintf(f, "\n`lanemap <command> --help` describes one command.\n"
             "exit codes: 0 ok, 1 a checked property failed, 2 bad input, "
             "3 system error\n");
}

static void print_version(void) {
  unsigned major, minor, patch;
  LLVMGetVersion(&major, &minor, &patch);
  printf("lanemap %s (LLVM %u.%u.%u)\n", lm_version(), major, minor, patch);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    print_usage(stderr);
    return LM_EINPUT;
  }
  const char *name = argv[1];
  if (strcmp(name, "help") == 0 && argc > 2) {
    /* `lanemap help CMD` is `lanemap CMD --help`. */
    char *sub[] = {argv[2], "--help", NULL};
    for (int i = 0; i < NCOMMANDS; i++)
      if (strcmp(argv[2], commands[i].name) == 0)
        return commands[i].run(2, sub);
    fprintf(stderr, "lanemap: unknown command '%s'\n\n", argv[2]);
    print_usage(stderr);
    return LM_EINPUT;
  }
  if (cli_arg_is_help(name) || strcmp(name, "help") == 0) {
    print_usage(stdout);
    return LM_OK;
  }
  if (strcmp(name, "--version") == 0 || strcmp(name, "version") == 0) {
    print_version();
    return LM_OK;
  }
  for (int i = 0; i < NCOMMANDS; i++)
    if (strcmp(name, commands[i].name) == 0)
      return commands[i].run(argc - 1, argv + 1);
  fprintf(stderr, "lanemap: unknown command '%s'\n\n", name);
  print_usage(stderr);
  return LM_EINPUT;
}
