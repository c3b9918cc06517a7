// A tunable fused per-head RMSNorm + rotary embedding (Llama rotate-half, theta 500000), bf16 in
// and out, with fewer instructions per element than fast.cu: at the bench shape fast.cu's table
// kernel issues about 30 instructions per (low, high) pair, enough to keep the schedulers busy
// most of the kernel (87 % of copy bandwidth where rmsnorm, the same bytes without the rotation,
// reaches 93 %). Here
//  - the weight is folded into the block's table: for each pair i of the token, w[i] cos, w[i] sin,
//    w[i + D/2] cos and w[i + D/2] sin (four fp32 arrays; no per-element weight loads, unpacking
//    or products), so that out_lo = rstd (q_lo w_lo cos - q_hi w_hi sin), out_hi = rstd (q_hi w_hi
//    cos + q_lo w_lo sin): 6 fp32 operations per pair;
//  - two results become one packed bf16x2 word in one instruction (cvt.rn.bf16x2.f32, round to
//    nearest even, as the software rounding of fast.cu; a NaN stays a NaN);
//  - TPB tokens per block share the frequencies 500000^(-2i/D) (a double exp2 each, kept in shared
//    memory), each token's angle pos * frequency reduced by pi/2 in double and its sine and cosine
//    by fp32 polynomials (fast.cu's TRIG = 1 arithmetic, which fast-math builds leave alone).
// TPV threads per (token, head) vector (a shuffle reduction of the sum of squares), HPB heads per
// block, VEC bf16 values per access of the low and of the high half (8: 16 bytes, 4: 8 bytes; when
// D/2 % VEC == 0 and the pointers are aligned, else one value at a time), REG vectors of each half
// a thread keeps in registers as raw bf16 words (vectors past them are read again from L1/L2).
// HINT = 1 reads q (read once) with ld.global.nc.L1::no_allocate.L2::256B; 0 through __ldg. OCC > 0
// asks the register allocator for OCC threads per SM (__launch_bounds__ min blocks OCC / (TPV *
// HPB); at the defaults the table kernel takes 56 registers, 9 blocks of 128 per SM, and 72 at
// TPB > 1; 1152 brings TPB > 1 back to 56 (8 bytes of spills), 1280 and 1536 cap the defaults at
// 48 and 40, spilling 32 and 76 bytes in the table's double arithmetic). D/2 > TABMAX
// takes kernel rmsnorm_rope_fold_notab (one value at a time, its own angles, any D).
// PREDICTION (written before any GPU run; H200, T=16384 H=32 D=128, 268 MB moved): at the defaults
// (TPV=4 HPB=32 VEC=8 REG=2 TPB=1 HINT=0) 0.066-0.069 ms, 91-94 % of the calibrated copy
// bandwidth (fast.cu's best 0.0716 ms, 87 %; rmsnorm's 0.0669 ms, 93 %, bounds it from below):
// the table kernel's instructions per token fall from about 3,000 warp instructions to about
// 1,500 (the pair's rounding and packing from ~16 instructions to 1, the weight's loads, unpacking
// and products gone), so the schedulers stop limiting how fast blocks turn over. TPB=2 (the
// double exp2 once per two tokens) is the likeliest faster alternative, by 1-2 %.
// @temper task rmsnorm_rope
// @temper param TPV 4 8 16
// @temper param HPB 32 16 8
// @temper param VEC 8 4
// @temper param REG 2 1 4
// @temper param TPB 1 2 4
// @temper param HINT 0 1
// @temper param OCC 0 1152 1280 1536
// @temper require TPV * HPB <= 1024 && (TPV * HPB) % 32 == 0
// @temper require OCC == 0 || OCC / (TPV * HPB) <= 32
// @temper launch rmsnorm_rope_fold grid(ceil_div(T, TPB) * ceil_div(H, HPB)) block(TPV * HPB) args(out, q, w, pos, T, H, D) when(D <= 1024)
// @temper launch rmsnorm_rope_fold_notab grid(T * ceil_div(H, HPB)) block(TPV * HPB) args(out, q, w, pos, T, H, D) when(1)

#define TABMAX 512          /* pairs the table holds (D <= 1024) */
#define NTH (TPV * HPB)     /* threads per block */
#define WORDS(V) ((V) / 2)  /* 32-bit words per V-wide access (V >= 2) */

__device__ __forceinline__ float bf(unsigned int b)
{
    return __uint_as_float(b << 16);
}

/* round to nearest even; NaN stays a quiet NaN (the one-value path) */
__device__ __forceinline__ unsigned int f32_to_bf16(float f)
{
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return ((u >> 16) | 0x40u) & 0xffffu;
    u += 0x7fffu + ((u >> 16) & 1u);
    return u >> 16;
}

