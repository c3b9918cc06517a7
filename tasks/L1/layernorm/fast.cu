// A tunable layernorm for bandwidth: TPR threads per row (32: a warp per row; 64..1024: several
// warps per row), RPB rows per block, VEC floats per access (float4/float2 when C % VEC == 0 and
// y, x, gamma, beta are VEC*4-byte aligned, else scalar).
// REG > 0 keeps the row in registers when it fits (C <= TPR*VEC*REG): each thread issues its REG
// vector loads up front; the mean (a row sum: warp shuffles, then shared memory across the row's
// warps) and then the biased variance as the mean of (x - mean)^2 (two passes over registers, exact
// in the way the one-pass E[x^2] - mean^2 is not) come from registers, and so does the output
// (x - mean) * rstd * gamma + beta: x is read from DRAM once, 8 bytes per element in all. Rows that
// do not fit (and all rows when REG = 0) read x three times (the later reads mostly from L2).
// gamma and beta (C values shared by every row) are read at write time and stay in L1/L2.
// @temper task layernorm
// @temper param TPR 128 32 64 256 512 1024
// @temper param RPB 1 2 4 8
// @temper param VEC 4 2 1
// @temper param REG 8 0 1 2 4 16 32
// @temper require TPR * RPB <= 1024
// @temper require REG == 0 || (TPR * VEC * REG >= 4096 && TPR * VEC * REG <= 8192)
// @temper require 1024 % TPR == 0 && TPR % 32 == 0
// @temper launch layernorm_fast grid(ceil_div(R, RPB)) block(TPR * RPB) args(y, x, gamma, beta, R, C)

#define NWARP (TPR / 32)

