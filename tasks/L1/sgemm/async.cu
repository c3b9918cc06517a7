// A tunable fp32 SGEMM (row-major C = A B) whose tiles reach shared memory through a ring of
// STAGES buffers filled by cp.async (sm_80 and later), so no registers stage a tile in flight and
// no thread stores it: each block computes a BM x BN tile of C, walking K in steps of BK, with
// STAGES - 1 tiles in flight while one is multiplied, and one barrier per tile. A is stored
// transposed (As[k][m], rows padded by 4 floats) by 4-byte copies: each warp copies 8 consecutive
// k (a 32-byte sector) of 4 rows of A, and lands them in 32 distinct banks; B is copied as is
// (Bs[k][n]) by 16-byte copies when N is a multiple of 4 and B is 16-byte aligned, by 4-byte copies
// otherwise. Out-of-range elements are copied with a source size of 0, which zero-fills them, so
// any M, N, K >= 1 works; tiles wholly inside both matrices take unguarded copies. The threads are
// laid out in warp tiles: a warp owns a (TM * 32/LX) x (TN * LX) tile of C, LX lanes along N; a
// thread owns TM x TN of it as (TM/4) x (TN/4) sub-tiles of 4x4 spread 4 * 32/LX rows and 4 * LX
// columns apart, so that its TM values of A and TN values of B for one k are float4 reads that are
// contiguous across the warp (no bank conflicts) and its float4 stores of C are contiguous in
// global memory. Blocks are numbered along N within groups of GROUP block rows (the order in which
// they start), so that the blocks running at once share rows of A and columns of B in L2. Every C
// element is one fma chain over k in order: the result is the same on every run.
// The default is the shape that cuBLAS's FFMA kernels for sm_80 and later are named for (from
// memory: ..._tilesize128x128x8_stage3_warpsize2x2x1_ffma_...; which kernel cuBLAS runs at 4096^3
// on the H200 is not recorded here): 128x128x8 tiles, 3 stages, 4 warps of 64x64, 8x16 per thread,
// 219 registers, so that two blocks share an SM (8 warps, as tiled.cu's one block of 256x128) but
// not a barrier: one block multiplies while the other waits at its barrier. Per thread and tile
// (SASS of sm_90 from NVRTC, interior tiles): 1024 FFMA, 48 LDS.128 and about 15 other
// instructions in the multiply (every shared read is a base register plus an immediate), 8 + 2
// cp.async with their address arithmetic, one wait and one barrier: about 90 % of the issued
// instructions are FFMAs, as in tiled.cu with FAST=1. tiled.cu's best (256x128x16, one block, 241
// registers, register-staged loads and transposing stores) is BM=256 BK=16 LX=8 here (233
// registers). 8x8 per thread is searched only as two blocks of 256 threads per SM (MINB=2: 16
// warps at the 128-register cap, where ptxas leaves 16-84 bytes of spills, a few LDL per tile
// outside the FFMAs): one block of 512 threads spilled alike, and one block of 256 at 150-167
// registers has tiled.cu's 8 warps with half its accumulators. BK=32 with 128 accumulators
// spilled at 255 registers, so the requires leave it out.
// Untimed on a GPU when written (no device time left): compiled with NVRTC for sm_90 (registers
// and spills from ptxas -v), and its logic (tile mapping, ring of stages, zero-filled edges, warp
// tiles, block order) checked through its OpenCL twin async.cl on PoCL at every check shape.
// MINB is the blocks per SM that __launch_bounds__ asks registers for: 1 (up to 255 registers) or 2
// (128, for 8x8 per thread). The requires keep 128-256 threads per block, 128 accumulators (64 with
// MINB=2), and the blocks' shared memory within the 228 KiB of an sm_90 SM (227 KiB per block, 1
// KiB of it reserved per block): 176 settings.
// @temper task sgemm
// @temper param BM 128 256
// @temper param BN 128 256
// @temper param BK 8 16 32
// @temper param TM 8 16
// @temper param TN 16 8
// @temper param LX 4 8
// @temper param STAGES 3 2 4
// @temper param GROUP 8 1
// @temper param MINB 1 2
// @temper require (BM / TM) * (BN / TN) >= 128 && (BM / TM) * (BN / TN) <= 256
// @temper require TM * TN == 128 && MINB == 1 || TM * TN == 64 && MINB == 2 && (BM / TM) * (BN / TN) == 256
// @temper require BM % (TM * (32 / LX)) == 0 && BN % (TN * LX) == 0
// @temper require TM * TN >= 64 && TM * TN <= 128 && BK * TM * TN <= 2048
// @temper require BM % ((BM / TM) * (BN / TN) / 8) == 0 && BM * BK % ((BM / TM) * (BN / TN)) == 0
// @temper require MINB * (STAGES * BK * (BM + 4 + BN) * 4 + 1024) <= 233472
// @temper launch sgemm_async grid(ceil_div(N, BN) * ceil_div(M, BM)) block((BM / TM) * (BN / TN)) smem(STAGES * BK * (BM + 4 + BN) * 4) args(C, A, B, M, N, K)

