// A tunable bf16 GEMV (y = W x, fp32 accumulation) for bandwidth: TPR threads per row of W (32:
// a warp per row; 64..256: several warps, merged through shared memory), RPB rows per block, VEC
// bf16 values per access (8: 16-byte uint4, 4: uint2, 2: one 32-bit word) when K % VEC == 0 and
// W, x are 2*VEC-byte aligned (every row start is then aligned), else scalar. Each thread keeps
// UNROLL independent vector loads of W (and of x, which all rows share and which stays in
// L1/L2) in flight per step, with UNROLL independent accumulators; the row's partial sums are
// added by warp shuffles (and shared memory across the row's warps) in a fixed order, and one
// thread rounds the total to bf16 (nearest even). W is read once, 16 bytes per lane per load.
// HINT = 1 reads W (read once, 117 MB at the bench shape, twice the L2) with L1::no_allocate and an
// L2::256B prefetch hint, so each request brings the next sectors of the row along (sm_80 and
// later; 8- and 16-byte accesses); HINT = 0 reads it through __ldg. x always goes through __ldg:
// every row reads it, and it should stay cached.
// Measured on an H200 (2026-11-29, bench/RESULTS.md): 102 % of copy bandwidth at N=16384 (470 MB).
// At the bench shape (117 MB) 90.7 % with TPR=128 RPB=1 VEC=8 UNROLL=2 HINT=0 (one row per block,
// blocks retiring in row order), 85-87 % where many rows are in flight at once; sweep.cu, built
// for that order, reaches 90.6-92.0 %.
// @temper task gemv
// @temper param TPR 32 64 128 256
// @temper param RPB 4 1 2 8 16
// @temper param VEC 8 4 2
// @temper param UNROLL 4 1 2 8
// @temper param HINT 0 1
// @temper require TPR * RPB <= 1024 && TPR * RPB >= 64
// @temper require VEC * UNROLL <= 32
// @temper require 1024 % TPR == 0 && TPR % 32 == 0
// @temper launch gemv_fast grid(ceil_div(N, RPB)) block(TPR * RPB) args(y, W, x, N, K)

#define NWARP (TPR / 32)
#define WORDS(V) ((V) >= 2 ? (V) / 2 : 1) /* 32-bit words per V-wide access */

template <int V> struct bf_io;
template <> struct bf_io<8> {
    static __device__ __forceinline__ void load(const unsigned short *p, unsigned int *w)
    {
        uint4 t = __ldg((const uint4 *)p);
        w[0] = t.x;
        w[1] = t.y;
        w[2] = t.z;
        w[3] = t.w;
    }
    static __device__ __forceinline__ void store(unsigned short *p, const unsigned int *w)
    {
        *(uint4 *)p = make_uint4(w[0], w[1], w[2], w[3]);
    }
};
template <> struct bf_io<4> {
    static __device__ __forceinline__ void load(const unsigned short *p, unsigned int *w)
    {
        uint2 t = __ldg((const uint2 *)p);
        w[0] = t.x;
        w[1] = t.y;
    }
    static __device__ __forceinline__ void store(unsigned short *p, const unsigned int *w)
    {
        *(uint2 *)p = make_uint2(w[0], w[1]);
    }
};
template <> struct bf_io<2> {
    static __device__ __forceinline__ void load(const unsigned short *p, unsigned int *w)
    {
        w[0] = __ldg((const unsigned int *)p);
    }
    static __device__ __forceinline__ void store(unsigned short *p, const unsigned int *w)
    {
        *(unsigned int *)p = w[0];
    }
};
template <> struct bf_io<1> {
    static __device__ __forceinline__ void load(const unsigned short *p, unsigned int *w)
    {
        w[0] = __ldg(p);
    }
    static __device__ __forceinline__ void store(unsigned short *p, const unsigned int *w)
    {
        *p = (unsigned short)w[0];
    }
};

