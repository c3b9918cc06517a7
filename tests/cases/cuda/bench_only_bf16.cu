// Incorrect only at the bench shape, in a 16-bit output: rmsnorm whose rows from 1024 on, in rows
// of 1024 elements or more, come out 3 % too large (rtol is 1e-2). No check shape has both (the one
// with 65537 rows has 3 columns), so only the bench-shape comparison with the baseline's bf16
// output (R = 16384) sees it; that comparison runs on the device and must read bf16 as bf16.
// @expect incorrect
// @expect-message baseline
// @temper task rmsnorm
// @temper launch rmsnorm_rows grid(R) block(256) args(y, x, w, R, C)

__device__ float bf16_to_f32(unsigned short b)
{
    return __uint_as_float((unsigned int)b << 16);
}

__device__ unsigned short f32_to_bf16(float f)
{
    unsigned int u = __float_as_uint(f);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (unsigned short)(u >> 16);
}

extern "C" __global__ void rmsnorm_rows(unsigned short *y, const unsigned short *x, const unsigned short *w, int R,
                                        int C)
{
    __shared__ float buf[256];
    int t = threadIdx.x;
    const unsigned short *xr = x + (size_t)blockIdx.x * C;
    unsigned short *yr = y + (size_t)blockIdx.x * C;
    float ss = 0.0f;
    for (int j = t; j < C; j += 256) {
        float v = bf16_to_f32(xr[j]);
        ss += v * v;
    }
    buf[t] = ss;
    __syncthreads();
    for (int s = 128; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    float rstd = rsqrtf(buf[0] / C + 1e-6f) * (blockIdx.x >= 1024 && C >= 1024 ? 1.03f : 1.0f);
    for (int j = t; j < C; j += 256)
        yr[j] = f32_to_bf16(bf16_to_f32(xr[j]) * rstd * bf16_to_f32(w[j]));
}
