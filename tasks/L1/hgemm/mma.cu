// A tunable tensor-core bf16 GEMM, C = A*B (row-major, fp32 accumulation, bf16 out), for sm_80+.
// A block computes a BM x BN tile of C with WM x WN warps; each warp owns a (BM/WM) x (BN/WN)
// sub-tile built from mma.sync.m16n8k16 (bf16 in, f32 accumulators). K advances BK at a time
// through a STAGES-deep ring of shared-memory tiles filled by cp.async (16-byte, zero-filling
// out-of-range chunks), so STAGES-1 tiles are in flight while one is consumed. A fragments are
// read with ldmatrix.x4, B fragments (B is K x N row-major, i.e. "col" for mma) with
// ldmatrix.x4.trans. Shared tiles are stored without padding, their 16-byte chunks XOR-swizzled
// so that both the cp.async writes and every ldmatrix phase (8 rows x 16 bytes) hit 32
// distinct banks. Blocks are rasterised in groups of GROUP block-rows so that blocks running
// together share A and B panels in L2.
// Tails: when K % 8 or N % 8 is non-zero (or a base pointer is not 16-byte aligned), rows do not
// start on 16-byte boundaries and cp.async cannot be used; the same pipeline then loads each chunk
// element by element (bounds-checked, zeros outside) and stores it with one 16-byte shared store.
// Stores are bounds-checked; two bf16 are written as one 32-bit word when N is even.
// Fragments are double-buffered in registers (step kk+1 is read while step kk multiplies).
// __launch_bounds__(threads) sets the register limit, so temper's --maxrregcount settings leave
// this kernel unchanged (up to 255 registers; the 64x64 warp tiles hold 128 accumulators each).
// Measured on an H200 (8192^3, `temper eval`, interleaved with cuBLAS): 447 TFLOP/s at
// BM=128 BN=256 BK=64 WM=2 WN=4 STAGES=4, 0.58 of cuBLAS (0.50 in a tune's re-timing): mma.sync
// runs Hopper's tensor cores well below their wgmma (sm_90a) rate; wgmma.cu is the fast path.
// @temper task hgemm
// @temper param BM 128 64 256
// @temper param BN 256 128 64
// @temper param BK 64 32
// @temper param WM 2 1 4
// @temper param WN 4 2 1
// @temper param STAGES 4 3 2
// @temper param GROUP 8 1 16
// @temper require BM % (16 * WM) == 0 && BN % (16 * WN) == 0
// @temper require WM * WN >= 4 && WM * WN <= 8
// @temper require (BM / WM) * (BN / WN) <= 4096 && BM / WM >= 32 && BN / WN >= 32
// @temper require (BM * BK / 8) % (WM * WN * 32) == 0 && (BK * BN / 8) % (WM * WN * 32) == 0
// @temper require STAGES * (BM + BN) * BK * 2 <= 227 * 1024
// @temper launch hgemm_mma grid(ceil_div(M, BM) * ceil_div(N, BN)) block(WM * WN * 32) smem(STAGES * (BM + BN) * BK * 2) args(C, A, B, M, N, K)

#define NT (WM * WN * 32)    /* threads per block */
#define WTM (BM / WM)        /* warp tile rows */
#define WTN (BN / WN)        /* warp tile columns */
#define MI (WTM / 16)        /* m16 fragments per warp */
#define NI (WTN / 8)         /* n8 fragments per warp */
#define A_CPR (BK / 8)       /* 16-byte chunks per row of an A tile (BM x BK) */
#define B_CPR (BN / 8)       /* 16-byte chunks per row of a B tile (BK x BN) */
#define A_TILE (BM * BK)     /* elements of one A stage */
#define B_TILE (BK * BN)     /* elements of one B stage */
#define A_CHUNKS (BM * BK / 8)
#define B_CHUNKS (BK * BN / 8)

typedef unsigned short bf16_t;

/* Element offset of chunk `chunk` (8 elements) of row `row` in a swizzled tile with CPR chunks per
 * row. Rows of >= 8 chunks (128 bytes or more): the chunk's low 3 bits are XORed with row % 8, so
 * 8 consecutive rows at the same logical chunk sit in 8 different 16-byte bank groups. Rows of 4
 * chunks (64 bytes, two rows per 128-byte bank line): the chunk is XORed with (row / 2) % 4, and
 * row % 2 picks the half line, which again spreads 8 consecutive rows over all 8 groups. */
template <int CPR>
__device__ __forceinline__ int swz(int row, int chunk)
{
    int pc;
    if (CPR >= 8)
        pc = (chunk & ~7) | ((chunk ^ row) & 7);
    else
        pc = chunk ^ ((row >> 1) & 3);
    return (row * CPR + pc) * 8;
}

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

