/* Prints the name of every function of interpose/shim/api.def, one per line: the list the shim must
 * export (tests/shim/t_exports.sh compares it with nm -D), and the count on stderr. */
#include <stdio.h>

static const char *const names[] = {
#define NCG_API(ret, name, params, args, cls, wrap, fail, fp) #name,
#include "api.def"
#undef NCG_API
};

int main(void)
{
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        printf("%s\n", names[i]);
    fprintf(stderr, "%zu functions\n", sizeof names / sizeof names[0]);
    return 0;
}
