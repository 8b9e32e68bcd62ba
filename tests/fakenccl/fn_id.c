/* fakenccl unique ids: NCCL's bootstrap handle layout (64-bit magic, then the root's socket
 * address; 40 bytes used, the rest zero) and the NCCL_COMM_ID=host:port variant with NCCL's
 * fixed magic, which every rank builds locally. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fn_internal.h"

union fn_addr {
    struct sockaddr sa;
    struct sockaddr_in in;
    struct sockaddr_in6 in6;
};
_Static_assert(8 + sizeof(union fn_addr) <= NCG_NCCL_ID_USED_BYTES, "handle fits in 40 bytes");

/* "host", "host:port" or "[v6]:port" into addr; 0 / -1. */
static int parse_hostport(const char *s, union fn_addr *addr, int need_port)
{
    char host[256];
    const char *port = NULL;
    if (s[0] == '[') {
        const char *e = strchr(s, ']');
        if (!e || (size_t)(e - s - 1) >= sizeof host)
            return -1;
        memcpy(host, s + 1, (size_t)(e - s - 1));
        host[e - s - 1] = 0;
        if (e[1] == ':')
            port = e + 2;
    } else {
        const char *colon = strrchr(s, ':');
        size_t hl = colon ? (size_t)(colon - s) : strlen(s);
        if (hl >= sizeof host)
            return -1;
        memcpy(host, s, hl);
        host[hl] = 0;
        if (colon)
            port = colon + 1;
    }
    if (need_port && (!port || !*port))
        return -1;
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(host, NULL, &hints, &res) != 0 || !res)
        return -1;
    struct addrinfo *pick = res;
    for (struct addrinfo *a = res; a; a = a->ai_next)
        if (a->ai_family == AF_INET) {
            pick = a;
            break;
        }
    memset(addr, 0, sizeof *addr);
    memcpy(addr, pick->ai_addr, pick->ai_addrlen <= sizeof *addr ? pick->ai_addrlen : sizeof *addr);
    freeaddrinfo(res);
    if (port && *port) {
        uint16_t p = htons((uint16_t)atoi(port));
        if (addr->sa.sa_family == AF_INET)
            addr->in.sin_port = p;
        else
            addr->in6.sin6_port = p;
    }
    return 0;
}

/* The host's first non-loopback IPv4 address, else 127.0.0.1. */
static void host_addr(union fn_addr *addr)
{
    memset(addr, 0, sizeof *addr);
    addr->in.sin_family = AF_INET;
    addr->in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct ifaddrs *ifs = NULL;
    if (getifaddrs(&ifs) != 0)
        return;
    for (struct ifaddrs *i = ifs; i; i = i->ifa_next)
        if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
            const struct sockaddr_in *in = (const struct sockaddr_in *)i->ifa_addr;
            if ((ntohl(in->sin_addr.s_addr) >> 24) != 127) {
                addr->in.sin_addr = in->sin_addr;
                break;
            }
        }
    freeifaddrs(ifs);
}

FN_API ncclResult_t pncclGetUniqueId(ncclUniqueId *id)
{
    if (!id)
        return ncclInvalidArgument;
    memset(id, 0, sizeof *id);
    union fn_addr addr;
    uint64_t magic;
    const char *env = getenv("NCCL_COMM_ID");
    if (env && *env) {
        if (parse_hostport(env, &addr, 1) != 0) {
            fn_set_last_error("invalid NCCL_COMM_ID '%s' (want host:port)", env);
            return ncclInvalidArgument;
        }
        magic = NCG_NCCL_COMM_ID_MAGIC;
    } else {
        do {
            if (getrandom(&magic, sizeof magic, 0) != sizeof magic)
                return ncclSystemError;
        } while (magic == NCG_NCCL_COMM_ID_MAGIC || magic == 0);
        const char *over = getenv("FAKENCCL_ADDR");
        if (!over || !*over || parse_hostport(over, &addr, 0) != 0)
            host_addr(&addr);
        uint16_t *port = addr.sa.sa_family == AF_INET ? &addr.in.sin_port : &addr.in6.sin6_port;
        if (*port == 0) /* the port a root would listen on: any unprivileged one will do */
            *port = htons((uint16_t)(32768 + (magic >> 48) % 28000));
    }
    memcpy(id->internal, &magic, sizeof magic);
    memcpy(id->internal + 8, &addr, sizeof addr);
    return ncclSuccess;
}
FN_ALIAS(ncclGetUniqueId);
