// A tunable softmax for bandwidth (the OpenCL twin of fast.cu, same knobs and index math; the
// merge over a row goes through a local-memory tree instead of warp shuffles): TPR work-items per
// row, RPB rows per work-group, VEC floats per access (float4/float2 when C % VEC == 0 and x, y
// are VEC*4-byte aligned, else scalar).
// REG > 0 keeps the row in registers when it fits (C <= TPR*VEC*REG elements and C % VEC == 0;
// a scalar kernel, VEC = 1, caches any row that fits): it is read from memory once. Each
// work-item loads its REG vectors up front, takes its own max m_t, replaces each value by
// exp(x - m_t) and sums them; one merge of the (m_t, s_t) pairs over the row gives (m, S), and
// each work-item writes e * exp(m_t - m) / S. Rows that do not fit (and every row when REG = 0)
// stream: one online pass keeps a running (max, sum of exp(x - max)) over chunks of 4 vectors,
// the same merge, then a second pass reads x again and writes exp(x - m) / S.
// The empty pair is (-FLT_MAX, 0), finite so that -cl-fast-relaxed-math (finite math only) keeps
// it exact: merging it needs no special case (exp(-FLT_MAX - m) = 0).
// @temper task softmax
// @temper param TPR 256 32 64 128 512 1024
// @temper param RPB 1 2 4 8
// @temper param VEC 4 2 1
// @temper param REG 4 0 1 2 8 16 32
// @temper require TPR * RPB <= 1024
// @temper require REG == 0 || (TPR * VEC * REG >= 4096 && TPR * VEC * REG <= 8192)
// @temper require 1024 % TPR == 0
// @temper launch softmax_fast grid(ceil_div(R, RPB)) block(TPR * RPB) args(y, x, R, C)

#define NEG_BIG (-FLT_MAX)
#define SU 4
#define BLOCK (TPR * RPB)

inline void merge(float *m, float *s, float m2, float s2)
{
    float mx = fmax(*m, m2);
    *s = *s * exp(*m - mx) + s2 * exp(m2 - mx);
    *m = mx;
}

/* Merges the (m, s) pairs of one row's TPR work-items; every work-item of the group calls it once
 * and every one of the row gets the same result. */
inline void row_reduce(float *m, float *s, __local float *lm, __local float *ls)
{
    const int lid = get_local_id(0), tid = lid % TPR, first = lid - tid;
    lm[lid] = *m;
    ls[lid] = *s;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = TPR / 2; o > 0; o >>= 1) {
        if (tid < o) {
            float a = lm[lid], b = ls[lid];
            merge(&a, &b, lm[lid + o], ls[lid + o]);
            lm[lid] = a;
            ls[lid] = b;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    *m = lm[first];
    *s = ls[first];
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

/* The streaming path for V-wide accesses: online (max, sum), merge, then a second read. */
#define STREAM_BODY(V)                                                                                         \
    {                                                                                                          \
        float m = NEG_BIG, s = 0.0f;                                                                           \
        for (int j0 = tid; j0 < nv; j0 += SU * TPR) {                                                          \
            float v[SU * V];                                                                                   \
            for (int u = 0; u < SU; u++) {                                                                     \
                int j = j0 + u * TPR;                                                                          \
                if (j < nv) {                                                                                  \
                    CAT(LOAD, V)(xr + (size_t)j * V, v + u * V);                                               \
                } else {                                                                                       \
                    for (int i = 0; i < V; i++)                                                                \
                        v[u * V + i] = NEG_BIG;                                                                \
                }                                                                                              \
            }                                                                                                  \
            float cm = v[0];                                                                                   \
            for (int i = 0; i < SU * V; i++)                                                                   \
                cm = fmax(cm, v[i]);                                                                           \
            if (cm > m) {                                                                                      \
                s *= exp(m - cm);                                                                              \
                m = cm;                                                                                        \
            }                                                                                                  \
            for (int i = 0; i < SU * V; i++)                                                                   \
                s += exp(v[i] - m);                                                                            \
        }                                                                                                      \
        row_reduce(&m, &s, lm, ls);                                                                            \
        const float inv = 1.0f / s;                                                                            \
        for (int j = tid; j < nv; j += TPR) {                                                                  \
            float v[V];                                                                                        \
            CAT(LOAD, V)(xr + (size_t)j * V, v);                                                               \
            for (int i = 0; i < V; i++)                                                                        \
                v[i] = exp(v[i] - m) * inv;                                                                    \
            CAT(STORE, V)(yr + (size_t)j * V, v);                                                              \
        }                                                                                                      \
    }

/* The cached path (V = VEC): REG vectors per work-item, read once. */
#define CACHED_BODY(V)                                                                                         \
    {                                                                                                          \
        float e[REG * V];                                                                                      \
        for (int k = 0; k < REG; k++) {                                                                        \
            int j = tid + k * TPR;                                                                             \
            if (j < nv) {                                                                                      \
                CAT(LOAD, V)(xr + (size_t)j * V, e + k * V);                                                   \
            } else {                                                                                           \
                for (int i = 0; i < V; i++)                                                                    \
                    e[k * V + i] = NEG_BIG;                                                                    \
            }                                                                                                  \
        }                                                                                                      \
        float mt = NEG_BIG;                                                                                    \
        for (int i = 0; i < REG * V; i++)                                                                      \
            mt = fmax(mt, e[i]);                                                                               \
        float st = 0.0f;                                                                                       \
        for (int k = 0; k < REG; k++) {                                                                        \
            if (tid + k * TPR < nv) {                                                                          \
                for (int i = 0; i < V; i++) {                                                                  \
                    e[k * V + i] = exp(e[k * V + i] - mt);                                                     \
                    st += e[k * V + i];                                                                        \
                }                                                                                              \
            }                                                                                                  \
        }                                                                                                      \
        float m = mt, s = st;                                                                                  \
        row_reduce(&m, &s, lm, ls);                                                                            \
        const float f = exp(mt - m) / s;                                                                       \
        for (int k = 0; k < REG; k++) {                                                                        \
            int j = tid + k * TPR;                                                                             \
            if (j < nv) {                                                                                      \
                for (int i = 0; i < V; i++)                                                                    \
                    e[k * V + i] *= f;                                                                         \
                CAT(STORE, V)(yr + (size_t)j * V, e + k * V);                                                  \
            }                                                                                                  \
        }                                                                                                      \
    }

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1))) void
softmax_fast(__global float *restrict y, __global const float *restrict x, int R, int C)
{
    __local float lm[BLOCK], ls[BLOCK];
    const int lid = get_local_id(0);
    const int tid = lid % TPR;
    const int row = get_group_id(0) * RPB + lid / TPR;
    const bool live = row < R;
    __global const float *xr = x + (size_t)(live ? row : 0) * C;
    __global float *yr = y + (size_t)(live ? row : 0) * C;
    const int n = live ? C : 0;
    /* uniform over the grid: every row start is VEC-aligned when the bases are and C % VEC == 0 */
    const bool vec = VEC > 1 && C % VEC == 0 && ((((size_t)x) | ((size_t)y)) & (VEC * 4 - 1)) == 0;
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
