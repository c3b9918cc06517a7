// A tunable split-K attention decode step (flash-decoding), the OpenCL twin of fast.cu with the
// same launches, knobs and scratch, and the same arithmetic, so that fast.cu's logic runs on any
// OpenCL device (PoCL in CI). MODE = 1 (one pass): one work-group per (head, chunk of the NS
// chunks fast.cu's chunks() gives), G = D/8 work-items per key each holding 8 values of q (scaled
// by log2(e)/sqrt(D)) and reading 8 of k and 8 of v, KU keys per lane group per round; the dot
// product's G partial sums meet in local memory (fast.cu: shuffles), and each lane group keeps an
// online softmax in base 2; the groups merge in local memory, and (m, l) and the unnormalised
// D-vector go to scratch (attn_split). attn_merge: one work-group per (head, 32 values of d), the
// chunks' weights 2^(m_c - M) in local memory, R = CB/32 rows of work-items (at most NS) summing
// every R-th chunk with eight partial sums, the rows met in local memory, one rounding to bf16.
// Other D (attn_split_any, 64 work-items): one key at a time for the work-group, the sums in the
// scratch row. MODE = 0 (the first version): one work-item per key computes q.k / sqrt(D) into
// local memory, local-memory reductions give the chunk's max m and the sum l of p = exp(s - m),
// and one work-item per output value d sums p * v[., d] over the chunk's keys; attn_combine, one
// work-group per head, rescales each chunk's partials by exp(m_c - M), divides by the total L and
// rounds to bf16 once. fp32 math throughout.
// @temper task attention_decode
// @temper param MODE 1 0
// @temper param BLOCK 256 128 512
// @temper param KU 4 2 1
// @temper param CH 128 64 256 512 0
// @temper param BPS 4 8 2 16
// @temper param CB 1024 256 128 64
// @temper param CHUNK 512 256 128 64
// @temper require CHUNK <= 1024 && 1024 % BLOCK == 0 && 1024 % CB == 0
// @temper require MODE == 0 || CHUNK == 512
// @temper require MODE == 1 || (CH == 128 && BPS == 4)
// @temper scratch acc f32 H * max(ceil_div(S, CHUNK), min(ceil_div(S, 64), 1024)) * D
// @temper scratch ml f32 2 * H * max(ceil_div(S, CHUNK), min(ceil_div(S, 64), 1024))
// @temper launch attn_split grid(H * ((CH > 0) * min(ceil_div(S, CH + (CH == 0)), 1024) + (CH == 0) * max(1, min(min(SMS * BPS / H, ceil_div(S, 64)), 1024)))) block(BLOCK) args(acc, ml, q, k, v, H, S, D, SMS * BPS / H) when(MODE == 1 && (D == 8 || D == 16 || D == 32 || D == 64 || D == 128 || D == 256))
// @temper launch attn_merge grid(H * ceil_div(D, 32)) block(32 * min(CB / 32, (CH > 0) * min(ceil_div(S, CH + (CH == 0)), 1024) + (CH == 0) * max(1, min(min(SMS * BPS / H, ceil_div(S, 64)), 1024)))) args(out, acc, ml, H, S, D, SMS * BPS / H)
// @temper launch attn_split_any grid(H * ((CH > 0) * min(ceil_div(S, CH + (CH == 0)), 1024) + (CH == 0) * max(1, min(min(SMS * BPS / H, ceil_div(S, 64)), 1024)))) block(64) args(acc, ml, q, k, v, H, S, D, SMS * BPS / H) when(MODE == 1)
// @temper launch attn_merge grid(H * ceil_div(D, 32)) block(32 * min(CB / 32, (CH > 0) * min(ceil_div(S, CH + (CH == 0)), 1024) + (CH == 0) * max(1, min(min(SMS * BPS / H, ceil_div(S, 64)), 1024)))) args(out, acc, ml, H, S, D, SMS * BPS / H)
// @temper launch attn_part grid(H * ceil_div(S, CHUNK)) block(BLOCK) args(acc, ml, q, k, v, H, S, D) when(MODE == 0)
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

#define LOG2E 1.4426950408889634f
#define NSMAX 1024 /* the most chunks per head */
#define CBR (CB / 32 > 0 ? CB / 32 : 1) /* attn_merge's rows of chunks */
#define ANYB 64 /* attn_split_any's work-group: one key at a time needs few */

/* Chunks per head, as the launch's grid computes them (wave = SMS * BPS / H). */
inline int chunks(int S, int wave)
{
    const int by_len = (S + 63) / 64;
    if (CH > 0)
        return min((S + CH - 1) / (CH > 0 ? CH : 1), NSMAX);
    return max(1, min(min(wave, by_len), NSMAX));
}

