/* Unit test of interpose/shim/libver.c: ncclGetVersion codes of both schemes (2.8 and before,
 * 2.9 on) decoded, the NCCL API names a library exports that a build does not know (PMPI twin
 * required, sorted, no duplicates), which process speaks, and the joined list cut on "...".
 * Exit 0 on success. "libver_test unknown FILE": the names of FILE (one a line: a library's
 * exported functions) that this build does not know, by the shim's own rule (t_libver.sh). */
#include <stdio.h>
#include <string.h>

#include "libver.h"

static int failures;
#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "libver_test: %s:%d: %s\n", __FILE__, __LINE__, #cond);                \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static int is(int code, int major, int minor, int patch)
{
    struct ncg_nccl_version v = {-1, -1, -1};
    return ncg_nccl_version_decode(code, &v) == 0 && v.major == major && v.minor == minor &&
           v.patch == patch;
}

static void versions(void)
{
    CHECK(is(2809, 2, 8, 9)); /* 2.8.9: X*1000 + Y*100 + Z */
    CHECK(is(2704, 2, 7, 4));
    CHECK(is(20906, 2, 9, 6)); /* 2.9.6: X*10000 + Y*100 + Z */
    CHECK(is(21806, 2, 18, 6));
    CHECK(is(22809, 2, 28, 9));
    CHECK(is(23007, 2, 30, 7));
    CHECK(is(30001, 3, 0, 1));
    struct ncg_nccl_version v;
    CHECK(ncg_nccl_version_decode(0, &v) == -1);
    CHECK(ncg_nccl_version_decode(-5, &v) == -1);
}

static void unknown(void)
{
    /* A 2.30-like export list against a 2.28-like build. */
    const char *have[] = {"ncclAllReduce",
                          "pncclAllReduce",
                          "ncclWaitSignal",
                          "pncclWaitSignal",
                          "ncclPutSignal",
                          "pncclPutSignal",
                          "ncclResetDebugInitInternal",
                          "ncclDevCommCreate",
                          "pncclDevCommCreate",
                          "pncclOnlyP",
                          "ncclWaitSignal",
                          "pncclWaitSignal",
                          "ncclFooBar",
                          "pncclFooBar",
                          "ncclAlone",
                          "other",
                          "pncclAlone2"};
    const char *known[] = {"ncclAllReduce", "ncclDevCommCreate", "ncclSend"};
    const size_t nhave = sizeof have / sizeof have[0];
    const char *out[sizeof have / sizeof have[0]];
    size_t n = ncg_libver_unknown(have, nhave, known, 3, out);
    /* Sorted, each once; no internal helper without twin (ResetDebugInitInternal, Alone), no
     * pnccl name itself, nothing known. */
    CHECK(n == 3);
    CHECK(n > 0 && !strcmp(out[0], "ncclFooBar"));
    CHECK(n > 1 && !strcmp(out[1], "ncclPutSignal"));
    CHECK(n > 2 && !strcmp(out[2], "ncclWaitSignal"));
    /* Everything known: nothing to say. */
    const char *known2[] = {"ncclAllReduce", "ncclDevCommCreate", "ncclWaitSignal", "ncclPutSignal",
                            "ncclFooBar"};
    CHECK(ncg_libver_unknown(have, nhave, known2, 5, out) == 0);
    /* An empty library. */
    CHECK(ncg_libver_unknown(have, 0, known, 3, out) == 0);
}

static void speaks(void)
{
    CHECK(ncg_libver_speaks(0, 3, 0) == 1);  /* launcher's rank 0 */
    CHECK(ncg_libver_speaks(5, 0, 0) == 0);  /* another process, even at comm rank 0 */
    CHECK(ncg_libver_speaks(-1, 0, 0) == 1); /* no launcher: the first comm's rank 0 */
    CHECK(ncg_libver_speaks(-1, 2, 0) == 0);
    CHECK(ncg_libver_speaks(-1, -1, 0) == 1); /* rank not known yet (split child) */
    CHECK(ncg_libver_speaks(7, 7, 1) == 1);   /* NCCLGUARD_VERBOSE=1: everyone */
}

static void join(void)
{
    const char *names[] = {"ncclA", "ncclBB", "ncclCCC"};
    char buf[64];
    ncg_libver_join(names, 3, buf, sizeof buf);
    CHECK(!strcmp(buf, "ncclA, ncclBB, ncclCCC"));
    char small[17];
    ncg_libver_join(names, 3, small, sizeof small);
    CHECK(!strcmp(small, "ncclA, ncclBB..."));
    ncg_libver_join(names, 3, small, 16); /* no room for "..." after the last whole name */
    CHECK(!strcmp(small, "ncclA, ncclB..."));
    char tiny[8];
    ncg_libver_join(names, 3, tiny, sizeof tiny);
    CHECK(strlen(tiny) < sizeof tiny && strstr(tiny, "..."));
    ncg_libver_join(names, 0, buf, sizeof buf);
    CHECK(buf[0] == 0);
}

/* api.def's names and the device-API functions left to NCCL: what this build knows. */
static const char *const api_names[] = {
#define NCG_API(ret, name, params, args, cls, wrap, fail, fp) #name,
#include "api.def"
#undef NCG_API
};
#define NAPI (sizeof api_names / sizeof api_names[0])

static int unknown_of(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 2;
    static char store[1 << 16];
    static const char *have[4096];
    size_t nhave = 0, used = 0;
    char line[256];
    while (nhave < 4096 && fgets(line, sizeof line, f)) {
        line[strcspn(line, " \t\r\n")] = 0;
        size_t len = strlen(line) + 1;
        if (len == 1 || used + len > sizeof store)
            continue;
        memcpy(store + used, line, len);
        have[nhave++] = store + used;
        used += len;
    }
    fclose(f);
    const char *known[NAPI + NCG_LIBVER_NLEFT];
    memcpy(known, api_names, sizeof api_names);
    memcpy(known + NAPI, ncg_libver_left, sizeof ncg_libver_left);
    static const char *out[4096];
    size_t n = ncg_libver_unknown(have, nhave, known, NAPI + NCG_LIBVER_NLEFT, out);
    for (size_t i = 0; i < n; i++)
        printf("%s\n", out[i]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "unknown"))
        return unknown_of(argv[2]);
    versions();
    unknown();
    speaks();
    join();
    if (failures)
        return 1;
    printf("libver_test: ok\n");
    return 0;
}
