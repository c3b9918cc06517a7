// A tunable persistent Hopper bf16 GEMM, C = A*B (row-major, fp32 accumulation, bf16 out): TMA
// loads and stores through tensor maps (`tensormap(...)` launch arguments), wgmma from shared
// memory, one producer thread and two consumer warpgroups, thread-block clusters multicasting the
// operand they share, a persistent tile loop, and stream-K for the last partial round.
//
// Why (against wgmma.cu, the same 128 x 256 tiles fed by 128 threads of 16-byte cp.async, one
// block per tile: 700-730 TFLOP/s at 8192^3 on an H200, where torch.matmul reaches 800):
// - TMA: one thread issues a stage's copies (BM/64 boxes of A, BN/64 of B, each 64 x 64), the copy
//   engine writes them swizzled and completes the stage's "full" mbarrier by bytes. The producer
//   warpgroup gives its registers to the consumers (setmaxnreg: 40 for the producer, 232 for a
//   consumer thread); no shared stores or proxy fences run on the consumers' side.
// - Persistent: grid = the multiprocessors (rounded down to whole clusters), each cluster walks
//   the tiles P = gridDim / CLUSTER apart; the producer runs into the next tile's stages while the
//   consumers store the last one's.
// - CLUSTER = 2: the blocks of a cluster take adjacent tiles, along M (CDIR 0: they share B's
//   columns) or along N (CDIR 1: they share A's rows); each loads half of the shared operand's
//   boxes, multicast to both, so L2 serves it once per pair.
// - SPLIT: 0, the two consumer warpgroups own rows 0-63 and 64-127 of a 128-row tile, all BN
//   columns (one m64nBNk16 per k16); 1, each owns every row (BM/64 slabs) and half the columns
//   (cuBLAS's 320 x 128 kernel has this shape).
// - SK = 1 (stream-K): the last rem = tiles % P tiles, which would leave P - rem clusters idle for
//   a whole tile, are laid end to end as rem * ktiles k-steps and split evenly over all clusters.
//   Each piece's fp32 partial goes to scratch; a per-tile count (zeroed by hgemm_zero first: scratch
//   is poisoned) tells the last piece to finish, which sums every piece's partial in share order
//   (not finishing order: the same bits every run) and stores the tile. Nobody waits for anybody,
//   so no co-residency is assumed. Used only when every share has a k-step.
// - EPI: 2, the accumulators go to a staging area of shared memory with stmatrix (in the boxes of
//   tensormap(C, 128, 64, 64), 128-byte swizzle, conflict-free) and one thread per warpgroup
//   stores them with TMA, which clips at the matrix's edges and runs on while the warpgroup
//   multiplies the next tile; 1, 16-byte global stores after a transpose within each quad of
//   lanes; 0, 4-byte global stores.
//
// Protocol. Stage s has a "full" barrier (1 arrival, the local producer's arrive.expect_tx of the
// stage's bytes; the cluster's TMA copies complete it by bytes) and an "empty" one (one arrival per
// consumer warp of every block of the cluster, since a producer writes into its peer's stage too).
// The producer waits on "empty" with the phase before (a fresh barrier passes parity 1), arms
// "full" and issues the copies; a consumer warpgroup waits on "full", issues the stage's wgmma,
// commits, waits for the previous stage's group and releases that stage in every block of the
// cluster (a plain arrive: .release.cluster compiled to MEMBAR.ALL.GPU before every arrival and
// held the kernel to one stage a microsecond, 2.03 ms). After a piece's last stage it waits for
// everything, releases the last stage and stores. Barriers are made visible to the cluster before
// any copy and a block leaves only after its peer is done with it (cluster barriers).
//
// Layouts: the PTX ISA's 128-byte-swizzled canonical layouts, every stage 1024-byte aligned: an A
// stage is BM lines of 128 bytes (64 k of a row); a B stage BN/64 blocks of 64 k-lines of 128
// bytes (64 n). Descriptors as wgmma.cu's (A K-major SBO 1024; B MN-major LBO 8192, SBO 1024,
// transpose-B 1).
//
// Shapes: tensor maps need 16-byte row pitches, so this path runs when K % 8 == 0 and N % 8 == 0
// (the harness's buffers are 256-byte aligned); TMA reads zeros outside the matrices, and stores
// are clipped or bounds-checked, so any such M, N, K works (the check shape 300 x 520 x 328 has
// partial tiles on every edge). Other shapes take hgemm_rows, one thread per output (fp32 sum in k
// order, rounded once to bf16): correct everywhere, fast nowhere, reached by check shapes only.
// The stream-K path runs at the bench shape only (the check shapes have tiles <= P): there it is
// compared with the baseline's output.
//
// Predicted before any GPU run: 760-830 TFLOP/s at 8192^3 (0.95-1.03 of torch.matmul): the copies
// no longer cost the consumers issue slots or registers, and the persistent ring hides most of each
// epilogue. Measured (2026-12-01, H200, `bench/gpu.sh run evals`, each against the cuBLAS expert
// in the same worker): with EPI 1, 0.955-0.964 of the expert whatever BM, BN, SPLIT, CDIR,
// CLUSTER, GROUP or STAGES (320 x 128 SPLIT 1 CDIR 1, cuBLAS's shape: 0.92-0.945), and SK 1 the
// same as SK 0; Nsight Compute put it at 1.414 ms against cuBLAS's 1.399 ms at the same clocks.
// EPI 2 (STAGES 3, to fit the staging area): 0.999 and 0.994 (SK 1, SK 0), so the direct global
// stores were what held it back.
// Knobs: BM, BN (tile), SPLIT, STAGES, CLUSTER, CDIR, GROUP (cluster-tile rows per raster strip),
// EPI, SK, HALF (EPI 2: the staging area half as big, filled and stored in two column parts, so
// that STAGES 4 fits beside it at 128 x 256). hgemm_zero runs only with SK.
// @temper task hgemm
// @temper flags --gpu-architecture=sm_90a
// @temper param BM 128 256 320 192
// @temper param BN 256 128
// @temper param SPLIT 0 1
// @temper param STAGES 3 4 5 6
// @temper param CLUSTER 2 1
// @temper param CDIR 0 1
// @temper param GROUP 8 16 4
// @temper param EPI 2 1 0
// @temper param SK 1 0
// @temper param HALF 0 1
// @temper require SPLIT == 1 || BM == 128
// @temper require SPLIT == 0 || BM / 64 * BN / 4 <= 160
// @temper require STAGES * (BM + BN) * 128 + (EPI == 2) * BM * BN * 2 / (1 + HALF) + 2048 <= 227 * 1024
// @temper require HALF == 0 || EPI == 2 && BN / (1 + SPLIT) >= 128
// @temper require CLUSTER == 2 || CDIR == 0
// @temper scratch WS f32 2 * SMS * BM * BN
// @temper scratch COUNTS i32 SMS
// @temper launch hgemm_zero when(K % 8 == 0 && N % 8 == 0 && SK) grid(1) block(256) args(COUNTS, SMS)
// @temper launch hgemm_tma grid(min(SMS / CLUSTER, ceil_div(M, BM * (CLUSTER - CDIR * (CLUSTER - 1))) * ceil_div(N, BN * (1 + CDIR * (CLUSTER - 1)))) * CLUSTER) block(384) smem(STAGES * (BM + BN) * 128 + (EPI == 2) * BM * BN * 2 / (1 + HALF) + 2048) args(C, tensormap(A, 128, 64, 64), tensormap(B, 128, 64, 64), tensormap(C, 128, 64, 64), WS, COUNTS, M, N, K)
// @temper launch hgemm_tma when(K % 8 == 0 && N % 8 == 0) grid(min(SMS / CLUSTER, ceil_div(M, BM * (CLUSTER - CDIR * (CLUSTER - 1))) * ceil_div(N, BN * (1 + CDIR * (CLUSTER - 1)))) * CLUSTER) block(384) smem(STAGES * (BM + BN) * 128 + (EPI == 2) * BM * BN * 2 / (1 + HALF) + 2048) args(C, tensormap(A, 128, 64, 64), tensormap(B, 128, 64, 64), tensormap(C, 128, 64, 64), WS, COUNTS, M, N, K)
// @temper launch hgemm_rows when(1) grid(ceil_div(M * N, 256)) block(256) args(C, A, B, M, N, K)

