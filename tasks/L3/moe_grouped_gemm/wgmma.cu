// moe_grouped_gemm on Hopper: y[t] = x[t] W[expert[t]], bf16 operands, fp32 accumulation, bf16 out. A launch plan
// of four small routing launches and one grouped wgmma GEMM:
//   moe_zero    counts[e] = 0 (scratch arrives poisoned);
//   moe_count   counts[expert[t]] += 1 with atomicAdd, whose return value is row t's rank among its expert's
//               rows (the order within an expert is whatever the atomics give: harmless, since a row's output
//               does not depend on where in a tile it sits; every output element is still one sum in one order);
//   moe_scan    one block: offs[e] = rows of experts before e, tstart[e] = BM-row tiles of experts before e
//               (ceil(counts / BM) each, so an expert with no rows has no tile), offs[E] = T, tstart[E] = tiles;
//   moe_place   perm[offs[expert[t]] + rank[t]] = t: the rows grouped by expert;
//   moe_gemm    tasks/L1/hgemm/wgmma.cu's mainloop (its header explains it: CONS consumer warpgroups issuing
//               wgmma.mma_async.m64n{BN}k16 from 128-byte-swizzled shared tiles, a warp-specialised cp.async
//               producer warpgroup with "full" and "empty" mbarriers over a STAGES-deep ring) over a grid of
//               (ceil(T / BM) + min(E, T)) x ceil(F / BN) blocks, an upper bound of the tiles sum_e
//               ceil(counts[e] / BM) x ceil(F / BN); blocks past tstart[E] x ceil(F / BN) leave at once. A block
//               maps its index to (tile row mt, column tile) by hgemm's grouped rasterisation over tstart[E]
//               tile rows, finds mt's expert by binary search in tstart (the largest e with tstart[e] <= mt:
//               experts without rows share their start with the next, so they are never chosen), and computes
//               rows offs[e] + (mt - tstart[e]) BM .. of the grouped order against W[e] (Hd x F): its loaders
//               gather x's rows through perm (one x row index per A chunk, kept in registers; rows past the
//               expert's end are zero-filled) and its epilogue scatters each output row back to y[perm[p]].
// Tails (Hd or F not multiples of 8, misaligned bases) take hgemm's element-by-element chunk path. Scratch: counts,
// rank and perm (T), offs and tstart (E + 1) ints.
// PREDICTION (made before any GPU run, not measured): 2 T Hd F = 481 GFLOP at T4096 Hd4096 F14336 E8. With about
// 512 +- 21 rows per expert, BM = 128 gives 4 or 5 tile rows per expert, about 36 in all against 32 full ones
// (the last tile of an expert is on average half empty: ~12 % of the MMA work wasted), times 56 column tiles:
// 2016 tiles, 15.3 waves of 132 (16 waves). At hgemm's measured 738 TFLOP/s per useful flop, scaled by the
// 12 % padding: ~0.73 ms, plus ~10 us of routing launches (each a few microseconds at T = 4096): ~0.74 ms,
// about 1.04x torch._grouped_mm's 0.771 ms (goal >= 1.0x; within the error of this estimate). W (940 MB) is read
// from DRAM about once (the rasterisation keeps an expert's 4-5 tile rows of one column panel together),
// ~0.2-0.28 ms of DRAM time, overlapped with the tensor cores. BM = 64 halves the padding but halves the
// reuse of each W panel; the tuner can try it.
// Measured (2026-12-08, an H100 80GB HBM3, bench/heavy.sh, one call): correct on every check shape (its
// determinism check included); 0.840 ms (572 TFLOP/s) against torch._grouped_mm's 0.759 ms over rows grouped
// outside the timed call: 0.903x, under the goal; untuned. compute-sanitizer's four tools: clean.
// Knobs: BM, BN, CONS, WS, STAGES, GROUP as hgemm's.
// @temper task moe_grouped_gemm
// @temper flags --gpu-architecture=sm_90a
// @temper param BM 128 64 256
// @temper param BN 256 128
// @temper param CONS 2 1
// @temper param WS 1 0
// @temper param STAGES 4 3 5 6
// @temper param GROUP 8 16 4
// @temper require BM % (64 * CONS) == 0 && BM / (64 * CONS) * BN <= 256
// @temper require STAGES * (BM + BN) * 128 + 2048 <= 227 * 1024
// @temper scratch counts i32 E
// @temper scratch rank i32 T
// @temper scratch offs i32 E + 1
// @temper scratch tstart i32 E + 1
// @temper scratch perm i32 T
// @temper launch moe_zero grid(ceil_div(E, 256)) block(256) args(counts, E)
// @temper launch moe_count grid(ceil_div(T, 256)) block(256) args(counts, rank, expert, T, E)
// @temper launch moe_scan grid(1) block(1024) args(offs, tstart, counts, E)
// @temper launch moe_place grid(ceil_div(T, 256)) block(256) args(perm, offs, rank, expert, T, E)
// @temper launch moe_gemm grid((ceil_div(T, BM) + min(E, T)) * ceil_div(F, BN)) block((CONS + WS) * 128) smem(STAGES * (BM + BN) * 128 + 2048) args(y, x, W, perm, offs, tstart, T, Hd, F, E)

