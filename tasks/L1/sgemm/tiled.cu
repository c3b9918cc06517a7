// A tunable fp32 SGEMM (row-major C = A B): each block computes a BM x BN tile of C, walking K in
// steps of BK. The A tile is stored transposed in shared memory (As[k][m], rows padded by 4 floats)
// and the B tile as is (Bs[k][n]), so that every thread reads its TM values of A and TN values of B
// for one k as float4s. A thread owns a TM x TN tile of C made of (TM/4) x (TN/4) sub-tiles of 4x4,
// spread TY*4 rows and TX*4 columns apart, so that the float4 reads of a warp are contiguous in
// shared memory (no bank conflicts) and its float4 stores of C are contiguous in global memory;
// WX lanes of a warp lie along N and 32/WX along M. Global loads are float4 (VEC=1, when K and N are
// multiples of 4 and the pointers 16-byte aligned) or four checked scalars otherwise; tiles past the
// edges of A and B load zeros, and stores of C are checked, so any M, N, K >= 1 works. With DB=1
// two shared-memory stages alternate: the next tile's global loads are issued into registers before
// the current tile is multiplied and stored to the other stage after it (one barrier per tile);
// with DB=0 one stage is used (the loads still overlap the multiply, two barriers per tile).
// Every C element is one fma chain over k in order: the result is the same on every run.
// On an H200 at 4096^3, `temper eval` times the default (256x128x16 tile, 8x16 per thread, 256 threads,
// 241 registers: one block of 8 warps per SM; 2048 FFMA per 96 LDS.128 in the unrolled k loop) at
// 2.996-3.003 ms, 45.8 TFLOP/s, against cuBLAS SGEMM's 2.68-2.76 ms (0.894-0.92, median 0.897 over
// seven runs; tunes of 24 to 100 evaluations found nothing faster). FAST=1 (unchecked loads for
// interior tiles: no bounds tests or zeroing beside the 2048 FFMAs of a tile) then measured 2.934
// and 2.929 ms against FAST=0's 2.996 in the same worker: 0.920 and 0.921 of cuBLAS. In a CuPy
// harness 128x256 with 16x8 per thread ran at 45.0 TFLOP/s and 128x128 with 8x8 per thread (two
// blocks per SM) at 40-41.
// Nsight Compute at the defaults (2026-12-01, H200, bench/gemm_profile.sh sgemm) put this kernel at
// 76.6 % of issue slots busy against cuBLAS's 86.9 % on the same tile, grid and clock (dispatch
// stalls, fixed-latency waits, 4x cuBLAS's instruction-fetch stalls). Unrolling the multiply's k
// loop partly, to shrink the 2048-FFMA body, was slower in the same call (by 4 steps 3.252 ms, 2:
// 3.378, 8: 3.005, full: 2.927), so the knob was taken out again.
// The requires keep 128-256 threads, 64-128 accumulators, the staged registers (accumulators plus the
// tile in flight) at most 160 so that nothing spills, and shared memory within 96 KiB.
// @temper task sgemm
// @temper param BM 256 128 64
// @temper param BN 128 256 64
// @temper param BK 16 8 32
// @temper param TM 8 16 4
// @temper param TN 16 8 4
// @temper param WX 8 4
// @temper param VEC 1 0
// @temper param DB 1 0
// @temper param FAST 1 0
// @temper require (BM / TM) * (BN / TN) % 32 == 0 && (BM / TM) * (BN / TN) >= 128 && (BM / TM) * (BN / TN) <= 256
// @temper require (BN / TN) % WX == 0 && (BM / TM) % (32 / WX) == 0
// @temper require TM * TN >= 64 && TM * TN <= 128
// @temper require TM * TN + (BM + BN) * BK / ((BM / TM) * (BN / TN)) <= 160
// @temper require (1 + DB) * BK * (BM + 4 + BN) * 4 <= 98304
// @temper launch sgemm_tiled grid(ceil_div(N, BN), ceil_div(M, BM)) block((BM / TM) * (BN / TN)) smem((1 + DB) * BK * (BM + 4 + BN) * 4) args(C, A, B, M, N, K)

