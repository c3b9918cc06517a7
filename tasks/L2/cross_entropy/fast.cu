// A tunable fused softmax cross-entropy for bandwidth (fp32 logits, int32 labels): each row is read
// once, with an online log-sum-exp (a running max m and sum s of exp(x - m), rescaled when the max
// grows), where a framework's log_softmax then gather reads the row twice or more. One block of
// BLOCK threads per row; each thread takes VEC floats per access (4: float4, 2: float2) when V %
// VEC == 0 and logits is 4*VEC-byte aligned (else one float at a time), UNROLL accesses in flight
// before their first use, and updates its (m, s) once per UNROLL*VEC values (one rescale, then
// one exp per value). The threads' pairs merge through warp shuffles, then shared memory; thread
// 0 writes (m - x[label]) + log(s). FAST = 1: the hardware exp (ex2.approx, a few ulp; the loss's
// tolerance is 1e-3 absolute); FAST = 0: expf.
// @temper task cross_entropy
// @temper param BLOCK 512 256 1024 128
// @temper param VEC 4 2
// @temper param UNROLL 2 1 4
// @temper param FAST 1 0
// @temper require 1024 % BLOCK == 0
// @temper launch cross_entropy_fast grid(R) block(BLOCK) args(loss, logits, label, R, V)

#define NWARP (BLOCK / 32)
#define NEG_INF (-__int_as_float(0x7f800000)) /* NVRTC has no INFINITY macro */

__device__ __forceinline__ float ex(float x)
{
#if FAST
    return __expf(x);
#else
    return expf(x);
#endif
}

/* (m, s) += (m2, s2): the pair whose sum of exp(x - m) covers both sets; an empty set is
 * (-inf, 0) and changes nothing. */
__device__ __forceinline__ void merge(float &m, float &s, float m2, float s2)
{
    if (m2 > m) {
        s = s * ex(m - m2) + s2;
        m = m2;
    } else if (m2 != NEG_INF) {
        s += s2 * ex(m2 - m);
    }
}

/* n values at v into (m, s): one rescale to the new max, then one exp per value */
template <int N> __device__ __forceinline__ void absorb(float &m, float &s, const float *v)
{
    float mx = v[0];
#pragma unroll
    for (int i = 1; i < N; i++)
        mx = fmaxf(mx, v[i]);
    if (mx > m) {
        s *= ex(m - mx); /* exp(-inf) = 0 at the first values */
        m = mx;
    }
#pragma unroll
    for (int i = 0; i < N; i++)
        s += ex(v[i] - m);
}

template <int V> struct fv;
template <> struct fv<4> {
    typedef float4 t;
    static __device__ __forceinline__ void put(const t &a, float *f) { f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w; }
};
template <> struct fv<2> {
    typedef float2 t;
    static __device__ __forceinline__ void put(const t &a, float *f) { f[0] = a.x, f[1] = a.y; }
};

extern "C" __global__ void __launch_bounds__(BLOCK)
    cross_entropy_fast(float *__restrict__ loss, const float *__restrict__ logits, const int *__restrict__ label,
                       int R, int V)
{
    typedef typename fv<VEC>::t vt;
    const int tid = threadIdx.x;
    const float *x = logits + (size_t)blockIdx.x * V;
    const bool vec = V % VEC == 0 && (((size_t)logits) & (4 * VEC - 1)) == 0;
    const int nv = vec ? V / VEC : 0; /* whole vectors */
    float m = NEG_INF, s = 0.0f;
    const vt *xv = (const vt *)x;
    int j = tid;
    for (; j + (UNROLL - 1) * BLOCK < nv; j += UNROLL * BLOCK) { /* UNROLL whole vectors in flight */
        vt a[UNROLL];
#pragma unroll
        for (int k = 0; k < UNROLL; k++)
            a[k] = __ldg(xv + j + k * BLOCK);
        float f[UNROLL * VEC];
#pragma unroll
        for (int k = 0; k < UNROLL; k++)
            fv<VEC>::put(a[k], f + k * VEC);
        absorb<UNROLL * VEC>(m, s, f);
    }
    for (; j < nv; j += BLOCK) {
        float f[VEC];
        fv<VEC>::put(__ldg(xv + j), f);
        absorb<VEC>(m, s, f);
    }
    for (int i = nv * VEC + tid; i < V; i += BLOCK) /* the rest, one value at a time */
        absorb<1>(m, s, x + i);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
        merge(m, s, m2, s2);
    }
#if NWARP > 1
    __shared__ float rm[NWARP], rs[NWARP];
    if (tid % 32 == 0)
        rm[tid / 32] = m, rs[tid / 32] = s;
    __syncthreads();
    if (tid < 32) {
        m = tid < NWARP ? rm[tid] : NEG_INF;
        s = tid < NWARP ? rs[tid] : 0.0f;
#pragma unroll
        for (int o = NWARP / 2; o > 0; o >>= 1) {
            const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
            merge(m, s, m2, s2);
        }
    }
#endif
    if (tid == 0)
        loss[blockIdx.x] = (m - x[label[blockIdx.x]]) + logf(s);
}
