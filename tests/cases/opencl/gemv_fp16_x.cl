// Wrong (tasks/L1/gemv's note: reading x through fp16 gives inf, then NaN, at the shape with
// x ~ U(2e4,1e5)): the task's baseline converting each x to fp16 before the product. bf16
// values of ordinary size convert exactly; those past 65504 become inf.
// @expect incorrect
// @temper task gemv
// @temper param BLOCK 256
// @temper require 1024 % BLOCK == 0
// @temper launch gemv grid(N) block(BLOCK) args(y, W, x, N, K)

static float bf16_to_f32(ushort b)
{
    return as_float((uint)b << 16);
}

static ushort f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (ushort)((u >> 16) | 0x40u); /* NaN stays a quiet NaN */
    u += 0x7fffu + ((u >> 16) & 1u);       /* round to nearest even */
    return (ushort)(u >> 16);
}

static float through_half(float f) /* CHANGED: rounds to fp16 (nearest even), inf past 65504 */
{
    ushort h;
    vstore_half(f, 0, (__private half *)&h);
    return vload_half(0, (__private half *)&h);
}

__kernel void gemv(__global ushort *y, __global const ushort *W, __global const ushort *x, int N, int K)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    size_t row = get_group_id(0);
    __global const ushort *wr = W + row * K;

    float acc = 0.0f;
    for (int k = t; k < K; k += BLOCK)
        acc += bf16_to_f32(wr[k]) * through_half(bf16_to_f32(x[k])); /* CHANGED: x through fp16 */
    buf[t] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (t == 0)
        y[row] = f32_to_bf16(buf[0]);
}
