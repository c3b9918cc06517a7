// A tunable fp32 SGEMM (row-major C = A B), the OpenCL twin of pipe.cu, so that its index
// arithmetic (NS local-memory stages in a ring, the two register fragments, the read of the next
// tile's first fragment before the barrier when NS >= 3, chunks of KU k, the unchecked interior
// loads of FAST=1, zero-filled edges, and CP=1's copy mapping, done here by plain loads and stores
// at the top of a step where the CUDA kernel issues cp.async) is checked on any OpenCL device: the
// same block tiles, loads, stores and order of reads and barriers. Each work-group computes a
// BM x BN tile of C, walking K in steps of BK; tile kt + NS - 1 is loaded into registers at the top
// of step kt and stored to its stage (A transposed, As[k][m] with rows padded by 4 floats; B as is)
// at the bottom, before the one barrier of the step (CP=1: copied at the top). Of each 32
// consecutive work-items, WX lie along N; a work-item owns TM x TN of C as (TM/4) x (TN/4)
// sub-tiles of 4x4 spread TY*4 rows and TX*4 columns apart; ZZ picks the order of the FMAs of a k.
// tests/sgemm_pipe_test.sh judges it on every check shape on PoCL at settings covering each path.
// @temper task sgemm
// @temper param BM 256 128 64
// @temper param BN 128 256 64
// @temper param BK 16 8
// @temper param TM 8 16 4
// @temper param TN 16 8 4
// @temper param WX 8 4
// @temper param NS 3 2 4
// @temper param FAST 1 0
// @temper param KU 0 4 2
// @temper param CP 0 1
// @temper param ZZ 0 1
// @temper require KU < BK && BK % (KU + (KU == 0) * BK) == 0
// @temper require CP == 0 || NS >= 3 && BM % ((BM / TM) * (BN / TN) / 8) == 0 && BM * BK % ((BM / TM) * (BN / TN)) == 0 && BK % 8 == 0
// @temper require (BM / TM) * (BN / TN) % 32 == 0 && (BM / TM) * (BN / TN) >= 32 && (BM / TM) * (BN / TN) <= 256
// @temper require (BN / TN) % WX == 0 && (BM / TM) % (32 / WX) == 0
// @temper require TM * TN <= 128
// @temper require NS * BK * (BM + 4 + BN) * 4 <= 232448
// @temper launch sgemm_pipe grid(ceil_div(N, BN), ceil_div(M, BM)) block((BM / TM) * (BN / TN)) args(C, A, B, M, N, K)

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
#define CA_IT (BM * BK / NT)       /* elements of A each work-item copies per tile (CP=1) */
#define CA_STEP (NT / 8)            /* rows between a work-item's copies of A in one 8-wide k chunk */
#define CA_REPS (BM / CA_STEP)      /* copies per 8-wide k chunk */

/* Loads k-tile k0 of A and B into registers: float4 f of the A tile is row f / (BK/4), columns
 * 4 (f % (BK/4)) .. +3; of the B tile row f / (BN/4), columns 4 (f % (BN/4)) .. +3. With FAST, a
 * tile wholly inside both matrices takes unchecked vload4s. Elements past an edge load as zeros. */
