// A tunable fp32 SGEMM (row-major C = A B): tiled.cu's block and thread tiles in a software
// pipeline in which the FFMAs never wait on shared memory, not even across a barrier. Each block
// computes a BM x BN tile of C, walking K in steps of BK through a ring of NS shared-memory stages
// (A transposed, As[k][m] with rows padded by 4 floats; B as is), one barrier per step. Tile
// kt + NS - 1 is fetched at the top of step kt: with CP=0 into registers (float4 loads) that are
// stored to its stage at the bottom of the step, with CP=1 by cp.async straight into its stage
// (async.cu's mapping: 4-byte copies of A that land transposed in 32 distinct banks, 16-byte copies
// of B), waited for at the end of step kt + NS - 3. Loads of tiles wholly inside both matrices are unchecked
// with FAST=1; past the edges they are checked and zero-filled, so any M, N, K >= 1 works. Within a
// step the TM + TN values of k + 1 (float4 reads, contiguous across a warp: no bank conflicts) are
// read into one register fragment while the TM x TN FFMAs of k use the other; with NS >= 3 the next
// tile's stage was complete a barrier ago, so the last k of a step reads the next tile's first row
// before the barrier, and after it the FFMAs go on at once (NS=2 reads it after the barrier, as
// tiled.cu does). KU=0 unrolls a whole step; KU=4 loops over chunks of 4 k (under a third of the
// code at BK=16). ZZ=1 orders each k's FFMAs in pairs of columns, the rows there and back (both
// operands from the reuse caches more often); ZZ=0 row by row. A thread owns TM x TN of C as
// (TM/4) x (TN/4) sub-tiles of 4x4 spread TY*4 rows and TX*4 columns apart; WX lanes of a warp lie
// along N.
// Every C element is one fma chain over k in order: the result is the same on every run, whatever
// the knobs.
// Why, from the SASS (sm_90 cubins from NVRTC 13.0, temper's compiler, read with nvdisasm; per
// thread and 16 k on an interior tile's path; "same bank": FFMAs whose three sources not served by
// the operand reuse cache all lie in one of the two register banks, a likely stall each):
//   tiled.cu default (BK=16, 2 stages)   2219 instr: 2048 FFMA (92.3 %), 96 LDS.128, 75 other;
//                                        253 registers; loop 35.5 KB; same bank 39
//   cuBLAS's sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize256x128x8_stage3_warpsize4x2x1_ffma
//   (its sm_90a code in libcublasLt 13; which kernel cuBLAS picks at 4096^3 is not recorded):
//   256x128x8, 3 cp.async stages, 8 warps of 64x64, 8x16 per thread, the next k's fragments read
//   while this k's FFMAs run, the barrier among the last k's FFMAs, then the next tile's reads:
//                                        2308 instr: 2048 FFMA (88.7 %), 96 LDS.128, 24 LDGSTS;
//                                        254 registers (120 bytes of stack); loop 18.5 KB
//   this default (BK=16 NS=3 CP=0 ZZ=0)  2245 instr: 2048 FFMA (91.2 %), 96 LDS.128, 101 other;
//                                        241 registers, no spills; loop 35.9 KB; same bank 14
//   ZZ=1 at the default                  same instructions; 254 registers; same bank 17
//   BK=8 NS=3 ZZ=1                       2258 instr (90.7 %); 242 registers; loop 18.1 KB; same bank 24
//   BK=8 NS=4 CP=1                       2262 instr (90.5 %); 231 registers; loop 18.1 KB; same bank 16
//   BK=16 NS=4 CP=1                      2309 instr (88.7 %); 231 registers; loop 36.9 KB; same bank 11
//   KU=4 at the default                  2341 instr (87.5 %); 245 registers; loop 10.5 KB; same bank 9
// (nvcc's ptxas, same version, allocates registers differently: 239-255 registers, and ZZ=1 is the
// better order there; the tuner, compiling with NVRTC, settles it.) cuBLAS issues more
// instructions per FFMA than tiled.cu and is still faster (2.68 against 2.92 ms: 84 % against 77 %
// of the FMA peak within 3.88 waves of 132 blocks), so tiled.cu loses to stalls, not issue slots:
// the drained SM after each barrier (8 warps, two per scheduler, all waiting on their first
// LDS.128 together), register bank conflicts, and perhaps instruction fetch (a 35 KB loop) or the
// one step of load latency that register staging hides. The default removes the first and most of
// the second; BK=8 and KU=4 cut the loop to a half or a third; CP=1 with NS=4 hides two steps of load
// latency, as cuBLAS's three cp.async stages do, and is the setting closest to cuBLAS's kernel.
// PREDICTION (written before any GPU run): the default takes 2.85-2.93 ms at 4096^3 on the H200,
// most likely about 2.89 (0.92-0.94 of cuBLAS SGEMM at 2.68; tiled.cu's best 2.918): what it
// removes (about 30 cycles of bubble per scheduler and step, 25 bank conflicts per warp and step)
// is about 1 % of a step's 4500 cycles per scheduler, and it issues 26 more instructions per step.
// So 0.95 (2.82 ms) is not the likely outcome of the default; if BK=8 NS=4 CP=1 beats it by 2 % or
// more, the gap was instruction fetch or load latency, and that setting is the one to tune around.
// What no knob here touches is the last wave: 512 tiles of 256x128 fill 3.88 waves of 132 SMs, so
// for 3 % of the time one SM in eight idles (stream-K or split-K on the last wave would take it).
// Measured (2026-12-01, H200, `bench/gpu.sh run evals`, each against cuBLAS SGEMM in the same
// worker): the default 3.067 ms (0.877 of cuBLAS), ZZ=1 2.986 (0.901), BK=16 NS=4 CP=1 3.046
// (0.883), BK=8 NS=4 CP=1 3.118 (0.863), KU=4 3.087 (0.872); tiled.cu's default in the same call
// 2.928 (0.919). The prediction (2.85-2.93) was wrong: the register fragments cost more than the
// stalls they remove, and neither the smaller loop nor cp.async helped.
// Untimed on a GPU when written: compiled for sm_90 by NVRTC (no spills at the settings the tests
// name), its logic checked by the OpenCL twin pipe.cl on PoCL at every check shape
// (tests/sgemm_pipe_test.sh) and by this file itself run on the CPU (tests/sgemm_pipe_cpu_test.sh:
// threads for a block, a barrier for __syncthreads, cp.async as a plain copy, so not the order of
// its waits, which is argued where they are).
// The requires keep 128-256 threads, 64-128 accumulators, the registers in flight (accumulators,
// two fragments, the tile in registers with CP=0) at most 208, NS stages within 227 KiB, and for
// CP=1 at least 3 stages and async.cu's copy mapping (BK a multiple of 8).
// @temper task sgemm
// @temper param BM 256 128
// @temper param BN 128 256
// @temper param BK 16 8
// @temper param TM 8 16
// @temper param TN 16 8
// @temper param WX 8 4
// @temper param NS 3 2 4
// @temper param FAST 1 0
// @temper param KU 0 4
// @temper param CP 0 1
// @temper param ZZ 0 1
// @temper require KU < BK && BK % (KU + (KU == 0) * BK) == 0
// @temper require CP == 0 && NS <= 3 || CP == 1 && NS >= 3 && BM % ((BM / TM) * (BN / TN) / 8) == 0 && BM * BK % ((BM / TM) * (BN / TN)) == 0 && BK % 8 == 0
// @temper require (BM / TM) * (BN / TN) % 32 == 0 && (BM / TM) * (BN / TN) >= 128 && (BM / TM) * (BN / TN) <= 256
// @temper require (BN / TN) % WX == 0 && (BM / TM) % (32 / WX) == 0
// @temper require TM * TN >= 64 && TM * TN <= 128
// @temper require TM * TN + 2 * (TM + TN) + (1 - CP) * (BM + BN) * BK / ((BM / TM) * (BN / TN)) <= 208
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

