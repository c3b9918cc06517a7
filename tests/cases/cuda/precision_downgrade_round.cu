// CUDA twin of tests/cases/opencl/precision_downgrade_round.cl, translated (__global dropped, work-item ids as thread ids,
// the f-suffixed math functions). What it holds:
// Wrong, subtly: softmax that rounds each exp(x - max) to a 10-bit mantissa (half's precision,
// fp32's range) by bit masking, the smallest error a half-precision kernel makes: at most
// 4.9e-4 relative per element, nothing flushed to zero. Must fail rtol 2e-4 on many elements.
// One work-item per row, 64 per work-group.
// @expect incorrect
// @temper task softmax
// @temper launch softmax_round grid(ceil_div(R, 64)) block(64) args(y, x, R, C)

/* v rounded to nearest with 10 explicit mantissa bits (13 low bits cleared) */
__device__ float round10(float v)
{
    return __uint_as_float((__float_as_uint(v) + 0x1000u) & 0xFFFFE000u);
}

extern "C" __global__ void softmax_round(float *y, const float *x, int R, int C)
{
    int r = (blockIdx.x * (size_t)blockDim.x + threadIdx.x);
    if (r >= R)
        return;
    const float *xr = x + (size_t)r * C;
    float *yr = y + (size_t)r * C;
    float m = -INFINITY, sum = 0.0f;
    for (int j = 0; j < C; j++)
        m = fmaxf(m, xr[j]);
    for (int j = 0; j < C; j++)
        sum += round10(expf(xr[j] - m));
    for (int j = 0; j < C; j++)
        yr[j] = round10(expf(xr[j] - m)) / sum;
}
