// A tunable fp32 SGEMM (row-major C = A B) whose tiles reach shared memory by TMA: the copy engine
// fills a ring of NS stages, mbarriers say when a stage has landed and when every warp is done with
// it, and the threads that multiply execute no global load, no shared store, no address arithmetic
// for either and no __syncthreads in the k loop: only LDS.128, FFMA and one mbarrier wait and one
// arrive per tile.
//
// Why a fourth kernel (tiled.cu's best is 0.915-0.92 of cuBLAS SGEMM at 4096^3 on the H200; issue
// 14 asks 0.95): Nsight Compute put tiled.cu at 76.6 % of issue slots busy against cuBLAS's 86.9 %
// on the same 256x128 tile, grid and clock. Beside the 2048 FFMAs of a 16-deep tile each of its
// threads issues 75 other instructions (float4 loads into registers, sixteen scalar stores that
// transpose A into shared memory, their address arithmetic), keeps 24 registers for the tile in
// flight, and meets all other warps at a barrier once a tile, after which the SM's 8 warps ask for
// their first LDS.128 together. pipe.cu (register fragments, cp.async) and stream.cu (persistent)
// moved those costs around and measured slower. Here they are gone rather than moved: A is not
// transposed at all (a thread reads a float4 of 4 consecutive k from each of its TM rows, once per
// 4 k), so TMA can copy both tiles as they lie in global memory; the warps drift apart, bounded by
// the ring, instead of meeting at a barrier.
//
// Layout. Stage s holds A's tile (BM rows of BK floats; TMA's swizzle of span BK * 4 bytes, so
// 16-byte chunk q of row r sits at chunk q ^ ((r * BK / 32) % (BK / 4))) and then B's tile (BK rows
// of BN floats, as is). Thread (ty, tx) owns C rows ty + i * TY (i < TM) and columns
// j * TX * 4 + tx * 4 .. +3 (j < TN / 4). In a warp, WX lanes lie along N and 32 / WX along M: the
// lanes along M read rows ty .. ty + 32/WX - 1 of one chunk column, which the swizzle spreads over
// distinct banks (TY % 8 == 0 keeps every one of a thread's rows on its first row's swizzle, so the
// chunk offsets are per thread, not per row); the lanes along N read the same A address
// (broadcast) and contiguous float4s of B. Every C element is one fma chain over k in order (the
// zeros TMA fills past K's edge come last and change nothing): the result is the same on every run.
//
// Pipeline. With PW=1 a producer warpgroup (128 more threads, so that setmaxnreg can move registers
// by warpgroup: it gives up all but 40 and the multiplying warps take REGS; one thread issues the
// copies) refills stage s with tile t + NS once the NT / 32 multiplying warps have each arrived on
// stage s's "empty" mbarrier after tile t; each tile's two copies complete stage s's "full"
// mbarrier by their bytes.
// With PW=0 thread 0 does the refills between its own tiles: at tile kt it waits until every warp
// is done with tile kt - 1 and refills that stage with tile kt - 1 + NS (so NS - 1 tiles are ahead
// of the slowest warp, and warp 0 waits only for warps still on kt - 1). Tiles are taken in groups
// of GROUP tile rows, down each group's columns (0: row by row), so the blocks running at once share
// rows of A and columns of B in L2. Edges: TMA reads zeros past every edge of A and B, and stores of
// C are checked, so any M works, and any N and K that are multiples of 4 (TMA's 16-byte row
// pitches); other shapes take sgemm_edge, a checked 64 x 64 tile kernel, never timed at the bench
// shape.
//
// Knobs: BM x BN tile of C, BK (k per stage), NS (stages), TM x TN per thread, WX (lanes along N),
// PW (producer warpgroup), GROUP (tile order), REGS (the multiplying warps' registers under PW=1),
// LP (B's values read a whole k ahead). The requires keep 128-256 multiplying threads, 128
// accumulators, the TM float4s of A and TN floats of B in registers beside them, and the ring
// within the 227 KiB of shared memory a block may have.
//
// Measured (H200, 4096^3, `bench/gpu.sh run evals`, each run against temper's cuBLAS expert in the
// same worker; bench/RESULTS.md, sessions 14-15): the defaults 2.813-2.821 ms, 0.950-0.956 of
// cuBLAS (tiled.cu 2.928-2.936, 0.914-0.920). Nsight Compute: 77.5 % of issue slots busy against
// tiled.cu's 76.6 % and cuBLAS's 86.9 %; the stall left is dispatch (0.42 per issue, cuBLAS 0.10),
// which follows register bank conflicts: counted in the SASS (FFMAs two of whose fetched, not
// reuse-served, sources share a bank), the knob sets rank by conflicts as they rank by time (1316
// conflicts at the defaults, 2.814 ms; 1505, 2.859; 1643, 2.947; 1959, 3.056; 2771, 3.183), and
// 813 of the defaults' 1316 are FFMAs ptxas left with no operand reused. What lost and was taken
// out (commit e0c9778 has them): a stream-K tail for the last partial wave (2.917-2.922 ms: its
// fixup and piece walk cost more than the idle 12 % of the last wave it filled), three other FFMA orders
// (2.907-3.157, more conflicts), fewer registers (216: 2.883, 208: 2.947, 200: 3.183), scalar
// stores of C (2.824, no gain). Slower and kept for the tuner: BK 16 (2.969) and 8 (3.181), NS 3-4
// (2.821-2.834), PW=0 (2.887 in session 14; 3.006-3.016 in session 15 beside the defaults' 2.813),
// GROUP=0 (2.884), 128x256 tiles (2.829). Tuned at budget 40 in the peers stage (session 15):
// WX=4 GROUP=0, 2.806 ms against the defaults' 2.813 in the same tune (noise), 0.958 of the cuBLAS
// call torch.matmul makes, interleaved, three rounds alike.
// @temper task sgemm
// @temper param BM 256 128
// @temper param BN 128 256
// @temper param BK 32 16 8
// @temper param NS 2 3 4 6
// @temper param TM 8 16
// @temper param TN 16 8
// @temper param WX 8 4
// @temper param PW 1 0
// @temper param GROUP 8 0 16
// @temper param REGS 232 224
// @temper param LP 0 1
// @temper require (BM / TM) * (BN / TN) % 32 == 0 && (BM / TM) * (BN / TN) >= 128 && (BM / TM) * (BN / TN) <= 256
// @temper require (BN / TN) % WX == 0 && (BM / TM) % (32 / WX) == 0 && (BM / TM) % 8 == 0
// @temper require TM * TN == 128 && TM * TN + 4 * TM + TN <= 176
// @temper require NS * (BM + BN) * BK * 4 + 1024 <= 227 * 1024
// @temper flags --gpu-architecture=sm_90a
// @temper launch sgemm_tma when(K % 4 == 0 && N % 4 == 0) grid(ceil_div(N, BN) * ceil_div(M, BM)) block((BM / TM) * (BN / TN) + 128 * PW) smem(NS * (BM + BN) * BK * 4 + 1024) args(C, tensormap(A, BK * 4, BK, BM), tensormap(B, 0, BN, BK), M, N, K)
// @temper launch sgemm_edge when(1) grid(ceil_div(N, 64), ceil_div(M, 64)) block(256) args(C, A, B, M, N, K)

