/* Unit tests of a call site's text (interpose/inspect/symbol.c): ncg_site_compose keeps short
 * names as they are, shortens a long C++ or C name in its middle and never the offsets or the
 * file:line, fits every buffer size without splitting a character, writes odd bytes as '?';
 * ncg_site_simplify's levels; ncg_demangle through a libstdc++ loaded RTLD_LOCAL (as a Python
 * extension's), and not before it is loaded. Exit 0 when all pass. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "symbol.h"

static int failures;
#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "FAIL %s:%d: %s\n", __FILE__, __LINE__, #c);                           \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)
#define CHECK_STR(got, want)                                                                       \
    do {                                                                                           \
        if (strcmp((got), (want)) != 0) {                                                          \
            fprintf(stderr, "FAIL %s:%d:\n  got  '%s'\n  want '%s'\n", __FILE__, __LINE__, (got),  \
                    (want));                                                                       \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define ELL "\xe2\x80\xa6"
#define LONGCXX                                                                                    \
    "void trainer::distributed::checkpointing::DistributedCheckpointer<float, 4>::all_reduce_"     \
    "gradient_buckets_for_sharded_state<std::allocator<float> >(std::vector<float, "               \
    "std::allocator<float> > const&, unsigned long) [clone .isra.0]"

/* 1 when s is valid UTF-8 without control bytes. */
static int clean_utf8(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        int k = *p < 0x80             ? 1
                : (*p & 0xe0) == 0xc0 ? 2
                : (*p & 0xf0) == 0xe0 ? 3
                : (*p & 0xf8) == 0xf0 ? 4
                                      : 0;
        if (!k || *p < 0x20 || *p == 0x7f)
            return 0;
        for (int i = 1; i < k; i++)
            if ((p[i] & 0xc0) != 0x80)
                return 0;
        p += k;
    }
    return 1;
}

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && !strcmp(s + a - b, tail);
}

static void test_short(void)
{
    char b[128];
    size_t n = ncg_site_compose(b, sizeof b, "train_step", 0x1a2, "app", 0x11a2, "app.c:26");
    CHECK_STR(b, "train_step+0x1a2 (app+0x11a2) at app.c:26");
    CHECK(n == strlen(b));
    ncg_site_compose(b, sizeof b, "train_step", 0x1a2, "app", 0x11a2, "");
    CHECK_STR(b, "train_step+0x1a2 (app+0x11a2)");
    ncg_site_compose(b, sizeof b, "train_step", 0x1a2, "app", 0x11a2, NULL);
    CHECK_STR(b, "train_step+0x1a2 (app+0x11a2)");
    ncg_site_compose(b, sizeof b, NULL, 0, "libc.so.6", 0x27249, "libc-start.c:360");
    CHECK_STR(b, "libc.so.6+0x27249 at libc-start.c:360");
    ncg_site_compose(b, sizeof b, "", 0, "libc.so.6", 0x27249, "");
    CHECK_STR(b, "libc.so.6+0x27249");
    /* a demangled name that fits stays whole, its clone suffix included */
    ncg_site_compose(b, sizeof b, "ns::f(int) [clone .cold]", 4, "m", 5, "a.cc:1");
    CHECK_STR(b, "ns::f(int) [clone .cold]+0x4 (m+0x5) at a.cc:1");
}

static void test_long_cxx(void)
{
    char b[128], s[256];
    ncg_site_compose(b, sizeof b, LONGCXX, 0x27, "cxxsite", 0x1725, "cxxsite.cc:42");
    CHECK_STR(b, "trainer::distributed::checkp" ELL
                 "::all_reduce_gradient_buckets_for_sharded_state<" ELL ">(" ELL
                 ")+0x27 (cxxsite+0x1725) at cxxsite.cc:42");
    /* a stack frame's 256 bytes: only the clone suffix gives way */
    ncg_site_compose(s, sizeof s, LONGCXX, 0x27, "cxxsite", 0x1725, "cxxsite.cc:42");
    CHECK_STR(s, "void trainer::distributed::checkpointing::DistributedCheckpointer<float, "
                 "4>::all_reduce_gradient_buckets_for_sharded_state<std::allocator<float> "
                 ">(std::vector<float, std::allocator<float> > const&, unsigned "
                 "long)+0x27 (cxxsite+0x1725) at cxxsite.cc:42");
    /* a mangled name (no demangler): cut in its middle, the rest intact */
    const char *mangled =
        "_ZN7trainer11distributed13checkpointing23DistributedCheckpointerIfLi4EE45"
        "all_reduce_gradient_buckets_for_sharded_stateISaIfEEEvRKSt6vectorIfT_Em."
        "isra.0";
    size_t n = ncg_site_compose(b, sizeof b, mangled, 0x30, "cxxsite", 0x1550, "cxxsite.cc:38");
    CHECK(n == 127 && strlen(b) == 127);
    CHECK(!strncmp(b, "_ZN7trainer11distributed", 24));
    CHECK(strstr(b, ELL) != NULL);
    CHECK(ends_with(b, "EvRKSt6vectorIfT_Em.isra.0+0x30 (cxxsite+0x1550) at cxxsite.cc:38"));
}