#define BK 64                     /* k per stage: one 128-byte swizzle line of bf16 */
#define NT ((CONS + WS) * 128)    /* threads per block */
#define LT (WS ? 128 : CONS * 128) /* threads that copy */
#define WGM (BM / (64 * CONS))    /* m64 slabs per consumer warpgroup */
#define NACC (BN / 2)             /* accumulators per thread per slab */
#define A_BYTES (BM * BK * 2)     /* one A stage */
#define B_BYTES (BK * BN * 2)     /* one B stage */
#define B_BLOCK 8192              /* one 64-column block of a B stage: 64 k-lines of 128 bytes */
#define A_RSTEP (LT / 8)          /* rows between a loader's A chunks */
#define A_CPT (BM * 8 / LT)       /* A chunks per loader thread per stage */
#define B_CPR (BN / 8)            /* chunks per k-row of a B stage */
#define B_RSTEP (LT / B_CPR)      /* k-rows between a loader's B chunks */
#define B_CPT (BK * B_CPR / LT)   /* B chunks per loader thread per stage */

/* Descriptor strides (bytes). A: K-major, SBO = 8 rows of 128 bytes, LBO unused (1 encoded).
 * B: MN-major, LBO = column block to column block, SBO = 8 k-lines to the next 8. */
#define A_LBO 16
#define A_SBO 1024
#define B_LBO B_BLOCK
#define B_SBO 1024

typedef unsigned short bf16_t;

/* Byte offset of 16-byte chunk c (0-7) of 128-byte line `line` in a 1024-aligned swizzled region. */
__host__ __device__ __forceinline__ unsigned swz128(unsigned line, unsigned c)
{
    return line * 128 + ((c ^ (line & 7)) << 4);
}

/* Byte offsets inside an A stage (row r, chunk kc = k/8) and a B stage (k-row k, chunk nc = n/8). */
__host__ __device__ __forceinline__ unsigned a_offset(unsigned r, unsigned kc)
{
    return swz128(r, kc);
}

__host__ __device__ __forceinline__ unsigned b_offset(unsigned k, unsigned nc)
{
    return (nc >> 3) * B_BLOCK + swz128(k, nc & 7);
}

/* A wgmma shared-memory descriptor with 128-byte swizzling: start address, LBO and SBO in 16-byte
 * units in bits 0-13, 16-29 and 32-45, base offset 0 (bits 49-51), layout 1 = 128B (bits 62-63).
 * Adding (bytes >> 4) to it moves the start address while it stays below 256 KiB. */
