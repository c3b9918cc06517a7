// A tunable bf16 GEMV (y = W x, fp32 accumulation) for bandwidth, the OpenCL twin of fast.cu (same
// knobs and index math; the row's partial sums go through a local-memory tree instead of warp
// shuffles): TPR work-items per row of W, RPB rows per work-group, VEC bf16 values per access
// (8: uint4, 4: uint2, 2: one 32-bit word) when K % VEC == 0 and W, x are 2*VEC-byte aligned,
// else scalar. Each work-item issues UNROLL independent vector loads of W (and of x) per step into
// UNROLL independent accumulators; one work-item rounds the row total to bf16 (nearest even).
// @temper task gemv
// @temper param TPR 32 64 128 256
// @temper param RPB 4 1 2 8 16
// @temper param VEC 8 4 2
// @temper param UNROLL 4 1 2 8
// @temper require TPR * RPB <= 1024 && TPR * RPB >= 64
// @temper require VEC * UNROLL <= 32
// @temper require 1024 % TPR == 0
// @temper launch gemv_fast grid(ceil_div(N, RPB)) block(TPR * RPB) args(y, W, x, N, K)

#define BLOCK (TPR * RPB)
#define WV (VEC / 2)

#if VEC == 8
typedef uint4 wvec_t;
#elif VEC == 4
typedef uint2 wvec_t;
#else
typedef uint wvec_t;
#endif

inline uint f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a NaN */
        return ((u >> 16) | 0x40u) & 0xffffu;
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return u >> 16;
}

inline float bf_elem(const uint *w, int i)
{
    return as_float(i & 1 ? w[i >> 1] & 0xffff0000u : w[i >> 1] << 16);
}

inline void load_words(__global const ushort *p, uint *w)
{
    wvec_t t = *(__global const wvec_t *)p;
#if VEC == 8
    w[0] = t.x;
    w[1] = t.y;
    w[2] = t.z;
    w[3] = t.w;
#elif VEC == 4
    w[0] = t.x;
    w[1] = t.y;
#else
    w[0] = t;
#endif
}

inline float dotv(const uint *w, const uint *xv, float acc)
{
    for (int i = 0; i < VEC; i++)
        acc = fma(bf_elem(w, i), bf_elem(xv, i), acc);
    return acc;
}

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1))) void
gemv_fast(__global ushort *restrict y, __global const ushort *restrict W, __global const ushort *restrict x, int N,
          int K)
{
    __local float buf[BLOCK];
    const int lid = get_local_id(0);
    const int tid = lid % TPR;
    const int row = get_group_id(0) * RPB + lid / TPR;
    const bool live = row < N;
    __global const ushort *wr = W + (size_t)(live ? row : 0) * K;
    const int n = live ? K : 0;
    const bool vec = K % VEC == 0 && ((((size_t)W) | ((size_t)x)) & (2 * VEC - 1)) == 0;

    float acc[UNROLL];
    for (int u = 0; u < UNROLL; u++)
        acc[u] = 0.0f;
    if (vec) {
        const int nv = n / VEC;
        int j = tid;
        for (; j + (UNROLL - 1) * TPR < nv; j += UNROLL * TPR) {
            uint w[UNROLL * WV], xv[UNROLL * WV];
            for (int u = 0; u < UNROLL; u++) {
                load_words(wr + (size_t)(j + u * TPR) * VEC, w + u * WV);
                load_words(x + (size_t)(j + u * TPR) * VEC, xv + u * WV);
            }
            for (int u = 0; u < UNROLL; u++)
                acc[u] = dotv(w + u * WV, xv + u * WV, acc[u]);
        }
        for (; j < nv; j += TPR) {
            uint w[WV], xv[WV];
            load_words(wr + (size_t)j * VEC, w);
            load_words(x + (size_t)j * VEC, xv);
            acc[0] = dotv(w, xv, acc[0]);
        }
    } else {
        for (int j = tid; j < n; j += TPR)
            acc[0] = fma(as_float((uint)wr[j] << 16), as_float((uint)x[j] << 16), acc[0]);
    }
    for (int s = 1; s < UNROLL; s *= 2)
        for (int u = 0; u + s < UNROLL; u += 2 * s)
            acc[u] += acc[u + s];

    buf[lid] = acc[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = TPR / 2; o > 0; o >>= 1) {
        if (tid < o)
            buf[lid] += buf[lid + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (live && tid == 0)
        y[row] = (ushort)f32_to_bf16(buf[lid]);
}
