// Wrong (tasks/L1/vector_add's note: rounding a or b to half misses by over 100x): the task's
// baseline reading a through fp16.
// @expect incorrect
// @temper task vector_add
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N)
static float through_half(float f) /* CHANGED: rounds to fp16 (nearest even), inf past 65504 */
{
    ushort h;
    vstore_half(f, 0, (__private half *)&h);
    return vload_half(0, (__private half *)&h);
}

__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int N)
{
    int i = get_global_id(0);
    if (i < N)
        c[i] = through_half(a[i]) + b[i]; /* CHANGED: a in half */
}
