/* Compile pipeline: lower -> verify -> default<O3> (LLVMRunPasses with the
 * variant's target machine) -> static counts -> ORC LLJIT, or an object
 * file (one variant with a C header, or several entries linked into one
 * module, as a plan's dispatch emits them).
 *
 * One LLJIT per ISA target is created on first use and shared; each
 * compiled variant lives in its own resource tracker, so freeing a variant
 * frees its code.  Vector math routines and the scratch allocator are
 * defined in the JIT as absolute symbols, so generated code never depends
 * on what the dynamic linker happens to export. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Error.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Linker.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>
#include <llvm-c/Transforms/PassBuilder.h>

#include "backend/lower.h"

struct lm_compiled {
  lm_variant v;
  lm_counts counts;
  lm_entry_fn entry;
  LLVMOrcResourceTrackerRef rt;
  char *ir, *asm_text;
  double ms;
};

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static void init_targets(void) {
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  LLVMInitializeX86AsmParser();
  LLVMInitializeAArch64TargetInfo();
  LLVMInitializeAArch64Target();
  LLVMInitializeAArch64TargetMC();
  LLVMInitializeAArch64AsmPrinter();
  LLVMInitializeAArch64AsmParser();
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static lm_status llvm_error(lm_error *err, const char *what, LLVMErrorRef e) {
  char *m = LLVMGetErrorMessage(e);
  lm_error_set(err, LM_ESYS, "%s: %s", what, m);
  LLVMDisposeErrorMessage(m);
  return LM_ESYS;
}

/* The triple, CPU and features a variant's ISA names, never the host's
 * unless it is `host`.  AArch64 targets use LLVM's generic CPU, so that no
 * one core's scheduling model is assumed; SVE's vector length is set per
 * function (lm_lower_module adds vscale_range), which lets LLVM lower the
 * fixed-length vectors of the lowering to predicated SVE code. */
static void target_of(lm_isa isa, const char **triple, const char **cpu,
                      const char **feat) {
  *triple = "x86_64-unknown-linux-gnu";
  *cpu = lm_isa_name(isa);
  *feat = "";
  if (lm_isa_is_aarch64(isa)) {
    *triple = "aarch64-unknown-linux-gnu";
    *cpu = "generic";
    *feat = lm_isa_sve_bits(isa) ? "+neon,+fp-armv8,+sve" : "+neon,+fp-armv8";
  }
}

lm_status lm_target_machine(lm_isa isa, int jit, LLVMTargetMachineRef *out,
                            lm_error *err) {
  pthread_once(&init_once, init_targets);
  const char *triple, *tcpu, *tfeat;
  target_of(isa, &triple, &tcpu, &tfeat);
  char *own = NULL; /* `host` in a build for another architecture: its triple */
#if !defined(__x86_64__)
  if (isa == LM_ISA_HOST)
    triple = own = LLVMGetDefaultTargetTriple();
#endif
  char *msg = NULL;
  LLVMTargetRef t;
  if (LLVMGetTargetFromTriple(triple, &t, &msg)) {
    lm_error_set(err, LM_ESYS, "LLVM target %s: %s", triple, msg);
    LLVMDisposeMessage(msg);
    LLVMDisposeMessage(own);
    return LM_ESYS;
  }
  char *cpu = NULL, *feat = NULL;
  if (isa == LM_ISA_HOST) {
    cpu = LLVMGetHostCPUName();
    feat = LLVMGetHostCPUFeatures();
  }
  *out = LLVMCreateTargetMachine(
      t, triple, cpu ? cpu : tcpu, feat ? feat : tfeat,
      LLVMCodeGenLevelAggressive, jit ? LLVMRelocDefault : LLVMRelocPIC,
      jit ? LLVMCodeModelJITDefault : LLVMCodeModelDefault);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(feat);
  LLVMDisposeMessage(own);
  if (!*out)
    return lm_error_set(err, LM_ESYS, "cannot create a target machine for %s",
                        lm_isa_name(isa));
  return LM_OK;
}

/* ---- the shared JITs ---------------------------------------------------- */

static pthread_mutex_t jit_lock = PTHREAD_MUTEX_INITIALIZER;
static LLVMOrcLLJITRef jits[LM_ISA__COUNT];

