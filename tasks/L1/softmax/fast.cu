// A tunable softmax for bandwidth: TPR threads per row (TPR = 32: a warp per row; 64..1024: several
// warps per row), RPB rows per block, VEC floats per access (float4/float2 when C % VEC == 0 and
// x, y are VEC*4-byte aligned, else scalar).
// REG > 0 keeps the row in registers when it fits (C <= TPR*VEC*REG elements and C % VEC == 0,
// so that the rows are VEC-aligned; a scalar kernel, VEC = 1, caches any row that fits): it is read
// from DRAM once (8 bytes per element in all). Each thread loads its REG vectors up front (REG
// loads in flight), takes its own max m_t, replaces each value by exp(x - m_t) and sums them; one
// merge of the (m_t, s_t) pairs over the row (warp shuffles, then shared memory across the row's
// warps) gives (m, S), and each thread writes e * exp(m_t - m) / S from its registers: one exp
// per element. Rows that do not fit (and every row when REG = 0) stream: one online pass keeps a
// running (max, sum of exp(x - max)) over chunks of 4 vectors, the same merge, then a second pass
// reads x again (an L2 hit for rows that stay in cache) and writes exp(x - m) / S.
// The empty pair is (-FLT_MAX, 0): merging it needs no special case (exp(-FLT_MAX - m) = 0).
// @temper task softmax
// @temper param TPR 256 32 64 128 512 1024
// @temper param RPB 1 2 4 8
// @temper param VEC 4 2 1
// @temper param REG 4 0 1 2 8 16 32
// @temper require TPR * RPB <= 1024
// @temper require REG == 0 || (TPR * VEC * REG >= 4096 && TPR * VEC * REG <= 8192)
// @temper require 1024 % TPR == 0 && TPR % 32 == 0
// @temper launch softmax_fast grid(ceil_div(R, RPB)) block(TPR * RPB) args(y, x, R, C)

#define NEG_BIG (-3.402823466e38f) /* -FLT_MAX: the max of an empty set */
#define NWARP (TPR / 32)           /* warps per row */
#define SU 4                       /* vectors per step of the streaming pass */

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

/* (m, s) <- the merge of (m, s) and (m2, s2); s is a sum of exp(x - m). */
__device__ __forceinline__ void merge(float &m, float &s, float m2, float s2)
{
    float mx = fmaxf(m, m2);
    s = s * __expf(m - mx) + s2 * __expf(m2 - mx);
    m = mx;
}

/* Merges the (m, s) pairs of one row's TPR threads; every thread of the block calls it once, and
 * every thread of the row gets the same result. */
__device__ __forceinline__ void row_reduce(float &m, float &s)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        merge(m, s, m2, s2);
    }
#if NWARP > 1
    __shared__ float2 red[RPB][NWARP];
    const int lane = threadIdx.x % 32, slot = threadIdx.x / TPR, warp = (threadIdx.x % TPR) / 32;
    if (lane == 0)
        red[slot][warp] = make_float2(m, s);
    __syncthreads();
    float2 p = lane < NWARP ? red[slot][lane] : make_float2(NEG_BIG, 0.0f);
    m = p.x;
    s = p.y;
#pragma unroll
    for (int o = NWARP / 2; o > 0; o >>= 1) {
        float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        merge(m, s, m2, s2);
    }
    m = __shfl_sync(0xffffffffu, m, 0);
    s = __shfl_sync(0xffffffffu, s, 0);
#endif
}

/* One row of n elements (n = 0 for a block's rows past R), V-wide accesses (n % V == 0). The path
 * taken depends on C alone, the same for every row of the block, since both paths synchronise. */
template <int V> __device__ __forceinline__ void softmax_row(float *yr, const float *xr, int n, int C, int tid)
{
    const int nv = n / V;
#if REG > 0
    /* Only the VEC-wide instantiation caches (a scalar copy of the cached path for rows with
     * C % VEC != 0 would set the kernel's register count for nothing): those rows stream. */
    constexpr int NR = V == VEC ? REG : 1; /* vectors per thread in registers */
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
                    e[k][i] = NEG_BIG;
            }
        }
        float mt = NEG_BIG;
#pragma unroll
        for (int k = 0; k < NR; k++)
#pragma unroll
            for (int i = 0; i < V; i++)
                mt = fmaxf(mt, e[k][i]);
        float st = 0.0f;
#pragma unroll
        for (int k = 0; k < NR; k++) {
            if (tid + k * TPR < nv) {
#pragma unroll
                for (int i = 0; i < V; i++) {
                    e[k][i] = __expf(e[k][i] - mt);
                    st += e[k][i];
                }
            }
        }
        float m = mt, s = st;
        row_reduce(m, s);
        const float f = __expf(mt - m) / s;
#pragma unroll
        for (int k = 0; k < NR; k++) {
            int j = tid + k * TPR;
            if (j < nv) {
#pragma unroll
                for (int i = 0; i < V; i++)
                    e[k][i] *= f;
                vec_io<V>::store(yr + (size_t)j * V, e[k]);
            }
        }
        return;
    }
#endif
    float m = NEG_BIG, s = 0.0f;
    for (int j0 = tid; j0 < nv; j0 += SU * TPR) {
        float v[SU][V];
#pragma unroll
        for (int u = 0; u < SU; u++) {
            int j = j0 + u * TPR;
            if (j < nv) {
                vec_io<V>::load(xr + (size_t)j * V, v[u]);
            } else {
#pragma unroll
                for (int i = 0; i < V; i++)
                    v[u][i] = NEG_BIG;
            }
        }
        float cm = v[0][0];
#pragma unroll
        for (int u = 0; u < SU; u++)
#pragma unroll
            for (int i = 0; i < V; i++)
                cm = fmaxf(cm, v[u][i]);
        if (cm > m) {
            s *= __expf(m - cm);
            m = cm;
        }
#pragma unroll
        for (int u = 0; u < SU; u++)
#pragma unroll
            for (int i = 0; i < V; i++)
                s += __expf(v[u][i] - m); /* a filler -FLT_MAX adds exp(-huge) = 0 */
    }
    row_reduce(m, s);
    const float inv = 1.0f / s;
#pragma unroll 4
    for (int j = tid; j < nv; j += TPR) {
        float v[V];
        vec_io<V>::load(xr + (size_t)j * V, v);
#pragma unroll
        for (int i = 0; i < V; i++)
            v[i] = __expf(v[i] - m) * inv;
        vec_io<V>::store(yr + (size_t)j * V, v);
    }
}

extern "C" __global__ void __launch_bounds__(TPR *RPB) softmax_fast(float *__restrict__ y, const float *__restrict__ x,
                                                                   int R, int C)
{
    const int tid = threadIdx.x % TPR;
    const int row = blockIdx.x * RPB + threadIdx.x / TPR;
    const bool live = row < R;
    const float *xr = x + (size_t)(live ? row : 0) * C;
    float *yr = y + (size_t)(live ? row : 0) * C;
    const int n = live ? C : 0;
    /* every row start is VEC-aligned when the bases are and C % VEC == 0; the same for the whole grid */
    const bool vec = VEC > 1 && C % VEC == 0 && ((((size_t)x) | ((size_t)y)) & (VEC * 4 - 1)) == 0;
    if (vec)
        softmax_row<VEC>(yr, xr, n, C, tid);
    else
        softmax_row<1>(yr, xr, n, C, tid);
}
