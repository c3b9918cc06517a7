// int8_gemm on Hopper: Y = fp32(A B) * 2^-(SA+SB), A int8 M x K, B int8 K x N (row-major), int32 accumulation
// in wgmma's s8 form, in two launches:
//   int8_transpose_b: BT[n][k] = B[k][n] into a scratch buffer of N rows of KP = ceil(K / 128) * 128 bytes,
//     zero for k >= K. wgmma takes 8-bit operands from shared memory only K-major (the PTX ISA allows the
//     transpose immediates for .f16/.bf16 alone), so B, which is N-major in memory, is transposed once;
//     padding K to whole 128-byte lines makes every chunk of BT a whole, aligned 16-byte cp.async at any K,
//     and the zeros there make A's columns past K (never read, or zero-filled) contribute nothing.
//     64 x 64 byte tiles through shared memory (rows padded to 68 bytes: a warp reading a column touches
//     32 banks), byte loads along n and byte stores along k, both coalesced. At 4096^3 it moves 2 x 16 MB:
//     ~10 us at the H200's copy bandwidth, about 6 % of the whole.
//   int8_gemm_wgmma: tasks/L1/hgemm/wgmma.cu's design with 8-bit operands (its header explains it): a block
//     computes a BM x BN tile with CONS consumer warpgroups issuing wgmma.mma_async.m64n{BN}k32.s32.s8.s8 from
//     shared memory; a warp-specialised producer warpgroup (WS = 1) fills a STAGES-deep ring with cp.async,
//     "full" and "empty" mbarriers between them; grouped rasterisation by GROUP block-rows.
//     K advances 128 per stage, so that a stage row is one 128-byte line in both operands, and both tiles use
//     the K-major 128-byte-swizzled layout that hgemm's A tile uses, byte for byte: line r holds row r's 128
//     bytes (k = 0..127 of the stage), its 16-byte chunk c at r*128 + ((c ^ r%8) * 16); descriptor SBO = 1024
//     (8 lines), LBO unused (1 encoded), layout 128B; a k32 step is 32 bytes along the line, as bf16's k16
//     step is, so the descriptor moves 32 bytes per step (4 steps a stage).
//     Accumulators are s32 in the D fragment layout the f32 one has (thread t, warp w = t/32, lane l holds
//     d[4j+2h+e] = D[16w + 8h + l/4][8j + 2(l%4) + e]). The epilogue converts with cvt.rn.f32.s32 (nearest
//     even, as the task requires past 2^24) and multiplies by 2^-(SA+SB), built exactly from its exponent
//     bits (SA + SB <= 100); it stores float2 pairs where N is even and Y 8-byte aligned.
//     Tails: A chunks are cp.async (zero-filled outside) when K % 16 == 0 and A is 16-byte aligned, else
//     element by element with one 16-byte shared store, then fence.proxy.async before the stage's arrival;
//     BT chunks are always whole (rows n >= N zero-filled).
// PREDICTION (made before any GPU run, not measured): 137.4 G int8 MACs x 2 at 4096^3. The tile loop moves
// the bytes hgemm's does per stage (48 KB for 128 x 256) for twice the MACs, and int8 wgmma runs at twice
// bf16's rate, so if it kept hgemm's 0.964-of-cuBLAS efficiency it would reach ~1400 TOPS; but 512 tiles of
// 128 x 256 are 3.9 waves of 132 (4 waves: 3 % lost), each tile only 32 k-stages long, so the pipeline's
// fill and the fp32 epilogue (128 KB of Y per tile, 64 MB in all, ~20 us of DRAM writes not overlapped with
// the next tile) weigh more than in hgemm. Estimate: ~110-130 us of mainloop at 1050-1250 TOPS, +10 us
// transpose, +10-15 us of exposed epilogue writes: 0.13-0.155 ms, 1.05-1.25x torch._int_mm's 0.165 ms (goal
// >= 0.9x: 0.183 ms). The least certain part is the int8 wgmma rate reached from cp.async-fed shared tiles.
// Measured (2026-12-08, an H100 80GB HBM3, bench/heavy.sh, one call): correct on every check shape (atol and
// rtol 0); 0.157 ms (877 TOPS) against torch._int_mm(A, B).float() * scale at 1.224 ms with B row-major as
// the task stores it (torch._int_mm alone 1.083 ms); B column-major, cuBLASLt's layout, not yet timed.
// compute-sanitizer memcheck, racecheck, initcheck, synccheck: clean.
// The layout helpers are __host__ __device__ above the __CUDA_ARCH__ guard, so a host program can include
// this file and check them (bench/heavy_host_check.cpp).
// Knobs: BM, BN (block tile; BN is the wgmma N), CONS (consumer warpgroups), WS, STAGES, GROUP as hgemm's.
// Accumulators per thread, BM/(64*CONS)*BN/2, are capped at 128.
// @temper task int8_gemm
// @temper flags --gpu-architecture=sm_90a
// @temper param BM 128 256 64
// @temper param BN 256 128
// @temper param CONS 2 1
// @temper param WS 1 0
// @temper param STAGES 4 3 5 6
// @temper param GROUP 8 16 4
// @temper require BM % (64 * CONS) == 0 && BM / (64 * CONS) * BN <= 256
// @temper require STAGES * (BM + BN) * 128 + 2048 <= 227 * 1024
// @temper scratch BT i8 N * ceil_div(K, 128) * 128
// @temper launch int8_transpose_b grid(ceil_div(K, 128) * 2 * ceil_div(N, 64)) block(256) args(BT, B, N, K)
// @temper launch int8_gemm_wgmma grid(ceil_div(M, BM) * ceil_div(N, BN)) block((CONS + WS) * 128) smem(STAGES * (BM + BN) * 128 + 2048) args(Y, A, BT, M, N, K, SA, SB)

