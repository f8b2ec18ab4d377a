/* The memory roofline of a case: one streaming pass that reads every input
 * byte once (each input whole: a norm's g is read once, as the kernels keep
 * it in cache), then writes every output byte once, and computes nothing but an XOR that keeps the loads alive.  Its
 * time is the lower bound any kernel of the case can reach through memory;
 * a kernel's share of roofline is roofline time / kernel time.  Compiled
 * with -mavx512f/bw: 64-byte loads and stores, byte-masked tails. */
#include <immintrin.h>

#include "bench/anchors/anchors.h"

static inline __mmask64 byte_mask(int64_t n) {
  return n >= 64 ? ~(__mmask64)0 : _cvtu64_mask64((1ull << n) - 1u);
}

static inline __m512i read_bytes(const char *p, int64_t n, __m512i acc) {
  __m512i a0 = acc, a1 = _mm512_setzero_si512();
  int64_t j = 0;
  for (; j + 128 <= n; j += 128) {
    a0 = _mm512_xor_si512(a0, _mm512_loadu_si512(p + j));
    a1 = _mm512_xor_si512(a1, _mm512_loadu_si512(p + j + 64));
  }
  for (; j < n; j += 64)
    a0 = _mm512_xor_si512(a0, _mm512_maskz_loadu_epi8(byte_mask(n - j), p + j));
  return _mm512_xor_si512(a0, a1);
}

static inline void write_bytes(char *p, int64_t n, __m512i v) {
  int64_t j = 0;
  for (; j + 64 <= n; j += 64)
    _mm512_storeu_si512(p + j, v);
  if (j < n)
    _mm512_mask_storeu_epi8(p + j, byte_mask(n - j), v);
}

uint64_t anchor_roofline_run(const anchor_roofline *rl) {
  __m512i acc = _mm512_setzero_si512();
  for (int i = 0; i < rl->nin; i++)
    acc = read_bytes(rl->in[i].base, rl->in[i].bytes, acc);
  for (int i = 0; i < rl->nout; i++)
    write_bytes(rl->out[i].base, rl->out[i].bytes, acc);
  return (uint64_t)_mm512_reduce_or_epi64(acc);
}

uint64_t anchor_passes_run(const anchor_passes *p) {
  const anchor_roofline *rl = &p->rl;
  __m512i acc = _mm512_setzero_si512();
  for (int64_t r = 0; r < p->R; r++) {
    for (int i = 0; i < rl->nin; i++) {
      int64_t n = p->in_rows[i] ? rl->in[i].bytes / p->R : rl->in[i].bytes;
      const char *b = (const char *)rl->in[i].base + (p->in_rows[i] ? r * n : 0);
      for (int k = 0; k < p->passes[i]; k++)
        acc = read_bytes(b, n, acc);
    }
    for (int i = 0; i < rl->nout; i++)
      if (p->out_rows[i]) {
        int64_t n = rl->out[i].bytes / p->R;
        write_bytes((char *)rl->out[i].base + r * n, n, acc);
      }
  }
  for (int i = 0; i < rl->nout; i++)
    if (!p->out_rows[i])
      write_bytes(rl->out[i].base, rl->out[i].bytes, acc);
  return (uint64_t)_mm512_reduce_or_epi64(acc);
}

int64_t anchor_roofline_bytes(const anchor_roofline *rl) {
  int64_t b = 0;
  for (int i = 0; i < rl->nin; i++)
    b += rl->in[i].bytes;
  for (int i = 0; i < rl->nout; i++)
    b += rl->out[i].bytes;
  return b;
}
