// A tunable row-wise inclusive scan (cumsum) for bandwidth: TPR threads per row (32: a warp per
// row, no block barriers; 64..1024: several warps), RPB rows per block, VEC floats per access
// (float4/float2 when C % VEC == 0 and x, y are VEC*4-byte aligned, else scalar). The row is walked
// in tiles of TPR*ILP vectors; in a tile, thread t holds vectors t, t+TPR, ..., t+(ILP-1)*TPR
// (coalesced loads, ILP in flight), so sub-tile u is a contiguous run of TPR vectors. Each thread
// scans its vectors' VEC elements, the warps scan the vector totals with shuffles (all ILP
// sub-tiles at once), the warp totals are scanned through shared memory (double-buffered: one
// barrier per tile), and each element gets carry + the totals before it; the carry then grows by
// the tile's total. x is read once and y written once: 8 bytes per element. PREFETCH = 1 issues
// the next tile's loads before scanning the current one (two tiles of registers), so that loads
// stay in flight through the scan and its barrier.
// @temper task cumsum
// @temper param TPR 256 32 64 128 512 1024
// @temper param RPB 1 2 4 8
// @temper param VEC 4 2 1
// @temper param ILP 2 1 4
// @temper param PREFETCH 1 0
// @temper require TPR * RPB <= 1024
// @temper require VEC * ILP * (1 + PREFETCH) <= 32
// @temper launch cumsum_fast grid(ceil_div(R, RPB)) block(TPR * RPB) args(y, x, R, C)

#define NWARP (TPR / 32)
#define FULL 0xffffffffu

template <int V> struct vec_io;
template <> struct vec_io<4> {
    static __device__ __forceinline__ void load(const float *p, float *v)
    {
        float4 t = __ldg((const float4 *)p);
        v[0] = t.x;
        v[1] = t.y;
        v[2] = t.z;
        v[3] = t.w;
    }
    static __device__ __forceinline__ void store(float *p, const float *v)
    {
        *(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
    }
};
template <> struct vec_io<2> {
    static __device__ __forceinline__ void load(const float *p, float *v)
    {
        float2 t = __ldg((const float2 *)p);
        v[0] = t.x;
        v[1] = t.y;
    }
    static __device__ __forceinline__ void store(float *p, const float *v)
    {
        *(float2 *)p = make_float2(v[0], v[1]);
    }
};
template <> struct vec_io<1> {
    static __device__ __forceinline__ void load(const float *p, float *v)
    {
        v[0] = __ldg(p);
    }
    static __device__ __forceinline__ void store(float *p, const float *v)
    {
        *p = v[0];
    }
};

/* v[u] = the V-wide access j0 + u*TPR of the row (zeros past its nv accesses) */
template <int V> __device__ __forceinline__ void load_tile(float (&v)[ILP][V], const float *xr, int nv, int j0)
{
#pragma unroll
    for (int u = 0; u < ILP; u++) {
        int j = j0 + u * TPR;
        if (j < nv) {
            vec_io<V>::load(xr + (size_t)j * V, v[u]);
        } else {
#pragma unroll
            for (int i = 0; i < V; i++)
                v[u][i] = 0.0f;
        }
    }
}

/* One row of n elements (n = 0 for a block's rows past R), V-wide accesses (n % V == 0). The tile
 * count depends on C alone, the same for every row of the block, since the tiles synchronise. */
template <int V> __device__ __forceinline__ void scan_row(float *yr, const float *xr, int n, int C, int tid)
{
    const int nv = n / V, cv = C / V;
    const int lane = threadIdx.x % 32;
#if NWARP > 1
    __shared__ float ws[2][RPB][ILP][NWARP];
    const int warp = tid / 32, slot = threadIdx.x / TPR;
#endif
    float carry = 0.0f;
    float v[ILP][V];
#if PREFETCH
    load_tile<V>(v, xr, nv, tid);
#endif
    int it = 0;
    for (int t0 = 0; t0 < cv; t0 += TPR * ILP, it++) {
#if PREFETCH
        float nx[ILP][V]; /* the next tile's loads go out before this tile's scan */
        load_tile<V>(nx, xr, nv, t0 + TPR * ILP + tid);
#else
        load_tile<V>(v, xr, nv, t0 + tid);
#endif
        float incl[ILP], excl[ILP], wpre[ILP], tot[ILP];
#pragma unroll
        for (int u = 0; u < ILP; u++) {
#pragma unroll
            for (int i = 1; i < V; i++)
                v[u][i] += v[u][i - 1];
            incl[u] = v[u][V - 1];
        }
#pragma unroll
        for (int o = 1; o < 32; o <<= 1) {
#pragma unroll
            for (int u = 0; u < ILP; u++) {
                float p = __shfl_up_sync(FULL, incl[u], o);
                if (lane >= o)
                    incl[u] += p;
            }
        }
#pragma unroll
        for (int u = 0; u < ILP; u++) {
            float p = __shfl_up_sync(FULL, incl[u], 1);
            excl[u] = lane ? p : 0.0f; /* the sum of the warp's vectors before this thread's */
        }
#if NWARP > 1
        if (lane == 31) {
#pragma unroll
            for (int u = 0; u < ILP; u++)
                ws[it & 1][slot][u][warp] = incl[u];
        }
        __syncthreads(); /* buffer it & 1 is next written two tiles on, after another barrier */
#pragma unroll
        for (int u = 0; u < ILP; u++) {
            float s = lane < NWARP ? ws[it & 1][slot][u][lane] : 0.0f;
#pragma unroll
            for (int o = 1; o < NWARP; o <<= 1) {
                float p = __shfl_up_sync(FULL, s, o);
                if (lane >= o)
                    s += p;
            }
            float before = __shfl_sync(FULL, s, (warp + 31) & 31);
            wpre[u] = warp ? before : 0.0f; /* the sum of the earlier warps' vectors */
            tot[u] = __shfl_sync(FULL, s, NWARP - 1);
        }
#else
#pragma unroll
        for (int u = 0; u < ILP; u++) {
            wpre[u] = 0.0f;
            tot[u] = __shfl_sync(FULL, incl[u], 31);
        }
#endif
#pragma unroll
        for (int u = 0; u < ILP; u++) {
            const float off = carry + wpre[u] + excl[u];
#pragma unroll
            for (int i = 0; i < V; i++)
                v[u][i] += off;
            carry += tot[u];
        }
#pragma unroll
        for (int u = 0; u < ILP; u++) {
            int j = t0 + u * TPR + tid;
            if (j < nv)
                vec_io<V>::store(yr + (size_t)j * V, v[u]);
        }
#if PREFETCH
#pragma unroll
        for (int u = 0; u < ILP; u++)
#pragma unroll
            for (int i = 0; i < V; i++)
                v[u][i] = nx[u][i];
#endif
    }
}

extern "C" __global__ void __launch_bounds__(TPR *RPB) cumsum_fast(float *__restrict__ y, const float *__restrict__ x,
                                                                  int R, int C)
{
    const int tid = threadIdx.x % TPR;
    const int row = blockIdx.x * RPB + threadIdx.x / TPR;
    const bool live = row < R;
    const float *xr = x + (size_t)(live ? row : 0) * C;
    float *yr = y + (size_t)(live ? row : 0) * C;
    const int n = live ? C : 0;
    const bool vec = VEC > 1 && C % VEC == 0 && ((((size_t)x) | ((size_t)y)) & (VEC * 4 - 1)) == 0;
    if (vec)
        scan_row<VEC>(yr, xr, n, C, tid);
    else
        scan_row<1>(yr, xr, n, C, tid);
}