#define NT ((BM / TM) * (BN / TN))  /* threads per block */
#define TX (BN / TN)                /* threads along N */
#define TY (BM / TM)                /* threads along M */
#define WY (32 / WX)                /* lanes of a warp along M */
#define AS_LD (BM + 4)              /* leading dimension of the transposed A tile */
#define STAGE (BK * (AS_LD + BN))   /* floats in one shared-memory stage */
#define A_F4 (BM * BK / 4)          /* float4s in an A tile */
#define B_F4 (BK * BN / 4)          /* float4s in a B tile */
#define A_IT ((A_F4 + NT - 1) / NT) /* float4s of A each thread loads per tile */
#define B_IT ((B_F4 + NT - 1) / NT)

/* Loads k-tile k0 of A and B into registers: float4 f of the A tile is row f / (BK/4), columns
 * 4 (f % (BK/4)) .. +3; of the B tile row f / (BN/4), columns 4 (f % (BN/4)) .. +3. With FAST, a
 * tile wholly inside both matrices (and float4-aligned) takes unchecked float4 loads: no bounds
 * tests, no zeroing, fewer instructions beside the FMAs. */
__device__ __forceinline__ void load_tile(float4 (&ra)[A_IT], float4 (&rb)[B_IT], const float *__restrict__ A,
                                          const float *__restrict__ B, int M, int N, int K, int m0, int n0,
                                          int k0, bool vec)
{
#if FAST
    if (vec && m0 + BM <= M && n0 + BN <= N && k0 + BK <= K) {
#pragma unroll
        for (int i = 0; i < A_IT; i++) {
            int f = threadIdx.x + i * NT;
            if (A_F4 % NT == 0 || f < A_F4)
                ra[i] = *(const float4 *)(A + (size_t)(m0 + f / (BK / 4)) * K + k0 + (f % (BK / 4)) * 4);
        }
#pragma unroll
        for (int i = 0; i < B_IT; i++) {
            int f = threadIdx.x + i * NT;
            if (B_F4 % NT == 0 || f < B_F4)
                rb[i] = *(const float4 *)(B + (size_t)(k0 + f / (BN / 4)) * N + n0 + (f % (BN / 4)) * 4);
        }
        return;
    }
#endif
#pragma unroll
    for (int i = 0; i < A_IT; i++) {
        int f = threadIdx.x + i * NT;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (A_F4 % NT == 0 || f < A_F4) {
            int r = m0 + f / (BK / 4), k = k0 + (f % (BK / 4)) * 4;
            if (r < M) {
                const float *p = A + (size_t)r * K + k;
                if (vec) {
                    if (k < K)
                        v = *(const float4 *)p;
                } else {
                    if (k < K) v.x = p[0];
                    if (k + 1 < K) v.y = p[1];
                    if (k + 2 < K) v.z = p[2];
                    if (k + 3 < K) v.w = p[3];
                }
            }
        }
        ra[i] = v;
    }
#pragma unroll
    for (int i = 0; i < B_IT; i++) {
        int f = threadIdx.x + i * NT;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (B_F4 % NT == 0 || f < B_F4) {
            int k = k0 + f / (BN / 4), c = n0 + (f % (BN / 4)) * 4;
            if (k < K) {
                const float *p = B + (size_t)k * N + c;
                if (vec) {
                    if (c < N)
                        v = *(const float4 *)p;
                } else {
                    if (c < N) v.x = p[0];
                    if (c + 1 < N) v.y = p[1];
                    if (c + 2 < N) v.z = p[2];
                    if (c + 3 < N) v.w = p[3];
                }
            }
        }
        rb[i] = v;
    }
}