__host__ __device__ __forceinline__ unsigned long long make_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (unsigned long long)((lbo >> 4) & 0x3FFF) << 16 |
           (unsigned long long)((sbo >> 4) & 0x3FFF) << 32 | 1ull << 62;
}

/* Descriptors of a warpgroup's first slab (slab0) of A stage 0 at byte address sa0, and of B stage 0
 * at sb0, at k-step 0. */
__host__ __device__ __forceinline__ unsigned long long a_desc0(unsigned sa0, int slab0)
{
    return make_desc(sa0 + slab0 * 64 * 128, A_LBO, A_SBO);
}

__host__ __device__ __forceinline__ unsigned long long b_desc0(unsigned sb0)
{
    return make_desc(sb0, B_LBO, B_SBO);
}

/* The same moved to stage s, slab slab0 + i, k16 step kk: A slabs are 64 lines apart and a k16
 * step is 32 bytes along the line; B k16 steps are 16 lines apart. */
__host__ __device__ __forceinline__ unsigned long long a_desc_at(unsigned long long da0, int s, int i, int kk)
{
    return da0 + (unsigned)((s * A_BYTES + i * 64 * 128 + kk * 32) >> 4);
}

__host__ __device__ __forceinline__ unsigned long long b_desc_at(unsigned long long db0, int s, int kk)
{
    return db0 + (unsigned)((s * B_BYTES + kk * 16 * 128) >> 4);
}

/* The chunks loader thread lt copies at step i of a stage: A row and chunk column (k / 8), B
 * k-row and chunk column (n / 8), all within the tile. */
__host__ __device__ __forceinline__ void a_chunk(int lt, int i, int *row, int *kc)
{
    *row = lt / 8 + i * A_RSTEP;
    *kc = lt % 8;
}

__host__ __device__ __forceinline__ void b_chunk(int lt, int i, int *krow, int *nc)
{
    *krow = lt / B_CPR + i * B_RSTEP;
    *nc = lt % B_CPR;
}

/* Where accumulator r of thread t (0-127) of a warpgroup lies in its 64 x BN slab (the m64nNk16
 * f32 D fragment): warp w = t/32 owns rows 16w..16w+15; r = 4j + 2h + e is row 16w + 8h + (t%32)/4,
 * column 8j + 2(t%4) + e. */
__host__ __device__ __forceinline__ void acc_coord(int t, int r, int *row, int *col)
{
    *row = 16 * (t / 32) + 8 * ((r / 2) % 2) + (t % 32) / 4;
    *col = 8 * (r / 4) + 2 * (t % 4) + r % 2;
}

/* Block pid's tile among grid_m x grid_n (tile rows in the expert-grouped order, column tiles), by hgemm's
 * grouped rasterisation: GROUP tile rows walked column by column. False for a block past the last tile. */
__host__ __device__ __forceinline__ bool moe_tile(int pid, int grid_m, int grid_n, int *mt, int *nt)
{
    if (pid >= grid_m * grid_n)
        return false;
    const int per_group = GROUP * grid_n;
    const int first_m = (pid / per_group) * GROUP;
    const int group_m = grid_m - first_m < GROUP ? grid_m - first_m : GROUP;
    *mt = first_m + (pid % per_group) % group_m;
    *nt = (pid % per_group) / group_m;
    return true;
}

/* The expert whose tiles hold tile row mt: the largest e with tstart[e] <= mt (an expert without rows has
 * tstart[e] == tstart[e + 1], so the next one, which does own mt, is larger). */
__host__ __device__ __forceinline__ int moe_expert_of(const int *tstart, int E, int mt)
{
    int lo = 0, hi = E - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (tstart[mid] <= mt)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

#ifdef __CUDA_ARCH__

__device__ __forceinline__ void cp_async16(unsigned dst, const void *src, int src_bytes)
{
    /* src_bytes = 0 reads nothing and fills the 16 bytes with zeros */
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

__device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int N_PENDING>
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N_PENDING) : "memory");
}