#define BK 128                    /* k per stage: one 128-byte swizzle line of int8 */
#define NT ((CONS + WS) * 128)    /* threads per block */
#define LT (WS ? 128 : CONS * 128) /* threads that copy */
#define WGM (BM / (64 * CONS))    /* m64 slabs per consumer warpgroup */
#define NACC (BN / 2)             /* accumulators per thread per slab */
#define A_BYTES (BM * BK)         /* one A stage: BM lines of 128 bytes */
#define B_BYTES (BN * BK)         /* one BT stage: BN lines of 128 bytes */
#define RSTEP (LT / 8)            /* lines between a loader's chunks (8 loader threads per line) */
#define A_CPT (BM * 8 / LT)       /* A chunks per loader thread per stage */
#define B_CPT (BN * 8 / LT)       /* BT chunks per loader thread per stage */

/* Descriptor strides (bytes), both operands K-major: SBO = 8 lines of 128 bytes, LBO unused (1 encoded). */
#define K_LBO 16
#define K_SBO 1024

/* BT's row pitch: K rounded up to whole stages. */
__host__ __device__ __forceinline__ int padded_k(int K)
{
    return (K + BK - 1) / BK * BK;
}

/* Byte offset of 16-byte chunk c (0-7) of 128-byte line `line` in a 1024-aligned swizzled region. */
__host__ __device__ __forceinline__ unsigned swz128(unsigned line, unsigned c)
{
    return line * 128 + ((c ^ (line & 7)) << 4);
}

/* A wgmma shared-memory descriptor with 128-byte swizzling: start address, LBO and SBO in 16-byte units in
 * bits 0-13, 16-29 and 32-45, base offset 0 (bits 49-51), layout 1 = 128B (bits 62-63). Adding (bytes >> 4)
 * to it moves the start address while it stays below 256 KiB. */
__host__ __device__ __forceinline__ unsigned long long make_desc(unsigned addr, unsigned lbo, unsigned sbo)
{
    return (unsigned long long)((addr & 0x3FFFF) >> 4) | (unsigned long long)((lbo >> 4) & 0x3FFF) << 16 |
           (unsigned long long)((sbo >> 4) & 0x3FFF) << 32 | 1ull << 62;
}

/* Descriptors of a warpgroup's first slab (slab0) of A stage 0 at byte address sa0, and of BT stage 0 at
 * sb0, at k-step 0; then moved to stage s, slab slab0 + i, k32 step kk: slabs are 64 lines apart, a k32
 * step is 32 bytes along the line. */
__host__ __device__ __forceinline__ unsigned long long a_desc0(unsigned sa0, int slab0)
{
    return make_desc(sa0 + slab0 * 64 * 128, K_LBO, K_SBO);
}

