// A bf16 GEMV (y = W x, fp32 accumulation) that sweeps W in address order. Each block takes one
// row; each thread issues all its loads of the row at once: UNROLL 16-byte loads of W, and the
// matching ones of x, per round (with 256 threads and UNROLL = 8, the 28 KB rows of the bench shape,
// K = 14336, take one round of 7). Then comes a fixed-order block reduction and one bf16 store,
// rounded to nearest even. The block exits and the scheduler starts the next row. Each block lives
// for one round of loads, so the rows in flight move through memory in order, as a plain copy's
// blocks do. fast.cu instead keeps rows in flight across all of W, 28 KB apart. That streams well
// when there is a lot to read (102 % of copy bandwidth at 470 MB), but pays more to start and
// drain at 117 MB.
// Why: bench/stream_floor.cu timed plain reads of 117.5 MB on an H200 under temper's protocol.
// Grid-stride loops, persistent blocks and bulk copies stop at 83-85 % of copy bandwidth; tiles
// read once per block, in block order, reach 90-91 %.
// HINT = 0 reads W through __ldg; 1 adds L1::no_allocate and an L2::256B prefetch hint; 2 adds
// L1::no_allocate alone. x always goes through __ldg: every block reads it, so it should stay in L1.
// OCC = 1 asks the compiler (launch bounds) to fit 2048 threads per SM, which caps registers at
// 32 per thread for 1024-thread blocks. K % 8 != 0, or a misaligned W or x, takes a scalar path.
// Measured on an H200 (2026-11-29, session 8, bench/RESULTS.md):
// - 29.8-30.2 us at the bench shape, 90.6-92.2 % of copy bandwidth, with 128 or 256 threads,
//   UNROLL = 8 and HINT = 0 or 2 (three blocks of 256 per SM, at 80 registers).
// - 1024-thread blocks take 39.5 us.
// - HINT = 1 costs 1.5 us.
// @temper task gemv
// @temper param TPB 256 128 512 1024
// @temper param UNROLL 8 16 4 2 1
// @temper param HINT 0 1 2
// @temper param OCC 0 1
// @temper require 1024 % TPB == 0
// @temper launch gemv_sweep grid(N) block(TPB) args(y, W, x, N, K)

#define NWARP (TPB / 32)

__device__ __forceinline__ uint4 load_w(const uint4 *p)
{
#if HINT == 1
    uint4 r;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
    return r;
#elif HINT == 2
    uint4 r;
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
        : "l"(p));
    return r;
#else
    return __ldg(p);
#endif
}

__device__ __forceinline__ float bf_lo(unsigned int w)
{
    return __uint_as_float(w << 16);
}
__device__ __forceinline__ float bf_hi(unsigned int w)
{
    return __uint_as_float(w & 0xffff0000u);
}

/* acc + the dot product of the 8 bf16 values in w with the 8 in x */
__device__ __forceinline__ float dot8(uint4 w, uint4 x, float acc)
{
    acc = fmaf(bf_lo(w.x), bf_lo(x.x), acc);
    acc = fmaf(bf_hi(w.x), bf_hi(x.x), acc);
    acc = fmaf(bf_lo(w.y), bf_lo(x.y), acc);
    acc = fmaf(bf_hi(w.y), bf_hi(x.y), acc);
    acc = fmaf(bf_lo(w.z), bf_lo(x.z), acc);
    acc = fmaf(bf_hi(w.z), bf_hi(x.z), acc);
    acc = fmaf(bf_lo(w.w), bf_lo(x.w), acc);
    return fmaf(bf_hi(w.w), bf_hi(x.w), acc);
}

__device__ __forceinline__ unsigned int f32_to_bf16(float f)
{
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a NaN */
        return ((u >> 16) | 0x40u) & 0xffffu;
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return u >> 16;
}

extern "C" __global__ void __launch_bounds__(TPB, OCC ? 2048 / TPB : 1)
    gemv_sweep(unsigned short *__restrict__ y, const unsigned short *__restrict__ W,
               const unsigned short *__restrict__ x, int N, int K)
{
    const unsigned short *wr = W + (size_t)blockIdx.x * K;
    float s = 0.0f;
    if (K % 8 == 0 && ((((size_t)W) | ((size_t)x)) & 15) == 0) {
        const uint4 *w4 = (const uint4 *)wr, *x4 = (const uint4 *)x;
        const int nv = K / 8;
        for (int j0 = threadIdx.x; j0 < nv; j0 += UNROLL * TPB) { /* one round: every load, then the sums */
            uint4 w[UNROLL], xv[UNROLL];
#pragma unroll
            for (int u = 0; u < UNROLL; u++) {
                const int j = j0 + u * TPB;
                w[u] = j < nv ? load_w(w4 + j) : make_uint4(0, 0, 0, 0);
                xv[u] = j < nv ? __ldg(x4 + j) : make_uint4(0, 0, 0, 0);
            }
#pragma unroll
            for (int u = 0; u < UNROLL; u++)
                s = dot8(w[u], xv[u], s);
        }
    } else {
        for (int j = threadIdx.x; j < K; j += TPB)
            s = fmaf(__uint_as_float((unsigned int)__ldg(wr + j) << 16),
                     __uint_as_float((unsigned int)__ldg(x + j) << 16), s);
    }

#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        s += __shfl_xor_sync(0xffffffffu, s, o);
#if NWARP > 1
    __shared__ float red[NWARP];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    if (lane == 0)
        red[warp] = s;
    __syncthreads();
    if (warp == 0) {
        s = lane < NWARP ? red[lane] : 0.0f;
#pragma unroll
        for (int o = 16; o > 0; o >>= 1)
            s += __shfl_xor_sync(0xffffffffu, s, o);
    }
#endif
    if (threadIdx.x == 0)
        y[blockIdx.x] = (unsigned short)f32_to_bf16(s);
}