#define NT ((BM / TM) * (BN / TN)) /* multiplying threads */
#define TX (BN / TN)               /* threads along N */
#define TY (BM / TM)               /* threads along M */
#define WY (32 / WX)               /* lanes of a warp along M */
#define A_BYTES (BM * BK * 4)      /* one stage's A tile */
#define STAGE_BYTES ((BM + BN) * BK * 4)

/* A tensor map as the driver encodes it: 128 opaque bytes, passed by value (__grid_constant__). */
struct __align__(64) tmap_t {
    unsigned long long v[16];
};

__device__ __forceinline__ void mbar_wait(unsigned bar, unsigned parity)
{
    asm volatile("{\n"
                 ".reg .pred done;\n"
                 "WAIT:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra WAIT;\n"
                 "}\n" ::"r"(bar),
                 "r"(parity)
                 : "memory");
}

/* One thread: tile t's A and B into the stage at dst, completing the stage's full barrier by its
 * bytes (TMA counts the zeros it fills past the edges too). */
__device__ __forceinline__ void load_stage(const tmap_t *tma, const tmap_t *tmb, unsigned dst, unsigned bar, int m0,
                                           int n0, int k0)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(STAGE_BYTES) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
                     dst),
                 "l"((unsigned long long)tma), "r"(k0), "r"(m0), "r"(bar)
                 : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
                     dst + A_BYTES),
                 "l"((unsigned long long)tmb), "r"(n0), "r"(k0), "r"(bar)
                 : "memory");
}

/* acc += a b^T for one k, row by row. (The order changes no result, every FFMA being on its own
 * accumulator, only which operands the reuse caches serve and so how many FFMAs meet a register
 * bank conflict: see the header.) */
__device__ __forceinline__ void fmas(float (&acc)[TM][TN], const float (&a)[TM], const float (&b)[TN])
{
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
}

/* acc += the thread's share of one stage's product. a points at the thread's first row of the A
 * tile, b at its first float4 of B's first row; sw is its rows' swizzle (a chunk index). Per 4 k
 * the thread reads a float4 of 4 k from each of its TM rows; per k, TN / 4 float4s of B. With LP=1
 * the next k's B values are read before this k's FFMAs (two register fragments, the loads a whole
 * k ahead of their use), with LP=0 just before them (ptxas schedules them among the FFMAs). */