#define CA_IT (BM * BK / NT)       /* 4-byte copies of A per thread per tile (CP=1) */
#define CA_STEP (NT / 8)            /* rows between a thread's copies of A in one 8-wide k chunk */
#define CA_REPS (BM / CA_STEP)      /* copies per 8-wide k chunk */

#if CP
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

/* CP=1: issues the copies of k-tile k0 of A and B into stage st (async.cu's mapping). A: this
 * thread's copy i is row t/8 + (i % CA_REPS) * CA_STEP, column t%8 + (i / CA_REPS) * 8 of the
 * tile, stored at As[column][row] (the 8 columns and 4 rows of a warp land in 32 distinct banks);
 * B: float4 f = t + j * NT is row f / (BN/4), columns 4 (f % (BN/4)) .. +3. Elements outside A or
 * B are zero-filled (source size 0, the source the matrix's first element): no pointer past either
 * matrix is formed. With FAST, a tile wholly inside both matrices takes unchecked copies. */
__device__ __forceinline__ void copy_tile(float *st, const float *__restrict__ A, const float *__restrict__ B, int M,
                                          int N, int K, int m0, int n0, int k0, bool vec)
{
    const int t = threadIdx.x, kk = t % 8, r0 = t / 8;
    const unsigned as = smem_u32(st + kk * AS_LD + r0);
    const size_t a = (size_t)(m0 + r0) * K + k0 + kk;
    if (FAST && m0 + BM <= M && k0 + BK <= K) {
#pragma unroll
        for (int i = 0; i < CA_IT; i++) {
            const int dr = (i % CA_REPS) * CA_STEP, dk = (i / CA_REPS) * 8;
            copy4_full(as + (dk * AS_LD + dr) * 4, A + a + (size_t)dr * K + dk);
        }
    } else {
#pragma unroll
        for (int i = 0; i < CA_IT; i++) {
            const int dr = (i % CA_REPS) * CA_STEP, dk = (i / CA_REPS) * 8;
            const bool in = m0 + r0 + dr < M && k0 + kk + dk < K;
            copy4(as + (dk * AS_LD + dr) * 4, A + (in ? a + (size_t)dr * K + dk : 0), in ? 4 : 0);
        }
    }
    float *Bs = st + BK * AS_LD;
    const bool inner = FAST && k0 + BK <= K && n0 + BN <= N;
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
#endif

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
#if ZZ
    /* pairs of columns, the rows there and back: both operands of more FFMAs can come from the
     * operand reuse caches; how many FFMAs then have their three sources in one register bank
     * depends on ptxas's allocation (the header's table) */
#pragma unroll
    for (int jp = 0; jp < TN / 2; jp++)
#pragma unroll
        for (int ii = 0; ii < TM; ii++) {
            const int i = jp % 2 ? TM - 1 - ii : ii;
            acc[i][2 * jp] = fmaf(a[i], b[2 * jp], acc[i][2 * jp]);
            acc[i][2 * jp + 1] = fmaf(a[i], b[2 * jp + 1], acc[i][2 * jp + 1]);
        }
#else
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
#endif
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

    const int KT = (K + BK - 1) / BK;
    /* the first NS - 1 tiles into stages 0 .. NS - 2 */
#if CP
#pragma unroll
    for (int s = 0; s < NS - 1; s++) {
        if (s < KT)
            copy_tile(smem + s * STAGE, A, B, M, N, K, m0, n0, s * BK, vec);
        copy_commit(); /* empty groups past the last tile keep the count of wait_group right */
    }
    copy_wait<NS - 3>(); /* tiles 0 and 1 have landed */
#else
    float4 ra[A_IT], rb[B_IT];
#pragma unroll
    for (int s = 0; s < NS - 1; s++) {
        if (s < KT) {
            load_tile(ra, rb, A, B, M, N, K, m0, n0, s * BK, vec);
            store_tile(smem + s * STAGE, ra, rb);
        }
    }
#endif
    __syncthreads();

    float fa[2][TM], fb[2][TN];
    load_frag(fa[0], fb[0], smem, 0, tx, ty);
    int cur = 0;                /* where the stage of tile kt starts, in floats */
    int wr = (NS - 1) * STAGE;  /* where the stage of tile kt + NS - 1 starts */
    for (int kt = 0; kt < KT; kt++) {
        const int nxt = cur + STAGE == NS * STAGE ? 0 : cur + STAGE; /* where tile kt + 1's stage starts */
        const bool more = kt + NS - 1 < KT;
#if CP
        /* stage wr held tile kt - 1, last read before the barrier that ended step kt - 1 */
        if (more)
            copy_tile(smem + wr, A, B, M, N, K, m0, n0, (kt + NS - 1) * BK, vec);
        copy_commit();
#else
        if (more)
            load_tile(ra, rb, A, B, M, N, K, m0, n0, (kt + NS - 1) * BK, vec);
#endif
#if KU == 0
#pragma unroll
        for (int k = 0; k < BK; k++) {
            /* BK is even, so the fragment of k is fa[k & 1] in every tile, fa[0] at k = 0. The next
             * tile's first row is read even after the last tile (unused; no thread writes it then). */
            if (k + 1 < BK)
                load_frag(fa[(k + 1) & 1], fb[(k + 1) & 1], smem + cur, k + 1, tx, ty);
            else if (NS >= 3)
                load_frag(fa[0], fb[0], smem + nxt, 0, tx, ty);
            outer(acc, fa[k & 1], fb[k & 1]);
        }
#else
        /* chunks of KU (even) rows; the last row of a chunk reads the next chunk's first row, or the
         * next tile's (NS >= 3; for NS = 2 that read follows the barrier) */
#pragma unroll 1
        for (int k0 = 0; k0 < BK; k0 += KU) {
            const bool last = k0 + KU == BK;
            const float *src = smem + (last ? nxt : cur);
            const int kn = last ? 0 : k0 + KU;
#pragma unroll
            for (int u = 0; u < KU; u++) {
                if (u + 1 < KU)
                    load_frag(fa[(u + 1) & 1], fb[(u + 1) & 1], smem + cur, k0 + u + 1, tx, ty);
                else if (NS >= 3 || !last)
                    load_frag(fa[0], fb[0], src, kn, tx, ty);
                outer(acc, fa[u & 1], fb[u & 1]);
            }
        }
#endif
#if CP
        copy_wait<NS - 3>(); /* tile kt + 2 has landed: the next step reads its first row */
#else
        if (more)
            store_tile(smem + wr, ra, rb);
#endif
        __syncthreads();
        if (NS < 3 && kt + 1 < KT)
            load_frag(fa[0], fb[0], smem + nxt, 0, tx, ty);
        cur = nxt;
        wr = wr + STAGE == NS * STAGE ? 0 : wr + STAGE;
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
