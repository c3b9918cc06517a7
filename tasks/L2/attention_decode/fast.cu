// A tunable split-K attention decode step (flash-decoding), bf16 q, k, v and out, fp32 math: the
// S cached tokens of each head are cut into chunks of CHUNK, one block per (head, chunk), so that
// H = 32 heads still fill the GPU; k and v are each read once. Launch 1 (attn_part): the block's
// scores q.k / sqrt(D) go to shared memory, then their max m and p = exp(s - m) with the sum l,
// then the unnormalised sum of p * v over its keys: (m, l) and that D-vector go to scratch.
// Launch 2 (attn_combine): one block per head rescales each chunk's partials by exp(m_c - M) and
// divides by the total L (the log-sum-exp merge), and rounds to bf16 once.
// Fast path (D a power of two from 8 to 256, q, k, v 16-byte aligned): G = D/8 lanes share a key,
// each holding 8 values of q and loading 8 of k (or v) with one 16-byte load, KU keys in flight
// per lane; the dot product is a shuffle reduction over the G lanes, and the p * v sums of the
// BLOCK/G lane groups meet in shared memory. Other D: a warp per key, one value at a time.
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