__device__ __forceinline__ void st_shared_v4(unsigned addr, unsigned a, unsigned b, unsigned c, unsigned d)
{
    asm volatile("st.shared.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"r"(addr), "r"(a), "r"(b), "r"(c), "r"(d) : "memory");
}

/* Orders this thread's generic-proxy shared accesses (cp.async and st.shared are generic) with
 * the async proxy that wgmma reads through. */
__device__ __forceinline__ void fence_proxy_async()
{
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

/* Waits (acquire) until the phase of parity `parity` of the barrier has completed. */
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

__device__ __forceinline__ void mbar_arrive(unsigned bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/* Arrives on the barrier once all of this thread's earlier cp.async have landed; counts as one of
 * the expected arrivals (.noinc). */
__device__ __forceinline__ void cp_async_mbar_arrive(unsigned bar)
{
    asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
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

/* Keeps the compiler from moving accumulator reads or writes across this point: wgmma writes them
 * asynchronously, between its issue and the wait_group that retires it. */
__device__ __forceinline__ void fence_acc(float (&d)[WGM][NACC])
{
#pragma unroll
    for (int i = 0; i < WGM; i++)
#pragma unroll
        for (int j = 0; j < NACC; j++)
            asm volatile("" : "+f"(d[i][j])::"memory");
}

#define F4(d, i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3])
#define F16(d, i) F4(d, i), F4(d, i + 4), F4(d, i + 8), F4(d, i + 12)
#define F64(d, i) F16(d, i), F16(d, i + 16), F16(d, i + 32), F16(d, i + 48)

/* d (64 x 256 per warpgroup, f32) += A (64 x 16, K-major, descriptor da) * B (16 x 256, N-major,
 * descriptor db): scale-d 1, no negation, transpose-A 0, transpose-B 1. */
__device__ __forceinline__ void wgmma_m64n256(float (&d)[128], unsigned long long da, unsigned long long db)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
                 "}, %128, %129, p, 1, 1, 0, 1;\n"
                 "}\n"
                 : F64(d, 0), F64(d, 64)
                 : "l"(da), "l"(db), "r"(1));
}

/* The same for 64 x 128 tiles. */
__device__ __forceinline__ void wgmma_m64n128(float (&d)[64], unsigned long long da, unsigned long long db)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                 "}, %64, %65, p, 1, 1, 0, 1;\n"
                 "}\n"
                 : F64(d, 0)
                 : "l"(da), "l"(db), "r"(1));
}

/* Issues stage s (4 k16 steps) for this warpgroup's WGM slabs and commits it as one group. da0 and
 * db0: a_desc0 and b_desc0 of this warpgroup. */
__device__ __forceinline__ void mma_stage(float (&acc)[WGM][NACC], unsigned long long da0, unsigned long long db0,
                                          int s)
{
    fence_acc(acc);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++)
#pragma unroll
        for (int i = 0; i < WGM; i++) {
#if BN == 256
            wgmma_m64n256(acc[i], a_desc_at(da0, s, i, kk), b_desc_at(db0, s, kk));
#else
            wgmma_m64n128(acc[i], a_desc_at(da0, s, i, kk), b_desc_at(db0, s, kk));
#endif
        }
    wgmma_commit();
    fence_acc(acc);
}

