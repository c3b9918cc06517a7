// A tunable bf16 GELU (tanh approximation) for bandwidth, the OpenCL twin of fast.cu: each
// work-item moves VEC bf16 values per access (8: uint4, 4: uint2, 2: one 32-bit word), with ILP
// independent vector loads issued before the first use; tiles of BLOCK*ILP vectors per
// work-group, full tiles without bounds checks, a scalar loop for the < VEC elements past the last
// whole vector (or everything, if x or y is not 2*VEC-byte aligned). GRID = 0: an exact grid;
// GRID = g > 0: a grid-stride loop over 132*g work-groups.
// The math: 0.5 x (1 + tanh(z)) = x / (1 + exp(-2z)) (exp(-2z) overflows to inf for x < -10.7
// and the quotient saturates to -0, never NaN), rounded once to bf16 (nearest even) on the bits.
// @temper task gelu
// @temper param VEC 8 4 2
// @temper param BLOCK 256 128 512 1024 64
// @temper param ILP 2 1 4 8
// @temper param GRID 0 1 2 4 8 16 32
// @temper require GRID == 0 || GRID * BLOCK <= 2048
// @temper require VEC * ILP <= 32
// @temper launch gelu_fast grid(min(ceil_div(N, BLOCK * VEC * ILP), 132 * GRID + (GRID == 0) * ceil_div(N, BLOCK * VEC * ILP))) block(BLOCK) args(y, x, N)

#if VEC == 8
typedef uint4 vec_t;
#elif VEC == 4
typedef uint2 vec_t;
#else
typedef uint vec_t;
#endif

inline uint f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: keep it a NaN */
        return ((u >> 16) | 0x40u) & 0xffffu;
    u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
    return u >> 16;
}

inline float gelu(float v)
{
    float z2 = 1.5957691216f * (v + 0.044715f * v * v * v); /* 2 * sqrt(2/pi) * (...) */
    return v / (1.0f + exp(-z2));
}

/* two bf16 values in a 32-bit word, low half first */
inline uint gelu2(uint w)
{
    float lo = as_float(w << 16), hi = as_float(w & 0xffff0000u);
    return f32_to_bf16(gelu(lo)) | (f32_to_bf16(gelu(hi)) << 16);
}

inline vec_t gelu_vec(vec_t v)
{
#if VEC == 8
    return (uint4)(gelu2(v.x), gelu2(v.y), gelu2(v.z), gelu2(v.w));
#elif VEC == 4
    return (uint2)(gelu2(v.x), gelu2(v.y));
#else
    return gelu2(v);
#endif
}

__kernel __attribute__((reqd_work_group_size(BLOCK, 1, 1))) void
gelu_fast(__global ushort *restrict y, __global const ushort *restrict x, int N)
{
    const size_t n = (size_t)N;
    const bool aligned = ((((size_t)x) | ((size_t)y)) & (sizeof(vec_t) - 1)) == 0;
    const size_t nv = aligned ? n / VEC : 0;
    __global const vec_t *xv = (__global const vec_t *)x;
    __global vec_t *yv = (__global vec_t *)y;
    const size_t tile = (size_t)BLOCK * ILP;
    const size_t ntiles = (nv + tile - 1) / tile;
    const size_t lid = get_local_id(0);

    for (size_t t = get_group_id(0); t < ntiles; t += get_num_groups(0)) {
        const size_t base = t * tile + lid;
        vec_t r[ILP];
        if ((t + 1) * tile <= nv) {
            for (int u = 0; u < ILP; u++)
                r[u] = xv[base + (size_t)u * BLOCK];
            for (int u = 0; u < ILP; u++)
                yv[base + (size_t)u * BLOCK] = gelu_vec(r[u]);
        } else {
            for (int u = 0; u < ILP; u++) {
                size_t i = base + (size_t)u * BLOCK;
                if (i < nv)
                    r[u] = xv[i];
            }
            for (int u = 0; u < ILP; u++) {
                size_t i = base + (size_t)u * BLOCK;
                if (i < nv)
                    yv[i] = gelu_vec(r[u]);
            }
        }
    }

    const size_t stride = get_num_groups(0) * (size_t)BLOCK;
    for (size_t i = nv * VEC + get_group_id(0) * (size_t)BLOCK + lid; i < n; i += stride)
        y[i] = (ushort)f32_to_bf16(gelu(as_float((uint)x[i] << 16)));
}
