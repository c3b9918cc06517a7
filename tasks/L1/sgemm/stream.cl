// A persistent stream-K fp32 SGEMM (row-major C = A B), the OpenCL twin of stream.cu, so that its
// walk, split and fixup run on PoCL where no GPU is: tiled.cl's tiles and inner loop (A transposed in
// local memory, float4 reads, a TM x TN register tile, two stages, unchecked loads of interior
// tiles with FAST), run by min(SMS, tiles) work-groups that each walk their pieces: whole
// tiles cid, cid + P, ... for the full rounds, then with SK their share of the last partial round's
// (plus SKW full rounds') k-steps laid end to end. A split tile's pieces leave fp32 partials in WS;
// the last to finish (a per-tile count, zeroed by sgemm_zero) sums them in share order, not
// finishing order, and stores the tile: every run gives the same bits. PF=1 loads a piece's first
// k-step during the previous piece's last one. Any M, N, K >= 1 works (checked loads and stores at
// the edges). On PoCL (SMS = 2 cores) the check shape 1 x 300 x 700 splits a tile over both groups.
// @temper task sgemm
// @temper param BM 256 128 64
// @temper param BN 128 256 64
// @temper param BK 16 8 32
// @temper param TM 8 16 4
// @temper param TN 16 8 4
// @temper param WX 8 4
// @temper param VEC 1 0
// @temper param FAST 1 0
// @temper param SK 1 0
// @temper param SKW 0 1
// @temper param PF 0 1
// @temper require (BM / TM) * (BN / TN) % 32 == 0 && (BM / TM) * (BN / TN) >= 32 && (BM / TM) * (BN / TN) <= 256
// @temper require (BN / TN) % WX == 0 && (BM / TM) % (32 / WX) == 0
// @temper scratch WS f32 (2 + SKW) * SMS * BM * BN
// @temper scratch COUNTS i32 (2 + SKW) * SMS
// @temper launch sgemm_zero when(SK) grid(1) block(256) args(COUNTS, (2 + SKW) * SMS)
// @temper launch sgemm_stream grid(min(SMS, ceil_div(M, BM) * ceil_div(N, BN))) block((BM / TM) * (BN / TN)) args(C, A, B, WS, COUNTS, M, N, K)
// @temper launch sgemm_stream when(1) grid(min(SMS, ceil_div(M, BM) * ceil_div(N, BN))) block((BM / TM) * (BN / TN)) args(C, A, B, WS, COUNTS, M, N, K)

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
 * 4 (f % (BK/4)) .. +3; of the B tile row f / (BN/4), columns 4 (f % (BN/4)) .. +3. With FAST, a
 * tile wholly inside both matrices takes unchecked loads (stream.cu's interior path). */
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

/* One piece of a work-group's work: k-steps k0 .. k1-1 of tile `tile` (row-major over the tiles,
 * N fastest); tail is the tile's index among the stream-K tiles, or -1 for a whole tile. */
struct piece {
    int tile; /* the tile of C, m0 = tile / grid_n * BM, n0 = tile % grid_n * BN */
    int k0;   /* first k-step */
    int k1;   /* one past the last k-step */
    int tail; /* index among the stream-K tiles, -1 for a whole tile */
};

/* The group's next piece: its whole tiles cid, cid + P, ... below dp, then its share [lo, hi) of the
 * last tiles' k-steps laid end to end. *tile and *x are where the walk stands; 0 past the end. */
static int next_piece(int *tile, long *x, int P, int dp, long hi, int ktiles, struct piece *p)
{
    if (*tile < dp) {
        p->tile = *tile, p->k0 = 0, p->k1 = ktiles, p->tail = -1;
        *tile += P;
        return 1;
    }
    if (*x < hi) {
        const int i = (int)(*x / ktiles), k0 = (int)(*x - (long)i * ktiles);
        const int k1 = (int)min((long)ktiles, k0 + (hi - *x));
        p->tile = dp + i, p->k0 = k0, p->k1 = k1, p->tail = i;
        *x += k1 - k0;
        return 1;
    }
    return 0;
}

/* The group whose share holds step x of the tail's W steps (share c = [W c / P, W (c + 1) / P)). */
static int share_owner(long x, long W, int P)
{
    int c = (int)(x * P / W);
    while (c + 1 < P && W * (c + 1) / P <= x)
        c++;
    while (c > 0 && W * c / P > x)
        c--;
    return c;
}

__kernel __attribute__((reqd_work_group_size(NT, 1, 1))) void
sgemm_stream(__global float *C, __global const float *A, __global const float *B, __global float *ws,
             __global int *counts, int M, int N, int K)
{
    __local float smem[2 * STAGE];
    __local int last_flag;
    const int t = get_local_id(0);
    const int warp = t / 32, lane = t % 32;
    const int tx = (warp % (TX / WX)) * WX + lane % WX;
    const int ty = (warp / (TX / WX)) * WY + lane / WX;
    const int vec = VEC && K % 4 == 0 && N % 4 == 0;
    const int grid_n = (N + BN - 1) / BN, tiles = ((M + BM - 1) / BM) * grid_n, ktiles = (K + BK - 1) / BK;
    const int P = get_num_groups(0), cid = get_group_id(0);

    int dp = tiles;
    if (SK && tiles % P != 0) {
        const int d = max(tiles / P - SKW, 0) * P;
        if ((long)(tiles - d) * ktiles >= P)
            dp = d;
    }
    const long W = (long)(tiles - dp) * ktiles;
    const long hi = W * (cid + 1) / P;
    int walk_tile = cid;
    long walk_x = W * cid / P;

    struct piece cur, nxt;
    if (!next_piece(&walk_tile, &walk_x, P, dp, hi, ktiles, &cur))
        return;
    float4 ra[A_IT], rb[B_IT];
#if PF
    load_tile(ra, rb, A, B, M, N, K, cur.tile / grid_n * BM, cur.tile % grid_n * BN, cur.k0 * BK, vec, t);
    store_tile(smem, ra, rb, t);
    barrier(CLK_LOCAL_MEM_FENCE);
#endif
    int s = 0; /* the stage holding the piece's next k-step */
    float acc[TM][TN];
    for (;;) {
        const int m0 = cur.tile / grid_n * BM, n0 = cur.tile % grid_n * BN;
        nxt = cur; /* stays so past the last piece */
        const int more = next_piece(&walk_tile, &walk_x, P, dp, hi, ktiles, &nxt);
#if PF
        const int nm0 = nxt.tile / grid_n * BM, nn0 = nxt.tile % grid_n * BN, nk0 = nxt.k0 * BK;
#else
        load_tile(ra, rb, A, B, M, N, K, m0, n0, cur.k0 * BK, vec, t);
        store_tile(smem + s * STAGE, ra, rb, t);
        barrier(CLK_LOCAL_MEM_FENCE);
#endif
        for (int i = 0; i < TM; i++)
            for (int j = 0; j < TN; j++)
                acc[i][j] = 0.0f;
        for (int kt = cur.k0; kt < cur.k1; kt++) {
            const int inside = kt + 1 < cur.k1;
#if PF
            const int fetch = inside || more;
            if (fetch)
                load_tile(ra, rb, A, B, M, N, K, inside ? m0 : nm0, inside ? n0 : nn0, inside ? (kt + 1) * BK : nk0,
                          vec, t);
#else
            const int fetch = inside;
            if (fetch)
                load_tile(ra, rb, A, B, M, N, K, m0, n0, (kt + 1) * BK, vec, t);
#endif
            multiply(acc, smem + s * STAGE, tx, ty);
            if (fetch)
                store_tile(smem + (s ^ 1) * STAGE, ra, rb, t);
            barrier(CLK_LOCAL_MEM_FENCE);
            s ^= 1;
        }

        int store = 1;
        if (cur.tail >= 0) {
            const int first = share_owner((long)cur.tail * ktiles, W, P);
            const int last = share_owner((long)cur.tail * ktiles + ktiles - 1, W, P);
            if (first != last) { /* a piece of a split tile: the last piece to finish sums them all */
                __global float *slot = ws + (size_t)cur.tail * (BM * BN) + (size_t)t * 4;
                for (int g = 0; g < TM * TN / 4; g++) {
                    const float *d = &acc[g / (TN / 4)][4 * (g % (TN / 4))];
                    vstore4((float4)(d[0], d[1], d[2], d[3]), 0, slot + (size_t)cid * (BM * BN) + (size_t)g * NT * 4);
                }
                mem_fence(CLK_GLOBAL_MEM_FENCE);
                barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
                if (t == 0)
                    last_flag = atomic_inc(&counts[cur.tail]) == last - first;
                barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
                store = last_flag;
                if (store) {
                    mem_fence(CLK_GLOBAL_MEM_FENCE);
                    /* the sum in share order, whoever finished last: the same bits every run */
                    for (int g = 0; g < TM * TN / 4; g++) {
                        float *d = &acc[g / (TN / 4)][4 * (g % (TN / 4))];
                        float4 v = (float4)(d[0], d[1], d[2], d[3]);
                        if (first != cid)
                            v = vload4(0, slot + (size_t)first * (BM * BN) + (size_t)g * NT * 4);
                        for (int c = first + 1; c <= last; c++) {
                            float4 p = (float4)(d[0], d[1], d[2], d[3]);
                            if (c != cid)
                                p = vload4(0, slot + (size_t)c * (BM * BN) + (size_t)g * NT * 4);
                            v += p;
                        }
                        d[0] = v.x, d[1] = v.y, d[2] = v.z, d[3] = v.w;
                    }
                }
            }
        }
        if (store) {
            for (int i = 0; i < TM; i++) {
                int r = m0 + (i / 4) * TY * 4 + ty * 4 + i % 4;
                if (r >= M)
                    continue;
                __global float *crow = C + (size_t)r * N;
                for (int j = 0; j < TN / 4; j++) {
                    int c = n0 + j * TX * 4 + tx * 4;
                    if (vec && c + 3 < N) {
                        vstore4((float4)(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]), 0,
                                crow + c);
                    } else {
                        for (int e = 0; e < 4; e++)
                            if (c + e < N)
                                crow[c + e] = acc[i][4 * j + e];
                    }
                }
            }
        }
        if (!more)
            break;
        cur = nxt;
    }
}

/* Zeroes the stream-K tiles' piece counts before each run (scratch is poisoned). */
__kernel void sgemm_zero(__global int *counts, int n)
{
    for (int i = get_local_id(0); i < n; i += get_local_size(0))
        counts[i] = 0;
}
