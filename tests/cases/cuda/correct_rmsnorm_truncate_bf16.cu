// CUDA twin of tests/cases/opencl/correct_rmsnorm_truncate_bf16.cl (tasks/L1/rmsnorm's note: truncation passes): the task's naive.cu with the change
// marked CHANGED.
// @expect correct
// @temper task rmsnorm
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch rmsnorm_rows grid(R) block(BLOCK) args(y, x, w, R, C)

__device__ __forceinline__ float bf16_to_f32(unsigned short b)
{
    return __uint_as_float((unsigned int)b << 16);
}

__device__ __forceinline__ unsigned short f32_to_bf16(float f)
{
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a NaN */
        return (unsigned short)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return (unsigned short)(u >> 16);
}

extern "C" __global__ void rmsnorm_rows(unsigned short *y, const unsigned short *x, const unsigned short *w, int R,
                                        int C)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    const unsigned short *xr = x + (size_t)blockIdx.x * C;
    unsigned short *yr = y + (size_t)blockIdx.x * C;

    float ss = 0.0f;
    for (int j = t; j < C; j += BLOCK) {
        float v = bf16_to_f32(xr[j]);
        ss += v * v;
    }
    buf[t] = ss;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    float rstd = rsqrtf(buf[0] / C + 1e-6f);

    for (int j = t; j < C; j += BLOCK)
        yr[j] = (unsigned short)(__float_as_uint(bf16_to_f32(xr[j]) * rstd * bf16_to_f32(w[j])) >> 16); /* CHANGED: truncated */
}
