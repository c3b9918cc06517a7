// A tunable vector add for bandwidth (the OpenCL twin of fast.cu): each work-item moves VEC floats
// per access (float, float2 or float4), and ILP independent vector loads of a and of b are issued
// before the first add. A work-group handles tiles of BLOCK*ILP vectors: work-item t takes vectors
// t, t+BLOCK, ..., t+(ILP-1)*BLOCK of a tile, so each load is coalesced across the group. Full
// tiles run without bounds checks, the last partial tile with them, and the < VEC elements past
// the last whole vector (or everything, if a pointer is not VEC*4-byte aligned) go through a
// scalar loop.
// GRID = 0: an exact grid, one tile per work-group. GRID = g > 0: a grid-stride loop over tiles
// with 132*g work-groups (g per SM of an H200), capped at the number of tiles.
// @temper task vector_add
// @temper param VEC 4 2 1
// @temper param BLOCK 256 128 512 1024 64
// @temper param ILP 2 1 4 8
// @temper param GRID 0 1 2 4 8 16 32
// @temper require GRID == 0 || GRID * BLOCK <= 2048
// @temper require VEC * ILP <= 16
// @temper launch vector_add grid(min(ceil_div(N, BLOCK * VEC * ILP), 132 * GRID + (GRID == 0) * ceil_div(N, BLOCK * VEC * ILP))) block(BLOCK) args(c, a, b, N)

#if VEC == 4
typedef float4 vec_t;
#elif VEC == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1))) void
vector_add(__global float *restrict c, __global const float *restrict a, __global const float *restrict b, int N)
{
    const size_t n = (size_t)N;
    const bool aligned = ((((size_t)a) | ((size_t)b) | ((size_t)c)) & (sizeof(vec_t) - 1)) == 0;
    const size_t nv = aligned ? n / VEC : 0; /* whole vectors */
    __global const vec_t *av = (__global const vec_t *)a;
    __global const vec_t *bv = (__global const vec_t *)b;
    __global vec_t *cv = (__global vec_t *)c;
    const size_t tile = (size_t)BLOCK * ILP;
    const size_t ntiles = (nv + tile - 1) / tile;
    const size_t lid = get_local_id(0);

    for (size_t t = get_group_id(0); t < ntiles; t += get_num_groups(0)) {
        const size_t base = t * tile + lid;
        vec_t ra[ILP], rb[ILP];
        if ((t + 1) * tile <= nv) {
#pragma unroll
            for (int u = 0; u < ILP; u++) {
                ra[u] = av[base + (size_t)u * BLOCK];
                rb[u] = bv[base + (size_t)u * BLOCK];
            }
#pragma unroll
            for (int u = 0; u < ILP; u++)
                cv[base + (size_t)u * BLOCK] = ra[u] + rb[u];
        } else {
#pragma unroll
            for (int u = 0; u < ILP; u++) {
                size_t i = base + (size_t)u * BLOCK;
                if (i < nv) {
                    ra[u] = av[i];
                    rb[u] = bv[i];
                }
            }
#pragma unroll
            for (int u = 0; u < ILP; u++) {
                size_t i = base + (size_t)u * BLOCK;
                if (i < nv)
                    cv[i] = ra[u] + rb[u];
            }
        }
    }

    const size_t stride = get_num_groups(0) * (size_t)BLOCK;
    for (size_t i = nv * VEC + get_group_id(0) * (size_t)BLOCK + lid; i < n; i += stride)
        c[i] = a[i] + b[i];
}
