/* fakecuda errors: CUDA's names and strings (one table, fc_errors.def) and the per-thread
 * last error behind cudaGetLastError / cudaPeekAtLastError. */
#include "fc_internal.h"

static __thread cudaError_t t_last_error = cudaSuccess;

cudaError_t fc_ret(cudaError_t err)
{
    /* cudaErrorNotReady is a status, not an error: CUDA does not record it either. */
    if (err != cudaSuccess && err != cudaErrorNotReady)
        t_last_error = err;
    return err;
}

FC_API cudaError_t cudaGetLastError(void)
{
    cudaError_t err = t_last_error;
    t_last_error = cudaSuccess;
    return err;
}

FC_API cudaError_t cudaPeekAtLastError(void)
{
    return t_last_error;
}

FC_API const char *cudaGetErrorName(cudaError_t error)
{
    switch (error) {
#define FC_ERROR(code, str)                                                                        \
    case code:                                                                                     \
        return #code;
#include "fc_errors.def"
#undef FC_ERROR
    default:
        return "unrecognized error code";
    }
}

FC_API const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
#define FC_ERROR(code, str)                                                                        \
    case code:                                                                                     \
        return str;
#include "fc_errors.def"
#undef FC_ERROR
    default:
        return "unrecognized error code";
    }
}
