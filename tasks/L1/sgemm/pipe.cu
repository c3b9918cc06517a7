// A tunable fp32 SGEMM (row-major C = A B), tiled.cu's block and thread tiles with a software
// pipeline that never lets the FFMAs wait on shared memory: NS shared-memory stages in a ring (NS=3
// by default) and two register fragments. Each block computes a BM x BN tile of C, walking K in
// steps of BK; tile kt + NS - 1 is loaded from global memory into registers at the top of step kt
// (float4 loads, unchecked for tiles wholly inside both matrices with FAST=1, checked and
// zero-filled past the edges otherwise, so any M, N, K >= 1 works) and stored to its stage (A
// transposed, As[k][m] with rows padded by 4 floats; B as is) at the bottom, then one barrier.
// Within a tile the A and B values of k + 1 (TM + TN floats, float4 reads, contiguous across a
// warp: no bank conflicts) are read into one fragment while the TM x TN FFMAs of k use the other.
// With NS >= 3 the next tile's stage was complete a barrier ago, so at the last k of a tile the
// fragment of the next tile's first k is read before the barrier too: after a barrier the FFMAs
// start at once, and no warp sits out the shared-memory latency at every tile as in tiled.cu
// (where all 8 warps of the SM leave the barrier together and wait on the same first reads).
// NS=2 is tiled.cu's double buffer with the explicit fragments (the first read after the barrier).
// A thread owns TM x TN of C as (TM/4) x (TN/4) sub-tiles of 4x4, spread TY*4 rows and TX*4
// columns apart; WX lanes of a warp lie along N. Every C element is one fma chain over k in
// order: the result is the same on every run.
// Why: tiled.cu's SASS (sm_90, ptxas of CUDA 13, default knobs) is already 93 % FFMA in an interior
// tile (2048 FFMA, 96 LDS.128, 6 LDG.128, 16 STS + 2 STS.128, one BAR and about 40 others), yet
// reaches 77 % of the FMA peak within its waves (2.92 ms for 3.88 waves of 132 blocks) against
// cuBLAS's 84 %. With one block of 8 warps per SM (two per scheduler), what is left is latency
// that two warps cannot hide: each barrier drains the SM and every warp then waits on its first
// LDS.128 (about 30 cycles) together. cuBLAS's sm_80 FFMA kernels, the ones it runs on sm_90
// (libcublasLt names them ..._nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma_...), use the same
// 256x128 tile, 8 warps and 3 stages.
// PREDICTION (written before any GPU run): at 4096^3 on the H200 the default (256x128x16, 8x16 per
// thread, NS=3) takes 2.80-2.86 ms, 0.94-0.96 of cuBLAS SGEMM (tiled.cu's best 2.918 ms): 2-4 %
// from removing the post-barrier bubble and the barrier skew, no change in instructions per tile.
// Untimed on a GPU when written; compiled for sm_90 with NVRTC and nvcc (registers, spills and
// SASS from ptxas), logic read against tiled.cu (same tile mapping, loads, stores and edges).
// The requires keep 128-256 threads, 64-128 accumulators, the registers in flight (accumulators,
// two fragments, the staged tile) at most 208, and NS stages within 227 KiB.
// @temper task sgemm
// @temper param BM 256 128
// @temper param BN 128 256
// @temper param BK 16 8
// @temper param TM 8 16
// @temper param TN 16 8
// @temper param WX 8 4
// @temper param NS 3 2
// @temper param FAST 1 0
// @temper require (BM / TM) * (BN / TN) % 32 == 0 && (BM / TM) * (BN / TN) >= 128 && (BM / TM) * (BN / TN) <= 256
// @temper require (BN / TN) % WX == 0 && (BM / TM) % (32 / WX) == 0
// @temper require TM * TN >= 64 && TM * TN <= 128
// @temper require TM * TN + 2 * (TM + TN) + (BM + BN) * BK / ((BM / TM) * (BN / TN)) <= 208
// @temper require NS * BK * (BM + 4 + BN) * 4 <= 232448
// @temper launch sgemm_pipe grid(ceil_div(N, BN), ceil_div(M, BM)) block((BM / TM) * (BN / TN)) smem(NS * BK * (BM + 4 + BN) * 4) args(C, A, B, M, N, K)

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
 * tile wholly inside both matrices (and float4-aligned) takes unchecked float4 loads. Elements past
 * an edge (a row of A or B, a k, a column) load as zeros. */
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

/* Reads the thread's TM values of A and TN values of B at row k of stage st into a fragment. */
__device__ __forceinline__ void load_frag(float (&a)[TM], float (&b)[TN], const float *__restrict__ st, int k, int tx,
                                          int ty)
{
    const float *As = st, *Bs = st + BK * AS_LD;
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
}

/* acc += the outer product of one fragment. */
__device__ __forceinline__ void outer(float (&acc)[TM][TN], const float (&a)[TM], const float (&b)[TN])
{
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

/* No __launch_bounds__: for 256 threads or fewer it would not bind (255 registers fit), and it would make
 * NVRTC ignore the --maxrregcount that temper's tuner tries. */
extern "C" __global__ void sgemm_pipe(float *__restrict__ C, const float *__restrict__ A, const float *__restrict__ B,
                                      int M, int N, int K)
{
    extern __shared__ float4 smem4[];
    float *smem = (float *)smem4;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tx = (warp % (TX / WX)) * WX + lane % WX;
    const int ty = (warp / (TX / WX)) * WY + lane / WX;
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const bool vec = K % 4 == 0 && N % 4 == 0 && (((size_t)A | (size_t)B) & 15) == 0;

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;

    float4 ra[A_IT], rb[B_IT];
    const int KT = (K + BK - 1) / BK;
    /* the first NS - 1 tiles into stages 0 .. NS - 2 */
#pragma unroll
    for (int s = 0; s < NS - 1; s++) {
        if (s < KT) {
            load_tile(ra, rb, A, B, M, N, K, m0, n0, s * BK, vec);
            store_tile(smem + s * STAGE, ra, rb);
        }
    }
    __syncthreads();

    float fa[2][TM], fb[2][TN];
    load_frag(fa[0], fb[0], smem, 0, tx, ty);
    int rs = 0;      /* the stage of tile kt */
    int ws = NS - 1; /* the stage of tile kt + NS - 1 */
    for (int kt = 0; kt < KT; kt++) {
        const float *cur = smem + rs * STAGE;
        const int ns = rs + 1 == NS ? 0 : rs + 1; /* the stage of tile kt + 1 */
        const bool more = kt + NS - 1 < KT;
        if (more)
            load_tile(ra, rb, A, B, M, N, K, m0, n0, (kt + NS - 1) * BK, vec);
#pragma unroll
        for (int k = 0; k < BK; k++) {
            /* BK is even, so the fragment of k is fa[k & 1] in every tile, fa[0] at k = 0 */
            if (k + 1 < BK)
                load_frag(fa[(k + 1) & 1], fb[(k + 1) & 1], cur, k + 1, tx, ty);
            else if (NS >= 3 && kt + 1 < KT)
                load_frag(fa[0], fb[0], smem + ns * STAGE, 0, tx, ty);
            outer(acc, fa[k & 1], fb[k & 1]);
        }
        if (more)
            store_tile(smem + ws * STAGE, ra, rb);
        __syncthreads();
        if (NS < 3 && kt + 1 < KT)
            load_frag(fa[0], fb[0], smem + ns * STAGE, 0, tx, ty);
        rs = ns;
        ws = ws + 1 == NS ? 0 : ws + 1;
    }

    const bool vc = N % 4 == 0 && ((size_t)C & 15) == 0;
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
