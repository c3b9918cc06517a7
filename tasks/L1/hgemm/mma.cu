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
// @temper task hgemm
// @temper param BM 128 64 256
// @temper param BN 256 128 64
// @temper param BK 32 64
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

/* Loads the A tile (rows m0.., columns k0..) and the B tile (rows k0.., columns n0..) into one
 * stage. VEC: cp.async 16-byte chunks (needs K % 8 == 0, N % 8 == 0 and 16-byte aligned bases,
 * so that a chunk is either wholly inside or wholly outside the matrix); otherwise bounds-checked
 * element loads and a 16-byte shared store per chunk. */
template <bool VEC>
__device__ __forceinline__ void load_stage(bf16_t *smem, unsigned smem_u32, int stage, const bf16_t *A,
                                           const bf16_t *B, int M, int N, int K, int m0, int n0, int k0, int tid)
{
    const int a_off = stage * A_TILE, b_off = STAGES * A_TILE + stage * B_TILE;
#pragma unroll
    for (int i = 0; i < A_CHUNKS / NT; i++) {
        int c = tid + i * NT;
        int r = c / A_CPR, ch = c % A_CPR;
        int gr = m0 + r, gk = k0 + ch * 8;
        int off = a_off + swz<A_CPR>(r, ch);
        if (VEC) {
            bool ok = gr < M && gk < K;
            const bf16_t *src = ok ? A + (size_t)gr * K + gk : A;
            cp_async16(smem_u32 + off * 2, src, ok ? 16 : 0);
        } else {
            unsigned w[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                unsigned lo = 0, hi = 0;
                if (gr < M && gk + 2 * e < K)
                    lo = A[(size_t)gr * K + gk + 2 * e];
                if (gr < M && gk + 2 * e + 1 < K)
                    hi = A[(size_t)gr * K + gk + 2 * e + 1];
                w[e] = lo | (hi << 16);
            }
            *(uint4 *)(smem + off) = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
#pragma unroll
    for (int i = 0; i < B_CHUNKS / NT; i++) {
        int c = tid + i * NT;
        int r = c / B_CPR, ch = c % B_CPR;
        int gk = k0 + r, gn = n0 + ch * 8;
        int off = b_off + swz<B_CPR>(r, ch);
        if (VEC) {
            bool ok = gk < K && gn < N;
            const bf16_t *src = ok ? B + (size_t)gk * N + gn : B;
            cp_async16(smem_u32 + off * 2, src, ok ? 16 : 0);
        } else {
            unsigned w[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                unsigned lo = 0, hi = 0;
                if (gk < K && gn + 2 * e < N)
                    lo = B[(size_t)gk * N + gn + 2 * e];
                if (gk < K && gn + 2 * e + 1 < N)
                    hi = B[(size_t)gk * N + gn + 2 * e + 1];
                w[e] = lo | (hi << 16);
            }
            *(uint4 *)(smem + off) = make_uint4(w[0], w[1], w[2], w[3]);
        }
    }
}

/* The main loop: acc += A[m0:m0+BM, :] * B[:, n0:n0+BN] for this warp's sub-tile. */
template <bool VEC>
__device__ __forceinline__ void mainloop(float (&acc)[MI][NI][4], bf16_t *smem, const bf16_t *A, const bf16_t *B,
                                         int M, int N, int K, int m0, int n0)
{
    const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
    const int wm = warp / WN, wn = warp % WN;
    const unsigned smem_u32 = (unsigned)__cvta_generic_to_shared(smem);
    const int ktiles = (K + BK - 1) / BK;

    /* prologue: STAGES-1 tiles in flight (a group is committed even when empty, so that the
     * group count stays in step with the tile index) */
#pragma unroll
    for (int s = 0; s < STAGES - 1; s++) {
        if (s < ktiles)
            load_stage<VEC>(smem, smem_u32, s, A, B, M, N, K, m0, n0, s * BK, tid);
        cp_async_commit();
    }

    /* per-lane ldmatrix coordinates: lanes 0-15 address rows 0-15 of a 16-row block at chunk 0,
     * lanes 16-31 the same rows at chunk 1 (k or n + 8) */
    const int lrow = lane & 15, lch = lane >> 4;

    for (int kt = 0; kt < ktiles; kt++) {
        cp_async_wait<STAGES - 2>(); /* tile kt has landed (this thread's part) */
        __syncthreads();             /* ... everyone's part; and everyone is done with tile kt-1 */
        {
            int nk = kt + STAGES - 1; /* refill the slot that tile kt-1 used */
            if (nk < ktiles)
                load_stage<VEC>(smem, smem_u32, nk % STAGES, A, B, M, N, K, m0, n0, nk * BK, tid);
            cp_async_commit();
        }
        const int stage = kt % STAGES;
        const unsigned sa = smem_u32 + (stage * A_TILE) * 2;
        const unsigned sb = smem_u32 + (STAGES * A_TILE + stage * B_TILE) * 2;
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {
            unsigned af[MI][4], bfr[NI / 2][4];
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
                ldmatrix_x4(af[mi], sa + swz<A_CPR>(wm * WTM + mi * 16 + lrow, kk * 2 + lch) * 2);
#pragma unroll
            for (int nj = 0; nj < NI / 2; nj++)
                ldmatrix_x4_trans(bfr[nj], sb + swz<B_CPR>(kk * 16 + lrow, (wn * WTN + nj * 16) / 8 + lch) * 2);
#pragma unroll
            for (int mi = 0; mi < MI; mi++)
#pragma unroll
                for (int ni = 0; ni < NI; ni++)
                    mma_bf16(acc[mi][ni], af[mi], bfr[ni / 2][(ni % 2) * 2], bfr[ni / 2][(ni % 2) * 2 + 1]);
        }
    }
    cp_async_wait<0>();
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
        mainloop<true>(acc, smem, A, B, M, N, K, m0, n0);
    else
        mainloop<false>(acc, smem, A, B, M, N, K, m0, n0);

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
