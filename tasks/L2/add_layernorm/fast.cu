// A tunable fused residual add + LayerNorm for bandwidth (fp32): h = x + r is written once, and y
// = (h - mean) / sqrt(var + 1e-5) * gamma + beta is written from registers, so x and r are read
// from DRAM once and nothing is read back (a framework's add then layer_norm writes h and reads it
// again). TPR threads per row (a multiple of 32: warp shuffles, then shared memory across the
// row's warps), RPB rows per block, VEC floats per access (4: float4, 2: float2) when C % VEC == 0
// and every pointer is 4*VEC-byte aligned, else one float at a time. REG > 0 keeps the row's h in
// registers when it fits (C <= TPR*VEC*REG); a row that does not fit (every row when REG = 0)
// writes h, then reads back the h each thread wrote itself (from L2, mostly) for the variance and
// for y. The variance is two-pass (sum of (h - mean)^2, never E[h^2] - mean^2), as the reference.
// gamma and beta (C values, read by every row) go through __ldg and stay in L1/L2.
// @temper task add_layernorm
// @temper param TPR 256 128 512 1024 64 32
// @temper param RPB 1 2 4
// @temper param VEC 4 2
// @temper param REG 4 0 1 2 8 16
// @temper require TPR * RPB <= 1024
// @temper require REG == 0 || (TPR * VEC * REG >= 4096 && TPR * VEC * REG <= 8192)
// @temper require 1024 % TPR == 0 && TPR % 32 == 0
// @temper launch add_layernorm_fast grid(ceil_div(R, RPB)) block(TPR * RPB) args(y, h, x, r, gamma, beta, R, C)

#define NWARP (TPR / 32)

template <int V> struct fvec;
template <> struct fvec<4> {
    typedef float4 t;
    static __device__ __forceinline__ float get(const t &v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }
    static __device__ __forceinline__ void set(t &v, int i, float f)
    {
        if (i == 0)
            v.x = f;
        else if (i == 1)
            v.y = f;
        else if (i == 2)
            v.z = f;
        else
            v.w = f;
    }
};
template <> struct fvec<2> {
    typedef float2 t;
    static __device__ __forceinline__ float get(const t &v, int i) { return i == 0 ? v.x : v.y; }
    static __device__ __forceinline__ void set(t &v, int i, float f)
    {
        if (i == 0)
            v.x = f;
        else
            v.y = f;
    }
};
template <> struct fvec<1> {
    typedef float t;
    static __device__ __forceinline__ float get(const t &v, int) { return v; }
    static __device__ __forceinline__ void set(t &v, int, float f) { v = f; }
};

/* The sum of v over one row's TPR threads, returned to all of them. Every thread of the block calls
 * it the same number of times; consecutive calls use different shared slots (parity), so a warp
 * that runs ahead cannot overwrite partial sums another warp has yet to read. */
__device__ __forceinline__ float row_sum(float v, int &parity)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
#if NWARP > 1
    __shared__ float red[2][RPB][NWARP];
    const int lane = threadIdx.x % 32, slot = threadIdx.x / TPR, warp = (threadIdx.x % TPR) / 32;
    if (lane == 0)
        red[parity][slot][warp] = v;
    __syncthreads();
    v = lane < NWARP ? red[parity][slot][lane] : 0.0f;
#pragma unroll
    for (int o = NWARP / 2; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    v = __shfl_sync(0xffffffffu, v, 0);
#endif
    parity ^= 1;
    return v;
}

/* y at vector j from h (V values), with gamma and beta */
template <int V>
__device__ __forceinline__ void write_y(float *yr, const float *gamma, const float *beta, int j,
                                        const typename fvec<V>::t &hv, float mean, float rstd)
{
    typedef typename fvec<V>::t vt;
    const vt gv = __ldg((const vt *)gamma + j), bv = __ldg((const vt *)beta + j);
    vt o;
#pragma unroll
    for (int i = 0; i < V; i++)
        fvec<V>::set(o, i, (fvec<V>::get(hv, i) - mean) * rstd * fvec<V>::get(gv, i) + fvec<V>::get(bv, i));
    ((vt *)yr)[j] = o;
}

