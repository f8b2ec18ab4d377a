/* An out-of-tree program using an installed lanemap, built once through
 * pkg-config and once through find_package(lanemap CONFIG): it loads a
 * bundled kernel, enumerates its legal variants, compiles the first one,
 * verifies it against the FP64 oracle, and prints what it did with the
 * library's runtime version.
 *
 *   consumer KERNEL.lk R C
 *
 * Output, one line each: "version V", "variants N", "compiled VARIANT",
 * "verified ok".  Exit 0 when all of it worked, the lm_status otherwise. */
#include <stdio.h>
#include <stdlib.h>

#include <lanemap/lanemap.h>

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: consumer KERNEL.lk R C\n");
    return 2;
  }
  lm_error err = {0};
  lm_kernel *k = NULL;
  lm_variant *vs = NULL;
  lm_compiled *c = NULL;
  lm_data *d = NULL;
  lm_oracle *o = NULL;
  lm_shape shape;
  lm_enum_opts eo;
  lm_compile_opts co;
  lm_verify_result vr;
  char name[128];
  int n = 0;
  lm_status st;

  if (!lm_version_compatible(LANEMAP_VERSION_NUMBER)) {
    fprintf(stderr, "consumer: built for lanemap %s, running %s\n",
            LANEMAP_VERSION_STRING, lm_version());
    return 2;
  }
  printf("version %s\n", lm_version());
  if ((st = lm_kernel_load(argv[1], &k, &err)) != LM_OK)
    goto done;
  if ((st = lm_shape_bind(k, atoll(argv[2]), atoll(argv[3]), NULL, &shape,
                          &err)) != LM_OK)
    goto done;
  lm_enum_defaults(&eo);
  if ((n = lm_variant_enumerate(k, &eo, &vs, &err)) <= 0) {
    st = n < 0 ? err.status : LM_EFAIL;
    if (n == 0)
      lm_error_set(&err, st, "no legal variant");
    goto done;
  }
  printf("variants %d\n", n);
  lm_compile_defaults(&co);
  if ((st = lm_compile(k, &vs[0], &co, &c, &err)) != LM_OK)
    goto done;
  printf("compiled %s\n", lm_variant_format(&vs[0], name, sizeof name));
  if ((st = lm_data_gen(k, &shape, 1, &d, &err)) != LM_OK ||
      (st = lm_oracle_run(k, d, &o, &err)) != LM_OK ||
      (st = lm_verify(k, c, d, o, NULL, &vr, &err)) != LM_OK)
    goto done;
  printf("verified ok\n");

done:
  if (st != LM_OK)
    fprintf(stderr, "consumer: %s\n", err.msg);
  lm_oracle_free(o);
  lm_data_free(d);
  lm_compiled_free(c);
  free(vs);
  lm_kernel_free(k);
  return (int)st;
}
