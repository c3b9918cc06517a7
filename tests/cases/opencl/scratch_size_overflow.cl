// Invalid: a scratch buffer of 2^62 floats, whose size in bytes (2^64) does not fit 64 bits. It
// must not wrap to a small buffer: the size check names the expression and its value.
// @expect invalid
// @expect-message 4611686018427387904 elements of 4 bytes
// @temper task vector_add
// @temper scratch big f32 4611686018427387904
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N, big)

__kernel void vector_add(__global float *c, __global const float *a, __global const float *b, int n,
                         __global float *big)
{
    int i = get_global_id(0);
    if (i < n) {
        big[i] = a[i];
        c[i] = a[i] + b[i];
    }
}