#define BK 64                       /* k per stage: one 128-byte swizzle line of bf16 */
#define CONS 2                       /* consumer warpgroups */
#define NS (SPLIT ? BM / 64 : 1)     /* m64 slabs per consumer warpgroup */
#define NW (SPLIT ? BN / 2 : BN)     /* columns per consumer warpgroup: its wgmma's N */
#define NACC (NW / 2)                /* accumulators per thread per slab */
#define A_BYTES (BM * BK * 2)        /* one A stage: BM/64 boxes of 64 rows */
#define B_BYTES (BK * BN * 2)        /* one B stage: BN/64 boxes of 64 columns */
#define BOX 8192                     /* one box: 64 lines of 128 bytes */
#define A_BOXES (BM / 64)
#define B_BOXES (BN / 64)
#define CM (CDIR ? 1 : CLUSTER)      /* tiles of a cluster along M */
#define CN (CDIR ? CLUSTER : 1)      /* and along N */
#define PARTS (HALF ? 2 : 1)         /* EPI 2: column parts staged in turn */

typedef unsigned short bf16_t;

/* A tensor map as the driver encodes it: 128 opaque bytes, passed by value (__grid_constant__). */
struct __align__(64) tmap_t {
    unsigned long long v[16];
};

__host__ __device__ __forceinline__ unsigned long long make_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (unsigned long long)((lbo >> 4) & 0x3FFF) << 16 |
           (unsigned long long)((sbo >> 4) & 0x3FFF) << 32 | 1ull << 62;
}