__device__ __forceinline__ void multiply(float (&acc)[TM][TN], const unsigned char *a, const float *b, int sw)
{
#if LP
    float bv[2][TN];
#pragma unroll
    for (int j = 0; j < TN / 4; j++) {
        float4 v = *(const float4 *)(b + j * TX * 4);
        bv[0][4 * j] = v.x, bv[0][4 * j + 1] = v.y, bv[0][4 * j + 2] = v.z, bv[0][4 * j + 3] = v.w;
    }
#endif
#pragma unroll
    for (int q = 0; q < BK / 4; q++) {
        float4 av[TM];
#pragma unroll
        for (int i = 0; i < TM; i++)
            av[i] = *(const float4 *)(a + i * TY * BK * 4 + ((q ^ sw) << 4));
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            const int k = 4 * q + kk;
#if LP
            if (k + 1 < BK) {
#pragma unroll
                for (int j = 0; j < TN / 4; j++) {
                    float4 v = *(const float4 *)(b + (k + 1) * BN + j * TX * 4);
                    float *d = bv[(k + 1) % 2];
                    d[4 * j] = v.x, d[4 * j + 1] = v.y, d[4 * j + 2] = v.z, d[4 * j + 3] = v.w;
                }
            }
            const float(&bk)[TN] = bv[k % 2];
#else
            float bk[TN];
#pragma unroll
            for (int j = 0; j < TN / 4; j++) {
                float4 v = *(const float4 *)(b + k * BN + j * TX * 4);
                bk[4 * j] = v.x, bk[4 * j + 1] = v.y, bk[4 * j + 2] = v.z, bk[4 * j + 3] = v.w;
            }
#endif
            float ak[TM];
#pragma unroll
            for (int i = 0; i < TM; i++)
                ak[i] = kk == 0 ? av[i].x : kk == 1 ? av[i].y : kk == 2 ? av[i].z : av[i].w;
            fmas(acc, ak, bk);
        }
    }
}

/* The origin of tile t of C: GROUP tile rows at a time, down each group's columns (0: row by row). */
__device__ __forceinline__ void tile_origin(int t, int M, int N, int *m0, int *n0)
{
    const int nbn = (N + BN - 1) / BN;
#if GROUP > 0
    const int nbm = (M + BM - 1) / BM, per = GROUP * nbn, first = t / per * GROUP;
    const int rows = min(GROUP, nbm - first), w = t % per;
    *m0 = (first + w % rows) * BM, *n0 = w / rows * BN;
#else
    *m0 = t / nbn * BM, *n0 = t % nbn * BN;
#endif
}

/* Thread 0: the stages' barriers ("full": one arrival, the copies' bytes; "empty": one arrival per
 * multiplying warp), made visible to the copy engine. */
__device__ __forceinline__ void init_barriers(const tmap_t *tma, const tmap_t *tmb, unsigned full0, unsigned empty0)
{
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((unsigned long long)tma) : "memory");
    asm volatile("prefetch.tensormap [%0];\n" ::"l"((unsigned long long)tmb) : "memory");
    for (int s = 0; s < NS; s++) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(full0 + 8 * s) : "memory");
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(empty0 + 8 * s), "r"(NT / 32) : "memory");
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

/* A multiplying warp: wait for k-step g (stage g % NS), add its product, release the stage. */
__device__ __forceinline__ void consume(float (&acc)[TM][TN], const unsigned char *ring, unsigned full0,
                                        unsigned empty0, int g, int tx, int ty, int sw, int lane)
{
    const int s = g % NS;
    mbar_wait(full0 + 8 * s, (unsigned)(g / NS) & 1u);
    const unsigned char *st = ring + s * STAGE_BYTES;
    multiply(acc, st + ty * BK * 4, (const float *)(st + A_BYTES) + tx * 4, sw);
    __syncwarp();
    if (lane == 0)
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(empty0 + 8 * s) : "memory");
}

/* The producer: k-step kt into stage kt % NS once every warp is done with step kt - NS there. */
__device__ __forceinline__ void produce(const tmap_t *tma, const tmap_t *tmb, unsigned ring_s, unsigned full0,
                                        unsigned empty0, int kt, int m0, int n0)
{
    const int s = kt % NS;
    if (kt >= NS)
        mbar_wait(empty0 + 8 * s, (unsigned)(kt / NS - 1) & 1u);
    load_stage(tma, tmb, ring_s + s * STAGE_BYTES, full0 + 8 * s, m0, n0, kt * BK);
}

