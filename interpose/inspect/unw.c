/* libunwind found once (unw.h). */
#define _GNU_SOURCE
#include "unw.h"
#include <dlfcn.h>
#include <pthread.h>

static struct ncg_unw U;
static pthread_once_t U_once = PTHREAD_ONCE_INIT;

static void unw_load(void)
{
#if defined(__x86_64__)
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return;
    *(void **)&U.getcontext = dlsym(h, "_Ux86_64_getcontext");
    *(void **)&U.init_local = dlsym(h, "_ULx86_64_init_local");
    *(void **)&U.init_local2 = dlsym(h, "_ULx86_64_init_local2");
    *(void **)&U.step = dlsym(h, "_ULx86_64_step");
    *(void **)&U.get_reg = dlsym(h, "_ULx86_64_get_reg");
    *(void **)&U.set_reg = dlsym(h, "_ULx86_64_set_reg");
    *(void **)&U.get_proc_name = dlsym(h, "_ULx86_64_get_proc_name");
    *(void **)&U.get_proc_info = dlsym(h, "_ULx86_64_get_proc_info");
    *(void **)&U.backtrace = dlsym(h, "unw_backtrace");
#endif
}

const struct ncg_unw *ncg_unw(void)
{
    pthread_once(&U_once, unw_load);
    return &U;
}