/* Row r (0-127), column c of tile (pm, pn) in strip order: GROUP block-rows walked column by column. */
__host__ __device__ __forceinline__ void tile_coords(int tile, int grid_m, int grid_n, int *pm, int *pn)
{
    const int per_group = GROUP * grid_n;
    const int first_m = (tile / per_group) * GROUP;
    const int group_m = min(grid_m - first_m, GROUP);
    *pm = first_m + (tile % per_group) % group_m;
    *pn = (tile % per_group) / group_m;
}

__device__ __forceinline__ float bf16_to_f32(bf16_t b)
{
    return __uint_as_float((unsigned)b << 16);
}

#ifdef __CUDA_ARCH__

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

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

__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

/* Arrives on the barrier at the same offset in block `rank` of the cluster (this block included).
 * The arrival orders nothing but the wgmma reads already retired, so it is the default release at
 * CTA scope: .release.cluster compiles to MEMBAR.ALL.GPU before every arrival, which held this
 * kernel to one stage a microsecond (2.03 ms at 8192^3, measured on an H200). */
__device__ __forceinline__ void mbar_arrive_cluster(unsigned bar, unsigned rank)
{
#if CLUSTER > 1
    asm volatile("{\n"
                 ".reg .b32 remote;\n"
                 "mapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n"
                 "}\n" ::"r"(bar),
                 "r"(rank)
                 : "memory");
#else
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}

__device__ __forceinline__ unsigned cluster_rank()
{
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(r));
    return r;
}

__device__ __forceinline__ void cluster_sync()
{
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
}

/* One 2-D box of the tensor map at (c0 innermost, c1) into shared memory at dst, completing bar by
 * bytes; with a mask, the box lands at dst in every block of the mask and completes each one's bar. */
__device__ __forceinline__ void tma_load(unsigned dst, const tmap_t *map, int c0, int c1, unsigned bar)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], "
                 "[%4];\n" ::"r"(dst),
                 "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar)
                 : "memory");
}

__device__ __forceinline__ void tma_load_multicast(unsigned dst, const tmap_t *map, int c0, int c1, unsigned bar,
                                                   unsigned short mask)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                 "[%0], [%1, {%2, %3}], [%4], %5;\n" ::"r"(dst),
                 "l"((unsigned long long)map), "r"(c0), "r"(c1), "r"(bar), "h"(mask)
                 : "memory");
}

