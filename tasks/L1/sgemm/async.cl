// A tunable fp32 SGEMM (row-major C = A B), the OpenCL twin of async.cu: the same block tiles,
// ring of STAGES local-memory stages, transposed A tile, warp tiles and block order, with the
// copies done by the work-items themselves (OpenCL has no cp.async) so that the index arithmetic of
// the CUDA kernel can be checked on any OpenCL device. Each work-group computes a BM x BN tile of
// C, walking K in steps of BK; tile kt + STAGES - 1 is written into the stage that tile kt - 1 was
// read from, after the one barrier of step kt. A is stored transposed (As[k][m], rows padded by 4
// floats): work-item t copies 8-wide k chunks of rows t/8 + multiples of NT/8, column t%8; B is
// copied as is (Bs[k][n]) as float4s when N is a multiple of 4, as scalars otherwise. Elements
// outside A or B are stored as zeros, so any M, N, K >= 1 works. Of each 32 consecutive
// work-items ("a warp"), LX lie along N and 32/LX along M, owning a (TM * 32/LX) x (TN * LX) tile
// of C; a work-item owns TM x TN of it as (TM/4) x (TN/4) sub-tiles of 4x4 spread 4 * 32/LX rows
// and 4 * LX columns apart. Work-groups are numbered along N within groups of GROUP block rows.
// On PoCL (2026-12-01) 110 knob settings drawn at random, 60 from a wider space and 50 from
// async.cu's, passed every check shape (two with a launch limit over 5 s on the busy CPU; one of
// them had crashed PoCL before load_tile stopped forming pointers past B); tests/sgemm_async_test.sh
// keeps six of them.
// @temper task sgemm
// @temper param BM 128 64 256
// @temper param BN 128 64 256
// @temper param BK 8 16 32
// @temper param TM 8 4 16
// @temper param TN 8 4 16
// @temper param LX 8 4 16
// @temper param STAGES 2 3 4
// @temper param GROUP 8 1 3
// @temper require (BM / TM) * (BN / TN) % 32 == 0 && (BM / TM) * (BN / TN) >= 32 && (BM / TM) * (BN / TN) <= 512
// @temper require BM % (TM * (32 / LX)) == 0 && BN % (TN * LX) == 0
// @temper require TM * TN <= 128
// @temper require BM % ((BM / TM) * (BN / TN) / 8) == 0 && BM * BK % ((BM / TM) * (BN / TN)) == 0
// @temper require STAGES * BK * (BM + 4 + BN) * 4 <= 232448
// @temper launch sgemm_async grid(ceil_div(N, BN) * ceil_div(M, BM)) block((BM / TM) * (BN / TN)) args(C, A, B, M, N, K)

#define NT ((BM / TM) * (BN / TN))       /* work-items per group */
#define LY (32 / LX)                     /* work-items of a warp along M */
#define WTM (TM * LY)                    /* rows of a warp tile */
#define WTN (TN * LX)                    /* columns of a warp tile */
#define WARPS_N (BN / WTN)               /* warps along N */
#define AS_LD (BM + 4)                   /* leading dimension of the transposed A tile */
#define STAGE_FLOATS (BK * (AS_LD + BN)) /* floats in one stage of the ring */
#define A_IT (BM * BK / NT)              /* elements of A per work-item per tile */
#define A_ROW_STEP (NT / 8)              /* rows between a work-item's elements of A in one k chunk */
#define A_ROW_REPS (BM / A_ROW_STEP)     /* elements per 8-wide k chunk */
#define B_F4 (BK * BN / 4)               /* float4s in a B tile */
#define B_IT ((B_F4 + NT - 1) / NT)      /* float4s of B per work-item per tile (the last may be none) */

/* Copies k-tile k0 of A and B into stage st, as async.cu's load_tile issues its copies: element i
 * of A is row t/8 + (i % A_ROW_REPS) * A_ROW_STEP, column t%8 + (i / A_ROW_REPS) * 8 of the tile,
 * stored at As[column][row]; float4 f = t + j * NT of B is row f / (BN/4), columns 4 (f % (BN/4))
 * .. +3. Elements outside A or B are zeros; no pointer past either matrix is formed (PoCL's optimiser
 * turned such a pointer, formed but read only under a bounds test, into a crash at M=3 N=65537 K=2
 * with BM=256 BN=64 BK=16 STAGES=4). */
