// The OpenCL twin of fold.cu (same knobs, launches, folded table and index math; the sum of squares
// goes through a local-memory tree instead of warp shuffles, the rounding to bf16 is done on the
// bits, bit for bit what cvt.rn.bf16x2.f32 gives for every value but NaN, and HINT and OCC are
// accepted and unused; without cl_khr_fp64 the frequencies and angles are fp32). fold.cu: a tunable
// fused per-head RMSNorm + rotary embedding (Llama rotate-half, theta 500000), bf16 in and out,
// with fewer instructions per element than fast.cu: at the bench shape fast.cu's table
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

#define TABMAX 512      /* pairs the table holds (D <= 1024) */
#define NTH (TPV * HPB) /* work-items per group */
#if defined(cl_khr_fp64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
typedef double freq_t; /* a frequency */
#else
typedef float freq_t;
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
    const float r = b[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* read before the next token's sum writes b */
    return r;
}

/* sin (*s) and cos (*c) of x, |x| <= pi/4: fold.cu's sincos_poly */
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

/* the frequency 500000^(-2i/D) */
inline freq_t freq(int i, int D)
{
#if defined(cl_khr_fp64)
    return exp2(-37.863137138648348 * i / D); /* -2 log2(500000) */
#else
    return pow(500000.0f, -2.0f * i / D);
#endif
}

/* cos (*c) and sin (*s) of the angle pos * f: fold.cu's reduction by pi/2 in double */
inline void angle(freq_t f, int pos, float *c, float *s)
{
#if defined(cl_khr_fp64)
    const double pio2_hi = 1.5707963267948966, pio2_lo = 6.123233995736766e-17;
    const double a = (double)pos * f;
    const double k = rint(a * 0.63661977236758134); /* 2/pi */
    const float r = (float)fma(-k, pio2_lo, fma(-k, pio2_hi, a));
    float sr, cr;
    sincos_poly(r, &sr, &cr);
    const int quad = (int)(long)k & 3;
    const float cq = quad & 1 ? sr : cr, sq = quad & 1 ? cr : sr;
    *c = quad == 1 || quad == 2 ? -cq : cq;
    *s = quad >= 2 ? -sq : sq;
#else
    *s = sincos((float)pos * f, c);
#endif
}

/* One (token, head) vector (n = 0 for a dead head, which still takes part in the sums): the folded
 * table filled, then runs of V values of each half (V = VEC on the vector path, else 1), REG runs
 * kept in private memory. */
