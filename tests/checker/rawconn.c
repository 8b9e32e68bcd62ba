/* rawconn: hostile side-channel clients for the auth tests. Usage: rawconn HOST PORT MODE [N]
 * MODE: garbage (random bytes), truncated (half a valid HELLO, then close), badtoken (a HELLO
 * with a wrong token, then a REPORT claiming rank 0 of a comm with a huge count), silent
 * (connect and say nothing for 2 s), tokenhello TOKEN-STRING (a correct HELLO, then garbage).
 * Repeats N times (default 20). Exit 0 (it only reports what happened to its connections). */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "coord.h"
#include "wire.h"

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

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(
            stderr,
            "usage: rawconn HOST PORT garbage|truncated|badtoken|silent|tokenhello [N|TOKEN]\n");
        return 2;
    }
    const char *mode = argv[3];
    int n = argc > 4 && strcmp(mode, "tokenhello") ? atoi(argv[4]) : 20;
    static uint8_t b[8192];
    static struct ncg_msg m;
    int refused = 0;
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
            r.u.report.e[0] = (struct ncg_report_entry){0, 4, 0, 1u << 30, 0, 0, 0};
            long k = ncg_wire_encode(&r, b + len, sizeof b - (size_t)len);
            len += k;
            if (!strcmp(mode, "tokenhello"))
                for (int g = 0; g < 64; g++)
                    b[len++] = (uint8_t)rand();
        } else if (!strcmp(mode, "silent")) {
            sleep(2);
        }
        if (len > 0 && write(fd, b, (size_t)len) < 0)
            refused++;
        usleep(20000);
        close(fd);
    }
    printf("rawconn: %s x%d done (%d refused)\n", mode, n, refused);
    return 0;
}
