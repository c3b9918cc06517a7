// A tunable split-K attention decode step (flash-decoding), the OpenCL counterpart of fast.cu with
// the same launches, knobs and scratch: the S cached tokens of each head are cut into chunks of
// CHUNK, one work-group per (head, chunk). Launch 1 (attn_part): one work-item per key computes
// q.k / sqrt(D) into local memory, local-memory reductions give the chunk's max m and the sum l of
// p = exp(s - m), and one work-item per output value d sums p * v[., d] over the chunk's keys
// (consecutive work-items read consecutive values of a row of v); (m, l) and the D-vector go to
// scratch. Launch 2 (attn_combine): one work-group per head rescales each chunk's partials by
// exp(m_c - M), divides by the total L, and rounds to bf16 once. KU is unused here (fast.cu's keys
// in flight per lane), kept so that both files tune over the same knobs. fp32 math throughout.
// @temper task attention_decode
// @temper param CHUNK 256 128 512 64
// @temper param BLOCK 256 128 512
// @temper param KU 2 1 4
// @temper param CB 128 64 256
// @temper require CHUNK <= 1024 && 1024 % BLOCK == 0 && 1024 % CB == 0
// @temper scratch acc f32 H * ceil_div(S, CHUNK) * D
// @temper scratch ml f32 2 * H * ceil_div(S, CHUNK)
// @temper launch attn_part grid(H * ceil_div(S, CHUNK)) block(BLOCK) args(acc, ml, q, k, v, H, S, D)
// @temper launch attn_combine grid(H) block(CB) args(out, acc, ml, H, S, D)

inline float bf(ushort b)
{
    return as_float((uint)b << 16);
}

inline ushort f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u); /* NaN stays a quiet NaN */
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* max (is_max) or sum of v over the work-group, to every work-item, in two levels with two
 * barriers (a tree takes log2(BLOCK), and each barrier costs a CPU runtime such as PoCL a pass
 * over the work-group): 16 work-items reduce BLOCK/16 values each, then everyone those 16. The
 * two calls of a work-group use different halves of red (half), so that the second call's writes
 * cannot meet the first call's reads. */
inline float group_reduce(__local float *red, float v, int is_max, int half_)
{
    const int t = get_local_id(0);
    __local float *b = red + half_ * (BLOCK + 16), *part = b + BLOCK;
    b[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < 16) {
        float r = b[t];
        for (int i = t + 16; i < BLOCK; i += 16)
            r = is_max ? fmax(r, b[i]) : r + b[i];
        part[t] = r;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float r = part[0];
    for (int i = 1; i < 16; i++)
        r = is_max ? fmax(r, part[i]) : r + part[i];
    return r;
}

__kernel void __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
attn_part(__global float *acc, __global float *ml, __global const ushort *q, __global const ushort *k,
          __global const ushort *v, int H, int S, int D)
{
    __local float p[CHUNK], red[2 * (BLOCK + 16)];
    const int nchunk = (S + CHUNK - 1) / CHUNK, gid = get_group_id(0), tid = get_local_id(0);
    const int h = gid / nchunk, c = gid % nchunk;
    const int j0 = c * CHUNK, n = min(CHUNK, S - j0);
    const size_t kv0 = ((size_t)h * S + j0) * D;
    const float scale = rsqrt((float)D);
    __global const ushort *qh = q + (size_t)h * D;
    for (int j = tid; j < n; j += BLOCK) {
        __global const ushort *kr = k + kv0 + (size_t)j * D;
        float d = 0.0f;
        for (int i = 0; i < D; i++)
            d += bf(qh[i]) * bf(kr[i]);
        p[j] = d * scale;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float mx = -INFINITY;
    for (int j = tid; j < n; j += BLOCK)
        mx = fmax(mx, p[j]);
    const float m = group_reduce(red, mx, 1, 0);
    float l = 0.0f;
    for (int j = tid; j < n; j += BLOCK) {
        const float e = exp(p[j] - m);
        p[j] = e;
        l += e;
    }
    l = group_reduce(red, l, 0, 1); /* its first barrier also publishes p */
    __global float *out = acc + ((size_t)h * nchunk + c) * D;
    for (int d = tid; d < D; d += BLOCK) {
        float s = 0.0f;
        for (int j = 0; j < n; j++)
            s += p[j] * bf(v[kv0 + (size_t)j * D + d]);
        out[d] = s;
    }
    if (tid == 0) {
        ml[2 * ((size_t)h * nchunk + c)] = m;
        ml[2 * ((size_t)h * nchunk + c) + 1] = l;
    }
}

__kernel void __attribute__((reqd_work_group_size(CB, 1, 1)))
attn_combine(__global ushort *o, __global const float *acc, __global const float *ml, int H, int S, int D)
{
    const int nchunk = (S + CHUNK - 1) / CHUNK, h = get_group_id(0);
    __global const float *mh = ml + 2 * (size_t)h * nchunk;
    float M = -INFINITY;
    for (int c = 0; c < nchunk; c++)
        M = fmax(M, mh[2 * c]);
    float L = 0.0f;
    for (int c = 0; c < nchunk; c++)
        L += mh[2 * c + 1] * exp(mh[2 * c] - M);
    const float inv = 1.0f / L;
    for (int d = get_local_id(0); d < D; d += CB) {
        float s = 0.0f;
        for (int c = 0; c < nchunk; c++)
            s += acc[((size_t)h * nchunk + c) * D + d] * exp(mh[2 * c] - M);
        o[(size_t)h * D + d] = f32_to_bf16(s * inv);
    }
}