__device__ __forceinline__ void ldmatrix_x4(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

__device__ __forceinline__ void ldmatrix_x4_trans(unsigned (&r)[4], unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr)
                 : "memory");
}

__device__ __forceinline__ void mma_bf16(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
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

/* Per-thread state for filling stages. A thread's chunks of an A tile all lie in one chunk column
 * (tid % A_CPR), rows tid / A_CPR + i * (NT / A_CPR); of a B tile in chunk column tid % B_CPR,
 * rows tid / B_CPR + i * (NT / B_CPR). Global addresses advance by BK columns (A) or BK rows (B)
 * per tile. */
struct Loader {
    const bf16_t *a, *b;   /* this thread's first chunk of the current A and B tiles */
    const bf16_t *a0, *b0; /* the matrices (the address given to zero-filling copies) */
    int a_row0, a_k, b_row0, b_n;
};

/* Loads tile `kt` (columns k0 = kt*BK.. of A's rows m0.., rows k0.. of B's columns n0..) into
 * stage `stage`. VEC: cp.async 16-byte chunks (needs K % 8 == 0, N % 8 == 0 and 16-byte aligned
 * bases, so that a chunk is wholly inside or wholly outside the matrix; outside ones are
 * zero-filled); otherwise bounds-checked element loads and one 16-byte shared store per chunk. */
template <bool VEC>
__device__ __forceinline__ void load_stage(bf16_t *smem, unsigned smem_u32, int stage, const Loader &ld,
                                           int M, int N, int K, int k0)
{
    const int a_off = stage * A_TILE, b_off = STAGES * A_TILE + stage * B_TILE;
    const int a_ch = threadIdx.x % A_CPR, b_ch = threadIdx.x % B_CPR;
#pragma unroll
    for (int i = 0; i < A_CHUNKS / NT; i++) {
        int r = ld.a_row0 + i * (NT / A_CPR); /* row in the tile */
        int off = a_off + swz<A_CPR>(r, a_ch);
        const bf16_t *src = ld.a + (size_t)i * (NT / A_CPR) * K;
        bool row_ok = r < M; /* M here is the number of rows left from m0 */
        if (VEC) {
            bool ok = row_ok && ld.a_k + k0 < K;
            cp_async16(smem_u32 + off * 2, ok ? src : ld.a0, ok ? 16 : 0);
        } else {
            unsigned w[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int k = ld.a_k + k0 + 2 * e;
                unsigned lo = row_ok && k < K ? src[2 * e] : 0u;
                unsigned hi = row_ok && k + 1 < K ? src[2 * e + 1] : 0u;
                w[e] = lo | (hi << 16);
            }
            *(uint4 *)(smem + off) = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
#pragma unroll
    for (int i = 0; i < B_CHUNKS / NT; i++) {
        int r = ld.b_row0 + i * (NT / B_CPR);
        int off = b_off + swz<B_CPR>(r, b_ch);
        const bf16_t *src = ld.b + (size_t)i * (NT / B_CPR) * N;
        bool row_ok = k0 + r < K;
        if (VEC) {
            bool ok = row_ok && ld.b_n < N;
            cp_async16(smem_u32 + off * 2, ok ? src : ld.b0, ok ? 16 : 0);
        } else {
            unsigned w[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int n = ld.b_n + 2 * e;
                unsigned lo = row_ok && n < N ? src[2 * e] : 0u;
                unsigned hi = row_ok && n + 1 < N ? src[2 * e + 1] : 0u;
                w[e] = lo | (hi << 16);
            }
            *(uint4 *)(smem + off) = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
}

/* Reads the A and B fragments of k-step kk (16 deep) of the stage at sa / sb (shared addresses). */
__device__ __forceinline__ void load_frags(unsigned (&af)[MI][4], unsigned (&bf)[NI / 2][4], unsigned sa,
                                           unsigned sb, const int (&a_lane)[BK / 16], const int (&b_lane)[NI / 2],
                                           int kk)
{
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
        ldmatrix_x4(af[mi], sa + a_lane[kk] + mi * 16 * BK * 2);
#pragma unroll
    for (int nj = 0; nj < NI / 2; nj++)
        ldmatrix_x4_trans(bf[nj], sb + b_lane[nj] + kk * 16 * BN * 2);
}

/* The main loop: acc += A[m0:m0+BM, :] * B[:, n0:n0+BN] for this warp's sub-tile. Fragments are
 * double-buffered in registers: those of k-step kk+1 (or of the next tile's first step) are read
 * while the mma of step kk run (the 16-byte cp.async path only). The barrier for tile kt+1 sits before the last step of tile kt,
 * once every warp has read all of tile kt's fragments; right after it, the slot of tile kt is
 * free and is refilled with tile kt+STAGES at the first step of the next tile. */
__device__ __forceinline__ void mainloop_pipelined(float (&acc)[MI][NI][4], bf16_t *smem, const bf16_t *A,
                                                   const bf16_t *B, int M, int N, int K, int m0, int n0)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WN, wn = warp % WN;
    const unsigned smem_u32 = (unsigned)__cvta_generic_to_shared(smem);
    const int ktiles = (K + BK - 1) / BK;

    Loader ld;
    ld.a_row0 = tid / A_CPR;
    ld.a_k = (tid % A_CPR) * 8;
    ld.b_row0 = tid / B_CPR;
    ld.b_n = n0 + (tid % B_CPR) * 8;
    ld.a0 = A;
    ld.b0 = B;
    ld.a = A + (size_t)min(m0 + ld.a_row0, M - 1) * K + ld.a_k;
    ld.b = B + (size_t)min(ld.b_row0, K - 1) * N + min(ld.b_n, N - 1);
    const int rows_left = M - m0;
    const size_t b_step = (size_t)BK * N;

    /* prologue: STAGES-1 tiles in flight (a group is committed even when empty, so that the group
     * count stays in step with the tile index) */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ktiles)
            load_stage<true>(smem, smem_u32, s, ld, rows_left, N, K, s * BK);
        cp_async_commit();
        ld.a += BK;
        ld.b += b_step;
    }

    /* per-lane ldmatrix byte offsets: lanes 0-15 address rows 0-15 of a 16-row block at chunk 0,
     * lanes 16-31 the same rows at chunk 1 (k or n + 8) */
    const int lrow = lane & 15, lch = lane >> 4;
    int a_lane[BK / 16], b_lane[NI / 2];
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++)
        a_lane[kk] = swz<A_CPR>(wm * WTM + lrow, kk * 2 + lch) * 2;
#pragma unroll
    for (int nj = 0; nj < NI / 2; nj++)
        b_lane[nj] = swz<B_CPR>(lrow, (wn * WTN + nj * 16) / 8 + lch) * 2;

    cp_async_wait<STAGES - 2>();
    __syncthreads();

    unsigned af[2][MI][4], bf[2][NI / 2][4];
    int rs = 0, ws = STAGES - 1; /* stage read, stage written next */
    unsigned sa = smem_u32, sb = smem_u32 + STAGES * A_TILE * 2;
    load_frags(af[0], bf[0], sa, sb, a_lane, b_lane, 0);

    for (int kt = 0; kt < ktiles; kt++) {
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            if (kk == BK / 16 - 1) { /* all of tile kt's fragments are read: move to tile kt+1 */
                cp_async_wait<STAGES - 2>();
                __syncthreads();
                rs = rs == STAGES - 1 ? 0 : rs + 1;
                sa = smem_u32 + rs * A_TILE * 2;
                sb = smem_u32 + (STAGES * A_TILE + rs * B_TILE) * 2;
            }
            load_frags(af[(kk + 1) % 2], bf[(kk + 1) % 2], sa, sb, a_lane, b_lane, (kk + 1) % (BK / 16));
            if (kk == 0) { /* refill the slot that tile kt-1 used with tile kt+STAGES-1 */
                if (kt + STAGES - 1 < ktiles)
                    load_stage<true>(smem, smem_u32, ws, ld, rows_left, N, K, (kt + STAGES - 1) * BK);
                cp_async_commit();
                ld.a += BK;
                ld.b += b_step;
                ws = ws == STAGES - 1 ? 0 : ws + 1;
            }
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++)
                    mma_bf16(acc[mi][ni], af[kk % 2][mi], bf[kk % 2][ni / 2][(ni % 2) * 2],
                             bf[kk % 2][ni / 2][(ni % 2) * 2 + 1]);
        }
    }
    cp_async_wait<0>();
}

