// A tunable tiled transpose for bandwidth (the OpenCL twin of fast.cu, same knobs and index math): each block moves one TILE x TILE tile of x through
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
// @temper task transpose
// @temper param TILE 32 64
// @temper param VEC 4 2 1
// @temper param ROWS 8 1 2 4 16 32
// @temper param GROUP 0 8 16 32 4
// @temper require ROWS <= TILE
// @temper require TILE / VEC * ROWS >= 64 && TILE / VEC * ROWS <= 1024
// @temper launch transpose_fast grid(ceil_div(C, TILE), ceil_div(R, TILE)) block(TILE / VEC * ROWS) args(y, x, R, C) when(GROUP == 0)
// @temper launch transpose_fast grid(ceil_div(C, TILE) * ceil_div(R, TILE)) block(TILE / VEC * ROWS) args(y, x, R, C) when(1)

#define TX (TILE / VEC)  /* threads along a tile row */
#define NK (TILE / ROWS) /* tile rows per thread */

__kernel __attribute__((reqd_work_group_size(TX * ROWS, 1, 1))) void
transpose_fast(__global float *restrict y, __global const float *restrict x, int R, int C)
{
    __local float tile[TILE][TILE + 1];
    const int tx = get_local_id(0) % TX, ty = get_local_id(0) / TX;
#if GROUP > 0
    /* GROUP tile rows at a time, down their tile columns (the last group may have fewer rows) */
    const int nbx = (C + TILE - 1) / TILE, nby = (R + TILE - 1) / TILE;
    const int per = GROUP * nbx, first = (int)(get_group_id(0) / per) * GROUP, rows = min(GROUP, nby - first);
    const int w = (int)(get_group_id(0) % per);
    const int row0 = (first + w % rows) * TILE, col0 = (w / rows) * TILE; /* the tile's origin in x */
#else
    const int row0 = get_group_id(1) * TILE, col0 = get_group_id(0) * TILE; /* the tile's origin in x */
#endif
    const bool vld = VEC > 1 && C % VEC == 0 && (((size_t)x) & (VEC * 4 - 1)) == 0;
    const bool vst = VEC > 1 && R % VEC == 0 && (((size_t)y) & (VEC * 4 - 1)) == 0;

    /* read: tile[i][j] = x[row0 + i][col0 + j] */
    float v[NK][VEC];
    const int c = col0 + tx * VEC;
    if (vld) {
        for (int k = 0; k < NK; k++) {
            const int r = row0 + ty + k * ROWS;
            if (r < R && c < C) { /* c and C are multiples of VEC: the whole vector is in range */
                __global const float *p = x + (size_t)r * C + c;
#if VEC == 4
                float4 t = *(__global const float4 *)p;
                v[k][0] = t.x;
                v[k][1] = t.y;
                v[k][2] = t.z;
                v[k][3] = t.w;
#elif VEC == 2
                float2 t = *(__global const float2 *)p;
                v[k][0] = t.x;
                v[k][1] = t.y;
#else
                v[k][0] = *p;
#endif
            }
        }
    } else {
        for (int k = 0; k < NK; k++) {
            const int r = row0 + ty + k * ROWS;
            for (int i = 0; i < VEC; i++)
                if (r < R && c + i < C)
                    v[k][i] = x[(size_t)r * C + c + i];
        }
    }
    for (int k = 0; k < NK; k++)
        for (int i = 0; i < VEC; i++)
            tile[ty + k * ROWS][tx * VEC + i] = v[k][i]; /* garbage past the edge is never written out */
    barrier(CLK_LOCAL_MEM_FENCE);

    /* write: y[col0 + j][row0 + i] = tile[i][j], thread (tx, ty) taking j = ty + k*ROWS and
     * i = tx*VEC .. tx*VEC + VEC-1 */
    const int yc = row0 + tx * VEC;
    for (int k = 0; k < NK; k++) {
        const int yr = col0 + ty + k * ROWS;
        if (yr >= C)
            continue;
        float o[VEC];
        for (int i = 0; i < VEC; i++)
            o[i] = tile[tx * VEC + i][ty + k * ROWS];
        __global float *p = y + (size_t)yr * R + yc;
        if (vst) {
            if (yc < R) {
#if VEC == 4
                *(__global float4 *)p = (float4)(o[0], o[1], o[2], o[3]);
#elif VEC == 2
                *(__global float2 *)p = (float2)(o[0], o[1]);
#else
                *p = o[0];
#endif
            }
        } else {
            for (int i = 0; i < VEC; i++)
                if (yc + i < R)
                    p[i] = o[i];
        }
    }
}