/* lo and hi rounded to bf16 (nearest even) in one word, lo in the low half */
__device__ __forceinline__ unsigned int pack_bf16(float lo, float hi)
{
    unsigned int r;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

/* V bf16 values at p (2V-byte aligned) as raw words */
template <int V> __device__ __forceinline__ void load_q(const unsigned short *p, unsigned int *w)
{
    if constexpr (V == 8) {
#if HINT
        asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
            : "=r"(w[0]), "=r"(w[1]), "=r"(w[2]), "=r"(w[3])
            : "l"(p));
#else
        const uint4 t = __ldg((const uint4 *)p);
        w[0] = t.x, w[1] = t.y, w[2] = t.z, w[3] = t.w;
#endif
    } else {
#if HINT
        asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0, %1}, [%2];" : "=r"(w[0]), "=r"(w[1]) : "l"(p));
#else
        const uint2 t = __ldg((const uint2 *)p);
        w[0] = t.x, w[1] = t.y;
#endif
    }
}

template <int V> __device__ __forceinline__ void store_v(unsigned short *p, const unsigned int *w)
{
    /* inline PTX, so that both halves' stores stay 16-byte (left to itself, the compiler split one
     * of them into four 4-byte stores where its registers were not a quad) */
    if constexpr (V == 8)
        asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]));
    else
        asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(p), "r"(w[0]), "r"(w[1]));
}

/* element e of a V-wide access held as raw words: element 2k in the low half of word k */
__device__ __forceinline__ float elem(const unsigned int *w, int e)
{
    return __uint_as_float(e & 1 ? w[e >> 1] & 0xffff0000u : w[e >> 1] << 16);
}

/* sin (*s) and cos (*c) of x, |x| <= pi/4 (a little past it is harmless): Taylor polynomials to
 * x^11 and x^12, explicit fmaf so that --use_fast_math leaves them alone (fast.cu's) */
__device__ __forceinline__ void sincos_poly(float x, float *s, float *c)
{
    const float x2 = x * x;
    float ps = __fmaf_rn(x2, -2.50521083854e-8f, 2.75573192240e-6f);
    ps = __fmaf_rn(x2, ps, -1.98412698413e-4f);
    ps = __fmaf_rn(x2, ps, 8.33333333333e-3f);
    ps = __fmaf_rn(x2, ps, -1.66666666667e-1f);
    *s = __fmaf_rn(x * x2, ps, x);
    float pc = __fmaf_rn(x2, 2.08767569879e-9f, -2.75573192240e-7f);
    pc = __fmaf_rn(x2, pc, 2.48015873016e-5f);
    pc = __fmaf_rn(x2, pc, -1.38888888889e-3f);
    pc = __fmaf_rn(x2, pc, 4.16666666667e-2f);
    pc = __fmaf_rn(x2, pc, -0.5f);
    *c = __fmaf_rn(x2, pc, 1.0f);
}

/* the frequency 500000^(-2i/D), in double */
__device__ __forceinline__ double freq(int i, int D)
{
    return exp2(-37.863137138648348 * i / D); /* -2 log2(500000) */
}

/* cos and sin of the angle pos * f (up to 16383 radians): the reduction by pi/2 in double (a
 * two-part pi/2 with fused multiply-adds), the remainder's sine and cosine in fp32 */
__device__ __forceinline__ void angle(double f, int pos, float &c, float &s)
{
    const double pio2_hi = 1.5707963267948966, pio2_lo = 6.123233995736766e-17;
    const double a = (double)pos * f;
    const double k = rint(a * 0.63661977236758134); /* 2/pi */
    const float r = (float)fma(-k, pio2_lo, fma(-k, pio2_hi, a));
    float sr, cr;
    sincos_poly(r, &sr, &cr);
    const int quad = (int)(long long)k & 3;
    const float cq = quad & 1 ? sr : cr, sq = quad & 1 ? cr : sr;
    c = quad == 1 || quad == 2 ? -cq : cq;
    s = quad >= 2 ? -sq : sq;
}

/* The folded table of one token (the weight times the cosine and sine of each pair's angle) */
struct table {
    float wcl[TABMAX]; /* w[i] cos a_i */
    float wsl[TABMAX]; /* w[i] sin a_i */
    float wch[TABMAX]; /* w[i + D/2] cos a_i */
    float wsh[TABMAX]; /* w[i + D/2] sin a_i */
};

/* vector iv of each half (raw words a, b) normalised, rotated, rounded and stored: per pair
 * out_lo = rstd (q_lo w_lo cos - q_hi w_hi sin), out_hi = rstd (q_hi w_hi cos + q_lo w_lo sin) */
