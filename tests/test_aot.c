/* Ahead-of-time claims: a variant emitted as an object file with a header
 * links into a separate C program, and that program's entry passes the
 * oracle check.  The driver is compiled with the same C compiler as the
 * project and linked against liblanemap (for the scratch allocator and
 * SLEEF). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lanemap/backend.h"

static const char driver[] =
    "#include <stdio.h>\n"
    "#include \"lanemap/verify.h\"\n"
    "#include \"k.h\"\n"
    "int main(int argc, char **argv) {\n"
    "  lm_kernel *k; lm_shape s; lm_data *d; lm_oracle *o; lm_error e = {0};\n"
    "  lm_verify_result r;\n"
    "  if (lm_kernel_load(argv[1], &k, &e) || lm_shape_bind(k, 37, 66, NULL, &s, &e) ||\n"
    "      lm_data_gen(k, &s, 5, &d, &e) || lm_oracle_run(k, d, &o, &e)) {\n"
    "    fprintf(stderr, \"%%s\\n\", e.msg); return 2; }\n"
    "  int rc = lm_verify_entry(k, %s, d, o, &r, &e);\n"
    "  printf(\"%%s\\n\", rc ? e.msg : \"verified\");\n"
    "  lm_oracle_free(o); lm_data_free(d); lm_kernel_free(k);\n"
    "  return rc; (void)argc;\n"
    "}\n";

static int sh(const char *cmd) {
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static void aot_roundtrip(const char *kernel, const char *variant) {
  char dir[] = "/tmp/lanemap-aot-XXXXXX";
  cr_assert(mkdtemp(dir));
  char obj[512], hdr[512], src[512], exe[512], kpath[512], cmd[4096];
  snprintf(obj, sizeof obj, "%s/k.o", dir);
  snprintf(hdr, sizeof hdr, "%s/k.h", dir);
  snprintf(src, sizeof src, "%s/main.c", dir);
  snprintf(exe, sizeof exe, "%s/main", dir);
  snprintf(kpath, sizeof kpath, "%s/%s", LANEMAP_SOURCE_DIR, kernel);
  lm_kernel *k;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_load(kpath, &k, &err), LM_OK, "%s", err.msg);
  lm_variant v;
  cr_assert_eq(lm_variant_parse(variant, &v, &err), LM_OK, "%s", err.msg);
  cr_assert_eq(lm_emit_object(k, &v, "my_entry", obj, hdr, &err), LM_OK, "%s", err.msg);
  FILE *f = fopen(src, "w");
  fprintf(f, driver, "my_entry");
  fclose(f);
  snprintf(cmd, sizeof cmd,
           "%s %s -std=c11 -I%s/include -I%s -o %s %s %s -L%s -Wl,-rpath,%s -llanemap -lsleef -lm",
           LANEMAP_CC, LANEMAP_CFLAGS, LANEMAP_SOURCE_DIR, dir, exe, src, obj, LANEMAP_LIBDIR,
           LANEMAP_LIBDIR);
  cr_assert_eq(sh(cmd), 0, "driver does not build: %s", cmd);
  snprintf(cmd, sizeof cmd, "%s %s", exe, kpath);
  cr_expect_eq(sh(cmd), 0, "AOT entry fails the oracle: %s", variant);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  sh(cmd);
  lm_kernel_free(k);
}

Test(aot, an_emitted_object_links_and_matches_the_oracle) {
  aot_roundtrip("kernels/layernorm.lk", "x86-64-v3/w8/l4/priv=slot/glob=transpose/phase=snapshot/t1");
  aot_roundtrip("kernels/rope.lk", "x86-64-v3/w8/l8/t1");
}

/* Each vector math provider's object links with -lsleef -lm as the header
 * says (libmvec comes through libm.so's linker script). */
Test(aot, every_math_provider_links_and_matches_the_oracle) {
  aot_roundtrip("kernels/gelu_residual.lk", "x86-64-v3/w8/l8/t1");
  aot_roundtrip("kernels/gelu_residual.lk", "x86-64-v3/w8/l8/math=mvec/t1");
  aot_roundtrip("kernels/gelu_residual.lk", "x86-64-v3/w8/l8/math=ir/t1");
  aot_roundtrip("kernels/swiglu.lk", "x86-64-v3/w8/l1/glob=transpose/math=mvec/t1");
}

Test(aot, a_symbol_that_is_not_a_c_identifier_is_rejected) {
  char kpath[512];
  snprintf(kpath, sizeof kpath, "%s/kernels/swiglu.lk", LANEMAP_SOURCE_DIR);
  lm_kernel *k;
  lm_error err = {0};
  cr_assert_eq(lm_kernel_load(kpath, &k, &err), LM_OK);
  lm_variant v;
  cr_assert_eq(lm_variant_parse("host/w16/l16/t1", &v, &err), LM_OK);
  cr_expect_eq(lm_emit_object(k, &v, "9bad-name", "/tmp/never.o", NULL, &err), LM_EINPUT);
  cr_expect_eq(access("/tmp/never.o", F_OK), -1, "nothing is written");
  lm_kernel_free(k);
}