template <int V> struct vec_io;
template <> struct vec_io<4> {
    static __device__ __forceinline__ void load(const float *p, float *v)
    {
        float4 t = __ldg((const float4 *)p);
        v[0] = t.x;
        v[1] = t.y;
        v[2] = t.z;
        v[3] = t.w;
    }
    static __device__ __forceinline__ void store(float *p, const float *v)
    {
        *(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
    }
};
template <> struct vec_io<2> {
    static __device__ __forceinline__ void load(const float *p, float *v)
    {
        float2 t = __ldg((const float2 *)p);
        v[0] = t.x;
        v[1] = t.y;
    }
    static __device__ __forceinline__ void store(float *p, const float *v)
    {
        *(float2 *)p = make_float2(v[0], v[1]);
    }
};
template <> struct vec_io<1> {
    static __device__ __forceinline__ void load(const float *p, float *v)
    {
        v[0] = __ldg(p);
    }
    static __device__ __forceinline__ void store(float *p, const float *v)
    {
        *p = v[0];
    }
};

/* The sum of v over one row's TPR threads, returned to all of them; every thread of the block
 * calls it with b = 0, then with b = 1 (separate buffers: no barrier needed between the calls). */
__device__ __forceinline__ float row_sum(float v, int b)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
#if NWARP > 1
    __shared__ float red[2][RPB][NWARP];
    const int lane = threadIdx.x % 32, slot = threadIdx.x / TPR, warp = (threadIdx.x % TPR) / 32;
    if (lane == 0)
        red[b][slot][warp] = v;
    __syncthreads();
    v = lane < NWARP ? red[b][slot][lane] : 0.0f;
#pragma unroll
    for (int o = NWARP / 2; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    v = __shfl_sync(0xffffffffu, v, 0);
#endif
    return v;
}

/* y = (x - mean) * rstd * gamma + beta for one V-wide access at element offset e */
template <int V>
__device__ __forceinline__ void write_vec(float *yr, const float *gamma, const float *beta, size_t e, const float *xv,
                                          float mean, float rstd)
{
    float g[V], b[V], o[V];
    vec_io<V>::load(gamma + e, g);
    vec_io<V>::load(beta + e, b);
#pragma unroll
    for (int i = 0; i < V; i++)
        o[i] = (xv[i] - mean) * rstd * g[i] + b[i];
    vec_io<V>::store(yr + e, o);
}

/* One row of n elements (n = 0 for a block's rows past R), V-wide accesses (n % V == 0). The path
 * depends on C alone, the same for every row of the block, since both synchronise. */
template <int V>
__device__ __forceinline__ void ln_row(float *yr, const float *xr, const float *gamma, const float *beta, int n, int C,
                                       int tid)
{
    const int nv = n / V;
    const float invC = 1.0f / (float)C;
#if REG > 0
    constexpr int NR = V == VEC ? REG : 1; /* only the VEC-wide instantiation caches */
    if (V == VEC && C / V <= NR * TPR) {
        float e[NR][V];
#pragma unroll
        for (int k = 0; k < NR; k++) {
            int j = tid + k * TPR;
            if (j < nv) {
                vec_io<V>::load(xr + (size_t)j * V, e[k]);
            } else {
#pragma unroll
                for (int i = 0; i < V; i++)
                    e[k][i] = 0.0f;
            }
        }
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < NR; k++)
#pragma unroll
            for (int i = 0; i < V; i++)
                s += e[k][i];
        const float mean = row_sum(s, 0) * invC;
        float q = 0.0f;
#pragma unroll
        for (int k = 0; k < NR; k++) {
            if (tid + k * TPR < nv) {
#pragma unroll
                for (int i = 0; i < V; i++) {
                    float d = e[k][i] - mean;
                    q += d * d;
                }
            }
        }
        const float rstd = rsqrtf(row_sum(q, 1) * invC + 1e-5f);
#pragma unroll
        for (int k = 0; k < NR; k++) {
            int j = tid + k * TPR;
            if (j < nv)
                write_vec<V>(yr, gamma, beta, (size_t)j * V, e[k], mean, rstd);
        }
        return;
    }
#endif
    float s = 0.0f;
#pragma unroll 4
    for (int j = tid; j < nv; j += TPR) {
        float v[V];
        vec_io<V>::load(xr + (size_t)j * V, v);
#pragma unroll
        for (int i = 0; i < V; i++)
            s += v[i];
    }
    const float mean = row_sum(s, 0) * invC;
    float q = 0.0f;
#pragma unroll 4
    for (int j = tid; j < nv; j += TPR) {
        float v[V];
        vec_io<V>::load(xr + (size_t)j * V, v);
#pragma unroll
        for (int i = 0; i < V; i++) {
            float d = v[i] - mean;
            q += d * d;
        }
    }
    const float rstd = rsqrtf(row_sum(q, 1) * invC + 1e-5f);
#pragma unroll 4
    for (int j = tid; j < nv; j += TPR) {
        float v[V];
        vec_io<V>::load(xr + (size_t)j * V, v);
        write_vec<V>(yr, gamma, beta, (size_t)j * V, v, mean, rstd);
    }
}

extern "C" __global__ void __launch_bounds__(TPR *RPB)
    layernorm_fast(float *__restrict__ y, const float *__restrict__ x, const float *__restrict__ gamma,
                   const float *__restrict__ beta, int R, int C)
{
    const int tid = threadIdx.x % TPR;
    const int row = blockIdx.x * RPB + threadIdx.x / TPR;
    const bool live = row < R;
    const float *xr = x + (size_t)(live ? row : 0) * C;
    float *yr = y + (size_t)(live ? row : 0) * C;
    const int n = live ? C : 0;
    const bool vec = VEC > 1 && C % VEC == 0 &&
                     ((((size_t)x) | ((size_t)y) | ((size_t)gamma) | ((size_t)beta)) & (VEC * 4 - 1)) == 0;
    if (vec)
        ln_row<VEC>(yr, xr, gamma, beta, n, C, tid);
    else
        ln_row<1>(yr, xr, gamma, beta, n, C, tid);
}
