// A tunable split-K attention decode step (flash-decoding), bf16 q, k, v and out, fp32 math; k
// and v are each read once. Two algorithms, picked by MODE:
//
// MODE = 1 (one pass): each head's S cached tokens are cut into NS chunks, one block per (head,
// chunk) in address order, and a block streams its chunk's keys and values together: G = D/8
// lanes share a key, each holding 8 values of q (scaled by log2(e)/sqrt(D)) and loading 8 of k and
// 8 of v with 16-byte loads, KU keys per lane group in flight, both streams issued before any
// score is used; the dot product is a shuffle reduction over the G lanes, and each lane group
// keeps an online softmax (running max m, sum l of 2^(s - m), and the p * v sums, rescaled when m
// grows). The block's lane groups merge through shared memory; its (m, l) and unnormalised
// D-vector go to scratch (attn_split). CH > 0: chunks of CH keys (NS = S/CH, at most 1024), short
// blocks that retire in address order, as the fastest plain read on the H200 does (BLOCK/G * KU
// keys per round: CH = 64 at BLOCK 256, KU 4 is one round per block); CH = 0: one wave of
// NS = SMS * BPS / H chunks per head (at least 1, at most 1024 and S/64), a long contiguous slice
// per block and few partial sums. BPS is also the blocks per SM asked of the register allocator
// (__launch_bounds__, up to 2048 threads per SM). Launch 2 (attn_merge), one block per (head, 32
// values of d): the chunks' weights 2^(m_c - M) once into shared memory, then CB/32 rows of
// threads (as many as there are chunks, where fewer) each sum a share of the chunks (eight loads
// in flight), the rows meet in shared memory, and the total divided by L is rounded to bf16
// once. Other D (not a power of two from 8 to 256: launch attn_split_any in place of attn_split;
// or unaligned pointers): the block takes one key at a time (a block-wide dot product), its
// online-softmax sums in its scratch row.
//
// MODE = 0 (two phases, the first version; CH and BPS unused): chunks of CHUNK keys, one block per
// (head, chunk), the scores to shared memory, then their max and sum, then a second pass over v
// (attn_part); one block per head combines (attn_combine).
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

#define NWARP (BLOCK / 32)
#define NEG_INF (-__int_as_float(0x7f800000)) /* NVRTC has no INFINITY macro */

__device__ __forceinline__ float bf(unsigned short b)
{
    return __uint_as_float((unsigned int)b << 16);
}

__device__ __forceinline__ void bf8(uint4 t, float *f)
{
    const unsigned int w[4] = {t.x, t.y, t.z, t.w};
#pragma unroll
    for (int i = 0; i < 4; i++)
        f[2 * i] = __uint_as_float(w[i] << 16), f[2 * i + 1] = __uint_as_float(w[i] & 0xffff0000u);
}

__device__ __forceinline__ unsigned short f32_to_bf16(float f)
{
    unsigned int u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (unsigned short)((u >> 16) | 0x40u); /* NaN stays a quiet NaN */
    return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/* max (is_max) or sum of v over the block, to every thread; red holds NWARP floats */
__device__ __forceinline__ float block_reduce(float v, bool is_max, float *red)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, u) : v + u;
    }
    if (threadIdx.x % 32 == 0)
        red[threadIdx.x / 32] = v;
    __syncthreads();
    v = red[0];
    for (int w = 1; w < NWARP; w++)
        v = is_max ? fmaxf(v, red[w]) : v + red[w];
    __syncthreads(); /* red is free again */
    return v;
}