static lm_status jit_for(lm_isa isa, LLVMOrcLLJITRef *out, lm_error *err) {
  pthread_mutex_lock(&jit_lock);
  lm_status s = LM_OK;
  if (!jits[isa]) {
    LLVMTargetMachineRef tm;
    if ((s = lm_target_machine(isa, 1, &tm, err)) != LM_OK)
      goto done;
    LLVMOrcLLJITBuilderRef jb = LLVMOrcCreateLLJITBuilder();
    LLVMOrcLLJITBuilderSetJITTargetMachineBuilder(
        jb, LLVMOrcJITTargetMachineBuilderCreateFromTargetMachine(tm));
    LLVMOrcLLJITRef j;
    LLVMErrorRef e = LLVMOrcCreateLLJIT(&j, jb);
    if (e) {
      s = llvm_error(err, "cannot create the JIT", e);
      goto done;
    }
    LLVMOrcJITDylibRef jd = LLVMOrcLLJITGetMainJITDylib(j);
    int n;
    const lm_vmath_sym *syms = lm_vmath_symbols(&n);
    LLVMOrcCSymbolMapPair *pairs = calloc((size_t)n, sizeof *pairs);
    for (int i = 0; i < n; i++) {
      pairs[i].Name = LLVMOrcLLJITMangleAndIntern(j, syms[i].name);
      pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)syms[i].addr;
      pairs[i].Sym.Flags.GenericFlags =
          LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    }
    e = LLVMOrcJITDylibDefine(jd, LLVMOrcAbsoluteSymbols(pairs, (size_t)n));
    free(pairs);
    if (e) {
      s = llvm_error(err, "cannot define runtime symbols", e);
      goto done;
    }
    /* memset/memcpy and libm, should the code generator call them */
    LLVMOrcDefinitionGeneratorRef gen;
    e = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
        &gen, LLVMOrcLLJITGetGlobalPrefix(j), NULL, NULL);
    if (e) {
      s = llvm_error(err, "cannot add the process symbols", e);
      goto done;
    }
    LLVMOrcJITDylibAddGenerator(jd, gen);
    jits[isa] = j;
  }
done:
  *out = jits[isa];
  pthread_mutex_unlock(&jit_lock);
  return s;
}

/* ---- static counts ------------------------------------------------------- */

static int starts(const char *s, const char *p) {
  return strncmp(s, p, strlen(p)) == 0;
}

static void count_ir(LLVMModuleRef m, lm_counts *c) {
  LLVMContextRef ctx = LLVMGetModuleContext(m);
  unsigned md_priv = LLVMGetMDKindIDInContext(ctx, "lm.priv", 7);
  for (LLVMValueRef f = LLVMGetFirstFunction(m); f; f = LLVMGetNextFunction(f))
    for (LLVMBasicBlockRef b = LLVMGetFirstBasicBlock(f); b;
         b = LLVMGetNextBasicBlock(b))
      for (LLVMValueRef i = LLVMGetFirstInstruction(b); i;
           i = LLVMGetNextInstruction(i)) {
        c->ir_instructions++;
        LLVMOpcode op = LLVMGetInstructionOpcode(i);
        int priv = LLVMGetMetadata(i, md_priv) != NULL;
        if (op == LLVMLoad &&
            LLVMGetTypeKind(LLVMTypeOf(i)) == LLVMVectorTypeKind) {
          c->ir_vector_loads++;
          c->ir_priv_loads += priv;
        } else if (op == LLVMStore &&
                   LLVMGetTypeKind(LLVMTypeOf(LLVMGetOperand(i, 0))) ==
                       LLVMVectorTypeKind) {
          c->ir_vector_stores++;
          c->ir_priv_stores += priv;
        } else if (op == LLVMSelect) {
          c->ir_selects++;
        } else if (op == LLVMShuffleVector) {
          c->ir_shuffles++;
        } else if (op == LLVMFDiv) {
          c->ir_fdiv++;
        } else if (op == LLVMCall) {
          LLVMValueRef callee = LLVMGetCalledValue(i);
          size_t len;
          const char *name = callee ? LLVMGetValueName2(callee, &len) : "";
          if (starts(name, "llvm.masked.gather"))
            c->ir_gathers++;
          else if (starts(name, "llvm.masked.scatter"))
            c->ir_scatters++;
          else if (starts(name, "llvm.masked.load"))
            c->ir_masked_loads++;
          else if (starts(name, "llvm.masked.store"))
            c->ir_masked_stores++;
          else if (starts(name, "llvm.sqrt"))
            c->ir_sqrt++;
          else if (!starts(name, "llvm."))
            c->ir_calls++;
        }
      }
}

