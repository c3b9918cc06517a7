// A tunable fused SwiGLU for bandwidth, the OpenCL twin of fast.cu (same knobs and index math):
// y = silu(g) * u in bf16 in one pass, VEC bf16 values per access (8: uint4, 4: uint2, 2: one
// 32-bit word) with ILP vector pairs loaded before the first use, tiles of BLOCK*ILP vectors
// (work-item t takes vectors t, t+BLOCK, ...), the last partial tile bounds-checked and the
// elements past the last whole vector (everything when a pointer is not 2*VEC-byte aligned) done
// one at a time. GRID = 0: one tile per work-group; GRID = n: a group-stride loop over n groups
// per compute unit of a 132-unit device. silu(x) in fp32 from e = exp(-|x|) as in fast.cu (FAST = 1:
// native_exp), then one round-to-nearest-even to bf16 on the bits.
// @temper task swiglu
// @temper param VEC 8 4 2
// @temper param BLOCK 256 128 512 1024
// @temper param ILP 2 1 4
// @temper param GRID 0 2 4 8 16
// @temper param FAST 0 1
// @temper require GRID == 0 || GRID * BLOCK <= 2048
// @temper launch swiglu_fast grid(min(ceil_div(T * F, BLOCK * VEC * ILP), 132 * GRID + (GRID == 0) * ceil_div(T * F, BLOCK * VEC * ILP))) block(BLOCK) args(y, g, u, T, F)

#define WORDS (VEC / 2) /* 32-bit words per vector */

inline uint f32_to_bf16(float f)
{
    uint b = as_uint(f);
    if ((b & 0x7fffffffu) > 0x7f800000u)
        return ((b >> 16) | 0x40u) & 0xffffu; /* NaN stays a quiet NaN */
    b += 0x7fffu + ((b >> 16) & 1u);          /* round to nearest even */
    return b >> 16;
}

/* silu(x) * v with e = exp(-|x|), which never overflows: x / (1 + e) for x >= 0, x e / (1 + e)
 * below (as the reference), so that no inf meets a division, with fast math too */
inline float swiglu1(float x, float v)
{
#if FAST
    const float e = native_exp(-fabs(x));
#else
    const float e = exp(-fabs(x));
#endif
    return (x >= 0.0f ? x : x * e) / (1.0f + e) * v;
}

/* one 32-bit word of g and u (two bf16 each: element 2i in the low half) to one word of y */
inline uint swiglu2(uint gw, uint uw)
{
    float lo = swiglu1(as_float(gw << 16), as_float(uw << 16));
    float hi = swiglu1(as_float(gw & 0xffff0000u), as_float(uw & 0xffff0000u));
    return f32_to_bf16(lo) | (f32_to_bf16(hi) << 16);
}

/* vector j of p as 32-bit words, and back */
inline void load_words(__global const ushort *p, size_t j, uint *w)
{
#if VEC == 8
    uint4 t = vload4(0, (__global const uint *)(p + j * 8));
    w[0] = t.x, w[1] = t.y, w[2] = t.z, w[3] = t.w;
#elif VEC == 4
    uint2 t = vload2(0, (__global const uint *)(p + j * 4));
    w[0] = t.x, w[1] = t.y;
#else
    ushort2 t = vload2(0, p + j * 2);
    w[0] = (uint)t.x | ((uint)t.y << 16);
#endif
}

inline void store_words(__global ushort *p, size_t j, const uint *w)
{
#if VEC == 8
    vstore4((uint4)(w[0], w[1], w[2], w[3]), 0, (__global uint *)(p + j * 8));
#elif VEC == 4
    vstore2((uint2)(w[0], w[1]), 0, (__global uint *)(p + j * 4));
#else
    vstore2((ushort2)((ushort)w[0], (ushort)(w[0] >> 16)), 0, p + j * 2);
#endif
}

__kernel void __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
swiglu_fast(__global ushort *y, __global const ushort *g, __global const ushort *u, int T, int F)
{
    const size_t n = (size_t)T * F;
    const int aligned = ((((size_t)y) | ((size_t)g) | ((size_t)u)) & (2 * VEC - 1)) == 0;
    const size_t nv = aligned ? n / VEC : 0; /* whole vectors */
    const size_t lid = get_local_id(0), tile = (size_t)BLOCK * ILP, ntiles = (nv + tile - 1) / tile;
    for (size_t t = get_group_id(0); t < ntiles; t += get_num_groups(0)) {
        const size_t base = t * tile + lid;
        for (int k = 0; k < ILP; k++) {
            const size_t j = base + (size_t)k * BLOCK;
            if (j >= nv)
                break;
            uint gw[WORDS], uw[WORDS], yw[WORDS];
            load_words(g, j, gw);
            load_words(u, j, uw);
            for (int i = 0; i < WORDS; i++)
                yw[i] = swiglu2(gw[i], uw[i]);
            store_words(y, j, yw);
        }
    }
    /* the tail past the last whole vector (everything when unaligned), one element at a time */
    for (size_t i = nv * VEC + get_group_id(0) * BLOCK + lid; i < n; i += get_num_groups(0) * BLOCK)
        y[i] = (ushort)f32_to_bf16(swiglu1(as_float((uint)g[i] << 16), as_float((uint)u[i] << 16)));
}
