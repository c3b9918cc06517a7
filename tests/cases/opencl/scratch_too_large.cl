// Invalid: a scratch buffer of 2^60 floats (2^62 bytes: the product fits 64 bits, no device has
// that memory). It must be named as too large for the device, not attempted.
// @expect invalid
// @expect-message device's
// @temper task vector_add
// @temper scratch big f32 N*1152921504606846976/N
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
