// A tunable tiled transpose for bandwidth: each block moves one TILE x TILE tile of x through
// shared memory (rows padded by one float, so that the column reads of the write phase hit 32
// different banks). Its (TILE/VEC) x ROWS threads read the tile's rows as VEC-float vectors
// (float4/float2 when C % VEC == 0 and x is aligned; coalesced along x's rows), every load of the
// tile issued before the first shared-memory store (TILE/ROWS vector loads in flight per thread),
// then write the tile's columns as rows of y, again VEC floats per store when R % VEC == 0 and y
// is aligned (coalesced along y's rows). Each x row segment and y row segment a tile touches is
// TILE*4 bytes: whole 128-byte lines. Edge tiles check bounds; scalar paths cover odd sizes.
// GROUP = 0: a 2-D grid, tiles in x's row-major order (the blocks in flight read a band of x's rows
// and write 256-byte pieces spread over every row of y); GROUP > 0: a 1-D grid walking down the
// tile columns of GROUP tile rows at a time (as GEMMs group their tiles), so that the blocks in
// flight write GROUP * TILE * 4 contiguous bytes per row of y and read shorter runs of x.
// GROUP 1024 walks whole tile columns (the blocks in flight write whole rows of y): on an H200 at
// 16384 x 16384 (2026-12-01, `bench/gpu.sh run evals`) TILE=64 VEC=2 ROWS=16 took 0.5149 ms with
// GROUP 1024 (97.4 % of copy) against 0.5308 with GROUP 32 in the same call, as
// bench/transpose_floor.cu's column-walk pattern copy had predicted (97.5 %).
// @temper task transpose
// @temper param TILE 32 64
// @temper param VEC 4 2 1
// @temper param ROWS 8 1 2 4 16 32
// @temper param GROUP 0 8 16 32 4 1024
// @temper require ROWS <= TILE
// @temper require TILE / VEC * ROWS >= 64 && TILE / VEC * ROWS <= 1024
// @temper launch transpose_fast grid(ceil_div(C, TILE), ceil_div(R, TILE)) block(TILE / VEC * ROWS) args(y, x, R, C) when(GROUP == 0)
// @temper launch transpose_fast grid(ceil_div(C, TILE) * ceil_div(R, TILE)) block(TILE / VEC * ROWS) args(y, x, R, C) when(1)

#define TX (TILE / VEC)  /* threads along a tile row */
#define NK (TILE / ROWS) /* tile rows per thread */

extern "C" __global__ void __launch_bounds__(TX *ROWS)
    transpose_fast(float *__restrict__ y, const float *__restrict__ x, int R, int C)
{
    __shared__ float tile[TILE][TILE + 1];
    const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
#if GROUP > 0
    /* GROUP tile rows at a time, down their tile columns (the last group may have fewer rows) */
    const int nbx = (C + TILE - 1) / TILE, nby = (R + TILE - 1) / TILE;
    const int per = GROUP * nbx, first = (int)(blockIdx.x / per) * GROUP, rows = min(GROUP, nby - first);
    const int w = (int)(blockIdx.x % per);
    const int row0 = (first + w % rows) * TILE, col0 = (w / rows) * TILE; /* the tile's origin in x */
#else
    const int row0 = blockIdx.y * TILE, col0 = blockIdx.x * TILE; /* the tile's origin in x */
#endif
    const bool vld = VEC > 1 && C % VEC == 0 && (((size_t)x) & (VEC * 4 - 1)) == 0;
    const bool vst = VEC > 1 && R % VEC == 0 && (((size_t)y) & (VEC * 4 - 1)) == 0;

    /* read: tile[i][j] = x[row0 + i][col0 + j] */
    float v[NK][VEC];
    const int c = col0 + tx * VEC;
    if (vld) {
#pragma unroll
        for (int k = 0; k < NK; k++) {
            const int r = row0 + ty + k * ROWS;
            if (r < R && c < C) { /* c and C are multiples of VEC: the whole vector is in range */
                const float *p = x + (size_t)r * C + c;
#if VEC == 4
                float4 t = __ldg((const float4 *)p);
                v[k][0] = t.x;
                v[k][1] = t.y;
                v[k][2] = t.z;
                v[k][3] = t.w;
#elif VEC == 2
                float2 t = __ldg((const float2 *)p);
                v[k][0] = t.x;
                v[k][1] = t.y;
#else
                v[k][0] = __ldg(p);
#endif
            }
        }
    } else {
#pragma unroll
        for (int k = 0; k < NK; k++) {
            const int r = row0 + ty + k * ROWS;
#pragma unroll
            for (int i = 0; i < VEC; i++)
                if (r < R && c + i < C)
                    v[k][i] = __ldg(x + (size_t)r * C + c + i);
        }
    }
#pragma unroll
    for (int k = 0; k < NK; k++)
#pragma unroll
        for (int i = 0; i < VEC; i++)
            tile[ty + k * ROWS][tx * VEC + i] = v[k][i]; /* garbage past the edge is never written out */
    __syncthreads();

    /* write: y[col0 + j][row0 + i] = tile[i][j], thread (tx, ty) taking j = ty + k*ROWS and
     * i = tx*VEC .. tx*VEC + VEC-1 */
    const int yc = row0 + tx * VEC;
#pragma unroll
    for (int k = 0; k < NK; k++) {
        const int yr = col0 + ty + k * ROWS;
        if (yr >= C)
            continue;
        float o[VEC];
#pragma unroll
        for (int i = 0; i < VEC; i++)
            o[i] = tile[tx * VEC + i][ty + k * ROWS];
        float *p = y + (size_t)yr * R + yc;
        if (vst) {
            if (yc < R) {
#if VEC == 4
                *(float4 *)p = make_float4(o[0], o[1], o[2], o[3]);
#elif VEC == 2
                *(float2 *)p = make_float2(o[0], o[1]);
#else
                *p = o[0];
#endif
            }
        } else {
#pragma unroll
            for (int i = 0; i < VEC; i++)
                if (yc + i < R)
                    p[i] = o[i];
        }
    }
}