/* The line of assembly at *l, up to cap - 1 bytes, copied into line; *l
 * moves past it.  Returns the copy without its leading blanks. */
static char *asm_line(const char **l, char *line, size_t cap) {
  const char *e = strchr(*l, '\n');
  size_t n = e ? (size_t)(e - *l) : strlen(*l);
  snprintf(line, cap, "%.*s", (int)(n < cap - 1 ? n : cap - 1), *l);
  *l += n + (e ? 1 : 0);
  char *s = line;
  while (*s == ' ' || *s == '\t')
    s++;
  return s;
}

/* LLVM's verbose assembly marks spills and reloads (folded ones too). */
static void count_spills(const char *s, lm_counts *c) {
  if (strstr(s, "Spill"))
    c->asm_spills++;
  if (strstr(s, "Reload"))
    c->asm_reloads++;
}

static void count_asm(const char *text, lm_counts *c) {
  static const char *shuffles[] = {"vperm",  "vshuf",    "vunpck",  "vpunpck",
                                   "vinsert", "vextract", "vpshuf", "vblend",
                                   "vpblend", "valign",   "vpalign", "vmovsh",
                                   "vbroadcast", "vpbroadcast", "vmovddup",
                                   "vmovshdup", "vmovsldup", "vcompress",
                                   "vexpand"};
  for (const char *l = text; *l;) {
    char line[512], *s = asm_line(&l, line, sizeof line);
    count_spills(s, c);
    if (!*s || *s == '.' || *s == '#' || strchr(s, ':'))
      continue;
    c->asm_instructions++;
    if (*s == 'v')
      c->asm_vector++;
    if (starts(s, "vgather") || starts(s, "vpgather"))
      c->asm_gathers++;
    if (starts(s, "vscatter") || starts(s, "vpscatter"))
      c->asm_scatters++;
    if (starts(s, "vmaskmov") || starts(s, "vpmaskmov"))
      c->asm_maskmov++;
    if (starts(s, "vblendv") || starts(s, "vpblendv") || starts(s, "vblendm") ||
        starts(s, "vpblendm"))
      c->asm_blends++;
    if (strstr(s, "{%k"))
      c->asm_kmasked++;
    if (starts(s, "vdiv") || starts(s, "vsqrt") || starts(s, "div") ||
        starts(s, "sqrt"))
      c->asm_div_sqrt++;
    if (starts(s, "call") || starts(s, "jmp\tSleef") || starts(s, "jmp\t_ZGV"))
      c->asm_calls++;
    for (size_t i = 0; i < sizeof shuffles / sizeof shuffles[0]; i++)
      if (starts(s, shuffles[i])) {
        c->asm_shuffles++;
        break;
      }
  }
}

/* An operand that names a vector register: v<n>, q<n> or z<n> (SVE). */
static int vector_operand(const char *ops) {
  for (const char *p = ops; *p; p++)
    if ((p == ops || p[-1] == ' ' || p[-1] == '{' || p[-1] == ',' ||
         p[-1] == '[' || p[-1] == '\t') &&
        (*p == 'v' || *p == 'q' || *p == 'z') && p[1] >= '0' && p[1] <= '9')
      return 1;
  return 0;
}

/* The predicate register an SVE instruction names at `at` ("p3/z",
 * "p3,"), or -1. */
static int pred_reg(const char *at) {
  if (!at || at[0] != 'p' || at[1] < '0' || at[1] > '9')
    return -1;
  return atoi(at + 1);
}

/* The same counts off AArch64 assembly (NEON and SVE).  Masked moves are
 * SVE's predicated contiguous loads and stores (ld1w/st1w ... p<n>) whose
 * predicate is not all-true: fixed-length SVE code loads and stores whole
 * vectors under a `ptrue` predicate, which is no mask (a predicate register
 * that only `ptrue` writes, anywhere in the function, counts as all-true);
 * gathers and scatters take a vector of offsets inside the brackets;
 * pairs are ldp/stp of q registers (the reference report's paired
 * accesses); blends are bsl/bif/bit and SVE's sel. */
