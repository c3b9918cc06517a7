// A tunable fused SwiGLU for bandwidth, y = silu(g) * u in bf16: one pass, g and u read once and
// y written once (a framework's silu then multiply writes and re-reads silu(g) in between). Each
// thread moves VEC bf16 values of g, u and y per access (8: 16-byte uint4, 4: uint2, 2: one
// 32-bit word) with ILP independent vector pairs in flight before the first use. A block takes
// tiles of BLOCK*ILP vectors, thread t taking vectors t, t+BLOCK, ... of a tile (coalesced); the
// last partial tile is bounds-checked, and the < VEC elements past the last whole vector (or
// everything, if a pointer is not 2*VEC-byte aligned) go through a scalar loop. GRID = 0: one tile
// per block; GRID = n > 0: a grid-stride loop over n blocks per SM of an H200 (132 SMs).
// The math: silu(x) in fp32 from e = exp(-|x|), x / (1 + e), or x e / (1 + e) for x < 0 (as the
// reference: no overflow, so fast-math builds stay finite), FAST = 1 with the hardware exp
// (ex2.approx: a few ulp), then one round-to-nearest-even to bf16 on the bits.
// @temper task swiglu
// @temper param VEC 8 4 2
// @temper param BLOCK 256 128 512 1024
// @temper param ILP 2 1 4
// @temper param GRID 0 2 4 8 16
// @temper param FAST 1 0
// @temper require GRID == 0 || GRID * BLOCK <= 2048
// @temper launch swiglu_fast grid(min(ceil_div(T * F, BLOCK * VEC * ILP), 132 * GRID + (GRID == 0) * ceil_div(T * F, BLOCK * VEC * ILP))) block(BLOCK) args(y, g, u, T, F)

#if VEC == 8
typedef uint4 vec_t;
#elif VEC == 4
typedef uint2 vec_t;
#else
typedef unsigned int vec_t;
#endif
#define WORDS (VEC / 2) /* 32-bit words per vector */

__device__ __forceinline__ void to_words(vec_t v, unsigned int *w)
{
#if VEC == 8
    w[0] = v.x, w[1] = v.y, w[2] = v.z, w[3] = v.w;
#elif VEC == 4
    w[0] = v.x, w[1] = v.y;
#else
    w[0] = v;
#endif
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

__device__ __forceinline__ unsigned int f32_to_bf16(float f)
{
    unsigned int b = __float_as_uint(f);
    if ((b & 0x7fffffffu) > 0x7f800000u)
        return ((b >> 16) | 0x40u) & 0xffffu; /* NaN stays a quiet NaN */
    b += 0x7fffu + ((b >> 16) & 1u);          /* round to nearest even */
    return b >> 16;
}

/* silu(x) * v with e = exp(-|x|), which never overflows: x / (1 + e) for x >= 0, x e / (1 + e)
 * below (as the reference), so that no inf meets a division, with fast math too */
__device__ __forceinline__ float swiglu1(float x, float v)
{
#if FAST
    const float e = __expf(-fabsf(x));
#else
    const float e = expf(-fabsf(x));
#endif
    return (x >= 0.0f ? x : x * e) / (1.0f + e) * v;
}

/* one 32-bit word of g and u (two bf16 each: element 2i in the low half) to one word of y */
__device__ __forceinline__ unsigned int swiglu2(unsigned int gw, unsigned int uw)
{
    float lo = swiglu1(__uint_as_float(gw << 16), __uint_as_float(uw << 16));
    float hi = swiglu1(__uint_as_float(gw & 0xffff0000u), __uint_as_float(uw & 0xffff0000u));
    return f32_to_bf16(lo) | (f32_to_bf16(hi) << 16);
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    swiglu_fast(unsigned short *__restrict__ y, const unsigned short *__restrict__ g,
                const unsigned short *__restrict__ u, int T, int F)
{
    const size_t n = (size_t)T * F;
    const bool aligned = ((((size_t)y) | ((size_t)g) | ((size_t)u)) & (2 * VEC - 1)) == 0;
    const size_t nv = aligned ? n / VEC : 0; /* whole vectors */
    const vec_t *gv = (const vec_t *)g, *uv = (const vec_t *)u;
    vec_t *yv = (vec_t *)y;
    const size_t tile = (size_t)BLOCK * ILP, ntiles = (nv + tile - 1) / tile;
    for (size_t t = blockIdx.x; t < ntiles; t += gridDim.x) {
        const size_t base = t * tile + threadIdx.x;
        vec_t a[ILP], b[ILP];
        if ((t + 1) * tile <= nv) {
#pragma unroll
            for (int k = 0; k < ILP; k++) {
                a[k] = __ldg(gv + base + (size_t)k * BLOCK);
                b[k] = __ldg(uv + base + (size_t)k * BLOCK);
            }
#pragma unroll
            for (int k = 0; k < ILP; k++) {
                unsigned int gw[WORDS], uw[WORDS], yw[WORDS];
                to_words(a[k], gw);
                to_words(b[k], uw);
#pragma unroll
                for (int i = 0; i < WORDS; i++)
                    yw[i] = swiglu2(gw[i], uw[i]);
                yv[base + (size_t)k * BLOCK] = from_words(yw);
            }
        } else {
            for (int k = 0; k < ILP; k++) {
                const size_t j = base + (size_t)k * BLOCK;
                if (j >= nv)
                    break;
                unsigned int gw[WORDS], uw[WORDS], yw[WORDS];
                to_words(__ldg(gv + j), gw);
                to_words(__ldg(uv + j), uw);
#pragma unroll
                for (int i = 0; i < WORDS; i++)
                    yw[i] = swiglu2(gw[i], uw[i]);
                yv[j] = from_words(yw);
            }
        }
    }
    /* the tail past the last whole vector (everything when unaligned), scalar */
    for (size_t i = nv * VEC + (size_t)blockIdx.x * BLOCK + threadIdx.x; i < n; i += (size_t)gridDim.x * BLOCK) {
        float s = swiglu1(__uint_as_float((unsigned int)g[i] << 16), __uint_as_float((unsigned int)u[i] << 16));
        y[i] = (unsigned short)f32_to_bf16(s);
    }
}