extern "C" __global__ void __launch_bounds__(BLOCK)
    attn_part(float *__restrict__ acc, float *__restrict__ ml, const unsigned short *__restrict__ q,
              const unsigned short *__restrict__ k, const unsigned short *__restrict__ v, int H, int S, int D)
{
    __shared__ float p[CHUNK];
    __shared__ float red[NWARP];
    __shared__ float sum[BLOCK * 8]; /* the fast path's p * v partials: BLOCK/G groups of D */
    const int nchunk = (S + CHUNK - 1) / CHUNK;
    const int h = blockIdx.x / nchunk, c = blockIdx.x % nchunk;
    const int j0 = c * CHUNK, n = min(CHUNK, S - j0);
    const size_t kv0 = ((size_t)h * S + j0) * D;
    const float scale = rsqrtf((float)D);
    const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
    const int G = D / 8;
    const bool fast = D % 8 == 0 && D >= 8 && D <= 256 && (G & (G - 1)) == 0 &&
                      ((((size_t)q) | ((size_t)k) | ((size_t)v)) & 15) == 0;
    if (fast) {
        const int gl = tid % G, grp = tid / G, ngrp = BLOCK / G; /* lane in group, group, groups */
        float qf[8];
        bf8(__ldg((const uint4 *)(q + (size_t)h * D) + gl), qf);
#pragma unroll
        for (int i = 0; i < 8; i++)
            qf[i] *= scale;
        const uint4 *kp = (const uint4 *)(k + kv0) + gl;
        /* the same trip count for every thread, so that each shuffle has the whole warp */
        for (int base = 0; base < n; base += ngrp * KU) {
            const int j = base + grp;
            uint4 t[KU];
#pragma unroll
            for (int u = 0; u < KU; u++)
                t[u] = j + u * ngrp < n ? __ldg(kp + (size_t)(j + u * ngrp) * G) : make_uint4(0u, 0u, 0u, 0u);
#pragma unroll
            for (int u = 0; u < KU; u++) {
                float f[8], d = 0.0f;
                bf8(t[u], f);
#pragma unroll
                for (int i = 0; i < 8; i++)
                    d += qf[i] * f[i];
                for (int o = G / 2; o > 0; o >>= 1) /* within the aligned group of G lanes */
                    d += __shfl_xor_sync(0xffffffffu, d, o);
                if (gl == 0 && j + u * ngrp < n)
                    p[j + u * ngrp] = d;
            }
        }
    } else {
        for (int j = warp; j < n; j += NWARP) {
            const unsigned short *kr = k + kv0 + (size_t)j * D;
            float d = 0.0f;
            for (int i = lane; i < D; i += 32)
                d += bf(q[(size_t)h * D + i]) * bf(kr[i]);
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                d += __shfl_xor_sync(0xffffffffu, d, o);
            if (lane == 0)
                p[j] = d * scale;
        }
    }
    __syncthreads();
    float mx = NEG_INF;
    for (int j = tid; j < n; j += BLOCK)
        mx = fmaxf(mx, p[j]);
    const float m = block_reduce(mx, true, red);
    float l = 0.0f;
    for (int j = tid; j < n; j += BLOCK) {
        const float e = __expf(p[j] - m);
        p[j] = e;
        l += e;
    }
    l = block_reduce(l, false, red); /* its first __syncthreads also publishes p */
    float *out = acc + ((size_t)h * nchunk + c) * D;
    if (fast) {
        const int gl = tid % G, grp = tid / G, ngrp = BLOCK / G;
        float a[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f};
        const uint4 *vp = (const uint4 *)(v + kv0) + gl;
        for (int j = grp; j < n; j += ngrp * KU) {
            uint4 t[KU];
#pragma unroll
            for (int u = 0; u < KU; u++)
                if (j + u * ngrp < n)
                    t[u] = __ldg(vp + (size_t)(j + u * ngrp) * G);
#pragma unroll
            for (int u = 0; u < KU; u++)
                if (j + u * ngrp < n) {
                    float f[8];
                    bf8(t[u], f);
                    const float pj = p[j + u * ngrp];
#pragma unroll
                    for (int i = 0; i < 8; i++)
                        a[i] += pj * f[i];
                }
        }
#pragma unroll
        for (int i = 0; i < 8; i++)
            sum[grp * D + gl * 8 + i] = a[i];
        __syncthreads();
        for (int d = tid; d < D; d += BLOCK) {
            float s = 0.0f;
            for (int g = 0; g < ngrp; g++)
                s += sum[g * D + d];
            out[d] = s;
        }
    } else {
        for (int d = tid; d < D; d += BLOCK) {
            float s = 0.0f;
            for (int j = 0; j < n; j++)
                s += p[j] * bf(v[kv0 + (size_t)j * D + d]);
            out[d] = s;
        }
    }
    if (tid == 0) {
        ml[2 * ((size_t)h * nchunk + c)] = m;
        ml[2 * ((size_t)h * nchunk + c) + 1] = l;
    }
}

