// A tunable fp32 SGEMM (row-major C = A B), the OpenCL twin of tiled.cu: each work-group computes a
// BM x BN tile of C, walking K in steps of BK. The A tile is stored transposed in local memory
// (As[k][m], rows padded by 4 floats) and the B tile as is (Bs[k][n]), so that every work-item reads
// its TM values of A and TN values of B for one k as float4s. A work-item owns a TM x TN tile of C
// made of (TM/4) x (TN/4) sub-tiles of 4x4, spread TY*4 rows and TX*4 columns apart (contiguous
// float4 accesses across neighbouring work-items); WX neighbouring work-items lie along N and 32/WX
// along M in each group of 32. Global loads are vload4 (VEC=1, when K and N are multiples of 4) or
// four checked scalars otherwise; tiles past the edges load zeros and the stores of C are checked,
// so any M, N, K >= 1 works. DB=1 alternates two local-memory stages (the next tile is loaded into
// registers before the current one is multiplied, one barrier per tile); DB=0 uses one stage.
// All 400 knob settings passed every check shape on PoCL; there the default (128x128x8, 8x8 per
// work-item) ran the 256^3 CPU bench shape in 2.85 ms, 4.3x the naive baseline.
// @temper task sgemm
// @temper param BM 128 64 32
// @temper param BN 128 64 32
// @temper param BK 8 16
// @temper param TM 8 4
// @temper param TN 8 4
// @temper param WX 8 4
// @temper param VEC 1 0
// @temper param DB 1 0
// @temper require (BM / TM) * (BN / TN) % 32 == 0 && (BM / TM) * (BN / TN) >= 32 && (BM / TM) * (BN / TN) <= 256
// @temper require (BN / TN) % WX == 0 && (BM / TM) % (32 / WX) == 0
// @temper launch sgemm_tiled grid(ceil_div(N, BN), ceil_div(M, BM)) block((BM / TM) * (BN / TN)) args(C, A, B, M, N, K)

#define NT ((BM / TM) * (BN / TN))  /* work-items per group */
#define TX (BN / TN)                /* work-items along N */
#define TY (BM / TM)                /* work-items along M */
#define WY (32 / WX)                /* of each 32 consecutive work-items, how many rows along M */
#define AS_LD (BM + 4)              /* leading dimension of the transposed A tile */
#define STAGE (BK * (AS_LD + BN))   /* floats in one local-memory stage */
#define A_F4 (BM * BK / 4)          /* float4s in an A tile */
#define B_F4 (BK * BN / 4)          /* float4s in a B tile */
#define A_IT ((A_F4 + NT - 1) / NT) /* float4s of A each work-item loads per tile */
#define B_IT ((B_F4 + NT - 1) / NT)

/* Loads k-tile k0 of A and B into registers: float4 f of the A tile is row f / (BK/4), columns
 * 4 (f % (BK/4)) .. +3; of the B tile row f / (BN/4), columns 4 (f % (BN/4)) .. +3. */