/* The same pipeline for the element-wise (unaligned) path, without the register double-buffering
 * of fragments: its loads need registers of their own, and it only serves shapes whose rows are
 * not 16-byte aligned. */
__device__ __forceinline__ void mainloop_simple(float (&acc)[MI][NI][4], bf16_t *smem, const bf16_t *A,
                                                const bf16_t *B, int M, int N, int K, int m0, int n0)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WN, wn = warp % WN;
    const unsigned smem_u32 = (unsigned)__cvta_generic_to_shared(smem);
    const int ktiles = (K + BK - 1) / BK;

    Loader ld;
    ld.a0 = A;
    ld.b0 = B;
    ld.a_row0 = tid / A_CPR;
    ld.a_k = (tid % A_CPR) * 8;
    ld.b_row0 = tid / B_CPR;
    ld.b_n = n0 + (tid % B_CPR) * 8;
    ld.a = A + (size_t)min(m0 + ld.a_row0, M - 1) * K + ld.a_k;
    ld.b = B + (size_t)min(ld.b_row0, K - 1) * N + min(ld.b_n, N - 1);
    const int rows_left = M - m0;
    const size_t b_step = (size_t)BK * N;
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ktiles)
            load_stage<false>(smem, smem_u32, s, ld, rows_left, N, K, s * BK);
        ld.a += BK;
        ld.b += b_step;
    }
    const int lrow = lane & 15, lch = lane >> 4;
    int a_lane[BK / 16], b_lane[NI / 2];
