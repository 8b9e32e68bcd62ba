/* libncclguard.so defines dlsym and dlvsym: a lookup of one of libnccl's API functions by name
 * (ctypes.CDLL("libnccl.so.2").ncclAllReduce, dlopen + dlsym in C) returns ncclguard's wrapper,
 * so such callers are guarded like linked ones. Every other lookup is the real one, answered
 * for the caller (RTLD_NEXT, RTLD_DEFAULT). ncclguard's own lookups pass straight through. */
#ifndef NCG_DLSYM_H
#define NCG_DLSYM_H

/* The real dlsym(handle, name), bypassing the hook; RTLD_NEXT means "after ncclguard". Any
 * thread, any time (also before constructors); no allocation; takes the loader's lock. */
void *ncg_real_dlsym(void *handle, const char *name);

/* Calls fn(name, arg) for every function (FUNC or IFUNC, global or weak, default version) that
 * the loaded object containing addr defines in its dynamic symbol table, read in memory (the
 * table the dynamic linker binds from). *path (when path is not NULL): the object's file name.
 * Returns how many, or -1 when addr is in no object. Any thread; no allocation of its own;
 * names stay valid while the object is loaded. */
int ncg_dyn_functions(const void *addr, void (*fn)(const char *name, void *arg), void *arg,
                      const char **path);

#endif