__host__ __device__ __forceinline__ unsigned long long b_desc0(unsigned sb0)
{
    return make_desc(sb0, K_LBO, K_SBO);
}

__host__ __device__ __forceinline__ unsigned long long a_desc_at(unsigned long long da0, int s, int i, int kk)
{
    return da0 + (unsigned)((s * A_BYTES + i * 64 * 128 + kk * 32) >> 4);
}

__host__ __device__ __forceinline__ unsigned long long b_desc_at(unsigned long long db0, int s, int kk)
{
    return db0 + (unsigned)((s * B_BYTES + kk * 32) >> 4);
}

/* The chunk loader thread lt copies at step i of a stage, in either operand: line (A row or BT row) and
 * chunk column (k / 16 within the stage). */
__host__ __device__ __forceinline__ void line_chunk(int lt, int i, int *line, int *kc)
{
    *line = lt / 8 + i * RSTEP;
    *kc = lt % 8;
}

/* Where accumulator r of thread t (0-127) of a warpgroup lies in its 64 x BN slab (the m64nNk32 s32 D
 * fragment, laid out as the f32 one): r = 4j + 2h + e is row 16(t/32) + 8h + (t%32)/4, column
 * 8j + 2(t%4) + e. */
__host__ __device__ __forceinline__ void acc_coord(int t, int r, int *row, int *col)
{
    *row = 16 * (t / 32) + 8 * ((r / 2) % 2) + (t % 32) / 4;
    *col = 8 * (r / 4) + 2 * (t % 4) + r % 2;
}

/* The transpose's tile: block b handles k-rows 64 * (b % kt64) .. +63 and columns 64 * (b / kt64) .. +63,
 * kt64 = KP / 64 tiles along k (so the grid is KP / 64 * ceil(N / 64) blocks). */
__host__ __device__ __forceinline__ void transpose_tile(int b, int KP, int *k0, int *n0)
{
    const int kt64 = KP / 64;
    *k0 = 64 * (b % kt64);
    *n0 = 64 * (b / kt64);
}

/* 2^-s as a float, exactly, for 0 <= s <= 126 (a normal number: the exponent field 127 - s). */
__host__ __device__ __forceinline__ float pow2_neg(int s)
{
    union {
        unsigned u;
        float f;
    } v;
    v.u = (unsigned)(127 - s) << 23;
    return v.f;
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
__device__ __forceinline__ void fence_acc(int (&d)[WGM][NACC])
{
#pragma unroll
    for (int i = 0; i < WGM; i++)
#pragma unroll
        for (int j = 0; j < NACC; j++)
            asm volatile("" : "+r"(d[i][j])::"memory");
}

#define R4(d, i) "+r"(d[i]), "+r"(d[i + 1]), "+r"(d[i + 2]), "+r"(d[i + 3])
#define R16(d, i) R4(d, i), R4(d, i + 4), R4(d, i + 8), R4(d, i + 12)
#define R64(d, i) R16(d, i), R16(d, i + 16), R16(d, i + 32), R16(d, i + 48)

/* d (64 x 256 per warpgroup, s32) += A (64 x 32, K-major, descriptor da) * B (32 x 256, K-major, descriptor
 * db), signed 8-bit operands; scale-d 1. Integer wgmma takes no negation or transpose immediates. */
__device__ __forceinline__ void wgmma_m64n256(int (&d)[128], unsigned long long da, unsigned long long db)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %130, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n256k32.s32.s8.s8 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, "
                 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, "
                 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, "
                 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, "
                 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
                 "}, %128, %129, p;\n"
                 "}\n"
                 : R64(d, 0), R64(d, 64)
                 : "l"(da), "l"(db), "r"(1));
}

/* The same for 64 x 128 tiles. */
__device__ __forceinline__ void wgmma_m64n128(int (&d)[64], unsigned long long da, unsigned long long db)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "setp.ne.b32 p, %66, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n128k32.s32.s8.s8 {"
                 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, "
                 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, "
                 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, "
                 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
                 "}, %64, %65, p;\n"
                 "}\n"
                 : R64(d, 0)
                 : "l"(da), "l"(db), "r"(1));
}

