// Wrong (tasks/L2/attention_decode's note: a kernel that truncates its output to bf16 instead of
// rounding is caught only by a few outputs at the normal shapes,
// 1-6 at S = 33 and S = 1000, and hundreds at the shapes past 65,536): the output truncated.
// The task's naive.cu, the changed lines marked CHANGED (the OpenCL twin is tests/cases/opencl/attention_decode_truncate_bf16.cl).
// @expect incorrect
// @temper task attention_decode
// @temper param BLOCK 256
// @temper scratch p f32 H*S
// @temper require 1024 % BLOCK == 0
// @temper launch scores grid(ceil_div(S, BLOCK) * H) block(BLOCK) args(p, q, k, H, S, D)
// @temper launch probs grid(H) block(BLOCK) args(p, H, S)
// @temper launch weighted_sum grid(ceil_div(D, 64) * H) block(64) args(out, p, v, H, S, D)

__device__ __forceinline__ float bf16_to_f32(unsigned short b)
{
    return __uint_as_float((unsigned)b << 16);
}

/* Round to nearest even; NaN stays a (quiet) NaN. */
__device__ __forceinline__ unsigned short f32_to_bf16(float f)
{
    unsigned u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (unsigned short)((u >> 16) | 0x40u);
    return (unsigned short)(u >> 16); /* CHANGED: truncated, not rounded */
}

extern "C" __global__ void scores(float *p, const unsigned short *q, const unsigned short *k, int H, int S, int D)
{
    unsigned per_head = ((unsigned)S + blockDim.x - 1) / blockDim.x;
    int j = (int)(blockIdx.x % per_head) * blockDim.x + threadIdx.x;
    size_t h = blockIdx.x / per_head;
    if (j >= S)
        return;
    const unsigned short *qh = q + h * D, *kj = k + (h * S + j) * D;
    float acc = 0.0f;
    for (int d = 0; d < D; d++)
        acc += bf16_to_f32(qh[d]) * bf16_to_f32(kj[d]);
    p[h * S + j] = acc / sqrtf((float)D);
}

extern "C" __global__ void probs(float *p, int H, int S)
{
    __shared__ float buf[BLOCK];
    int t = threadIdx.x;
    float *ph = p + (size_t)blockIdx.x * S;

    float m = -__int_as_float(0x7f800000); /* -inf; NVRTC has no INFINITY macro */
    for (int j = t; j < S; j += BLOCK)
        m = fmaxf(m, ph[j]);
    buf[t] = m;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] = fmaxf(buf[t], buf[t + s]);
        __syncthreads();
    }
    m = buf[0];
    __syncthreads(); /* everyone has read buf[0] before it is reused */

    float sum = 0.0f;
    for (int j = t; j < S; j += BLOCK) {
        float e = expf(ph[j] - m);
        ph[j] = e; /* each thread rewrites only its own entries */
        sum += e;
    }
    buf[t] = sum;
    __syncthreads();
    for (int s = BLOCK / 2; s > 0; s /= 2) {
        if (t < s)
            buf[t] += buf[t + s];
        __syncthreads();
    }
    float inv = 1.0f / buf[0];
    for (int j = t; j < S; j += BLOCK)
        ph[j] *= inv;
}

extern "C" __global__ void weighted_sum(unsigned short *out, const float *p, const unsigned short *v, int H, int S,
                                        int D)
{
    unsigned per_head = ((unsigned)D + blockDim.x - 1) / blockDim.x;
    int d = (int)(blockIdx.x % per_head) * blockDim.x + threadIdx.x;
    size_t h = blockIdx.x / per_head;
    if (d >= D)
        return;
    const float *ph = p + h * S;
    const unsigned short *vh = v + h * S * D;
    float acc = 0.0f;
    for (int j = 0; j < S; j++)
        acc += ph[j] * bf16_to_f32(vh[(size_t)j * D + d]);
    out[h * D + d] = f32_to_bf16(acc);
}
