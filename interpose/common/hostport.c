/* The host:port parser (hostport.h). */
#include "hostport.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ncg_hostport_parse(const char *s, unsigned flags, struct ncg_hostport *hp)
{
    const char *colon = strrchr(s, ':');
    memset(hp, 0, sizeof *hp);
    if ((!colon || colon == s) && !(flags & NCG_HP_PORT_ONLY))
        return NCG_HP_ENOCOLON;
    const char *ps = colon ? colon + 1 : s;
    hp->raw = s;
    hp->rawlen = colon ? (size_t)(colon - s) : 0;
    if (colon && s[0] == '[') {
        if (colon == s || colon[-1] != ']')
            return NCG_HP_EBRACKET;
        hp->host = s + 1;
        hp->hostlen = hp->rawlen - 2;
    } else {
        if (colon && !(flags & NCG_HP_BARE_V6) && memchr(s, ':', hp->rawlen))
            return NCG_HP_EBAREV6;
        hp->host = s;
        hp->hostlen = hp->rawlen;
    }
    char *end;
    errno = 0;
    unsigned long port = strtoul(ps, &end, 10);
    if (errno || end == ps || *end || port > 65535 || *ps == '-' || *ps == '+' ||
        (port == 0 && !(flags & NCG_HP_PORT_ZERO)))
        return NCG_HP_EPORT;
    hp->port = (unsigned)port;
    return 0;
}