/* Issues stage s (4 k32 steps) for this warpgroup's WGM slabs and commits it as one group. */
__device__ __forceinline__ void mma_stage(int (&acc)[WGM][NACC], unsigned long long da0, unsigned long long db0, int s)
{
    fence_acc(acc);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BK / 32; kk++)
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

/* One loader thread's share of every stage: A rows and BT rows i * RSTEP apart, chunk column kc (the
 * same in both), advanced one k-tile per load_tile. Pointers to rows outside a matrix are clamped and
 * never read. */
struct Loader {
    const signed char *a; /* A at (this thread's first row, ak) */
    const signed char *b; /* BT at (this thread's first row, bk) */
    size_t a_step;        /* bytes between a thread's A rows (RSTEP * K) */
    size_t b_step;        /* bytes between a thread's BT rows (RSTEP * KP) */
    unsigned a_rows;      /* bit i: the thread's A row i is inside the matrix */
    unsigned b_rows;      /* bit i: the thread's BT row i (a column of B) is inside */
    int ak;               /* first column of this thread's A chunk in the next tile */
    int lt;               /* loader thread index, 0 to LT-1 */
};

__device__ __forceinline__ void loader_init(Loader &ld, int lt, const signed char *A, const signed char *BT, int M,
                                            int N, int K, int m0, int n0)
{
    int r0, kc;
    line_chunk(lt, 0, &r0, &kc);
    const int KP = padded_k(K);
    ld.lt = lt;
    ld.ak = kc * 16;
    ld.a = A + (size_t)min(m0 + r0, M - 1) * K + ld.ak;
    ld.b = BT + (size_t)min(n0 + r0, N - 1) * KP + kc * 16;
    ld.a_step = (size_t)RSTEP * K;
    ld.b_step = (size_t)RSTEP * KP;
    ld.a_rows = 0;
    ld.b_rows = 0;
#pragma unroll
    for (int i = 0; i < A_CPT; i++)
        ld.a_rows |= (unsigned)(m0 + r0 + i * RSTEP < M) << i;
#pragma unroll
    for (int i = 0; i < B_CPT; i++)
        ld.b_rows |= (unsigned)(n0 + r0 + i * RSTEP < N) << i;
}

/* Fills the stage at byte addresses sa (A) and sb (BT) with the next k-tile and moves ld on. BT's chunks
 * are always whole 16-byte cp.async (its pitch KP is a multiple of 128, its base from the allocator);
 * rows past N are zero-filled. A's: VEC, 16-byte cp.async zero-filled out of range (needs K % 16 == 0 and a
 * 16-byte aligned A, so that a chunk is wholly inside or outside); otherwise byte loads and one 16-byte
 * shared store per chunk. */
template <bool VEC>
__device__ __forceinline__ void load_tile(unsigned sa, unsigned sb, Loader &ld, const signed char *A,
                                          const signed char *BT, int K)
{
    const signed char *src = ld.a;
    const bool k_ok = ld.ak < K;
#pragma unroll
    for (int i = 0; i < A_CPT; i++, src += ld.a_step) {
        int r, kc;
        line_chunk(ld.lt, i, &r, &kc);
        const unsigned dst = sa + swz128(r, kc);
        const bool row_ok = (ld.a_rows >> i) & 1;
        if (VEC) {
            const bool ok = row_ok && k_ok;
            cp_async16(dst, ok ? (const void *)src : (const void *)A, ok ? 16 : 0);
        } else {
            unsigned w[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                w[e] = 0;
#pragma unroll
                for (int b = 0; b < 4; b++) {
                    const int k = ld.ak + 4 * e + b;
                    const unsigned v = row_ok && k < K ? (unsigned)(unsigned char)src[4 * e + b] : 0u;
                    w[e] |= v << (8 * b);
                }
            }
            st_shared_v4(dst, w[0], w[1], w[2], w[3]);
        }
    }
    src = ld.b;
#pragma unroll
    for (int i = 0; i < B_CPT; i++, src += ld.b_step) {
        int r, kc;
        line_chunk(ld.lt, i, &r, &kc);
        const bool ok = (ld.b_rows >> i) & 1;
        cp_async16(sb + swz128(r, kc), ok ? (const void *)src : (const void *)BT, ok ? 16 : 0);
    }
    ld.a += BK;
    ld.ak += BK;
    ld.b += BK;
}

