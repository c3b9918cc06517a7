// A tunable transpose with wide tiles: swizzle.cu's scheme (4 x 4 micro-tiles read as 16-byte rows
// of x, transposed in registers, stored into an XOR-swizzled shared tile laid out as y's rows, then
// 16-byte pieces of those rows stored into y) with the tile in dynamic shared memory, so that it can
// be 128 x 128 (64 KiB) or 256 x 64 / 64 x 256: each x row piece TC * 4 bytes, each y row piece
// TR * 4 bytes, 512 bytes or 1 KiB where fast.cu and swizzle.cu stop at 256 (swizzle.cu's static
// tile stops at 32 KiB; fast.cu's padded 64 x 65 tile at 16.6 KiB).
// Why a new file and not fast.cu or swizzle.cu with smem(...): fast.cu's padded layout reads its
// tile by scalar columns (VEC=2: 8-byte stores, 2-way conflicts at VEC=4); swizzle.cu's swizzle
// needs no padding at any width (16-byte accesses, conflict-free in both phases: 8 different
// 16-byte bank groups per quarter warp, as its header says), and the two keep their tune spaces and
// swizzle.cu its OpenCL twin. What is new besides the size:
// - BATCH = 1 issues every load of the tile (4 * MT 16-byte loads per thread) before the first
//   shared store, whatever ptxas's scheduler prefers: the loads are plain coherent global loads
//   (not __ldg) and the shared tile is stored through a generic pointer the compiler cannot see is
//   shared (opaque()); a generic store may alias global memory, so ptxas must keep the earlier
//   loads ahead of it. In bench/transpose_floor.cu's transpose (the same loop without the edge
//   path) ptxas did sink loads among the shared stores to save registers ("4 LDG, 2 STS, 1 LDG, 2
//   STS, 5 LDG, ..." at 128 x 128, MT = 4, nvcc 13, sm_90a), each store then waiting out its load's
//   DRAM latency before the next loads went out. Here, at the knob sets compiled so far, both
//   BATCH = 1 (16 LDG.E.128, then 16 ST.E.128) and BATCH = 0 (__ldg and STS: 16 LDG, then 16 STS)
//   came out batched; BATCH = 1 guarantees it.
// - One block per tile (no persistent blocks: 64 KiB tiles leave room for three blocks per SM,
//   whose load and store phases interleave).
// Tiles in GROUP order as fast.cu's (0: x's row-major tile order; G > 0: down the tile columns of G
// tile rows at a time). Tiles that reach past an edge, and shapes with R or C not a multiple of 4 or
// misaligned pointers, take a scalar path with bounds checks (block-uniform), as swizzle.cu's.
// Every value is copied, never computed: bit-exact by construction.
// Knobs: TR, TC (tile: x rows and columns); MT (micro-tiles per thread: TR * TC / 16 / MT threads);
// GROUP (tile order); BATCH (above); OCC (blocks per SM asked of ptxas by __launch_bounds__; 0:
// none). At the defaults ptxas takes 98 registers (no spills), so registers allow two 256-thread
// blocks per SM where shared memory allows three; OCC=3 caps them at 80 (28 bytes of spills).
// PREDICTION (written before any GPU run, H200, 16384 x 16384, 2 GiB moved): at the defaults
// (TR=128 TC=128 MT=4 GROUP=32 BATCH=1 OCC=0: 256 threads, 64 KiB per block, two blocks and 128 KiB
// of loads in flight per SM) 0.524-0.545 ms, most likely 0.532 ms (94 % of copy, fast.cu's best):
// tma.cu's 40-point tune of TR/TC 32-128 (TMA: every load in flight independent of registers) did
// not pass 0.562 ms, so neither in-flight bytes nor 128-wide y pieces alone have moved the time
// so far; bench/transpose_floor.cu (stage tfloor) measures whether any tile width's DRAM address
// stream can reach 95.8 % of copy at all. If a 128- or 256-wide pattern copy there does and the
// 64-wide ones do not, this kernel at that width is the candidate to tune (try TR=256 TC=64,
// TR=64 TC=256, MT=2 and 8, OCC=3, GROUP=0/8, BATCH=0).
// Measured (2026-12-01, H200, `bench/gpu.sh run evals tfloor`, temper eval, copy 4302 GB/s): the
// defaults then (128 x 128, GROUP 32) 0.5300 ms (94.3 %), 256 x 64 0.5266 (94.9 %), 64 x 256
// 0.5314, 64 x 64 0.5312, OCC=2 0.5303; fast.cu's best 0.5300 in the same call. The prediction held
// (0.532), and width alone moved nothing. The floor bench of the same call showed what does: the
// write side costs more than the read side (64 x 64 tiles' writes alone at 93.1 % of its copy,
// their reads at 98.7 %), and the pattern copy that walks whole tile columns ("cols": the blocks in
// flight write whole rows of y, contiguous, and read 256-byte pieces of many rows of x) reached
// 97.5 % at 64 x 64, against 94-95 % for GROUP 8-32. So GROUP 1024 (whole tile columns at any
// shape up to 65536 rows of 64) became the default, at 64 x 64.
// PREDICTION for the new default (TR=64 TC=64 GROUP=1024), before it ran: 0.520-0.528 ms, most
// likely 0.523 (96.5 % of temper's copy), a real transpose losing 0.5-1 % to its pattern copy as
// the floor bench's real transposes did.
// @temper task transpose
// @temper param TR 64 128 256
// @temper param TC 64 128 256
// @temper param MT 4 2 8
// @temper param GROUP 1024 32 0 8 16 256
// @temper param BATCH 1 0
// @temper param OCC 0 3 2
// @temper require TR * TC <= 16384
// @temper require TR * TC / 16 / MT >= 64 && TR * TC / 16 / MT <= 1024
// @temper launch transpose_wide grid(ceil_div(C, TC) * ceil_div(R, TR)) block(TR * TC / 16 / MT) smem(TR * TC * 4) args(y, x, R, C)

