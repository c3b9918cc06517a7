// A persistent stream-K fp32 SGEMM (row-major C = A B): tiled.cu's block and thread tiles and its
// measured inner loop (A transposed in shared memory with rows padded by 4 floats, B as is, float4
// reads, a TM x TN register tile of (TM/4) x (TN/4) 4x4 sub-tiles, two stages with the next k-step
// staged through registers, one barrier per step, unchecked float4 loads of interior tiles with
// FAST), run by min(SMS, tiles) blocks that each walk a list of pieces instead of one tile each.
// Why: at 4096^3, 256 x 128 tiles make 16 * 32 = 512 tiles for 132 SMs at one block per SM, 3.88
// rounds run as 4: in tiled.cu's last round 16 SMs idle for a quarter of the time (3 % of the
// machine; tiled.cu is 2.919 ms against cuBLAS's 2.684-2.704, 0.926 in bench/RESULTS.md's table).
// Schedule: the first dp = (tiles / P - SKW) * P tiles go whole, round-robin (block c takes tiles c,
// c + P, ...); with SK=1 the last rem = tiles - dp tiles (the last partial round, plus SKW full
// rounds) are laid end to end as rem * ktiles k-steps and split evenly, a contiguous share per block
// (at 4096^3: 396 whole tiles, then 116 tiles of 256 steps as 132 shares of 224-225 steps, about
// two pieces a tile). A piece of a split tile stores its fp32 partial to scratch WS (slot cid +
// tail: a share's pieces are of consecutive tiles, so slots never collide; float4 per thread,
// coalesced, through L2) and counts it in COUNTS[tail] (zeroed by sgemm_zero, the first launch:
// scratch is poisoned); the last piece to finish sums every piece's partial in share order, not in
// finishing order (its own from registers: the same bits as from WS), and stores the tile, so
// every run gives the same bits. Nobody waits for anybody, so no co-residency is assumed. Shapes
// whose tail would give some block no k-step, or whose tiles fill whole rounds, run all tiles whole.
// PF=1: a piece's last k-step loads the next piece's first k-step into the other stage, so that
// no piece starts on an empty pipeline (PF=0 loads it at the top of the piece, as tiled.cu does).
// Every C element is one fma chain over k in order, or (a split tile) the sum of two or three
// such chains over consecutive k-ranges, added in k order; any M, N, K >= 1 works (checked and
// zero-filled loads and checked stores at the edges, as tiled.cu).
// Registers (nvcc 13 -arch=sm_90a -Xptxas -v, and NVRTC for sm_90 in tests/sgemm_stream_test.sh):
// the default 255 (nvcc) / 253 (NVRTC), no spills, against tiled.cu's 239 / 253; its k loop (both
// load paths) is the same 2048 FFMA and 96 LDS.128 per 16 k in 2483 instructions (39.7 KB, NVRTC
// sm_90 SASS) against tiled.cu's 2451 (39.2 KB): the extra ones choose the next piece's addresses.
// PREDICTION (written before any GPU run): the default at 4096^3 on the H200 takes 2.82-2.86 ms,
// most likely about 2.84 (0.945-0.95 of cuBLAS at 2.684-2.704). Each block runs 3 whole tiles plus 0.879 of
// one: 2.919 * 3.879 / 4 = 2.831 ms if a tile costs what it does in tiled.cu, plus the fixup at the
// end (each block stores a 128 KiB partial, then the last one of each tile reads one or two others
// and stores the tile: about 0.4-0.5 MiB through L2 per SM, 3-6 us), the zero launch (a few us)
// and the split's per-piece costs; PF may win back a microsecond or two per tile. So 0.95 (2.825
// ms against 2.684, 2.846 against 2.704) is at the edge of that range, not a sure thing; SK=0
// should time as tiled.cu (2.92), and the difference between the two is the measure of this lever.
// Measured (2026-12-01, H200, `bench/gpu.sh run evals`, each against cuBLAS in the same worker):
// the prediction was wrong. Defaults (PF=1) 3.300-3.303 ms (0.81); SKW=1 3.300; PF=0 2.956-2.959
// (0.91); SK=0 PF=0 3.018 and SK=0 3.018 (0.89); tiled.cu 2.930-2.934 (0.915-0.918) in the same
// calls. So the stream-K tail is worth 2.1 % here (2.956 against its own SK=0's 3.018), but the
// persistent loop itself costs 2.9 % against tiled.cu's one-tile blocks, and the prefetch across
// pieces (PF=1) costs 12 %: the tail does not close sgemm's gap to cuBLAS.
// Knobs: BM, BN, BK, TM, TN, WX, VEC, FAST as tiled.cu; SK (stream-K tail on/off), SKW (full rounds
// folded into the split tail, 0 or 1), PF (prefetch across pieces).
// The requires are tiled.cu's (128-256 threads, 64-128 accumulators, at most 160 staged registers,
// two stages within 96 KiB of shared memory).
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
// @temper require (BM / TM) * (BN / TN) % 32 == 0 && (BM / TM) * (BN / TN) >= 128 && (BM / TM) * (BN / TN) <= 256
// @temper require (BN / TN) % WX == 0 && (BM / TM) % (32 / WX) == 0
// @temper require TM * TN >= 64 && TM * TN <= 128
// @temper require TM * TN + (BM + BN) * BK / ((BM / TM) * (BN / TN)) <= 160
// @temper require 2 * BK * (BM + 4 + BN) * 4 <= 98304
// @temper scratch WS f32 (2 + SKW) * SMS * BM * BN
// @temper scratch COUNTS i32 (2 + SKW) * SMS
// @temper launch sgemm_zero when(SK) grid(1) block(256) args(COUNTS, (2 + SKW) * SMS)
// @temper launch sgemm_stream grid(min(SMS, ceil_div(M, BM) * ceil_div(N, BN))) block((BM / TM) * (BN / TN)) smem(2 * BK * (BM + 4 + BN) * 4 + 16) args(C, A, B, WS, COUNTS, M, N, K)
// @temper launch sgemm_stream when(1) grid(min(SMS, ceil_div(M, BM) * ceil_div(N, BN))) block((BM / TM) * (BN / TN)) smem(2 * BK * (BM + 4 + BN) * 4 + 16) args(C, A, B, WS, COUNTS, M, N, K)