#if WS
/* The producer warpgroup: fills stage kt % STAGES with tile kt once the consumers have released its
 * previous tile (kt - STAGES), then arrives on the stage's "full" barrier once its copies have landed (BT's
 * chunks are always cp.async; A's st.shared, in the element path, are fenced for the async proxy first). */
template <bool VEC>
__device__ __forceinline__ void produce(unsigned sa0, unsigned sb0, unsigned bar0, const signed char *A,
                                        const signed char *BT, int M, int N, int K, int m0, int n0, int ktiles)
{
    Loader ld;
    loader_init(ld, threadIdx.x - CONS * 128, A, BT, M, N, K, m0, n0);
    int s = 0;
    unsigned phase = 0;
    for (int kt = 0; kt < ktiles; kt++) {
        if (kt >= STAGES)
            mbar_wait(bar0 + (STAGES + s) * 8, phase ^ 1); /* empty: use kt/STAGES - 1 is over */
        load_tile<VEC>(sa0 + s * A_BYTES, sb0 + s * B_BYTES, ld, A, BT, K);
        if (!VEC)
            fence_proxy_async();
        cp_async_mbar_arrive(bar0 + s * 8);
        if (++s == STAGES) {
            s = 0;
            phase ^= 1;
        }
    }
    cp_async_wait<0>(); /* leave no copy in flight behind an exited thread */
}

/* A consumer warpgroup: waits for each stage, multiplies it, and releases the previous stage once
 * this warpgroup's wgmma on it have completed. */