/* element i of a V-wide access held as 32-bit words: element 2k in the low half of word k */
__device__ __forceinline__ float bf_elem(const unsigned int *w, int i)
{
    return __uint_as_float(i & 1 ? w[i >> 1] & 0xffff0000u : w[i >> 1] << 16);
}

__device__ __forceinline__ unsigned int f32_to_bf16(float f)
{
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a NaN */
        return ((u >> 16) | 0x40u) & 0xffffu;
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return u >> 16;
}

/* the dot product of one V-wide access of W with the matching one of x */
/* One V-wide access of W: with HINT, streamed past L1 with a 256-byte L2 prefetch. */
template <int V> __device__ __forceinline__ void load_w(const unsigned short *p, unsigned int *w)
{
#if HINT
    if constexpr (V == 8) {
        asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
            : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
            : "l"(p));
        return;
    } else if constexpr (V == 4) {
        asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
        return;
    }
#endif
    bf_io<V>::load(p, w);
}

template <int V> __device__ __forceinline__ float dotv(const unsigned int *w, const unsigned int *xv, float acc)
{
#pragma unroll
    for (int i = 0; i < V; i++)
        acc = fmaf(bf_elem(w, i), bf_elem(xv, i), acc);
    return acc;
}

/* This thread's share of row wr . x: accesses j = tid, tid + TPR, ... of nv V-wide accesses. */
template <int V> __device__ __forceinline__ float row_dot(const unsigned short *wr, const unsigned short *x, int nv,
                                                          int tid)
{
    constexpr int WV = WORDS(V);
    float acc[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; u++)
        acc[u] = 0.0f;
    int j = tid;
    for (; j + (UNROLL - 1) * TPR < nv; j += UNROLL * TPR) { /* UNROLL whole accesses: loads first */
        unsigned int w[UNROLL][WV], xv[UNROLL][WV];
#pragma unroll
        for (int u = 0; u < UNROLL; u++) {
            load_w<V>(wr + (size_t)(j + u * TPR) * V, w[u]);
            bf_io<V>::load(x + (size_t)(j + u * TPR) * V, xv[u]);
        }
#pragma unroll
        for (int u = 0; u < UNROLL; u++)
            acc[u] = dotv<V>(w[u], xv[u], acc[u]);
    }
    for (; j < nv; j += TPR) {
        unsigned int w[WV], xv[WV];
        load_w<V>(wr + (size_t)j * V, w);
        bf_io<V>::load(x + (size_t)j * V, xv);
        acc[0] = dotv<V>(w, xv, acc[0]);
    }
#pragma unroll
    for (int s = 1; s < UNROLL; s *= 2)
#pragma unroll
        for (int u = 0; u + s < UNROLL; u += 2 * s)
            acc[u] += acc[u + s];
    return acc[0];
}

extern "C" __global__ void __launch_bounds__(TPR *RPB)
    gemv_fast(unsigned short *__restrict__ y, const unsigned short *__restrict__ W, const unsigned short *__restrict__ x,
              int N, int K)
{
    const int tid = threadIdx.x % TPR;
    const int row = blockIdx.x * RPB + threadIdx.x / TPR;
    const bool live = row < N;
    const unsigned short *wr = W + (size_t)(live ? row : 0) * K;
    const int n = live ? K : 0; /* rows past N do no work but still take part in the sums */
    const bool vec = K % VEC == 0 && ((((size_t)W) | ((size_t)x)) & (2 * VEC - 1)) == 0;
    float s = vec ? row_dot<VEC>(wr, x, n / VEC, tid) : row_dot<1>(wr, x, n, tid);

#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
#if NWARP > 1
    __shared__ float red[RPB][NWARP];
    const int lane = threadIdx.x % 32, slot = threadIdx.x / TPR, warp = tid / 32;
    if (lane == 0)
        red[slot][warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < NWARP ? red[slot][lane] : 0.0f;
#pragma unroll
        for (int o = NWARP / 2; o > 0; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
    }
#endif
    if (live && tid == 0)
        y[row] = (unsigned short)f32_to_bf16(s);
}