#define NT ((BM / TM) * (BN / TN))  /* threads per block */
#define TX (BN / TN)                /* threads along N */
#define TY (BM / TM)                /* threads along M */
#define WY (32 / WX)                /* lanes of a warp along M */
#define AS_LD (BM + 4)              /* leading dimension of the transposed A tile */
#define STAGE (BK * (AS_LD + BN))   /* floats in one shared-memory stage */
#define A_F4 (BM * BK / 4)          /* float4s in an A tile */
#define B_F4 (BK * BN / 4)          /* float4s in a B tile */
#define A_IT ((A_F4 + NT - 1) / NT) /* float4s of A each thread loads per tile */
#define B_IT ((B_F4 + NT - 1) / NT)

/* Loads k-tile k0 of A and B into registers: float4 f of the A tile is row f / (BK/4), columns
 * 4 (f % (BK/4)) .. +3; of the B tile row f / (BN/4), columns 4 (f % (BN/4)) .. +3. With FAST, a
 * tile wholly inside both matrices (and float4-aligned) takes unchecked float4 loads: no bounds
 * tests, no zeroing, fewer instructions beside the FMAs. */
__device__ __forceinline__ void load_tile(float4 (&ra)[A_IT], float4 (&rb)[B_IT], const float *__restrict__ A,
                                          const float *__restrict__ B, int M, int N, int K, int m0, int n0,
                                          int k0, bool vec)
{
#if FAST
    if (vec && m0 + BM <= M && n0 + BN <= N && k0 + BK <= K) {
#pragma unroll
        for (int i = 0; i < A_IT; i++) {
            int f = threadIdx.x + i * NT;
            if (A_F4 % NT == 0 || f < A_F4)
                ra[i] = __ldg((const float4 *)(A + (size_t)(m0 + f / (BK / 4)) * K + k0 + (f % (BK / 4)) * 4));
        }
#pragma unroll
        for (int i = 0; i < B_IT; i++) {
            int f = threadIdx.x + i * NT;
            if (B_F4 % NT == 0 || f < B_F4)
                rb[i] = __ldg((const float4 *)(B + (size_t)(k0 + f / (BN / 4)) * N + n0 + (f % (BN / 4)) * 4));
        }
        return;
    }
#endif
#pragma unroll
    for (int i = 0; i < A_IT; i++) {
        int f = threadIdx.x + i * NT;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (A_F4 % NT == 0 || f < A_F4) {
            int r = m0 + f / (BK / 4), k = k0 + (f % (BK / 4)) * 4;
            if (r < M) {
                const float *p = A + (size_t)r * K + k;
                if (vec) {
                    if (k < K)
                        v = __ldg((const float4 *)p);
                } else {
                    if (k < K) v.x = __ldg(p + 0);
                    if (k + 1 < K) v.y = __ldg(p + 1);
                    if (k + 2 < K) v.z = __ldg(p + 2);
                    if (k + 3 < K) v.w = __ldg(p + 3);
                }
            }
        }
        ra[i] = v;
    }
#pragma unroll
    for (int i = 0; i < B_IT; i++) {
        int f = threadIdx.x + i * NT;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (B_F4 % NT == 0 || f < B_F4) {
            int k = k0 + f / (BN / 4), c = n0 + (f % (BN / 4)) * 4;
            if (k < K) {
                const float *p = B + (size_t)k * N + c;
                if (vec) {
                    if (c < N)
                        v = __ldg((const float4 *)p);
                } else {
                    if (c < N) v.x = __ldg(p + 0);
                    if (c + 1 < N) v.y = __ldg(p + 1);
                    if (c + 2 < N) v.z = __ldg(p + 2);
                    if (c + 3 < N) v.w = __ldg(p + 3);
                }
            }
        }
        rb[i] = v;
    }
}