/* One row of n elements (n = 0 for a block's rows past R) in V-wide accesses (n % V == 0); the
 * path depends on C alone, the same for every row of the block, since both synchronise. */
template <int V>
__device__ __forceinline__ void row(float *yr, float *hr, const float *xr, const float *rr, const float *gamma,
                                    const float *beta, int n, int C, int tid, int &parity)
{
    typedef typename fvec<V>::t vt;
    const int nv = n / V;
#if REG > 0
    if (V == VEC && C / V <= REG * TPR) {
        vt hv[REG];
        float s = 0.0f;
#pragma unroll
        for (int k = 0; k < REG; k++) {
            const int j = tid + k * TPR;
            if (j < nv) {
                const vt a = __ldg((const vt *)xr + j), b = __ldg((const vt *)rr + j);
#pragma unroll
                for (int i = 0; i < V; i++) {
                    const float v = fvec<V>::get(a, i) + fvec<V>::get(b, i);
                    fvec<V>::set(hv[k], i, v);
                    s += v;
                }
                ((vt *)hr)[j] = hv[k];
            }
        }
        const float mean = row_sum(s, parity) / (float)C;
        float q = 0.0f;
#pragma unroll
        for (int k = 0; k < REG; k++)
            if (tid + k * TPR < nv)
#pragma unroll
                for (int i = 0; i < V; i++) {
                    const float d = fvec<V>::get(hv[k], i) - mean;
                    q += d * d;
                }
        const float rstd = rsqrtf(row_sum(q, parity) / (float)C + 1e-5f);
#pragma unroll
        for (int k = 0; k < REG; k++)
            if (tid + k * TPR < nv)
                write_y<V>(yr, gamma, beta, tid + k * TPR, hv[k], mean, rstd);
        return;
    }
#endif
    float s = 0.0f;
    for (int j = tid; j < nv; j += TPR) {
        const vt a = __ldg((const vt *)xr + j), b = __ldg((const vt *)rr + j);
        vt hv;
#pragma unroll
        for (int i = 0; i < V; i++) {
            const float v = fvec<V>::get(a, i) + fvec<V>::get(b, i);
            fvec<V>::set(hv, i, v);
            s += v;
        }
        ((vt *)hr)[j] = hv;
    }
    const float mean = row_sum(s, parity) / (float)C;
    float q = 0.0f;
    for (int j = tid; j < nv; j += TPR) { /* the h this thread wrote */
        const vt hv = ((const vt *)hr)[j];
#pragma unroll
        for (int i = 0; i < V; i++) {
            const float d = fvec<V>::get(hv, i) - mean;
            q += d * d;
        }
    }
    const float rstd = rsqrtf(row_sum(q, parity) / (float)C + 1e-5f);
    for (int j = tid; j < nv; j += TPR)
        write_y<V>(yr, gamma, beta, j, ((const vt *)hr)[j], mean, rstd);
}

extern "C" __global__ void __launch_bounds__(TPR *RPB)
    add_layernorm_fast(float *__restrict__ y, float *__restrict__ h, const float *__restrict__ x,
                       const float *__restrict__ r, const float *__restrict__ gamma, const float *__restrict__ beta,
                       int R, int C)
{
    const int tid = threadIdx.x % TPR;
    const bool vec = C % VEC == 0 &&
                     ((((size_t)y) | ((size_t)h) | ((size_t)x) | ((size_t)r) | ((size_t)gamma) | ((size_t)beta)) &
                      (4 * VEC - 1)) == 0;
    const int groups = (R + RPB - 1) / RPB;
    int parity = 0;
    for (int g = blockIdx.x; g < groups; g += gridDim.x) {
        const int rw = g * RPB + threadIdx.x / TPR;
        const bool live = rw < R;
        const size_t off = (size_t)(live ? rw : 0) * C;
        const int n = live ? C : 0;
        if (vec)
            row<VEC>(y + off, h + off, x + off, r + off, gamma, beta, n, C, tid, parity);
        else
            row<1>(y + off, h + off, x + off, r + off, gamma, beta, n, C, tid, parity);
    }
}
