// A tunable vector add for bandwidth: each thread moves VEC floats per access (float, float2 or
// float4: 4, 8 or 16-byte loads and stores), and ILP independent vector loads of a and of b are in
// flight before the first add. A block handles tiles of BLOCK*ILP vectors: thread t takes vectors
// t, t+BLOCK, ..., t+(ILP-1)*BLOCK of a tile, so every load instruction is coalesced across the
// warp. Full tiles run without bounds checks, the last partial tile with them, and the < VEC
// elements past the last whole vector (or everything, if a pointer is not VEC*4-byte aligned) go
// through a scalar loop.
// GRID = 0: an exact grid, one tile per block. GRID = g > 0: a grid-stride loop over tiles with
// g blocks per SM of an H200 (132 SMs), capped at the number of tiles.
// HINT = 1: streaming cache hints (ld.global.cs / st.global.cs: evict-first; the data is touched
// once); HINT = 0: read-only loads through the non-coherent path (__ldg) and plain stores.
// @temper task vector_add
// @temper param VEC 4 2 1
// @temper param BLOCK 256 128 512 1024 64
// @temper param ILP 2 1 4 8
// @temper param GRID 0 1 2 4 8 16 32
// @temper param HINT 0 1
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

__device__ __forceinline__ float4 vadd(float4 x, float4 y)
{
    return make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
}
__device__ __forceinline__ float2 vadd(float2 x, float2 y)
{
    return make_float2(x.x + y.x, x.y + y.y);
}
__device__ __forceinline__ float vadd(float x, float y)
{
    return x + y;
}

template <typename T> __device__ __forceinline__ T vload(const T *p)
{
#if HINT
    return __ldcs(p);
#else
    return __ldg(p);
#endif
}

template <typename T> __device__ __forceinline__ void vstore(T *p, T v)
{
#if HINT
    __stcs(p, v);
#else
    *p = v;
#endif
}

extern "C" __global__ void __launch_bounds__(BLOCK) vector_add(float *__restrict__ c, const float *__restrict__ a,
                                                               const float *__restrict__ b, int N)
{
    const size_t n = (size_t)N;
    const bool aligned = ((((size_t)a) | ((size_t)b) | ((size_t)c)) & (sizeof(vec_t) - 1)) == 0;
    const size_t nv = aligned ? n / VEC : 0; /* whole vectors */
    const vec_t *av = (const vec_t *)a, *bv = (const vec_t *)b;
    vec_t *cv = (vec_t *)c;
    const size_t tile = (size_t)BLOCK * ILP;
    const size_t ntiles = (nv + tile - 1) / tile;

    for (size_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const size_t base = t * tile + threadIdx.x;
        vec_t ra[ILP], rb[ILP];
        if ((t + 1) * tile <= nv) { /* a full tile: no checks, all loads issued first */
#pragma unroll
            for (int u = 0; u < ILP; u++) {
                ra[u] = vload(av + base + (size_t)u * BLOCK);
                rb[u] = vload(bv + base + (size_t)u * BLOCK);
            }
#pragma unroll
            for (int u = 0; u < ILP; u++)
                vstore(cv + base + (size_t)u * BLOCK, vadd(ra[u], rb[u]));
        } else {
#pragma unroll
            for (int u = 0; u < ILP; u++) {
                size_t i = base + (size_t)u * BLOCK;
                if (i < nv) {
                    ra[u] = vload(av + i);
                    rb[u] = vload(bv + i);
                }
            }
#pragma unroll
            for (int u = 0; u < ILP; u++) {
                size_t i = base + (size_t)u * BLOCK;
                if (i < nv)
                    vstore(cv + i, vadd(ra[u], rb[u]));
            }
        }
    }

    /* the scalar rest: fewer than VEC elements, or all of them when a pointer is misaligned */
    const size_t stride = (size_t)gridDim.x * BLOCK;
    for (size_t i = nv * VEC + (size_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride)
        c[i] = a[i] + b[i];
}
