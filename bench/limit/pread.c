/* The limit rows of bench/vs-fio: a bare loop of 4 KiB (or BS) random pread()s on one
 * file, no timing per request, no histogram: what one thread can do at most through
 * the syscall; with `timed`, each request timed by two clock_gettime(CLOCK_MONOTONIC)
 * into a log2 histogram: the least a tool that times every request that way can cost;
 * with `tsc` (x86-64 only), timed by two rdtsc scaled to nanoseconds, as fslab-engine
 * does where its report's engine.clock is "tsc".
 * Usage: pread FILE BS RAMP_S RUNTIME_S [timed|tsc]. Prints {"ios": N, "seconds": S}
 * for the measured part (after the ramp). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#ifdef __x86_64__
#include <x86intrin.h>
#endif

static uint64_t hist[64];

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t ticks(void) {
#ifdef __x86_64__
    return __rdtsc();
#else
    return 0;
#endif
}

/* Nanoseconds per counter tick times 2^32, measured over 2 ms (the engine: 0.5 ms). */
static uint64_t tsc_scale(void) {
    double t0 = now_s();
    uint64_t c0 = ticks();
    while (now_s() - t0 < 0.002)
        ;
    double t1 = now_s();
    uint64_t c1 = ticks();
    return (uint64_t)((t1 - t0) * 1e9 / (double)(c1 - c0) * 4294967296.0);
}

int main(int argc, char **argv) {
    if (argc != 5 && !(argc == 6 && (strcmp(argv[5], "timed") == 0 || strcmp(argv[5], "tsc") == 0))) {
        fprintf(stderr, "usage: %s FILE BS RAMP_S RUNTIME_S [timed|tsc]\n", argv[0]);
        return 2;
    }
    int timed = argc == 6 && strcmp(argv[5], "timed") == 0;
    int tsc = argc == 6 && strcmp(argv[5], "tsc") == 0;
#ifndef __x86_64__
    if (tsc) {
        fprintf(stderr, "tsc: the time-stamp counter is read on x86-64 only\n");
        return 2;
    }
#endif
    int fd = open(argv[1], O_RDONLY);
    if (fd < 0) {
        perror(argv[1]);
        return 1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        perror("fstat");
        return 1;
    }
    size_t bs = (size_t)strtoull(argv[2], NULL, 10);
    double ramp = atof(argv[3]), runtime = atof(argv[4]);
    uint64_t blocks = (uint64_t)st.st_size / bs;
    if (bs == 0 || blocks == 0) {
        fprintf(stderr, "the file holds no whole block of %zu bytes\n", bs);
        return 2;
    }
    char *buf = aligned_alloc(4096, (bs + 4095) / 4096 * 4096);
    uint64_t scale = tsc ? tsc_scale() : 0;
    uint64_t x = 0x5eed;
    double start = now_s(), measured_from = start + ramp, end = measured_from + runtime;
    uint64_t ios = 0;
    int measuring = ramp <= 0;
    for (;;) {
        for (int i = 0; i < 1024; i++) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            struct timespec a, b;
            uint64_t ta = 0;
            if (timed)
                clock_gettime(CLOCK_MONOTONIC, &a);
            if (tsc)
                ta = ticks();
            ssize_t got = pread(fd, buf, bs, (off_t)((x % blocks) * bs));
            if (tsc) {
                uint64_t ns = (uint64_t)(((unsigned __int128)(ticks() - ta) * scale) >> 32);
                hist[63 - __builtin_clzll(ns | 1)]++;
            }
            if (timed) {
                clock_gettime(CLOCK_MONOTONIC, &b);
                uint64_t ns = (uint64_t)(b.tv_sec - a.tv_sec) * 1000000000ull +
                              (uint64_t)(b.tv_nsec - a.tv_nsec);
                hist[63 - __builtin_clzll(ns | 1)]++;
            }
            if (got != (ssize_t)bs) {
                perror("pread");
                return 1;
            }
        }
        double t = now_s();
        if (!measuring && t >= measured_from) {
            measuring = 1;
            measured_from = t;
            end = t + runtime;
            continue;
        }
        if (measuring)
            ios += 1024;
        if (t >= end)
            break;
    }
    printf("{\"ios\": %llu, \"seconds\": %.6f}\n", (unsigned long long)ios, now_s() - measured_from);
    return 0;
}
