/* A module for the symbolization test (t_symbol.sh): a static function between two exported
 * ones, so the nearest exported symbol below an address in the middle one is the wrong name. */
#include <stdint.h>

#define EXPORT __attribute__((visibility("default"), noinline))
EXPORT int symmod_first(int x);
EXPORT int symmod_last(int x);
EXPORT void symmod_addrs(uintptr_t out[3]);

EXPORT int symmod_first(int x)
{
    return x * 3 + 1;
}

__attribute__((noinline)) static int symmod_hidden(int x)
{
    volatile int acc = 0;
    for (int i = 0; i < x; i++)
        acc += i * x;
    return acc;
}

EXPORT int symmod_last(int x)
{
    return symmod_hidden(x) + symmod_first(x);
}

/* The three functions' addresses (the static one is not reachable by dlsym). */
EXPORT void symmod_addrs(uintptr_t out[3])
{
    out[0] = (uintptr_t)&symmod_first;
    out[1] = (uintptr_t)&symmod_hidden;
    out[2] = (uintptr_t)&symmod_last;
}
