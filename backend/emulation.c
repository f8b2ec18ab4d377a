/* Is this process emulated?  A user-mode emulator (qemu-user) runs code of
 * one architecture on a host of another and passes the host's
 * /proc/cpuinfo through, so the file describes an architecture other than
 * the one this code was compiled for: x86 kernels print "vendor_id" lines,
 * AArch64 kernels "CPU implementer" lines.  Timings taken under emulation
 * describe the emulator, so lm_time_compare refuses to take them.  The
 * file is self-contained (tests/test_aarch64.c cross-compiles it into its
 * AArch64 driver to check the answer under qemu). */
#include <stdio.h>
#include <string.h>

#include "lanemap/timing.h"

int lm_emulated_in(const char *cpuinfo) {
#if defined(__x86_64__) || defined(__i386__)
  const char *own = "vendor_id", *other = "CPU implementer";
#elif defined(__aarch64__)
  const char *own = "CPU implementer", *other = "vendor_id";
#else
  return 0; /* no rule for this architecture */
#endif
  FILE *f = fopen(cpuinfo, "r");
  if (!f)
    return 0; /* cannot tell: assume native */
  char line[512];
  int mine = 0, theirs = 0;
  while (fgets(line, sizeof line, f)) {
    mine |= strncmp(line, own, strlen(own)) == 0;
    theirs |= strncmp(line, other, strlen(other)) == 0;
  }
  fclose(f);
  return theirs && !mine;
}

int lm_emulated(void) { return lm_emulated_in("/proc/cpuinfo"); }
