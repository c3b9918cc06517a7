// A tunable transpose with 16-byte accesses everywhere: each TR x TC tile of x is cut into 4 x 4
// micro-tiles; a thread reads a micro-tile's 4 rows as float4 (LDG.128, coalesced along x's rows:
// lanes take consecutive micro-tile columns), transposes it in registers, and stores its 4 columns
// as float4 into a shared tile laid out as y's rows (STS.128); after the barrier each thread reads
// float4 pieces of those rows (LDS.128) and stores them as float4 into y (STG.128, lanes take
// consecutive pieces of one y row: TR * 4 contiguous bytes). The shared tile is XOR-swizzled (the
// 16-byte chunk c of tile row j sits at c ^ ((j / 4) % 8)) so that both 128-bit phases touch 8
// different 16-byte bank groups per quarter warp: no bank conflicts, no padding. fast.cu's VEC=4
// reads its padded tile by scalar columns (2-way conflicts) and its best (VEC=2) moves 8 bytes per
// access. MT micro-tiles per thread (TR*TC/16/MT threads); every global load of a tile is issued
// before the first shared store. Tiles that reach past an edge, and shapes with R or C not a
// multiple of 4 or misaligned pointers, take a scalar path with bounds checks (block-uniform: the
// full tiles never test an element).
// GROUP: tile order as in fast.cu (0: x's row-major tile order; G > 0: down the tile columns of G
// tile rows at a time). PB > 0: PB persistent blocks per multiprocessor (SMS of them) loop over the
// tiles, and a block issues the next tile's loads before it writes the current one out (its loads
// are in flight during the store phase); PB = 0: one block per tile. HINT = 1 reads x (read once)
// with ld.global.nc.L1::no_allocate.L2::256B (TC * 4-byte row pieces are whole 256-byte L2
// prefetch units at TC >= 64); HINT = 0 through __ldg. Streaming stores are the tuner's cache
// control (dscm=cs).
// PREDICTION (written before any GPU run, H200, 16384 x 16384, 2 GiB moved): at the defaults
// (TR=64 TC=64 MT=2 GROUP=32 PB=0 HINT=1) 0.521-0.527 ms, 95-96 % of the calibrated copy
// bandwidth (fast.cu's best: 0.5298 ms, 94.4 %): a third of fast.cu's best's memory instructions
// per tile (128 warp instructions against 384: 16-byte everything, no bank conflicts), 8 loads
// (128 bytes) in flight per thread, and 8 blocks per SM (60 registers x 128 threads; 128 KiB of
// tiles) against fast.cu's 4 x 16.6 KiB. PB=4 (loads overlapping stores inside a block) is the
// alternative most likely to be faster still; TR=128 (512-byte y row pieces: the writes, the
// costlier direction, in longer runs) next.
// @temper task transpose
// @temper param TR 64 32 128
// @temper param TC 64 32 128
// @temper param MT 2 1 4
// @temper param GROUP 32 0 16 8
// @temper param PB 0 4 8 2
// @temper param HINT 1 0
// @temper require TR * TC <= 8192
// @temper require TR * TC / 16 / MT >= 64 && TR * TC / 16 / MT <= 1024
// @temper require PB * (TR * TC / 16 / MT) <= 1024
// @temper launch transpose_swizzle grid(min(ceil_div(C, TC) * ceil_div(R, TR), SMS * PB + (PB == 0) * ceil_div(C, TC) * ceil_div(R, TR))) block(TR * TC / 16 / MT) args(y, x, R, C)

#define MR (TR / 4)           /* micro-tile rows of a tile (4 x rows each); the float4 chunks of a y row */
#define MC (TC / 4)           /* micro-tile columns of a tile */
#define NT (MR * MC / MT)     /* threads */
#define SWZ(j) (((j) >> 2) & 7) /* the chunk swizzle of shared tile row j */

__device__ __forceinline__ float4 ld4(const float *p)
{
#if HINT
    float4 v;
    asm("ld.global.nc.L1::no_allocate.L2::256B.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
                 : "l"(p));
    return v;
#else
    return __ldg((const float4 *)p);
#endif
}

/* The origin (row0, col0) in x of tile t */
__device__ __forceinline__ void tile_origin(int t, int R, int C, int *row0, int *col0)
{
    const int nbx = (C + TC - 1) / TC;
#if GROUP > 0
    const int nby = (R + TR - 1) / TR;
    const int per = GROUP * nbx, first = t / per * GROUP, rows = min(GROUP, nby - first), w = t % per;
    *row0 = (first + w % rows) * TR;
    *col0 = w / rows * TC;
#else
    *row0 = t / nbx * TR;
    *col0 = t % nbx * TC;
#endif
}

/* v[k][r] = x row row0 + 4a + r, columns col0 + 4b .. + 3, for micro-tile m = tid + k * NT
 * (a = m / MC, b = m % MC); zeros past the edges on the scalar path */