inline void row(__global ushort *o, __global const ushort *qv, __global const ushort *w, int n, int D, int lane,
                int slot, int p, int V, __local float *wcl, __local float *wsl, __local float *wch,
                __local float *wsh, __local const freq_t *frq, __local float *red)
{
    const int lid = get_local_id(0), hd = D / 2; /* hd: "half" is an OpenCL type */
    const int nv = n / 2 / V;
    float lo[REG][VEC], hi[REG][VEC];
    for (int k = 0; k < REG; k++) {
        const int iv = lane + k * TPV;
        if (iv < nv)
            for (int e = 0; e < V; e++) {
                lo[k][e] = bf(qv[iv * V + e]);
                hi[k][e] = bf(qv[hd + iv * V + e]);
            }
    }
    for (int i = lid; i < hd; i += NTH) {
        float c, s;
        angle(TPB > 1 ? frq[i] : freq(i, D), p, &c, &s);
        const float wl = bf(w[i]), wh = bf(w[hd + i]);
        wcl[i] = wl * c, wsl[i] = wl * s, wch[i] = wh * c, wsh[i] = wh * s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float sl = 0.0f, sh = 0.0f;
    for (int iv = lane; iv < nv; iv += TPV) {
        const int k = (iv - lane) / TPV;
        for (int e = 0; e < V; e++) {
            const float a = k < REG ? lo[k][e] : bf(qv[iv * V + e]);
            const float b = k < REG ? hi[k][e] : bf(qv[hd + iv * V + e]);
            sl = fma(a, a, sl), sh = fma(b, b, sh);
        }
    }
    const float rstd = rsqrt(vec_sum(red, sl + sh, lane, slot) / (float)D + 1e-5f);
    for (int iv = lane; iv < nv; iv += TPV) {
        const int k = (iv - lane) / TPV;
        for (int e = 0; e < V; e++) {
            const int i = iv * V + e;
            const float a = k < REG ? lo[k][e] : bf(qv[i]);
            const float b = k < REG ? hi[k][e] : bf(qv[hd + i]);
            o[i] = (ushort)f32_to_bf16(rstd * (a * wcl[i] - b * wsh[i]));
            o[hd + i] = (ushort)f32_to_bf16(rstd * (b * wch[i] + a * wsl[i]));
        }
    }
}

/* The table kernel (D <= 2 * TABMAX, the launch's when()): TPB tokens, HPB heads of each */
__kernel __attribute__((reqd_work_group_size(NTH, 1, 1))) void
rmsnorm_rope_fold(__global ushort *out, __global const ushort *q, __global const ushort *w, __global const int *pos,
                  int T, int H, int D)
{
    __local float wcl[TABMAX], wsl[TABMAX], wch[TABMAX], wsh[TABMAX], red[NTH];
    __local freq_t frq[TPB > 1 ? TABMAX : 1]; /* the frequencies, shared by the group's tokens */
    const int lid = get_local_id(0), groups = (H + HPB - 1) / HPB;
    if (TPB > 1)
        for (int i = lid; i < D / 2; i += NTH)
            frq[i] = freq(i, D); /* each work-item reads back only the ones it wrote */
    const int first = get_group_id(0) / groups * TPB, slot = lid / TPV;
    const int head = (get_group_id(0) % groups) * HPB + slot, lane = lid % TPV, hd = D / 2;
    const int live = head < H;
    const int vec = hd % VEC == 0 && ((((size_t)out) | ((size_t)q)) & (2 * VEC - 1)) == 0;
    for (int j = 0; j < TPB && first + j < T; j++) {
        const int token = first + j;
        if (j > 0)
            barrier(CLK_LOCAL_MEM_FENCE); /* the last token's table read before it is refilled */
        const size_t off = ((size_t)token * H + (live ? head : 0)) * D;
        row(out + off, q + off, w, live ? D : 0, D, lane, slot, pos[token], vec ? VEC : 1, wcl, wsl, wch, wsh, frq,
            red);
    }
}

/* Any D, one value at a time, each element its own angle: the shapes past the table. */
__kernel __attribute__((reqd_work_group_size(NTH, 1, 1))) void
rmsnorm_rope_fold_notab(__global ushort *out, __global const ushort *q, __global const ushort *w,
                        __global const int *pos, int T, int H, int D)
{
    __local float red[NTH];
    const int lid = get_local_id(0), groups = (H + HPB - 1) / HPB;
    const int token = get_group_id(0) / groups, slot = lid / TPV;
    const int head = (get_group_id(0) % groups) * HPB + slot, lane = lid % TPV, hd = D / 2;
    const int live = head < H;
    const size_t off = ((size_t)token * H + (live ? head : 0)) * D;
    __global const ushort *qv = q + off;
    __global ushort *o = out + off;
    const int nh = live ? hd : 0, p = pos[token];
    float sl = 0.0f, sh = 0.0f;
    for (int i = lane; i < nh; i += TPV) {
        const float a = bf(qv[i]), b = bf(qv[hd + i]);
        sl = fma(a, a, sl), sh = fma(b, b, sh);
    }
    const float rstd = rsqrt(vec_sum(red, sl + sh, lane, slot) / (float)D + 1e-5f);
    for (int i = lane; i < nh; i += TPV) {
        float c, s;
        angle(freq(i, D), p, &c, &s);
        const float a = bf(qv[i]) * bf(w[i]), b = bf(qv[hd + i]) * bf(w[hd + i]);
        o[i] = (ushort)f32_to_bf16(rstd * (a * c - b * s));
        o[hd + i] = (ushort)f32_to_bf16(rstd * (b * c + a * s));
    }
}
