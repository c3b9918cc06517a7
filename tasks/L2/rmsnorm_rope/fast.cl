// A tunable fused per-head RMSNorm + rotary embedding (rotate-half, theta 500000), bf16, the
// OpenCL twin of fast.cu (same knobs, launches and index math; the sum of squares goes through a
// local-memory tree instead of warp shuffles): each (token, head) vector is read once, normalised
// and rotated in private memory and written once. TPV work-items per vector, HPB heads of one
// token per work-group, each work-item taking runs of VEC consecutive values of the low and of
// the high half (when D/2 % VEC == 0, else single values); REG runs per half are kept in private
// memory, runs past them are read twice. TAB = 1 (kernel rmsnorm_rope_fast, when D/2 <= 1024):
// the token's cos and sin are computed once per work-group into local memory; otherwise kernel
// rmsnorm_rope_notab computes them per element. TRIG = 1: the angle as fast.cu's angle() makes it
// (a double exp2 frequency, the reduction by pi/2 in double, fp32 Taylor polynomials with explicit
// fma), where the device has cl_khr_fp64 (PoCL has), so that the CUDA kernel's arithmetic runs on
// any OpenCL device; TRIG = 0, or no fp64: pow and the accurate sincos in fp32. Sums in fp32, one
// round-to-nearest-even to bf16. OCC (fast.cu's occupancy request to its register allocator) is
// unused here, kept so that both files tune over the same knobs.
// @temper task rmsnorm_rope
// @temper param TPV 4 8 16 32
// @temper param HPB 32 16 8 4 2 1
// @temper param VEC 8 4 2
// @temper param REG 2 1 4
// @temper param TAB 1 0
// @temper param TRIG 1 0
// @temper param OCC 0 1280 1536 2048
// @temper require TPV * HPB <= 1024 && (TPV * HPB) % 32 == 0
// @temper require OCC == 0 || OCC / (TPV * HPB) <= 32
// @temper launch rmsnorm_rope_fast grid(T * ceil_div(H, HPB)) block(TPV * HPB) args(out, q, w, pos, T, H, D) when(TAB == 1 && D <= 2048)
// @temper launch rmsnorm_rope_notab grid(T * ceil_div(H, HPB)) block(TPV * HPB) args(out, q, w, pos, T, H, D) when(1)

#define TABMAX 1024
#if defined(cl_khr_fp64) && TRIG
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define TRIG64 1
#else
#define TRIG64 0
#endif

inline uint f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return ((u >> 16) | 0x40u) & 0xffffu; /* NaN stays a quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);          /* round to nearest even */
    return u >> 16;
}

inline float bf(ushort b)
{
    return as_float((uint)b << 16);
}

