// Ported from ggml-org/llama.cpp, ggml/src/ggml-opencl/kernels/norm.cl, kernel_norm (one work-group
// per row; a __local tree sums x for the mean, then y = x - mean is written and its squares summed
// by a second tree, then y is scaled: two passes, unlike the CUDA backend's norm_f32), with the
// multiply by gamma and add of beta that follow GGML_OP_NORM fused into the last loop; the
// __local sum buffer, a kernel argument in ggml, is a __local array here.
// Expected: correct: two passes, so no cancellation on the N(100, 1) check shape (compare
// ggml_norm_f32_affine.cu, the CUDA backend's one-pass kernel).
// @expect correct
// @temper task layernorm
// @temper launch kernel_norm grid(R) block(256) args(x, y, gamma, beta, C)
__kernel void kernel_norm(__global const float *src0, __global float *dst, __global const float *gamma,
                          __global const float *beta, int ne00)
{
    __local float sum[256];
    int i01 = get_group_id(0);
    __global const float *x = src0 + (size_t)i01 * ne00;
    sum[get_local_id(0)] = 0.0f;
    for (int i00 = get_local_id(0); i00 < ne00; i00 += get_local_size(0))
        sum[get_local_id(0)] += x[i00];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = get_local_size(0) / 2; i > 0; i /= 2) {
        if (get_local_id(0) < i)
            sum[get_local_id(0)] += sum[get_local_id(0) + i];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float mean = sum[0] / ne00;
    barrier(CLK_LOCAL_MEM_FENCE);
    __global float *y = dst + (size_t)i01 * ne00;
    sum[get_local_id(0)] = 0.0f;
    for (int i00 = get_local_id(0); i00 < ne00; i00 += get_local_size(0)) {
        y[i00] = x[i00] - mean;
        sum[get_local_id(0)] += y[i00] * y[i00];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint i = get_local_size(0) / 2; i > 0; i /= 2) {
        if (get_local_id(0) < i)
            sum[get_local_id(0)] += sum[get_local_id(0) + i];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    float variance = sum[0] / ne00;
    float scale = 1.0f / sqrt(variance + 1e-5f);
    for (int i00 = get_local_id(0); i00 < ne00; i00 += get_local_size(0))
        y[i00] = y[i00] * scale * gamma[i00] + beta[i00];
}
