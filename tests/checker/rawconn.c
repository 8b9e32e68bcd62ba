/* rawconn: hostile side-channel clients for the auth tests. Usage: rawconn HOST PORT MODE [N]
 * MODE: garbage (random bytes), truncated (half a valid HELLO, then close), badtoken (a HELLO
 * with a wrong token, then a REPORT claiming rank 0 of a comm with a huge count), silent
 * (connect and say nothing; the N connections all held open together for 2 s), tokenhello
 * TOKEN-STRING (a correct HELLO, then garbage), bigflood TOKEN-STRING SECONDS (for SECONDS: a
 * correct HELLO, then valid REPORTs as fast as the socket takes them for 0.3 s, then a frame
 * announcing a 1 MiB payload of garbage; reconnect), hellos (N connections opened at once, each
 * sending a HELLO with token 0 as a job's process does on connecting; held until each has an
 * answer or an end, 10 s at most: prints how many were welcomed and how many dropped). Repeats N
 * times (default 20). Exit 0 (it only reports what happened to its connections). */
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "hash.h"
#include "wire.h"
#include "wire_io.h"

static int dial(const char *host, const char *port)
{
    struct addrinfo hints = {0}, *res;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return -1;
    int fd = socket(res->ai_family, SOCK_STREAM, 0);
    if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) != 0) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Write all of b (blocking); -1 when the peer closed. */
static int put(int fd, const uint8_t *b, size_t n)
{
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w <= 0)
            return -1;
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

/* bigflood: a peer that holds the token and floods the checker with traffic. */
static int bigflood(const char *host, const char *port, const char *token, double secs)
{
    static uint8_t b[1u << 16], big[NCG_WIRE_HDR + NCG_WIRE_MAX_PAYLOAD];
    static struct ncg_msg m;
    long reports = 0, bigs = 0, conns = 0;
    double end = now_s() + secs;
    while (now_s() < end) {
        int fd = dial(host, port);
        if (fd < 0) {
            usleep(50000);
            continue;
        }
        conns++;
        memset(&m, 0, sizeof m);
        m.type = NCG_MSG_HELLO;
        m.u.hello.token = ncg_token_hash(token);
        long len = ncg_wire_encode(&m, b, sizeof b);
        struct ncg_msg r = {.type = NCG_MSG_REPORT};
        r.u.report.n = 1;
        long one = 0;
        for (int k = 0; len + 512 < (long)sizeof b; k++) {
            r.u.report.e[0] = (struct ncg_report_entry){
                0xf100d00 + (uint64_t)conns, 2, 0, (uint64_t)k, -1, 0, 0, 0, 0};
            one = ncg_wire_encode(&r, b + len, sizeof b - (size_t)len);
            if (one <= 0)
                break;
            len += one;
        }
        double burst = now_s() + 0.3;
        int ok = put(fd, b, (size_t)len) == 0;
        while (ok && now_s() < burst && now_s() < end) {
            ok = put(fd, b + (len - one * 64), (size_t)one * 64) == 0;
            reports += 64;
        }
        struct ncg_wbuf h = {big, NCG_WIRE_HDR, 0,
                             0}; /* a valid header announcing 1 MiB of garbage */
        ncg_put32(&h, NCG_WIRE_MAGIC);
        ncg_put8(&h, NCG_WIRE_VERSION);
        ncg_put8(&h, NCG_MSG_REPORT);
        ncg_put16(&h, 0);
        ncg_put32(&h, NCG_WIRE_MAX_PAYLOAD);
        for (size_t k = NCG_WIRE_HDR; k < sizeof big; k += 4096)
            big[k] = (uint8_t)rand();
        if (ok && put(fd, big, sizeof big) == 0)
            bigs++;
        close(fd);
    }
    printf("rawconn: bigflood %ld connections, %ld reports, %ld 1 MiB frames\n", conns, reports,
           bigs);
    return 0;
}

