// Invalid: a scratch buffer of 2^60 floats (2^62 bytes: the product fits 64 bits, no device has
// that memory). It must be named as too large for the device, not attempted.
// @expect invalid
// @expect-message device's
// @temper task vector_add
// @temper scratch big f32 N*1152921504606846976/N
// @temper launch vector_add grid(ceil_div(N, 256)) block(256) args(c, a, b, N, big)

extern "C" __global__ void vector_add(float *c, const float *a, const float *b, int n, float *big)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        big[i] = a[i];
        c[i] = a[i] + b[i];
    }
}
