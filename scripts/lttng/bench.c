/* Logs N LTTng-UST events in a loop and prints the median ns/event of
 * ROUNDS rounds, timed with this thread's CPU time (as benches/overhead.rs).
 *   bench <events> [rounds]      (rounds = 0: one untimed loop, for callgrind)
 * The loop is its own noinline function, run_lttng, so callgrind can count
 * only inside it. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "tp.h"

__attribute__((noinline)) void run_lttng(uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        lttng_ust_tracepoint(qtrace_bench, event, 0x0b, 0, i, 0);
}

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench <events> [rounds]\n");
        return 2;
    }
    uint64_t n = strtoull(argv[1], NULL, 10);
    int rounds = argc > 2 ? atoi(argv[2]) : 9;
    if (rounds <= 0) {
        run_lttng(n);
        return 0;
    }
    double per_event[64];
    if (rounds > 64)
        rounds = 64;
    run_lttng(n); /* warm up */
    for (int r = 0; r < rounds; r++) {
        double t0 = cpu_ns();
        run_lttng(n);
        per_event[r] = (cpu_ns() - t0) / (double)n;
    }
    qsort(per_event, rounds, sizeof per_event[0], cmp);
    printf("%.2f\n", per_event[rounds / 2]);
    return 0;
}