__device__ __forceinline__ void wgmma_fence()
{
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit()
{
    asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

template <int N_PENDING>
__device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N_PENDING) : "memory");
}

__device__ __forceinline__ void fence_acc(float (&d)[NS][NACC])
{
#pragma unroll
    for (int i = 0; i < NS; i++)
#pragma unroll
        for (int j = 0; j < NACC; j++)
            asm volatile("" : "+f"(d[i][j])::"memory");
}

#define F4(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define F16(d, i) F4(d, i), F4(d, i + 4), F4(d, i + 8), F4(d, i + 12)
#define F32(d, i) F16(d, i), F16(d, i + 16)
#define F64(d, i) F32(d, i), F32(d, i + 32)

/* d (64 x N per warpgroup, f32) += A (64 x 16, K-major, descriptor da) * B (16 x N, N-major,
 * descriptor db): scale-d 1, no negation, transpose-A 0, transpose-B 1. */
__device__ __forceinline__ void wgmma_m64n256(float (&d)[128], unsigned long long da, unsigned long long db)
{
    asm volatile("{\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
                 "}, %128, %129, 1, 1, 1, 0, 1;\n"
                 "}\n"
                 : F64(d, 0), F64(d, 64)
                 : "l"(da), "l"(db));
}

__device__ __forceinline__ void wgmma_m64n128(float (&d)[64], unsigned long long da, unsigned long long db)
{
    asm volatile("{\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                 "}, %64, %65, 1, 1, 1, 0, 1;\n"
                 "}\n"
                 : F64(d, 0)
                 : "l"(da), "l"(db));
}

__device__ __forceinline__ void wgmma_m64n64(float (&d)[32], unsigned long long da, unsigned long long db)
{
    asm volatile("{\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
                 "}, %32, %33, 1, 1, 1, 0, 1;\n"
                 "}\n"
                 : F32(d, 0)
                 : "l"(da), "l"(db));
}

__device__ __forceinline__ void wgmma_slab(float (&d)[NACC], unsigned long long da, unsigned long long db)
{
#if NW == 256
    wgmma_m64n256(d, da, db);
#elif NW == 128
    wgmma_m64n128(d, da, db);
#else
    wgmma_m64n64(d, da, db);
#endif
}

/* two floats to a packed pair of bf16 (round to nearest even): lo in bits 0-15, hi in 16-31 */
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi)
{
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

__device__ __forceinline__ unsigned pick4(const unsigned (&x)[4], int i)
{
    return i == 0 ? x[0] : i == 1 ? x[1] : i == 2 ? x[2] : x[3];
}

/* Stores this thread's accumulators of the 64 x NW slab whose first row is row0 and first column
 * col0. Thread t of the warpgroup holds d[4j + 2h + e] = D[16w + 8h + l/4][8j + 2(l%4) + e] (w = t/32,
 * l = t%32): with EPI, the four lanes of a quad swap pairs so that lane q of the quad holds
 * columns 8(j0 + q) .. +7 of its row for each group of four j, and stores them as 16 bytes. */
__device__ __forceinline__ void store_slab(const float (&d)[NACC], bf16_t *C, int M, int N, int row0, int col0)
{
    const int t = threadIdx.x % 128, w = t / 32, l = t % 32, q = l % 4;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int row = row0 + 16 * w + 8 * h + l / 4;
        bf16_t *crow = C + (size_t)row * N;
#if EPI
        const bool inside = row < M;
#pragma unroll
        for (int g = 0; g < NW / 32; g++) {
            unsigned x[4], y[4];
#pragma unroll
            for (int j = 0; j < 4; j++)
                x[j] = pack_bf16x2(d[4 * (4 * g + j) + 2 * h], d[4 * (4 * g + j) + 2 * h + 1]);
            /* round r: lane q sends its pair of block (q + r) % 4; lane q receives from lane
             * (q - r) % 4 that lane's pair of block q, which is element (q - r) % 4 of its 16 bytes */
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const unsigned got = __shfl_sync(0xffffffffu, pick4(x, (q + r) & 3), (l & ~3) | ((q - r) & 3));
                const int at = (q - r) & 3;
                y[0] = at == 0 ? got : y[0];
                y[1] = at == 1 ? got : y[1];
                y[2] = at == 2 ? got : y[2];
                y[3] = at == 3 ? got : y[3];
            }
            const int col = col0 + 8 * (4 * g + q);
            if (inside && col < N) /* N % 8 == 0 on this path: the 8 columns are all inside or all out */
                *(uint4 *)(crow + col) = make_uint4(y[0], y[1], y[2], y[3]);
        }
#else
        if (row >= M)
            continue;
#pragma unroll
        for (int j = 0; j < NW / 8; j++) {
            const int col = col0 + 8 * j + 2 * q;
            if (col < N) /* N even on this path */
                *(unsigned *)(crow + col) = pack_bf16x2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
        }
#endif
    }
}