extern "C" __global__ void __launch_bounds__(CB)
    attn_combine(unsigned short *__restrict__ o, const float *__restrict__ acc, const float *__restrict__ ml, int H,
                 int S, int D)
{
    const int nchunk = (S + CHUNK - 1) / CHUNK, h = blockIdx.x;
    const float *mh = ml + 2 * (size_t)h * nchunk;
    float M = NEG_INF;
    for (int c = 0; c < nchunk; c++)
        M = fmaxf(M, mh[2 * c]);
    float L = 0.0f;
    for (int c = 0; c < nchunk; c++)
        L += mh[2 * c + 1] * expf(mh[2 * c] - M);
    const float inv = 1.0f / L;
    for (int d = threadIdx.x; d < D; d += CB) {
        float s = 0.0f;
        for (int c = 0; c < nchunk; c++)
            s += acc[((size_t)h * nchunk + c) * D + d] * expf(mh[2 * c] - M);
        o[(size_t)h * D + d] = f32_to_bf16(s * inv);
    }
}

/* max (is_max) or sum of v over the block (a multiple of 32 threads, up to CB: the launch gives
 * fewer where there are fewer chunks), to every thread; red holds CB/32 floats, of which the
 * block's own warps' are read (reading all CB/32 read unwritten shared memory: NaN at S = 1 on the
 * H200) */
__device__ __forceinline__ float merge_reduce(float v, bool is_max, float *red)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) {
        const float u = __shfl_xor_sync(0xffffffffu, v, o);
        v = is_max ? fmaxf(v, u) : v + u;
    }
    if (threadIdx.x % 32 == 0)
        red[threadIdx.x / 32] = v;
    __syncthreads();
    v = red[0];
    for (int w = 1; w < (int)blockDim.x / 32; w++)
        v = is_max ? fmaxf(v, red[w]) : v + red[w];
    __syncthreads(); /* red is free again */
    return v;
}

#define LOG2E 1.4426950408889634f
#define NSMAX 1024 /* the most chunks per head */
#define ANYB 64     /* attn_split_any's block (the launch's block(64)): one key at a time needs few */
/* blocks per SM asked of the register allocator: BPS, within 2048 threads per SM */
#define MINB (BPS * BLOCK <= 2048 ? BPS : (2048 / BLOCK > 0 ? 2048 / BLOCK : 1))

/* Chunks per head, as the launch's grid computes them (wave = SMS * BPS / H). */
__device__ __forceinline__ int chunks(int S, int wave)
{
    const int by_len = (S + 63) / 64;
    if (CH > 0)
        return min((S + CH - 1) / (CH > 0 ? CH : 1), NSMAX);
    return max(1, min(min(wave, by_len), NSMAX));
}

/* 2^(x - m) for a running max m; 0 where x is -inf (a masked key, an empty chunk), so that
 * -inf - -inf never makes a NaN */
__device__ __forceinline__ float exp2_from(float x, float m)
{
    return x == NEG_INF ? 0.0f : exp2f(x - m);
}

/* The fast path of attn_split: D = 8 * G, G a power of two up to 32, 16-byte aligned rows. Keys
 * [j0, j0 + n) of head h; (m, l, the D-vector) of the block into *mo, *lo, out. */