/* Stores the registers of load_tile into one stage: A transposed, B as float4s. */
__device__ __forceinline__ void store_tile(float *__restrict__ st, const float4 (&ra)[A_IT], const float4 (&rb)[B_IT])
{
    float *As = st, *Bs = st + BK * AS_LD;
#pragma unroll
    for (int i = 0; i < A_IT; i++) {
        int f = threadIdx.x + i * NT;
        if (A_F4 % NT == 0 || f < A_F4) {
            int r = f / (BK / 4), k = (f % (BK / 4)) * 4;
            As[(k + 0) * AS_LD + r] = ra[i].x;
            As[(k + 1) * AS_LD + r] = ra[i].y;
            As[(k + 2) * AS_LD + r] = ra[i].z;
            As[(k + 3) * AS_LD + r] = ra[i].w;
        }
    }
#pragma unroll
    for (int i = 0; i < B_IT; i++) {
        int f = threadIdx.x + i * NT;
        if (B_F4 % NT == 0 || f < B_F4) {
            int k = f / (BN / 4), c = (f % (BN / 4)) * 4;
            *(float4 *)&Bs[k * BN + c] = rb[i];
        }
    }
}

/* acc += the thread's share of one stage's product. */
__device__ __forceinline__ void multiply(float (&acc)[TM][TN], const float *__restrict__ st, int tx, int ty)
{
    const float *As = st, *Bs = st + BK * AS_LD;
#pragma unroll
    for (int k = 0; k < BK; k++) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM / 4; i++) {
            float4 v = *(const float4 *)&As[k * AS_LD + i * TY * 4 + ty * 4];
            a[4 * i] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
        }
#pragma unroll
        for (int j = 0; j < TN / 4; j++) {
            float4 v = *(const float4 *)&Bs[k * BN + j * TX * 4 + tx * 4];
            b[4 * j] = v.x, b[4 * j + 1] = v.y, b[4 * j + 2] = v.z, b[4 * j + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++)
                acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
}

/* No __launch_bounds__: for 256 threads or fewer it would not bind (255 registers fit), and it would make
 * NVRTC ignore the --maxrregcount that temper's tuner tries. */
extern "C" __global__ void sgemm_tiled(float *__restrict__ C, const float *__restrict__ A, const float *__restrict__ B,
                                       int M, int N, int K)
{
    extern __shared__ float4 smem4[];
    float *smem = (float *)smem4;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tx = (warp % (TX / WX)) * WX + lane % WX;
    const int ty = (warp / (TX / WX)) * WY + lane / WX;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const bool vec = VEC && K % 4 == 0 && N % 4 == 0 && (((size_t)A | (size_t)B) & 15) == 0;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;

    float4 ra[A_IT], rb[B_IT];
    const int KT = (K + BK - 1) / BK;
    load_tile(ra, rb, A, B, M, N, K, m0, n0, 0, vec);
#if DB
    store_tile(smem, ra, rb);
    __syncthreads();
    for (int kt = 0; kt < KT; kt++) {
        float *cur = smem + (kt & 1) * STAGE;
        if (kt + 1 < KT)
            load_tile(ra, rb, A, B, M, N, K, m0, n0, (kt + 1) * BK, vec);
        multiply(acc, cur, tx, ty);
        if (kt + 1 < KT)
            store_tile(smem + ((kt + 1) & 1) * STAGE, ra, rb);
        __syncthreads();
    }
#else
    for (int kt = 0; kt < KT; kt++) {
        store_tile(smem, ra, rb);
        __syncthreads();
        if (kt + 1 < KT)
            load_tile(ra, rb, A, B, M, N, K, m0, n0, (kt + 1) * BK, vec);
        multiply(acc, smem, tx, ty);
        __syncthreads();
    }
#endif

    const bool vc = VEC && N % 4 == 0 && ((size_t)C & 15) == 0;
#pragma unroll
    for (int i = 0; i < TM; i++) {
        int r = m0 + (i / 4) * TY * 4 + ty * 4 + i % 4;
        if (r >= M)
            continue;
        float *crow = C + (size_t)r * N;
#pragma unroll
        for (int j = 0; j < TN / 4; j++) {
            int c = n0 + j * TX * 4 + tx * 4;
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