static void load_tile(float4 *ra, float4 *rb, __global const float *A, __global const float *B, int M, int N,
                      int K, int m0, int n0, int k0, int vec, int t)
{
#if FAST
    if (vec && m0 + BM <= M && n0 + BN <= N && k0 + BK <= K) {
        for (int i = 0; i < A_IT; i++) {
            int f = t + i * NT;
            if (A_F4 % NT == 0 || f < A_F4)
                ra[i] = vload4(0, A + (size_t)(m0 + f / (BK / 4)) * K + k0 + (f % (BK / 4)) * 4);
        }
        for (int i = 0; i < B_IT; i++) {
            int f = t + i * NT;
            if (B_F4 % NT == 0 || f < B_F4)
                rb[i] = vload4(0, B + (size_t)(k0 + f / (BN / 4)) * N + n0 + (f % (BN / 4)) * 4);
        }
        return;
    }
#endif
    for (int i = 0; i < A_IT; i++) {
        int f = t + i * NT;
        float4 v = (float4)(0.0f);
        if (A_F4 % NT == 0 || f < A_F4) {
            int r = m0 + f / (BK / 4), k = k0 + (f % (BK / 4)) * 4;
            if (r < M && k < K) {
                __global const float *p = A + (size_t)r * K + k;
                if (vec) {
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
            if (k < K && c < N) {
                __global const float *p = B + (size_t)k * N + c;
                if (vec) {
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

#if CP
/* CP=1: the CUDA kernel's cp.async copies, done by the work-items themselves with the same mapping:
 * A element i of work-item t is row t/8 + (i % CA_REPS) * CA_STEP, column t%8 + (i / CA_REPS) * 8
 * of the tile, stored at As[column][row]; B float4 f = t + j * NT is row f / (BN/4), columns
 * 4 (f % (BN/4)) .. +3. Elements outside A or B are stored as zeros. */
static void copy_tile(__local float *st, __global const float *A, __global const float *B, int M, int N, int K,
                      int m0, int n0, int k0, int t)
{
    const int kk = t % 8, r0 = t / 8;
    for (int i = 0; i < CA_IT; i++) {
        const int dr = (i % CA_REPS) * CA_STEP, dk = (i / CA_REPS) * 8;
        const int r = m0 + r0 + dr, k = k0 + kk + dk;
        st[(kk + dk) * AS_LD + r0 + dr] = r < M && k < K ? A[(size_t)r * K + k] : 0.0f;
    }
    __local float *Bs = st + BK * AS_LD;
    for (int j = 0; j < B_IT; j++) {
        const int f = t + j * NT;
        if (B_F4 % NT == 0 || f < B_F4) {
            const int k = f / (BN / 4), c = (f % (BN / 4)) * 4;
            for (int e = 0; e < 4; e++) {
                const int kg = k0 + k, cg = n0 + c + e;
                Bs[k * BN + c + e] = kg < K && cg < N ? B[(size_t)kg * N + cg] : 0.0f;
            }
        }
    }
}
#endif

/* Reads the work-item's TM values of A and TN values of B at row k of stage st into a fragment. */
static void load_frag(float *a, float *b, __local const float *st, int k, int tx, int ty)
{
    __local const float *As = st, *Bs = st + BK * AS_LD;
    for (int i = 0; i < TM / 4; i++) {
        float4 v = vload4(0, As + k * AS_LD + i * TY * 4 + ty * 4);
        a[4 * i] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
    }
    for (int j = 0; j < TN / 4; j++) {
        float4 v = vload4(0, Bs + k * BN + j * TX * 4 + tx * 4);
        b[4 * j] = v.x, b[4 * j + 1] = v.y, b[4 * j + 2] = v.z, b[4 * j + 3] = v.w;
    }
}

/* acc += the outer product of one fragment. */
static void outer(float acc[TM][TN], const float *a, const float *b)
{
#if ZZ
    for (int jp = 0; jp < TN / 2; jp++)
        for (int ii = 0; ii < TM; ii++) {
            const int i = jp % 2 ? TM - 1 - ii : ii;
            acc[i][2 * jp] = fma(a[i], b[2 * jp], acc[i][2 * jp]);
            acc[i][2 * jp + 1] = fma(a[i], b[2 * jp + 1], acc[i][2 * jp + 1]);
        }
#else
    for (int i = 0; i < TM; i++)
        for (int j = 0; j < TN; j++)
            acc[i][j] = fma(a[i], b[j], acc[i][j]);
#endif
}

__kernel __attribute__((reqd_work_group_size(NT, 1, 1))) void
sgemm_pipe(__global float *C, __global const float *A, __global const float *B, int M, int N, int K)
{
    __local float smem[NS * STAGE];
    const int t = get_local_id(0);
    const int warp = t / 32, lane = t % 32;
    const int tx = (warp % (TX / WX)) * WX + lane % WX;
    const int ty = (warp / (TX / WX)) * WY + lane / WX;
    const int m0 = get_group_id(1) * BM, n0 = get_group_id(0) * BN;
    const int vec = K % 4 == 0 && N % 4 == 0;

    float acc[TM][TN];
    for (int i = 0; i < TM; i++)
        for (int j = 0; j < TN; j++)
            acc[i][j] = 0.0f;

    const int KT = (K + BK - 1) / BK;
#if CP
    for (int s = 0; s < NS - 1; s++)
        if (s < KT)
            copy_tile(smem + s * STAGE, A, B, M, N, K, m0, n0, s * BK, t);
#else
    float4 ra[A_IT], rb[B_IT];
    for (int s = 0; s < NS - 1; s++) {
        if (s < KT) {
            load_tile(ra, rb, A, B, M, N, K, m0, n0, s * BK, vec, t);
            store_tile(smem + s * STAGE, ra, rb, t);
        }
    }
#endif
    barrier(CLK_LOCAL_MEM_FENCE);

    float fa[2][TM], fb[2][TN];
    load_frag(fa[0], fb[0], smem, 0, tx, ty);
    __local const float *cur = smem;              /* the stage of tile kt */
    __local float *wr = smem + (NS - 1) * STAGE;  /* the stage of tile kt + NS - 1 */
    for (int kt = 0; kt < KT; kt++) {
        /* the stage of tile kt + 1 */
        __local const float *nxt = cur + STAGE == smem + NS * STAGE ? smem : cur + STAGE;
        const int more = kt + NS - 1 < KT;
#if CP
        /* stage wr held tile kt - 1, last read before the barrier that ended step kt - 1 */
        if (more)
            copy_tile(wr, A, B, M, N, K, m0, n0, (kt + NS - 1) * BK, t);
#else
        if (more)
            load_tile(ra, rb, A, B, M, N, K, m0, n0, (kt + NS - 1) * BK, vec, t);
#endif
#if KU == 0
        for (int k = 0; k < BK; k++) {
            /* the next tile's first row is read even after the last tile (unused) */
            if (k + 1 < BK)
                load_frag(fa[(k + 1) & 1], fb[(k + 1) & 1], cur, k + 1, tx, ty);
            else if (NS >= 3)
                load_frag(fa[0], fb[0], nxt, 0, tx, ty);
            outer(acc, fa[k & 1], fb[k & 1]);
        }
#else
        for (int k0 = 0; k0 < BK; k0 += KU) {
            const int last = k0 + KU == BK;
            __local const float *src = last ? nxt : cur;
            const int kn = last ? 0 : k0 + KU;
            for (int u = 0; u < KU; u++) {
                if (u + 1 < KU)
                    load_frag(fa[(u + 1) & 1], fb[(u + 1) & 1], cur, k0 + u + 1, tx, ty);
                else if (NS >= 3 || !last)
                    load_frag(fa[0], fb[0], src, kn, tx, ty);
                outer(acc, fa[u & 1], fb[u & 1]);
            }
        }
#endif
#if !CP
        if (more)
            store_tile(wr, ra, rb, t);
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        if (NS < 3 && kt + 1 < KT)
            load_frag(fa[0], fb[0], nxt, 0, tx, ty);
        cur = nxt;
        wr = wr + STAGE == smem + NS * STAGE ? smem : wr + STAGE;
    }

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
