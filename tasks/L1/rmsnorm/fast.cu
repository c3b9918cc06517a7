// A tunable bf16 RMSNorm for bandwidth: TPR threads per row (32: a warp per row; 64..1024:
// several warps per row), RPB rows per block, VEC bf16 values per access (8: 16-byte uint4, 4:
// uint2, 2: one 32-bit word) when C % VEC == 0 and y, x, w are 2*VEC-byte aligned, else scalar.
// REG > 0 keeps the row's raw bf16 words in registers when it fits (C <= TPR*VEC*REG): each thread
// issues its REG vector loads up front, sums x^2 from registers, and after the row's sum
// (warp shuffles, then shared memory across the row's warps) writes x * rstd * w from them: x is
// read from DRAM once. Rows that do not fit (and all rows when REG = 0) read x twice (the second
// time mostly from L2). w (C values, shared by every row) is read at write time and stays in L1/L2.
// The result is rounded once to bf16 (nearest even) on the bits.
// GRID > 0 caps the grid at GRID blocks per SM (132 SMs, the H200) and each block loops over row
// groups: no drain of a last partial wave of short-lived blocks, which costs several percent on
// a 64-microsecond kernel; 0 launches one block per row group.
// HINT = 1 reads x (read once) with L1::no_allocate and an L2::256B prefetch hint (sm_80 and later;
// 8- and 16-byte accesses); HINT = 0 through __ldg. w, which every row reads, always uses __ldg.
// @temper task rmsnorm
// @temper param TPR 128 32 64 256 512 1024
// @temper param RPB 1 2 4 8
// @temper param VEC 8 4 2
// @temper param REG 4 0 1 2 8 16
// @temper param GRID 0 4 8 16
// @temper param HINT 0 1
// @temper require TPR * RPB <= 1024
// @temper require REG == 0 || (TPR * VEC * REG >= 4096 && TPR * VEC * REG <= 8192)
// @temper require GRID == 0 || GRID * TPR * RPB <= 2048
// @temper require 1024 % TPR == 0 && TPR % 32 == 0
// @temper launch rmsnorm_fast grid(min(ceil_div(R, RPB), 132 * GRID + (GRID == 0) * ceil_div(R, RPB))) block(TPR * RPB) args(y, x, w, R, C)

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

/* One V-wide access of x: with HINT, streamed past L1 with a 256-byte L2 prefetch. */
template <int V> __device__ __forceinline__ void load_x(const unsigned short *p, unsigned int *w)
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

/* The sum of v over one row's TPR threads, returned to all of them; every thread of the block
 * calls it once per row group, with the group's parity: consecutive calls use different shared
 * slots, so a warp that runs ahead cannot overwrite partial sums another warp has yet to read. */
__device__ __forceinline__ float row_sum(float v, int parity)
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
    return v;
}

/* y[j] = x[j] * rstd * w[j] for one V-wide access at element offset e */
template <int V>
__device__ __forceinline__ void write_vec(unsigned short *yr, const unsigned short *w, size_t e, const unsigned int *xw,
                                          float rstd)
{
    unsigned int ww[WORDS(V)], o[WORDS(V)];
    bf_io<V>::load(w + e, ww);
#pragma unroll
    for (int k = 0; k < WORDS(V); k++) {
        if (V == 1) {
            o[k] = f32_to_bf16(bf_elem(xw, 0) * rstd * bf_elem(ww, 0));
        } else {
            o[k] = f32_to_bf16(bf_elem(xw, 2 * k) * rstd * bf_elem(ww, 2 * k)) |
                   (f32_to_bf16(bf_elem(xw, 2 * k + 1) * rstd * bf_elem(ww, 2 * k + 1)) << 16);
        }
    }
    bf_io<V>::store(yr + e, o);
}

/* One row of n elements (n = 0 for a block's rows past R), V-wide accesses (n % V == 0). The path
 * depends on C alone, the same for every row of the block, since both synchronise. */
template <int V>
__device__ __forceinline__ void rms_row(unsigned short *yr, const unsigned short *xr, const unsigned short *w, int n,
                                        int C, int tid, int parity)
{
    const int nv = n / V;
    constexpr int WV = WORDS(V);
#if REG > 0
    constexpr int NR = V == VEC ? REG : 1; /* only the VEC-wide instantiation caches */
    if (V == VEC && C / V <= NR * TPR) {
        unsigned int raw[NR][WV];
#pragma unroll
        for (int k = 0; k < NR; k++) {
            int j = tid + k * TPR;
            if (j < nv) {
                load_x<V>(xr + (size_t)j * V, raw[k]);
            } else {
#pragma unroll
                for (int i = 0; i < WV; i++)
                    raw[k][i] = 0u; /* +0.0 in both halves: adds nothing */
            }
        }
        float ss = 0.0f;
#pragma unroll
        for (int k = 0; k < NR; k++)
#pragma unroll
            for (int i = 0; i < V; i++) {
                float v = bf_elem(raw[k], i);
                ss += v * v;
            }
        const float rstd = rsqrtf(row_sum(ss, parity) / (float)C + 1e-6f);
#pragma unroll
        for (int k = 0; k < NR; k++) {
            int j = tid + k * TPR;
            if (j < nv)
                write_vec<V>(yr, w, (size_t)j * V, raw[k], rstd);
        }
        return;
    }
#endif
    float ss = 0.0f;
#pragma unroll 4
    for (int j = tid; j < nv; j += TPR) {
        unsigned int raw[WV];
        load_x<V>(xr + (size_t)j * V, raw);
#pragma unroll
        for (int i = 0; i < V; i++) {
            float v = bf_elem(raw, i);
            ss += v * v;
        }
    }
    const float rstd = rsqrtf(row_sum(ss, parity) / (float)C + 1e-6f);
#pragma unroll 4
    for (int j = tid; j < nv; j += TPR) {
        unsigned int raw[WV];
        load_x<V>(xr + (size_t)j * V, raw);
        write_vec<V>(yr, w, (size_t)j * V, raw, rstd);
    }
}

extern "C" __global__ void __launch_bounds__(TPR *RPB)
    rmsnorm_fast(unsigned short *__restrict__ y, const unsigned short *__restrict__ x,
                 const unsigned short *__restrict__ w, int R, int C)
{
    const int tid = threadIdx.x % TPR;
    const bool vec = C % VEC == 0 && ((((size_t)x) | ((size_t)y) | ((size_t)w)) & (2 * VEC - 1)) == 0;
    const int groups = (R + RPB - 1) / RPB;
    for (int g = blockIdx.x, parity = 0; g < groups; g += gridDim.x, parity ^= 1) {
        const int row = g * RPB + threadIdx.x / TPR;
        const bool live = row < R;
        const unsigned short *xr = x + (size_t)(live ? row : 0) * C;
        unsigned short *yr = y + (size_t)(live ? row : 0) * C;
        const int n = live ? C : 0;
        if (vec)
            rms_row<VEC>(yr, xr, w, n, C, tid, parity);
        else
            rms_row<1>(yr, xr, w, n, C, tid, parity);
    }
}