/* Stores the registers of load_tile into one stage: A transposed, B as float4s. */
__device__ __forceinline__ void store_tile(float *__restrict__ st, const float4 (&ra)[A_IT], const float4 (&rb)[B_IT])
{
    float *As = st, *Bs = st + BK * AS_LD;
#pragma unroll
    for (int i = 0; i < A_IT; i++) {
        int f = threadIdx.x + i * NT;
        if (A_F4 % NT == 0 || f < A_F4) {
            int r = f / (BK / 4), k = (f % (BK / 4)) * 4;
            As[(k + 0) * AS_LD + r] = ra[i].x;
            As[(k + 1) * AS_LD + r] = ra[i].y;
            As[(k + 2) * AS_LD + r] = ra[i].z;
            As[(k + 3) * AS_LD + r] = ra[i].w;
        }
    }
#pragma unroll
    for (int i = 0; i < B_IT; i++) {
        int f = threadIdx.x + i * NT;
        if (B_F4 % NT == 0 || f < B_F4) {
            int k = f / (BN / 4), c = (f % (BN / 4)) * 4;
            *(float4 *)&Bs[k * BN + c] = rb[i];
        }
    }
}

/* acc += the thread's share of one stage's product. */
__device__ __forceinline__ void multiply(float (&acc)[TM][TN], const float *__restrict__ st, int tx, int ty)
{
    const float *As = st, *Bs = st + BK * AS_LD;
#pragma unroll
    for (int k = 0; k < BK; k++) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM / 4; i++) {
            float4 v = *(const float4 *)&As[k * AS_LD + i * TY * 4 + ty * 4];
            a[4 * i] = v.x, a[4 * i + 1] = v.y, a[4 * i + 2] = v.z, a[4 * i + 3] = v.w;
        }
#pragma unroll
        for (int j = 0; j < TN / 4; j++) {
            float4 v = *(const float4 *)&Bs[k * BN + j * TX * 4 + tx * 4];
            b[4 * j] = v.x, b[4 * j + 1] = v.y, b[4 * j + 2] = v.z, b[4 * j + 3] = v.w;
        }
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++)
                acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
}

/* One piece of a block's work: k-steps k0 .. k1-1 of tile `tile` (row-major over the tiles, N
 * fastest, as tiled.cu's grid runs); tail is the tile's index among the stream-K tiles, or -1 for
 * a whole tile of the data-parallel part. */
struct piece {
    int tile; /* the tile of C, m0 = tile / grid_n * BM, n0 = tile % grid_n * BN */
    int k0;   /* first k-step */
    int k1;   /* one past the last k-step */
    int tail; /* index among the stream-K tiles, -1 for a whole tile */
};

