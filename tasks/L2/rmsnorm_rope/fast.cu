// A tunable fused per-head RMSNorm + rotary embedding (Llama rotate-half, theta 500000) for
// bandwidth, bf16 in and out: each (token, head) vector of D values is read once, normalised and
// rotated in registers and written once. TPV threads per vector (4..32 lanes of one warp: the sum
// of squares is a shuffle reduction over them), HPB heads of one token per block, VEC bf16 values
// per access of the low and of the high half (8: uint4, 4: uint2, 2: one 32-bit word) when
// D/2 % VEC == 0 and q, w, out are 2*VEC-byte aligned, else one value at a time. REG: vectors of
// each half a thread keeps in registers (a vector that does not fit, D/2 > TPV*VEC*REG, is read
// twice, the second time from L1/L2). TAB = 1: the block's token's cos and sin (D/2 angles, shared
// by its HPB heads) are computed once into shared memory when D/2 <= 1024, while the block's first
// loads are in flight; TAB = 0, or a larger D, computes them per element. Angles
// pos * 500000^(-2i/D) and their sine and cosine in double
// (they reach 16383 radians; fast-math builds leave double alone), the rest in fp32; one
// round-to-nearest-even to bf16.
// @temper task rmsnorm_rope
// @temper param TPV 8 4 16 32
// @temper param HPB 32 16 8 4 2 1
// @temper param VEC 8 4 2
// @temper param REG 1 2 4
// @temper param TAB 1 0
// @temper require TPV * HPB <= 1024 && (TPV * HPB) % 32 == 0
// @temper launch rmsnorm_rope_fast grid(T * ceil_div(H, HPB)) block(TPV * HPB) args(out, q, w, pos, T, H, D)

#define TABMAX 1024

__device__ __forceinline__ unsigned int f32_to_bf16(float f)
{
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return ((u >> 16) | 0x40u) & 0xffffu; /* NaN stays a quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);          /* round to nearest even */
    return u >> 16;
}

__device__ __forceinline__ float bf(unsigned short b)
{
    return __uint_as_float((unsigned int)b << 16);
}

/* V bf16 values at p (V-aligned) into f, and back */
template <int V> __device__ __forceinline__ void load_v(const unsigned short *p, float *f)
{
    if constexpr (V == 8) {
        const uint4 t = __ldg((const uint4 *)p);
        const unsigned int w[4] = {t.x, t.y, t.z, t.w};
#pragma unroll
        for (int i = 0; i < 4; i++)
            f[2 * i] = __uint_as_float(w[i] << 16), f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
    } else if constexpr (V == 4) {
        const uint2 t = __ldg((const uint2 *)p);
        f[0] = __uint_as_float(t.x << 16), f[1] = __uint_as_float(t.x & 0xffff0000u);
        f[2] = __uint_as_float(t.y << 16), f[3] = __uint_as_float(t.y & 0xffff0000u);
    } else if constexpr (V == 2) {
        const unsigned int t = __ldg((const unsigned int *)p);
        f[0] = __uint_as_float(t << 16), f[1] = __uint_as_float(t & 0xffff0000u);
    } else {
        f[0] = bf(__ldg(p));
    }
}

template <int V> __device__ __forceinline__ void store_v(unsigned short *p, const float *f)
{
    if constexpr (V == 8) {
        unsigned int w[4];
#pragma unroll
        for (int i = 0; i < 4; i++)
            w[i] = f32_to_bf16(f[2 * i]) | (f32_to_bf16(f[2 * i + 1]) << 16);
        *(uint4 *)p = make_uint4(w[0], w[1], w[2], w[3]);
    } else if constexpr (V == 4) {
        *(uint2 *)p = make_uint2(f32_to_bf16(f[0]) | (f32_to_bf16(f[1]) << 16),
                                 f32_to_bf16(f[2]) | (f32_to_bf16(f[3]) << 16));
    } else if constexpr (V == 2) {
        *(unsigned int *)p = f32_to_bf16(f[0]) | (f32_to_bf16(f[1]) << 16);
    } else {
        *p = (unsigned short)f32_to_bf16(f[0]);
    }
}

/* cos and sin of the angle pos * 500000^(-2i/D), computed in double (fast-math builds, which turn
 * sincosf into the hardware's, leave double alone; the angles reach 16383 radians) */
__device__ __forceinline__ void angle(int i, float p, int D, float &c, float &s)
{
    double sd, cd;
    sincos((double)p * pow(500000.0, -2.0 * i / D), &sd, &cd);
    c = (float)cd, s = (float)sd;
}

