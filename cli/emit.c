/* lanemap emit: what the backend makes of one variant -- the optimised
 * LLVM IR, the assembly, or the static counts (private-slot accesses,
 * gathers, masked ops, blends, fallbacks, instruction mix, spills). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lanemap/backend.h"
#include "lanemap/costmodel.h"

static const char usage[] =
    "usage: lanemap emit KERNEL --variant V [--ir | --asm | --counts] [--json]\n"
    "                   [--unoptimized] [--object F.o --header F.h --symbol NAME]\n"
    "  --ir           the module after default<O3> (--unoptimized: as lowered)\n"
    "  --asm          the assembly for the variant's target\n"
    "  --counts       static counts (default): emitted sites, optimised IR, asm\n"
    "  --json         counts as one JSON object\n"
    "  --object F.o   also write an object file and (--header) a C header\n"
    "exit codes: 0 ok, 2 bad input, 3 LLVM or I/O failure\n";

#define COUNT_FIELDS(X)                                                        \
  X(emit_slot_reads) X(emit_slot_writes) X(emit_priv_gathers)                  \
  X(emit_priv_scatters) X(emit_priv_masked_loads) X(emit_priv_masked_stores)   \
  X(emit_priv_blends) X(emit_fallbacks) X(emit_glob_vector_loads)              \
  X(emit_glob_vector_stores) X(emit_glob_gathers) X(emit_glob_scatters)        \
  X(emit_glob_masked_loads) X(emit_glob_masked_stores) X(emit_transposes)      \
  X(emit_hreduce_steps) X(emit_math_calls) X(ir_instructions)                  \
  X(ir_vector_loads) X(ir_vector_stores) X(ir_gathers) X(ir_scatters)          \
  X(ir_masked_loads) X(ir_masked_stores) X(ir_selects) X(ir_shuffles)          \
  X(ir_calls) X(ir_fdiv) X(ir_sqrt) X(ir_priv_loads) X(ir_priv_stores)         \
  X(asm_instructions) X(asm_vector) X(asm_gathers) X(asm_scatters)             \
  X(asm_kmasked) X(asm_maskmov) X(asm_shuffles) X(asm_div_sqrt) X(asm_calls)   \
  X(asm_spills) X(asm_reloads) X(asm_pairs) X(asm_blends)

/* The sites of each part of the column loops (lm_part_counts). */
#define PART_FIELDS(X)                                                          \
  X(steps) X(vload) X(vstore) X(maskload) X(maskstore) X(segload) X(segstore)   \
  X(gather) X(scatter) X(blend) X(math_calls) X(div_lanes) X(hreduce)
static const char *part_names[LM_COUNT_PARTS] = {"main", "rest", "tail", "packet"};

static void print_counts(const char *variant, const lm_counts *c, double ms,
                         double model_spills, int json) {
  if (json) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddStringToObject(j, "schema", "lanemap.counts/1");
    cJSON_AddStringToObject(j, "variant", variant);
    cJSON_AddNumberToObject(j, "compile_ms", ms);
#define ADD(f) cJSON_AddNumberToObject(j, #f, c->f);
    COUNT_FIELDS(ADD)
#undef ADD
    cJSON_AddNumberToObject(j, "model_spills", model_spills);
    if (c->emit_fallbacks)
      cJSON_AddStringToObject(j, "fallback_reason", c->fallback_reason);
    cJSON *parts = cJSON_AddObjectToObject(j, "parts");
    for (int p = 0; p < LM_COUNT_PARTS; p++) {
      cJSON *o = cJSON_AddObjectToObject(parts, part_names[p]);
#define PADD(f) cJSON_AddNumberToObject(o, #f, c->part[p].f);
      PART_FIELDS(PADD)
#undef PADD
    }
    char *t = cJSON_PrintUnformatted(j);
    puts(t);
    free(t);
    cJSON_Delete(j);
    return;
  }
  printf("variant %s (compile %.1f ms)\n", variant, ms);
  printf("  private arrays: %d contiguous-slot reads, %d slot writes (%d blended), "
         "%d gathers, %d scatters, %d masked loads, %d masked stores, %d fallbacks%s%s\n",
         c->emit_slot_reads, c->emit_slot_writes, c->emit_priv_blends,
         c->emit_priv_gathers, c->emit_priv_scatters, c->emit_priv_masked_loads,
         c->emit_priv_masked_stores, c->emit_fallbacks, c->emit_fallbacks ? ": " : "",
         c->emit_fallbacks ? c->fallback_reason : "");
