// A tunable softmax: one block of BLOCK threads per row. Each thread keeps a running (max, sum of
// exp(x - max)) over its elements, read as float4 when the row allows it; warp shuffles and then
// shared memory merge the pairs; a second pass (which finds the row in cache) writes
// exp(x - max) / sum.
// @temper task softmax
// @temper param BLOCK 128 256 512 1024
// @temper require BLOCK % 32 == 0
// @temper require 1024 % BLOCK == 0
// @temper launch softmax_online grid(R) block(BLOCK) args(y, x, R, C)

__device__ __forceinline__ void merge(float &m, float &s, float m2, float s2)
{
    float mx = fmaxf(m, m2);
    /* an empty pair has m = -inf and s = 0: exp(-inf - mx) is 0, never NaN unless both are empty */
    s = (m == mx ? s : s * __expf(m - mx)) + (m2 == mx ? s2 : s2 * __expf(m2 - mx));
    m = mx;
}

__device__ __forceinline__ void add(float &m, float &s, float v)
{
    if (v > m) {
        s = s * __expf(m - v) + 1.0f;
        m = v;
    } else {
        s += __expf(v - m);
    }
}

extern "C" __global__ void softmax_online(float *y, const float *x, int R, int C)
{
    __shared__ float sm[32], ss[32];
    const float *xr = x + (size_t)blockIdx.x * C;
    float *yr = y + (size_t)blockIdx.x * C;
    const float neg_inf = -__int_as_float(0x7f800000);
    float m = neg_inf, s = 0.0f;
    bool vec = (C % 4 == 0) && (((size_t)xr & 15) == 0) && (((size_t)yr & 15) == 0);
    if (vec) {
        const float4 *x4 = (const float4 *)xr;
        for (int j = threadIdx.x; j < C / 4; j += BLOCK) {
            float4 v = x4[j];
            add(m, s, v.x);
            add(m, s, v.y);
            add(m, s, v.z);
            add(m, s, v.w);
        }
    } else {
        for (int j = threadIdx.x; j < C; j += BLOCK)
            add(m, s, xr[j]);
    }
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        if (m2 != neg_inf)
            merge(m, s, m2, s2);
    }
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        sm[warp] = m;
        ss[warp] = s;
    }
    __syncthreads();
    if (warp == 0) {
        m = lane < BLOCK / 32 ? sm[lane] : neg_inf;
        s = lane < BLOCK / 32 ? ss[lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) {
            float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
            if (m2 != neg_inf)
                merge(m, s, m2, s2);
        }
        if (lane == 0) {
            sm[0] = m;
            ss[0] = s;
        }
    }
    __syncthreads();
    m = sm[0];
    float inv = 1.0f / ss[0];
    if (vec) {
        const float4 *x4 = (const float4 *)xr;
        float4 *y4 = (float4 *)yr;
        for (int j = threadIdx.x; j < C / 4; j += BLOCK) {
            float4 v = x4[j];
            y4[j] = make_float4(__expf(v.x - m) * inv, __expf(v.y - m) * inv, __expf(v.z - m) * inv,
                                __expf(v.w - m) * inv);
        }
    } else {
        for (int j = threadIdx.x; j < C; j += BLOCK)
            yr[j] = __expf(xr[j] - m) * inv;
    }
}
