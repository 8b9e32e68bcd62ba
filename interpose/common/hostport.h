/* "HOST:PORT" as users write it (NCCLGUARD_COORD, NCCLGUARD_HTTP, the status endpoint's spec):
 * one parser, pure, for every place that reads one. */
#ifndef NCG_HOSTPORT_H
#define NCG_HOSTPORT_H

#include <stddef.h>

#define NCG_HP_PORT_ONLY 1u /* "PORT" and ":PORT" too (no host: hostlen 0) */
#define NCG_HP_BARE_V6 2u   /* a host with ':' needs no brackets ("fe80::1:80": host "fe80::1") */
#define NCG_HP_PORT_ZERO 4u /* port 0 (any free port) allowed */

enum {
    NCG_HP_ENOCOLON = -1, /* no ":PORT", or no host before it */
    NCG_HP_EBRACKET = -2, /* "[" without "]" right before the port's colon */
    NCG_HP_EBAREV6 = -3,  /* a ':' in a host without brackets */
    NCG_HP_EPORT = -4,    /* the port is not a number in range (1..65535, or 0..) */
};

/* Spans of the string parsed (not copies): the host without brackets, the host as written. */
struct ncg_hostport {
    const char *host, *raw;
    size_t hostlen, rawlen;
    unsigned port;
};

/* Parses s ("HOST:PORT" or "[V6]:PORT"; more forms with flags NCG_HP_*): the port is the text
 * after the last ':', a decimal number (strtoul's syntax, no sign), 1..65535. 0 with *hp
 * filled, or a negative NCG_HP_E*. Pure; no allocation. */
int ncg_hostport_parse(const char *s, unsigned flags, struct ncg_hostport *hp);

#endif