/* 2^(x - m); 0 where x is -inf (a masked key, an empty chunk) */
inline float exp2_from(float x, float m)
{
    return x == -INFINITY ? 0.0f : exp2(x - m);
}

/* max (is_max) or sum of v over a work-group of n work-items (n <= 1024), to every work-item;
 * red holds n + 33 floats, and two calls in a row must use different red. Three barriers, and
 * no work-item reads more than n/32 + 32 values (each barrier costs a CPU runtime such as PoCL a
 * pass over the work-group, as does every read each work-item makes). */
inline float wg_reduce(__local float *red, float v, int is_max, int n)
{
    const int t = get_local_id(0);
    __local float *part = red + n;
    red[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t < 32) {
        float r = t < n ? red[t] : (is_max ? -INFINITY : 0.0f);
        for (int i = t + 32; i < n; i += 32)
            r = is_max ? fmax(r, red[i]) : r + red[i];
        part[t] = r;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (t == 0) {
        float r = part[0];
        for (int i = 1; i < 32; i++)
            r = is_max ? fmax(r, part[i]) : r + part[i];
        part[32] = r;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    return part[32];
}

/* fast.cu's split_fast: D = 8 * G, G a power of two up to 32; keys [0, n) from kv0 */
inline void split_fast(__global const ushort *q, __global const ushort *k, __global const ushort *v, int h,
                       size_t kv0, int n, int D, __global float *out, __global float *mlo, __local float *dot,
                       __local float *gm, __local float *glv, __local float *gw, __local float *sum)
{
    const int G = D / 8, tid = get_local_id(0);
    const int lane = tid % G, grp = tid / G, ngrp = BLOCK / G;
    const float scale = LOG2E * rsqrt((float)D);
    float qf[8], a[8];
    for (int i = 0; i < 8; i++) {
        qf[i] = bf(q[(size_t)h * D + lane * 8 + i]) * scale;
        a[i] = 0.0f;
    }
    float m = -INFINITY, l = 0.0f;
    for (int base = 0; base < n; base += ngrp * KU) {
        float sc[KU], mx = m;
        for (int u = 0; u < KU; u++) {
            const int j = base + grp + u * ngrp;
            float d = 0.0f;
            if (j < n)
                for (int i = 0; i < 8; i++)
                    d = fma(qf[i], bf(k[kv0 + (size_t)j * D + lane * 8 + i]), d);
            dot[tid] = d;
            barrier(CLK_LOCAL_MEM_FENCE);
            float t = 0.0f;
            for (int g = 0; g < G; g++)
                t += dot[grp * G + g];
            barrier(CLK_LOCAL_MEM_FENCE);
            sc[u] = j < n ? t : -INFINITY;
            mx = fmax(mx, sc[u]);
        }
        if (mx == -INFINITY)
            continue;
        const float alpha = exp2_from(m, mx);
        l *= alpha;
        for (int i = 0; i < 8; i++)
            a[i] *= alpha;
        for (int u = 0; u < KU; u++) {
            const int j = base + grp + u * ngrp;
            const float pu = exp2_from(sc[u], mx);
            l += pu;
            if (j < n)
                for (int i = 0; i < 8; i++)
                    a[i] = fma(pu, bf(v[kv0 + (size_t)j * D + lane * 8 + i]), a[i]);
        }
        m = mx;
    }
    if (lane == 0) {
        gm[grp] = m;
        glv[grp] = l;
    }
    for (int i = 0; i < 8; i++)
        sum[grp * D + lane * 8 + i] = a[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    float M = -INFINITY;
    for (int g = 0; g < ngrp; g++)
        M = fmax(M, gm[g]);
    if (tid < ngrp)
        gw[tid] = exp2_from(gm[tid], M);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = tid; d < D; d += BLOCK) {
        float s = 0.0f;
        for (int g = 0; g < ngrp; g++)
            s = fma(sum[g * D + d], gw[g], s);
        out[d] = s;
    }
    if (tid == 0) {
        float L = 0.0f;
        for (int g = 0; g < ngrp; g++)
            L = fma(glv[g], gw[g], L);
        mlo[0] = M;
        mlo[1] = L;
    }
}

/* fast.cu's split_any: one key at a time for the work-group, the sums in the scratch row out */
inline void split_any(__global const ushort *q, __global const ushort *k, __global const ushort *v, int h,
                      size_t kv0, int n, int D, __global float *out, __global float *mlo, __local float *red)
{
    const int tid = get_local_id(0);
    const float scale = LOG2E * rsqrt((float)D);
    for (int d = tid; d < D; d += ANYB)
        out[d] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    for (int j = 0; j < n; j++) {
        float d = 0.0f;
        for (int i = tid; i < D; i += ANYB)
            d = fma(bf(q[(size_t)h * D + i]), bf(k[kv0 + (size_t)j * D + i]), d);
        const float s = wg_reduce(red + (j & 1) * (ANYB + 33), d, 0, ANYB) * scale;
        const float mx = fmax(m, s), alpha = exp2_from(m, mx), pj = exp2(s - mx);
        l = l * alpha + pj;
        for (int i = tid; i < D; i += ANYB)
            out[i] = fma(pj, bf(v[kv0 + (size_t)j * D + i]), out[i] * alpha);
        m = mx;
    }
    if (tid == 0) {
        mlo[0] = m;
        mlo[1] = l;
    }
}

/* The work-group's head *h, keys in its chunk *n (0: an empty chunk), their offset *kv0 in k and v,
 * and its scratch row *row = h * NS + c */
inline void split_of(int S, int D, int wave, int *h, int *n, size_t *kv0, size_t *row)
{
    const int NS = chunks(S, wave), gid = get_group_id(0);
    const int c = gid % NS, chunk = (S + NS - 1) / NS;
    const int j0 = min(c * chunk, S);
    *h = gid / NS;
    *n = min(chunk, S - j0);
    *kv0 = ((size_t)*h * S + j0) * D;
    *row = (size_t)*h * NS + c;
}

/* D a power of two from 8 to 256 (the launch's when()) */
__kernel void __attribute__((reqd_work_group_size(BLOCK, 1, 1)))
attn_split(__global float *acc, __global float *ml, __global const ushort *q, __global const ushort *k,
           __global const ushort *v, int H, int S, int D, int wave)
{
    __local float dot[BLOCK], gm[BLOCK], glv[BLOCK], gw[BLOCK], sum[BLOCK * 8];
    int h, n;
    size_t kv0, row;
    split_of(S, D, wave, &h, &n, &kv0, &row);
    split_fast(q, k, v, h, kv0, n, D, acc + row * D, ml + 2 * row, dot, gm, glv, gw, sum);
}

/* Any other D */
__kernel void __attribute__((reqd_work_group_size(ANYB, 1, 1)))
attn_split_any(__global float *acc, __global float *ml, __global const ushort *q, __global const ushort *k,
               __global const ushort *v, int H, int S, int D, int wave)
{
    __local float red[2 * (ANYB + 33)];
    int h, n;
    size_t kv0, row;
    split_of(S, D, wave, &h, &n, &kv0, &row);
    split_any(q, k, v, h, kv0, n, D, acc + row * D, ml + 2 * row, red);
}

/* a work-group of 32 * R work-items, R = CB/32 rows of chunks or NS where fewer (the launch's block) */
__kernel void attn_merge(__global ushort *o, __global const float *acc, __global const float *ml, int H, int S, int D,
                         int wave)
{
    __local float w[NSMAX], red[2 * (CB + 33)], part[CBR * 32];
    const int NS = chunks(S, wave), tid = get_local_id(0), nt = get_local_size(0), R = nt / 32;
    const int nd = (D + 31) / 32, h = get_group_id(0) / nd;
    const int dl = tid % 32, row = tid / 32, d = (get_group_id(0) % nd) * 32 + dl;
    __global const float *mh = ml + 2 * (size_t)h * NS;
    float M = -INFINITY;
    for (int c = tid; c < NS; c += nt)
        M = fmax(M, mh[2 * c]);
    M = wg_reduce(red, M, 1, nt);
    float L = 0.0f;
    for (int c = tid; c < NS; c += nt) {
        const float wc = exp2_from(mh[2 * c], M);
        w[c] = wc;
        L = fma(mh[2 * c + 1], wc, L);
    }
    L = wg_reduce(red + nt + 33, L, 0, nt); /* its first barrier also publishes w */
    float sc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}; /* eight loads in flight */
    if (d < D) {
        __global const float *ah = acc + (size_t)h * NS * D + d;
        int c = row;
        for (; c + 7 * R < NS; c += 8 * R)
            for (int u = 0; u < 8; u++)
                sc[u] = fma(ah[(size_t)(c + u * R) * D], w[c + u * R], sc[u]);
        for (; c < NS; c += R)
            sc[0] = fma(ah[(size_t)c * D], w[c], sc[0]);
    }
    part[row * 32 + dl] = ((sc[0] + sc[1]) + (sc[2] + sc[3])) + ((sc[4] + sc[5]) + (sc[6] + sc[7]));
    barrier(CLK_LOCAL_MEM_FENCE);
    if (row == 0 && d < D) {
        float t = part[dl];
        for (int r = 1; r < R; r++)
            t += part[r * 32 + dl];
        o[(size_t)h * D + d] = f32_to_bf16(t / L);
    }
}