__device__ __forceinline__ void split_fast(const unsigned short *__restrict__ q, const unsigned short *__restrict__ k,
                                           const unsigned short *__restrict__ v, int h, size_t kv0, int n, int D,
                                           float *out, float *mo, float *lo)
{
    __shared__ float gm[BLOCK], gl_[BLOCK]; /* per lane group: its m and l (BLOCK / G used) */
    __shared__ float gw[BLOCK];             /* per lane group: its weight 2^(m_g - M) */
    __shared__ float sum[BLOCK * 8];        /* per lane group: its D-vector */
    const int G = D / 8, tid = threadIdx.x;
    const int lane = tid % G, grp = tid / G, ngrp = BLOCK / G;
    const float scale = LOG2E * rsqrtf((float)D);
    float qf[8], a[8];
    bf8(__ldg((const uint4 *)(q + (size_t)h * D) + lane), qf);
#pragma unroll
    for (int i = 0; i < 8; i++)
        qf[i] *= scale, a[i] = 0.0f;
    const uint4 *kp = (const uint4 *)(k + kv0) + lane, *vp = (const uint4 *)(v + kv0) + lane;
    float m = NEG_INF, l = 0.0f;
    /* the same trip count for every thread, so that each shuffle has the whole warp */
    for (int base = 0; base < n; base += ngrp * KU) {
        uint4 tk[KU], tv[KU];
#pragma unroll
        for (int u = 0; u < KU; u++) {
            const int j = base + grp + u * ngrp;
            tk[u] = j < n ? __ldg(kp + (size_t)j * G) : make_uint4(0u, 0u, 0u, 0u);
            tv[u] = j < n ? __ldg(vp + (size_t)j * G) : make_uint4(0u, 0u, 0u, 0u);
        }
        float sc[KU], mx = m;
#pragma unroll
        for (int u = 0; u < KU; u++) {
            float f[8], d = 0.0f;
            bf8(tk[u], f);
#pragma unroll
            for (int i = 0; i < 8; i++)
                d = fmaf(qf[i], f[i], d);
            for (int o = G / 2; o > 0; o >>= 1) /* within the aligned group of G lanes */
                d += __shfl_xor_sync(0xffffffffu, d, o);
            sc[u] = base + grp + u * ngrp < n ? d : NEG_INF;
            mx = fmaxf(mx, sc[u]);
        }
        if (mx == NEG_INF) /* no key of this group here (the group's lanes agree) */
            continue;
        const float alpha = exp2_from(m, mx);
        l *= alpha;
#pragma unroll
        for (int i = 0; i < 8; i++)
            a[i] *= alpha;
#pragma unroll
        for (int u = 0; u < KU; u++) {
            const float pu = exp2_from(sc[u], mx);
            float f[8];
            bf8(tv[u], f);
            l += pu;
#pragma unroll
            for (int i = 0; i < 8; i++)
                a[i] = fmaf(pu, f[i], a[i]);
        }
        m = mx;
    }
    if (lane == 0)
        gm[grp] = m, gl_[grp] = l;
#pragma unroll
    for (int i = 0; i < 8; i++)
        sum[grp * D + lane * 8 + i] = a[i];
    __syncthreads();
    float M = NEG_INF;
    for (int g = 0; g < ngrp; g++)
        M = fmaxf(M, gm[g]);
    if (tid < ngrp)
        gw[tid] = exp2_from(gm[tid], M);
    __syncthreads();
    for (int d = tid; d < D; d += BLOCK) {
        float s = 0.0f;
        for (int g = 0; g < ngrp; g++)
            s = fmaf(sum[g * D + d], gw[g], s);
        out[d] = s;
    }
    if (tid == 0) {
        float L = 0.0f;
        for (int g = 0; g < ngrp; g++)
            L = fmaf(gl_[g], gw[g], L);
        *mo = M, *lo = L;
    }
}

/* The sum of v over a block of NT threads (a multiple of 32), to every thread; red holds NT/32
 * floats */
template <int NT> __device__ __forceinline__ float nt_sum(float v, float *red)
{
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0)
        red[threadIdx.x / 32] = v;
    __syncthreads();
    v = red[0];
    for (int w = 1; w < NT / 32; w++)
        v += red[w];
    __syncthreads(); /* red is free again */
    return v;
}

/* Any D, with a block of NT threads: one key at a time for the whole block (a block-wide dot
 * product), each thread keeping the online-softmax sums of its values of d in the block's scratch
 * row out. */
template <int NT>
__device__ __forceinline__ void split_any(const unsigned short *__restrict__ q, const unsigned short *__restrict__ k,
                                          const unsigned short *__restrict__ v, int h, size_t kv0, int n, int D,
                                          float *out, float *mo, float *lo)
{
    __shared__ float red[NT / 32];
    const float scale = LOG2E * rsqrtf((float)D);
    for (int d = threadIdx.x; d < D; d += NT)
        out[d] = 0.0f;
    float m = NEG_INF, l = 0.0f;
    for (int j = 0; j < n; j++) {
        const unsigned short *kr = k + kv0 + (size_t)j * D, *vr = v + kv0 + (size_t)j * D;
        float d = 0.0f;
        for (int i = threadIdx.x; i < D; i += NT)
            d = fmaf(bf(q[(size_t)h * D + i]), bf(kr[i]), d);
        const float s = nt_sum<NT>(d, red) * scale;
        const float mx = fmaxf(m, s), alpha = exp2_from(m, mx), pj = exp2f(s - mx);
        l = l * alpha + pj;
        for (int i = threadIdx.x; i < D; i += NT)
            out[i] = fmaf(pj, bf(vr[i]), out[i] * alpha);
        m = mx;
    }
    if (threadIdx.x == 0)
        *mo = m, *lo = l;
}

/* The block's head h, chunk [j0, j0 + n) (n = 0: an empty chunk) and scratch row */
struct split_part {
    int h, n;       /* head, keys in the chunk */
    size_t kv0;     /* the chunk's first key's offset in k and v */
    size_t row;     /* the scratch row, h * NS + c */
};