static void load_tile(float4 *ra, float4 *rb, __global const float *A, __global const float *B, int M, int N,
                      int K, int m0, int n0, int k0, int vec, int t)
{
    for (int i = 0; i < A_IT; i++) {
        int f = t + i * NT;
        float4 v = (float4)(0.0f);
        if (A_F4 % NT == 0 || f < A_F4) {
            int r = m0 + f / (BK / 4), k = k0 + (f % (BK / 4)) * 4;
            if (r < M) {
                __global const float *p = A + (size_t)r * K + k;
                if (vec) {
                    if (k < K)
                        v = vload4(0, p);
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
    for (int i = 0; i < B_IT; i++) {
        int f = t + i * NT;
        float4 v = (float4)(0.0f);
        if (B_F4 % NT == 0 || f < B_F4) {
            int k = k0 + f / (BN / 4), c = n0 + (f % (BN / 4)) * 4;
            if (k < K) {
                __global const float *p = B + (size_t)k * N + c;
                if (vec) {
                    if (c < N)
                        v = vload4(0, p);
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
static void store_tile(__local float *st, const float4 *ra, const float4 *rb, int t)
{
    __local float *As = st, *Bs = st + BK * AS_LD;
    for (int i = 0; i < A_IT; i++) {
        int f = t + i * NT;
        if (A_F4 % NT == 0 || f < A_F4) {
            int r = f / (BK / 4), k = (f % (BK / 4)) * 4;
            As[(k + 0) * AS_LD + r] = ra[i].x;
            As[(k + 1) * AS_LD + r] = ra[i].y;
            As[(k + 2) * AS_LD + r] = ra[i].z;
            As[(k + 3) * AS_LD + r] = ra[i].w;
        }
    }
    for (int i = 0; i < B_IT; i++) {
        int f = t + i * NT;
        if (B_F4 % NT == 0 || f < B_F4) {
            int k = f / (BN / 4), c = (f % (BN / 4)) * 4;
            vstore4(rb[i], 0, Bs + k * BN + c);
        }
    }
}

/* acc += the work-item's share of one stage's product. */
static void multiply(float acc[TM][TN], __local const float *st, int tx, int ty)
{
    __local const float *As = st, *Bs = st + BK * AS_LD;
    for (int k = 0; k < BK; k++) {
        float a[TM], b[TN];
        for (int i = 0; i < TM / 4; i++) {
            float4 v = vload4(0, As + k * AS_LD + i * TY * 4 + ty * 4);
            a[4 * i] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
        }
        for (int j = 0; j < TN / 4; j++) {
            float4 v = vload4(0, Bs + k * BN + j * TX * 4 + tx * 4);
            b[4 * j] = v.x, b[4 * j + 1] = v.y, b[4 * j + 2] = v.z, b[4 * j + 3] = v.w;
        }
        for (int i = 0; i < TM; i++)
            for (int j = 0; j < TN; j++)
                acc[i][j] = fma(a[i], b[j], acc[i][j]);
    }
}

__kernel __attribute__((reqd_work_group_size(NT, 1, 1))) void
sgemm_tiled(__global float *C, __global const float *A, __global const float *B, int M, int N, int K)
{
    __local float smem[(1 + DB) * STAGE];
    const int t = get_local_id(0);
    const int warp = t / 32, lane = t % 32;
    const int tx = (warp % (TX / WX)) * WX + lane % WX;
    const int ty = (warp / (TX / WX)) * WY + lane / WX;
    const int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
    const int vec = VEC && K % 4 == 0 && N % 4 == 0;

    float acc[TM][TN];
    for (int i = 0; i < TM; i++)
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;

    float4 ra[A_IT], rb[B_IT];
    const int KT = (K + BK - 1) / BK;
    load_tile(ra, rb, A, B, M, N, K, m0, n0, 0, vec, t);
#if DB
    store_tile(smem, ra, rb, t);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kt = 0; kt < KT; kt++) {
        __local float *cur = smem + (kt & 1) * STAGE;
        if (kt + 1 < KT)
            load_tile(ra, rb, A, B, M, N, K, m0, n0, (kt + 1) * BK, vec, t);
        multiply(acc, cur, tx, ty);
        if (kt + 1 < KT)
            store_tile(smem + ((kt + 1) & 1) * STAGE, ra, rb, t);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#else
    for (int kt = 0; kt < KT; kt++) {
        store_tile(smem, ra, rb, t);
        barrier(CLK_LOCAL_MEM_FENCE);
        if (kt + 1 < KT)
            load_tile(ra, rb, A, B, M, N, K, m0, n0, (kt + 1) * BK, vec, t);
        multiply(acc, smem, tx, ty);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
#endif

    for (int i = 0; i < TM; i++) {
        int r = m0 + (i / 4) * TY * 4 + ty * 4 + i % 4;
        if (r >= M)
            continue;
        __global float *crow = C + (size_t)r * N;
        for (int j = 0; j < TN / 4; j++) {
            int c = n0 + j * TX * 4 + tx * 4;
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
