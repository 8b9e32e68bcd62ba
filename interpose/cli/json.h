/* Minimal JSON reader for the CLI (`ncclguard report`): a parsed tree and typed getters. */
#ifndef NCG_CLI_JSON_H
#define NCG_CLI_JSON_H

#include <stddef.h>

enum ncg_json_type {
    NCG_JSON_NULL,
    NCG_JSON_BOOL,
    NCG_JSON_NUMBER,
    NCG_JSON_STRING,
    NCG_JSON_ARRAY,
    NCG_JSON_OBJECT
};

struct ncg_json {
    enum ncg_json_type type;
    double num; /* NUMBER, BOOL (0/1) */
    char *str;  /* STRING */
    size_t n, cap;
    struct ncg_json **kids; /* ARRAY elements / OBJECT values */
    char **keys;            /* OBJECT keys, parallel to kids */
};

/* Parses exactly one JSON value filling text[0..len). Returns NULL on malformed input (and the
 * offset near the error in *err_at). Any thread; allocates (free with ncg_cli_json_free). */
struct ncg_json *ncg_cli_json_parse(const char *text, size_t len, size_t *err_at);
void ncg_cli_json_free(struct ncg_json *v);
/* The file at path whole, NUL-terminated, into *len bytes (free it): the text for
 * ncg_cli_json_parse. NULL when it cannot be read or is over max bytes. Any thread; blocks on
 * file I/O; allocates. */
char *ncg_cli_slurp(const char *path, size_t max, size_t *len);
/* Getters: NULL / dflt when absent or of another type. Pure. */
const struct ncg_json *ncg_cli_json_get(const struct ncg_json *o, const char *key);
const char *ncg_cli_json_s(const struct ncg_json *o, const char *key, const char *dflt);
double ncg_cli_json_n(const struct ncg_json *o, const char *key, double dflt);

#endif
