// A tunable sum for bandwidth, in two deterministic launches. The first: a grid of
// min(132*GRID, tiles) blocks (GRID blocks per SM of an H200) walks the input in tiles of
// BLOCK*ILP vectors of VEC floats with a grid-stride loop; each thread issues its ILP vector
// loads of a tile before adding them into ILP*VEC independent accumulators (no dependent-add
// chain stalls the loads), full tiles without bounds checks; the < VEC elements past the last whole
// vector (or all of them if x is not VEC*4-byte aligned) are added by a scalar loop. The
// accumulators are summed pairwise, the block reduces with warp shuffles and shared memory, and
// writes one partial sum. The second launch, one block, adds the partial sums in a fixed order.
// Every addition happens in a fixed order, so the result is the same bit for bit on every run.
// @temper task reduce_sum
// @temper param VEC 4 2 1
// @temper param BLOCK 256 128 512 1024
// @temper param ILP 4 1 2 8
// @temper param GRID 8 1 2 4 16 32
// @temper require GRID * BLOCK <= 2048
// @temper require VEC * ILP <= 16
// @temper scratch partial f32 132 * GRID
// @temper require 1024 % BLOCK == 0 && BLOCK % 32 == 0
// @temper launch partial_sums grid(min(132 * GRID, ceil_div(N, BLOCK * VEC * ILP))) block(BLOCK) args(partial, x, N)
// @temper launch final_sum grid(1) block(1024) args(out, partial, N)

#if VEC == 4
typedef float4 vec_t;
#elif VEC == 2
typedef float2 vec_t;
#else
typedef float vec_t;
#endif

__device__ __forceinline__ void vacc(float *acc, float4 v)
{
    acc[0] += v.x;
    acc[1] += v.y;
    acc[2] += v.z;
    acc[3] += v.w;
}
__device__ __forceinline__ void vacc(float *acc, float2 v)
{
    acc[0] += v.x;
    acc[1] += v.y;
}
__device__ __forceinline__ void vacc(float *acc, float v)
{
    acc[0] += v;
}

/* The sum of v over a block of NT threads, returned to thread 0 (the others get partial sums). */
template <int NT> __device__ __forceinline__ float block_sum(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (NT > 32) {
        __shared__ float ws[NT / 32];
        const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
        if (lane == 0)
            ws[warp] = v;
        __syncthreads();
        if (warp == 0) {
            v = lane < NT / 32 ? ws[lane] : 0.0f;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                v += __shfl_xor_sync(0xffffffffu, v, o);
        }
    }
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK) partial_sums(float *__restrict__ partial,
                                                                 const float *__restrict__ x, int N)
{
    const size_t n = (size_t)N;
    const size_t nv = (((size_t)x) & (sizeof(vec_t) - 1)) == 0 ? n / VEC : 0; /* whole vectors */
    const vec_t *xv = (const vec_t *)x;
    const size_t tile = (size_t)BLOCK * ILP;
    const size_t ntiles = (nv + tile - 1) / tile;

    float acc[ILP * VEC];
#pragma unroll
    for (int i = 0; i < ILP * VEC; i++)
        acc[i] = 0.0f;

    for (size_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const size_t base = t * tile + threadIdx.x;
        if ((t + 1) * tile <= nv) {
            vec_t v[ILP];
#pragma unroll
            for (int u = 0; u < ILP; u++)
                v[u] = __ldg(xv + base + (size_t)u * BLOCK);
#pragma unroll
            for (int u = 0; u < ILP; u++)
                vacc(acc + u * VEC, v[u]);
        } else {
#pragma unroll
            for (int u = 0; u < ILP; u++) {
                size_t i = base + (size_t)u * BLOCK;
                if (i < nv)
                    vacc(acc + u * VEC, __ldg(xv + i));
            }
        }
    }
    const size_t stride = (size_t)gridDim.x * BLOCK;
    for (size_t i = nv * VEC + (size_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride)
        acc[0] += x[i];

#pragma unroll
    for (int w = 1; w < ILP * VEC; w *= 2) /* pairwise: acc[0] ends with the thread's sum */
#pragma unroll
        for (int i = 0; i + w < ILP * VEC; i += 2 * w)
            acc[i] += acc[i + w];
    float s = block_sum<BLOCK>(acc[0]);
    if (threadIdx.x == 0)
        partial[blockIdx.x] = s;
}

extern "C" __global__ void __launch_bounds__(1024) final_sum(float *out, const float *__restrict__ partial, int N)
{
    /* the first launch's grid, recomputed: min(132 * GRID, ceil_div(N, BLOCK * VEC * ILP)) */
    const long long per = (long long)BLOCK * VEC * ILP;
    const long long tiles = ((long long)N + per - 1) / per;
    const int nparts = (int)(tiles < 132LL * GRID ? tiles : 132LL * GRID);
    float s = 0.0f;
    for (int j = threadIdx.x; j < nparts; j += 1024)
        s += partial[j];
    s = block_sum<1024>(s);
    if (threadIdx.x == 0)
        out[0] = s;
}