/* The work of cluster cid among P, in order: whole tiles cid, cid + P, ... below dp (each k-step
 * 0 .. ktiles-1), then, with SK, its share of the last rem = tiles - dp tiles' k-steps laid end to
 * end: steps [cid W / P, (cid + 1) W / P) of W = rem * ktiles, at most two pieces of two tiles
 * (a share is shorter than a tile, as rem < P). body(tile, k0, k1, tail): tail is the piece's
 * tile among the last rem, or -1 for a whole tile of the first dp. */
template <typename Body>
__device__ __forceinline__ void for_work(int cid, int P, int dp, int rem, int ktiles, Body body)
{
    for (int tile = cid; tile < dp; tile += P)
        body(tile, 0, ktiles, -1);
    const long long W = (long long)rem * ktiles, lo = W * cid / P, hi = W * (cid + 1) / P;
    for (long long x = lo; x < hi;) {
        const int i = (int)(x / ktiles), k0 = (int)(x % ktiles);
        const int k1 = (int)min((long long)ktiles, k0 + (hi - x));
        body(dp + i, k0, k1, i);
        x += k1 - k0;
    }
}

/* The cluster whose share holds step x of the tail's W (the inverse of for_work's split). */
__device__ __forceinline__ int share_owner(long long x, long long W, int P)
{
    int c = (int)(x * P / W);
    while (c + 1 < P && W * (c + 1) / P <= x)
        c++;
    while (c > 0 && W * c / P > x)
        c--;
    return c;
}

/* EPI 2: this warpgroup's accumulators (NS slabs of 64 x NW) go to its staging region of shared
 * memory with stmatrix, laid out as the boxes of tensormap(C, 128, 64, 64) (64 rows of 128 bytes,
 * 128-byte swizzle: box (slab i, column block b) at (i * NW / 64 + b) * BOX), and one thread of the
 * warpgroup stores them with TMA, which clips at the matrix's edges. The stores run on while the
 * warpgroup multiplies the next tile; before writing the region again, that thread waits until
 * the copy engine has read it. */
__device__ __forceinline__ void stmatrix_x4(unsigned addr, unsigned r0, unsigned r1, unsigned r2, unsigned r3)
{
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(r0), "r"(r1),
                 "r"(r2), "r"(r3)
                 : "memory");
}