__device__ __forceinline__ split_part split_of(int S, int D, int wave)
{
    const int NS = chunks(S, wave);
    const int h = blockIdx.x / NS, c = blockIdx.x % NS, chunk = (S + NS - 1) / NS;
    const int j0 = min(c * chunk, S);
    return {h, min(chunk, S - j0), ((size_t)h * S + j0) * D, (size_t)h * NS + c};
}

/* D a power of two from 8 to 256 (the launch's when()): the lane-group path when q, k, v are
 * 16-byte aligned, else one key at a time. */
extern "C" __global__ void __launch_bounds__(BLOCK, MINB)
    attn_split(float *__restrict__ acc, float *__restrict__ ml, const unsigned short *__restrict__ q,
               const unsigned short *__restrict__ k, const unsigned short *__restrict__ v, int H, int S, int D,
               int wave)
{
    const split_part b = split_of(S, D, wave);
    float *out = acc + b.row * D, *mo = ml + 2 * b.row;
    if (((((size_t)q) | ((size_t)k) | ((size_t)v)) & 15) == 0)
        split_fast(q, k, v, b.h, b.kv0, b.n, D, out, mo, mo + 1);
    else
        split_any<BLOCK>(q, k, v, b.h, b.kv0, b.n, D, out, mo, mo + 1);
}

/* Any other D: one key at a time. */
extern "C" __global__ void __launch_bounds__(ANYB)
    attn_split_any(float *__restrict__ acc, float *__restrict__ ml, const unsigned short *__restrict__ q,
                   const unsigned short *__restrict__ k, const unsigned short *__restrict__ v, int H, int S, int D,
                   int wave)
{
    const split_part b = split_of(S, D, wave);
    split_any<ANYB>(q, k, v, b.h, b.kv0, b.n, D, acc + b.row * D, ml + 2 * b.row, ml + 2 * b.row + 1);
}

/* out[h, d] for 32 values of d: the NS chunks' partial sums weighted by 2^(m_c - M), over the total
 * L. The weights go through shared memory once; R = CB/32 rows of threads (fewer where NS is less)
 * each sum every R-th chunk, eight loads in flight, and the rows meet in shared memory. */
extern "C" __global__ void __launch_bounds__(CB)
    attn_merge(unsigned short *__restrict__ o, const float *__restrict__ acc, const float *__restrict__ ml, int H,
               int S, int D, int wave)
{
    __shared__ float w[NSMAX], red[CB / 32], part[CB / 32][32];
    const int R = blockDim.x / 32; /* rows of chunks: CB/32, or NS where fewer (the launch's block) */
    const int NS = chunks(S, wave);
    const int nd = (D + 31) / 32, h = blockIdx.x / nd;
    const int dl = threadIdx.x % 32, row = threadIdx.x / 32, d = (blockIdx.x % nd) * 32 + dl;
    const float *mh = ml + 2 * (size_t)h * NS;
    float M = NEG_INF;
    for (int c = threadIdx.x; c < NS; c += blockDim.x)
        M = fmaxf(M, mh[2 * c]);
    M = merge_reduce(M, true, red);
    float L = 0.0f;
    for (int c = threadIdx.x; c < NS; c += blockDim.x) {
        const float wc = exp2_from(mh[2 * c], M);
        w[c] = wc;
        L = fmaf(mh[2 * c + 1], wc, L);
    }
    L = merge_reduce(L, false, red); /* its first __syncthreads also publishes w */
    float sc[8] = {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}; /* eight loads in flight */
    if (d < D) {
        const float *ah = acc + (size_t)h * NS * D + d;
        int c = row;
        for (; c + 7 * R < NS; c += 8 * R)
#pragma unroll
            for (int u = 0; u < 8; u++)
                sc[u] = fmaf(ah[(size_t)(c + u * R) * D], w[c + u * R], sc[u]);
        for (; c < NS; c += R)
            sc[0] = fmaf(ah[(size_t)c * D], w[c], sc[0]);
    }
    part[row][dl] = ((sc[0] + sc[1]) + (sc[2] + sc[3])) + ((sc[4] + sc[5]) + (sc[6] + sc[7]));
    __syncthreads();
    if (row == 0 && d < D) {
        float t = part[0][dl];
        for (int r = 1; r < R; r++)
            t += part[r][dl];
        o[(size_t)h * D + d] = f32_to_bf16(t / L);
    }
}
