/*
 * The work Debian's `dtest -D` does itself on the critical path of its RDMA-write ping-pong,
 * with no transfer at all: what no DAT library can take away from its latency figure.
 *
 * With -D (data check) each iteration of the ping-pong runs, in turn:
 *   - the client, once the server's write arrived: compares its send buffer with the receive
 *     buffer (all `len` bytes), then fills its send buffer for the next write: one message in
 *     five (the fifth pattern) with rand() byte by byte, the others with memset;
 *   - the server, once the client's write arrived: checks the first byte (not for the fifth
 *     pattern) and copies the receive buffer to its send buffer (`len - 1` bytes).
 * dtest prints the round trip over 2 as its one-way latency, so this program prints the same
 * share of that work: microseconds per iteration over 2.
 *
 * usage: dtestwork [-s bytes] [-n iterations] [-q]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PATTERNS 5 /* dtest's pattern count; the last one is random bytes */

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    size_t len = 65536;
    long iterations = 1000;
    int quiet = 0, opt;
    while ((opt = getopt(argc, argv, "s:n:q")) != -1) {
        switch (opt) {
        case 's': len = strtoul(optarg, NULL, 0); break;
        case 'n': iterations = strtol(optarg, NULL, 0); break;
        case 'q': quiet = 1; break;
        default:
            fprintf(stderr, "usage: %s [-s bytes] [-n iterations] [-q]\n", argv[0]);
            return 2;
        }
    }
    if (len < 2 || iterations < 1) {
        fprintf(stderr, "dtestwork: -s must be at least 2 and -n at least 1\n");
        return 2;
    }
    /* One pair of buffers for each side, as the two processes have. */
    unsigned char *client_send = calloc(1, len), *client_recv = calloc(1, len);
    unsigned char *server_send = calloc(1, len), *server_recv = calloc(1, len);
    if (!client_send || !client_recv || !server_send || !server_recv) {
        perror("dtestwork");
        return 1;
    }
    static const unsigned char pattern[PATTERNS] = {0, 0xff, 0x55, 0xaa, 0};
    srand(1);
    long mismatches = 0;
    double work = 0; /* only dtest's own steps are timed, not the copies that stand for writes */
    for (long i = 0; i < iterations; i++) {
        int p = (int)(i % PATTERNS);
        double t = now_us();
        /* The client fills its next write. */
        if (p == PATTERNS - 1) {
            for (size_t b = 0; b < len - 1; b++)
                client_send[b] = (unsigned char)rand();
        } else {
            memset(client_send, pattern[p], len - 1);
        }
        work += now_us() - t;
        memcpy(server_recv, client_send, len); /* the client's write lands */
        t = now_us();
        /* The server checks the first byte and echoes the buffer. */
        if (p != PATTERNS - 1 && server_recv[0] != pattern[p])
            mismatches++;
        memcpy(server_send, server_recv, len - 1);
        work += now_us() - t;
        memcpy(client_recv, server_send, len); /* the server's write lands */
        t = now_us();
        /* The client compares what came back with what it sent. */
        if (memcmp(client_send, client_recv, len) != 0)
            mismatches++;
        work += now_us() - t;
    }
    if (mismatches)
        fprintf(stderr, "dtestwork: %ld mismatches (the model is wrong)\n", mismatches);
    double one_way = work / iterations / 2;
    if (quiet)
        printf("%.2f\n", one_way);
    else
        printf("dtestwork: dtest -D's own work at %zu bytes: %.2f us per iteration, %.2f us one-way share\n",
               len, work / iterations, one_way);
    return mismatches ? 1 : 0;
}