/* The thread's TM x TN of C at (m0, n0), rows and columns past the edges left out. */
__device__ __forceinline__ void store_c(const float (&acc)[TM][TN], float *__restrict__ C, int M, int N, int m0,
                                        int n0, int tx, int ty)
{
#pragma unroll
    for (int i = 0; i < TM; i++) {
        const int r = m0 + ty + i * TY;
        if (r >= M)
            continue;
        float *crow = C + (size_t)r * N;
#pragma unroll
        for (int j = 0; j < TN / 4; j++) {
            const int c = n0 + j * TX * 4 + tx * 4; /* N % 4 == 0: all four columns or none */
            if (c < N)
                *(float4 *)&crow[c] =
                    make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
        }
    }
}

/* One block per tile of C. */
extern "C" __global__ void __launch_bounds__(NT + 128 * PW, 1)
    sgemm_tma(float *__restrict__ C, const __grid_constant__ tmap_t tma, const __grid_constant__ tmap_t tmb, int M,
              int N, int K)
{
    extern __shared__ __align__(16) unsigned char smem_raw[]; /* aligned to 1024 below */
    __shared__ __align__(8) unsigned long long full[NS], empty[NS];
    /* a swizzle pattern repeats every 1024 bytes at most: every stage starts 1024-byte aligned */
    const unsigned raw = (unsigned)__cvta_generic_to_shared(smem_raw);
    const unsigned pad = ((raw + 1023u) & ~1023u) - raw;
    unsigned char *const ring = smem_raw + pad;
    const unsigned ring_s = raw + pad;
    const unsigned full0 = (unsigned)__cvta_generic_to_shared(full), empty0 = (unsigned)__cvta_generic_to_shared(empty);
    int m0, n0;
    tile_origin((int)blockIdx.x, M, N, &m0, &n0);
    const int KT = (K + BK - 1) / BK;

    if (threadIdx.x == 0) {
        init_barriers(&tma, &tmb, full0, empty0);
#if !PW
        for (int kt = 0; kt < min(NS, KT); kt++)
            produce(&tma, &tmb, ring_s, full0, empty0, kt, m0, n0);
#endif
    }
    __syncthreads(); /* the barriers are initialised before anyone waits on them */

#if PW
    if (threadIdx.x >= NT) { /* the producer warpgroup: no barrier below involves it */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n" ::: "memory");
        if (threadIdx.x == NT)
            for (int kt = 0; kt < KT; kt++)
                produce(&tma, &tmb, ring_s, full0, empty0, kt, m0, n0);
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(REGS) : "memory");
#endif
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tx = (warp % (TX / WX)) * WX + lane % WX;
    const int ty = (warp / (TX / WX)) * WY + lane / WX;
    const int sw = ((ty * BK) >> 5) & (BK / 4 - 1); /* the chunk swizzle of every one of the thread's rows */

    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; i++)
#pragma unroll
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;

    for (int kt = 0; kt < KT; kt++) {
#if !PW
        if (threadIdx.x == 0 && kt >= 1 && kt - 1 + NS < KT) /* refill the stage tile kt - 1 used */
            produce(&tma, &tmb, ring_s, full0, empty0, kt - 1 + NS, m0, n0);
#endif
        consume(acc, ring, full0, empty0, kt, tx, ty, sw, lane);
    }
    store_c(acc, C, M, N, m0, n0, tx, ty);
}

/* Shapes TMA cannot describe (N or K not a multiple of 4): a 64 x 64 tile of C per block, 4 x 4
 * per thread (rows ty + 16 i, columns tx + 16 j), 16-deep tiles of A and B through shared memory,
 * every load and store checked. */
extern "C" __global__ void __launch_bounds__(256)
    sgemm_edge(float *__restrict__ C, const float *__restrict__ A, const float *__restrict__ B, int M, int N, int K)
{
    __shared__ float As[16][64 + 1], Bs[16][64];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int m0 = blockIdx.y * 64, n0 = blockIdx.x * 64;
    float acc[4][4] = {};
    for (int k0 = 0; k0 < K; k0 += 16) {
        for (int e = threadIdx.x; e < 64 * 16; e += 256) {
            const int r = e / 16, k = e % 16; /* A: 64 rows of 16 k, stored transposed */
            As[k][r] = m0 + r < M && k0 + k < K ? A[(size_t)(m0 + r) * K + k0 + k] : 0.0f;
            const int kb = e / 64, c = e % 64; /* B: 16 rows of 64 columns */
            Bs[kb][c] = k0 + kb < K && n0 + c < N ? B[(size_t)(k0 + kb) * N + n0 + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 16; k++)
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(As[k][ty + 16 * i], Bs[k][tx + 16 * j], acc[i][j]);
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            if (m0 + ty + 16 * i < M && n0 + tx + 16 * j < N)
                C[(size_t)(m0 + ty + 16 * i) * N + n0 + tx + 16 * j] = acc[i][j];
}
