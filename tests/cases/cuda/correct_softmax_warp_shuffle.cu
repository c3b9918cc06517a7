// Correct: row-wise softmax, one block per row, max and sum reduced with warp shuffles and then
// across warps through shared memory.
// @temper task softmax
// @temper param BLOCK 128 256 1024
// @temper launch softmax_rows grid(R) block(BLOCK) args(y, x, R, C)
// @expect correct
#define NEG_INF __int_as_float(0xff800000) /* -inf; NVRTC has no math.h */
#define WARPS (BLOCK / 32)

__device__ float warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

__device__ float warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* Reduces v over the block; every thread gets the result. red has WARPS slots. */
__device__ float block_reduce(float v, float *red, bool is_max)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = is_max ? warp_max(v) : warp_sum(v);
    if (lane == 0)
        red[warp] = v;
    __syncthreads();
    float r = lane < WARPS ? red[lane] : (is_max ? NEG_INF : 0.0f);
    r = is_max ? warp_max(r) : warp_sum(r);
    __syncthreads(); /* red is reused by the next reduction */
    return r;
}

extern "C" __global__ void softmax_rows(float *y, const float *x, int R, int C)
{
    __shared__ float red[32];
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;
    float m = NEG_INF;
    for (int j = threadIdx.x; j < C; j += BLOCK)
        m = fmaxf(m, xr[j]);
    m = block_reduce(m, red, true);
    float s = 0.0f;
    for (int j = threadIdx.x; j < C; j += BLOCK)
        s += expf(xr[j] - m);
    s = block_reduce(s, red, false);
    float inv = 1.0f / s;
    for (int j = threadIdx.x; j < C; j += BLOCK)
        yr[j] = expf(xr[j] - m) * inv;
}