static void count_asm_aarch64(const char *text, lm_counts *c) {
  static const char *shuffles[] = {"zip1", "zip2", "uzp1", "uzp2", "trn1",
                                   "trn2", "ext\t", "tbl", "tbx", "ins\t",
                                   "splice", "rev64", "uunpk", "sunpk",
                                   "dup\t", "mov\tv", "mov\tz"};
  /* predicate registers written by ptrue (bit 0) and by anything else (1) */
  int pdef[16] = {0};
  for (const char *l = text; *l;) {
    char line[128], *s = asm_line(&l, line, sizeof line);
    const char *ops = strchr(s, '\t');
    int dst = ops && !starts(s, "st") ? pred_reg(ops + 1) : -1;
    if (dst >= 0 && dst < 16)
      pdef[dst] |= starts(s, "ptrue\t") ? 1 : 2;
  }
  for (const char *l = text; *l;) {
    char line[512], *s = asm_line(&l, line, sizeof line);
    count_spills(s, c);
    char *cm = strstr(s, "//");
    if (cm)
      *cm = 0;
    size_t len = strlen(s);
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
      s[--len] = 0;
    if (!*s || *s == '.' || s[len - 1] == ':')
      continue;
    c->asm_instructions++;
    const char *ops = strchr(s, '\t');
    ops = ops ? ops + 1 : "";
    if (vector_operand(ops))
      c->asm_vector++;
    const char *br = strchr(ops, '[');
    int vec_index = br && vector_operand(br + 1) && strchr(br, 'z');
    int ld = starts(s, "ld1") || starts(s, "ldff1") || starts(s, "ldnf1");
    if (ld && vec_index)
      c->asm_gathers++;
    else if (starts(s, "st1") && vec_index)
      c->asm_scatters++;
    else if ((ld || starts(s, "st1")) && strstr(ops, "}, p")) {
      int pr = pred_reg(strstr(ops, "}, p") + 3);
      if (pr < 0 || pr >= 16 || pdef[pr] != 1)
        c->asm_maskmov++;
    }
    if ((starts(s, "ldp\tq") || starts(s, "stp\tq")))
      c->asm_pairs++;
    if (starts(s, "bsl") || starts(s, "bif") || starts(s, "bit\t") ||
        starts(s, "sel\tz"))
      c->asm_blends++;
    if (starts(s, "fdiv") || starts(s, "fsqrt"))
      c->asm_div_sqrt++;
    if (starts(s, "bl\t") || starts(s, "blr\t"))
      c->asm_calls++;
    for (size_t i = 0; i < sizeof shuffles / sizeof shuffles[0]; i++)
      if (starts(s, shuffles[i])) {
        c->asm_shuffles++;
        break;
      }
  }
}

/* ---- compile --------------------------------------------------------------- */

void lm_compile_defaults(lm_compile_opts *o) {
  memset(o, 0, sizeof *o);
  o->opt_level = 3;
}

/* Finish a lowered module for tm: verify it, give it the target's data
 * layout and triple, and run default<O level>. */
static lm_status finalise(LLVMModuleRef m, LLVMTargetMachineRef tm, int level,
                          lm_error *err) {
  char *msg = NULL;
  if (LLVMVerifyModule(m, LLVMReturnStatusAction, &msg)) {
    lm_error_set(err, LM_ESYS, "lowering produced invalid IR: %.1500s", msg);
    LLVMDisposeMessage(msg);
    return LM_ESYS;
  }
  LLVMDisposeMessage(msg);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  char *dl = LLVMCopyStringRepOfTargetData(td);
  LLVMSetDataLayout(m, dl);
  LLVMDisposeMessage(dl);
  LLVMDisposeTargetData(td);
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(m, triple);
  LLVMDisposeMessage(triple);
  char passes[32];
  snprintf(passes, sizeof passes, "default<O%d>", level < 0 ? 0 : level > 3 ? 3 : level);
  LLVMPassBuilderOptionsRef po = LLVMCreatePassBuilderOptions();
  LLVMErrorRef e = LLVMRunPasses(m, passes, tm, po);
  LLVMDisposePassBuilderOptions(po);
  if (e)
    return llvm_error(err, "optimisation failed", e);
  return LM_OK;
}

static atomic_long symbol_counter;