__device__ __forceinline__ void consume(int (&acc)[WGM][NACC], unsigned sa0, unsigned sb0, unsigned bar0, int ktiles)
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
__device__ __forceinline__ void mainloop(int (&acc)[WGM][NACC], unsigned sa0, unsigned sb0, const signed char *A,
                                         const signed char *BT, int M, int N, int K, int m0, int n0, int ktiles)
{
    const int wg = threadIdx.x / 128;
    const unsigned long long da0 = a_desc0(sa0, wg * WGM), db0 = b_desc0(sb0);
    Loader ld;
    loader_init(ld, threadIdx.x, A, BT, M, N, K, m0, n0);
    /* a group is committed even when empty, so that the group count stays in step with the tile */
#pragma unroll
    for (int t = 0; t < STAGES - 2; t++) {
        if (t < ktiles)
            load_tile<VEC>(sa0 + t * A_BYTES, sb0 + t * B_BYTES, ld, A, BT, K);
        cp_async_commit();
    }
    int s = 0, w = STAGES - 2; /* stage read, stage written next */
    for (int kt = 0; kt < ktiles; kt++) {
        cp_async_wait<STAGES - 3>(); /* this thread's copies of tile kt have landed */
        fence_proxy_async();
        __syncthreads(); /* everyone's have; every warpgroup has retired its tile kt-2 group */
        mma_stage(acc, da0, db0, s);
        if (kt + STAGES - 2 < ktiles)
            load_tile<VEC>(sa0 + w * A_BYTES, sb0 + w * B_BYTES, ld, A, BT, K);
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

/* The block's tile origin: grouped rasterisation, GROUP block-rows walked column by column. */
__device__ __forceinline__ void block_origin(int M, int N, int *m0, int *n0)
{
    const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN;
    const int pid = blockIdx.x;
    const int per_group = GROUP * grid_n;
    const int first_m = (pid / per_group) * GROUP;
    const int group_m = min(grid_m - first_m, GROUP);
    *m0 = (first_m + (pid % per_group) % group_m) * BM;
    *n0 = ((pid % per_group) / group_m) * BN;
}

/* acc = A[m0.., :] * B[:, n0..] over the whole K for the consumer warpgroups, B read from BT. Returns true in
 * the producer warpgroup (WS = 1), which has no accumulators and must leave the kernel: the caller returns at
 * once (testing threadIdx.x in the caller instead costs spills, as gemm_bias_gelu/wgmma.cu found). */
__device__ __forceinline__ bool gemm_mainloop(int (&acc)[WGM][NACC], unsigned sa0, unsigned sb0, const signed char *A,
                                              const signed char *BT, int M, int N, int K, int m0, int n0)
{
    const int ktiles = (K + BK - 1) / BK;
    const bool vec = (K % 16 == 0) && (((size_t)A & 15) == 0);
#pragma unroll
    for (int i = 0; i < WGM; i++)
#pragma unroll
        for (int j = 0; j < NACC; j++)
            acc[i][j] = 0;
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
            produce<true>(sa0, sb0, bar0, A, BT, M, N, K, m0, n0, ktiles);
        else
            produce<false>(sa0, sb0, bar0, A, BT, M, N, K, m0, n0, ktiles);
        return true;
    }
    consume(acc, sa0, sb0, bar0, ktiles);
#else
    if (vec)
        mainloop<true>(acc, sa0, sb0, A, BT, M, N, K, m0, n0, ktiles);
    else
        mainloop<false>(acc, sa0, sb0, A, BT, M, N, K, m0, n0, ktiles);
#endif
    return false;
}

/* BT[n][k] = B[k][n] for k < K, 0 for K <= k < KP: one 64 x 64 tile per block (transpose_tile). */
extern "C" __global__ void __launch_bounds__(256) int8_transpose_b(signed char *BT, const signed char *B, int N, int K)
{
    __shared__ unsigned char tile[64][68]; /* [k][n]; 68: a warp reading 32 k of one n hits 32 banks */
    const int KP = padded_k(K);
    int k0, n0;
    transpose_tile(blockIdx.x, KP, &k0, &n0);
    for (int idx = threadIdx.x; idx < 64 * 64; idx += 256) {
        const int k = idx / 64, n = idx % 64; /* consecutive threads read along a row of B */
        const bool in = k0 + k < K && n0 + n < N;
        tile[k][n] = in ? (unsigned char)B[(size_t)(k0 + k) * N + n0 + n] : 0;
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < 64 * 64; idx += 256) {
        const int n = idx / 64, k = idx % 64; /* consecutive threads write along a row of BT */
        if (n0 + n < N)
            BT[(size_t)(n0 + n) * KP + k0 + k] = (signed char)tile[k][n];
    }
}

/* Y = fp32(A BT^T) * 2^-(SA+SB). */
extern "C" __global__ void __launch_bounds__(NT, 1)
    int8_gemm_wgmma(float *Y, const signed char *A, const signed char *BT, int M, int N, int K, int SA, int SB)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const unsigned sa0 = ((unsigned)__cvta_generic_to_shared(smem_raw) + 1023u) & ~1023u; /* A stages */
    const unsigned sb0 = sa0 + STAGES * A_BYTES;                                           /* BT stages */

    int m0, n0;
    block_origin(M, N, &m0, &n0);
    int acc[WGM][NACC];
    if (gemm_mainloop(acc, sa0, sb0, A, BT, M, N, K, m0, n0))
        return;

    /* epilogue: accumulators 4j+2h and 4j+2h+1 of slab i are two neighbours of one row (acc_coord) */
    const float scale = pow2_neg(SA + SB);
    const int t = threadIdx.x % 128, wg = threadIdx.x / 128;
    const bool pair = (N % 2 == 0) && (((size_t)Y & 7) == 0);
    int r0, c0;
    acc_coord(t, 0, &r0, &c0);
#pragma unroll
    for (int i = 0; i < WGM; i++) {
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int row = m0 + (wg * WGM + i) * 64 + r0 + 8 * h;
            if (row >= M)
                continue;
            float *yrow = Y + (size_t)row * N;
#pragma unroll
            for (int j = 0; j < BN / 8; j++) {
                const int col = n0 + c0 + 8 * j;
                if (col >= N)
                    continue;
                /* __int2float_rn: nearest even, exact below 2^24; the power of two scales exactly */
                const float v0 = __int2float_rn(acc[i][4 * j + 2 * h]) * scale;
                const float v1 = __int2float_rn(acc[i][4 * j + 2 * h + 1]) * scale;
                if (pair) { /* N even: col even, so col + 1 < N too, and the pair is 8-byte aligned */
                    *(float2 *)(yrow + col) = make_float2(v0, v1);
                } else {
                    yrow[col] = v0;
                    if (col + 1 < N)
                        yrow[col + 1] = v1;
                }
            }
        }
    }
}

#endif /* __CUDA_ARCH__ */
