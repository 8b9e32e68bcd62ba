/* Prints code|name|string for the codes fakecuda knows (and one it does not); t_errors.sh
 * runs it on the genuine libcudart.so.13 and on the fake and compares. */
#include "fc_test.h"

int main(void)
{
    static const int codes[] = {0,   1,   2,   3,   4,   9,   16,  17,  21,
                                35,  98,  100, 101, 400, 401, 600, 709, 713,
                                719, 800, 801, 900, 901, 908, 910, 999, 12345};
    unsigned i;

    for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        printf("%d|%s|%s\n", codes[i], cudaGetErrorName((cudaError_t)codes[i]),
               cudaGetErrorString((cudaError_t)codes[i]));
    return 0;
}
