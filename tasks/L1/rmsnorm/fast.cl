// A tunable bf16 RMSNorm for bandwidth, the OpenCL twin of fast.cu (same knobs and index math; the
// sum over a row goes through a local-memory tree instead of warp shuffles): TPR work-items per
// row, RPB rows per work-group, VEC bf16 values per access (8: uint4, 4: uint2, 2: one 32-bit
// word) when C % VEC == 0 and y, x, w are 2*VEC-byte aligned, else scalar. REG > 0 keeps the row's
// raw bf16 words in registers when it fits (C <= TPR*VEC*REG): x is read once. Other rows (all
// rows when REG = 0) read x twice. The result is rounded once to bf16 (nearest even).
// @temper task rmsnorm
// @temper param TPR 128 32 64 256 512 1024
// @temper param RPB 1 2 4 8
// @temper param VEC 8 4 2
// @temper param REG 4 0 1 2 8 16
// @temper require TPR * RPB <= 1024
// @temper require REG == 0 || (TPR * VEC * REG >= 4096 && TPR * VEC * REG <= 8192)
// @temper require 1024 % TPR == 0
// @temper launch rmsnorm_fast grid(ceil_div(R, RPB)) block(TPR * RPB) args(y, x, w, R, C)

#define BLOCK (TPR * RPB)
#define WV (VEC / 2) /* 32-bit words per VEC-wide access */

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

/* element i of an access held as 32-bit words: element 2k in the low half of word k */
inline float bf_elem(const uint *w, int i)
{
    return as_float(i & 1 ? w[i >> 1] & 0xffff0000u : w[i >> 1] << 16);
}

/* VEC = 2 goes through ushort2: PoCL (CPU) miscompiled this kernel's write loop with a
 * 32-bit uint access through a ushort pointer (loop ran past nv; a segfault at R=1, C=2). */
inline void load_words(__global const ushort *p, uint *w)
{
#if VEC == 2
    ushort2 u = *(__global const ushort2 *)p;
    w[0] = (uint)u.x | ((uint)u.y << 16);
#else
    wvec_t t = *(__global const wvec_t *)p;
#endif
#if VEC == 8
    w[0] = t.x;
    w[1] = t.y;
    w[2] = t.z;
    w[3] = t.w;
#elif VEC == 4
    w[0] = t.x;
    w[1] = t.y;
#endif
}

inline void store_words(__global ushort *p, const uint *w)
{
#if VEC == 8
    *(__global uint4 *)p = (uint4)(w[0], w[1], w[2], w[3]);
#elif VEC == 4
    *(__global uint2 *)p = (uint2)(w[0], w[1]);
#else
    *(__global ushort2 *)p = (ushort2)((ushort)w[0], (ushort)(w[0] >> 16));
#endif
}

/* y = x * rstd * w for one VEC-wide access at element offset e */
inline void write_vec(__global ushort *yr, __global const ushort *w, size_t e, const uint *xw, float rstd)
{
    uint ww[WV], o[WV];
    load_words(w + e, ww);
    for (int k = 0; k < WV; k++)
        o[k] = f32_to_bf16(bf_elem(xw, 2 * k) * rstd * bf_elem(ww, 2 * k)) |
               (f32_to_bf16(bf_elem(xw, 2 * k + 1) * rstd * bf_elem(ww, 2 * k + 1)) << 16);
    store_words(yr + e, o);
}

/* The sum of v over one row's TPR work-items, returned to all of them; every work-item of the
 * group calls it once. */
inline float row_sum(float v, __local float *buf)
{
    const int lid = get_local_id(0), tid = lid % TPR;
    buf[lid] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int o = TPR / 2; o > 0; o >>= 1) {
        if (tid < o)
            buf[lid] += buf[lid + o];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return buf[lid - tid];
}

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1))) void
rmsnorm_fast(__global ushort *restrict y, __global const ushort *restrict x, __global const ushort *restrict w, int R,
             int C)
{
    __local float buf[BLOCK];
    const int lid = get_local_id(0);
    const int tid = lid % TPR;
    const int row = get_group_id(0) * RPB + lid / TPR;
    const bool live = row < R;
    __global const ushort *xr = x + (size_t)(live ? row : 0) * C;
    __global ushort *yr = y + (size_t)(live ? row : 0) * C;
    const int n = live ? C : 0;
    const bool vec = C % VEC == 0 && ((((size_t)x) | ((size_t)y) | ((size_t)w)) & (2 * VEC - 1)) == 0;
    if (vec) {
        const int nv = n / VEC;
#if REG > 0
        if (C / VEC <= REG * TPR) {
            uint raw[REG * WV];
            for (int k = 0; k < REG; k++) {
                int j = tid + k * TPR;
                if (j < nv) {
                    load_words(xr + (size_t)j * VEC, raw + k * WV);
                } else {
                    for (int i = 0; i < WV; i++)
                        raw[k * WV + i] = 0u;
                }
            }
            float ss = 0.0f;
            for (int k = 0; k < REG; k++)
                for (int i = 0; i < VEC; i++) {
                    float v = bf_elem(raw + k * WV, i);
                    ss += v * v;
                }
            const float rstd = rsqrt(row_sum(ss, buf) / (float)C + 1e-6f);
            for (int k = 0; k < REG; k++) {
                int j = tid + k * TPR;
                if (j < nv)
                    write_vec(yr, w, (size_t)j * VEC, raw + k * WV, rstd);
            }
        } else
#endif
        {
            float ss = 0.0f;
            for (int j = tid; j < nv; j += TPR) {
                uint raw[WV];
                load_words(xr + (size_t)j * VEC, raw);
                for (int i = 0; i < VEC; i++) {
                    float v = bf_elem(raw, i);
                    ss += v * v;
                }
            }
            const float rstd = rsqrt(row_sum(ss, buf) / (float)C + 1e-6f);
            for (int j = tid; j < nv; j += TPR) {
                uint raw[WV];
                load_words(xr + (size_t)j * VEC, raw);
                write_vec(yr, w, (size_t)j * VEC, raw, rstd);
            }
        }
    } else {
        float ss = 0.0f;
        for (int j = tid; j < n; j += TPR) {
            float v = as_float((uint)xr[j] << 16);
            ss += v * v;
        }
        const float rstd = rsqrt(row_sum(ss, buf) / (float)C + 1e-6f);
        for (int j = tid; j < n; j += TPR)
            yr[j] = (ushort)f32_to_bf16(as_float((uint)xr[j] << 16) * rstd * as_float((uint)w[j] << 16));
    }
}