static void load_tile(__local float *st, __global const float *A, __global const float *B, int M, int N, int K,
                      int m0, int n0, int k0, int vec, int t)
{
    const int kk = t % 8, r0 = t / 8;
    for (int i = 0; i < A_IT; i++) {
        const int dr = (i % A_ROW_REPS) * A_ROW_STEP, dk = (i / A_ROW_REPS) * 8;
        const int r = m0 + r0 + dr, k = k0 + kk + dk;
        float v = 0.0f;
        if (r < M && k < K)
            v = A[(size_t)r * K + k];
        st[(kk + dk) * AS_LD + r0 + dr] = v;
    }
    __local float *Bs = st + BK * AS_LD;
    for (int j = 0; j < B_IT; j++) {
        const int f = t + j * NT;
        if (B_F4 % NT == 0 || f < B_F4) {
            const int k = f / (BN / 4), c = (f % (BN / 4)) * 4;
            const size_t b = (size_t)(k0 + k) * N + n0 + c;
            if (vec && k0 + k < K && n0 + c < N) {
                vstore4(vload4(0, B + b), 0, Bs + k * BN + c);
            } else {
                for (int e = 0; e < 4; e++) {
                    float v = 0.0f;
                    if (k0 + k < K && n0 + c + e < N)
                        v = B[b + e];
                    Bs[k * BN + c + e] = v;
                }
            }
        }
    }
}

/* acc += the work-item's share of one stage's product; ao and bo are its first row of the A tile
 * and first column of the B tile. */
static void multiply(float acc[TM][TN], __local const float *st, int ao, int bo)
{
    __local const float *As = st, *Bs = st + BK * AS_LD;
    for (int k = 0; k < BK; k++) {
        float a[TM], b[TN];
        for (int i = 0; i < TM / 4; i++) {
            float4 v = vload4(0, As + k * AS_LD + ao + i * LY * 4);
            a[4 * i] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
        }
        for (int j = 0; j < TN / 4; j++) {
            float4 v = vload4(0, Bs + k * BN + bo + j * LX * 4);
            b[4 * j] = v.x, b[4 * j + 1] = v.y, b[4 * j + 2] = v.z, b[4 * j + 3] = v.w;
        }
        for (int i = 0; i < TM; i++)
            for (int j = 0; j < TN; j++)
                acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
}

__kernel __attribute__((reqd_work_group_size(NT, 1, 1))) void
sgemm_async(__global float *C, __global const float *A, __global const float *B, int M, int N, int K)
{
    __local float smem[STAGES * STAGE_FLOATS];
    /* Group order: GROUP block rows at a time, along N within the group. */
    const int tiles_n = (N + BN - 1) / BN, tiles_m = (M + BM - 1) / BM;
    const int per_group = GROUP * tiles_n, group = get_group_id(0) / per_group, first = group * GROUP;
    const int rows = min(tiles_m - first, GROUP), in_group = get_group_id(0) % per_group;
    const int m0 = (first + in_group % rows) * BM, n0 = (in_group / rows) * BN;

    const int t = get_local_id(0), warp = t / 32, lane = t % 32;
    const int ao = (warp / WARPS_N) * WTM + (lane / LX) * 4;
    const int bo = (warp % WARPS_N) * WTN + (lane % LX) * 4;
    const int vec = N % 4 == 0;

    float acc[TM][TN];
    for (int i = 0; i < TM; i++)
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;

    const int KT = (K + BK - 1) / BK;
    for (int s = 0; s < STAGES - 1; s++)
        if (s < KT)
            load_tile(smem + s * STAGE_FLOATS, A, B, M, N, K, m0, n0, s * BK, vec, t);
    int rs = 0, ws = STAGES - 1; /* the stage read next and the stage written next */
    for (int kt = 0; kt < KT; kt++) {
        barrier(CLK_LOCAL_MEM_FENCE); /* tile kt is in stage rs; nobody reads stage ws (tile kt - 1) any more */
        if (kt + STAGES - 1 < KT)
            load_tile(smem + ws * STAGE_FLOATS, A, B, M, N, K, m0, n0, (kt + STAGES - 1) * BK, vec, t);
        multiply(acc, smem + rs * STAGE_FLOATS, ao, bo);
        rs = rs + 1 == STAGES ? 0 : rs + 1;
        ws = ws + 1 == STAGES ? 0 : ws + 1;
    }

    for (int i = 0; i < TM; i++) {
        const int r = m0 + ao + (i / 4) * LY * 4 + i % 4;
        if (r >= M)
            continue;
        __global float *crow = C + (size_t)r * N;
        for (int j = 0; j < TN / 4; j++) {
            const int c = n0 + bo + j * LX * 4;
            if (vec && c + 3 < N) {
                vstore4((float4)(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]), 0, crow + c);
            } else {
                for (int e = 0; e < 4; e++)
                    if (c + e < N)
                        crow[c + e] = acc[i][4 * j + e];
            }
        }
    }
}
