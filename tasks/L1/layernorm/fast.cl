// A tunable layernorm for bandwidth, the OpenCL twin of fast.cu (same knobs and index math; the
// sums over a row go through a local-memory tree instead of warp shuffles): TPR work-items per row,
// RPB rows per work-group, VEC floats per access (float4/float2 when C % VEC == 0 and y, x, gamma,
// beta are VEC*4-byte aligned, else scalar). REG > 0 keeps the row in registers when it fits
// (C <= TPR*VEC*REG): the mean, then the biased variance as the mean of (x - mean)^2, then the
// output come from registers, x read once. Other rows (all rows when REG = 0) read x three times.
// @temper task layernorm
// @temper param TPR 128 32 64 256 512 1024
// @temper param RPB 1 2 4 8
// @temper param VEC 4 2 1
// @temper param REG 8 0 1 2 4 16 32
// @temper require TPR * RPB <= 1024
// @temper require REG == 0 || (TPR * VEC * REG >= 4096 && TPR * VEC * REG <= 8192)
// @temper require 1024 % TPR == 0
// @temper launch layernorm_fast grid(ceil_div(R, RPB)) block(TPR * RPB) args(y, x, gamma, beta, R, C)

#define BLOCK (TPR * RPB)

/* The sum of v over one row's TPR work-items, returned to all of them; every work-item of the
 * group calls it (a barrier first, so that buf may be reused from the last call). */
inline float row_sum(float v, __local float *buf)
{
    const int lid = get_local_id(0), tid = lid % TPR;
    barrier(CLK_LOCAL_MEM_FENCE);
    buf[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = TPR / 2; o > 0; o >>= 1) {
        if (tid < o)
            buf[lid] += buf[lid + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return buf[lid - tid];
}

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


/* The three-pass streaming path for V-wide accesses */
#define STREAM_BODY(V)                                                                                         \
    {                                                                                                          \
        float s = 0.0f;                                                                                        \
        for (int j = tid; j < nv; j += TPR) {                                                                  \
            float v[V];                                                                                        \
            CAT(LOAD, V)(xr + (size_t)j * V, v);                                                               \
            for (int i = 0; i < V; i++)                                                                        \
                s += v[i];                                                                                     \
        }                                                                                                      \
        const float mean = row_sum(s, buf) * invC;                                                             \
        float q = 0.0f;                                                                                        \
        for (int j = tid; j < nv; j += TPR) {                                                                  \
            float v[V];                                                                                        \
            CAT(LOAD, V)(xr + (size_t)j * V, v);                                                               \
            for (int i = 0; i < V; i++) {                                                                      \
                float d = v[i] - mean;                                                                         \
                q += d * d;                                                                                    \
            }                                                                                                  \
        }                                                                                                      \
        const float rstd = rsqrt(row_sum(q, buf) * invC + 1e-5f);                                              \
        for (int j = tid; j < nv; j += TPR) {                                                                  \
            float v[V], g[V], b[V];                                                                            \
            CAT(LOAD, V)(xr + (size_t)j * V, v);                                                               \
            CAT(LOAD, V)(gamma + (size_t)j * V, g);                                                            \
            CAT(LOAD, V)(beta + (size_t)j * V, b);                                                             \
            for (int i = 0; i < V; i++)                                                                        \
                v[i] = (v[i] - mean) * rstd * g[i] + b[i];                                                     \
            CAT(STORE, V)(yr + (size_t)j * V, v);                                                              \
        }                                                                                                      \
    }

/* The cached path (V = VEC): REG vectors per work-item, read once */
#define CACHED_BODY(V)                                                                                         \
    {                                                                                                          \
        float e[REG * V];                                                                                      \
        for (int k = 0; k < REG; k++) {                                                                        \
            int j = tid + k * TPR;                                                                             \
            if (j < nv) {                                                                                      \
                CAT(LOAD, V)(xr + (size_t)j * V, e + k * V);                                                   \
            } else {                                                                                           \
                for (int i = 0; i < V; i++)                                                                    \
                    e[k * V + i] = 0.0f;                                                                       \
            }                                                                                                  \
        }                                                                                                      \
        float s = 0.0f;                                                                                        \
        for (int i = 0; i < REG * V; i++)                                                                      \
            s += e[i];                                                                                         \
        const float mean = row_sum(s, buf) * invC;                                                             \
        float q = 0.0f;                                                                                        \
        for (int k = 0; k < REG; k++) {                                                                        \
            if (tid + k * TPR < nv) {                                                                          \
                for (int i = 0; i < V; i++) {                                                                  \
                    float d = e[k * V + i] - mean;                                                             \
                    q += d * d;                                                                                \
                }                                                                                              \
            }                                                                                                  \
        }                                                                                                      \
        const float rstd = rsqrt(row_sum(q, buf) * invC + 1e-5f);                                              \
        for (int k = 0; k < REG; k++) {                                                                        \
            int j = tid + k * TPR;                                                                             \
            if (j < nv) {                                                                                      \
                float g[V], b[V], o[V];                                                                        \
                CAT(LOAD, V)(gamma + (size_t)j * V, g);                                                        \
                CAT(LOAD, V)(beta + (size_t)j * V, b);                                                         \
                for (int i = 0; i < V; i++)                                                                    \
                    o[i] = (e[k * V + i] - mean) * rstd * g[i] + b[i];                                         \
                CAT(STORE, V)(yr + (size_t)j * V, o);                                                          \
            }                                                                                                  \
        }                                                                                                      \
    }

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1))) void
layernorm_fast(__global float *restrict y, __global const float *restrict x, __global const float *restrict gamma,
               __global const float *restrict beta, int R, int C)
{
    __local float buf[BLOCK];
    const int lid = get_local_id(0);
    const int tid = lid % TPR;
    const int row = get_group_id(0) * RPB + lid / TPR;
    const bool live = row < R;
    __global const float *xr = x + (size_t)(live ? row : 0) * C;
    __global float *yr = y + (size_t)(live ? row : 0) * C;
    const int n = live ? C : 0;
    const float invC = 1.0f / (float)C;
    const bool vec = VEC > 1 && C % VEC == 0 &&
                     ((((size_t)x) | ((size_t)y) | ((size_t)gamma) | ((size_t)beta)) & (VEC * 4 - 1)) == 0;
    if (vec || VEC == 1) {
        const int nv = n / VEC;
#if REG > 0
        if (C / VEC <= REG * TPR)
            CACHED_BODY(VEC)
        else
#endif
            STREAM_BODY(VEC)
    } else {
        const int nv = n;
        STREAM_BODY(1)
    }
}