/* two floats to a packed pair of bf16 (round to nearest even): lo in bits 0-15, hi in 16-31 */
__device__ __forceinline__ unsigned pack_bf16x2(float lo, float hi)
{
    unsigned r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

__device__ __forceinline__ bf16_t to_bf16(float f)
{
    unsigned short r;
    asm("cvt.rn.bf16.f32 %0, %1;\n" : "=h"(r) : "f"(f));
    return r;
}

/* One loader thread's share of every stage (the chunks a_chunk and b_chunk give it: tile rows i * A_RSTEP
 * and k-rows i * B_RSTEP apart), advanced one k-tile per load_tile. The A tile's rows are gathered: tile row
 * r is x's row perm[m0 + r], present while m0 + r < M, where m0 and M are positions in the expert-grouped
 * order (the tile's first row and the end of its expert's rows), so each loader thread keeps the x row of
 * each of its A chunks. Pointers to rows outside a matrix are never read. */
struct Loader {
    const bf16_t *b;    /* B at (bk, bn) */
    size_t b_step;      /* elements between a thread's B rows (B_RSTEP * N) */
    int arow[A_CPT];    /* x row of each of the thread's A chunks, -1 past the expert's rows */
    int ak;             /* first column of this thread's A chunk in the next tile */
    int bk;             /* first k-row of this thread's B chunks in the next tile */
    int bn;             /* first column of this thread's B chunk */
    int lt;             /* loader thread index, 0 to LT-1 */
};

__device__ __forceinline__ void loader_init(Loader &ld, int lt, const bf16_t *A, const bf16_t *B, const int *perm,
                                            int M, int N, int K, int m0, int n0)
{
    int ar0, ac, br0, bc;
    a_chunk(lt, 0, &ar0, &ac);
    b_chunk(lt, 0, &br0, &bc);
    ld.lt = lt;
    ld.ak = ac * 8;
    ld.bk = br0;
    ld.bn = n0 + bc * 8;
    ld.b = B + (size_t)min(br0, K - 1) * N + min(ld.bn, N - 1);
    ld.b_step = (size_t)B_RSTEP * N;
#pragma unroll
    for (int i = 0; i < A_CPT; i++) {
        const int p = m0 + ar0 + i * A_RSTEP;
        ld.arow[i] = p < M ? perm[p] : -1;
    }
}

/* Fills the stage at byte addresses sa (A) and sb (B) with the next k-tile and moves ld on. VEC:
 * 16-byte cp.async, zero-filled out of range (needs K % 8 == 0, N % 8 == 0 and 16-byte aligned
 * bases, so that a chunk is wholly inside or outside); otherwise element loads and one 16-byte
 * shared store per chunk. A is x (T x K), read at the gathered rows. */
template <bool VEC>
__device__ __forceinline__ void load_tile(unsigned sa, unsigned sb, Loader &ld, const bf16_t *A, const bf16_t *B,
                                          int N, int K)
{
    const bool k_ok = ld.ak < K;
#pragma unroll
    for (int i = 0; i < A_CPT; i++) {
        int r, kc;
        a_chunk(ld.lt, i, &r, &kc);
        const unsigned dst = sa + a_offset(r, kc);
        const bool row_ok = ld.arow[i] >= 0;
        const bf16_t *src = A + (size_t)(row_ok ? ld.arow[i] : 0) * K + ld.ak;
        if (VEC) {
            const bool ok = row_ok && k_ok;
            cp_async16(dst, ok ? src : A, ok ? 16 : 0);
        } else {
            unsigned w[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                unsigned lo = row_ok && ld.ak + 2 * e < K ? src[2 * e] : 0u;
                unsigned hi = row_ok && ld.ak + 2 * e + 1 < K ? src[2 * e + 1] : 0u;
                w[e] = lo | (hi << 16);
            }
            st_shared_v4(dst, w[0], w[1], w[2], w[3]);
        }
    }
    const bf16_t *src = ld.b;
    const bool n_ok = ld.bn < N;
#pragma unroll
    for (int i = 0; i < B_CPT; i++, src += ld.b_step) {
        int kr, nc;
        b_chunk(ld.lt, i, &kr, &nc);
        const unsigned dst = sb + b_offset(kr, nc);
        const bool row_ok = ld.bk + i * B_RSTEP < K;
        if (VEC) {
            const bool ok = row_ok && n_ok;
            cp_async16(dst, ok ? src : B, ok ? 16 : 0);
        } else {
            unsigned w[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                unsigned lo = row_ok && ld.bn + 2 * e < N ? src[2 * e] : 0u;
                unsigned hi = row_ok && ld.bn + 2 * e + 1 < N ? src[2 * e + 1] : 0u;
                w[e] = lo | (hi << 16);
            }
            st_shared_v4(dst, w[0], w[1], w[2], w[3]);
        }
    }
    ld.ak += BK;
    ld.b += (size_t)BK * N;
    ld.bk += BK;
}

#if WS
/* The producer warpgroup: fills stage kt % STAGES with tile kt once the consumers have released
 * its previous tile (kt - STAGES), then arrives on the stage's "full" barrier. */
template <bool VEC>
__device__ __forceinline__ void produce(unsigned sa0, unsigned sb0, unsigned bar0, const bf16_t *A, const bf16_t *B,
                                        const int *perm, int M, int N, int K, int m0, int n0, int ktiles)
{
    Loader ld;
    loader_init(ld, threadIdx.x - CONS * 128, A, B, perm, M, N, K, m0, n0);
    int s = 0;
    unsigned phase = 0;
    for (int kt = 0; kt < ktiles; kt++) {
        if (kt >= STAGES)
            mbar_wait(bar0 + (STAGES + s) * 8, phase ^ 1); /* empty: use kt/STAGES - 1 is over */
        load_tile<VEC>(sa0 + s * A_BYTES, sb0 + s * B_BYTES, ld, A, B, N, K);
        if (VEC) {
            cp_async_mbar_arrive(bar0 + s * 8);
        } else {
            fence_proxy_async();
            mbar_arrive(bar0 + s * 8);
        }
        if (++s == STAGES) {
            s = 0;
            phase ^= 1;
        }
    }
    if (VEC)
        cp_async_wait<0>(); /* leave no copy in flight behind an exited thread */
}

/* A consumer warpgroup: waits for each stage, multiplies it, and releases the previous stage once
 * this warpgroup's wgmma on it have completed. */
__device__ __forceinline__ void consume(float (&acc)[WGM][NACC], unsigned sa0, unsigned sb0, unsigned bar0, int ktiles)
{
    const int wg = threadIdx.x / 128, lane = threadIdx.x % 32;
    const unsigned long long da0 = a_desc0(sa0, wg * WGM), db0 = b_desc0(sb0);
    int s = 0, prev = 0;
    unsigned phase = 0;
    for (int kt = 0; kt < ktiles; kt++) {
        mbar_wait(bar0 + s * 8, phase); /* full: tile kt has landed */
        fence_proxy_async();
        mma_stage(acc, da0, db0, s);
        wgmma_wait<1>(); /* tile kt-1's group is complete: its stage may be refilled */
        fence_acc(acc);
        if (kt > 0 && lane == 0)
            mbar_arrive(bar0 + (STAGES + prev) * 8);
        prev = s;
        if (++s == STAGES) {
            s = 0;
            phase ^= 1;
        }
    }
    wgmma_wait<0>();
    fence_acc(acc);
}
#else
/* All warpgroups copy and multiply; tile kt+STAGES-2 is copied while tile kt multiplies. */
template <bool VEC>
__device__ __forceinline__ void mainloop(float (&acc)[WGM][NACC], unsigned sa0, unsigned sb0, const bf16_t *A,
                                         const bf16_t *B, const int *perm, int M, int N, int K, int m0, int n0,
                                         int ktiles)
{
    const int wg = threadIdx.x / 128;
    const unsigned long long da0 = a_desc0(sa0, wg * WGM), db0 = b_desc0(sb0);
    Loader ld;
    loader_init(ld, threadIdx.x, A, B, perm, M, N, K, m0, n0);
    /* a group is committed even when empty, so that the group count stays in step with the tile */
#pragma unroll
    for (int t = 0; t < STAGES - 2; t++) {
        if (t < ktiles)
            load_tile<VEC>(sa0 + t * A_BYTES, sb0 + t * B_BYTES, ld, A, B, N, K);
        cp_async_commit();
    }
    int s = 0, w = STAGES - 2; /* stage read, stage written next */
    for (int kt = 0; kt < ktiles; kt++) {
        cp_async_wait<STAGES - 3>(); /* this thread's copies of tile kt have landed */
        fence_proxy_async();
        __syncthreads(); /* everyone's have; every warpgroup has retired its tile kt-2 group */
        mma_stage(acc, da0, db0, s);
        if (kt + STAGES - 2 < ktiles)
            load_tile<VEC>(sa0 + w * A_BYTES, sb0 + w * B_BYTES, ld, A, B, N, K);
        cp_async_commit();
        wgmma_wait<1>();
        fence_acc(acc);
        s = s == STAGES - 1 ? 0 : s + 1;
        w = w == STAGES - 1 ? 0 : w + 1;
    }
    wgmma_wait<0>();
    fence_acc(acc);
    cp_async_wait<0>();
}
#endif

/* acc = x[perm[m0..]] * B[:, n0..] over the whole K for the consumer warpgroups (M: the end of the expert's
 * rows in the grouped order); hgemm_wgmma's body, the permutation passed through to the loaders.
 * Returns true in the producer warpgroup (WS = 1), which has no accumulators and must leave the kernel: the
 * caller returns at once. (Testing threadIdx.x in the caller instead made ptxas keep the producer's path
 * alive through the epilogue: 372 bytes of spills at 168 registers, against none at 157 this way.) */
__device__ __forceinline__ bool gemm_mainloop(float (&acc)[WGM][NACC], unsigned sa0, unsigned sb0, const bf16_t *A,
                                              const bf16_t *B, const int *perm, int M, int N, int K, int m0, int n0)
{
    const int ktiles = (K + BK - 1) / BK;
    const bool vec = (K % 8 == 0) && (N % 8 == 0) && (((size_t)A & 15) == 0) && (((size_t)B & 15) == 0);
#pragma unroll
    for (int i = 0; i < WGM; i++)
#pragma unroll
        for (int j = 0; j < NACC; j++)
            acc[i][j] = 0.0f;
#if WS
    const unsigned bar0 = sb0 + STAGES * B_BYTES; /* full[s] at bar0 + 8s, empty[s] at bar0 + 8(STAGES + s) */
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; s++) {
            mbar_init(bar0 + s * 8, LT);
            mbar_init(bar0 + (STAGES + s) * 8, CONS * 4);
        }
    }
    __syncthreads();
    if (threadIdx.x >= CONS * 128) { /* the producer warpgroup */
        if (vec)
            produce<true>(sa0, sb0, bar0, A, B, perm, M, N, K, m0, n0, ktiles);
        else
            produce<false>(sa0, sb0, bar0, A, B, perm, M, N, K, m0, n0, ktiles);
        return true;
    }
    consume(acc, sa0, sb0, bar0, ktiles);