__device__ __forceinline__ void load_tile(float4 (&v)[MT][4], const float *__restrict__ x, int R, int C, int row0,
                                          int col0, bool full)
{
    if (full) {
#pragma unroll
        for (int k = 0; k < MT; k++) {
            const int m = threadIdx.x + k * NT, a = m / MC, b = m % MC;
            const float *p = x + (size_t)(row0 + 4 * a) * C + col0 + 4 * b;
#pragma unroll
            for (int r = 0; r < 4; r++)
                v[k][r] = ld4(p + (size_t)r * C);
        }
    } else {
#pragma unroll
        for (int k = 0; k < MT; k++) {
            const int m = threadIdx.x + k * NT, a = m / MC, b = m % MC;
#pragma unroll
            for (int r = 0; r < 4; r++) {
                const int row = row0 + 4 * a + r, col = col0 + 4 * b;
                const float *p = x + (size_t)row * C + col;
                const bool in = row < R;
                v[k][r].x = in && col < C ? __ldg(p) : 0.0f;
                v[k][r].y = in && col + 1 < C ? __ldg(p + 1) : 0.0f;
                v[k][r].z = in && col + 2 < C ? __ldg(p + 2) : 0.0f;
                v[k][r].w = in && col + 3 < C ? __ldg(p + 3) : 0.0f;
            }
        }
    }
}

/* the micro-tiles' columns into the shared tile: tile row j = 4b + c holds x column col0 + j,
 * chunk a (x rows row0 + 4a .. + 3) at chunk a ^ SWZ(j) */
__device__ __forceinline__ void put_tile(float4 (*tile)[MR], const float4 (&v)[MT][4])
{
#pragma unroll
    for (int k = 0; k < MT; k++) {
        const int m = threadIdx.x + k * NT, a = m / MC, b = m % MC, s = a ^ (b & 7);
        tile[4 * b + 0][s] = make_float4(v[k][0].x, v[k][1].x, v[k][2].x, v[k][3].x);
        tile[4 * b + 1][s] = make_float4(v[k][0].y, v[k][1].y, v[k][2].y, v[k][3].y);
        tile[4 * b + 2][s] = make_float4(v[k][0].z, v[k][1].z, v[k][2].z, v[k][3].z);
        tile[4 * b + 3][s] = make_float4(v[k][0].w, v[k][1].w, v[k][2].w, v[k][3].w);
    }
}

/* y rows col0 + j, columns row0 + 4i .. + 3 from the shared tile, for piece m = tid + k * NT
 * (j = m / MR, i = m % MR); bounds checked on the scalar path */
__device__ __forceinline__ void store_tile(float *__restrict__ y, float4 (*tile)[MR], int R, int C, int row0,
                                           int col0, bool full)
{
#pragma unroll
    for (int k = 0; k < MT * 4; k++) {
        const int m = threadIdx.x + k * NT, j = m / MR, i = m % MR;
        const float4 o = tile[j][i ^ SWZ(j)];
        float *p = y + (size_t)(col0 + j) * R + row0 + 4 * i;
        if (full) {
            *(float4 *)p = o;
        } else if (col0 + j < C) {
            const int c = row0 + 4 * i;
            if (c < R)
                p[0] = o.x;
            if (c + 1 < R)
                p[1] = o.y;
            if (c + 2 < R)
                p[2] = o.z;
            if (c + 3 < R)
                p[3] = o.w;
        }
    }
}

#if PB > 0
#define BOUNDS __launch_bounds__(NT, PB) /* PB blocks per SM must be resident together */
#else
#define BOUNDS __launch_bounds__(NT)
#endif

extern "C" __global__ void BOUNDS
    transpose_swizzle(float *__restrict__ y, const float *__restrict__ x, int R, int C)
{
    __shared__ float4 tile[TC][MR]; /* the tile as y's rows: tile[j] = x column col0 + j, swizzled */
    const int tiles = ((C + TC - 1) / TC) * ((R + TR - 1) / TR);
    /* 16-byte accesses need rows that start 16-byte aligned in both matrices */
    const bool vec = R % 4 == 0 && C % 4 == 0 && ((((size_t)x) | ((size_t)y)) & 15) == 0;
    int t = blockIdx.x, row0, col0;
    if (t >= tiles)
        return;
    tile_origin(t, R, C, &row0, &col0);
    bool full = vec && row0 + TR <= R && col0 + TC <= C;
    float4 v[MT][4];
    load_tile(v, x, R, C, row0, col0, full);
    for (;;) {
        put_tile(tile, v);
        __syncthreads();
        const int tn = t + (int)gridDim.x; /* the block's next tile (PB > 0) */
        int nrow0 = 0, ncol0 = 0;
        bool nfull = false;
        if (PB > 0 && tn < tiles) { /* its loads in flight while this tile is written */
            tile_origin(tn, R, C, &nrow0, &ncol0);
            nfull = vec && nrow0 + TR <= R && ncol0 + TC <= C;
            load_tile(v, x, R, C, nrow0, ncol0, nfull);
        }
        store_tile(y, tile, R, C, row0, col0, full);
        if (PB == 0 || tn >= tiles)
            break;
        __syncthreads(); /* every piece read before the next tile overwrites the shared tile */
        t = tn, row0 = nrow0, col0 = ncol0, full = nfull;
    }
}