template <int V>
__device__ __forceinline__ void emit(unsigned short *o, int iv, int half, const unsigned int *a, const unsigned int *b,
                                     float rstd, const table &tb)
{
    unsigned int ol[WORDS(V)], oh[WORDS(V)];
#pragma unroll
    for (int e = 0; e < V; e += 2) {
        const int i = iv * V + e;
        const float l0 = elem(a, e), l1 = elem(a, e + 1), h0 = elem(b, e), h1 = elem(b, e + 1);
        ol[e / 2] = pack_bf16(rstd * (l0 * tb.wcl[i] - h0 * tb.wsh[i]), rstd * (l1 * tb.wcl[i + 1] - h1 * tb.wsh[i + 1]));
        oh[e / 2] = pack_bf16(rstd * (h0 * tb.wch[i] + l0 * tb.wsl[i]), rstd * (h1 * tb.wch[i + 1] + l1 * tb.wsl[i + 1]));
    }
    store_v<V>(o + iv * V, ol);
    store_v<V>(o + half + iv * V, oh);
}

/* One (token, head) vector on the vector path (V-wide accesses), n = 0 for a dead head (which
 * still takes part in the shuffles). The table is filled between the loads and the barrier. */
template <int V>
__device__ __forceinline__ void vec_row(unsigned short *o, const unsigned short *qv, const unsigned short *w, int n,
                                        int D, int lane, int p, table &tb, const double *frq)
{
    const int half = D / 2, nv = n / 2 / V; /* vectors per half */
    unsigned int lo[REG][WORDS(V)], hi[REG][WORDS(V)];
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const int iv = lane + k * TPV;
        if (iv < nv) {
            load_q<V>(qv + iv * V, lo[k]);
            load_q<V>(qv + half + iv * V, hi[k]);
        }
    }
    for (int i = threadIdx.x; i < half; i += NTH) { /* while the loads are in flight */
        float c, s;
        angle(TPB > 1 ? frq[i] : freq(i, D), p, c, s);
        const float wl = bf(__ldg(w + i)), wh = bf(__ldg(w + half + i));
        tb.wcl[i] = wl * c, tb.wsl[i] = wl * s, tb.wch[i] = wh * c, tb.wsh[i] = wh * s;
    }
    __syncthreads();
    float sl = 0.0f, sh = 0.0f; /* two chains: half the dependent latency */
#pragma unroll
    for (int k = 0; k < REG; k++)
        if (lane + k * TPV < nv)
#pragma unroll
            for (int e = 0; e < V; e++) {
                const float a = elem(lo[k], e), b = elem(hi[k], e);
                sl = fmaf(a, a, sl), sh = fmaf(b, b, sh);
            }
    for (int iv = lane + REG * TPV; iv < nv; iv += TPV) { /* past the registers */
        unsigned int a[WORDS(V)], b[WORDS(V)];
        load_q<V>(qv + iv * V, a);
        load_q<V>(qv + half + iv * V, b);
#pragma unroll
        for (int e = 0; e < V; e++) {
            const float x = elem(a, e), y = elem(b, e);
            sl = fmaf(x, x, sl), sh = fmaf(y, y, sh);
        }
    }
    float ss = sl + sh;
#pragma unroll
    for (int m = TPV / 2; m > 0; m >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, m, TPV);
    const float rstd = rsqrtf(ss / (float)D + 1e-5f);
#pragma unroll
    for (int k = 0; k < REG; k++)
        if (lane + k * TPV < nv)
            emit<V>(o, lane + k * TPV, half, lo[k], hi[k], rstd, tb);
    for (int iv = lane + REG * TPV; iv < nv; iv += TPV) {
        unsigned int a[WORDS(V)], b[WORDS(V)];
        load_q<V>(qv + iv * V, a);
        load_q<V>(qv + half + iv * V, b);
        emit<V>(o, iv, half, a, b, rstd, tb);
    }
}