#else
    if (vec)
        mainloop<true>(acc, sa0, sb0, A, B, perm, M, N, K, m0, n0, ktiles);
    else
        mainloop<false>(acc, sa0, sb0, A, B, perm, M, N, K, m0, n0, ktiles);
#endif
    return false;
}

extern "C" __global__ void moe_zero(int *counts, int E)
{
    const int e = blockIdx.x * blockDim.x + threadIdx.x;
    if (e < E)
        counts[e] = 0;
}

/* Expert indices are in [0, E) (the task's spec); one outside is skipped rather than written out of bounds. */
extern "C" __global__ void moe_count(int *counts, int *rank, const int *expert, int T, int E)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T)
        return;
    const int e = expert[t];
    if ((unsigned)e < (unsigned)E)
        rank[t] = atomicAdd(&counts[e], 1);
}

/* One block of 1024 threads, each owning ceil(E / 1024) consecutive experts: its own sums, a block scan of
 * them, then its experts' exclusive offsets written in order. */
extern "C" __global__ void __launch_bounds__(1024) moe_scan(int *offs, int *tstart, const int *counts, int E)
{
    __shared__ int s_rows[1024], s_tiles[1024];
    const int tid = threadIdx.x, per = (E + 1023) / 1024;
    const int lo = min(tid * per, E), hi = min(lo + per, E);
    int rows = 0, tiles = 0;
    for (int e = lo; e < hi; e++) {
        const int c = counts[e];
        rows += c;
        tiles += (c + BM - 1) / BM;
    }
    s_rows[tid] = rows;
    s_tiles[tid] = tiles;
    __syncthreads();
    for (int off = 1; off < 1024; off *= 2) { /* inclusive Hillis-Steele scan */
        const int r = tid >= off ? s_rows[tid - off] : 0, t = tid >= off ? s_tiles[tid - off] : 0;
        __syncthreads();
        s_rows[tid] += r;
        s_tiles[tid] += t;
        __syncthreads();
    }
    rows = s_rows[tid] - rows; /* exclusive: the experts before lo */
    tiles = s_tiles[tid] - tiles;
    for (int e = lo; e < hi; e++) {
        offs[e] = rows;
        tstart[e] = tiles;
        const int c = counts[e];
        rows += c;
        tiles += (c + BM - 1) / BM;
    }
    if (tid == 1023) {
        offs[E] = s_rows[1023];
        tstart[E] = s_tiles[1023];
    }
}

