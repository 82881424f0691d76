/* Lets the qwentts-cpp-python 0.5.0 wheel load on this machine, and sets its CPU thread count.
 *
 * The wheel is built for glibc >= 2.38 with the CUDA backend linked in; this machine has glibc 2.36 and no
 * CUDA. Built as libggml-cuda.so.0 and preloaded (setup.sh, compare.py), it provides:
 *   - the C23 strtol/strtoul/strtoull/sscanf entry points of glibc 2.38, mapped to the classic ones (same
 *     results for the decimal numbers ggml and libgomp parse);
 *   - ggml_backend_cuda_reg() returning NULL, which ggml's backend registry skips (no CUDA backend);
 *   - get_nprocs(), which the C++ runtime's hardware_concurrency() reads: qwentts.cpp runs
 *     hardware_concurrency() / 2 CPU threads (it assumes two hardware threads per core), so 1 on a 2-vCPU
 *     machine. QWENTTS_SHIM_NPROCS=4 gives it 2 threads; unset, the real count is returned.
 * No compute kernel is touched. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

long __isoc23_strtol(const char *s, char **e, int b) { return strtol(s, e, b); }
unsigned long __isoc23_strtoul(const char *s, char **e, int b) { return strtoul(s, e, b); }
unsigned long long __isoc23_strtoull(const char *s, char **e, int b) { return strtoull(s, e, b); }

int __isoc23_sscanf(const char *s, const char *f, ...) {
    va_list a;
    va_start(a, f);
    int r = vsscanf(s, f, a);
    va_end(a);
    return r;
}

void *ggml_backend_cuda_reg(void) { return NULL; }

int get_nprocs(void) {
    const char *forced = getenv("QWENTTS_SHIM_NPROCS");
    if (forced && atoi(forced) > 0) return atoi(forced);
    int (*real)(void) = (int (*)(void))dlsym(RTLD_NEXT, "get_nprocs");
    return real ? real() : 1;
}
