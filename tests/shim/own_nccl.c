/* A library that is not NCCL but has a function named like one (ncclAllReduce): the shim's
 * dlsym hook must hand out this library's own function for lookups on its handle. */
int ncclAllReduce(void);
__attribute__((visibility("default"))) int ncclAllReduce(void)
{
    return 42;
}