__device__ __forceinline__ void store_tile_tma(float (&acc)[NS][NACC], unsigned stage, const tmap_t *tc, int row0,
                                               int col0, int bar_id)
{
    const int t = threadIdx.x % 128, w = t / 32, l = t % 32;
    /* stmatrix x4: matrices (j, h) for h = 0, 1 and j, j + 1; lane l gives the address of row l % 8
     * of matrix l / 8 */
    const int mj = (l / 8) / 2, mh = (l / 8) % 2, rr = l % 8;
    const int row = 16 * w + 8 * mh + rr; /* within the slab */
    /* PARTS column parts in turn (HALF: two, so the staging area is half as big): each waits until
     * the copy engine has read the last one out of the region, fills it and has it stored */
#pragma unroll
    for (int part = 0; part < PARTS; part++) {
        if (t == 0)
            asm volatile("cp.async.bulk.wait_group.read 0;\n" ::: "memory");
        asm volatile("bar.sync %0, 128;\n" ::"r"(bar_id) : "memory");
#pragma unroll
        for (int i = 0; i < NS; i++)
#pragma unroll
            for (int j = part * (NW / 8 / PARTS); j < (part + 1) * (NW / 8 / PARTS); j += 2) {
                const int jj = j + mj; /* this lane's 16-byte chunk of the row: columns 8 jj .. +7 */
                const int box = i * (NW / 64 / PARTS) + jj / 8 - part * (NW / 64 / PARTS);
                const unsigned addr = stage + (unsigned)(box * BOX + row * 128 + (((jj % 8) ^ (row % 8)) << 4));
                stmatrix_x4(addr, pack_bf16x2(acc[i][4 * j], acc[i][4 * j + 1]),
                            pack_bf16x2(acc[i][4 * j + 2], acc[i][4 * j + 3]),
                            pack_bf16x2(acc[i][4 * j + 4], acc[i][4 * j + 5]),
                            pack_bf16x2(acc[i][4 * j + 6], acc[i][4 * j + 7]));
            }
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); /* the writes, to the copy engine */
        asm volatile("bar.sync %0, 128;\n" ::"r"(bar_id) : "memory");
        if (t == 0) {
#pragma unroll
            for (int i = 0; i < NS; i++)
#pragma unroll
                for (int b = 0; b < NW / 64 / PARTS; b++)
                    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];\n" ::"l"(
                                     (unsigned long long)tc),
                                 "r"(col0 + 64 * (part * (NW / 64 / PARTS) + b)), "r"(row0 + 64 * i),
                                 "r"(stage + (unsigned)((i * (NW / 64 / PARTS) + b) * BOX))
                                 : "memory");
            asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
        }
    }
}

extern "C" __global__ void
#if CLUSTER > 1
__cluster_dims__(CLUSTER, 1, 1)
#endif
__launch_bounds__(384, 1) hgemm_tma(bf16_t *C, const __grid_constant__ tmap_t ta, const __grid_constant__ tmap_t tb,
                                    const __grid_constant__ tmap_t tc, float *ws, int *counts, int M, int N, int K)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned sa0 = ((unsigned)__cvta_generic_to_shared(smem_raw) + 1023u) & ~1023u; /* A stages */
    const unsigned sb0 = sa0 + STAGES * A_BYTES;                                           /* B stages */
    const unsigned sc0 = sb0 + STAGES * B_BYTES; /* EPI 2: each consumer warpgroup's C staging */
    const unsigned full0 = sc0 + (EPI == 2 ? BM * BN * 2 / PARTS : 0), empty0 = full0 + STAGES * 8;
    volatile int *last_flag = (volatile int *)(smem_raw + (empty0 + STAGES * 8 - (unsigned)__cvta_generic_to_shared(smem_raw)));
    const int rank = CLUSTER > 1 ? (int)cluster_rank() : 0;

    /* the cluster's tiles: CM x CN blocks' tiles side by side; this block takes the rank-th */
    const int grid_mc = (M + BM * CM - 1) / (BM * CM), grid_nc = (N + BN * CN - 1) / (BN * CN);
    const int tiles = grid_mc * grid_nc, ktiles = (K + BK - 1) / BK;
    const int cid = blockIdx.x / CLUSTER, P = gridDim.x / CLUSTER;
    /* stream-K for the last partial round, when every cluster's share of it has a k-step at least */
    const int dp0 = tiles / P * P;
    const int dp = SK && (long long)(tiles - dp0) * ktiles >= P ? dp0 : tiles, rem = tiles - dp;
    const int rm = CDIR ? 0 : rank, rn = CDIR ? rank : 0;

    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(full0 + s * 8, 1);
            mbar_init(empty0 + s * 8, CONS * 4 * CLUSTER);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
#if CLUSTER > 1
    cluster_sync();
#else
    __syncthreads();