/* hellos: N connections at once, a HELLO on each; counts WELCOMEs (any answer) and drops. */
static int hellos(const char *host, const char *port, int n)
{
    static struct pollfd pf[1024];
    static uint8_t b[512];
    struct ncg_msg m = {.type = NCG_MSG_HELLO};
    m.u.hello.global_rank = -1;
    long len = ncg_wire_encode(&m, b, sizeof b);
    int open = 0, welcomed = 0, dropped = 0, refused = 0;
    for (int i = 0; i < n && i < (int)(sizeof pf / sizeof *pf); i++) {
        int fd = dial(host, port);
        if (fd < 0 || put(fd, b, (size_t)len) != 0) {
            refused++;
            if (fd >= 0)
                close(fd);
            continue;
        }
        pf[open++] = (struct pollfd){fd, POLLIN, 0};
    }
    double end = now_s() + 10;
    int left = open;
    while (left > 0 && now_s() < end) {
        if (poll(pf, (nfds_t)open, 100) <= 0)
            continue;
        for (int i = 0; i < open; i++) {
            if (pf[i].fd < 0 || !pf[i].revents)
                continue;
            ssize_t r = recv(pf[i].fd, b, sizeof b, 0);
            if (r > 0)
                welcomed++;
            else
                dropped++;
            close(pf[i].fd);
            pf[i].fd = -1;
            left--;
        }
    }
    for (int i = 0; i < open; i++)
        if (pf[i].fd >= 0)
            close(pf[i].fd);
    printf("rawconn: hellos x%d: welcomed %d, dropped %d, unanswered %d, refused %d\n", n, welcomed,
           dropped, left, refused);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: rawconn HOST PORT "
                        "garbage|truncated|badtoken|silent|tokenhello|hellos [N|TOKEN]\n"
                        "       rawconn HOST PORT bigflood TOKEN SECONDS\n");
        return 2;
    }
    const char *mode = argv[3];
    if (!strcmp(mode, "bigflood"))
        return argc > 5 ? bigflood(argv[1], argv[2], argv[4], atof(argv[5])) : 2;
    if (!strcmp(mode, "hellos"))
        return hellos(argv[1], argv[2], argc > 4 ? atoi(argv[4]) : 20);
    int n = argc > 4 && strcmp(mode, "tokenhello") ? atoi(argv[4]) : 20;
    static uint8_t b[8192];
    static struct ncg_msg m;
    int refused = 0, silent[64], nsilent = 0;
    srand((unsigned)getpid());
    for (int i = 0; i < n; i++) {
        int fd = dial(argv[1], argv[2]);
        if (fd < 0) {
            refused++;
            usleep(50000);
            continue;
        }
        long len = 0;
        memset(&m, 0, sizeof m);
        if (!strcmp(mode, "garbage")) {
            len = 1 + rand() % 4096;
            for (long k = 0; k < len; k++)
                b[k] = (uint8_t)rand();
            if (i % 2)
                memcpy(b, "NCGW", 4); /* a plausible magic, garbage after */
        } else if (!strcmp(mode, "truncated")) {
            m.type = NCG_MSG_HELLO;
            m.u.hello.token = 1;
            len = ncg_wire_encode(&m, b, sizeof b) / 2;
        } else if (!strcmp(mode, "badtoken") || !strcmp(mode, "tokenhello")) {
            m.type = NCG_MSG_HELLO;
            m.u.hello.token = !strcmp(mode, "tokenhello") ? ncg_token_hash(argv[4]) : 0x5eed;
            len = ncg_wire_encode(&m, b, sizeof b);
            struct ncg_msg r = {.type = NCG_MSG_REPORT};
            r.u.report.n = 1;
            r.u.report.e[0] = (struct ncg_report_entry){0, 4, 0, 1u << 30, 0, 0, 0, 0, 0};
            long k = ncg_wire_encode(&r, b + len, sizeof b - (size_t)len);
            len += k;
            if (!strcmp(mode, "tokenhello"))
                for (int g = 0; g < 64; g++)
                    b[len++] = (uint8_t)rand();
        } else if (!strcmp(mode, "silent")) {
            if (nsilent < (int)(sizeof silent / sizeof *silent)) {
                silent[nsilent++] = fd; /* held: closed together after 2 s */
                continue;
            }
        }
        if (len > 0 && write(fd, b, (size_t)len) < 0)
            refused++;
        usleep(20000);
        close(fd);
    }
    if (nsilent > 0)
        sleep(2);
    for (int i = 0; i < nsilent; i++)
        close(silent[i]);
    printf("rawconn: %s x%d done (%d refused)\n", mode, n, refused);
    return 0;
}