/* The block's next piece: its whole tiles cid, cid + P, ... below dp, then its share of the last
 * rem = tiles - dp tiles' k-steps laid end to end (steps [lo, hi) of rem * ktiles; a share spans
 * consecutive tiles). *tile and *x are where the walk stands. Returns 0 past the end. */
__device__ __forceinline__ bool next_piece(int *tile, long long *x, int P, int dp, long long hi, int ktiles, piece *p)
{
    if (*tile < dp) {
        p->tile = *tile, p->k0 = 0, p->k1 = ktiles, p->tail = -1;
        *tile += P;
        return true;
    }
    if (*x < hi) {
        const int i = (int)(*x / ktiles), k0 = (int)(*x - (long long)i * ktiles);
        const int k1 = (int)min((long long)ktiles, k0 + (hi - *x));
        p->tile = dp + i, p->k0 = k0, p->k1 = k1, p->tail = i;
        *x += k1 - k0;
        return true;
    }
    return false;
}

/* The block whose share holds step x of the tail's W steps (the inverse of share c = [W c / P,
 * W (c + 1) / P)). */
__device__ __forceinline__ int share_owner(long long x, long long W, int P)
{
    int c = (int)(x * P / W);
    while (c + 1 < P && W * (c + 1) / P <= x)
        c++;
    while (c > 0 && W * c / P > x)
        c--;
    return c;
}

/* Persistent: gridDim.x blocks (the multiprocessors, or fewer when there are fewer tiles)
 * each walk their pieces (next_piece). The first dp tiles go whole, round-robin; with SK the rest
 * (the last partial round, plus SKW full rounds) are split into k-ranges, one share per block. A
 * tile split over several shares has its pieces' fp32 partials in ws (slot cid + tail: a share's
 * pieces are of consecutive tiles, so no two pieces share a slot); counts[tail] (zeroed by
 * sgemm_zero before) tells the last piece to finish, which sums all of them in share order (its own
 * from registers, the same bits as from ws) and stores the tile. Nobody waits for anybody: no
 * co-residency is assumed. */