#pragma unroll
    for (int kk = 0; kk < BK / 16; kk++)
        a_lane[kk] = swz<A_CPR>(wm * WTM + lrow, kk * 2 + lch) * 2;
#pragma unroll
    for (int nj = 0; nj < NI / 2; nj++)
        b_lane[nj] = swz<B_CPR>(lrow, (wn * WTN + nj * 16) / 8 + lch) * 2;
    for (int kt = 0; kt < ktiles; kt++) {
        __syncthreads(); /* tile kt is stored; everyone is done with tile kt-1 */
        if (kt + STAGES - 1 < ktiles)
            load_stage<false>(smem, smem_u32, (kt + STAGES - 1) % STAGES, ld, rows_left, N, K, (kt + STAGES - 1) * BK);
        ld.a += BK;
        ld.b += b_step;
        const int stage = kt % STAGES;
        const unsigned sa = smem_u32 + stage * A_TILE * 2, sb = smem_u32 + (STAGES * A_TILE + stage * B_TILE) * 2;
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            unsigned af[MI][4], bf[NI / 2][4];
            load_frags(af, bf, sa, sb, a_lane, b_lane, kk);
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++)
                    mma_bf16(acc[mi][ni], af[mi], bf[ni / 2][(ni % 2) * 2], bf[ni / 2][(ni % 2) * 2 + 1]);
        }
    }
}

extern "C" __global__ void __launch_bounds__(NT) hgemm_mma(bf16_t *C, const bf16_t *A, const bf16_t *B, int M, int N,
                                                           int K)
{
    extern __shared__ __align__(128) unsigned char smem_raw[];
    bf16_t *smem = (bf16_t *)smem_raw;

    /* grouped rasterisation: GROUP block-rows are walked column by column */
    const int grid_m = (M + BM - 1) / BM, grid_n = (N + BN - 1) / BN;
    const int pid = blockIdx.x;
    const int per_group = GROUP * grid_n;
    const int first_m = (pid / per_group) * GROUP;
    const int group_m = min(grid_m - first_m, GROUP);
    const int pid_m = first_m + (pid % per_group) % group_m;
    const int pid_n = (pid % per_group) / group_m;
    const int m0 = pid_m * BM, n0 = pid_n * BN;

    float acc[MI][NI][4];
#pragma unroll
    for (int mi = 0; mi < MI; mi++)
#pragma unroll
        for (int ni = 0; ni < NI; ni++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[mi][ni][e] = 0.0f;

    bool vec = (K % 8 == 0) && (N % 8 == 0) && (((size_t)A & 15) == 0) && (((size_t)B & 15) == 0);
    if (vec)
        mainloop_pipelined(acc, smem, A, B, M, N, K, m0, n0);
    else
        mainloop_simple(acc, smem, A, B, M, N, K, m0, n0);

    /* epilogue: accumulator e of fragment (mi, ni) is row lane/4 (+8 for e >= 2), columns
     * 2*(lane%4) and +1 of that 16 x 8 fragment */
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int wm = warp / WN, wn = warp % WN;
    const bool pair = (N % 2 == 0) && (((size_t)C & 3) == 0);
#pragma unroll
    for (int mi = 0; mi < MI; mi++) {
#pragma unroll
        for (int ni = 0; ni < NI; ni++) {
            int col = n0 + wn * WTN + ni * 8 + (lane & 3) * 2;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int row = m0 + wm * WTM + mi * 16 + (lane >> 2) + h * 8;
                if (row >= M || col >= N)
                    continue;
                bf16_t *dst = C + (size_t)row * N + col;
                float v0 = acc[mi][ni][2 * h], v1 = acc[mi][ni][2 * h + 1];
                if (pair) { /* N even: col even, so col + 1 < N too, and the word is aligned */
                    *(unsigned *)dst = pack_bf16x2(v0, v1);
                } else {
                    dst[0] = to_bf16(v0);
                    if (col + 1 < N)
                        dst[1] = to_bf16(v1);
                }
            }
        }
    }
}