/* The sum of v over one vector's TPV work-items (slot: its place in the group), to all of them. */
inline float vec_sum(__local float *red, float v, int lane, int slot)
{
    __local float *b = red + slot * TPV;
    b[lane] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = TPV / 2; s > 0; s >>= 1) {
        if (lane < s)
            b[lane] += b[lane + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return b[0];
}

/* sin (*s) and cos (*c) of x, |x| <= pi/4: fast.cu's sincos_poly */
inline void sincos_poly(float x, float *s, float *c)
{
    const float x2 = x * x;
    float ps = fma(x2, -2.50521083854e-8f, 2.75573192240e-6f);
    ps = fma(x2, ps, -1.98412698413e-4f);
    ps = fma(x2, ps, 8.33333333333e-3f);
    ps = fma(x2, ps, -1.66666666667e-1f);
    *s = fma(x * x2, ps, x);
    float pc = fma(x2, 2.08767569879e-9f, -2.75573192240e-7f);
    pc = fma(x2, pc, 2.48015873016e-5f);
    pc = fma(x2, pc, -1.38888888889e-3f);
    pc = fma(x2, pc, 4.16666666667e-2f);
    pc = fma(x2, pc, -0.5f);
    *c = fma(x2, pc, 1.0f);
}

/* cos (*c) and sin (*s) of pos * 500000^(-2i/D) */
inline void angle(int i, int pos, int D, float *c, float *s)
{
#if TRIG64
    const double pio2_hi = 1.5707963267948966, pio2_lo = 6.123233995736766e-17;
    const double a = (double)pos * exp2(-37.863137138648348 * i / D); /* -2 log2(500000) */
    const double k = rint(a * 0.63661977236758134);                    /* 2/pi */
    const float r = (float)fma(-k, pio2_lo, fma(-k, pio2_hi, a));
    float sr, cr;
    sincos_poly(r, &sr, &cr);
    const int quad = (int)(long)k & 3;
    const float cq = quad & 1 ? sr : cr, sq = quad & 1 ? cr : sr;
    *c = quad == 1 || quad == 2 ? -cq : cq;
    *s = quad >= 2 ? -sq : sq;
#else
    *s = sincos((float)pos * pow(500000.0f, -2.0f * i / D), c);
#endif
}

inline void rot(int i, int p, int D, int tab, __local const float *cs, __local const float *sn, float *c, float *s)
{
    if (tab) {
        *c = cs[i];
        *s = sn[i];
    } else {
        angle(i, p, D, c, s);
    }
}

/* run iv (V values from element iv*V of each hd) normalised, rotated and stored */
inline void emit(__global ushort *o, __global const ushort *w, int iv, int V, int hd, const float *lo,
                 const float *hi, float rstd, int p, int D, int tab, __local const float *cs, __local const float *sn)
{
    for (int e = 0; e < V; e++) {
        const int i = iv * V + e;
        float c, s;
        rot(i, p, D, tab, cs, sn, &c, &s);
        const float a = lo[e] * rstd * bf(w[i]), b = hi[e] * rstd * bf(w[hd + i]);
        o[i] = (ushort)f32_to_bf16(a * c - b * s);
        o[hd + i] = (ushort)f32_to_bf16(b * c + a * s);
    }
}

/* The work-group's (token, head group); table: the angles go through cs and sn (D/2 <= TABMAX) */
inline void block_rows(__global ushort *out, __global const ushort *q, __global const ushort *w,
                       __global const int *pos, int H, int D, int tab, __local float *cs, __local float *sn,
                       __local float *red)
{
    const int lid = get_local_id(0), groups = (H + HPB - 1) / HPB;
    const int token = get_group_id(0) / groups, slot = lid / TPV, head = (get_group_id(0) % groups) * HPB + slot;
    const int lane = lid % TPV, hd = D / 2; /* hd: "half" is an OpenCL type */
    const int p = pos[token];
    if (tab) {
        for (int i = lid; i < hd; i += TPV * HPB) {
            float c, sv;
            angle(i, p, D, &c, &sv);
            cs[i] = c;
            sn[i] = sv;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    const int live = head < H;
    const size_t off = ((size_t)token * H + (live ? head : 0)) * D;
    __global const ushort *qv = q + off;
    __global ushort *o = out + off;
    const int V = hd % VEC == 0 ? VEC : 1;
    const int nv = live ? hd / V : 0; /* runs per hd */
    const int nk = (nv + TPV - 1) / TPV;
    float lo[REG][VEC], hi[REG][VEC];
    float ss = 0.0f;
    for (int k = 0; k < nk; k++) {
        const int iv = lane + k * TPV;
        if (iv >= nv)
            continue;
        float a[VEC], b[VEC];
        for (int e = 0; e < V; e++) {
            a[e] = bf(qv[iv * V + e]);
            b[e] = bf(qv[hd + iv * V + e]);
            ss += a[e] * a[e] + b[e] * b[e];
            if (k < REG) {
                lo[k][e] = a[e];
                hi[k][e] = b[e];
            }
        }
    }
    const float rstd = rsqrt(vec_sum(red, ss, lane, slot) / (float)D + 1e-5f);
    for (int k = 0; k < nk; k++) {
        const int iv = lane + k * TPV;
        if (iv >= nv)
            continue;
        if (k < REG) {
            emit(o, w, iv, V, hd, lo[k], hi[k], rstd, p, D, tab, cs, sn);
        } else {
            float a[VEC], b[VEC];
            for (int e = 0; e < V; e++) {
                a[e] = bf(qv[iv * V + e]);
                b[e] = bf(qv[hd + iv * V + e]);
            }
            emit(o, w, iv, V, hd, a, b, rstd, p, D, tab, cs, sn);
        }
    }
}

/* The table kernel: launched only when D/2 <= TABMAX (the launch's when()). */
__kernel void __attribute__((reqd_work_group_size(TPV * HPB, 1, 1)))
rmsnorm_rope_fast(__global ushort *out, __global const ushort *q, __global const ushort *w, __global const int *pos,
                  int T, int H, int D)
{
    __local float cs[TABMAX], sn[TABMAX], red[TPV * HPB];
    block_rows(out, q, w, pos, H, D, 1, cs, sn, red);
}

/* Any D: every element computes its own angle. */
__kernel void __attribute__((reqd_work_group_size(TPV * HPB, 1, 1)))
rmsnorm_rope_notab(__global ushort *out, __global const ushort *q, __global const ushort *w, __global const int *pos,
                   int T, int H, int D)
{
    __local float cs[1], sn[1], red[TPV * HPB];
    block_rows(out, q, w, pos, H, D, 0, cs, sn, red);
}
