// Wrong (tasks/L1/reduce_sum's note: half accumulation fails everywhere): the task's baseline
// rounding every partial sum of its trees to fp16.
// @expect incorrect
// @temper task reduce_sum
// @temper param BLOCK 256
// @temper scratch partial f32 ceil_div(N, BLOCK)
// @temper require 1024 % BLOCK == 0
// @temper launch block_sums grid(ceil_div(N, BLOCK)) block(BLOCK) args(partial, x, N)
// @temper launch final_sum grid(1) block(BLOCK) args(out, partial, N)

/* Tree reduction of buf[0..BLOCK) into buf[0]; every work-item of the group must call it. */
static float through_half(float f) /* CHANGED: rounds to fp16 (nearest even), inf past 65504 */
{
    ushort h;
    vstore_half(f, 0, (__private half *)&h);
    return vload_half(0, (__private half *)&h);
}

static void tree_sum(__local float *buf, int t)
{
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] = through_half(buf[t] + buf[t + s]); /* CHANGED: fp16 sums */
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

__kernel void block_sums(__global float *partial, __global const float *x, int N)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    size_t i = get_global_id(0);
    buf[t] = i < (size_t)N ? x[i] : 0.0f;
    tree_sum(buf, t);
    if (t == 0)
        partial[get_group_id(0)] = buf[0];
}

__kernel void final_sum(__global float *out, __global const float *partial, int N)
{
    __local float buf[BLOCK];
    int t = get_local_id(0);
    int nparts = N / BLOCK + (N % BLOCK != 0); /* ceil_div without overflowing near 2^31 */
    float s = 0.0f;
    for (int j = t; j < nparts; j += BLOCK)
        s += partial[j];
    buf[t] = s;
    tree_sum(buf, t);
    if (t == 0)
        out[0] = buf[0];
}
