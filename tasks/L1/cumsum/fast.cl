// A tunable row-wise inclusive scan (cumsum) for bandwidth, the OpenCL twin of fast.cu (same knobs,
// tiles and carry; the scan of the per-work-item totals is a local-memory Hillis-Steele scan over
// the row's TPR work-items instead of warp shuffles): TPR work-items per row, RPB rows per
// work-group, VEC floats per access (float4/float2 when C % VEC == 0 and x, y are aligned, else
// scalar). The row is walked in tiles of TPR*ILP vectors, work-item t holding vectors
// t, t+TPR, ..., t+(ILP-1)*TPR of a tile; each element gets carry + the totals before it.
// PREFETCH = 1 loads the next tile before scanning the current one.
// @temper task cumsum
// @temper param TPR 256 32 64 128 512 1024
// @temper param RPB 1 2 4 8
// @temper param VEC 4 2 1
// @temper param ILP 2 1 4
// @temper param PREFETCH 1 0
// @temper require TPR * RPB <= 1024
// @temper require VEC * ILP * (1 + PREFETCH) <= 32
// @temper launch cumsum_fast grid(ceil_div(R, RPB)) block(TPR * RPB) args(y, x, R, C)

#define BLOCK (TPR * RPB)

#define LOAD1(p, v)                                                                                            \
    do {                                                                                                       \
        (v)[0] = *(p);                                                                                         \
    } while (0)
#define STORE1(p, v)                                                                                           \
    do {                                                                                                       \
        *(p) = (v)[0];                                                                                         \
    } while (0)
#define LOAD2(p, v)                                                                                            \
    do {                                                                                                       \
        float2 t_ = *(__global const float2 *)(p);                                                             \
        (v)[0] = t_.x;                                                                                         \
        (v)[1] = t_.y;                                                                                         \
    } while (0)
#define STORE2(p, v)                                                                                           \
    do {                                                                                                       \
        *(__global float2 *)(p) = (float2)((v)[0], (v)[1]);                                                    \
    } while (0)
#define LOAD4(p, v)                                                                                            \
    do {                                                                                                       \
        float4 t_ = *(__global const float4 *)(p);                                                             \
        (v)[0] = t_.x;                                                                                         \
        (v)[1] = t_.y;                                                                                         \
        (v)[2] = t_.z;                                                                                         \
        (v)[3] = t_.w;                                                                                         \
    } while (0)
#define STORE4(p, v)                                                                                           \
    do {                                                                                                       \
        *(__global float4 *)(p) = (float4)((v)[0], (v)[1], (v)[2], (v)[3]);                                    \
    } while (0)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)


/* buf[u] = the V-wide access j0 + u*TPR of the row (zeros past its nv accesses) */
#define LOAD_TILE(V, buf, j0)                                                                                  \
    for (int u = 0; u < ILP; u++) {                                                                            \
        int j = (j0) + u * TPR;                                                                                \
        if (j < nv) {                                                                                          \
            CAT(LOAD, V)(xr + (size_t)j * V, (buf) + u * V);                                                   \
        } else {                                                                                               \
            for (int i = 0; i < V; i++)                                                                        \
                (buf)[u * V + i] = 0.0f;                                                                       \
        }                                                                                                      \
    }

#define SCAN_BODY(V)                                                                                           \
    {                                                                                                          \
        float carry = 0.0f;                                                                                    \
        float v[ILP * V], nx[ILP * V];                                                                         \
        if (PREFETCH)                                                                                          \
            LOAD_TILE(V, nx, tid);                                                                             \
        for (int t0 = 0; t0 < cv; t0 += TPR * ILP) {                                                           \
            if (PREFETCH) {                                                                                    \
                for (int i = 0; i < ILP * V; i++)                                                              \
                    v[i] = nx[i];                                                                              \
                LOAD_TILE(V, nx, t0 + TPR * ILP + tid);                                                        \
            } else {                                                                                           \
                LOAD_TILE(V, v, t0 + tid);                                                                     \
            }                                                                                                  \
            for (int u = 0; u < ILP; u++) {                                                                    \
                for (int i = 1; i < V; i++)                                                                    \
                    v[u * V + i] += v[u * V + i - 1];                                                          \
                sb[u * BLOCK + lid] = v[u * V + V - 1];                                                        \
            }                                                                                                  \
            barrier(CLK_LOCAL_MEM_FENCE);                                                                      \
            for (int o = 1; o < TPR; o <<= 1) {                                                                \
                float p[ILP];                                                                                  \
                for (int u = 0; u < ILP; u++)                                                                  \
                    p[u] = tid >= o ? sb[u * BLOCK + lid - o] : 0.0f;                                          \
                barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
                for (int u = 0; u < ILP; u++)                                                                  \
                    sb[u * BLOCK + lid] += p[u];                                                               \
                barrier(CLK_LOCAL_MEM_FENCE);                                                                  \
            }                                                                                                  \
            for (int u = 0; u < ILP; u++) {                                                                    \
                const float before = tid ? sb[u * BLOCK + lid - 1] : 0.0f;                                     \
                const float off = carry + before;                                                              \
                for (int i = 0; i < V; i++)                                                                    \
                    v[u * V + i] += off;                                                                       \
                carry += sb[u * BLOCK + first + TPR - 1];                                                      \
            }                                                                                                  \
            barrier(CLK_LOCAL_MEM_FENCE); /* all reads of sb done before the next tile writes it */            \
            for (int u = 0; u < ILP; u++) {                                                                    \
                int j = t0 + u * TPR + tid;                                                                    \
                if (j < nv)                                                                                    \
                    CAT(STORE, V)(yr + (size_t)j * V, v + u * V);                                              \
            }                                                                                                  \
        }                                                                                                      \
    }

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1))) void
cumsum_fast(__global float *restrict y, __global const float *restrict x, int R, int C)
{
    __local float sb[ILP * BLOCK];
    const int lid = get_local_id(0);
    const int tid = lid % TPR, first = lid - tid;
    const int row = get_group_id(0) * RPB + lid / TPR;
    const bool live = row < R;
    __global const float *xr = x + (size_t)(live ? row : 0) * C;
    __global float *yr = y + (size_t)(live ? row : 0) * C;
    const int n = live ? C : 0;
    const bool vec = VEC > 1 && C % VEC == 0 && ((((size_t)x) | ((size_t)y)) & (VEC * 4 - 1)) == 0;
    if (vec || VEC == 1) {
        const int nv = n / VEC, cv = C / VEC;
        SCAN_BODY(VEC)
    } else {
        const int nv = n, cv = C;
        SCAN_BODY(1)
    }
}
