// A tunable fused per-head RMSNorm + rotary embedding (Llama rotate-half, theta 500000) for
// bandwidth, bf16 in and out: each (token, head) vector of D values is read once, normalised and
// rotated in registers and written once. TPV threads per vector (4..32 lanes of one warp: the sum
// of squares is a shuffle reduction over them), HPB heads of one token per block, VEC bf16 values
// per access of the low and of the high half (8: uint4, 4: uint2, 2: one 32-bit word) when
// D/2 % VEC == 0 and q, w, out are 2*VEC-byte aligned, else one value at a time. REG: vectors of
// each half a thread keeps in registers, as the raw bf16 words (half the registers of floats;
// a vector that does not fit, D/2 > TPV*VEC*REG, is read twice, the second time from L1/L2).
// TAB = 1 (kernel rmsnorm_rope_fast, when D/2 <= 1024): the block's token's cos and sin (D/2
// angles, shared by its HPB heads) are computed once into shared memory while the block's first
// loads are in flight; TAB = 0, or a larger D, takes kernel rmsnorm_rope_notab, which computes
// them per element (its registers do not weigh on the table kernel's occupancy).
// TRIG picks how an angle pos * 500000^(-2i/D) (up to 16383 radians) becomes its cosine and sine
// (see angle()): 1, a double exp2 and a reduction by pi/2 in double, then fp32 polynomials;
// 0, pow and sincos in double (the kernel's first version). Fast-math builds change neither.
// The rest is fp32; one round-to-nearest-even to bf16. OCC > 0 asks the register allocator of the
// table kernel for OCC threads per SM (__launch_bounds__ min blocks OCC / (TPV * HPB)): at its
// defaults it takes 56 registers, 9 blocks of 128 per SM; 1280, 1536 and 2048 cap it at 48, 40
// and 32 (spilling a little: 16, 64, more bytes).
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
#define WORDS(V) ((V) >= 2 ? (V) / 2 : 1) /* 32-bit words per V-wide access */

__device__ __forceinline__ unsigned int f32_to_bf16(float f)
{
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return ((u >> 16) | 0x40u) & 0xffffu; /* NaN stays a quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);          /* round to nearest even */
    return u >> 16;
}

/* V bf16 values at p (V-aligned) as raw words (V = 1: the value in the low half), and back */
template <int V> __device__ __forceinline__ void load_v(const unsigned short *p, unsigned int *w)
{
    if constexpr (V == 8) {
        const uint4 t = __ldg((const uint4 *)p);
        w[0] = t.x, w[1] = t.y, w[2] = t.z, w[3] = t.w;
    } else if constexpr (V == 4) {
        const uint2 t = __ldg((const uint2 *)p);
        w[0] = t.x, w[1] = t.y;
    } else if constexpr (V == 2) {
        w[0] = __ldg((const unsigned int *)p);
    } else {
        w[0] = __ldg(p);
    }
}

template <int V> __device__ __forceinline__ void store_v(unsigned short *p, const unsigned int *w)
{
    if constexpr (V == 8)
        *(uint4 *)p = make_uint4(w[0], w[1], w[2], w[3]);
    else if constexpr (V == 4)
        *(uint2 *)p = make_uint2(w[0], w[1]);
    else if constexpr (V == 2)
        *(unsigned int *)p = w[0];
    else
        *p = (unsigned short)w[0];
}

/* element e of a V-wide access held as raw words: element 2k in the low half of word k */
template <int V> __device__ __forceinline__ float elem(const unsigned int *w, int e)
{
    if constexpr (V == 1)
        return __uint_as_float(w[0] << 16);
    else
        return __uint_as_float(e & 1 ? w[e >> 1] & 0xffff0000u : w[e >> 1] << 16);
}

/* sin (*s) and cos (*c) of x, |x| <= pi/4 (a little past it is harmless): Taylor polynomials to
 * x^11 and x^12 (truncation below 1e-11), evaluated with explicit fmaf so that --use_fast_math,
 * which swaps sinf and cosf for the hardware's approximations, leaves them alone. */
