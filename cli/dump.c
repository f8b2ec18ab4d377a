/* --dump DIR: the buffers of one launch as NumPy .npy files, so that other
 * tools (the Python package's tests, a notebook) compare their results
 * with the CLI's bit for bit.
 *
 * The format is NPY version 1.0: the magic "\x93NUMPY", the version bytes,
 * a little-endian 16-bit header length, a Python dict literal giving the
 * element type, the order and the shape, padded with spaces and a newline
 * so the data starts at a multiple of 64 bytes, then the elements in C
 * order.  numpy.load reads it; so does anything that follows the format
 * (it is documented with NumPy's format module). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "lanemap/core.h"

#define NPY_ALIGN 64

/* The NPY type string of a lanemap element type, little-endian. */
static const char *npy_descr(lm_dtype t) {
  switch (t) {
  case LM_F32:
    return "<f4";
  case LM_F64:
    return "<f8";
  case LM_I32:
    return "<i4";
  case LM_BOOL:
    return "|b1";
  }
  return NULL;
}

/* One .npy file of `rank` dims (1 or 2) holding bytes of data. */
static lm_status npy_write(const char *path, const char *descr, int rank,
                           const int64_t *dims, const void *data, size_t bytes,
                           lm_error *err) {
  char dict[192];
  int n = rank == 1 ? snprintf(dict, sizeof dict,
                               "{'descr': '%s', 'fortran_order': False, "
                               "'shape': (%lld,), }",
                               descr, (long long)dims[0])
                    : snprintf(dict, sizeof dict,
                               "{'descr': '%s', 'fortran_order': False, "
                               "'shape': (%lld, %lld), }",
                               descr, (long long)dims[0], (long long)dims[1]);
  /* magic (6) + version (2) + header length (2) + dict + padding + '\n' */
  size_t head = 10 + (size_t)n + 1;
  size_t padded = (head + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
  size_t hlen = padded - 10;
  char *buf = malloc(padded + bytes);
  if (!buf)
    return lm_error_set(err, LM_ESYS, "%s: out of memory", path);
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (char)(hlen & 0xff);
  buf[9] = (char)(hlen >> 8);
  memcpy(buf + 10, dict, (size_t)n);
  memset(buf + 10 + n, ' ', hlen - (size_t)n - 1);
  buf[padded - 1] = '\n';
  if (bytes)
    memcpy(buf + padded, data, bytes);
  lm_status s = lm_file_write_atomic(path, buf, padded + bytes, err);
  free(buf);
  return s;
}

lm_status cli_dump_data(const char *dir, const lm_kernel *k, const lm_data *d,
                        const lm_oracle *o, lm_error *err) {
  lm_status s = lm_file_make_dirs(dir, err);
  for (int p = 0; p < k->nparams && s == LM_OK; p++) {
    const lm_param *pa = &k->params[p];
    if (pa->kind != LM_PARAM_BUFFER)
      continue;
    int64_t dims[2];
    for (int i = 0; i < pa->rank; i++)
      dims[i] = lm_dim_eval(pa->dims[i], &d->shape);
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s.npy", dir, pa->name) >=
        (int)sizeof path)
      return lm_error_set(err, LM_EINPUT, "--dump %s: path too long", dir);
    if (pa->is_output && o)
      s = npy_write(path, "<f8", pa->rank, dims, o->want[p],
                    (size_t)o->count[p] * sizeof(double), err);
    else
      s = npy_write(path, npy_descr(pa->dtype), pa->rank, dims, d->buf[p],
                    (size_t)d->count[p] * lm_dtype_size(pa->dtype), err);
  }
  return s;
}
