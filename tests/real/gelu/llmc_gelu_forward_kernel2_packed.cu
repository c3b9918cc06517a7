// Ported from karpathy/llm.c, dev/cuda/gelu_forward.cu, gelu_forward_kernel2 (each thread loads
// and stores one 128-bit packet, x128: 8 bf16 values, with the .cs streaming hints; grid
// ceil_div(N, block * 8) as its launcher).
// Expected: incorrect: the kernel checks only that a packet starts before N (`if (i < N)`) and
// then stores all 8 values, so for N not a multiple of 8 (N = 1, 7, 1000003) it writes past the
// end of y; the guard zone after y catches it. (llm.c's shapes are multiples of 8.)
// @expect incorrect
// @temper task gelu
// @temper launch gelu_forward_kernel2 grid(ceil_div(N, 128 * 8)) block(128) args(y, x, N)
#include <cuda_bf16.h>

#define GELU_SCALING_FACTOR sqrtf(2.0f / M_PI)

union x128 {
    int4 bits;           /* the 128-bit packet as loaded and stored */
    __nv_bfloat16 v[8];  /* its 8 values */
};

extern "C" __global__ void gelu_forward_kernel2(__nv_bfloat16 *out, const __nv_bfloat16 *inp, int N)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * 8;
    if (i < N) {
        x128 packed_inp, packed_out;
        packed_inp.bits = __ldcs(reinterpret_cast<const int4 *>(inp + i));
        for (int k = 0; k < 8; k++) {
            float xi = __bfloat162float(packed_inp.v[k]);
            float cube = 0.044715f * xi * xi * xi;
            packed_out.v[k] = __float2bfloat16(0.5f * xi * (1.0f + tanhf(GELU_SCALING_FACTOR * (xi + cube))));
        }
        *reinterpret_cast<int4 *>(out + i) = packed_out.bits;
    }
}