#define MR (TR / 4)             /* micro-tile rows of a tile (4 x rows each); the float4 chunks of a y row */
#define MC (TC / 4)             /* micro-tile columns of a tile */
#define NT (MR * MC / MT)       /* threads */
#define SWZ(j) (((j) >> 2) & 7) /* the chunk swizzle of shared tile row j */

/* a generic pointer to p that the compiler cannot see is shared (BATCH = 1: stores through it may
 * alias global memory, so ptxas keeps every earlier coherent global load ahead of them) */
__device__ __forceinline__ float4 *opaque(float4 *p)
{
#if BATCH
    float4 *q;
    asm("mov.b64 %0, %1;" : "=l"(q) : "l"(p));
    return q;
#else
    return p;
#endif
}

__device__ __forceinline__ float4 ld4(const float *p)
{
#if BATCH
    return *(const float4 *)p; /* coherent: may not pass a store that may alias it */
#else
    return __ldg((const float4 *)p);
#endif
}

__device__ __forceinline__ float ld1(const float *p)
{
#if BATCH
    return *p;
#else
    return __ldg(p);
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

#if OCC > 0
#define BOUNDS __launch_bounds__(NT, OCC) /* OCC blocks per SM: registers capped at 65536 / (OCC * NT) */
#else
#define BOUNDS __launch_bounds__(NT)
#endif

extern "C" __global__ void BOUNDS transpose_wide(float *y, const float *x, int R, int C)
{
    extern __shared__ float4 smem[]; /* the tile as y's rows: row j = x column col0 + j, MR chunks, swizzled */
    float4 *tile = opaque(smem);     /* the put phase's view of it */
    const int tiles = ((C + TC - 1) / TC) * ((R + TR - 1) / TR);
    if ((int)blockIdx.x >= tiles)
        return;
    int row0, col0;
    tile_origin(blockIdx.x, R, C, &row0, &col0);
    /* 16-byte accesses need rows that start 16-byte aligned in both matrices */
    const bool full = R % 4 == 0 && C % 4 == 0 && ((((size_t)x) | ((size_t)y)) & 15) == 0 && row0 + TR <= R &&
                      col0 + TC <= C;

    /* v[k][r] = x row row0 + 4a + r, columns col0 + 4b .. + 3, for micro-tile m = tid + k * NT
     * (a = m / MC, b = m % MC); zeros past the edges on the scalar path */
    float4 v[MT][4];
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
                v[k][r].x = in && col < C ? ld1(p) : 0.0f;
                v[k][r].y = in && col + 1 < C ? ld1(p + 1) : 0.0f;
                v[k][r].z = in && col + 2 < C ? ld1(p + 2) : 0.0f;
                v[k][r].w = in && col + 3 < C ? ld1(p + 3) : 0.0f;
            }
        }
    }

    /* the micro-tiles' columns into the shared tile: tile row j = 4b + c holds x column col0 + j,
     * chunk a (x rows row0 + 4a .. + 3) at chunk a ^ SWZ(j) */
#pragma unroll
    for (int k = 0; k < MT; k++) {
        const int m = threadIdx.x + k * NT, a = m / MC, b = m % MC, s = a ^ (b & 7);
        tile[(4 * b + 0) * MR + s] = make_float4(v[k][0].x, v[k][1].x, v[k][2].x, v[k][3].x);
        tile[(4 * b + 1) * MR + s] = make_float4(v[k][0].y, v[k][1].y, v[k][2].y, v[k][3].y);
        tile[(4 * b + 2) * MR + s] = make_float4(v[k][0].z, v[k][1].z, v[k][2].z, v[k][3].z);
        tile[(4 * b + 3) * MR + s] = make_float4(v[k][0].w, v[k][1].w, v[k][2].w, v[k][3].w);
    }
    __syncthreads();

    /* y rows col0 + j, columns row0 + 4i .. + 3 from the shared tile, for piece m = tid + k * NT
     * (j = m / MR, i = m % MR); bounds checked on the scalar path */
#pragma unroll
    for (int k = 0; k < MT * 4; k++) {
        const int m = threadIdx.x + k * NT, j = m / MR, i = m % MR;
        const float4 o = smem[j * MR + (i ^ SWZ(j))];
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
