/* libncclguard.so defines dlsym and dlvsym: a lookup of one of libnccl's API functions by name
 * (ctypes.CDLL("libnccl.so.2").ncclAllReduce, dlopen + dlsym in C) returns ncclguard's wrapper,
 * so such callers are guarded like linked ones. Every other lookup is the real one, answered
 * for the caller (RTLD_NEXT, RTLD_DEFAULT). ncclguard's own lookups pass straight through. */
#ifndef NCG_DLSYM_H
#define NCG_DLSYM_H

/* The real dlsym(handle, name), bypassing the hook; RTLD_NEXT means "after ncclguard". Any
 * thread, any time (also before constructors); no allocation; takes the loader's lock. */
void *ncg_real_dlsym(void *handle, const char *name);

#endif