static void test_simplify(void)
{
    char b[512];
    CHECK(ncg_site_simplify(b, sizeof b, LONGCXX, 1) == strlen(LONGCXX) - 16);
    CHECK(!strstr(b, "[clone"));
    ncg_site_simplify(b, sizeof b, LONGCXX, 2);
    CHECK_STR(b, "void trainer::distributed::checkpointing::DistributedCheckpointer<float, "
                 "4>::all_reduce_gradient_buckets_for_sharded_state<std::allocator<" ELL
                 "> >(std::vector<float, std::allocator<" ELL "> > const&, unsigned long)");
    ncg_site_simplify(b, sizeof b, LONGCXX, 3);
    CHECK_STR(b, "trainer::distributed::checkpointing::DistributedCheckpointer<float, "
                 "4>::all_reduce_gradient_buckets_for_sharded_state<std::allocator<" ELL "> >(" ELL
                 ")");
    ncg_site_simplify(b, sizeof b, LONGCXX, 4);
    CHECK_STR(b, "trainer::distributed::checkpointing::DistributedCheckpointer<" ELL
                 ">::all_reduce_gradient_buckets_for_sharded_state<" ELL ">(" ELL ")");
    /* lists of 3 bytes or less stay; a method's qualifiers after its parameters stay */
    ncg_site_simplify(b, sizeof b, "a::B<int>::f<T, U>(int, long) const", 4);
    CHECK_STR(b, "a::B<int>::f<" ELL ">(" ELL ") const");
    /* operators with brackets in their names are names; "(anonymous namespace)" is no
     * parameter list; a lambda's braces */
    ncg_site_simplify(b, sizeof b, "bool ns::operator< <Key>(ns::Key const&, ns::Key const&)", 4);
    CHECK_STR(b, "bool ns::operator< <Key>(" ELL ")"); /* "operator": the return type stays */
    ncg_site_simplify(b, sizeof b, "(anonymous namespace)::step(std::vector<int>&)", 3);
    CHECK_STR(b, "(anonymous namespace)::step(" ELL ")");
    ncg_site_simplify(b, sizeof b,
                      "c10d::PG::allreduce(std::vector<at::Tensor>&)::{lambda(int)#1}::operator()"
                      "(int) const",
                      3);
    CHECK_STR(b, "c10d::PG::allreduce(std::vector<at::Tensor>&)::{lambda(int)#1}::operator()(int) "
                 "const");
    ncg_site_simplify(b, sizeof b, "x::operator<<(std::ostream&, x::Big<long long> const&)", 4);
    CHECK_STR(b, "x::operator<<(" ELL ")");
    /* unbalanced: as level 1 */
    ncg_site_simplify(b, sizeof b, "f<g(int)>>(std::vector<int>) [clone .cold]", 4);
    CHECK_STR(b, "f<g(int)>>(std::vector<int>)");
    /* snprintf's contract: the whole length, a NUL, no split character */
    CHECK(ncg_site_simplify(b, 6, "ab\xc3\xa9\xc3\xa9", 1) == 6);
    CHECK_STR(b, "ab\xc3\xa9");
}