#define NT ((BM / TM) * (BN / TN))     /* threads per block */
#define LY (32 / LX)                   /* lanes of a warp along M */
#define WTM (TM * LY)                  /* rows of a warp tile */
#define WTN (TN * LX)                  /* columns of a warp tile */
#define WARPS_N (BN / WTN)             /* warps along N */
#define AS_LD (BM + 4)                 /* leading dimension of the transposed A tile */
#define STAGE_FLOATS (BK * (AS_LD + BN)) /* floats in one stage of the ring */
#define A_IT (BM * BK / NT)            /* 4-byte copies of A per thread per tile */
#define A_ROW_STEP (NT / 8)            /* rows between a thread's copies of A in one 8-wide k chunk */
#define A_ROW_REPS (BM / A_ROW_STEP)   /* copies per 8-wide k chunk */
#define B_F4 (BK * BN / 4)             /* float4s in a B tile */
#define B_IT ((B_F4 + NT - 1) / NT)    /* float4s of B per thread per tile (the last may be none) */

/* The shared-memory address of a generic pointer into shared memory, as cp.async takes it. */
__device__ __forceinline__ unsigned smem_u32(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

/* Copies bytes (0 or 4) of src to dst, zero-filling the rest of the 4 bytes. */
__device__ __forceinline__ void copy4(unsigned dst, const float *src, int bytes)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}

__device__ __forceinline__ void copy4_full(unsigned dst, const float *src)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(dst), "l"(src) : "memory");
}

/* Copies bytes (0 to 16) of the 16-byte aligned src to dst, zero-filling the rest of the 16 bytes. */
__device__ __forceinline__ void copy16(unsigned dst, const float *src, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(bytes) : "memory");
}

__device__ __forceinline__ void copy16_full(unsigned dst, const float *src)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
}

__device__ __forceinline__ void copy_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Waits until at most PENDING of this thread's newest copy groups are still in flight. */
template <int PENDING> __device__ __forceinline__ void copy_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(PENDING) : "memory");
}

/* Issues the copies of k-tile k0 of A and B into stage st. A: this thread's copy i is row
 * t/8 + (i % A_ROW_REPS) * A_ROW_STEP, column t%8 + (i / A_ROW_REPS) * 8 of the tile, stored at
 * As[column][row]; B: float4 f = t + j * NT is row f / (BN/4), columns 4 (f % (BN/4)) .. +3.
 * Elements outside A or B are zero-filled (source size 0, the source the matrix's first element): no
 * pointer past either matrix is formed. */
__device__ __forceinline__ void load_tile(float *st, const float *__restrict__ A, const float *__restrict__ B, int M,
                                          int N, int K, int m0, int n0, int k0, bool vec)
{
    const int t = threadIdx.x, kk = t % 8, r0 = t / 8;
    const unsigned as = smem_u32(st + kk * AS_LD + r0);
    const size_t a = (size_t)(m0 + r0) * K + k0 + kk;
    if (m0 + BM <= M && k0 + BK <= K) {
#pragma unroll
        for (int i = 0; i < A_IT; i++) {
            const int dr = (i % A_ROW_REPS) * A_ROW_STEP, dk = (i / A_ROW_REPS) * 8;
            copy4_full(as + (dk * AS_LD + dr) * 4, A + a + (size_t)dr * K + dk);
        }
    } else {
#pragma unroll
        for (int i = 0; i < A_IT; i++) {
            const int dr = (i % A_ROW_REPS) * A_ROW_STEP, dk = (i / A_ROW_REPS) * 8;
            const bool in = m0 + r0 + dr < M && k0 + kk + dk < K;
            copy4(as + (dk * AS_LD + dr) * 4, A + (in ? a + (size_t)dr * K + dk : 0), in ? 4 : 0);
        }
    }
    float *Bs = st + BK * AS_LD;
    const bool inner = k0 + BK <= K && n0 + BN <= N;
#pragma unroll
    for (int j = 0; j < B_IT; j++) {
        const int f = t + j * NT;
        if (B_F4 % NT == 0 || f < B_F4) {
            const int k = f / (BN / 4), c = (f % (BN / 4)) * 4;
            const unsigned dst = smem_u32(Bs + k * BN + c);
            const size_t b = (size_t)(k0 + k) * N + n0 + c;
            if (vec && inner) {
                copy16_full(dst, B + b);
            } else if (vec) {
                const int w = k0 + k < K ? min(max(N - n0 - c, 0), 4) : 0;
                copy16(dst, B + (w ? b : 0), 4 * w);
            } else {
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const bool in = k0 + k < K && n0 + c + e < N;
                    copy4(dst + 4 * e, B + (in ? b + e : 0), in ? 4 : 0);
                }
            }
        }
    }
}