extern "C" __global__ void sgemm_stream(float *__restrict__ C, const float *__restrict__ A, const float *__restrict__ B,
                                        float *ws, int *counts, int M, int N, int K)
{
    extern __shared__ float4 smem4[];
    float *smem = (float *)smem4;
    int *last_flag = (int *)(smem + 2 * STAGE); /* the fixup's "this piece is the last", for the block */
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int tx = (warp % (TX / WX)) * WX + lane % WX;
    const int ty = (warp / (TX / WX)) * WY + lane / WX;
    const bool vec = VEC && K % 4 == 0 && N % 4 == 0 && (((size_t)A | (size_t)B) & 15) == 0;
    const bool vc = VEC && N % 4 == 0 && ((size_t)C & 15) == 0;
    const int grid_n = (N + BN - 1) / BN, tiles = ((M + BM - 1) / BM) * grid_n, ktiles = (K + BK - 1) / BK;
    const int P = gridDim.x, cid = blockIdx.x;

    /* stream-K when the tiles do not fill whole rounds, and every share of the tail has a k-step */
    int dp = tiles;
    if (SK && tiles % P != 0) {
        const int d = max(tiles / P - SKW, 0) * P;
        if ((long long)(tiles - d) * ktiles >= P)
            dp = d;
    }
    const long long W = (long long)(tiles - dp) * ktiles;
    const long long hi = W * (cid + 1) / P;
    int walk_tile = cid;
    long long walk_x = W * cid / P;

    piece cur;
    if (!next_piece(&walk_tile, &walk_x, P, dp, hi, ktiles, &cur))
        return;
    float4 ra[A_IT], rb[B_IT];
#if PF
    load_tile(ra, rb, A, B, M, N, K, cur.tile / grid_n * BM, cur.tile % grid_n * BN, cur.k0 * BK, vec);
    store_tile(smem, ra, rb);
    __syncthreads();
#endif
    int s = 0; /* the stage holding the piece's next k-step */
    float acc[TM][TN];
    for (;;) {
        const int m0 = cur.tile / grid_n * BM, n0 = cur.tile % grid_n * BN;
        piece nxt = cur; /* stays so past the last piece */
        const bool more = next_piece(&walk_tile, &walk_x, P, dp, hi, ktiles, &nxt);
#if PF
        /* the last k-step fetches the next piece's first one, so it never starts on an empty stage */
        const int nm0 = nxt.tile / grid_n * BM, nn0 = nxt.tile % grid_n * BN, nk0 = nxt.k0 * BK;
#else
        load_tile(ra, rb, A, B, M, N, K, m0, n0, cur.k0 * BK, vec);
        store_tile(smem + s * STAGE, ra, rb);
        __syncthreads();
#endif
#pragma unroll
        for (int i = 0; i < TM; i++)
#pragma unroll
            for (int j = 0; j < TN; j++)
                acc[i][j] = 0.0f;
        for (int kt = cur.k0; kt < cur.k1; kt++) {
            const bool inside = kt + 1 < cur.k1;
#if PF
            const bool fetch = inside || more;
            if (fetch)
                load_tile(ra, rb, A, B, M, N, K, inside ? m0 : nm0, inside ? n0 : nn0, inside ? (kt + 1) * BK : nk0,
                          vec);
#else
            const bool fetch = inside;
            if (fetch)
                load_tile(ra, rb, A, B, M, N, K, m0, n0, (kt + 1) * BK, vec);
#endif
            multiply(acc, smem + s * STAGE, tx, ty);
            if (fetch)
                store_tile(smem + (s ^ 1) * STAGE, ra, rb);
            __syncthreads();
            s ^= 1;
        }

        bool store = true;
        if (cur.tail >= 0) {
            const int first = share_owner((long long)cur.tail * ktiles, W, P);
            const int last = share_owner((long long)cur.tail * ktiles + ktiles - 1, W, P);
            if (first != last) { /* a piece of a split tile: the last piece to finish sums them all */
                float *slot = ws + (size_t)cur.tail * (BM * BN) + (size_t)threadIdx.x * 4;
#pragma unroll
                for (int g = 0; g < TM * TN / 4; g++) {
                    const float *q = &acc[g / (TN / 4)][4 * (g % (TN / 4))];
                    __stcg((float4 *)(slot + (size_t)cid * (BM * BN) + (size_t)g * NT * 4),
                           make_float4(q[0], q[1], q[2], q[3]));
                }
                __threadfence();
                __syncthreads();
                if (threadIdx.x == 0)
                    *last_flag = atomicAdd(&counts[cur.tail], 1) == last - first;
                __syncthreads();
                store = *last_flag;
                if (store) {
                    __threadfence();
                    /* the sum in share order, whoever finished last: the same bits every run */
#pragma unroll
                    for (int g = 0; g < TM * TN / 4; g++) {
                        float *d = &acc[g / (TN / 4)][4 * (g % (TN / 4))];
                        float4 v = make_float4(d[0], d[1], d[2], d[3]);
                        if (first != cid)
                            v = __ldcg((const float4 *)(slot + (size_t)first * (BM * BN) + (size_t)g * NT * 4));
                        for (int c = first + 1; c <= last; c++) {
                            float4 p = make_float4(d[0], d[1], d[2], d[3]);
                            if (c != cid)
                                p = __ldcg((const float4 *)(slot + (size_t)c * (BM * BN) + (size_t)g * NT * 4));
                            v.x += p.x, v.y += p.y, v.z += p.z, v.w += p.w;
                        }
                        d[0] = v.x, d[1] = v.y, d[2] = v.z, d[3] = v.w;
                    }
                }
            }
        }
        if (store) {
#pragma unroll
            for (int i = 0; i < TM; i++) {
                int r = m0 + (i / 4) * TY * 4 + ty * 4 + i % 4;
                if (r >= M)
                    continue;
                float *crow = C + (size_t)r * N;
#pragma unroll
                for (int j = 0; j < TN / 4; j++) {
                    int c = n0 + j * TX * 4 + tx * 4;
                    if (vc && c + 3 < N) {
                        *(float4 *)&crow[c] =
                            make_float4(acc[i][4 * j], acc[i][4 * j + 1], acc[i][4 * j + 2], acc[i][4 * j + 3]);
                    } else {
#pragma unroll
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
extern "C" __global__ void sgemm_zero(int *counts, int n)
{
    for (int i = threadIdx.x; i < n; i += blockDim.x)
        counts[i] = 0;
}