#define ROW(f) printf("  %-26s %d\n", #f, c->f);
  COUNT_FIELDS(ROW)
#undef ROW
  printf("  %-26s %.0f (the cost model's estimate of asm_spills + asm_reloads)\n",
         "model_spills", model_spills);
  printf("  sites by part (summed over loops; vectors of W lanes, gathers in lanes):\n"
         "  %-10s", "part");
#define HEAD(f) printf(" %s", #f);
  PART_FIELDS(HEAD)
#undef HEAD
  putchar('\n');
  for (int p = 0; p < LM_COUNT_PARTS; p++) {
    printf("  %-10s", part_names[p]);
#define CELL(f) printf(" %*d", (int)strlen(#f), c->part[p].f);
    PART_FIELDS(CELL)
#undef CELL
    putchar('\n');
  }
}

int cmd_emit(int argc, char **argv) {
  const char *file = NULL, *variant = NULL, *obj = NULL, *hdr = NULL,
             *sym = "lanemap_entry";
  int ir = 0, as = 0, json = 0, raw = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *val;
    int r;
    if (cli_arg_is_help(a)) {
      fputs(usage, stdout);
      return LM_OK;
    }
    if ((r = cli_arg_value(argc, argv, &i, "--variant", &val)))
      variant = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--object", &val)))
      obj = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--header", &val)))
      hdr = val;
    else if ((r = cli_arg_value(argc, argv, &i, "--symbol", &val)))
      sym = val;
    else if (cli_arg_flag(a, "--ir"))
      ir = r = 1;
    else if (cli_arg_flag(a, "--asm"))
      as = r = 1;
    else if (cli_arg_flag(a, "--counts"))
      r = 1;
    else if (cli_arg_flag(a, "--json"))
      json = r = 1;
    else if (cli_arg_flag(a, "--unoptimized"))
      raw = r = 1;
    else if (a[0] == '-' && a[1])
      return cli_usage_error(usage, "emit", "unknown option '%s'", a);
    else if (!file)
      file = a, r = 1;
    else
      return cli_usage_error(usage, "emit", "more than one kernel file");
    if (r < 0)
      return LM_EINPUT;
  }
  if (!file || !variant)
    return cli_usage_error(usage, "emit", "a kernel file and --variant V are required");
  if (hdr && !obj)
    return cli_usage_error(usage, "emit", "--header F.h needs --object F.o");
  lm_error err = {0};
  lm_kernel *k = NULL;
  lm_variant v;
  lm_compiled *c = NULL;
  lm_status s = lm_kernel_load(file, &k, &err);
  if (s == LM_OK && (s = lm_variant_parse(variant, &v, &err)) == LM_OK)
    s = lm_variant_check(k, &v, &err);
  if (s == LM_OK && obj)
    s = lm_emit_object(k, &v, sym, obj, hdr, &err);
  if (s == LM_OK && raw) {
    char *t;
    if ((s = lm_lower_to_string(k, &v, &t, &err)) == LM_OK) {
      fputs(t, stdout);
      free(t);
    }
  } else if (s == LM_OK) {
    lm_compile_opts co;
    lm_compile_defaults(&co);
    co.want_ir = ir;
    co.want_asm = 1;
    co.no_entry = 1; /* emit runs nothing: any target, also AArch64 */
    if ((s = lm_compile(k, &v, &co, &c, &err)) == LM_OK) {
      char name[128];
      lm_variant_format(&v, name, sizeof name);
      if (ir)
        fputs(lm_compiled_ir(c), stdout);
      else if (as)
        fputs(lm_compiled_asm(c), stdout);
      else {
        double ms = 0;
        if ((s = lm_cost_static_spills(k, &v, &ms, &err)) == LM_OK)
          print_counts(name, lm_compiled_counts(c), lm_compiled_ms(c), ms, json);
      }
    }
  }
  if (s != LM_OK)
    fprintf(stderr, "lanemap emit: %s\n", err.msg);
  lm_compiled_free(c);
  lm_kernel_free(k);
  return s;
}
