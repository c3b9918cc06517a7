// Ported from ggml-org/llama.cpp, ggml/src/ggml-cuda/norm.cu, norm_f32 (one block per row, a warp
// when ncols < 1024 else 1024 threads, as norm_f32_cuda dispatches; mean and variance from one
// float2 pass of sum(x) and sum(x^2)), followed by the multiply by gamma and add of beta that a
// ggml graph runs after GGML_OP_NORM (fused into the same kernel here).
// Expected: incorrect: var = mean(x^2) - mean^2 cancels in fp32 on the N(100, 1) check shape
// (see llmc_layernorm_kernel4_sumsq.cu); ggml's models feed it activations of mean near 0, where
// it is fine, and every other check shape passes.
// @expect incorrect
// @temper task layernorm
// @temper launch norm_f32_warp grid(R) block(32) args(x, y, gamma, beta, C) when(C < 1024)
// @temper launch norm_f32_block grid(R) block(1024) args(x, y, gamma, beta, C) when(1)
__device__ float2 warp_reduce_sum2(float2 a)
{
    for (int o = 16; o > 0; o >>= 1) {
        a.x += __shfl_xor_sync(0xffffffffu, a.x, o, 32);
        a.y += __shfl_xor_sync(0xffffffffu, a.y, o, 32);
    }
    return a;
}

template <int block_size>
__device__ void norm_f32(const float *x, float *dst, const float *gamma, const float *beta, int ncols)
{
    int row = blockIdx.x, tid = threadIdx.x;
    x += (size_t)row * ncols;
    dst += (size_t)row * ncols;
    float2 mean_var = make_float2(0.0f, 0.0f);
    for (int col = tid; col < ncols; col += block_size) {
        float xi = x[col];
        mean_var.x += xi;
        mean_var.y += xi * xi;
    }
    mean_var = warp_reduce_sum2(mean_var);
    if (block_size > 32) {
        __shared__ float2 s_sum[32];
        if (tid % 32 == 0)
            s_sum[tid / 32] = mean_var;
        __syncthreads();
        mean_var = warp_reduce_sum2(s_sum[tid % 32]);
    }
    float mean = mean_var.x / ncols, var = mean_var.y / ncols - mean * mean, inv_std = rsqrtf(var + 1e-5f);
    for (int col = tid; col < ncols; col += block_size)
        dst[col] = (x[col] - mean) * inv_std * gamma[col] + beta[col];
}

extern "C" __global__ void norm_f32_warp(const float *x, float *dst, const float *gamma, const float *beta, int ncols)
{
    norm_f32<32>(x, dst, gamma, beta, ncols);
}

extern "C" __global__ void norm_f32_block(const float *x, float *dst, const float *gamma, const float *beta, int ncols)
{
    norm_f32<1024>(x, dst, gamma, beta, ncols);
}
