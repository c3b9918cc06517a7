// A tunable bf16 GELU (tanh approximation) for bandwidth: each thread moves VEC bf16 values per
// access (8: 16-byte uint4, 4: uint2, 2: one 32-bit word), with ILP independent vector loads in
// flight before the first use. A block handles tiles of BLOCK*ILP vectors, thread t taking
// vectors t, t+BLOCK, ... of a tile (coalesced); full tiles run without bounds checks, the last
// partial tile with them, and the < VEC elements past the last whole vector (or everything, if x
// or y is not 2*VEC-byte aligned) go through a scalar loop. GRID = 0: an exact grid, one tile per
// block; GRID = g > 0: a grid-stride loop with g blocks per SM of an H200 (132 SMs).
// The math is the accurate fast form: 0.5 x (1 + tanh(z)) = x / (1 + exp(-2z)), with the
// hardware exp (a few ulp; exp(-2z) overflows to inf for x < -10.7 and the quotient saturates
// to -0, never NaN) and a fast division, then one round-to-nearest-even to bf16 on the bits.
// bf16 pairs are unpacked from 32-bit words: the low half is element 2i, the high half 2i+1.
// PACK = 1 rounds and packs each pair with one cvt.rn.bf16x2.f32 (sm_80+) instead of integer
// rounding on the bits (PACK = 0): fewer instructions per element, the same results.
// @temper task gelu
// @temper param VEC 8 4 2
// @temper param BLOCK 256 128 512 1024 64
// @temper param ILP 2 1 4 8
// @temper param GRID 0 1 2 4 8 16 32
// @temper param PACK 1 0
// @temper require GRID == 0 || GRID * BLOCK <= 2048
// @temper require VEC * ILP <= 32
// @temper launch gelu_fast grid(min(ceil_div(N, BLOCK * VEC * ILP), 132 * GRID + (GRID == 0) * ceil_div(N, BLOCK * VEC * ILP))) block(BLOCK) args(y, x, N)

#if VEC == 8
typedef uint4 vec_t;
#elif VEC == 4
typedef uint2 vec_t;
#else
typedef unsigned int vec_t;
#endif
#define W (VEC / 2) /* 32-bit words per vector */

__device__ __forceinline__ void to_words(uint4 v, unsigned int *w)
{
    w[0] = v.x;
    w[1] = v.y;
    w[2] = v.z;
    w[3] = v.w;
}
__device__ __forceinline__ void to_words(uint2 v, unsigned int *w)
{
    w[0] = v.x;
    w[1] = v.y;
}
__device__ __forceinline__ void to_words(unsigned int v, unsigned int *w)
{
    w[0] = v;
}
__device__ __forceinline__ vec_t from_words(const unsigned int *w)
{
#if VEC == 8
    return make_uint4(w[0], w[1], w[2], w[3]);
#elif VEC == 4
    return make_uint2(w[0], w[1]);
#else
    return w[0];
#endif
}

/* f32 to bf16 bits (round to nearest even), in the low 16 bits */
__device__ __forceinline__ unsigned int f32_to_bf16(float f)
{
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a NaN */
        return ((u >> 16) | 0x40u) & 0xffffu;
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return u >> 16;
}

__device__ __forceinline__ float gelu(float v)
{
    float z2 = 1.5957691216f * (v + 0.044715f * v * v * v); /* 2 * sqrt(2/pi) * (...) */
    return __fdividef(v, 1.0f + __expf(-z2));
}

/* lo and hi rounded to bf16 (nearest even) and packed, lo in the low half */
__device__ __forceinline__ unsigned int pack_bf16x2(float lo, float hi)
{
#if PACK && defined(__CUDA_ARCH__)
    unsigned int r; /* one instruction for both (sm_80+); its first source goes to the high half */
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
#else
    return f32_to_bf16(lo) | (f32_to_bf16(hi) << 16);
#endif
}

/* two bf16 values in a 32-bit word, low half first */
__device__ __forceinline__ unsigned int gelu2(unsigned int w)
{
    float lo = __uint_as_float(w << 16), hi = __uint_as_float(w & 0xffff0000u);
    return pack_bf16x2(gelu(lo), gelu(hi));
}

__device__ __forceinline__ vec_t gelu_vec(vec_t v)
{
    unsigned int w[W];
    to_words(v, w);
#pragma unroll
    for (int i = 0; i < W; i++)
        w[i] = gelu2(w[i]);
    return from_words(w);
}

extern "C" __global__ void __launch_bounds__(BLOCK) gelu_fast(unsigned short *__restrict__ y,
                                                              const unsigned short *__restrict__ x, int N)
{
    const size_t n = (size_t)N;
    const bool aligned = ((((size_t)x) | ((size_t)y)) & (sizeof(vec_t) - 1)) == 0;
    const size_t nv = aligned ? n / VEC : 0;
    const vec_t *xv = (const vec_t *)x;
    vec_t *yv = (vec_t *)y;
    const size_t tile = (size_t)BLOCK * ILP;
    const size_t ntiles = (nv + tile - 1) / tile;

    for (size_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const size_t base = t * tile + threadIdx.x;
        vec_t r[ILP];
        if ((t + 1) * tile <= nv) {
#pragma unroll
            for (int u = 0; u < ILP; u++)
                r[u] = __ldg(xv + base + (size_t)u * BLOCK);
#pragma unroll
            for (int u = 0; u < ILP; u++)
                yv[base + (size_t)u * BLOCK] = gelu_vec(r[u]);
        } else {
#pragma unroll
            for (int u = 0; u < ILP; u++) {
                size_t i = base + (size_t)u * BLOCK;
                if (i < nv)
                    r[u] = __ldg(xv + i);
            }
#pragma unroll
            for (int u = 0; u < ILP; u++) {
                size_t i = base + (size_t)u * BLOCK;
                if (i < nv)
                    yv[i] = gelu_vec(r[u]);
            }
        }
    }

    const size_t stride = (size_t)gridDim.x * BLOCK;
    for (size_t i = nv * VEC + (size_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += stride)
        y[i] = (unsigned short)f32_to_bf16(gelu(__uint_as_float((unsigned int)x[i] << 16)));
}