#endif

    if (threadIdx.x >= CONS * 128) { /* the producer warpgroup: one thread issues every copy */
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n");
        if (threadIdx.x == CONS * 128) {
            const unsigned short mask = (unsigned short)((1u << CLUSTER) - 1);
            int s = 0;
            unsigned phase = 0;
            for_work(cid, P, dp, rem, ktiles, [&](int tile, int k0, int k1, int) {
                int pm, pn;
                tile_coords(tile, grid_mc, grid_nc, &pm, &pn);
                const int m0 = (pm * CM + rm) * BM, n0 = (pn * CN + rn) * BN;
                for (int kt = k0; kt < k1; kt++) {
                    mbar_wait(empty0 + s * 8, phase ^ 1); /* every consumer of the cluster released it */
                    const unsigned full = full0 + s * 8, sa = sa0 + s * A_BYTES, sb = sb0 + s * B_BYTES;
                    mbar_expect_tx(full, A_BYTES + B_BYTES);
                    /* the operand the cluster shares goes box by box from rank box % CLUSTER to all */
#pragma unroll
                    for (int b = 0; b < A_BOXES; b++) {
                        if (CLUSTER > 1 && CDIR) {
                            if (b % CLUSTER == rank)
                                tma_load_multicast(sa + b * BOX, &ta, kt * BK, m0 + 64 * b, full, mask);
                        } else {
                            tma_load(sa + b * BOX, &ta, kt * BK, m0 + 64 * b, full);
                        }
                    }
#pragma unroll
                    for (int b = 0; b < B_BOXES; b++) {
                        if (CLUSTER > 1 && !CDIR) {
                            if (b % CLUSTER == rank)
                                tma_load_multicast(sb + b * BOX, &tb, n0 + 64 * b, kt * BK, full, mask);
                        } else {
                            tma_load(sb + b * BOX, &tb, n0 + 64 * b, kt * BK, full);
                        }
                    }
                    if (++s == STAGES) {
                        s = 0;
                        phase ^= 1;
                    }
                }
            });
        }
    } else { /* a consumer warpgroup: SPLIT 0, rows 64 wg .. +63 and every column of the tile;
              * SPLIT 1, every row (NS slabs) and columns NW wg .. +NW-1 */
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n");
        const int wg = threadIdx.x / 128, lane = threadIdx.x % 32, t = threadIdx.x % 128;
        const unsigned long long da0 = make_desc(sa0 + (SPLIT ? 0 : wg * BOX), 16, 1024);
        const unsigned long long db0 = make_desc(sb0 + (SPLIT ? wg * (NW / 64) * BOX : 0), BOX, 1024);
        float acc[NS][NACC];
        int s = 0;
        unsigned phase = 0;
        for_work(cid, P, dp, rem, ktiles, [&](int tile, int k0, int k1, int tail) {
            int pm, pn;
            tile_coords(tile, grid_mc, grid_nc, &pm, &pn);
            const int m0 = (pm * CM + rm) * BM, n0 = (pn * CN + rn) * BN;
#pragma unroll
            for (int i = 0; i < NS; i++)
#pragma unroll
                for (int j = 0; j < NACC; j++)
                    acc[i][j] = 0.0f;
            int prev = -1;
            for (int kt = k0; kt < k1; kt++) {
                mbar_wait(full0 + s * 8, phase); /* the stage's bytes have all landed */
                fence_acc(acc);
                wgmma_fence();
#pragma unroll
                for (int kk = 0; kk < BK / 16; kk++) {
                    const unsigned long long db = db0 + (unsigned)((s * B_BYTES + kk * 16 * 128) >> 4);
#pragma unroll
                    for (int i = 0; i < NS; i++)
                        wgmma_slab(acc[i], da0 + (unsigned)((s * A_BYTES + i * BOX + kk * 32) >> 4), db);
                }
                wgmma_commit();
                fence_acc(acc);
                wgmma_wait<1>(); /* the previous stage's group is done: release it */
                fence_acc(acc);
                if (prev >= 0 && lane < CLUSTER)
                    mbar_arrive_cluster(empty0 + prev * 8, (unsigned)lane);
                prev = s;
                if (++s == STAGES) {
                    s = 0;
                    phase ^= 1;
                }
            }
            wgmma_wait<0>();
            fence_acc(acc);
            if (prev >= 0 && lane < CLUSTER)
                mbar_arrive_cluster(empty0 + prev * 8, (unsigned)lane);
            if (tail >= 0) { /* a piece of a tail tile: the last piece to finish sums them all */
                const long long W = (long long)rem * ktiles;
                const int first = share_owner((long long)tail * ktiles, W, P);
                const int last = share_owner((long long)tail * ktiles + ktiles - 1, W, P);
                /* slot cid + tail is this piece's alone: a share's pieces are of consecutive tiles */
                float *mine = ws + ((size_t)(cid + tail) * CLUSTER + rank) * (BM * BN) + (size_t)wg * (NS * NACC) * 128;
#pragma unroll
                for (int g = 0; g < NS * NACC / 4; g++)
                    __stcg((float4 *)(mine + ((size_t)g * 128 + t) * 4),
                           make_float4(acc[g / (NACC / 4)][4 * (g % (NACC / 4))], acc[g / (NACC / 4)][4 * (g % (NACC / 4)) + 1],
                                       acc[g / (NACC / 4)][4 * (g % (NACC / 4)) + 2], acc[g / (NACC / 4)][4 * (g % (NACC / 4)) + 3]));
                __threadfence();
                asm volatile("bar.sync 1, 256;\n" ::: "memory");
                if (threadIdx.x == 0)
                    *last_flag = atomicAdd(&counts[tail * CLUSTER + rank], 1) == last - first;
                asm volatile("bar.sync 1, 256;\n" ::: "memory");
                if (!*last_flag)
                    return;
                __threadfence();
                /* the sum in share order, whoever finished last, its own piece read back like the
                 * others (so its accumulators are free meanwhile): the same bits every run */
                const float *slot0 = ws + ((size_t)(first + tail) * CLUSTER + rank) * (BM * BN) +
                                     (size_t)wg * (NS * NACC) * 128 + (size_t)t * 4;
                const size_t step = (size_t)CLUSTER * (BM * BN); /* from one share's slot to the next */
#pragma unroll
                for (int g = 0; g < NS * NACC / 4; g++) {
                    const float *q = slot0 + (size_t)g * 128 * 4;
                    float4 v = __ldcg((const float4 *)q);
                    for (int c = first + 1; c <= last; c++) {
                        q += step;
                        const float4 p = __ldcg((const float4 *)q);
                        v.x += p.x;
                        v.y += p.y;
                        v.z += p.z;
                        v.w += p.w;
                    }
                    float *d = &acc[g / (NACC / 4)][4 * (g % (NACC / 4))];
                    d[0] = v.x;
                    d[1] = v.y;
                    d[2] = v.z;
                    d[3] = v.w;
                }
            }
#if EPI == 2
            store_tile_tma(acc, sc0 + wg * (BM * BN / PARTS), &tc, m0 + (SPLIT ? 0 : 64 * wg), n0 + (SPLIT ? NW * wg : 0), 2 + wg);
#else
#pragma unroll
            for (int i = 0; i < NS; i++)
                store_slab(acc[i], C, M, N, m0 + (SPLIT ? 64 * i : 64 * wg), n0 + (SPLIT ? NW * wg : 0));
#endif
        });
#if EPI == 2
        if (t == 0) /* every store has landed before the block ends */
            asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
#endif
    }
#if CLUSTER > 1
    cluster_sync(); /* no block leaves while its peer may still write into it or arrive on it */
#endif
}

/* Zeroes the tail tiles' piece counts before each run (scratch is poisoned). */
extern "C" __global__ void hgemm_zero(int *counts, int n)
{
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        counts[i] = 0;
}

/* Shapes with a row pitch TMA cannot take: one thread per output, fp32 sum in k order. */
extern "C" __global__ void hgemm_rows(bf16_t *C, const bf16_t *A, const bf16_t *B, int M, int N, int K)
{
    const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (long long)M * N)
        return;
    const int row = (int)(i / N), col = (int)(i % N);
    float acc = 0.0f;
    for (int k = 0; k < K; k++)
        acc = fmaf(bf16_to_f32(A[(size_t)row * K + k]), bf16_to_f32(B[(size_t)k * N + col]), acc);
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(r) : "f"(acc));
    C[i] = r;
}

#endif /* __CUDA_ARCH__ */