extern "C" __global__ void moe_place(int *perm, const int *offs, const int *rank, const int *expert, int T, int E)
{
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= T)
        return;
    const int e = expert[t];
    if ((unsigned)e < (unsigned)E)
        perm[offs[e] + rank[t]] = t;
}

extern "C" __global__ void __launch_bounds__(NT, 1)
    moe_gemm(bf16_t *y, const bf16_t *x, const bf16_t *W, const int *perm, const int *offs, const int *tstart, int T,
             int Hd, int F, int E)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned sa0 = ((unsigned)__cvta_generic_to_shared(smem_raw) + 1023u) & ~1023u; /* A stages */
    const unsigned sb0 = sa0 + STAGES * A_BYTES;                                           /* B stages */

    int mt, nt;
    if (!moe_tile(blockIdx.x, tstart[E], (F + BN - 1) / BN, &mt, &nt))
        return; /* the whole block, before any barrier */
    const int e = moe_expert_of(tstart, E, mt);
    const int p0 = offs[e] + (mt - tstart[e]) * BM, p_end = offs[e + 1], n0 = nt * BN;
    const bf16_t *We = W + (size_t)e * Hd * F;
    float acc[WGM][NACC];
    if (gemm_mainloop(acc, sa0, sb0, x, We, perm, p_end, F, Hd, p0, n0))
        return;

    /* epilogue: accumulators 4j+2h and 4j+2h+1 of slab i are two neighbours of one row (acc_coord); the row
     * is scattered back to y[perm[p]] */
    const int t = threadIdx.x % 128, wg = threadIdx.x / 128;
    const bool pair = (F % 2 == 0) && (((size_t)y & 3) == 0);
    int r0, c0;
    acc_coord(t, 0, &r0, &c0);
#pragma unroll
    for (int i = 0; i < WGM; i++) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int p = p0 + (wg * WGM + i) * 64 + r0 + 8 * h;
            if (p >= p_end)
                continue;
            bf16_t *yrow = y + (size_t)perm[p] * F;
#pragma unroll
            for (int j = 0; j < BN / 8; j++) {
                const int col = n0 + c0 + 8 * j;
                if (col >= F)
                    continue;
                const float v0 = acc[i][4 * j + 2 * h], v1 = acc[i][4 * j + 2 * h + 1];
                if (pair) { /* F even: col even, so col + 1 < F too, and the word is aligned */
                    *(unsigned *)(yrow + col) = pack_bf16x2(v0, v1);
                } else {
                    yrow[col] = to_bf16(v0);
                    if (col + 1 < F)
                        yrow[col + 1] = to_bf16(v1);
                }
            }
        }
    }
}

#endif /* __CUDA_ARCH__ */