__device__ __forceinline__ void sincos_poly(float x, float *s, float *c)
{
    const float x2 = x * x;
    float ps = __fmaf_rn(x2, -2.50521083854e-8f, 2.75573192240e-6f); /* -1/11!, 1/9! */
    ps = __fmaf_rn(x2, ps, -1.98412698413e-4f);                          /* -1/7! */
    ps = __fmaf_rn(x2, ps, 8.33333333333e-3f);                           /* 1/5! */
    ps = __fmaf_rn(x2, ps, -1.66666666667e-1f);                          /* -1/3! */
    *s = __fmaf_rn(x * x2, ps, x);
    float pc = __fmaf_rn(x2, 2.08767569879e-9f, -2.75573192240e-7f); /* 1/12!, -1/10! */
    pc = __fmaf_rn(x2, pc, 2.48015873016e-5f);                          /* 1/8! */
    pc = __fmaf_rn(x2, pc, -1.38888888889e-3f);                         /* -1/6! */
    pc = __fmaf_rn(x2, pc, 4.16666666667e-2f);                          /* 1/4! */
    pc = __fmaf_rn(x2, pc, -0.5f);
    *c = __fmaf_rn(x2, pc, 1.0f);
}

/* cos and sin of the angle pos * 500000^(-2i/D) (the angles reach 16383 radians).
 * TRIG = 1: the frequency by a double exp2, the angle and its reduction by multiples of pi/2
 * (two-part pi/2, fused multiply-adds: exact to about 1e-16 of the angle) in double, the
 * remainder's sine and cosine by fp32 polynomials: about 30 double operations per angle.
 * TRIG = 0: pow and sincos in double (several hundred double operations; they held blocks long
 * enough to cap the kernel near 60 % of copy bandwidth on the H200).
 * Fast-math builds leave both alone (they change only single-precision library calls). */
__device__ __forceinline__ void angle(int i, int pos, int D, float &c, float &s)
{
    if (TRIG) {
        const double pio2_hi = 1.5707963267948966, pio2_lo = 6.123233995736766e-17;
        const double a = (double)pos * exp2(-37.863137138648348 * i / D); /* -2 log2(500000) */
        const double k = rint(a * 0.63661977236758134);                    /* 2/pi */
        const float r = (float)fma(-k, pio2_lo, fma(-k, pio2_hi, a));
        float sr, cr;
        sincos_poly(r, &sr, &cr);
        const int quad = (int)(long long)k & 3;
        const float cq = quad & 1 ? sr : cr, sq = quad & 1 ? cr : sr;
        c = quad == 1 || quad == 2 ? -cq : cq;
        s = quad >= 2 ? -sq : sq;
    } else {
        double sd, cd;
        sincos((double)pos * pow(500000.0, -2.0 * i / D), &sd, &cd);
        c = (float)cd, s = (float)sd;
    }
}

/* lo/hi of vector iv (V values each, raw words) normalised and rotated, stored; the angles from
 * the table (TABLE) or computed here */
template <int V, bool TABLE>
__device__ __forceinline__ void emit(unsigned short *o, const unsigned short *w, int iv, int half,
                                     const unsigned int *lo, const unsigned int *hi, float rstd, int p, int D,
                                     const float *cs, const float *sn)
{
    unsigned int wl[WORDS(V)], wh[WORDS(V)], ol[WORDS(V)], oh[WORDS(V)];
    load_v<V>(w + iv * V, wl);
    load_v<V>(w + half + iv * V, wh);
#pragma unroll
    for (int e = 0; e < V; e++) {
        float c, s;
        if (TABLE)
            c = cs[iv * V + e], s = sn[iv * V + e];
        else
            angle(iv * V + e, p, D, c, s);
        const float a = elem<V>(lo, e) * rstd * elem<V>(wl, e), b = elem<V>(hi, e) * rstd * elem<V>(wh, e);
        const unsigned int rl = f32_to_bf16(a * c - b * s), rh = f32_to_bf16(b * c + a * s);
        if (e % 2 == 0) {
            ol[e / 2] = rl, oh[e / 2] = rh;
        } else {
            ol[e / 2] |= rl << 16, oh[e / 2] |= rh << 16;
        }
    }
    store_v<V>(o + iv * V, ol);
    store_v<V>(o + half + iv * V, oh);
}

/* One (token, head) vector; n = 0 for a dead head (past H), which still takes part in the shuffles
 * and in filling the table (every thread of the block calls this once, on the same path). */