lm_status lm_compile(const lm_kernel *k, const lm_variant *v,
                     const lm_compile_opts *opts, lm_compiled **out,
                     lm_error *err) {
  *out = NULL;
  lm_compile_opts defaults;
  if (!opts) {
    lm_compile_defaults(&defaults);
    opts = &defaults;
  }
  double t0 = now_ms();
  if (!opts->no_entry && lm_isa_is_aarch64(v->isa) != lm_isa_is_aarch64(LM_ISA_HOST))
    return lm_error_set(err, LM_EINPUT,
                        "%s code cannot run on this machine; write an object "
                        "for it (lanemap emit --object, lanemap compile --aot) "
                        "and run it there",
                        lm_isa_name(v->isa));
  LLVMOrcLLJITRef jit = NULL;
  if (!opts->no_entry && jit_for(v->isa, &jit, err) != LM_OK)
    return LM_ESYS;
  lm_compiled *c = calloc(1, sizeof *c);
  c->v = *v;
  char symbol[64];
  snprintf(symbol, sizeof symbol, "lm_entry_%ld", atomic_fetch_add(&symbol_counter, 1));
  LLVMOrcThreadSafeContextRef tsc = LLVMOrcCreateNewThreadSafeContext();
  LLVMContextRef ctx = LLVMOrcThreadSafeContextGetContext(tsc);
  LLVMModuleRef m = NULL;
  LLVMTargetMachineRef tm = NULL;
  lm_status s = lm_lower_module(k, v, ctx, symbol, &m, &c->counts, err);
  if (s != LM_OK)
    goto error;
  if ((s = lm_target_machine(v->isa, 1, &tm, err)) != LM_OK)
    goto error;
  if ((s = finalise(m, tm, opts->opt_level, err)) != LM_OK)
    goto error;
  count_ir(m, &c->counts);
  if (opts->want_ir) {
    char *t = LLVMPrintModuleToString(m);
    c->ir = strdup(t);
    LLVMDisposeMessage(t);
  }
  if (opts->want_asm) {
    LLVMModuleRef clone = LLVMCloneModule(m);
    LLVMMemoryBufferRef buf;
    char *msg = NULL;
    LLVMSetTargetMachineAsmVerbosity(tm, 1);
    if (LLVMTargetMachineEmitToMemoryBuffer(tm, clone, LLVMAssemblyFile, &msg, &buf)) {
      s = lm_error_set(err, LM_ESYS, "assembly emission failed: %s", msg);
      LLVMDisposeMessage(msg);
      LLVMDisposeModule(clone);
      goto error;
    }
    size_t n = LLVMGetBufferSize(buf);
    c->asm_text = malloc(n + 1);
    memcpy(c->asm_text, LLVMGetBufferStart(buf), n);
    c->asm_text[n] = 0;
    LLVMDisposeMemoryBuffer(buf);
    LLVMDisposeModule(clone);
    if (lm_isa_is_aarch64(v->isa))
      count_asm_aarch64(c->asm_text, &c->counts);
    else
      count_asm(c->asm_text, &c->counts);
  }
  if (opts->no_entry) {
    LLVMDisposeTargetMachine(tm);
    LLVMDisposeModule(m);
    LLVMOrcDisposeThreadSafeContext(tsc);
    c->ms = now_ms() - t0;
    *out = c;
    return LM_OK;
  }
  /* Machine code is emitted here, with this call's own target machine, so
   * compiles on several threads run their code generators in parallel; the
   * JIT only links the object, under jit_lock. */
  LLVMMemoryBufferRef obj = NULL;
  char *msg = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, m, LLVMObjectFile, &msg, &obj)) {
    s = lm_error_set(err, LM_ESYS, "code generation failed: %s", msg);
    LLVMDisposeMessage(msg);
    goto error;
  }
  LLVMDisposeTargetMachine(tm);
  tm = NULL;
  LLVMDisposeModule(m);
  m = NULL;
  pthread_mutex_lock(&jit_lock);
  c->rt = LLVMOrcJITDylibCreateResourceTracker(LLVMOrcLLJITGetMainJITDylib(jit));
  LLVMErrorRef e = LLVMOrcLLJITAddObjectFileWithRT(jit, c->rt, obj);
  LLVMOrcExecutorAddress addr = 0;
  if (!e)
    e = LLVMOrcLLJITLookup(jit, &addr, symbol);
  pthread_mutex_unlock(&jit_lock);
  if (e) {
    s = llvm_error(err, "JIT rejected the object", e);
    goto error;
  }
  c->entry = (lm_entry_fn)(uintptr_t)addr;
  LLVMOrcDisposeThreadSafeContext(tsc);
  c->ms = now_ms() - t0;
  *out = c;
  return LM_OK;