static void test_sizes(void)
{
    /* every size: within the buffer, NUL-terminated, valid UTF-8; file:line whole whenever the
     * text is longer than the file:line alone */
    static const char *names[] = {LONGCXX,
                                  "ncg_test_app_with_a_long_c_function_name_that_goes_on_and_"
                                  "on_and_on_and_on_and_on_and_on_for_a_while",
                                  "short", "",
                                  "n\xc3\xa4\xc3\xafve\xe2\x80\xa6\xf0\x9f\x98\x80::f()"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        for (size_t cap = 0; cap <= 300; cap++) {
            char b[320];
            memset(b, 'X', sizeof b);
            size_t n =
                ncg_site_compose(b, cap, names[k], 0x27, "libsomething.so", 0x1725, "file.cc:4242");
            if (!cap) {
                CHECK(b[0] == 'X' && n == 0);
                continue;
            }
            CHECK(n < cap && strlen(b) == n && b[cap] == 'X');
            CHECK(clean_utf8(b));
            if (cap > sizeof "file.cc:4242")
                CHECK(ends_with(b, "file.cc:4242"));
            if (cap >= 80 && *names[k])
                CHECK(strstr(b, "+0x27") && strstr(b, " at file.cc:4242"));
            if (cap >= 80 && *names[k])
                CHECK(strstr(b, "(libsomething.so+0x1725)"));
        }
    }
    char b[32];
    /* tiny: the file:line alone, else the text cut at its end */
    ncg_site_compose(b, 16, LONGCXX, 0x27, "cxxsite", 0x1725, "cxxsite.cc:42");
    CHECK_STR(b, "cxxsite.cc:42");
    ncg_site_compose(b, 10, LONGCXX, 0x27, "cxxsite", 0x1725, "cxxsite.cc:42");
    CHECK_STR(b, "trainer::"); /* simplified first */
    ncg_site_compose(b, 10, "", 0, "libc.so.6", 0x27249, "");
    CHECK_STR(b, "libc.so.6");
    /* no name: a long module gives way in its middle, not its offset nor file:line */
    ncg_site_compose(b, 32, "", 0, "libverylongmodulename.so.1", 0x1, "m.c:7");
    CHECK_STR(b, "libver" ELL "name.so.1+0x1 at m.c:7");
    /* the module part gives way before the name goes below its minimum */
    ncg_site_compose(b, 32, "some_function_name", 0x10, "libverylongmodulename.so.1", 0x1, "");
    CHECK_STR(b, "some_function_name+0x10");
}

static void test_odd_bytes(void)
{
    char b[128];
    ncg_site_compose(b, sizeof b, "f\x01g\xffh\xc3(", 1, "m\x1b[31m", 2, "a\x7f.c:3");
    CHECK_STR(b, "f?g?h?(+0x1 (m?[31m+0x2) at a?.c:3");
    ncg_site_compose(b, sizeof b, "caf\xc3\xa9::\xe6\x97\xa5\xe6\x9c\xac()", 1, "m", 2, "");
    CHECK_STR(b, "caf\xc3\xa9::\xe6\x97\xa5\xe6\x9c\xac()+0x1 (m+0x2)");
    /* overlong and surrogate encodings are not characters */
    ncg_site_compose(b, sizeof b, "\xc0\xaf\xed\xa0\x80", 1, "m", 2, "");
    CHECK_STR(b, "?????+0x1 (m+0x2)");
    /* a long name of 2-byte characters is cut between characters */
    char big[400];
    for (int i = 0; i < 199; i++)
        memcpy(big + 2 * i, "\xc3\xa9", 2);
    big[398] = 0;
    for (size_t cap = 40; cap <= sizeof b; cap++) {
        ncg_site_compose(b, cap, big, 1, "m", 2, "x.c:1");
        CHECK(clean_utf8(b) && ends_with(b, " at x.c:1") && strstr(b, "+0x1") && strstr(b, ELL));
    }
}

static void test_demangle(void)
{
    char b[256];
    CHECK(ncg_demangle("train_step", b, sizeof b) == -1);
    /* this program has no C++ runtime: the mangled name stays */
    if (dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_NOLOAD)) {
        printf("libstdc++ already loaded: the no-demangler case not checked\n");
    } else {
        CHECK(ncg_demangle("_ZN3foo3barEv", b, sizeof b) == -1);
    }
    /* loaded as a Python extension's dependency is, out of the global scope */
    void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
    if (!h) {
        printf("libstdc++.so.6 not installed: demangling not checked\n");
        return;
    }
    CHECK(ncg_demangle("_ZN3foo3barEv", b, sizeof b) == 0);
    CHECK_STR(b, "foo::bar()");
    CHECK(ncg_demangle("_ZN3foo3barIiEEvRKSt6vectorIT_SaIS2_EE", b, sizeof b) == 0);
    CHECK_STR(b, "void foo::bar<int>(std::vector<int, std::allocator<int> > const&)");
    /* too long for out: simplified to fit, or not demangled */
    CHECK(ncg_demangle("_ZN3foo3barIiEEvRKSt6vectorIT_SaIS2_EE", b, 24) == 0);
    CHECK_STR(b, "foo::bar<int>(" ELL ")");
    CHECK(ncg_demangle("_ZN3foo3barIiEEvRKSt6vectorIT_SaIS2_EE", b, 10) == -1);
    CHECK(ncg_demangle("_Znot_a_name", b, sizeof b) == -1);
}

int main(void)
{
    test_short();
    test_long_cxx();
    test_simplify();
    test_sizes();
    test_odd_bytes();
    test_demangle();
    if (failures) {
        fprintf(stderr, "%d failure(s)\n", failures);
        return 1;
    }
    printf("site_test: all passed\n");
    return 0;
}