/* The angle's cosine and sine, from the table or computed. */
__device__ __forceinline__ void rot(int i, float p, int D, bool tab, const float *cs, const float *sn, float &c,
                                    float &s)
{
    if (tab) {
        c = cs[i], s = sn[i];
    } else {
        angle(i, p, D, c, s);
    }
}

/* lo/hi of vector iv (V values each) normalised and rotated, stored */
template <int V>
__device__ __forceinline__ void emit(unsigned short *o, const unsigned short *w, int iv, int half, const float *lo,
                                     const float *hi, float rstd, float p, int D, bool tab, const float *cs,
                                     const float *sn)
{
    float wl[V], wh[V], ol[V], oh[V];
    load_v<V>(w + iv * V, wl);
    load_v<V>(w + half + iv * V, wh);
#pragma unroll
    for (int e = 0; e < V; e++) {
        float c, s;
        rot(iv * V + e, p, D, tab, cs, sn, c, s);
        const float a = lo[e] * rstd * wl[e], b = hi[e] * rstd * wh[e];
        ol[e] = a * c - b * s;
        oh[e] = b * c + a * s;
    }
    store_v<V>(o + iv * V, ol);
    store_v<V>(o + half + iv * V, oh);
}

/* One (token, head) vector; n = 0 for a dead head (past H), which still takes part in the shuffles
 * and in filling the table (every thread of the block calls this once, on the same path). */
template <int V>
__device__ __forceinline__ void vec_row(unsigned short *o, const unsigned short *qv, const unsigned short *w, int n,
                                        int D, int lane, float p, bool tab, float *cs, float *sn)
{
    const int half = D / 2, nv = n / 2 / V; /* vectors per half */
    float lo[REG][V], hi[REG][V];
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const int iv = lane + k * TPV;
        if (iv < nv) {
            load_v<V>(qv + iv * V, lo[k]);
            load_v<V>(qv + half + iv * V, hi[k]);
        }
    }
    if (tab) { /* the token's angles, while the loads above are in flight */
        for (int i = threadIdx.x; i < half; i += TPV * HPB)
            angle(i, p, D, cs[i], sn[i]);
        __syncthreads();
    }
    float ss = 0.0f;
#pragma unroll
    for (int k = 0; k < REG; k++)
        if (lane + k * TPV < nv)
#pragma unroll
            for (int e = 0; e < V; e++)
                ss += lo[k][e] * lo[k][e] + hi[k][e] * hi[k][e];
    for (int iv = lane + REG * TPV; iv < nv; iv += TPV) { /* past the registers */
        float a[V], b[V];
        load_v<V>(qv + iv * V, a);
        load_v<V>(qv + half + iv * V, b);
#pragma unroll
        for (int e = 0; e < V; e++)
            ss += a[e] * a[e] + b[e] * b[e];
    }
#pragma unroll
    for (int m = TPV / 2; m > 0; m >>= 1)
        ss += __shfl_xor_sync(0xffffffffu, ss, m, TPV);
    const float rstd = rsqrtf(ss / (float)D + 1e-5f);
#pragma unroll
    for (int k = 0; k < REG; k++) {
        const int iv = lane + k * TPV;
        if (iv < nv)
            emit<V>(o, w, iv, half, lo[k], hi[k], rstd, p, D, tab, cs, sn);
    }
    for (int iv = lane + REG * TPV; iv < nv; iv += TPV) {
        float a[V], b[V];
        load_v<V>(qv + iv * V, a);
        load_v<V>(qv + half + iv * V, b);
        emit<V>(o, w, iv, half, a, b, rstd, p, D, tab, cs, sn);
    }
}

extern "C" __global__ void __launch_bounds__(TPV *HPB)
    rmsnorm_rope_fast(unsigned short *__restrict__ out, const unsigned short *__restrict__ q,
                      const unsigned short *__restrict__ w, const int *__restrict__ pos, int T, int H, int D)
{
    __shared__ float cs[TABMAX], sn[TABMAX];
    const int groups = (H + HPB - 1) / HPB;
    const int token = blockIdx.x / groups, head = (blockIdx.x % groups) * HPB + threadIdx.x / TPV;
    const int lane = threadIdx.x % TPV, half = D / 2;
    const float p = (float)pos[token];
    const bool tab = TAB && half <= TABMAX; /* the same for every thread: vec_row fills the table */
    const bool live = head < H;
    const size_t off = ((size_t)token * H + (live ? head : 0)) * D;
    const int n = live ? D : 0;
    const bool vec = half % VEC == 0 && ((((size_t)out) | ((size_t)q) | ((size_t)w)) & (2 * VEC - 1)) == 0;
    if (vec)
        vec_row<VEC>(out + off, q + off, w, n, D, lane, p, tab, cs, sn);
    else
        vec_row<1>(out + off, q + off, w, n, D, lane, p, tab, cs, sn);
}
