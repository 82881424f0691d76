/* LD_PRELOAD shim for tests/e2e/test_clock_step.py: steps the wall clock of one process, and nothing else.
 *
 * The wall clock (CLOCK_REALTIME, gettimeofday, time) reads as the real one plus the number of seconds
 * written in the file named by $QWEN3TTS_WALL_STEP_FILE (read again at most every 50 ms), so a test can
 * step it forwards or backwards by an hour while the process runs, as NTP does at boot. The monotonic
 * clock, sleeps and timed waits are untouched. (Debian's libfaketime does this too, but with
 * FAKETIME_DONT_FAKE_MONOTONIC=1 its clock_nanosleep makes Python's time.sleep fail with EINVAL.)
 * Built by the test into its temporary directory; never shipped.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static int (*real_clock_gettime)(clockid_t, struct timespec *);
static volatile long long step_ns;
static volatile long long next_read_ns;

static long long monotonic_ns(void) {
    struct timespec ts;
    syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long long current_step_ns(void) {
    long long now = monotonic_ns();
    if (now >= next_read_ns) {
        next_read_ns = now + 50000000LL;
        const char *path = getenv("QWEN3TTS_WALL_STEP_FILE");
        FILE *file = path ? fopen(path, "r") : NULL;
        if (file) {
            double seconds;
            if (fscanf(file, "%lf", &seconds) == 1) step_ns = (long long)(seconds * 1e9);
            fclose(file);
        }
    }
    return step_ns;
}

int clock_gettime(clockid_t id, struct timespec *ts) {
    if (!real_clock_gettime) real_clock_gettime = dlsym(RTLD_NEXT, "clock_gettime");
    int rc = real_clock_gettime(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        long long ns = ts->tv_sec * 1000000000LL + ts->tv_nsec + current_step_ns();
        ts->tv_sec = ns / 1000000000LL;
        ts->tv_nsec = ns % 1000000000LL;
    }
    return rc;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz) {
    struct timespec ts;
    int rc = clock_gettime(CLOCK_REALTIME, &ts);
    (void)tz;
    if (rc == 0) {
        tv->tv_sec = ts.tv_sec;
        tv->tv_usec = ts.tv_nsec / 1000;
    }
    return rc;
}

time_t time(time_t *out) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    if (out) *out = ts.tv_sec;
    return ts.tv_sec;
}
