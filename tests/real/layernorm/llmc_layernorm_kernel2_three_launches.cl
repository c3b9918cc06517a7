// OpenCL twin of llmc_layernorm_kernel2_three_launches.cu: karpathy/llm.c,
// dev/cuda/layernorm_forward.cu, layernorm_forward2 (mean_kernel, rstd_kernel, then
// normalization_kernel over ceil_div(R * C, 256) groups of 256 with no bounds check).
// Expected: incorrect: normalization_kernel writes past the end of y where R * C is not a
// multiple of 256; the guard zone after y catches it.
// @expect incorrect
// @expect-message guard
// @temper task layernorm
// @temper scratch mean f32 R
// @temper scratch rstd f32 R
// @temper launch mean_kernel grid(R) block(256) args(mean, x, R, C)
// @temper launch rstd_kernel grid(R) block(256) args(rstd, x, mean, R, C)
// @temper launch normalization_kernel grid(ceil_div(R * C, 256)) block(256) args(y, x, mean, rstd, gamma, beta, C)
__kernel void mean_kernel(__global float *mean, __global const float *inp, int N, int C)
{
    __local float shared[256];
    int idx = get_group_id(0), tid = get_local_id(0);
    __global const float *x = inp + idx * C;
    float sum = 0.0f;
    for (int i = tid; i < C; i += 256)
        sum += x[i];
    shared[tid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = 128; stride >= 1; stride /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (tid < stride)
            shared[tid] += shared[tid + stride];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid == 0)
        mean[idx] = shared[0] / C;
}

__kernel void rstd_kernel(__global float *rstd, __global const float *inp, __global const float *mean, int N, int C)
{
    __local float shared[256];
    int idx = get_group_id(0), tid = get_local_id(0);
    __global const float *x = inp + idx * C;
    float m = mean[idx], sum = 0.0f;
    for (int i = tid; i < C; i += 256)
        sum += (x[i] - m) * (x[i] - m);
    shared[tid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int stride = 128; stride >= 1; stride /= 2) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (tid < stride)
            shared[tid] += shared[tid + stride];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (tid == 0)
        rstd[idx] = 1.0f / sqrt(shared[0] / C + 1e-5f);
}

__kernel void normalization_kernel(__global float *out, __global const float *inp, __global const float *mean,
                                   __global const float *rstd, __global const float *weight,
                                   __global const float *bias, int C)
{
    int idx = get_global_id(0);
    int bt = idx / C, c = idx % C;
    out[idx] = rstd[bt] * (inp[idx] - mean[bt]) * weight[c] + bias[c];
}