/* The same one value at a time (D/2 % VEC != 0, or misaligned pointers): the check shapes */
__device__ __forceinline__ void one_row(unsigned short *o, const unsigned short *qv, const unsigned short *w, int n,
                                        int D, int lane, int p, table &tb, const double *frq)
{
    const int half = D / 2, nh = n / 2;
    for (int i = threadIdx.x; i < half; i += NTH) {
        float c, s;
        angle(TPB > 1 ? frq[i] : freq(i, D), p, c, s);
        const float wl = bf(__ldg(w + i)), wh = bf(__ldg(w + half + i));
        tb.wcl[i] = wl * c, tb.wsl[i] = wl * s, tb.wch[i] = wh * c, tb.wsh[i] = wh * s;
    }
    __syncthreads();
    float ss = 0.0f;
    for (int i = lane; i < nh; i += TPV) {
        const float a = bf(__ldg(qv + i)), b = bf(__ldg(qv + half + i));
        ss = fmaf(a, a, fmaf(b, b, ss));
    }
#pragma unroll
    for (int m = TPV / 2; m > 0; m >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, m, TPV);
    const float rstd = rsqrtf(ss / (float)D + 1e-5f);
    for (int i = lane; i < nh; i += TPV) {
        const float a = bf(__ldg(qv + i)), b = bf(__ldg(qv + half + i));
        o[i] = (unsigned short)f32_to_bf16(rstd * (a * tb.wcl[i] - b * tb.wsh[i]));
        o[half + i] = (unsigned short)f32_to_bf16(rstd * (b * tb.wch[i] + a * tb.wsl[i]));
    }
}

#if OCC > 0
#define FOLD_BOUNDS __launch_bounds__(NTH, OCC / NTH)
#else
#define FOLD_BOUNDS __launch_bounds__(NTH)
#endif

/* The table kernel (D <= 2 * TABMAX, the launch's when()): TPB tokens, HPB heads of each */
extern "C" __global__ void FOLD_BOUNDS
    rmsnorm_rope_fold(unsigned short *__restrict__ out, const unsigned short *__restrict__ q,
                      const unsigned short *__restrict__ w, const int *__restrict__ pos, int T, int H, int D)
{
    __shared__ table tb;
#if TPB > 1
    __shared__ double frq[TABMAX]; /* the frequencies, shared by the block's tokens */
    for (int i = threadIdx.x; i < D / 2; i += NTH)
        frq[i] = freq(i, D);
    /* each thread reads back only the frequencies it wrote (the same i, the same stride) */
#else
    const double *frq = nullptr;
#endif
    const int groups = (H + HPB - 1) / HPB;
    const int first = blockIdx.x / groups * TPB, head = (blockIdx.x % groups) * HPB + threadIdx.x / TPV;
    const int lane = threadIdx.x % TPV, half = D / 2;
    const bool live = head < H;
    const bool vec = half % VEC == 0 && ((((size_t)out) | ((size_t)q)) & (2 * VEC - 1)) == 0;
#pragma unroll 1
    for (int j = 0; j < TPB && first + j < T; j++) {
        const int token = first + j;
        if (j > 0)
            __syncthreads(); /* the last token's table read by every thread before it is refilled */
        const size_t off = ((size_t)token * H + (live ? head : 0)) * D;
        const int n = live ? D : 0, p = pos[token];
        if (vec)
            vec_row<VEC>(out + off, q + off, w, n, D, lane, p, tb, frq);
        else
            one_row(out + off, q + off, w, n, D, lane, p, tb, frq);
    }
}

/* Any D, one value at a time, each element its own angle: the shapes past the table. */
extern "C" __global__ void __launch_bounds__(NTH)
    rmsnorm_rope_fold_notab(unsigned short *__restrict__ out, const unsigned short *__restrict__ q,
                            const unsigned short *__restrict__ w, const int *__restrict__ pos, int T, int H, int D)
{
    const int groups = (H + HPB - 1) / HPB;
    const int token = blockIdx.x / groups, head = (blockIdx.x % groups) * HPB + threadIdx.x / TPV;
    const int lane = threadIdx.x % TPV, half = D / 2;
    const bool live = head < H;
    const size_t off = ((size_t)token * H + (live ? head : 0)) * D;
    const unsigned short *qv = q + off;
    unsigned short *o = out + off;
    const int nh = live ? half : 0, p = pos[token];
    float ss = 0.0f;
    for (int i = lane; i < nh; i += TPV) {
        const float a = bf(__ldg(qv + i)), b = bf(__ldg(qv + half + i));
        ss = fmaf(a, a, fmaf(b, b, ss));
    }
#pragma unroll
    for (int m = TPV / 2; m > 0; m >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, m, TPV);
    const float rstd = rsqrtf(ss / (float)D + 1e-5f);
    for (int i = lane; i < nh; i += TPV) {
        float c, s;
        angle(freq(i, D), p, c, s);
        const float a = bf(__ldg(qv + i)) * bf(__ldg(w + i)), b = bf(__ldg(qv + half + i)) * bf(__ldg(w + half + i));
        o[i] = (unsigned short)f32_to_bf16(rstd * (a * c - b * s));
        o[half + i] = (unsigned short)f32_to_bf16(rstd * (b * c + a * s));
    }
}