error:
  if (tm)
    LLVMDisposeTargetMachine(tm);
  if (m)
    LLVMDisposeModule(m);
  LLVMOrcDisposeThreadSafeContext(tsc);
  lm_compiled_free(c);
  return s;
}

void lm_compiled_free(lm_compiled *c) {
  if (!c)
    return;
  if (c->rt) {
    pthread_mutex_lock(&jit_lock);
    LLVMErrorRef e = LLVMOrcResourceTrackerRemove(c->rt);
    pthread_mutex_unlock(&jit_lock);
    if (e)
      LLVMConsumeError(e);
    LLVMOrcReleaseResourceTracker(c->rt);
  }
  free(c->ir);
  free(c->asm_text);
  free(c);
}

lm_status lm_compiled_rebind(const lm_compiled *c, const lm_variant *v,
                             lm_compiled **out, lm_error *err) {
  *out = NULL;
  if (!lm_variant_same_code(&c->v, v))
    return lm_error_set(err, LM_EINPUT,
                        "rebind: the variant differs in more than workers "
                        "and split, so it needs code of its own");
  lm_compiled *r = calloc(1, sizeof *r);
  if (!r)
    return lm_error_set(err, LM_ESYS, "out of memory");
  r->v = *v;
  r->counts = c->counts;
  r->entry = c->entry; /* borrowed: no resource tracker, no texts */
  *out = r;
  return LM_OK;
}

lm_entry_fn lm_compiled_entry(const lm_compiled *c) { return c->entry; }
const lm_counts *lm_compiled_counts(const lm_compiled *c) { return &c->counts; }
const lm_variant *lm_compiled_variant(const lm_compiled *c) { return &c->v; }
double lm_compiled_ms(const lm_compiled *c) { return c->ms; }
const char *lm_compiled_ir(const lm_compiled *c) { return c->ir; }
const char *lm_compiled_asm(const lm_compiled *c) { return c->asm_text; }

lm_status lm_lower_to_string(const lm_kernel *k, const lm_variant *v,
                             char **out, lm_error *err) {
  *out = NULL;
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef m;
  lm_counts counts = {0};
  lm_status s = lm_lower_module(k, v, ctx, "lm_entry", &m, &counts, err);
  if (s == LM_OK) {
    char *t = LLVMPrintModuleToString(m);
    *out = strdup(t);
    LLVMDisposeMessage(t);
    LLVMDisposeModule(m);
  }
  LLVMContextDispose(ctx);
  return s;
}

/* ---- ahead of time ------------------------------------------------------- */

static int valid_symbol(const char *s) {
  if (!*s || (*s >= '0' && *s <= '9'))
    return 0;
  for (; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_'))
      return 0;
  return 1;
}

lm_status lm_emit_entries(const lm_aot_entry *e, int n, const char *obj_path,
                          lm_error *err) {
  if (n < 1)
    return lm_error_set(err, LM_EINPUT, "an object needs at least one entry");
  for (int i = 0; i < n; i++) {
    if (!valid_symbol(e[i].symbol))
      return lm_error_set(err, LM_EINPUT, "'%s' is not a C identifier",
                          e[i].symbol);
    if (e[i].variant.isa != e[0].variant.isa)
      return lm_error_set(err, LM_EINPUT,
                          "%s targets %s, %s targets %s; one object holds one "
                          "ISA target",
                          e[i].symbol, lm_isa_name(e[i].variant.isa),
                          e[0].symbol, lm_isa_name(e[0].variant.isa));
  }
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef all = NULL;
  LLVMTargetMachineRef tm = NULL;
  LLVMMemoryBufferRef buf = NULL;
  lm_status s = LM_OK;
  for (int i = 0; i < n && s == LM_OK; i++) {
    lm_counts counts = {0};
    LLVMModuleRef m = NULL;
    if ((s = lm_lower_module(e[i].kernel, &e[i].variant, ctx, e[i].symbol, &m,
                             &counts, err)) != LM_OK)
      break;
    if (!all)
      all = m;
    else if (LLVMLinkModules2(all, m))
      s = lm_error_set(err, LM_ESYS,
                       "linking %s into the object's module failed",
                       e[i].symbol);
  }
  if (s != LM_OK)
    goto done;
  if ((s = lm_target_machine(e[0].variant.isa, 0, &tm, err)) != LM_OK)
    goto done;
  if ((s = finalise(all, tm, 3, err)) != LM_OK)
    goto done;
  char *msg = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, all, LLVMObjectFile, &msg,
                                          &buf)) {
    s = lm_error_set(err, LM_ESYS, "object emission failed: %s", msg);
    LLVMDisposeMessage(msg);
    goto done;
  }
  s = lm_file_write_atomic(obj_path, LLVMGetBufferStart(buf),
                           LLVMGetBufferSize(buf), err);