template <int V, bool TABLE>
__device__ __forceinline__ void vec_row(unsigned short *o, const unsigned short *qv, const unsigned short *w, int n,
                                        int D, int lane, int p, float *cs, float *sn)
{
    const int half = D / 2, nv = n / 2 / V; /* vectors per half */
    unsigned int lo[REG][WORDS(V)], hi[REG][WORDS(V)];
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const int iv = lane + k * TPV;
        if (iv < nv) {
            load_v<V>(qv + iv * V, lo[k]);
            load_v<V>(qv + half + iv * V, hi[k]);
        }
    }
    if (TABLE) { /* the token's angles, while the loads above are in flight */
        for (int i = threadIdx.x; i < half; i += TPV * HPB)
            angle(i, p, D, cs[i], sn[i]);
        __syncthreads();
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < REG; k++)
        if (lane + k * TPV < nv)
#pragma unroll
            for (int e = 0; e < V; e++) {
                const float a = elem<V>(lo[k], e), b = elem<V>(hi[k], e);
                ss += a * a + b * b;
            }
    for (int iv = lane + REG * TPV; iv < nv; iv += TPV) { /* past the registers */
        unsigned int a[WORDS(V)], b[WORDS(V)];
        load_v<V>(qv + iv * V, a);
        load_v<V>(qv + half + iv * V, b);
#pragma unroll
        for (int e = 0; e < V; e++) {
            const float x = elem<V>(a, e), y = elem<V>(b, e);
            ss += x * x + y * y;
        }
    }
#pragma unroll
    for (int m = TPV / 2; m > 0; m >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, m, TPV);
    const float rstd = rsqrtf(ss / (float)D + 1e-5f);
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const int iv = lane + k * TPV;
        if (iv < nv)
            emit<V, TABLE>(o, w, iv, half, lo[k], hi[k], rstd, p, D, cs, sn);
    }
    for (int iv = lane + REG * TPV; iv < nv; iv += TPV) {
        unsigned int a[WORDS(V)], b[WORDS(V)];
        load_v<V>(qv + iv * V, a);
        load_v<V>(qv + half + iv * V, b);
        emit<V, TABLE>(o, w, iv, half, a, b, rstd, p, D, cs, sn);
    }
}

/* The block's (token, head group): the vector path when D/2 % VEC == 0 and the pointers allow it */
template <bool TABLE>
__device__ __forceinline__ void block_rows(unsigned short *out, const unsigned short *q, const unsigned short *w,
                                           const int *pos, int H, int D, float *cs, float *sn)
{
    const int groups = (H + HPB - 1) / HPB;
    const int token = blockIdx.x / groups, head = (blockIdx.x % groups) * HPB + threadIdx.x / TPV;
    const int lane = threadIdx.x % TPV, half = D / 2;
    const int p = pos[token];
    const bool live = head < H;
    const size_t off = ((size_t)token * H + (live ? head : 0)) * D;
    const int n = live ? D : 0;
    const bool vec = half % VEC == 0 && ((((size_t)out) | ((size_t)q) | ((size_t)w)) & (2 * VEC - 1)) == 0;
    if (vec)
        vec_row<VEC, TABLE>(out + off, q + off, w, n, D, lane, p, cs, sn);
    else
        vec_row<1, TABLE>(out + off, q + off, w, n, D, lane, p, cs, sn);
}

#if OCC > 0
#define FAST_BOUNDS __launch_bounds__(TPV * HPB, OCC / (TPV * HPB))
#else
#define FAST_BOUNDS __launch_bounds__(TPV * HPB)
#endif

/* The table kernel: launched only when D/2 <= TABMAX (the launch's when()). */
extern "C" __global__ void FAST_BOUNDS
    rmsnorm_rope_fast(unsigned short *__restrict__ out, const unsigned short *__restrict__ q,
                      const unsigned short *__restrict__ w, const int *__restrict__ pos, int T, int H, int D)
{
    __shared__ float cs[TABMAX], sn[TABMAX];
    block_rows<true>(out, q, w, pos, H, D, cs, sn);
}

/* Any D: every element computes its own angle. */
extern "C" __global__ void __launch_bounds__(TPV *HPB)
    rmsnorm_rope_notab(unsigned short *__restrict__ out, const unsigned short *__restrict__ q,
                       const unsigned short *__restrict__ w, const int *__restrict__ pos, int T, int H, int D)
{
    block_rows<false>(out, q, w, pos, H, D, nullptr, nullptr);
}
