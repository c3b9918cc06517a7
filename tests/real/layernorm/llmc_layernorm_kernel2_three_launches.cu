// Ported from karpathy/llm.c, dev/cuda/layernorm_forward.cu, layernorm_forward2: mean_kernel and
// rstd_kernel (one block per row, shared-memory trees) into scratch, then normalization_kernel
// over all R * C elements with grid ceil_div(R * C, 256), as its launcher does.
// Expected: incorrect: normalization_kernel has no bounds check (llm.c's shapes are multiples of
// 256), so where R * C is not a multiple of 256 (R = 7, C = 1000 at the latest) its last block
// writes past the end of y: the guard zone after y catches it.
// @expect incorrect
// @temper task layernorm
// @temper scratch mean f32 R
// @temper scratch rstd f32 R
// @temper launch mean_kernel grid(R) block(256) smem(256 * 4) args(mean, x, R, C, 256)
// @temper launch rstd_kernel grid(R) block(256) smem(256 * 4) args(rstd, x, mean, R, C, 256)
// @temper launch normalization_kernel grid(ceil_div(R * C, 256)) block(256) args(y, x, mean, rstd, gamma, beta, R, 1, C)
extern "C" __global__ void mean_kernel(float *mean, const float *inp, int N, int C, int block_size)
{
    extern __shared__ float shared[];
    int idx = blockIdx.x, tid = threadIdx.x;
    const float *x = inp + idx * C;
    float sum = 0.0f;
    for (int i = tid; i < C; i += block_size)
        sum += x[i];
    shared[tid] = sum;
    __syncthreads();
    for (int stride = block_size / 2; stride >= 1; stride /= 2) {
        __syncthreads();
        if (tid < stride)
            shared[tid] += shared[tid + stride];
    }
    if (tid == 0)
        mean[idx] = shared[0] / C;
}

extern "C" __global__ void rstd_kernel(float *rstd, const float *inp, const float *mean, int N, int C, int block_size)
{
    extern __shared__ float shared[];
    int idx = blockIdx.x, tid = threadIdx.x;
    const float *x = inp + idx * C;
    float m = mean[idx], sum = 0.0f;
    for (int i = tid; i < C; i += block_size) {
        float d = x[i] - m;
        sum += d * d;
    }
    shared[tid] = sum;
    __syncthreads();
    for (int stride = block_size / 2; stride >= 1; stride /= 2) {
        __syncthreads();
        if (tid < stride)
            shared[tid] += shared[tid + stride];
    }
    if (tid == 0)
        rstd[idx] = 1.0f / sqrtf(shared[0] / C + 1e-5f);
}

extern "C" __global__ void normalization_kernel(float *out, const float *inp, const float *mean, const float *rstd,
                                                const float *weight, const float *bias, int B, int T, int C)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int bt = idx / C, c = idx % C;
    float n = rstd[bt] * (inp[idx] - mean[bt]);
    out[idx] = n * weight[c] + bias[c];
}