done:
  if (buf)
    LLVMDisposeMemoryBuffer(buf);
  if (tm)
    LLVMDisposeTargetMachine(tm);
  if (all)
    LLVMDisposeModule(all);
  LLVMContextDispose(ctx);
  return s;
}

/* A symbol the header declares: a C identifier. */
static int c_identifier(const char *s) {
  if (!s[0] || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
    return 0;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_')
      return 0;
  return 1;
}

/* The C header declaring `symbol`, with the args layout; malloc'ed. */
static char *entry_header(const lm_kernel *k, const lm_variant *v, const char *symbol) {
  char vs[128], *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f)
    return NULL;
  lm_variant_format(v, vs, sizeof vs);
  fprintf(f,
          "/* Generated by lanemap %s: kernel %s, variant %s.\n"
          " * args: one 8-byte slot per parameter in order (buffer pointer, or "
          "scalar as double):\n",
          lm_version(), k->name, vs);
  for (int i = 0; i < k->nparams; i++)
    fprintf(f, " *   [%d] %s %s%s\n", i, k->params[i].name, lm_dtype_name(k->params[i].dtype),
            k->params[i].kind == LM_PARAM_SCALAR ? " scalar"
            : k->params[i].is_output            ? " output"
                                                : "");
  for (int i = 0; i < k->nsyms; i++)
    fprintf(f, " *   [%d] int64 dim %s\n", k->nparams + i, k->syms[i]);
  fprintf(f,
          " * Runs instances [first, first+count).  Link with liblanemap "
          "(lm_rt_scratch), SLEEF and -lm (libmvec). */\n"
          "#pragma once\n#include <stdint.h>\n"
          "#ifdef __cplusplus\nextern \"C\" {\n#endif\n"
          "void %s(const void *args, int64_t first, int64_t count);\n"
          "#ifdef __cplusplus\n}\n#endif\n",
          symbol);
  if (fclose(f) != 0) {
    free(text);
    return NULL;
  }
  return text;
}

lm_status lm_emit_object(const lm_kernel *k, const lm_variant *v,
                         const char *symbol, const char *obj_path,
                         const char *header_path, lm_error *err) {
  /* everything that can be checked is checked before the object is
   * written, so a bad header leaves no object behind */
  if (!c_identifier(symbol))
    return lm_error_set(err, LM_EINPUT, "symbol '%.80s%s' is not a C identifier", symbol,
                        strlen(symbol) > 80 ? "..." : "");
  char *hdr = NULL;
  if (header_path) {
    lm_status so_ok = lm_file_check_writable(obj_path, err);
    if (so_ok != LM_OK)
      return so_ok;
    struct stat so, sh;
    if (strcmp(obj_path, header_path) == 0 ||
        (stat(obj_path, &so) == 0 && stat(header_path, &sh) == 0 && so.st_dev == sh.st_dev &&
         so.st_ino == sh.st_ino))
      return lm_error_set(err, LM_EINPUT, "the object %s and the header %s are one file",
                          obj_path, header_path);
    lm_status s = lm_file_check_writable(header_path, err);
    if (s != LM_OK)
      return s;
    if (!(hdr = entry_header(k, v, symbol)))
      return lm_error_set(err, LM_ESYS, "header: out of memory");
  }
  lm_aot_entry e = {.kernel = k, .variant = *v, .symbol = symbol};
  lm_status s = lm_emit_entries(&e, 1, obj_path, err);
  if (s == LM_OK && hdr)
    s = lm_file_write_atomic(header_path, hdr, strlen(hdr), err);
  free(hdr);
  return s;
}
