// Wrong (tasks/L2/attention_decode's note: a uniform average of v fails, scores having a standard
// deviation of about 3): the probabilities ignored, every cached token weighted 1/S.
// The task's naive.cl, the changed lines marked CHANGED (the CUDA twin is tests/cases/cuda/attention_decode_uniform_average.cu).
// @expect incorrect
// @temper task attention_decode
// @temper param BLOCK 256
// @temper scratch p f32 H*S
// @temper require 1024 % BLOCK == 0
// @temper launch scores grid(ceil_div(S, BLOCK), H) block(BLOCK) args(p, q, k, H, S, D)
// @temper launch probs grid(H) block(BLOCK) args(p, H, S)
// @temper launch weighted_sum grid(ceil_div(D, 64), H) block(64) args(out, p, v, H, S, D)

static float bf16_to_f32(ushort b)
{
    return as_float((uint)b << 16);
}

/* Round to nearest even; NaN stays a (quiet) NaN. */
static ushort f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u);
    return (ushort)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

__kernel void scores(__global float *p, __global const ushort *q, __global const ushort *k, int H, int S, int D)
{
    int j = get_global_id(0);
    size_t h = get_group_id(1);
    if (j >= S)
        return;
    __global const ushort *qh = q + h * D, *kj = k + (h * S + j) * D;
    float acc = 0.0f;
    for (int d = 0; d < D; d++)
        acc += bf16_to_f32(qh[d]) * bf16_to_f32(kj[d]);
    p[h * S + j] = acc / sqrt((float)D);
}

__kernel void probs(__global float *p, int H, int S)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    __global float *ph = p + (size_t)get_group_id(0) * S;

    float m = -INFINITY;
    for (int j = t; j < S; j += BLOCK)
        m = fmax(m, ph[j]);
    buf[t] = m;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] = fmax(buf[t], buf[t + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    m = buf[0];
    barrier(CLK_LOCAL_MEM_FENCE); /* everyone has read buf[0] before it is reused */

    float sum = 0.0f;
    for (int j = t; j < S; j += BLOCK) {
        float e = exp(ph[j] - m);
        ph[j] = e; /* each work-item rewrites only its own entries */
        sum += e;
    }
    buf[t] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float inv = 1.0f / buf[0];
    for (int j = t; j < S; j += BLOCK)
        ph[j] *= inv;
}

__kernel void weighted_sum(__global ushort *out, __global const float *p, __global const ushort *v, int H, int S,
                           int D)
{
    int d = get_global_id(0);
    size_t h = get_group_id(1);
    if (d >= D)
        return;
    __global const float *ph = p + h * S;
    __global const ushort *vh = v + h * S * D;
    float acc = 0.0f;
    for (int j = 0; j < S; j++)
        acc += bf16_to_f32(vh[(size_t)j * D + d]) / S; /* CHANGED: uniform */
    out[h * D + d] = f32_to_bf16(acc);
}
