/* Is this process emulated?  A user-mode emulator (qemu-user) runs code of
 * one architecture on a host of another and passes the host's /sys through,
 * so /sys/devices/system/cpu/modalias names another architecture than the
 * one this code was compiled for ("cpu:type:x86" or "cpu:type:aarch64").
 * QEMU up to 8.1 passes /proc/cpuinfo through too (x86 kernels print
 * "vendor_id" lines, AArch64 kernels "CPU implementer" lines); later ones
 * fake an AArch64 one there, so modalias is read first and cpuinfo only
 * when modalias cannot tell.  Timings taken under emulation describe the
 * emulator, so lm_time_compare refuses to take them.  The file is
 * self-contained (tests/test_aarch64.c cross-compiles it into its AArch64
 * driver to check the answer under qemu). */
#include <stdio.h>
#include <string.h>

#include "lanemap/timing.h"

/* 1 the file describes another architecture, 0 this one, -1 cannot tell */
static int other_arch(const char *path) {
#if defined(__x86_64__) || defined(__i386__)
  static const char *own[] = {"vendor_id", "cpu:type:x86"};
  static const char *other[] = {"CPU implementer", "cpu:type:aarch64"};
#elif defined(__aarch64__)
  static const char *own[] = {"CPU implementer", "cpu:type:aarch64"};
  static const char *other[] = {"vendor_id", "cpu:type:x86"};
#else
  return -1; /* no rule for this architecture */
#endif
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  char line[512];
  int mine = 0, theirs = 0;
  while (fgets(line, sizeof line, f))
    for (int i = 0; i < 2; i++) {
      mine |= strncmp(line, own[i], strlen(own[i])) == 0;
      theirs |= strncmp(line, other[i], strlen(other[i])) == 0;
    }
  fclose(f);
  return mine ? 0 : theirs ? 1 : -1;
}

int lm_emulated_in(const char *file) { return other_arch(file) == 1; }

int lm_emulated(void) {
  int r = other_arch("/sys/devices/system/cpu/modalias");
  if (r < 0)
    r = other_arch("/proc/cpuinfo");
  return r == 1;
}
