// Ported from ggml-org/llama.cpp, ggml/src/ggml-cuda/softmax.cu, soft_max_f32 (one block per row,
// up to 1024 threads; the scaled row is kept in dynamic shared memory when it fits; warp
// reductions of the max and the sum, combined across warps through shared memory), without the
// mask, the ALiBi slope and the sinks (scale 1), the case the task asks for. As ggml's launcher,
// the block is the row length rounded up to a warp, capped at 1024, and the row-in-shared-memory
// variant runs only where the row fits in the device's shared memory, else the variant that
// rereads the input.
// Expected: correct.
// @expect correct
// @temper task softmax
// @temper launch soft_max_f32_smem grid(R) block(min(ceil_div(C, 32) * 32, 1024)) smem((C + 32) * 4) args(y, x, C) when((C + 32) * 4 <= SMEM_PER_BLOCK_OPTIN)
// @temper launch soft_max_f32_global grid(R) block(min(ceil_div(C, 32) * 32, 1024)) smem(32 * 4) args(y, x, C) when(1)
__device__ float warp_reduce_max(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o, 32));
    return v;
}

__device__ float warp_reduce_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(0xffffffffu, v, o, 32);
    return v;
}

/* The block's reduction of v through buf (32 floats), every thread getting the result. */
__device__ float block_reduce(float v, float *buf, bool is_max)
{
    int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = is_max ? warp_reduce_max(v) : warp_reduce_sum(v);
    if (blockDim.x > 32) {
        if (warp == 0)
            buf[lane] = is_max ? -INFINITY : 0.0f;
        __syncthreads();
        if (lane == 0)
            buf[warp] = v;
        __syncthreads();
        v = buf[lane];
        v = is_max ? warp_reduce_max(v) : warp_reduce_sum(v);
        __syncthreads();
    }
    return v;
}

template <bool use_shared>
__device__ void soft_max_f32(const float *x, float *dst, int ncols)
{
    extern __shared__ float data_soft_max_f32[];
    float *buf = data_soft_max_f32;
    float *vals = use_shared ? buf + 32 : dst + (size_t)blockIdx.x * ncols;
    const float *xr = x + (size_t)blockIdx.x * ncols;
    float max_val = -INFINITY;
    for (int col = threadIdx.x; col < ncols; col += blockDim.x) {
        float v = xr[col];
        vals[col] = v;
        max_val = fmaxf(max_val, v);
    }
    max_val = block_reduce(max_val, buf, true);
    float tmp = 0.0f;
    for (int col = threadIdx.x; col < ncols; col += blockDim.x) {
        float v = expf(vals[col] - max_val);
        tmp += v;
        vals[col] = v;
    }
    tmp = block_reduce(tmp, buf, false);
    float inv_sum = 1.0f / tmp;
    for (int col = threadIdx.x; col < ncols; col += blockDim.x)
        dst[(size_t)blockIdx.x * ncols + col] = vals[col] * inv_sum;
}

extern "C" __global__ void soft_max_f32_smem(float *dst, const float *x, int ncols)
{
    soft_max_f32<true>(x, dst, ncols);
}

extern "C" __global__ void soft_max_f32_global(float *dst, const float *x, int ncols)
{
    soft_max_f32<false>(x, dst, ncols);
}