/* acc += the thread's share of one stage's product: as points at the thread's first row of the
 * stage's A tile, bs at its first column of the B tile. Every read below is one of these two
 * pointers plus a constant, an immediate offset of LDS.128, with no address arithmetic per read. */
__device__ __forceinline__ void multiply(float (&acc)[TM][TN], const float *__restrict__ as, const float *__restrict__ bs)
{
#pragma unroll
    for (int k = 0; k < BK; k++) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM / 4; i++) {
            const float4 v = *(const float4 *)(as + k * AS_LD + i * LY * 4);
            a[4 * i] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
        }
#pragma unroll
        for (int j = 0; j < TN / 4; j++) {
            const float4 v = *(const float4 *)(bs + k * BN + j * LX * 4);
            b[4 * j] = v.x, b[4 * j + 1] = v.y, b[4 * j + 2] = v.z, b[4 * j + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++)
                acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
}

/* __launch_bounds__ caps the registers at 65536 / (NT * MINB) (255 at most) so that MINB blocks fit
 * on an SM; it also makes NVRTC ignore the tuner's --maxrregcount, whose caps below that would
 * only spill the accumulators (the tuner then finds the same code and does not count it). */
extern "C" __global__ void __launch_bounds__(NT, MINB) sgemm_async(float *__restrict__ C, const float *__restrict__ A, const float *__restrict__ B,
                                       int M, int N, int K)
{
    extern __shared__ float4 smem4[];
    float *smem = (float *)smem4;
    /* Block order: GROUP block rows at a time, along N within the group. */
    const int tiles_n = (N + BN - 1) / BN, tiles_m = (M + BM - 1) / BM;
    const int per_group = GROUP * tiles_n, group = blockIdx.x / per_group, first = group * GROUP;
    const int rows = min(tiles_m - first, GROUP), in_group = blockIdx.x % per_group;
    const int m0 = (first + in_group % rows) * BM, n0 = (in_group / rows) * BN;

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int ao = (warp / WARPS_N) * WTM + (lane / LX) * 4;
    const int bo = (warp % WARPS_N) * WTN + (lane % LX) * 4;
    const bool vec = N % 4 == 0 && ((size_t)B & 15) == 0;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;

    const int KT = (K + BK - 1) / BK;
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < KT)
            load_tile(smem + s * STAGE_FLOATS, A, B, M, N, K, m0, n0, s * BK, vec);
        copy_commit();
    }
    int rs = 0, ws = STAGES - 1; /* the stage read next and the stage written next */
    for (int kt = 0; kt < KT; kt++) {
        copy_wait<STAGES - 2>(); /* this thread's copies of tile kt have landed */
        __syncthreads();         /* everyone's have, and everyone is done reading stage ws (tile kt - 1) */
        if (kt + STAGES - 1 < KT)
            load_tile(smem + ws * STAGE_FLOATS, A, B, M, N, K, m0, n0, (kt + STAGES - 1) * BK, vec);
        copy_commit(); /* an empty group past the last tile keeps the count of wait_group right */
        const float *rd = smem + rs * STAGE_FLOATS;
        multiply(acc, rd + ao, rd + BK * AS_LD + bo);
        rs = rs + 1 == STAGES ? 0 : rs + 1;
        ws = ws + 1 == STAGES ? 0 : ws + 1;
    }

    const bool vc = N % 4 == 0 && ((size_t)C & 15) == 0;
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const int r = m0 + ao + (i / 4) * LY * 4 + i % 4;
        if (r >= M)
            continue;
        float *crow = C + (size_t)r * N;
#pragma unroll
        for (int j = 0; j < TN / 4; j++) {
            const int c = n0 + bo + j * LX * 4;
            if (vc && c + 3 < N) {
                *(float4 *)&crow[c] = make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
            } else {
#pragma unroll
                for (int e = 0; e < 4; e++)
                    if (c + e < N)
                        crow[c + e] = acc[i][4 * j + e];
            }
        }
    }
}
